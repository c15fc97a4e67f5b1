"""The competition store: the ledger of `arena serve` (arena/server holds no SQL).

Authors and their (hashed) tokens, bots and versions with their build verdicts and logs,
every game from scheduling to its result (seats, faults, the compressed record, per-seat
stderr), ratings per version with a history row per game, and the organiser's switches
(paused, frozen ranking). SQLAlchemy Core over SQLite (the default: one file, WAL) or
PostgreSQL (``postgresql+psycopg://``); the schema is versioned by alembic migrations
(``arena/store/migrations``) that :meth:`CompetitionStore.open` applies.

Every write is one transaction: a crash, kill -9 or a full disk leaves a game wholly
finished or not at all. :meth:`CompetitionStore.finish_game` is idempotent, keyed by the
game id: a result delivered twice (a retried worker, a game re-queued after a restart
that had in fact finished) is stored and rated once. Failures raise :class:`StoreError`
with a message for the user.
"""

from __future__ import annotations

import bisect
import contextlib
import gzip
import hashlib
import hmac
import itertools
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from arena.gz import gzip_small
from arena.ratings.games import seatings_to_games
from arena.ratings.kernel import update_one
from arena.ratings.model import DEFAULT_PARAMS
from arena.store.competition_models import (
    GAME_STATUSES,
    VERSION_STATUSES,
    Author,
    Bot,
    FaultGroup,
    FrozenRanking,
    GameRow,
    HeadToHead,
    LeaderRow,
    LossRow,
    Member,
    OperationsSnapshot,
    PhaseLogRow,
    RatingPoint,
    SeatRow,
    Version,
)
from arena.store.competition_names import confusable_with, mixes_scripts
from arena.store.engine import StoreError as StoreError
from arena.store.engine import db_message, describe_url, make_engine, server_unreachable
from arena.store.roster import (
    KnownTeam,
    RosterEntry,
    RosterRejected,
    member_entry,
    plan_roster,
)

STDERR_KEEP_BYTES = 256 * 1024
"""Per seat and game, at most this much of a bot's stderr is kept (the tail)."""
LOG_KEEP_BYTES = 1024 * 1024
"""A build log (build output + check-bot) is kept up to this size (head and tail)."""
SOURCE_DIGEST = "source_digest"
"""The key in a version's ``meta`` holding the digest of its unpacked upload."""
TOKEN_BYTES = 32
_KERNEL_ENV = DEFAULT_PARAMS.kernel_env()

# ---------------------------------------------------------------- schema (see migrations/)

metadata = sa.MetaData()

