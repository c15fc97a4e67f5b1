"""Store URLs and engines: SQLite (embedded, one file, WAL) or PostgreSQL (deployed).

Every store of arena (tournaments, SPRT runs, competitions) opens its database through
:func:`make_engine`, so the SQLite pragmas (WAL, busy timeout, foreign keys, explicit
``BEGIN``/``BEGIN IMMEDIATE``) and the PostgreSQL settings are set in one place, and every
failure of a database becomes one :class:`StoreError` with a message for the user
(:func:`explain`): a read-only folder, a full disk, a damaged file, a server that cannot
be reached.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from arena.errors import ArenaError

URL_HINT = "use a folder, sqlite:///path/to/file.sqlite or postgresql+psycopg://user@host/db"


class StoreError(ArenaError):
    """A store that cannot be used or written, with a message (and maybe a hint).

    ``resumable``: the store is consistent and the run can be resumed once the cause is
    fixed (a full disk, a read-only folder, a server down); not for a damaged store."""

    def __init__(self, message: str, *, hint: str | None = None, resumable: bool = False):
        super().__init__(message, hint=hint)
        self.resumable = resumable


class StoreLocked(StoreError):
    """Another process is writing this store."""


def is_url(text: str | Path) -> bool:
    """Whether a store location is a database URL (else it is a path)."""
    return "://" in str(text)


def sqlite_url(path: Path, *, readonly: bool = False) -> str:
    """The URL of a SQLite file (``readonly``: opened with ``mode=ro``, never written)."""
    resolved = Path(path).resolve()
    if readonly:
        return f"sqlite:///file:{resolved}?mode=ro&uri=true"
    return f"sqlite:///{resolved}"


def describe_url(url: str) -> str:
    """The URL as shown to people: no password."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(unparseable URL)"