settings_table = sa.Table(
    "settings",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
authors = sa.Table(
    "authors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("organiser", sa.Boolean, nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.Column("staff", sa.Boolean, nullable=False, server_default=sa.false()),
)
members = sa.Table(
    "members",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("email", sa.String(254)),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("author_id", "name", name="members_team_name"),
)
sa.Index("members_author", members.c.author_id)
bots = sa.Table(
    "bots",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
    sa.Column("disqualified", sa.Boolean, nullable=False),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
)
versions = sa.Table(
    "versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("submitted", sa.DateTime(timezone=True), nullable=False),
    sa.Column("archive_path", sa.Text, nullable=False),
    sa.Column("archive_sha256", sa.String(64), nullable=False),
    sa.Column("content_hash", sa.String(64)),
    sa.Column("verdict", sa.Text),
    sa.Column("log", sa.Text),
    sa.Column("built_path", sa.Text),
    sa.Column("meta", sa.Text),
    sa.Column("language", sa.String(64)),
    sa.Column("ready_author", sa.Text),
    sa.Column("ready_version", sa.Text),
    sa.Column("decided", sa.DateTime(timezone=True)),
    sa.Column("build_started", sa.DateTime(timezone=True)),
    sa.Column("build_seconds", sa.Float),
    sa.Column("stored_bytes", sa.BigInteger, nullable=False, server_default="0"),
    sa.UniqueConstraint("bot_id", "number", name="versions_bot_number"),
)
sa.Index("versions_status", versions.c.status)
sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
    sa.Column("member_id", sa.Integer, sa.ForeignKey("members.id", name="sessions_member")),
)
sa.Index("sessions_author", sessions.c.author_id)
rate_events = sa.Table(
    "rate_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("key", sa.String(200), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
)
sa.Index("rate_events_key", rate_events.c.kind, rate_events.c.key, rate_events.c.at)
games = sa.Table(
    "games",
    metadata,
    sa.Column("n", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(32), nullable=False, unique=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("players", sa.Integer, nullable=False),
    sa.Column("variant", sa.String(16), nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("rated", sa.Boolean, nullable=False),
    sa.Column("requested_by", sa.Integer, sa.ForeignKey("authors.id")),
    sa.Column("rerun_of", sa.String(32)),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.Column("started", sa.DateTime(timezone=True)),
    sa.Column("finished", sa.DateTime(timezone=True)),
    sa.Column("finish_seq", sa.Integer),
    sa.Column("end_reason", sa.String(64)),
    sa.Column("rounds", sa.Integer),
    sa.Column("duration_s", sa.Float),
    sa.Column("worker", sa.String(200)),
    sa.Column("event_id", sa.Integer),  # events.id
)
sa.Index("games_status", games.c.status)
sa.Index("games_finish_seq", games.c.finish_seq)
sa.Index("games_finished", games.c.status, games.c.rated, games.c.finish_seq)
sa.Index("games_event", games.c.event_id)
seats = sa.Table(
    "seats",
    metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True),
    sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("score", sa.Integer),
    sa.Column("rank", sa.Integer),
    sa.Column("forfeit", sa.Boolean),
)
sa.Index("seats_version", seats.c.version_id)
sa.Index("seats_version_game", seats.c.version_id, seats.c.game_id, seats.c.rank)
faults = sa.Table(
    "faults",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), nullable=False),
    sa.Column("seat", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("forfeit", sa.Boolean, nullable=False),
)
sa.Index("faults_game", faults.c.game_id)
records = sa.Table(
    "records",
    metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
    sa.Column("record", sa.LargeBinary, nullable=False),
)
stderr_logs = sa.Table(
    "stderr_logs",
    metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True),
    sa.Column("text", sa.LargeBinary, nullable=False),
)
ratings = sa.Table(
    "ratings",
    metadata,
    sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), primary_key=True),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
    sa.Column("games", sa.Integer, nullable=False),
)
rating_history = sa.Table(
    "rating_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("game_id", sa.String(32), nullable=False),
    sa.Column("finished", sa.DateTime(timezone=True), nullable=False),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
)
sa.Index("rating_history_version", rating_history.c.version_id)
sa.Index("rating_history_version_id", rating_history.c.version_id, rating_history.c.id)
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("cutoff", sa.DateTime(timezone=True), nullable=False),
    sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    sa.Column("started", sa.DateTime(timezone=True)),
    sa.Column("finished", sa.DateTime(timezone=True)),
    sa.Column("settings", sa.Text, nullable=False),
    sa.Column("created_by", sa.String(64)),
    sa.Column("results", sa.Text),
    sa.UniqueConstraint("kind", "number", name="events_kind_number"),
)
event_entrants = sa.Table(
    "event_entrants",
    metadata,
    sa.Column("event_id", sa.Integer, sa.ForeignKey("events.id"), primary_key=True),
    sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), primary_key=True),
)
phase_log = sa.Table(
    "phase_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("phase_from", sa.String(16), nullable=False),
    sa.Column("phase_to", sa.String(16), nullable=False),
    sa.Column("actor", sa.String(64), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
)


# ---------------------------------------------------------------- errors and inputs


class NotFound(StoreError):
    """No such author, bot, version or game (HTTP 404)."""


class Conflict(StoreError):
    """The request clashes with what is stored: a bot name owned by another author, a
    game already finished (HTTP 409)."""


class Invalid(StoreError):
    """A request that cannot be valid (HTTP 400)."""


@dataclass(frozen=True)
class FinishedSeat:
    """A seat's result, as the ladder hands it to :meth:`CompetitionStore.finish_game`."""

    seat: int
    score: int
    rank: int
    forfeit: bool


@dataclass(frozen=True)
class FinishedFault:
    seat: int
    kind: str
    round: int
    message: str
    forfeit: bool


@dataclass(frozen=True)
class GameOutcome:
    """A finished game: everything the store keeps of it."""

    end_reason: str
    rounds: int
    duration_s: float
    worker: str
    record_json: bytes
    seats: tuple[FinishedSeat, ...]
    faults: tuple[FinishedFault, ...] = ()
    stderr: tuple[tuple[int, str], ...] = ()
    """(seat, text) per seat that wrote anything."""


@dataclass(frozen=True)
class LaunchInfo:
    """What the ladder needs to start a version: its built folder and manifest."""

    version_id: int
    bot_name: str
    built_path: str
    manifest: dict[str, Any]
    source: str | None = None
    """The unpacked submission (what a Ray node builds from)."""


def new_token_text() -> str:
    """A fresh author token: 32 random bytes, URL-safe, never starting with ``-`` (a token
    like ``-x...`` would be read as an option by ``arena submit --token T``)."""
    while True:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        if not token.startswith("-"):
            return token


def hash_token(token: str) -> str:
    """How tokens are kept at rest (sha256: tokens are 32 random bytes, no salt needed)."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: they were stored as UTC."""
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _utc_req(value: datetime) -> datetime:
    out = _utc(value)
    assert out is not None
    return out


def _cap_tail(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return "[... earlier output cut ...]\n" + data[-limit:].decode("utf-8", "replace")


def _cap_middle(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    half = limit // 2
    return (
        data[:half].decode("utf-8", "replace")
        + "\n[... output cut ...]\n"
        + data[-half:].decode("utf-8", "replace")
    )


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


# ---------------------------------------------------------------- the store


CHANGED = "arena_changed_rows"
"""``Connection.info`` key: the write transaction changed a row (see :func:`_note_change`)."""
TOPICS = "arena_changed_topics"
"""``Connection.info`` key: what the write transaction changes, when its method said so
(:meth:`CompetitionStore._changes`); unset means anything (:data:`ANYTHING`)."""
STATS_CHECK_S = 30.0
"""Longest the leaderboard's and head-to-head counts are brought up to date without
checking the number of games they counted (writes by another process bump no generation
here)."""
ANYTHING = "*"
"""The topic of every write that did not say what it changes: every page depends on it."""
GAMES = "games"
"""Topic: the list of games (any game scheduled, started, finished or voided)."""
RESULTS = "results"
"""Topic: finished games' results (ratings, the leaderboard, counts of finished games)."""


def game_topic(game_id: str) -> str:
    """Topic: one game's row, seats, record and logs."""
    return f"game:{game_id}"


def bot_topic(name: str) -> str:
    """Topic: the games of one bot (any of its versions) and their outcomes."""
    return f"bot:{name}"


def bot_faults_topic(name: str) -> str:
    """Topic: the faults of one bot's games (a game ends with a fault now and then)."""
    return f"bot-faults:{name}"


def bot_results_topic(name: str) -> str:
    """Topic: the results of one bot's games (its ratings, faults, head-to-head): a game of
    the bot scheduled or started changes :func:`bot_topic` but not this."""
    return f"bot-results:{name}"


def _note_change(
    conn: Connection,
    cursor: Any,
    statement: str,
    parameters: Any,
    context: Any,
    executemany: bool,
) -> None:
    """Mark the transaction of ``conn`` as changing the store when a statement touched
    rows (a claim that found no work changes nothing, and keeps the page cache warm)."""
    if CHANGED in conn.info and not conn.info[CHANGED]:
        verb = statement.lstrip()[:9].split(None, 1)[0].upper() if statement.strip() else ""
        if verb not in _READS and cursor.rowcount != 0:  # -1 (unknown) counts as a change
            conn.info[CHANGED] = True


_READS = frozenset({"SELECT", "PRAGMA", "SAVEPOINT", "RELEASE", "BEGIN", "SHOW", "EXPLAIN"})


UNREACHABLE_RETRY_S = 2.0
"""After the database server could not be reached, how long calls fail at once before
the next one tries again."""


@dataclass(frozen=True)
class Tally:
    """Counts over the finished games up to ``seq`` (see :meth:`CompetitionStore._tallied`)."""

    anything: int
    """:data:`ANYTHING`'s generation when ``games`` was last checked."""
    checked_at: float
    seq: int
    games: int
    """Rated finished games counted (a re-run makes the store's number differ)."""
    counts: dict[Any, tuple[int, ...]]


class CompetitionStore:
    """The competition's database. Thread-safe: the web server, the ladder and the build
    worker of one process share one instance (writes are serialised in-process)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.is_sqlite = engine.dialect.name == "sqlite"
        self._write_lock = threading.RLock()
        self._shared_read = threading.local()
        """``conn``: the transaction of this thread's :meth:`reading` block."""
        self._unreachable: tuple[float, str] | None = None
        """Until when (monotonic) calls fail at once, and with what: the database server
        could not be reached (see :meth:`_fail_fast`)."""
        self.generation = 0
        """Bumped after each write transaction of this process that changed a row: what was
        read before a bump may be stale."""
        self._topic_generations: dict[str, int] = {}
        """Topic → :attr:`generation` of the last write that changed it."""
        self._tally_lock = threading.Lock()
        self._recount_lock = threading.Lock()
        self._tallies: dict[tuple[str, str], Tally] = {}
        """Counts over finished games kept between reads (:meth:`_tallied`)."""
        sa.event.listen(engine, "after_cursor_execute", _note_change)

    # ------------------------------------------------------------ opening

    @classmethod
    def open(cls, url: str) -> CompetitionStore:
        """Open (creating and migrating as needed) the store at ``url``: ``sqlite:///path``
        or ``postgresql+psycopg://user:pw@host/db``. Refuses a store written by a newer
        arena."""
        from arena.store.migrations import upgrade

        shown = describe_url(url)
        # The web server's worker threads, the ladder and the build worker share the pool.
        pool = {"pool_size": 8, "max_overflow": 32, "pool_timeout": 60}
        engine = make_engine(url, pool=pool, threads=True, durable=True)
        store = cls(engine, url)
        try:
            with store.engine.begin() as conn:
                upgrade(conn)
        except StoreError:
            engine.dispose()
            raise
        except sa.exc.OperationalError as exc:
            engine.dispose()
            raise StoreError(
                f"cannot open the store {shown}: {db_message(exc)}",
                hint="check that the database server runs and the URL, user and password",
            ) from None
        except sa.exc.DatabaseError as exc:
            engine.dispose()
            raise StoreError(f"the store {shown} is damaged or not a store: {exc.orig}") from None
        return store

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> CompetitionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction (SQLite: BEGIN IMMEDIATE, so it never fails half-way
        on a lock upgrade). Bumps :attr:`generation` once it ends if it changed a row."""
        with self._write_lock:
            self._fail_fast("write")
            changed = False
            try:
                with self.engine.connect() as conn:
                    conn.info["immediate"] = True
                    conn.info[CHANGED] = False
                    conn.info.pop(TOPICS, None)
                    try:
                        with conn.begin():
                            yield conn
                    finally:
                        conn.info["immediate"] = False
                        changed = conn.info.pop(CHANGED, True)
                        topics = conn.info.pop(TOPICS, None) or {ANYTHING}
            except sa.exc.IntegrityError:
                raise
            except sa.exc.OperationalError as exc:
                raise self._failed("write", exc) from None
            finally:  # after the commit (or the rollback): a reader from now on sees it
                if changed:
                    self.generation += 1
                    for topic in topics:
                        self._topic_generations[topic] = self.generation

    def _game_changes(self, conn: Connection, game_id: str, *topics: str) -> list[str]:
        """Say that this transaction changes the game ``game_id`` (its seats already
        stored): the game, the list of games, its bots' games (and their results when
        ``topics`` holds :data:`RESULTS`), and ``topics``; the names of its bots."""
        names = [
            str(n)
            for n in conn.execute(
                sa.select(bots.c.name)
                .join(versions, versions.c.bot_id == bots.c.id)
                .join(seats, seats.c.version_id == versions.c.id)
                .where(seats.c.game_id == game_id)
            ).scalars()
        ]
        results = [bot_results_topic(n) for n in names] if RESULTS in topics else []
        self._changes(conn, GAMES, game_topic(game_id), *map(bot_topic, names), *results, *topics)
        return names

    @staticmethod
    def _changes(conn: Connection, *topics: str) -> None:
        """Say what this write transaction changes (topics such as :data:`GAMES`): pages
        that show none of them stay valid. Only for a method whose every write is covered."""
        conn.info.setdefault(TOPICS, set()).update(topics)

    def note_write_elsewhere(self) -> None:
        """Another process wrote something this one cannot name (the web server, for its
        page-making process): whatever was derived from the store before is stale."""
        with self._write_lock:
            self.generation += 1
            self._topic_generations[ANYTHING] = self.generation

    def stamp(self, topics: Iterable[str]) -> int:
        """The generation of the newest write that changed any of ``topics`` (or anything
        undeclared): equal stamps mean nothing they name has changed in between (the web
        server's page cache keys each page on the stamp of what it shows)."""
        known = self._topic_generations
        return max([known.get(ANYTHING, 0), *(known.get(t, 0) for t in topics)])

    def _fail_fast(self, doing: str) -> None:
        """For ``UNREACHABLE_RETRY_S`` after the server could not be reached, fail at once
        (a page answers 503 at once, the ladder and the build worker go on) instead of
        each call waiting out the connect timeout, in turn behind the write lock."""
        down = self._unreachable
        if down is not None and time.monotonic() < down[0]:
            raise StoreError(f"cannot {doing} the store: {down[1]}")

    def _failed(self, doing: str, exc: sa.exc.OperationalError) -> StoreError:
        message = db_message(exc)
        if server_unreachable(exc):
            self._unreachable = (time.monotonic() + UNREACHABLE_RETRY_S, message)
        else:
            self._unreachable = None
        return StoreError(f"cannot {doing} the store: {message}")

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Every read of this thread inside the block shares one transaction: one snapshot
        of the store, and one BEGIN and COMMIT for a page's many reads instead of one each."""
        if getattr(self._shared_read, "conn", None) is not None:
            yield
            return
        with self._read() as conn:
            self._shared_read.conn = conn
            try:
                yield
            finally:
                self._shared_read.conn = None

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        shared: Connection | None = getattr(self._shared_read, "conn", None)
        if shared is not None:  # inside reading(): its transaction, its error handling
            yield shared
            return
        self._fail_fast("read")
        try:
            with self.engine.connect() as conn, conn.begin():
                yield conn
        except sa.exc.OperationalError as exc:
            raise self._failed("read", exc) from None

    # ------------------------------------------------------------ settings

    def _get_setting(self, conn: Connection, key: str) -> str | None:
        value = conn.execute(
            sa.select(settings_table.c.value).where(settings_table.c.key == key)
        ).scalar_one_or_none()
        return None if value is None else str(value)

    def _put_setting(self, conn: Connection, key: str, value: str | None) -> None:
        conn.execute(sa.delete(settings_table).where(settings_table.c.key == key))
        if value is not None:
            conn.execute(sa.insert(settings_table).values(key=key, value=value))

    def setting(self, key: str) -> str | None:
        with self._read() as conn:
            return self._get_setting(conn, key)

    def set_setting(self, key: str, value: str | None) -> None:
        with self._write() as conn:
            self._put_setting(conn, key, value)

    # ------------------------------------------------------------ phases

    def change_phase(
        self,
        key: str,
        expected: str | None,
        value: str,
        *,
        action: str,
        phase_from: str,
        phase_to: str,
        actor: str,
        detail: dict[str, Any],
        at: datetime,
    ) -> int | None:
        """Set the setting ``key`` to ``value`` and log the change, in one transaction,
        only if it still holds ``expected`` (compare-and-set: of two racing changes, or a
        timer firing again after a restart, one wins); the log row's id, or None."""
        with self._write() as conn:
            if self._get_setting(conn, key) != expected:
                return None
            self._put_setting(conn, key, value)
            row = conn.execute(
                sa.insert(phase_log)
                .values(
                    at=_utc_req(at),
                    action=action,
                    phase_from=phase_from,
                    phase_to=phase_to,
                    actor=actor,
                    detail=json.dumps(detail, sort_keys=True),
                )
                .returning(phase_log.c.id)
            ).scalar_one()
            return int(row)

    def add_phase_detail(self, log_id: int, detail: dict[str, Any]) -> None:
        """Add to a phase change's details what became known after it (what the finals
        starter answered, or why it failed)."""
        with self._write() as conn:
            text = conn.execute(
                sa.select(phase_log.c.detail).where(phase_log.c.id == log_id)
            ).scalar_one_or_none()
            if text is None:
                raise NotFound(f"no phase change {log_id}")
            merged = {**_meta(str(text)), **detail}
            conn.execute(
                sa.update(phase_log)
                .where(phase_log.c.id == log_id)
                .values(detail=json.dumps(merged, sort_keys=True))
            )

    def phase_log(self, limit: int = 200) -> list[PhaseLogRow]:
        """The phase changes, newest first."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(phase_log).order_by(phase_log.c.id.desc()).limit(limit)
            ).all()
        return [
            PhaseLogRow(
                id=r.id,
                at=_utc_req(r.at),
                action=r.action,
                phase_from=r.phase_from,
                phase_to=r.phase_to,
                actor=r.actor,
                detail=_meta(r.detail),
            )
            for r in rows
        ]

    # ------------------------------------------------------------ authors

    def create_author(
        self, name: str, organiser: bool = False, *, staff: bool = False
    ) -> tuple[Author, str]:
        """A new author and their token (returned once; only its hash is stored).
        ``staff``: a staff team, whose bots are baselines."""
        name = name.strip()
        if not name or len(name) > 64 or not name.isprintable():
            raise Invalid("an author name is 1 to 64 printable characters")
        if mixes_scripts(name):
            raise Invalid(f"the author name {name!r} mixes scripts (Latin with Cyrillic, ...)")
        token = new_token_text()
        created = _now()
        try:
            with self._write() as conn:
                if conn.execute(sa.select(authors.c.id).where(authors.c.name == name)).first():
                    raise Conflict(f"the author name {name!r} is taken")
                taken = conn.execute(sa.select(authors.c.name)).scalars()
                like = confusable_with(name, (str(n) for n in taken))
                if like is not None:
                    raise Conflict(f"the author name {name!r} looks like {like!r}, which is taken")
                author_id = self._insert_author(conn, name, organiser, staff, token, created)
        except sa.exc.IntegrityError:
            raise Conflict(f"the author name {name!r} is taken") from None
        return Author(author_id, name, organiser, created, staff=staff), token

    def _insert_author(
        self,
        conn: Connection,
        name: str,
        organiser: bool,
        staff: bool,
        token: str,
        created: datetime,
    ) -> int:
        return int(
            conn.execute(
                sa.insert(authors).values(
                    name=name,
                    organiser=organiser,
                    staff=staff,
                    token_hash=hash_token(token),
                    created=created,
                )
            ).inserted_primary_key[0]  # type: ignore[index]
        )

    def new_token(self, name: str) -> str:
        """Issue a fresh token to an existing author (the old one and every browser session
        started with it stop working; a team's members keep their tokens and sessions)."""
        token = new_token_text()
        with self._write() as conn:
            author_id = conn.execute(
                sa.select(authors.c.id).where(authors.c.name == name)
            ).scalar_one_or_none()
            done = conn.execute(
                sa.update(authors)
                .where(authors.c.name == name)
                .values(token_hash=hash_token(token))
            ).rowcount
            if author_id is not None:  # a leaked token renewed: its sessions end too
                conn.execute(  # (a team's members keep theirs: their tokens still hold)
                    sa.delete(sessions).where(
                        sessions.c.author_id == author_id, sessions.c.member_id.is_(None)
                    )
                )
        if not done:
            raise NotFound(f"no author named {name!r}")
        return token

    def set_staff(self, name: str, staff: bool) -> Author:
        """Mark a team as staff (its bots are baselines) or not."""
        with self._write() as conn:
            done = conn.execute(
                sa.update(authors).where(authors.c.name == name).values(staff=staff)
            ).rowcount
        author = self.author_by_name(name)
        if not done or author is None:
            raise NotFound(f"no author named {name!r}")
        return author

    def staff_author_ids(self) -> set[int]:
        """The staff teams (whose bots results pages badge and prize ranks skip)."""
        with self._read() as conn:
            return {
                int(i)
                for i in conn.execute(sa.select(authors.c.id).where(authors.c.staff)).scalars()
            }

    # ------------------------------------------------------------ teams and members

    def import_roster(self, entries: Sequence[RosterEntry]) -> list[tuple[Member, str]]:
        """Create the roster's missing teams and members in one transaction; each new
        member with their token (returned once). Every bad line raises
        :class:`RosterRejected` and nothing is written; importing the same roster again
        returns nothing new."""
        issued: list[tuple[Member, str]] = []
        now = _now()
        with self._write() as conn:
            plan = plan_roster(entries, self._known_teams(conn))
            ids = {
                str(r.name): int(r.id)
                for r in conn.execute(sa.select(authors.c.id, authors.c.name))
            }
            for name, staff in plan.new_teams.items():
                ids[name] = self._insert_author(conn, name, False, staff, new_token_text(), now)
            for name, staff in plan.staff_changes.items():
                conn.execute(
                    sa.update(authors).where(authors.c.id == ids[name]).values(staff=staff)
                )
            for entry in plan.new_members:
                issued.append(self._insert_member(conn, ids[entry.team], entry, now))
        return issued

    def _known_teams(self, conn: Connection) -> list[KnownTeam]:
        teams = {
            int(r.id): KnownTeam(int(r.id), str(r.name), bool(r.organiser), bool(r.staff))
            for r in conn.execute(sa.select(authors))
        }
        for r in conn.execute(sa.select(members.c.author_id, members.c.name, members.c.email)):
            teams[int(r.author_id)].members[str(r.name)] = r.email
        return list(teams.values())

    def _insert_member(
        self, conn: Connection, author_id: int, entry: RosterEntry, now: datetime
    ) -> tuple[Member, str]:
        token = new_token_text()
        member_id = conn.execute(
            sa.insert(members).values(
                author_id=author_id,
                name=entry.member,
                email=entry.email,
                token_hash=hash_token(token),
                created=now,
            )
        ).inserted_primary_key[0]  # type: ignore[index]
        return Member(int(member_id), author_id, entry.team, entry.member, entry.email, now), token

    def add_member(self, team: str, name: str, email: str | None = None) -> tuple[Member, str]:
        """One new member of an existing team (the roster's rules) and their token."""
        if self.author_by_name(team) is None:
            raise NotFound(f"no team named {team!r}")
        try:
            issued = self.import_roster([member_entry(0, team, name, email)])
        except RosterRejected as exc:  # one line, and no file: say it without "line 0"
            raise Invalid("; ".join(p.removeprefix("line 0: ") for p in exc.problems)) from None
        if not issued:
            raise Conflict(f"{name!r} is already a member of team {team!r}")
        return issued[0]

    def remove_member(self, team: str, name: str) -> Member:
        """Take a member off a team: their token and browser sessions stop working."""
        member = self._member(team, name)
        with self._write() as conn:
            conn.execute(sa.delete(sessions).where(sessions.c.member_id == member.id))
            conn.execute(sa.delete(members).where(members.c.id == member.id))
        return member

    def new_member_token(self, team: str, name: str) -> str:
        """A fresh token for a member (the old one and that member's sessions stop
        working; the team's other members keep theirs)."""
        member = self._member(team, name)
        token = new_token_text()
        with self._write() as conn:
            conn.execute(
                sa.update(members)
                .where(members.c.id == member.id)
                .values(token_hash=hash_token(token))
            )
            conn.execute(sa.delete(sessions).where(sessions.c.member_id == member.id))
        return token

    def _member(self, team: str, name: str) -> Member:
        found = [m for m in self.members(team) if m.name.casefold() == name.strip().casefold()]
        if not found:
            raise NotFound(f"team {team!r} has no member named {name!r}")
        return found[0]

    def members(self, team: str | None = None) -> list[Member]:
        """Every member (of ``team``), by team then name."""
        query = sa.select(members, authors.c.name.label("team")).join(
            authors, authors.c.id == members.c.author_id
        )
        if team is not None:
            query = query.where(authors.c.name == team)
        with self._read() as conn:
            rows = conn.execute(query.order_by(authors.c.name, members.c.name)).all()
        return [
            Member(
                int(r.id), int(r.author_id), str(r.team), str(r.name), r.email, _utc_req(r.created)
            )
            for r in rows
        ]

    # ------------------------------------------------------------ browser sessions

    def create_session(
        self, author_id: int, lifetime_s: float, member_id: int | None = None
    ) -> str:
        """A new browser session of ``author_id`` (its own token, returned once; only its
        hash is kept): what the session cookie holds, never the API token. ``member_id``:
        the team member who signed in (renewing their token ends it)."""
        token = new_token_text()
        now = _now()
        with self._write() as conn:
            conn.execute(sa.delete(sessions).where(sessions.c.expires < now))
            conn.execute(
                sa.insert(sessions).values(
                    token_hash=hash_token(token),
                    author_id=author_id,
                    member_id=member_id,
                    created=now,
                    expires=now + timedelta(seconds=lifetime_s),
                )
            )
        return token

    def author_by_session(self, token: str) -> Author | None:
        """The author of an unexpired session, or None."""
        if not token or len(token) > 200:
            return None
        digest = hash_token(token)
        with self._read() as conn:
            row = conn.execute(
                sa.select(
                    authors,
                    sessions.c.expires,
                    sessions.c.token_hash.label("session_hash"),
                    members.c.id.label("member_id"),
                    members.c.name.label("member_name"),
                )
                .join(sessions, sessions.c.author_id == authors.c.id)
                .outerjoin(members, members.c.id == sessions.c.member_id)
                .where(sessions.c.token_hash == digest)
            ).first()
        if row is None or not hmac.compare_digest(str(row.session_hash), digest):
            return None
        expires = _utc(row.expires)
        if expires is None or expires <= _now():
            return None
        return _author(row, row.member_id, row.member_name)

    def end_session(self, token: str) -> bool:
        """Sign out: the session stops working at once; whether there was one."""
        with self._write() as conn:
            return bool(
                conn.execute(
                    sa.delete(sessions).where(sessions.c.token_hash == hash_token(token))
                ).rowcount
            )

    # ------------------------------------------------------------ rate limits

    def take_event(
        self, kind: str, key: str, limit: int, window_s: float, *, record: bool = True
    ) -> float | None:
        """Rate limiting that survives a restart: None when fewer than ``limit`` events of
        (``kind``, ``key``) happened in the last ``window_s`` seconds (one more is recorded
        unless ``record`` is False: then only read, as on every API request), else the
        seconds until one is allowed."""
        now = _now()
        since = now - timedelta(seconds=window_s)
        key = key[:200]
        if not record:
            with self._read() as conn:
                return _wait_for_event(conn, kind, key, limit, since)
        with self._write() as conn:
            conn.execute(
                sa.delete(rate_events).where(rate_events.c.kind == kind, rate_events.c.at < since)
            )
            wait = _wait_for_event(conn, kind, key, limit, since)
            if wait is None:
                conn.execute(sa.insert(rate_events).values(kind=kind, key=key, at=now))
        return wait

    def give_back_event(self, kind: str, key: str) -> None:
        """Forget the newest event of (``kind``, ``key``): the request it allowed did not
        happen (an upload refused before it was stored)."""
        key = key[:200]
        with self._write() as conn:
            newest = conn.execute(
                sa.select(rate_events.c.id)
                .where(rate_events.c.kind == kind, rate_events.c.key == key)
                .order_by(rate_events.c.id.desc())
                .limit(1)
            ).scalar_one_or_none()
            if newest is not None:
                conn.execute(sa.delete(rate_events).where(rate_events.c.id == newest))

    def author_by_token(self, token: str) -> Author | None:
        """The author holding ``token``, or None (the hash lookup is an index probe; the
        final comparison is constant-time)."""
        if not token or len(token) > 200:
            return None
        digest = hash_token(token)
        with self._read() as conn:
            row = conn.execute(sa.select(authors).where(authors.c.token_hash == digest)).first()
            if row is not None and hmac.compare_digest(str(row.token_hash), digest):
                return _author(row)
            member = conn.execute(
                sa.select(
                    authors,
                    members.c.id.label("member_id"),
                    members.c.name.label("member_name"),
                    members.c.token_hash.label("member_hash"),
                )
                .join(members, members.c.author_id == authors.c.id)
                .where(members.c.token_hash == digest)
            ).first()
        if member is None or not hmac.compare_digest(str(member.member_hash), digest):
            return None
        return _author(member, member.member_id, member.member_name)

    def author(self, author_id: int) -> Author | None:
        with self._read() as conn:
            row = conn.execute(sa.select(authors).where(authors.c.id == author_id)).first()
        return None if row is None else _author(row)

    def author_by_name(self, name: str) -> Author | None:
        with self._read() as conn:
            row = conn.execute(sa.select(authors).where(authors.c.name == name)).first()
        return None if row is None else _author(row)

    def authors(self) -> list[Author]:
        with self._read() as conn:
            rows = conn.execute(sa.select(authors).order_by(authors.c.id)).all()
        return [_author(r) for r in rows]

    def has_organiser(self) -> bool:
        with self._read() as conn:
            return (
                conn.execute(sa.select(authors.c.id).where(authors.c.organiser).limit(1)).first()
                is not None
            )

    # ------------------------------------------------------------ submissions

    def add_submission(
        self,
        author_id: int,
        bot_name: str,
        archive_path: str,
        archive_sha256: str,
        archive_bytes: int = 0,
        source_digest: str | None = None,
    ) -> Version:
        """A new version of ``bot_name`` (created, owned by ``author_id``, if new), queued
        for the build worker. :class:`Conflict` if another author owns the name.
        ``source_digest`` (of the unpacked upload) is kept so that an identical
        resubmission can be recognised (:meth:`unchanged_version`)."""
        now = _now()
        try:
            with self._write() as conn:
                if not conn.execute(
                    sa.select(authors.c.id).where(authors.c.id == author_id)
                ).first():
                    raise NotFound(f"no author {author_id}")
                bot = conn.execute(sa.select(bots).where(bots.c.name == bot_name)).first()
                if bot is None:
                    if mixes_scripts(bot_name):
                        raise Invalid(f"the bot name {bot_name!r} mixes scripts")
                    others = conn.execute(
                        sa.select(bots.c.name).where(bots.c.author_id != author_id)
                    ).scalars()
                    like = confusable_with(bot_name, (str(n) for n in others))
                    if like is not None:
                        raise Conflict(
                            f"the bot name {bot_name!r} looks like {like!r}, another "
                            "author's bot: choose another name"
                        )
                    bot_id = conn.execute(
                        sa.insert(bots).values(
                            name=bot_name, author_id=author_id, disqualified=False, created=now
                        )
                    ).inserted_primary_key[0]  # type: ignore[index]
                else:
                    if bot.author_id != author_id:
                        raise Conflict(f"the bot name {bot_name!r} belongs to another author")
                    if bot.disqualified:
                        raise Conflict(f"the bot {bot_name!r} is disqualified")
                    bot_id = bot.id
                number = conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(versions.c.number), 0)).where(
                        versions.c.bot_id == bot_id
                    )
                ).scalar_one()
                version_id = conn.execute(
                    sa.insert(versions).values(
                        bot_id=bot_id,
                        number=int(number) + 1,
                        status="queued",
                        submitted=now,
                        archive_path=archive_path,
                        archive_sha256=archive_sha256,
                        stored_bytes=archive_bytes,
                        meta=None
                        if source_digest is None
                        else json.dumps({SOURCE_DIGEST: source_digest}),
                    )
                ).inserted_primary_key[0]  # type: ignore[index]
                out = self._version(conn, int(version_id))
        except sa.exc.IntegrityError:
            raise Conflict(f"the bot name {bot_name!r} was just taken; try again") from None
        assert out is not None
        return out

    def unchanged_version(
        self, author_id: int, bot_name: str, source_digest: str
    ) -> Version | None:
        """The author's active version of ``bot_name`` if its upload unpacked to exactly
        ``source_digest``: resubmitting it would only reset a rating it already earned,
        so the caller keeps it instead. None otherwise (another author's name included)."""
        with self._read() as conn:
            row = conn.execute(
                sa.select(versions.c.id, versions.c.meta)
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(
                    bots.c.name == bot_name,
                    bots.c.author_id == author_id,
                    versions.c.status == "active",
                )
            ).first()
            if row is None or _meta(row.meta).get(SOURCE_DIGEST) != source_digest:
                return None
            return self._version(conn, int(row.id))

    def claim_queued_version(
        self, budget_s: float = float("inf"), window_s: float = 3600.0
    ) -> Version | None:
        """The next version to build, now marked ``building`` (a build worker's job).

        Fair across authors: never two builds of one author at once; authors take turns
        (the one whose last build started longest ago goes first), each building their
        oldest queued version; an author whose builds took ``budget_s`` or more in the
        last ``window_s`` seconds waits until older builds leave the window."""
        now = _now()
        since = now - timedelta(seconds=window_s)
        with self._write() as conn:
            queued = conn.execute(
                sa.select(versions.c.id, bots.c.author_id)
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(versions.c.status == "queued")
                .order_by(versions.c.id)
            ).all()
            if not queued:
                return None
            history = conn.execute(
                sa.select(
                    bots.c.author_id,
                    versions.c.status,
                    versions.c.build_started,
                    versions.c.build_seconds,
                )
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(
                    sa.or_(
                        versions.c.status == "building",
                        versions.c.build_started >= since,
                    )
                )
            ).all()
            busy = {r.author_id for r in history if r.status == "building"}
            used: dict[int, float] = {}
            last: dict[int, datetime] = {}
            for r in history:
                started = _utc(r.build_started)
                if r.status != "building" and started is not None:
                    used[r.author_id] = used.get(r.author_id, 0.0) + float(r.build_seconds or 0)
                if started is not None and (r.author_id not in last or started > last[r.author_id]):
                    last[r.author_id] = started
            oldest_first: dict[int, int] = {}
            for version_id, author_id in queued:
                oldest_first.setdefault(int(author_id), int(version_id))
            ready = [
                (last.get(a, datetime.min.replace(tzinfo=UTC)), v, a)
                for a, v in oldest_first.items()
                if a not in busy and used.get(a, 0.0) < budget_s
            ]
            if not ready:
                return None
            _, version_id, _ = min(ready)
            conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id)
                .values(status="building", build_started=now, build_seconds=None)
            )
            return self._version(conn, int(version_id))

    def archive_of(self, version_id: int) -> tuple[str, str] | None:
        """(archive path, its sha256) of a submission."""
        with self._read() as conn:
            row = conn.execute(
                sa.select(versions.c.archive_path, versions.c.archive_sha256).where(
                    versions.c.id == version_id
                )
            ).first()
        return None if row is None else (str(row[0]), str(row[1]))

    def requeue_builds(self) -> int:
        """After a restart: builds cut short go back to the queue."""
        with self._write() as conn:
            return int(
                conn.execute(
                    sa.update(versions)
                    .where(versions.c.status == "building")
                    .values(status="queued")
                ).rowcount
            )

    def return_to_queue(self, version_id: int) -> Version:
        """A build the arena could not run (its problem, not the bot's): the version is
        ``queued`` again, with no verdict, for the build worker to retry."""
        with self._write() as conn:
            conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id, versions.c.status == "building")
                .values(status="queued", build_started=None, build_seconds=None)
            )
            out = self._version(conn, version_id)
        if out is None:
            raise NotFound(f"no submission {version_id}")
        return out

    def stored_bytes_of(self, author_id: int) -> int:
        """Disk the author's kept submissions use (archives, sources, builds)."""
        with self._read() as conn:
            total = conn.execute(
                sa.select(sa.func.coalesce(sa.func.sum(versions.c.stored_bytes), 0))
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(bots.c.author_id == author_id)
            ).scalar_one()
        return int(total)

    def _spent_files(self) -> sa.Select[Any]:
        """Versions whose archive and unpacked source may go: rejected ones, and replaced
        or disqualified ones that no scheduled or running game seats."""
        busy = _busy_versions()
        return sa.select(versions.c.id, versions.c.archive_path).where(
            sa.or_(
                versions.c.status == "rejected",
                versions.c.status.in_(("retired", "disqualified")) & versions.c.id.not_in(busy),
            ),
            sa.or_(versions.c.archive_path != "", versions.c.stored_bytes > 0),
        )

    def spent_files(self) -> list[tuple[int, str]]:
        """(version id, archive path) of every version whose archive and source may be
        deleted (see :meth:`forget_files`)."""
        with self._read() as conn:
            rows = conn.execute(self._spent_files().order_by(versions.c.id)).all()
        return [(int(r[0]), str(r[1])) for r in rows]

    def forget_files(self, version_id: int, stored_bytes: int) -> bool:
        """Record that a spent version's archive and source are deleted (checked again in
        this transaction; True: delete them now); ``stored_bytes``: what it still holds
        (its build copy, until the ladder collects it)."""
        with self._write() as conn:
            still = conn.execute(self._spent_files().where(versions.c.id == version_id)).first()
            if still is None:
                return False
            conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id)
                .values(archive_path="", stored_bytes=stored_bytes)
            )
        return True

    def _unused_builds(self) -> sa.Select[Any]:
        """Versions that can no longer play but still have a build copy: replaced
        (``retired``) or ``disqualified``, with no scheduled or running game seating them."""
        busy = _busy_versions()
        return sa.select(versions.c.id, versions.c.built_path).where(
            versions.c.status.in_(("retired", "disqualified")),
            versions.c.built_path.is_not(None),
            versions.c.id.not_in(busy),
        )

    def unused_builds(self) -> list[tuple[int, str]]:
        """(version id, build path) of every version whose build copy may go."""
        with self._read() as conn:
            rows = conn.execute(self._unused_builds().order_by(versions.c.id)).all()
        return [(int(r[0]), str(r[1])) for r in rows]

    def forget_build(self, version_id: int) -> bool:
        """Clear a version's build path before its copy is deleted, if it is still unused
        (checked again in this transaction); True when the copy may be deleted."""
        with self._write() as conn:
            still = conn.execute(self._unused_builds().where(versions.c.id == version_id)).first()
            if still is None:
                return False
            conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id)
                .values(
                    built_path=None,
                    # its archive and source already gone: nothing of it is left on disk
                    stored_bytes=sa.case(
                        (versions.c.archive_path == "", 0), else_=versions.c.stored_bytes
                    ),
                )
            )
        return True

    def rebuild_version(self, version_id: int, reason: str) -> Version | None:
        """Take an active version off the ladder because its build copy is gone: it is
        ``queued`` again (the build worker rebuilds it from its kept archive), with
        ``reason`` as its verdict until the new one. None if it was not active."""
        with self._write() as conn:
            changed = conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id, versions.c.status == "active")
                .values(status="queued", verdict=reason, built_path=None)
            ).rowcount
            out = self._version(conn, version_id)
        return out if changed else None

    def finish_build(
        self,
        version_id: int,
        ok: bool,
        verdict: str,
        log: str,
        built_path: str | None,
        content_hash: str | None,
        meta: dict[str, Any],
        stored_bytes: int | None = None,
    ) -> Version:
        """Record a build's verdict (and the disk the version now holds, archive, source
        and build, when the caller measured it). An accepted version becomes ``active``
        and retires the bot's previous active version (its games keep it); a rebuilt
        version that a newer one replaced meanwhile is ``retired`` at once."""
        with self._write() as conn:
            row = conn.execute(sa.select(versions).where(versions.c.id == version_id)).first()
            if row is None:
                raise NotFound(f"no submission {version_id}")
            kept = {k: v for k, v in _meta(row.meta).items() if k == SOURCE_DIGEST}
            meta_text = json.dumps({**meta, **kept}, sort_keys=True, default=str)
            disqualified = conn.execute(
                sa.select(bots.c.disqualified).where(bots.c.id == row.bot_id)
            ).scalar_one()
            status = "rejected"
            if ok:
                status = "disqualified" if disqualified else "active"
            newer_active = conn.execute(
                sa.select(versions.c.id)
                .where(
                    versions.c.bot_id == row.bot_id,
                    versions.c.status == "active",
                    versions.c.number > row.number,
                )
                .limit(1)
            ).first()
            if status == "active" and newer_active is not None:
                status = "retired"  # rebuilt after a newer version took its place
            if status == "active":
                conn.execute(
                    sa.update(versions)
                    .where(versions.c.bot_id == row.bot_id, versions.c.status == "active")
                    .values(status="retired")
                )
            conn.execute(
                sa.update(versions)
                .where(versions.c.id == version_id)
                .values(
                    status=status,
                    verdict=verdict,
                    log=_cap_middle(log, LOG_KEEP_BYTES),
                    built_path=built_path if ok else None,
                    content_hash=content_hash,
                    meta=meta_text,
                    language=_str_or_none(meta.get("language")),
                    ready_author=_str_or_none(meta.get("ready_author")),
                    ready_version=_str_or_none(meta.get("ready_version")),
                    decided=_now(),
                    build_seconds=_seconds_since(_utc(row.build_started)),
                    stored_bytes=row.stored_bytes if stored_bytes is None else stored_bytes,
                )
            )
            out = self._version(conn, version_id)
        assert out is not None
        return out

    def _version(self, conn: Connection, version_id: int) -> Version | None:
        row = conn.execute(_version_select().where(versions.c.id == version_id)).first()
        return None if row is None else _version_of(row)

    def version(self, version_id: int) -> Version | None:
        with self._read() as conn:
            return self._version(conn, version_id)

    def versions_of(self, bot_name: str) -> list[Version]:
        """Every version of a bot, newest first."""
        with self._read() as conn:
            rows = conn.execute(
                _version_select().where(bots.c.name == bot_name).order_by(versions.c.number.desc())
            ).all()
        return [_version_of(r) for r in rows]

    def submissions_of(self, author_id: int) -> list[Version]:
        """Every version an author submitted, newest first."""
        with self._read() as conn:
            rows = conn.execute(
                _version_select()
                .where(bots.c.author_id == author_id)
                .order_by(versions.c.id.desc())
            ).all()
        return [_version_of(r) for r in rows]

    def active_versions(self) -> list[Version]:
        """The versions on the ladder: each bot's active version (none disqualified)."""
        with self._read() as conn:
            rows = conn.execute(
                _version_select()
                .where(versions.c.status == "active", bots.c.disqualified.is_(False))
                .order_by(versions.c.id)
            ).all()
        return [_version_of(r) for r in rows]

    def active_version_ids(self) -> list[int]:
        """The ids of :meth:`active_versions` (oldest first), cheap enough for every choice."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(versions.c.id)
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(versions.c.status == "active", bots.c.disqualified.is_(False))
                .order_by(versions.c.id)
            ).all()
        return [int(r.id) for r in rows]

    def launch_info(self, version_id: int) -> LaunchInfo | None:
        with self._read() as conn:
            row = conn.execute(
                sa.select(versions.c.id, bots.c.name, versions.c.built_path, versions.c.meta)
                .join(bots, bots.c.id == versions.c.bot_id)
                .where(versions.c.id == version_id)
            ).first()
        if row is None or row.built_path is None:
            return None
        meta = json.loads(row.meta or "{}")
        return LaunchInfo(
            int(row.id),
            str(row.name),
            str(row.built_path),
            meta.get("manifest", {}),
            meta.get("source"),
        )

    def bot(self, name: str) -> Bot | None:
        with self._read() as conn:
            row = conn.execute(_bot_select().where(bots.c.name == name)).first()
        return None if row is None else _bot_of(row)

    def bots(self) -> list[Bot]:
        with self._read() as conn:
            rows = conn.execute(_bot_select().order_by(bots.c.name)).all()
        return [_bot_of(r) for r in rows]

    def submission_log(self, version_id: int) -> str | None:
        """The build log and check-bot output (the web layer decides who may read it)."""
        with self._read() as conn:
            value = conn.execute(
                sa.select(versions.c.log).where(versions.c.id == version_id)
            ).scalar_one_or_none()
        return None if value is None else str(value)

    # ------------------------------------------------------------ games

    def schedule_game(
        self,
        *,
        kind: str,
        players: int,
        variant: str,
        seed: int,
        version_ids: Sequence[int],
        rated: bool,
        requested_by: int | None = None,
        rerun_of: str | None = None,
    ) -> GameRow:
        """A new game (status ``scheduled``) seating ``version_ids`` in that order."""
        if len(version_ids) != players or players not in (2, 3, 4):
            raise Invalid(f"a game seats 2 to 4 players, got {len(version_ids)} for {players}")
        with self._write() as conn:
            game_id = self._insert_game(
                conn, kind, players, variant, seed, version_ids, rated, requested_by, rerun_of
            )
            self._game_changes(conn, game_id)
            out = self._game(conn, game_id)
        assert out is not None
        return out

    def _insert_game(
        self,
        conn: Connection,
        kind: str,
        players: int,
        variant: str,
        seed: int,
        version_ids: Sequence[int],
        rated: bool,
        requested_by: int | None,
        rerun_of: str | None,
        game_id: str | None = None,
        event_id: int | None = None,
    ) -> str:
        game_id = game_id or secrets.token_hex(6)
        conn.execute(
            sa.insert(games).values(
                id=game_id,
                event_id=event_id,
                kind=kind,
                players=players,
                variant=variant,
                seed=seed,
                status="scheduled",
                rated=rated,
                requested_by=requested_by,
                rerun_of=rerun_of,
                created=_now(),
            )
        )
        conn.execute(
            sa.insert(seats),
            [{"game_id": game_id, "seat": i, "version_id": v} for i, v in enumerate(version_ids)],
        )
        return game_id

    def claim_scheduled_game(
        self, events_only: bool = False, game_id: str | None = None
    ) -> GameRow | None:
        """The oldest scheduled game of an event (finals, a round), else the oldest
        other one (challenges, re-runs and the ladder's own games in creation order),
        now ``running``; ``events_only``: only a game of an event; ``game_id``: that game
        only (the ladder's own, just scheduled: an event's games created meanwhile must
        not be claimed as if they were it). Events go first because the organiser started
        them at a moment that matters (the deadline): after a restart the ladder games
        that were running are scheduled again, often dozens, and the finals must not wait
        behind them."""
        where = games.c.status == "scheduled"
        if events_only:
            where = where & games.c.event_id.is_not(None)
        if game_id is not None:
            where = where & (games.c.id == game_id)
        with self._read() as conn:  # mostly none (the ladder asks before each new game)
            if conn.execute(sa.select(games.c.id).where(where).limit(1)).first() is None:
                return None
        with self._write() as conn:
            claimed = conn.execute(
                sa.select(games.c.id)
                .where(where)
                .order_by(games.c.event_id.is_(None), games.c.n)
                .limit(1)
            ).scalar_one_or_none()
            if claimed is None:
                return None
            self._game_changes(conn, str(claimed))
            conn.execute(
                sa.update(games)
                .where(games.c.id == claimed)
                .values(status="running", started=_now())
            )
            return self._game(conn, str(claimed))

    def event_game_open(self) -> bool:
        """Whether a game of an event (finals, a round) is scheduled or running: then no
        other game starts (see ``LadderScheduler.next``)."""
        open_ = games.c.status.in_(("scheduled", "running"))
        where = open_ & games.c.event_id.is_not(None)
        with self._read() as conn:
            return conn.execute(sa.select(games.c.id).where(where).limit(1)).first() is not None

    def requeue_running(self) -> int:
        """After a restart (also kill -9): games that were running go back to scheduled."""
        with self._write() as conn:
            return int(
                conn.execute(
                    sa.update(games)
                    .where(games.c.status == "running")
                    .values(status="scheduled", started=None)
                ).rowcount
            )

    def void_game(self, game_id: str, reason: str) -> bool:
        """A game that cannot be played (the arena's fault, or a bot disqualified before
        it ran) is voided: kept, never rated. False if it already finished."""
        with self._write() as conn:
            self._game_changes(conn, game_id, RESULTS)
            done = conn.execute(
                sa.update(games)
                .where(games.c.id == game_id, games.c.status.in_(("scheduled", "running")))
                .values(status="void", end_reason=reason[:64], finished=_now())
            ).rowcount
        return bool(done)

    def finish_game(self, game_id: str, outcome: GameOutcome) -> bool:
        """Store a finished game and rate it, in one transaction. Idempotent: False (and
        nothing changed) if the game is already finished or void."""
        finished = _now()
        with self._write() as conn:
            names = self._game_changes(conn, game_id, RESULTS)
            row = conn.execute(sa.select(games).where(games.c.id == game_id)).first()
            if row is None:
                raise NotFound(f"no game {game_id}")
            if row.status in ("finished", "void"):
                return False
            if outcome.faults:
                self._changes(conn, *map(bot_faults_topic, names))
            seq = conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(games.c.finish_seq), 0))
            ).scalar_one()
            conn.execute(
                sa.update(games)
                .where(games.c.id == game_id)
                .values(
                    status="finished",
                    finished=finished,
                    finish_seq=int(seq) + 1,
                    end_reason=outcome.end_reason[:64],
                    rounds=outcome.rounds,
                    duration_s=outcome.duration_s,
                    worker=outcome.worker[:200],
                )
            )
            for s in outcome.seats:
                conn.execute(
                    sa.update(seats)
                    .where(seats.c.game_id == game_id, seats.c.seat == s.seat)
                    .values(score=s.score, rank=s.rank, forfeit=s.forfeit)
                )
            if outcome.faults:
                conn.execute(
                    sa.insert(faults),
                    [
                        {
                            "game_id": game_id,
                            "seat": f.seat,
                            "kind": f.kind,
                            "round": f.round,
                            "message": f.message[:4000],
                            "forfeit": f.forfeit,
                        }
                        for f in outcome.faults
                    ],
                )
            conn.execute(
                sa.insert(records).values(
                    game_id=game_id, record=gzip_small(outcome.record_json, 6)
                )
            )
            for seat, text in outcome.stderr:
                if text:
                    capped = _cap_tail(text, STDERR_KEEP_BYTES).encode("utf-8", "replace")
                    conn.execute(
                        sa.insert(stderr_logs).values(
                            game_id=game_id, seat=seat, text=gzip_small(capped, 6)
                        )
                    )
            if row.rated:
                self._rate(conn, game_id, finished, int(seq) + 1)
        return True

    def _rate(self, conn: Connection, game_id: str, finished: datetime, seq: int) -> None:
        """Update the seated versions' ratings with one finished game (finish order):
        one TrueSkill step (``arena.ratings.kernel.update_one``, the same step the
        tournament's incremental ratings take), places in rank order, equal ranks tied."""
        rows = conn.execute(
            sa.select(seats.c.seat, seats.c.version_id, seats.c.rank).where(
                seats.c.game_id == game_id
            )
        ).all()
        rated = seatings_to_games(
            (seq, int(r.seat), str(r.version_id), int(r.rank)) for r in rows if r.rank is not None
        )
        if not rated:
            return
        game = rated[0]
        ordered = sorted(zip(game.ranks, (int(v) for v in game.bots), strict=True))
        ids = [vid for _, vid in ordered]
        stored = {
            int(r.version_id): r
            for r in conn.execute(sa.select(ratings).where(ratings.c.version_id.in_(ids))).all()
        }
        prior = (DEFAULT_PARAMS.mu, DEFAULT_PARAMS.sigma)
        before = [
            (float(stored[v].mu), float(stored[v].sigma)) if v in stored else prior for v in ids
        ]
        ties = [a[0] == b[0] for a, b in itertools.pairwise(ordered)]
        new_mu, new_sigma = update_one(
            [m for m, _ in before], [s for _, s in before], ties, _KERNEL_ENV
        )
        after = {v: (m, s) for v, m, s in zip(ids, new_mu, new_sigma, strict=True)}
        for vid in ids:
            mu, sigma = after[vid]
            if vid in stored:
                conn.execute(
                    sa.update(ratings)
                    .where(ratings.c.version_id == vid)
                    .values(mu=mu, sigma=sigma, games=stored[vid].games + 1)
                )
            else:
                conn.execute(sa.insert(ratings).values(version_id=vid, mu=mu, sigma=sigma, games=1))
            conn.execute(
                sa.insert(rating_history).values(
                    version_id=vid, game_id=game_id, finished=finished, mu=mu, sigma=sigma
                )
            )

    def _rerate_all(self, conn: Connection) -> None:
        """Ratings from scratch over every finished rated game, in finish order (after a
        game was voided)."""
        conn.execute(sa.delete(rating_history))
        conn.execute(sa.delete(ratings))
        rows = conn.execute(
            sa.select(games.c.id, games.c.finished, games.c.finish_seq)
            .where(games.c.status == "finished", games.c.rated.is_(True))
            .order_by(games.c.finish_seq)
        ).all()
        for r in rows:
            self._rate(conn, str(r.id), _utc_req(r.finished), int(r.finish_seq))

    def _game(self, conn: Connection, game_id: str) -> GameRow | None:
        found = self._games_where(conn, games.c.id == game_id, limit=1)
        return found[0] if found else None

    def _games_where(
        self, conn: Connection, where: Any, limit: int | None, order_desc: bool = True
    ) -> list[GameRow]:
        query = sa.select(games).where(where)
        query = query.order_by(games.c.n.desc() if order_desc else games.c.n)
        if limit is not None:
            query = query.limit(limit)
        rows = conn.execute(query).all()
        if not rows:
            return []
        ids = [str(r.id) for r in rows]
        seat_rows = conn.execute(
            sa.select(
                seats.c.game_id,
                seats.c.seat,
                seats.c.version_id,
                seats.c.score,
                seats.c.rank,
                seats.c.forfeit,
                versions.c.number,
                bots.c.name,
            )
            .join(versions, versions.c.id == seats.c.version_id)
            .join(bots, bots.c.id == versions.c.bot_id)
            .where(seats.c.game_id.in_(ids))
            .order_by(seats.c.game_id, seats.c.seat)
        ).all()
        fault_rows = conn.execute(
            sa.select(faults.c.game_id, faults.c.seat, faults.c.kind)
            .where(faults.c.game_id.in_(ids))
            .order_by(faults.c.id)
        ).all()
        kinds: dict[tuple[str, int], list[str]] = {}
        for f in fault_rows:
            kinds.setdefault((str(f.game_id), int(f.seat)), []).append(str(f.kind))
        by_game: dict[str, list[SeatRow]] = {}
        for s in seat_rows:
            by_game.setdefault(str(s.game_id), []).append(
                SeatRow(
                    seat=int(s.seat),
                    version_id=int(s.version_id),
                    bot_name=str(s.name),
                    version_number=int(s.number),
                    score=None if s.score is None else int(s.score),
                    rank=None if s.rank is None else int(s.rank),
                    faults=kinds.get((str(s.game_id), int(s.seat)), []),
                    forfeit=bool(s.forfeit),
                )
            )
        return [
            GameRow(
                id=str(r.id),
                kind=r.kind,
                players=int(r.players),
                variant=str(r.variant),
                seed=int(r.seed),
                status=r.status,
                created=_utc_req(r.created),
                finished=_utc(r.finished),
                end_reason=r.end_reason,
                seats=by_game.get(str(r.id), []),
                rated=bool(r.rated),
                requested_by=r.requested_by,
                rerun_of=r.rerun_of,
                event_id=r.event_id,
            )
            for r in rows
        ]

    def game(self, game_id: str) -> GameRow | None:
        with self._read() as conn:
            return self._game(conn, game_id)

    def games(
        self,
        *,
        bot: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        before: str | None = None,
        status: str | None = None,
    ) -> list[GameRow]:
        """Games, newest first; ``before`` (a game id) pages on to older ones."""
        limit = max(1, min(int(limit), 500))
        conds: list[Any] = []
        with self._read() as conn:
            if bot is not None:
                # newest first through the games' key, each checked on the seats' key: a
                # page of a bot's games reads about as many games as it shows, however
                # many it has played (an IN list would gather all of them first)
                conds.append(
                    sa.select(seats.c.game_id)
                    .join(versions, versions.c.id == seats.c.version_id)
                    .join(bots, bots.c.id == versions.c.bot_id)
                    .where(seats.c.game_id == games.c.id, bots.c.name == bot)
                    .exists()
                )
            if kind is not None:
                conds.append(games.c.kind == kind)
            if status is not None:
                conds.append(games.c.status == status)
            if before is not None:
                n = conn.execute(
                    sa.select(games.c.n).where(games.c.id == before)
                ).scalar_one_or_none()
                if n is None:
                    return []
                conds.append(games.c.n < n)
            return self._games_where(conn, sa.and_(sa.true(), *conds), limit)

    def losses_of(self, author_id: int, limit: int = 20) -> list[LossRow]:
        """The author's seats in finished games that lost (ranked below first) or faulted
        (a timeout, crash or forfeit): faulted first, then by the largest margin behind
        the winner, then newest. One row per seat (two own bots in a game: two rows)."""
        mine = seats.alias("mine")
        other = seats.alias("other")
        best = (
            sa.select(sa.func.max(other.c.score))
            .where(other.c.game_id == mine.c.game_id)
            .scalar_subquery()
        )
        faulted = (
            sa.select(faults.c.id)
            .where(faults.c.game_id == mine.c.game_id, faults.c.seat == mine.c.seat)
            .exists()
        )
        has_stderr = (
            sa.select(stderr_logs.c.seat)
            .where(stderr_logs.c.game_id == mine.c.game_id, stderr_logs.c.seat == mine.c.seat)
            .exists()
        )
        is_fault = sa.or_(faulted, mine.c.forfeit.is_(True))
        query = (
            sa.select(
                mine.c.game_id,
                mine.c.seat,
                mine.c.score,
                mine.c.rank,
                versions.c.number,
                bots.c.name,
                best.label("best"),
                has_stderr.label("has_stderr"),
            )
            .join(versions, versions.c.id == mine.c.version_id)
            .join(bots, bots.c.id == versions.c.bot_id)
            .join(games, games.c.id == mine.c.game_id)
            .where(
                bots.c.author_id == author_id,
                games.c.status == "finished",
                sa.or_(mine.c.rank > 1, is_fault),
            )
            .order_by(
                sa.case((is_fault, 0), else_=1),
                (best - sa.func.coalesce(mine.c.score, 0)).desc(),
                games.c.n.desc(),
                mine.c.seat,
            )
            .limit(max(1, limit))
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
            ids = list(dict.fromkeys(str(r.game_id) for r in rows))
            found = {g.id: g for g in self._games_where(conn, games.c.id.in_(ids), None)}
        out = []
        for r in rows:
            game = found[str(r.game_id)]
            seat = next(s for s in game.seats if s.seat == int(r.seat))
            out.append(
                LossRow(
                    game=game,
                    seat=int(r.seat),
                    bot_name=str(r.name),
                    version_number=int(r.number),
                    score=None if r.score is None else int(r.score),
                    rank=None if r.rank is None else int(r.rank),
                    best_score=None if r.best is None else int(r.best),
                    faults=seat.faults,
                    has_stderr=bool(r.has_stderr),
                )
            )
        return out

    def game_counts(self) -> dict[str, int]:
        """How many games are in each status."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(games.c.status, sa.func.count()).group_by(games.c.status)
            ).all()
        return {str(s): int(c) for s, c in rows}

    def operations(self) -> OperationsSnapshot:
        """Counts for monitoring (``/metrics``): cheap grouped queries, no bot text."""
        with self._read() as conn:
            game_rows = conn.execute(
                sa.select(games.c.status, sa.func.count()).group_by(games.c.status)
            ).all()
            version_rows = conn.execute(
                sa.select(versions.c.status, sa.func.count()).group_by(versions.c.status)
            ).all()
            fault_rows = conn.execute(
                sa.select(faults.c.kind, sa.func.count()).group_by(faults.c.kind)
            ).all()
            game_seconds = conn.execute(
                sa.select(sa.func.coalesce(sa.func.sum(games.c.duration_s), 0.0)).where(
                    games.c.status == "finished"
                )
            ).scalar_one()
            build_seconds = conn.execute(
                sa.select(versions.c.build_seconds).where(versions.c.build_seconds.is_not(None))
            ).scalars()
            builds = tuple(float(s) for s in build_seconds)
        counted_games = {str(s): int(c) for s, c in game_rows}
        counted_versions = {str(s): int(c) for s, c in version_rows}
        return OperationsSnapshot(
            games={s: counted_games.get(s, 0) for s in GAME_STATUSES},
            versions={s: counted_versions.get(s, 0) for s in VERSION_STATUSES},
            faults={str(k): int(c) for k, c in fault_rows},
            game_seconds=float(game_seconds),
            build_seconds=builds,
        )

    def games_finished(self) -> int:
        return self.game_counts().get("finished", 0)

    def record(self, game_id: str) -> dict[str, Any] | None:
        """The full game record (JSON) of a finished game."""
        with self._read() as conn:
            blob = conn.execute(
                sa.select(records.c.record).where(records.c.game_id == game_id)
            ).scalar_one_or_none()
        if blob is None:
            return None
        out: dict[str, Any] = json.loads(gzip.decompress(blob))
        return out

    def seat_stderr(self, game_id: str, seat: int) -> str | None:
        """What the bot in ``seat`` wrote to stderr during that game (tail)."""
        with self._read() as conn:
            blob = conn.execute(
                sa.select(stderr_logs.c.text).where(
                    stderr_logs.c.game_id == game_id, stderr_logs.c.seat == seat
                )
            ).scalar_one_or_none()
        return None if blob is None else gzip.decompress(blob).decode("utf-8", "replace")

    def ladder_load(self) -> dict[int, dict[int, int]]:
        """Ladder games per active version and player count (scheduled, running and
        finished; void ones excluded): what the scheduler balances."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(seats.c.version_id, games.c.players, sa.func.count())
                .join(games, games.c.id == seats.c.game_id)
                .where(games.c.kind == "ladder", games.c.status != "void")
                .group_by(seats.c.version_id, games.c.players)
            ).all()
        out: dict[int, dict[int, int]] = {}
        for vid, players, count in rows:
            out.setdefault(int(vid), {})[int(players)] = int(count)
        return out

    def ladder_mix(self) -> tuple[dict[int, int], dict[str, int]]:
        """Ladder games (not void) per player count and per variant."""
        with self._read() as conn:
            by_players = conn.execute(
                sa.select(games.c.players, sa.func.count())
                .where(games.c.kind == "ladder", games.c.status != "void")
                .group_by(games.c.players)
            ).all()
            by_variant = conn.execute(
                sa.select(games.c.variant, sa.func.count())
                .where(games.c.kind == "ladder", games.c.status != "void")
                .group_by(games.c.variant)
            ).all()
        return {int(p): int(c) for p, c in by_players}, {str(v): int(c) for v, c in by_variant}

    def pair_counts(self, version_ids: Sequence[int]) -> dict[tuple[int, int], int]:
        """Ladder games (not void) each pair of ``version_ids`` shared (smaller id first)."""
        if not version_ids:
            return {}
        ids = list(version_ids)
        with self._read() as conn:
            rows = conn.execute(
                sa.select(seats.c.game_id, seats.c.version_id)
                .join(games, games.c.id == seats.c.game_id)
                .where(
                    games.c.kind == "ladder",
                    games.c.status != "void",
                    seats.c.version_id.in_(ids),
                )
            ).all()
        by_game: dict[str, list[int]] = {}
        for gid, vid in rows:
            by_game.setdefault(str(gid), []).append(int(vid))
        out: dict[tuple[int, int], int] = {}
        for vids in by_game.values():
            for i, a in enumerate(vids):
                for b in vids[i + 1 :]:
                    key = (min(a, b), max(a, b))
                    out[key] = out.get(key, 0) + 1
        return out

    def fair_shares(self, version_ids: Sequence[int]) -> dict[int, float]:
        """Per version: the ladder games it would have played since it became active if
        every seat since then had gone to the active versions in equal parts. A version
        that plays less than its share is behind; a new version starts at zero, so it is
        not owed the games played before it existed."""
        if not version_ids:
            return {}
        ids = list(version_ids)
        with self._read() as conn:
            since = {
                int(v): _utc_req(d)
                for v, d in conn.execute(
                    sa.select(versions.c.id, versions.c.decided).where(
                        versions.c.id.in_(ids), versions.c.decided.is_not(None)
                    )
                ).all()
            }
            if not since:
                return {v: 0.0 for v in ids}
            rows = conn.execute(
                sa.select(games.c.created, games.c.players)
                .where(
                    games.c.kind == "ladder",
                    games.c.status != "void",
                    games.c.created >= min(since.values()),
                )
                .order_by(games.c.created)
            ).all()
        created = [_utc_req(c) for c, _ in rows]
        seats_after = list(itertools.accumulate(int(p) for _, p in reversed(rows)))[::-1]
        out = {}
        for vid in ids:
            start = since.get(vid)
            if start is None:
                out[vid] = 0.0
                continue
            first = bisect.bisect_left(created, start)
            filled = seats_after[first] if first < len(seats_after) else 0
            out[vid] = filled / len(ids)
        return out

    def ladder_balance(self) -> dict[str, Any]:
        """How balanced the ladder is: per active version its ladder games and its fair
        share since it became active, and the games per player count and wall (for the
        organiser's page, the API and benchmarks)."""
        active = self.active_versions()
        ids = [v.id for v in active]
        load = self.ladder_load()
        share = self.fair_shares(ids)
        by_players, by_variant = self.ladder_mix()
        rows: list[dict[str, Any]] = [
            {
                "bot": v.bot_name,
                "version": v.number,
                "games": sum(load.get(v.id, {}).values()),
                "fair_share": round(share.get(v.id, 0.0), 1),
            }
            for v in active
        ]
        surplus = [r["games"] - r["fair_share"] for r in rows]
        return {
            "versions": rows,
            "spread": round(max(surplus) - min(surplus), 1) if surplus else 0.0,
            "players": {str(k): v for k, v in sorted(by_players.items())},
            "variants": dict(sorted(by_variant.items())),
        }

    # ------------------------------------------------------------ ratings and pages

    def leaderboard(self, *, staff_in_prizes: bool = False) -> list[LeaderRow]:
        """Every bot's active version, best conservative rating first; ``prize_rank``
        counts only the bots that compete for prizes (staff bots too if
        ``staff_in_prizes``)."""
        prior_mu, prior_sigma = DEFAULT_PARAMS.mu, DEFAULT_PARAMS.sigma
        with self._read() as conn:
            rows = conn.execute(
                sa.select(
                    versions.c.id,
                    versions.c.number,
                    versions.c.language,
                    bots.c.name,
                    authors.c.name.label("author_name"),
                    authors.c.staff,
                    ratings.c.mu,
                    ratings.c.sigma,
                )
                .join(bots, bots.c.id == versions.c.bot_id)
                .join(authors, authors.c.id == bots.c.author_id)
                .outerjoin(ratings, ratings.c.version_id == versions.c.id)
                .where(versions.c.status == "active", bots.c.disqualified.is_(False))
            ).all()
            stats = self._version_stats(conn, [int(r.id) for r in rows])
        out = []
        for r in rows:
            mu = prior_mu if r.mu is None else float(r.mu)
            sigma = prior_sigma if r.sigma is None else float(r.sigma)
            played, wins, nfaults = stats.get(int(r.id), (0, 0, 0))
            out.append(
                (
                    mu - 3 * sigma,
                    str(r.name),
                    LeaderRow(
                        rank=0,
                        bot_name=str(r.name),
                        version_number=int(r.number),
                        author_name=str(r.author_name),
                        language=r.language,
                        mu=mu,
                        sigma=sigma,
                        conservative=mu - 3 * sigma,
                        low=mu - 2 * sigma,
                        high=mu + 2 * sigma,
                        games=played,
                        win_rate=wins / played if played else None,
                        faults=nfaults,
                        staff=bool(r.staff),
                    ),
                )
            )
        out.sort(key=lambda item: (-item[0], item[1]))
        return with_prize_ranks(
            [_ranked(row, i + 1) for i, (_, _, row) in enumerate(out)], staff_in_prizes
        )

    def _tallied(
        self,
        conn: Connection,
        key: tuple[str, str],
        count: Callable[[Any], list[Any]],
    ) -> dict[Any, tuple[int, ...]]:
        """Counts over the rated finished games, kept between calls and brought up to date
        with the games finished since (``finish_seq`` only grows): counting every seat
        again on each landed game grew with the games stored (1.8 s for the leaderboard
        at 100,000). ``count(where)`` gives rows (key, n1, n2, ...) over the seats
        ``where`` selects (joined with their games); the counts add up. After any
        other write (:data:`ANYTHING`: a re-run voids a finished game) and every
        ``STATS_CHECK_S`` (writes of another process bump no generation here) the
        games counted are counted again, and if they differ everything is, by one
        reader while the others wait (a herd of readers each counting 100,000 games
        was the slowest thing the server did)."""
        anything = self._topic_generations.get(ANYTHING, 0)  # before reading
        now = time.monotonic()
        kept = self._tallies.get(key)
        if kept is not None and (
            kept.anything != anything or now - kept.checked_at > STATS_CHECK_S
        ):
            if self._finished_rated(conn, games.c.finish_seq <= kept.seq) == kept.games:
                kept = self._keep(key, replace(kept, anything=anything, checked_at=now))
            else:
                with self._tally_lock:
                    if self._tallies.get(key) is kept:
                        del self._tallies[key]
                kept = None
        if kept is None:
            with self._recount_lock:
                kept = self._tallies.get(key)
                if kept is None:  # nobody counted meanwhile
                    kept = self._advance(conn, key, Tally(anything, now, 0, 0, {}), count)
        return self._advance(conn, key, kept, count).counts

    def _advance(
        self,
        conn: Connection,
        key: tuple[str, str],
        kept: Tally,
        count: Callable[[Any], list[Any]],
    ) -> Tally:
        """``kept`` brought up to the newest finished game, kept for the next reader."""
        newest = conn.execute(sa.select(sa.func.max(games.c.finish_seq))).scalar()
        if newest is None or int(newest) <= kept.seq:
            return kept
        between = sa.and_(games.c.finish_seq > kept.seq, games.c.finish_seq <= int(newest))
        newer = sa.and_(
            between,
            # through the finish_seq index, not the status one (which holds every game)
            sa.func.coalesce(games.c.status, "") == "finished",
            sa.func.coalesce(games.c.rated, False).is_(True),
        )
        if kept.seq:  # a few games since: name them, so that each is read by its key
            ids = list(conn.execute(sa.select(games.c.id).where(newer)).scalars())
            newer = seats.c.game_id.in_(ids) if ids else sa.false()
        counts = dict(kept.counts)
        for row in count(newer):
            old = counts.get(row[0])
            more = tuple(int(x or 0) for x in row[1:])
            counts[row[0]] = more if old is None else tuple(map(sum, zip(old, more, strict=True)))
        counted = kept.games + self._finished_rated(conn, between)
        return self._keep(key, Tally(kept.anything, kept.checked_at, int(newest), counted, counts))

    @staticmethod
    def _finished_rated(conn: Connection, where: Any) -> int:
        return int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(games)
                .where(where, games.c.status == "finished", games.c.rated.is_(True))
            ).scalar_one()
        )

    def _keep(self, key: tuple[str, str], tally: Tally) -> Tally:
        """Keep ``tally`` unless a newer one was kept meanwhile (another reader's); the
        one kept."""
        with self._tally_lock:
            current = self._tallies.get(key)
            if current is None or (current.seq, current.checked_at) <= (
                tally.seq,
                tally.checked_at,
            ):
                self._tallies[key] = current = tally
        return current

    def _version_stats(
        self, conn: Connection, version_ids: list[int]
    ) -> dict[int, tuple[int, int, int]]:
        """(rated finished games, wins, seats with a fault) per version (:meth:`_tallied`)."""
        if not version_ids:
            return {}

        def count(where: Any) -> list[Any]:
            played = conn.execute(
                sa.select(
                    seats.c.version_id,
                    sa.func.count(),
                    sa.func.sum(sa.case((seats.c.rank == 1, 1), else_=0)),
                    sa.literal(0),
                )
                .join(games, games.c.id == seats.c.game_id)
                .where(where)
                .group_by(seats.c.version_id)
            ).all()
            faulted = conn.execute(
                sa.select(
                    seats.c.version_id,
                    sa.literal(0),
                    sa.literal(0),
                    sa.func.count(sa.distinct(faults.c.game_id)),
                )
                .join(games, games.c.id == seats.c.game_id)
                .join(
                    faults,
                    sa.and_(faults.c.game_id == seats.c.game_id, faults.c.seat == seats.c.seat),
                )
                .where(where)
                .group_by(seats.c.version_id)
            ).all()
            return [*played, *faulted]

        counted = self._tallied(conn, ("versions", ""), count)
        out: dict[int, tuple[int, int, int]] = {}
        for v in version_ids:
            if v in counted:
                n, w, f = counted[v]
                out[v] = (n, w, f)
        return out

    def rating_history(self, version_id: int, last: int | None = None) -> list[RatingPoint]:
        """The version's rating after each of its games, oldest first; ``last``: only the
        latest that many (a bot page's chart: a version with 60,000 games would otherwise
        read and draw 60,000 points)."""
        query = sa.select(rating_history).where(rating_history.c.version_id == version_id)
        if last is not None:
            query = query.order_by(rating_history.c.id.desc()).limit(max(1, last))
        with self._read() as conn:
            rows = sorted(conn.execute(query).all(), key=lambda r: int(r.id))
        return [
            RatingPoint(str(r.game_id), _utc_req(r.finished), float(r.mu), float(r.sigma))
            for r in rows
        ]

    def head_to_head(self, bot_name: str) -> list[HeadToHead]:
        """The bot (all its versions) against each opponent bot, over finished rated games:
        one row per opponent seat, the bot's best seat in the game against it. Counted in
        SQL and kept between calls (:meth:`_tallied`): a bot with 60,000 games would
        otherwise send every seat to Python for every page."""
        own_versions = (
            sa.select(versions.c.id)
            .join(bots, bots.c.id == versions.c.bot_id)
            .where(bots.c.name == bot_name)
        )
        other = seats.alias("other")

        def wins(condition: Any) -> Any:
            return sa.func.sum(sa.case((condition, 1), else_=0))

        with self._read() as conn:

            def count(where: Any) -> list[Any]:
                mine = (
                    sa.select(seats.c.game_id, sa.func.min(seats.c.rank).label("rank"))
                    .join(games, games.c.id == seats.c.game_id)
                    .where(seats.c.version_id.in_(own_versions), where)
                    .group_by(seats.c.game_id)
                    .subquery("mine")
                )
                return list(
                    conn.execute(
                        sa.select(
                            bots.c.name,
                            sa.func.count(),
                            wins(mine.c.rank < other.c.rank),
                            wins(mine.c.rank > other.c.rank),
                            wins(mine.c.rank == other.c.rank),
                        )
                        .select_from(mine)
                        .join(other, other.c.game_id == mine.c.game_id)
                        .join(versions, versions.c.id == other.c.version_id)
                        .join(bots, bots.c.id == versions.c.bot_id)
                        .where(bots.c.name != bot_name)
                        .group_by(bots.c.name)
                    ).all()
                )

            counted = self._tallied(conn, ("head_to_head", bot_name), count)
        return [HeadToHead(str(n), *counted[n]) for n in sorted(counted)]

    def faults_by_kind(self, bot_name: str) -> list[FaultGroup]:
        """The bot's faults grouped by kind, most frequent first, with the latest example.
        Read from the faults, each checked on its seat's key: through the bot's seats
        instead, a bot with 60,000 games read all of them for a handful of faults."""
        own_versions = (
            sa.select(versions.c.id)
            .join(bots, bots.c.id == versions.c.bot_id)
            .where(bots.c.name == bot_name)
        )
        its_seat = (
            sa.select(seats.c.game_id)
            .where(
                seats.c.game_id == faults.c.game_id,
                seats.c.seat == faults.c.seat,
                seats.c.version_id.in_(own_versions),
            )
            .exists()
        )
        with self._read() as conn:
            counted = conn.execute(
                sa.select(faults.c.kind, sa.func.count(), sa.func.max(faults.c.id))
                .where(its_seat)
                .group_by(faults.c.kind)
            ).all()
            latest = {
                int(r.id): (str(r.game_id), str(r.message))
                for r in conn.execute(
                    sa.select(faults.c.id, faults.c.game_id, faults.c.message).where(
                        faults.c.id.in_([int(last) for _, _, last in counted])
                    )
                ).all()
            }
        return sorted(
            (FaultGroup(str(k), int(c), *latest[int(last)]) for k, c, last in counted),
            key=lambda g: (-g.count, g.kind),
        )

    # ------------------------------------------------------------ challenges

    def add_challenge(
        self,
        author_id: int,
        opponents: Sequence[str],
        players: int,
        variant: str,
        own_bot: str | None = None,
    ) -> GameRow:
        """An unrated game the author asked for: ``opponents`` are bot names; when they
        are one fewer than ``players`` the author's own bot takes the first seat:
        ``own_bot`` if given (it must be theirs and active), else their latest active."""
        import random

        if players not in (2, 3, 4):
            raise Invalid("a game has 2, 3 or 4 players")
        if variant not in ("coloured", "gray"):
            raise Invalid("the variant is 'coloured' or 'gray'")
        names = list(opponents)
        if len(set(names)) != len(names):
            raise Invalid("each bot can take one seat only")
        if own_bot is not None and len(names) != players - 1:
            raise Invalid(f"with your own bot chosen, name {players - 1} opponents")
        with self._write() as conn:
            if len(names) == players - 1:
                query = (
                    sa.select(bots.c.name)
                    .join(versions, versions.c.bot_id == bots.c.id)
                    .where(
                        bots.c.author_id == author_id,
                        versions.c.status == "active",
                        bots.c.disqualified.is_(False),
                    )
                    .order_by(versions.c.id.desc())
                    .limit(1)
                )
                if own_bot is not None:
                    query = query.where(bots.c.name == own_bot)
                own = conn.execute(query).scalar_one_or_none()
                if own is None and own_bot is not None:
                    raise NotFound(f"you have no active bot named {own_bot!r}")
                if own is None:
                    raise Invalid("you have no active bot to play the challenge with")
                if own in names:
                    raise Invalid(f"{own!r} is your own bot: name {players - 1} opponents")
                names.insert(0, str(own))
            if len(names) != players:
                raise Invalid(f"name {players - 1} opponents for a {players}-player game")
            version_ids = []
            for name in names:
                vid = conn.execute(
                    sa.select(versions.c.id)
                    .join(bots, bots.c.id == versions.c.bot_id)
                    .where(
                        bots.c.name == name,
                        versions.c.status == "active",
                        bots.c.disqualified.is_(False),
                    )
                ).scalar_one_or_none()
                if vid is None:
                    raise NotFound(f"no active bot named {name!r}")
                version_ids.append(int(vid))
            game_id = self._insert_game(
                conn,
                "challenge",
                players,
                variant,
                random.SystemRandom().randrange(2**62),
                version_ids,
                False,
                author_id,
                None,
            )
            out = self._game(conn, game_id)
        assert out is not None
        return out

    def challenges_since(self, author_id: int, since: datetime) -> int:
        with self._read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).where(
                        games.c.kind == "challenge",
                        games.c.requested_by == author_id,
                        games.c.created >= since,
                    )
                ).scalar_one()
            )

    # ------------------------------------------------------------ organiser

    def set_paused(self, paused: bool) -> None:
        self.set_setting("paused", "1" if paused else None)

    def paused(self) -> bool:
        return self.setting("paused") == "1"

    def freeze(self, *, staff_in_prizes: bool = False) -> FrozenRanking:
        """Keep the current leaderboard as the final ranking, and pause the ladder.
        Freezing again replaces the snapshot."""
        rows = self.leaderboard(staff_in_prizes=staff_in_prizes)
        when = _now()
        payload = json.dumps(
            {"frozen": when.isoformat(), "rows": [r.__dict__ for r in rows]}, sort_keys=True
        )
        with self._write() as conn:
            self._put_setting(conn, "frozen", payload)
            self._put_setting(conn, "paused", "1")
        return FrozenRanking(when, rows)

    def unfreeze(self) -> None:
        self.set_setting("frozen", None)

    def frozen(self) -> FrozenRanking | None:
        text = self.setting("frozen")
        if text is None:
            return None
        data = json.loads(text)
        return FrozenRanking(
            datetime.fromisoformat(data["frozen"]), [LeaderRow(**r) for r in data["rows"]]
        )

    def disqualify(self, bot_name: str) -> Bot:
        """Take a bot off the ladder for good: its versions are disqualified, its games
        not yet started are voided (finished games and ratings stay as played)."""
        with self._write() as conn:
            row = conn.execute(sa.select(bots).where(bots.c.name == bot_name)).first()
            if row is None:
                raise NotFound(f"no bot named {bot_name!r}")
            conn.execute(sa.update(bots).where(bots.c.id == row.id).values(disqualified=True))
            conn.execute(
                sa.update(versions)
                .where(
                    versions.c.bot_id == row.id,
                    versions.c.status.in_(("queued", "building", "active")),
                )
                .values(status="disqualified")
            )
            pending = (
                sa.select(seats.c.game_id)
                .join(versions, versions.c.id == seats.c.version_id)
                .where(versions.c.bot_id == row.id)
            )
            conn.execute(
                sa.update(games)
                .where(games.c.status == "scheduled", games.c.id.in_(pending))
                .values(status="void", end_reason="disqualified", finished=_now())
            )
            out = conn.execute(_bot_select().where(bots.c.id == row.id)).first()
        assert out is not None
        return _bot_of(out)

    def rerun(self, game_id: str) -> GameRow:
        """Void a finished game (its rating effect is undone: ratings are recomputed
        without it) and schedule the same seats, deal and variant again; a game of a
        finished event reopens the event (its results are computed again after it)."""
        with self._write() as conn:
            row = conn.execute(sa.select(games).where(games.c.id == game_id)).first()
            if row is None:
                raise NotFound(f"no game {game_id}")
            if row.status not in ("finished", "void"):
                raise Conflict(f"game {game_id} is {row.status}: only a finished game is re-run")
            version_ids = [
                int(v)
                for v in conn.execute(
                    sa.select(seats.c.version_id)
                    .where(seats.c.game_id == game_id)
                    .order_by(seats.c.seat)
                ).scalars()
            ]
            banned = conn.execute(
                sa.select(bots.c.name)
                .join(versions, versions.c.bot_id == bots.c.id)
                .where(versions.c.id.in_(version_ids), bots.c.disqualified.is_(True))
            ).first()
            if banned is not None:
                raise Conflict(f"game {game_id} seats {banned[0]!r}, which is disqualified")
            unbuilt = conn.execute(
                sa.select(bots.c.name, versions.c.number, versions.c.status)
                .join(versions, versions.c.bot_id == bots.c.id)
                .where(versions.c.id.in_(version_ids), versions.c.built_path.is_(None))
            ).first()
            if unbuilt is not None:
                name, number, status = unbuilt
                raise Conflict(
                    f"game {game_id} seats {name!r} v{number} ({status}), whose build is no "
                    "longer kept: it cannot be played again"
                )
            was_rated = row.status == "finished" and bool(row.rated)
            conn.execute(
                sa.update(games)
                .where(games.c.id == game_id)
                .values(status="void", end_reason="re-run")
            )
            if row.event_id is not None:  # its event's results wait for the new game
                conn.execute(
                    sa.update(events)
                    .where(events.c.id == row.event_id, events.c.status == "finished")
                    .values(status="running", finished=None, results=None)
                )
            if was_rated:
                self._rerate_all(conn)
            new_id = self._insert_game(
                conn,
                str(row.kind),
                int(row.players),
                str(row.variant),
                int(row.seed),
                version_ids,
                bool(row.rated),
                row.requested_by,
                game_id,
                event_id=row.event_id,
            )
            out = self._game(conn, new_id)
        assert out is not None
        return out


# ---------------------------------------------------------------- row helpers


def _wait_for_event(
    conn: Connection, kind: str, key: str, limit: int, since: datetime
) -> float | None:
    """Seconds until (``kind``, ``key``) has fewer than ``limit`` events after ``since``
    (None: it has now)."""
    times = (
        conn.execute(
            sa.select(rate_events.c.at)
            .where(rate_events.c.kind == kind, rate_events.c.key == key, rate_events.c.at >= since)
            .order_by(rate_events.c.at.desc())
            .limit(max(limit, 1))
        )
        .scalars()
        .all()
    )
    if len(times) < limit:
        return None
    freed = _utc_req(times[limit - 1]) if limit > 0 else _now()
    return float(max(1, math.ceil((freed - since).total_seconds())))


def _busy_versions() -> sa.CompoundSelect[Any]:
    """Versions that must keep their files: seated in a scheduled or running game, or
    entrants of a finals (a re-run of the finals plays them again)."""
    playing = (
        sa.select(seats.c.version_id)
        .join(games, games.c.id == seats.c.game_id)
        .where(games.c.status.in_(("scheduled", "running")))
    )
    finalists = (
        sa.select(event_entrants.c.version_id)
        .join(events, events.c.id == event_entrants.c.event_id)
        .where(events.c.kind == "finals")
    )
    return sa.union(playing, finalists)