PG_DEAD_HOST_LIMITS: dict[str, Any] = {
    "connect_timeout": 10,
    "tcp_user_timeout": 10_000,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
"""libpq settings bounding how long a call waits on a database host that is gone (powered
off, unplugged: its packets dropped, no refusal): a new connection gives up after 10 s,
one already open after 10 s of unacknowledged data (``tcp_user_timeout``, ms) or ~45 s
idle (keepalives); without them a pooled connection's liveness check waits for the
kernel's TCP retries, about 15 minutes, and so does the page or the ladder behind it."""


def make_engine(
    url: str,
    *,
    readonly: bool = False,
    pool: dict[str, Any] | None = None,
    threads: bool = False,
    durable: bool = False,
) -> Engine:
    """An engine for ``sqlite:///path`` or ``postgresql+psycopg://...``.

    SQLite: WAL, foreign keys, a busy timeout, and transactions begun explicitly (a
    connection whose ``info["immediate"]`` is set begins with ``BEGIN IMMEDIATE``, so a
    write never fails half-way on a lock upgrade). PostgreSQL: a liveness check on
    checkout, time limits for a dead host (:data:`PG_DEAD_HOST_LIMITS`); ``readonly``
    sessions refuse writes. ``threads``: connections are shared
    between threads (the server's pool). ``durable``: SQLite syncs every commit
    (``synchronous=FULL``; else NORMAL, which in WAL mode may lose the last commits on a
    power cut, never consistency)."""
    shown = describe_url(url)
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise StoreError(f"not a database URL: {shown!r}", hint=URL_HINT) from None
    kwargs: dict[str, Any] = dict(pool or {})
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        db = parsed.database
        if not db or db == ":memory:":
            raise StoreError(
                "an in-memory SQLite store would lose everything on exit", hint=URL_HINT
            )
        if not readonly and not db.startswith("file:"):
            folder = Path(db).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(explain(exc, str(folder)), resumable=True) from None
        connect_args: dict[str, Any] = {"timeout": 30}
        if threads:
            connect_args["check_same_thread"] = False
        kwargs["connect_args"] = connect_args
    elif backend == "postgresql":
        kwargs["pool_pre_ping"] = True
        # A URL's own settings win (``?connect_timeout=30``).
        pg_args = {k: v for k, v in PG_DEAD_HOST_LIMITS.items() if k not in parsed.query}
        if readonly:
            pg_args["options"] = "-c default_transaction_read_only=on"
        kwargs["connect_args"] = pg_args
    else:
        raise StoreError(f"unsupported database {backend!r} in {shown}", hint=URL_HINT)
    try:
        engine = sa.create_engine(url, **kwargs)
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise StoreError(f"cannot use the database {shown}: {exc}") from None
    if engine.dialect.name == "sqlite":
        _sqlite_pragmas(engine, readonly, "FULL" if durable else "NORMAL")
    return engine


def _sqlite_pragmas(engine: Engine, readonly: bool, synchronous: str) -> None:
    """SQLite: WAL (readers never block the writer), foreign keys, a busy timeout, and
    explicit BEGIN so write transactions take the lock up front (BEGIN IMMEDIATE)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if not readonly:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("immediate") else "BEGIN")


def db_message(exc: BaseException) -> str:
    """The first line of a database error's own message."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


DAMAGED = "damaged"
"""Part of every message :func:`explain` gives for a damaged store (not resumable)."""


def explain(
    exc: BaseException,
    where: str,
    doing: str = "store error",
    *,
    what: str = "store",
    afresh: str = "another store",
) -> str:
    """A user's description of a failed store operation on ``where`` (a path or a
    shown URL): by errno, or by the database's message. ``what`` names the store and
    ``afresh`` where to start over, for a damaged one."""
    text = db_message(exc)
    low = text.lower()
    code = exc.errno if isinstance(exc, OSError) else None
    if code == errno.ENOSPC or "disk is full" in low or "no space left" in low:
        return f"{where}: the disk is full ({text}); free some space"
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or any(
        s in low for s in ("readonly database", "read-only", "unable to open", "disk i/o error")
    ):
        return f"{where}: cannot write here ({text}); check the folder is writable and mounted"
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        rescue = (
            f", or try to rescue it with: sqlite3 {where} .recover" if not is_url(where) else ""
        )
        return (
            f"{where}: not a usable {what}: {DAMAGED} ({text}); start afresh with {afresh}{rescue}"
        )
    if any(
        s in low
        for s in (
            "connection refused",
            "could not connect",
            "connection failed",
            "server closed the connection",
            "could not translate host",
            "timeout expired",
            "password authentication failed",
            "terminating connection",
        )
    ) or ('database "' in low and "does not exist" in low):
        return (
            f"{where}: cannot reach the database server ({text}); check that it runs, "
            "and the URL, user and password"
        )
    return f"{where}: {doing} ({text})"


def store_error(
    exc: BaseException, where: str, doing: str = "store error", **kw: str
) -> StoreError:
    """:func:`explain` as a :class:`StoreError` (resumable unless the store is damaged)."""
    message = explain(exc, where, doing, **kw)
    return StoreError(message, resumable=DAMAGED not in message)


def server_unreachable(exc: BaseException) -> bool:
    """Whether a database error says the server cannot be reached or has gone (not that
    a statement failed): no SQLSTATE (libpq's own connection failure), class 08
    (connection exception) or 57P (the server shutting down or starting up), or a
    connection SQLAlchemy found broken."""
    if getattr(exc, "connection_invalidated", False):
        return True
    orig = getattr(exc, "orig", None)
    if orig is None or isinstance(orig, sqlite3.Error):
        return False
    state = getattr(orig, "sqlstate", None)
    return state is None or str(state).startswith(("08", "57P"))


DB_ERRORS: tuple[type[BaseException], ...] = (sa.exc.DBAPIError, sqlite3.Error, OSError)
"""What a database call raises when the database, disk or server fails (``sqlite3``'s
own errors: the tournament store's reads on the driver's connection)."""