def _seconds_since(started: datetime | None) -> float | None:
    return None if started is None else max(0.0, (_now() - started).total_seconds())


def _meta(text: str | None) -> dict[str, Any]:
    """A version's ``meta`` column as a dict (empty when unset or unreadable)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)[:200]


def _author(row: Any, member_id: int | None = None, member_name: str | None = None) -> Author:
    return Author(
        int(row.id),
        str(row.name),
        bool(row.organiser),
        _utc_req(row.created),
        staff=bool(row.staff),
        member_id=None if member_id is None else int(member_id),
        member_name=None if member_name is None else str(member_name),
    )


def _version_select() -> sa.Select[Any]:
    return (
        sa.select(
            versions.c.id,
            versions.c.bot_id,
            bots.c.name.label("bot_name"),
            versions.c.number,
            versions.c.content_hash,
            versions.c.status,
            versions.c.submitted,
            versions.c.verdict,
            versions.c.language,
            versions.c.ready_author,
            versions.c.ready_version,
            (versions.c.log.is_not(None)).label("has_log"),
            bots.c.author_id,
            authors.c.name.label("author_name"),
        )
        .join(bots, bots.c.id == versions.c.bot_id)
        .join(authors, authors.c.id == bots.c.author_id)
    )


def _version_of(row: Any) -> Version:
    return Version(
        id=int(row.id),
        bot_id=int(row.bot_id),
        bot_name=str(row.bot_name),
        number=int(row.number),
        content_hash=row.content_hash,
        status=row.status,
        submitted=_utc_req(row.submitted),
        verdict=row.verdict,
        language=row.language,
        ready_author=row.ready_author,
        ready_version=row.ready_version,
        build_log_available=bool(row.has_log),
        author_id=int(row.author_id),
        author_name=str(row.author_name),
    )


def _bot_select() -> sa.Select[Any]:
    latest_language = (
        sa.select(versions.c.language)
        .where(versions.c.bot_id == bots.c.id, versions.c.language.is_not(None))
        .order_by(versions.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    return sa.select(
        bots.c.id,
        bots.c.name,
        bots.c.author_id,
        authors.c.name.label("author_name"),
        latest_language.label("language"),
        bots.c.disqualified,
        authors.c.staff,
    ).join(authors, authors.c.id == bots.c.author_id)


def _bot_of(row: Any) -> Bot:
    return Bot(
        int(row.id),
        str(row.name),
        int(row.author_id),
        str(row.author_name),
        row.language,
        bool(row.disqualified),
        bool(row.staff),
    )


def _ranked(row: LeaderRow, rank: int) -> LeaderRow:
    from dataclasses import replace

    return replace(row, rank=rank)


def with_prize_ranks(rows: Sequence[LeaderRow], staff_in_prizes: bool) -> list[LeaderRow]:
    """``rows`` (best first) with their prize ranks: 1, 2, ... over the bots that compete
    for prizes; staff bots get none unless ``staff_in_prizes``."""
    from dataclasses import replace

    out = []
    place = 0
    for row in rows:
        if row.staff and not staff_in_prizes:
            out.append(replace(row, prize_rank=None))
        else:
            place += 1
            out.append(replace(row, prize_rank=place))
    return out
