"""The tournament store: one SQLite file (WAL) per tournament, or a PostgreSQL database.

Every query of a tournament's data lives here: the schedule, results, game records, the
progress tally, the report's snapshot, bots and their versions, stored ratings. Readers
(reports, replay, a web viewer) open it read-only while a tournament runs; one process at
a time writes (SQLite: a lock file names it; PostgreSQL: an advisory lock).

Writing (stable API, used by the runner, tests and benchmarks that fill synthetic stores):

* :meth:`Store.register_bot` - a bot is ``(name, version)``; returns its ``bot_id``.
* :meth:`Store.schedule_games` - append scheduled games (and the scheduler's state) in one
  transaction; a game id already scheduled is left as it is.
* :meth:`Store.add_result` - one finished game (result, seats, faults, compressed record)
  in one transaction, insert-if-absent: a result delivered twice is stored once.
* :meth:`Store.save_ratings` - the incrementally updated ratings.

Each write is one transaction, so a crash, a full disk or a read-only folder leaves the
store consistent: a game is either wholly there or absent. Failures raise
:class:`StoreError` with a message for the user.

Reads and writes go through two connections: reads (and :meth:`Store.snapshot`) on one,
each write in a transaction of its own on the other, so a write made while a read is
being streamed is committed at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import gzip
import itertools
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from arena.play.job import Announcement, GameResult, ScheduledGame
from arena.referee.clock import WALL_CEILING
from arena.store.engine import (
    DAMAGED,
    DB_ERRORS,
    StoreError,
    StoreLocked,
    describe_url,
    explain,
    is_url,
    make_engine,
    sqlite_url,
)
from arena.store.sql import insert, upsert

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "LEGACY_VERSION",
    "LOCK_NAME",
    "SCHEMA_VERSION",
    "STORE_NAME",
    "STORE_URL_NAME",
    "BotEntry",
    "BotStats",
    "GameSummary",
    "Store",
    "StoreError",
    "StoreLocked",
    "StoredRating",
    "Tally",
    "Totals",
    "iter_records",
    "remember_location",
    "store_file",
    "store_location",
    "upgrade_store",
]

SCHEMA_VERSION = 3
LISTING_CHUNK = 500
"""Games named per query when listing chosen games (well under SQLite's variable limit)."""
STORE_NAME = "tournament.sqlite"
LOCK_NAME = "tournament.lock"
STORE_URL_NAME = "store.url"
"""In a tournament folder whose games are in a database: that database's URL."""
EXPECTED_KEY = "expected_games"
"""Meta key: how many games the scheduler will hand out in all (kept for reports)."""
LEGACY_VERSION = "v1-unknown"
"""The version of bots of a schema-1 store, which did not record versions."""
ADVISORY_LOCK = 0x4152454E41
"""PostgreSQL: the session advisory lock the one writer of a tournament database holds."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bots (
    bot_id      INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,          -- content hash of the built folder and manifest
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS schedule (
    game_index  INTEGER PRIMARY KEY,   -- schedule order: ratings are computed in this order
    game_id     TEXT NOT NULL UNIQUE,
    n_players   INTEGER NOT NULL,
    variant     TEXT NOT NULL,
    seed_index  INTEGER NOT NULL,      -- which deal of the pairing (same deal for all seatings)
    deal_seed   INTEGER NOT NULL,
    rotation    INTEGER NOT NULL       -- which seating of the game set
);
CREATE TABLE IF NOT EXISTS lineup (
    game_index  INTEGER NOT NULL REFERENCES schedule(game_index),
    seat        INTEGER NOT NULL,
    bot_id      INTEGER NOT NULL REFERENCES bots(bot_id),
    PRIMARY KEY (game_index, seat)
);
CREATE INDEX IF NOT EXISTS lineup_bot ON lineup(bot_id);
CREATE TABLE IF NOT EXISTS games (
    game_index  INTEGER PRIMARY KEY REFERENCES schedule(game_index),
    finished_at REAL NOT NULL,
    duration_s  REAL NOT NULL,
    end_reason  TEXT NOT NULL,
    rounds      INTEGER NOT NULL,
    worker      TEXT NOT NULL,
    record      BLOB NOT NULL          -- gzip of the game record JSON
);
CREATE TABLE IF NOT EXISTS seats (
    game_index  INTEGER NOT NULL REFERENCES games(game_index),
    seat        INTEGER NOT NULL,
    bot_id      INTEGER NOT NULL REFERENCES bots(bot_id),
    score       INTEGER NOT NULL,
    round_score INTEGER NOT NULL,
    bonus_rows  INTEGER NOT NULL,
    bonus_columns INTEGER NOT NULL,
    bonus_colours INTEGER NOT NULL,
    rank        INTEGER NOT NULL,
    full_rows   INTEGER NOT NULL,
    forfeit     INTEGER NOT NULL,      -- 1 when the seat forfeited (ranks last)
    fault       TEXT,                  -- kind of the first fault, if any
    decisions   INTEGER NOT NULL,
    think_mean_ms REAL NOT NULL,
    think_p95_ms  REAL NOT NULL,
    think_max_ms  REAL NOT NULL,
    cpu_mean_ms   REAL,                -- CPU time per decision (NULL: not measured)
    cpu_max_ms    REAL,
    PRIMARY KEY (game_index, seat)
);
CREATE INDEX IF NOT EXISTS seats_bot ON seats(bot_id);
CREATE TABLE IF NOT EXISTS faults (
    game_index  INTEGER NOT NULL REFERENCES games(game_index),
    seat        INTEGER NOT NULL,
    bot_id      INTEGER NOT NULL REFERENCES bots(bot_id),
    kind        TEXT NOT NULL,
    round       INTEGER NOT NULL,
    message     TEXT NOT NULL,
    forfeit     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS faults_game ON faults(game_index);
CREATE TABLE IF NOT EXISTS ratings (
    bot_id      INTEGER PRIMARY KEY REFERENCES bots(bot_id),
    mu          REAL NOT NULL,
    sigma       REAL NOT NULL,
    games       INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS replays (   -- derived from the record once, when it was stored
    game_index  INTEGER PRIMARY KEY REFERENCES games(game_index),
    frames      BLOB NOT NULL          -- gzip of the replay frames JSON (viewer positions)
);
CREATE TABLE IF NOT EXISTS announced (  -- what a bot version said in `ready` (first seen)
    bot_id      INTEGER PRIMARY KEY REFERENCES bots(bot_id),
    name        TEXT NOT NULL,         -- raw, bot-controlled: shown only through textsafe
    author      TEXT,
    version     TEXT
);
"""
"""The schema of a SQLite store, as arenas of schema 3 write it (kept verbatim: older
arenas of the same schema read and write these files)."""

metadata = sa.MetaData()
"""The same schema for PostgreSQL (created by ``create_all``); ``faults`` gets an ``id``
for its order (SQLite keeps the order in ``rowid``)."""

meta_t = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
bots_t = sa.Table(
    "bots",
    metadata,
    sa.Column("bot_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("version", sa.Text, nullable=False),
    sa.UniqueConstraint("name", "version"),
)
schedule_t = sa.Table(
    "schedule",
    metadata,
    sa.Column("game_index", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("game_id", sa.Text, nullable=False, unique=True),
    sa.Column("n_players", sa.Integer, nullable=False),
    sa.Column("variant", sa.Text, nullable=False),
    sa.Column("seed_index", sa.Integer, nullable=False),
    sa.Column("deal_seed", sa.BigInteger, nullable=False),
    sa.Column("rotation", sa.Integer, nullable=False),
)
lineup_t = sa.Table(
    "lineup",
    metadata,
    sa.Column("game_index", sa.Integer, sa.ForeignKey("schedule.game_index"), primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.bot_id"), nullable=False),
    sa.Index("lineup_bot", "bot_id"),
)
games_t = sa.Table(
    "games",
    metadata,
    sa.Column(
        "game_index",
        sa.Integer,
        sa.ForeignKey("schedule.game_index"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("finished_at", sa.Float, nullable=False),
    sa.Column("duration_s", sa.Float, nullable=False),
    sa.Column("end_reason", sa.Text, nullable=False),
    sa.Column("rounds", sa.Integer, nullable=False),
    sa.Column("worker", sa.Text, nullable=False),
    sa.Column("record", sa.LargeBinary, nullable=False),
)
seats_t = sa.Table(
    "seats",
    metadata,
    sa.Column("game_index", sa.Integer, sa.ForeignKey("games.game_index"), primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.bot_id"), nullable=False),
    *(
        sa.Column(name, sa.Integer, nullable=False)
        for name in (
            "score",
            "round_score",
            "bonus_rows",
            "bonus_columns",
            "bonus_colours",
            "rank",
            "full_rows",
            "forfeit",
        )
    ),
    sa.Column("fault", sa.Text),
    sa.Column("decisions", sa.Integer, nullable=False),
    sa.Column("think_mean_ms", sa.Float, nullable=False),
    sa.Column("think_p95_ms", sa.Float, nullable=False),
    sa.Column("think_max_ms", sa.Float, nullable=False),
    sa.Column("cpu_mean_ms", sa.Float),
    sa.Column("cpu_max_ms", sa.Float),
    sa.Index("seats_bot", "bot_id"),
)
faults_t = sa.Table(
    "faults",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("game_index", sa.Integer, sa.ForeignKey("games.game_index"), nullable=False),
    sa.Column("seat", sa.Integer, nullable=False),
    sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.bot_id"), nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("forfeit", sa.Integer, nullable=False),
    sa.Index("faults_game", "game_index"),
)
ratings_t = sa.Table(
    "ratings",
    metadata,
    sa.Column(
        "bot_id", sa.Integer, sa.ForeignKey("bots.bot_id"), primary_key=True, autoincrement=False
    ),
    sa.Column("mu", sa.Float, nullable=False),
    sa.Column("sigma", sa.Float, nullable=False),
    sa.Column("games", sa.Integer, nullable=False),
)
replays_t = sa.Table(
    "replays",
    metadata,
    sa.Column(
        "game_index",
        sa.Integer,
        sa.ForeignKey("games.game_index"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("frames", sa.LargeBinary, nullable=False),
)
announced_t = sa.Table(
    "announced",
    metadata,
    sa.Column(
        "bot_id", sa.Integer, sa.ForeignKey("bots.bot_id"), primary_key=True, autoincrement=False
    ),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("author", sa.Text),
    sa.Column("version", sa.Text),
)

_LABEL = (
    "CASE WHEN (SELECT COUNT(*) FROM bots b2 WHERE b2.name = b.name) > 1 "
    "THEN b.name || '@' || b.version ELSE b.name END"
)
"""How a bot is shown and keyed in ratings and reports: its name, or ``name@version`` when
the store holds more than one version of that name (never silently mixed)."""

_CURSORS = itertools.count()
"""Names of PostgreSQL server-side cursors (unique per process)."""

_CPU_COLUMNS = ("cpu_mean_ms", "cpu_max_ms")
"""Schema 3's per-seat CPU time per decision (NULL: not measured)."""


def _ones(condition: str) -> str:
    """How many rows satisfy ``condition`` (SQLite sums booleans, PostgreSQL does not)."""
    return f"SUM(CASE WHEN {condition} THEN 1 ELSE 0 END)"


def _text(value: str | None) -> str | None:
    """Bot-controlled text as PostgreSQL can hold it (no NUL characters)."""
    return None if value is None else value.replace("\x00", "\ufffd")


PG_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
"""The first bytes of PostgreSQL's binary COPY format (then 32-bit flags and the length
of a header extension)."""


def _copy_header_length(buffer: bytes | bytearray) -> int:
    """Bytes before the first row of a binary COPY (signature, flags, extension)."""
    if bytes(buffer[: len(PG_COPY_SIGNATURE)]) != PG_COPY_SIGNATURE:
        raise StoreError("a COPY of the store is not in PostgreSQL's binary format")
    at = len(PG_COPY_SIGNATURE) + 4
    return at + 4 + int.from_bytes(buffer[at : at + 4], "big")


def _copy_rows(
    buffer: bytearray, rows: int, row: np.dtype[Any], width: int
) -> npt.NDArray[np.int64]:
    """The first ``rows`` rows of binary COPY data of ``width`` int8 columns, checked (a
    field count or length that is not the expected one is a damaged answer)."""
    import numpy as np

    records = np.frombuffer(buffer, dtype=row, count=rows)
    out = np.empty((rows, width), dtype=np.int64)
    for i in range(width):
        field_ = records[f"f{i}"]
        if (field_["len"] != 8).any():
            raise StoreError("a COPY of the store holds a NULL or a value of another type")
        out[:, i] = field_["v"]
    if (records["n"] != width).any():
        raise StoreError("a COPY of the store has rows of another width")
    return out


@dataclass(frozen=True)
class BotEntry:
    """A bot version known to the store. ``label`` is how reports show it."""

    bot_id: int
    name: str
    version: str
    label: str


@dataclass(frozen=True)
class StoredRating:
    bot: str
    """The bot's label."""
    mu: float
    sigma: float
    games: int


@dataclass(frozen=True)
class GameSummary:
    """A stored game for listings (web pages, replay): no record, no seats' details."""

    game_index: int
    game_id: str
    n_players: int
    variant: str
    bots: tuple[str, ...]
    """Labels by seat."""
    finished: bool
    end_reason: str | None
    scores: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()


@dataclass(frozen=True)
class BotStats:
    """Per-bot totals over finished games, aggregated in SQL (memory independent of games)."""

    bot: str
    games: int
    wins: int
    """Games with rank 1 (a shared first place counts for each)."""
    mean_score: float
    forfeits: int
    faults: int


@dataclass
class Tally:
    """Per-bot running totals for the progress display (not ratings)."""

    games: int = 0
    wins: int = 0


@dataclass
class Totals:
    """What the progress bar needs at start: counts and per-bot tallies."""

    scheduled: int
    finished: int
    tallies: dict[str, Tally] = field(default_factory=dict)


Row = dict[str, Any]


def _add_rows(
    conn: Connection,
    game: Row,
    seats: list[Row],
    faults: list[Row],
    frames: bytes | None,
    announced: list[Row],
) -> bool:
    """One finished game's rows through SQLAlchemy Core (any database); False: the game
    was already stored, nothing written."""
    stored = conn.execute(
        insert(conn, games_t).on_conflict_do_nothing().returning(games_t.c.game_index), game
    ).first()
    if stored is None:
        return False
    conn.execute(sa.insert(seats_t), seats)
    if faults:
        conn.execute(sa.insert(faults_t), faults)
    if frames is not None:
        conn.execute(sa.insert(replays_t), {"game_index": game["game_index"], "frames": frames})
    if announced:
        conn.execute(upsert(conn, announced_t, None, ["bot_id"], update=False), announced)
    return True


def _add_rows_sqlite(
    conn: Connection,
    game: Row,
    seats: list[Row],
    faults: list[Row],
    frames: bytes | None,
    announced: list[Row],
) -> bool:
    """:func:`_add_rows` on SQLite: the same statements, written once as SQL and run as
    they are (``exec_driver_sql``: the connection's events and errors as before), without
    Core's building, cache lookup and compiled parameters per statement: a result is the
    tournament parent's one write per game, and that was a third of its loop."""
    run = conn.exec_driver_sql
    sql = _insert_sql(games_t.name, tuple(game), " ON CONFLICT DO NOTHING RETURNING game_index")
    if run(sql, game).first() is None:
        return False
    run(_insert_sql(seats_t.name, tuple(seats[0])), seats)
    if faults:
        run(_insert_sql(faults_t.name, tuple(faults[0])), faults)
    if frames is not None:
        run(
            _insert_sql(replays_t.name, ("game_index", "frames")),
            {"game_index": game["game_index"], "frames": frames},
        )
    if announced:
        suffix = " ON CONFLICT (bot_id) DO NOTHING"
        run(_insert_sql(announced_t.name, tuple(announced[0]), suffix), announced)
    return True


def _fresh_games(
    chunk: list[tuple[ScheduledGame, list[dict[str, int]]]], taken: Iterable[Any]
) -> list[tuple[ScheduledGame, list[dict[str, int]]]]:
    """The games of ``chunk`` not already scheduled (``taken``: (index, id) rows), nor
    repeated within it: skipped as an insert that does nothing on conflict would."""
    indexes = {int(i) for i, _ in taken}
    game_ids = {str(g) for _, g in taken}
    fresh = []
    for g, lineup in chunk:
        if g.game_index in indexes or g.game_id in game_ids:
            continue
        indexes.add(g.game_index)
        game_ids.add(g.game_id)
        fresh.append((g, lineup))
    return fresh


def _schedule_row(g: ScheduledGame) -> Row:
    return {
        "game_index": g.game_index,
        "game_id": g.game_id,
        "n_players": g.n_players,
        "variant": g.variant,
        "seed_index": g.seed_index,
        "deal_seed": g.deal_seed,
        "rotation": g.rotation,
    }


_INSERT_SCHEDULE = (
    "INSERT INTO schedule (game_index, game_id, n_players, variant, seed_index, deal_seed, "
    "rotation) VALUES (:game_index, :game_id, :n_players, :variant, :seed_index, :deal_seed, "
    ":rotation)"
)
_PUT_RATING = (
    "INSERT INTO ratings (bot_id, mu, sigma, games) VALUES (:bot_id, :mu, :sigma, :games) "
    "ON CONFLICT (bot_id) DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma, "
    "games = excluded.games"
)
_GET_META = "SELECT value FROM meta WHERE key = :key"
_PUT_META = (
    "INSERT INTO meta (key, value) VALUES (:key, :value) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
"""The meta table's statements, as both databases spell them."""


def _insert_rows(
    db: sqlite3.Connection,
    game: Row,
    seats: list[Row],
    faults: list[Row],
    frames: bytes | None,
    announced: list[Row],
) -> bool:
    """:func:`_add_rows_sqlite` on the driver's connection (see ``Store._add_rows_driver``)."""
    sql = _insert_sql(games_t.name, tuple(game), " ON CONFLICT DO NOTHING RETURNING game_index")
    if not db.execute(sql, game).fetchall():  # (all: the statement ends before COMMIT)
        return False
    db.executemany(_insert_sql(seats_t.name, tuple(seats[0])), seats)
    if faults:
        db.executemany(_insert_sql(faults_t.name, tuple(faults[0])), faults)
    if frames is not None:
        db.execute(
            _insert_sql(replays_t.name, ("game_index", "frames")),
            {"game_index": game["game_index"], "frames": frames},
        )
    if announced:
        suffix = " ON CONFLICT (bot_id) DO NOTHING"
        db.executemany(_insert_sql(announced_t.name, tuple(announced[0]), suffix), announced)
    return True


@functools.cache
def _insert_sql(table: str, columns: tuple[str, ...], suffix: str = "") -> str:
    """``INSERT INTO table (columns) VALUES (:columns)`` + ``suffix``, named parameters."""
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join(':' + c for c in columns)}){suffix}"
    )


def store_file(outdir: Path) -> Path:
    """The store file of a tournament folder (or the file itself if given one)."""
    return outdir if outdir.is_file() else outdir / STORE_NAME


def store_location(outdir: Path, url: str | None = None) -> Path | str:
    """Where a tournament folder's games are: the database its ``store.url`` names, else
    its ``tournament.sqlite`` (or the file itself if given one). ``url``: where the user
    asks for them, checked against the folder (a folder's games stay where they are)."""
    outdir = Path(outdir)
    if outdir.is_file():
        return outdir
    pointer = outdir / STORE_URL_NAME
    try:
        named = pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else None
    except OSError as exc:
        raise StoreError(explain(exc, str(pointer), "cannot read")) from None
    if url is None or url == named:
        return named or outdir / STORE_NAME
    if named is not None:
        raise StoreError(
            f"{outdir}: this tournament's games are in {describe_url(named)}, not in "
            f"{describe_url(url)}",
            hint="resume it with the store it names, or give another --out",
        )
    if (outdir / STORE_NAME).exists():
        raise StoreError(
            f"{outdir}: this tournament's games are in {outdir / STORE_NAME}, not in "
            f"{describe_url(url)}",
            hint="resume it without --store, or give another --out",
        )
    return url


def remember_location(outdir: Path, url: str) -> None:
    """Name a database store in its tournament folder (``store.url``, readable by its
    owner only: the URL may hold a password), so reports and replays find the games."""
    pointer = Path(outdir) / STORE_URL_NAME
    try:
        if pointer.is_file() and pointer.read_text(encoding="utf-8").strip() == url:
            return
        pointer.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(pointer, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(url + "\n")
    except OSError as exc:
        raise StoreError(explain(exc, str(pointer)), resumable=True) from None


class Store:
    """Access to one tournament's store: a SQLite file (a path) or a database URL.
    ``readonly`` opens never write or lock."""

    def __init__(self, path: Path | str, readonly: bool = False) -> None:
        self.url: str | None = str(path) if is_url(path) else None
        self.path: Path | None = None if self.url is not None else Path(path)
        self.where = describe_url(self.url) if self.url is not None else str(self.path)
        """The store as shown in messages (a URL without its password)."""
        self.readonly = readonly
        self._lock: int | None = None
        self._labels: dict[int, str] | None = None
        self._columns: dict[str, set[str]] = {}
        self._tables: set[str] | None = None
        self._lineups: dict[int, dict[int, int]] = {}
        """Seat -> bot_id of games this store scheduled (committed), until their result
        is added: saves :meth:`add_result` a query per game."""
        self._announced: set[int] = set()
        """Bots whose announcement is stored (the first one is kept: later ones change
        nothing), so a result does not upsert it again."""
        self._conns: list[Connection] = []
        self._raw: sqlite3.Connection | None = None
        """SQLite: the reader's own driver connection. Single-statement reads (the hot
        per-game lookups, the report's aggregates) run on it as written, ``:name``
        parameters included, without the per-call cost of a Core execution; inside
        :meth:`snapshot` they see the snapshot (the same connection)."""
        self._raw_writer: sqlite3.Connection | None = None
        """SQLite: the writer's driver connection, for the small writes of
        :meth:`_driver_write` (a result, meta keys, the schedule)."""
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        if self.path is not None and not self.readonly:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._error(exc, "not a usable tournament store") from None
            self._take_lock()
        if self.path is not None and self.readonly and not self.path.exists():
            raise StoreError(f"{self.path}: no tournament store here")
        url = self.url or sqlite_url(self.path or Path(), readonly=self.readonly)
        self.engine = make_engine(url, readonly=self.readonly)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        try:
            self.reader = self._connect()
            self.writer = self.reader if self.readonly else self._connect()
            if not self.readonly:
                self.writer.info["immediate"] = True
            if self.is_sqlite:
                raw = self.reader.connection.driver_connection
                assert isinstance(raw, sqlite3.Connection)
                self._raw = raw
                if not self.readonly:
                    writer = self.writer.connection.driver_connection
                    assert isinstance(writer, sqlite3.Connection)
                    self._raw_writer = writer
            if not self.is_sqlite and not self.readonly:
                self._take_advisory_lock()
            self._check_version(writable=not self.readonly)
            if not self.readonly:
                self._create_schema()
        except StoreError:
            raise
        except DB_ERRORS as exc:
            raise self._error(exc, "not a usable tournament store") from None

    def _connect(self) -> Connection:
        conn = self.engine.connect()
        self._conns.append(conn)
        return conn

    def _error(self, exc: BaseException, doing: str = "store error") -> StoreError:
        """A failed operation as a :class:`StoreError` (resumable unless damaged)."""
        self._labels = None
        message = explain(exc, self.where, doing, what="tournament store", afresh="another --out")
        return StoreError(message, resumable=DAMAGED not in message)

    # ------------------------------------------------------------------ lifecycle

    def _take_lock(self) -> None:
        """One writer per store: an flock on ``tournament.lock`` holding the writer's pid
        (released by the kernel when the process dies, kill -9 included)."""
        assert self.path is not None
        lock_path = self.path.parent / LOCK_NAME
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self._error(exc, "not a usable tournament store") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(
                f"{self.path.parent}: another arena run (pid {other}) is writing this "
                "tournament; wait for it to finish or stop it (Ctrl-C) first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock = fd

    def _take_advisory_lock(self) -> None:
        """PostgreSQL: one writer per database, a session advisory lock on the writer's
        connection (released by the server when that session ends, a killed run's too)."""
        with self.writer.begin():
            got = self.writer.execute(
                sa.text("SELECT pg_try_advisory_lock(:key)"), {"key": ADVISORY_LOCK}
            ).scalar()
        if not got:
            raise StoreLocked(
                f"{self.where}: another arena run is writing this tournament; wait for it "
                "to finish or stop it (Ctrl-C) first"
            )

    def _release_lock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock, 0)
            os.close(self._lock)
            self._lock = None

    def close(self) -> None:
        self._raw = None
        for conn in self._conns:
            with contextlib.suppress(*DB_ERRORS):
                conn.close()
        self._conns = []
        with contextlib.suppress(AttributeError, *DB_ERRORS):
            self.engine.dispose()
        self._release_lock()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """One transaction on the writer's connection; failures become a ``StoreError``
        (the transaction is rolled back, so the store stays consistent). Nested: part of
        the enclosing write."""
        if self.readonly:
            raise StoreError(f"{self.where}: opened read-only")
        conn = self.writer
        if conn.in_transaction():
            yield conn
            return
        try:
            with conn.begin():
                yield conn
        except sa.exc.IntegrityError:
            raise
        except DB_ERRORS as exc:
            raise self._error(exc) from None

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read transaction (or the snapshot's, inside :meth:`snapshot`)."""
        conn = self.reader
        if conn.in_transaction():
            yield conn
            return
        try:
            with conn.begin():
                yield conn
        except DB_ERRORS as exc:
            raise self._error(exc) from None

    def _all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        if self._raw is not None:
            try:
                return self._raw.execute(sql, params or {}).fetchall()
            except sqlite3.Error as exc:
                raise self._error(exc) from None
        with self._read() as conn:
            return list(conn.execute(sa.text(sql), params or {}).all())

    def _one(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        if self._raw is not None:
            try:
                return self._raw.execute(sql, params or {}).fetchone()
            except sqlite3.Error as exc:
                raise self._error(exc) from None
        with self._read() as conn:
            return conn.execute(sa.text(sql), params or {}).first()

    def _stream(
        self, sql: str | sa.TextClause, params: Mapping[str, Any] | None = None, chunk: int = 5000
    ) -> Iterator[tuple[Any, ...]]:
        """Rows streamed (PostgreSQL: a server-side cursor), in one read transaction."""
        if self._raw is not None and isinstance(sql, str):
            try:
                yield from self._raw.execute(sql, params or {})
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            return
        stmt = sa.text(sql) if isinstance(sql, str) else sql
        with self._read() as conn:
            result = conn.execution_options(yield_per=chunk).execute(stmt, params or {})
            yield from result

    def _chunks(self, sql: str, chunk: int) -> Iterator[list[Any]]:
        """A parameterless query's rows, in lists of ``chunk`` plain tuples, straight from
        the driver's cursor (the ratings turn each list into an array)."""
        with self._read() as conn:
            dbapi = conn.connection.dbapi_connection
            assert dbapi is not None
            # PostgreSQL: a server-side cursor (named: one per stream) keeps memory flat
            name = f"chunks_{next(_CURSORS)}"
            cur = dbapi.cursor(name=name) if not self.is_sqlite else dbapi.cursor()
            try:
                cur.execute(sql)
                while rows := cur.fetchmany(chunk):
                    yield list(rows)
            except DB_ERRORS as exc:
                raise self._error(exc) from None
            finally:
                cur.close()

    def _int_chunks(
        self, columns: Sequence[str], rest: str, chunk: int
    ) -> Iterator[npt.NDArray[np.int64]]:
        """``SELECT columns rest`` (integer columns, never NULL) as int64 arrays of about
        ``chunk`` rows: SQLite through its cursor; PostgreSQL as one ``COPY ... (FORMAT
        BINARY)``, decoded by numpy with no Python object per row (a server-side cursor's
        rows cost ~1 µs a value to make into tuples: seconds at a million games)."""
        import numpy as np

        width = len(columns)
        if self.is_sqlite:
            for rows in self._chunks(f"SELECT {', '.join(columns)} {rest}", chunk):
                yield np.array(rows, dtype=np.int64).reshape(-1, width)
            return
        import psycopg  # a PostgreSQL store: its driver is there

        cast = ", ".join(f"({c})::int8" for c in columns)
        field_ = [("len", ">i4"), ("v", ">i8")]
        row = np.dtype([("n", ">i2"), *((f"f{i}", field_) for i in range(width))])
        with self._read() as conn:
            driver = conn.connection.driver_connection
            assert isinstance(driver, psycopg.Connection)
            try:
                with (
                    driver.cursor() as cur,
                    cur.copy(f"COPY (SELECT {cast} {rest}) TO STDOUT (FORMAT BINARY)") as copy,
                ):
                    buffer = bytearray()
                    header: int | None = None
                    for block in copy:
                        buffer += block
                        if header is None:
                            if len(buffer) < len(PG_COPY_SIGNATURE) + 8:
                                continue
                            header = _copy_header_length(buffer)
                            del buffer[:header]
                        whole = len(buffer) // row.itemsize
                        if whole >= chunk:
                            yield _copy_rows(buffer, whole, row, width)
                            del buffer[: whole * row.itemsize]
                    if buffer[-2:] != b"\xff\xff":  # the trailer: a field count of -1
                        raise StoreError(f"{self.where}: a COPY of the store ended early")
                    del buffer[-2:]
                    if buffer:
                        if len(buffer) % row.itemsize:
                            raise StoreError(f"{self.where}: a COPY of the store is malformed")
                        yield _copy_rows(buffer, len(buffer) // row.itemsize, row, width)
            except DB_ERRORS as exc:
                raise self._error(exc) from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Every read inside sees one consistent state (one read transaction: WAL on
        SQLite, REPEATABLE READ on PostgreSQL)."""
        conn = self.reader
        if conn.in_transaction():
            yield self
            return
        try:
            trans = conn.begin()
            if not self.is_sqlite:
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        except DB_ERRORS as exc:
            raise self._error(exc) from None
        try:
            yield self
        finally:
            with contextlib.suppress(*DB_ERRORS):
                trans.rollback()

    # ------------------------------------------------------------------ versions

    def _check_version(self, writable: bool) -> None:
        tables = self.tables()
        if "meta" not in tables:
            if not writable and not tables:
                raise StoreError(f"{self.where}: not a usable tournament store (empty)")
            if "schedule" in tables:
                raise StoreError(f"{self.where}: not a usable tournament store (no meta table)")
            if tables:  # e.g. a competition's database: never mixed
                raise StoreError(
                    f"{self.where}: not a tournament store (it holds other tables: "
                    f"{', '.join(sorted(tables)[:6])})",
                    hint="give the tournament a store of its own (an empty database)",
                )
            return
        found = self.get_meta("schema_version")
        if found is None or found == str(SCHEMA_VERSION):
            return
        if found in ("1", "2") and self.path is not None:
            if found == "1" and not writable:
                raise StoreError(
                    f"{self.path}: written by an older arena (store schema 1, this arena "
                    f"reads {SCHEMA_VERSION}); upgrade it in place with: arena upgrade "
                    f"{self.path.parent}"
                )
            if writable:
                self._migrate(found)
            return  # schema 2 read-only reads as a store whose CPU times were not measured
        raise StoreError(
            f"{self.where}: store schema version {found}, this arena reads {SCHEMA_VERSION} "
            "(written by a newer arena? use that version)"
        )

    def _migrate(self, found: str) -> None:
        """Bring a schema-1 or -2 SQLite file to schema 3 (on a connection of its own,
        in one transaction per step)."""
        raw = self.engine.raw_connection()
        try:
            db = raw.driver_connection
            assert isinstance(db, sqlite3.Connection)
            db.execute("PRAGMA foreign_keys=OFF")  # tables are renamed and rebuilt
            if found == "1":
                migrate_v1(db)
            migrate_v2(db)
            db.execute("PRAGMA foreign_keys=ON")
        finally:
            raw.close()
        self._tables = None
        self._columns = {}

    def _create_schema(self) -> None:
        """The tables a writer needs (added to an older store that lacks some)."""
        if self._raw_writer is not None:
            with self._driver_write() as db:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if db.execute(_GET_META, {"key": "schema_version"}).fetchone() is None:
                    self.set_meta("schema_version", str(SCHEMA_VERSION))
        else:
            with self._write() as conn:
                metadata.create_all(conn)
                if self._get_meta(conn, "schema_version") is None:
                    self.set_meta("schema_version", str(SCHEMA_VERSION))
        self._tables = None
        self._columns = {}

    # ------------------------------------------------------------------ meta

    @staticmethod
    def _get_meta(conn: Connection, key: str) -> str | None:
        value = conn.execute(sa.text(_GET_META), {"key": key}).scalar_one_or_none()
        return None if value is None else str(value)

    def get_meta(self, key: str) -> str | None:
        if self._raw is not None:
            row = self._one(_GET_META, {"key": key})
            return None if row is None else str(row[0])
        with self._read() as conn:
            return self._get_meta(conn, key)

    def columns(self, table: str) -> set[str]:
        """The columns a table has (a schema-2 store opened read-only lacks newer ones)."""
        if table not in self._columns:
            with self._read() as conn:
                found = sa.inspect(conn).get_columns(table)
            self._columns[table] = {str(c["name"]) for c in found}
        return self._columns[table]

    def tables(self) -> set[str]:
        """The tables this store has (one opened read-only may predate newer ones)."""
        if self._tables is None:
            with self._read() as conn:
                self._tables = set(sa.inspect(conn).get_table_names())
        return self._tables

    def set_meta(self, key: str, value: str) -> None:
        """One meta key, in the enclosing write's transaction or its own."""
        self.put_meta(**{key: value})

    def put_meta(self, **values: str) -> None:
        """Set several meta keys in one transaction (the enclosing write's, or its own)."""
        rows = [{"key": k, "value": v} for k, v in values.items()]
        if not rows:
            return
        if self._raw_writer is not None:
            with self._driver_write() as db:
                db.executemany(_PUT_META, rows)
            return
        with self._write() as conn:
            conn.execute(sa.text(_PUT_META), rows)

    # ------------------------------------------------------------------ bots

    def register_bot(self, name: str, version: str) -> int:
        """The ``bot_id`` of ``(name, version)``, added if new."""
        row = self._one(
            "SELECT bot_id FROM bots WHERE name = :name AND version = :version",
            {"name": name, "version": version},
        )
        if row is not None:
            return int(row[0])
        if self._raw_writer is not None:
            with self._driver_write() as db:
                cursor = db.execute(
                    "INSERT INTO bots (name, version) VALUES (:name, :version)",
                    {"name": name, "version": version},
                )
                assert cursor.lastrowid is not None
                bot_id = cursor.lastrowid
        else:
            with self._write() as conn:
                result = conn.execute(sa.insert(bots_t).values(name=name, version=version))
                key = result.inserted_primary_key
                assert key is not None
                bot_id = int(key[0])
        self._labels = None
        return bot_id

    def adopt_versions(self, versions: dict[str, str]) -> None:
        """Give the bots of a migrated schema-1 store (versions not recorded) the
        versions found now."""
        b = bots_t.c
        with self._write() as conn:
            for name, version in versions.items():
                conn.execute(
                    sa.update(bots_t)
                    .where(b.name == name, b.version == LEGACY_VERSION)
                    .values(version=version)
                )
        self._labels = None

    def bots(self) -> list[BotEntry]:
        rows = self._all(
            f"SELECT b.bot_id, b.name, b.version, {_LABEL} FROM bots b ORDER BY b.name, b.bot_id"
        )
        return [BotEntry(int(i), str(n), str(v), str(lbl)) for i, n, v, lbl in rows]

    def versions(self, name: str) -> list[str]:
        """Every stored version of a bot name, oldest first."""
        rows = self._all(
            "SELECT version FROM bots WHERE name = :name ORDER BY bot_id", {"name": name}
        )
        return [str(r[0]) for r in rows]

    def announcements(self) -> dict[str, Announcement]:
        """Per bot label, the first ``ready`` its version sent (name, author, version);
        empty for a store from before they were recorded, opened read-only."""
        if "announced" not in self.tables():
            return {}
        labels = self._label_map()
        rows = self._all("SELECT bot_id, name, author, version FROM announced")
        return {
            labels[int(b)]: Announcement(
                str(n), a if a is None else str(a), v if v is None else str(v)
            )
            for b, n, a, v in rows
            if int(b) in labels
        }

    def _label_map(self) -> dict[int, str]:
        if self._labels is None:
            self._labels = {b.bot_id: b.label for b in self.bots()}
        return self._labels

    def _bot_map(self) -> dict[int, tuple[str, str]]:
        rows = self._all("SELECT bot_id, name, version FROM bots")
        return {int(i): (str(n), str(v)) for i, n, v in rows}

    # ------------------------------------------------------------------ schedule

    def schedule_games(
        self, games: Iterable[ScheduledGame], state: dict[str, str] | None = None
    ) -> int:
        """Append scheduled games (game ids already scheduled are skipped) and the
        scheduler's ``state`` (meta keys) in one transaction. Returns how many were new."""
        ids: dict[tuple[str, str], int] = {}
        rows = []
        for g in games:
            versions = g.versions or ("",) * len(g.bots)
            lineup = []
            for seat, (name, version) in enumerate(zip(g.bots, versions, strict=True)):
                key = (name, version)
                if key not in ids:
                    ids[key] = self.register_bot(name, version)
                lineup.append({"game_index": g.game_index, "seat": seat, "bot_id": ids[key]})
            rows.append((g, lineup))
        outermost = not self._in_write()
        if self._raw_writer is not None:
            added = self._schedule_rows_driver(rows, state)
        else:
            added = self._schedule_rows(rows, state)
        if outermost:  # committed: the results' seats find their bots here (add_result)
            for g, lineup in added:
                self._lineups[g.game_index] = {row["seat"]: row["bot_id"] for row in lineup}
        return len(added)

    def _schedule_rows_driver(
        self,
        rows: list[tuple[ScheduledGame, list[dict[str, int]]]],
        state: dict[str, str] | None,
    ) -> list[tuple[ScheduledGame, list[dict[str, int]]]]:
        """:meth:`_schedule_rows` on SQLite's driver connection (see :meth:`_driver_write`)."""
        added: list[tuple[ScheduledGame, list[dict[str, int]]]] = []
        with self._driver_write() as db:
            for start in range(0, len(rows), 400):
                chunk = rows[start : start + 400]
                marks = ",".join("?" * len(chunk))
                taken = db.execute(
                    f"SELECT game_index, game_id FROM schedule "
                    f"WHERE game_index IN ({marks}) OR game_id IN ({marks})",
                    [g.game_index for g, _ in chunk] + [g.game_id for g, _ in chunk],
                ).fetchall()
                fresh = _fresh_games(chunk, taken)
                if fresh:
                    db.executemany(_INSERT_SCHEDULE, [_schedule_row(g) for g, _ in fresh])
                    db.executemany(
                        _insert_sql(lineup_t.name, ("game_index", "seat", "bot_id")),
                        [row for _, lineup in fresh for row in lineup],
                    )
                added.extend(fresh)
            if state:
                db.executemany(_PUT_META, [{"key": k, "value": v} for k, v in state.items()])
        return added

    def _schedule_rows(
        self,
        rows: list[tuple[ScheduledGame, list[dict[str, int]]]],
        state: dict[str, str] | None,
    ) -> list[tuple[ScheduledGame, list[dict[str, int]]]]:
        added: list[tuple[ScheduledGame, list[dict[str, int]]]] = []
        with self._write() as conn:
            # Games already scheduled (by index or id) are skipped, as an insert that
            # does nothing on conflict would; the rest go in one statement per table.
            for start in range(0, len(rows), 500):
                chunk = rows[start : start + 500]
                sc = schedule_t.c
                taken = conn.execute(
                    sa.select(sc.game_index, sc.game_id).where(
                        sc.game_index.in_([g.game_index for g, _ in chunk])
                        | sc.game_id.in_([g.game_id for g, _ in chunk])
                    )
                ).all()
                fresh = _fresh_games(chunk, taken)
                if fresh:
                    conn.execute(sa.insert(schedule_t), [_schedule_row(g) for g, _ in fresh])
                    seats = [row for _, lineup in fresh for row in lineup]
                    conn.execute(sa.insert(lineup_t), seats)
                added.extend(fresh)
            if state:
                rows_meta = [{"key": k, "value": v} for k, v in state.items()]
                conn.execute(sa.text(_PUT_META), rows_meta)
        return added

    save_schedule = schedule_games
    """Older name of :meth:`schedule_games`."""

    def has_game_id(self, game_id: str) -> bool:
        return self._one("SELECT 1 FROM schedule WHERE game_id = :g", {"g": game_id}) is not None

    def scheduled_count(self) -> int:
        """Games handed out so far (a lazy scheduler hands out a few ahead of play)."""
        return int(self._one("SELECT COUNT(*) FROM schedule")[0])

    def expected_count(self) -> int:
        """Games the whole tournament plays: what the scheduler said it would hand out
        (meta ``expected_games``), or those handed out when it did not say (or handed out
        more)."""
        expected = self.get_meta(EXPECTED_KEY)
        return max(self.scheduled_count(), int(expected) if expected else 0)

    def finished_count(self) -> int:
        return int(self._one("SELECT COUNT(*) FROM games")[0])

    def fingerprint(self) -> str:
        """Changes whenever a game is scheduled or finished: whether a report is current."""
        row = self._one(
            "SELECT (SELECT COUNT(*) FROM schedule), COUNT(*), MAX(finished_at) FROM games"
        )
        return f"{row[0]}:{row[1]}:{row[2]}"

    def next_index(self) -> int:
        row = self._one("SELECT MAX(game_index) FROM schedule")
        return 0 if row[0] is None else int(row[0]) + 1

    def _concat(self, columns: Sequence[str], table: str, where: str, order: str) -> str:
        """SQL of a correlated subquery: ``columns`` of the ``table`` rows matching
        ``where``, each comma-separated in ``order``, joined by ';' (SQLite 3.40 has no
        ORDER BY in aggregates: it concatenates an ordered subquery, kept in order)."""
        if not self.is_sqlite:
            parts = " || ';' || ".join(
                f"string_agg(CAST({c} AS TEXT), ',' ORDER BY {order})" for c in columns
            )
            return f"(SELECT {parts} FROM {table} WHERE {where})"
        parts = " || ';' || ".join(f"group_concat({c})" for c in columns)
        return (
            f"(SELECT {parts} FROM (SELECT {', '.join(columns)} FROM {table} "
            f"WHERE {where} ORDER BY {order}) AS ordered)"
        )

    def _lineup_sql(self) -> str:
        return self._concat(["bot_id"], "lineup l", "l.game_index = s.game_index", "seat")

    def _games_from(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> Iterator[ScheduledGame]:
        """Scheduled games (streamed) from a query selecting schedule rows ordered by index."""
        bots = self._bot_map()
        rows = self._stream(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, "
            f"s.deal_seed, s.rotation, {self._lineup_sql()} "
            f"FROM schedule s {sql} ORDER BY s.game_index",
            params,
        )
        for row in rows:
            lineup = [bots[int(b)] for b in str(row[7] or "").split(",") if b]
            yield ScheduledGame(
                int(row[0]),
                str(row[1]),
                int(row[2]),
                str(row[3]),
                int(row[4]),
                int(row[5]),
                int(row[6]),
                tuple(n for n, _ in lineup),
                tuple(v for _, v in lineup),
            )

    def schedule(self) -> Iterator[ScheduledGame]:
        """Every scheduled game in schedule order (streamed)."""
        return self._games_from("")

    def unfinished(self) -> Iterator[ScheduledGame]:
        """Scheduled games without a result, in schedule order (streamed)."""
        return self._games_from(
            "WHERE NOT EXISTS (SELECT 1 FROM games g WHERE g.game_index = s.game_index)"
        )

    def scheduled_game(self, game_index: int) -> ScheduledGame | None:
        return next(self._games_from("WHERE s.game_index = :i", {"i": game_index}), None)

    def finished_indices(self) -> set[int]:
        """Indices of finished games (small stores and tests; large ones stream instead)."""
        return {int(r[0]) for r in self._all("SELECT game_index FROM games")}

    def lineup_counts(self, n_players: int | None = None) -> dict[tuple[str, str], int]:
        """Scheduled games per (name, version), optionally for one player count."""
        sql = (
            "SELECT b.name, b.version, COUNT(*) FROM lineup l JOIN bots b USING (bot_id) "
            "JOIN schedule s USING (game_index) "
        )
        params: dict[str, Any] = {}
        if n_players is not None:
            sql += "WHERE s.n_players = :n "
            params = {"n": n_players}
        rows = self._all(sql + "GROUP BY l.bot_id, b.name, b.version", params)
        return {(str(n), str(v)): int(c) for n, v, c in rows}

    # ------------------------------------------------------------------ results

    def add_result(self, result: GameResult) -> bool:
        """Write one finished game atomically; False if it was already stored (a result
        delivered twice, e.g. by a retried distributed worker, is stored once)."""
        lineup = self._lineups.pop(result.game_index, None) or {
            int(seat): int(bot)
            for seat, bot in self._all(
                "SELECT seat, bot_id FROM lineup WHERE game_index = :i", {"i": result.game_index}
            )
        }
        if len(lineup) != len(result.seats):
            raise StoreError(
                f"{self.where}: result of game {result.game_index} does not match the "
                f"schedule ({len(result.seats)} seats, {len(lineup)} scheduled)"
            )
        record = result.stored_record()
        frames = result.stored_frames()
        outermost = not self._in_write()
        text = (lambda v: v) if self.is_sqlite else _text
        game = {
            "game_index": result.game_index,
            "finished_at": time.time(),
            "duration_s": result.duration_s,
            "end_reason": result.end_reason,
            "rounds": result.rounds,
            "worker": result.worker,
            "record": record,
        }
        seats = [
            {
                "game_index": result.game_index,
                "seat": s.seat,
                "bot_id": lineup[s.seat],
                "score": s.score,
                "round_score": s.round_score,
                "bonus_rows": s.bonus_rows,
                "bonus_columns": s.bonus_columns,
                "bonus_colours": s.bonus_colours,
                "rank": s.rank,
                "full_rows": s.full_rows,
                "forfeit": int(s.forfeit),
                "fault": text(s.fault),
                "decisions": s.decisions,
                "think_mean_ms": s.think_mean_ms,
                "think_p95_ms": s.think_p95_ms,
                "think_max_ms": s.think_max_ms,
                "cpu_mean_ms": s.cpu_mean_ms,
                "cpu_max_ms": s.cpu_max_ms,
            }
            for s in result.seats
        ]
        faults = [
            {
                "game_index": result.game_index,
                "seat": f.seat,
                "bot_id": lineup[f.seat],
                "kind": text(f.kind),
                "round": f.round,
                "message": text(f.message),
                "forfeit": int(f.forfeit),
            }
            for f in result.faults
        ]
        announced = [
            {
                "bot_id": lineup[seat],
                "name": text(a.name),
                "author": text(a.author),
                "version": text(a.version),
            }
            for seat, a in enumerate(result.announced)
            if a is not None and seat in lineup and lineup[seat] not in self._announced
        ]
        if outermost and self._raw_writer is not None:
            if not self._add_rows_driver(game, seats, faults, frames, announced):
                return False  # already stored (nothing was written)
        else:
            with self._write() as conn:
                if self.is_sqlite:
                    stored = _add_rows_sqlite(conn, game, seats, faults, frames, announced)
                else:
                    stored = _add_rows(conn, game, seats, faults, frames, announced)
                if not stored:
                    return False  # already stored
        if outermost:  # committed
            self._announced.update(int(str(row["bot_id"])) for row in announced)
        return True

    def _add_rows_driver(
        self,
        game: Row,
        seats: list[Row],
        faults: list[Row],
        frames: bytes | None,
        announced: list[Row],
    ) -> bool:
        """:func:`_add_rows_sqlite` on the writer's driver connection (see
        :meth:`_driver_write`): the same statements, without Core's transaction and
        execution machinery around each (a third of the parent's time per result)."""
        with self._driver_write() as db:
            return _insert_rows(db, game, seats, faults, frames, announced)

    def _in_write(self) -> bool:
        """Whether a write transaction is open on the writer (Core's or the driver's)."""
        raw = self._raw_writer
        return self.writer.in_transaction() or (raw is not None and raw.in_transaction)

    @contextlib.contextmanager
    def _driver_write(self) -> Iterator[sqlite3.Connection]:
        """SQLite: the writer's driver connection in a write transaction, its own
        (``BEGIN IMMEDIATE``, committed at the end, rolled back on any failure) or the
        enclosing one's (a Core write on the same connection). Statements run as written
        (``:name`` parameters), without Core's per-statement machinery: a store's small
        writes (meta keys, the schema, a game's result) cost a compiled statement each
        through Core, and a fresh engine per tournament compiles every one anew. The
        connection is in autocommit mode (``store.engine``): the transaction is spelled
        out."""
        db = self._raw_writer
        if db is None:
            raise StoreError(f"{self.where}: opened read-only")
        if self._in_write():
            yield db
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except DB_ERRORS as exc:
            raise self._error(exc) from None

    def _damaged_record(self, exc: BaseException, game: object) -> StoreError:
        rescue = f" Rescue what is left with: sqlite3 {self.path} .recover" if self.path else ""
        return StoreError(
            f"{self.where}: the store is {DAMAGED}: the record of game {game} cannot be "
            f"read ({exc}); the games before this one were checked.{rescue}"
        )

    def record_json(self, game_index: int) -> bytes | None:
        row = self._one("SELECT record FROM games WHERE game_index = :i", {"i": game_index})
        if row is None:
            return None
        try:
            return gzip.decompress(row[0])
        except (OSError, zlib.error, EOFError) as exc:
            raise self._damaged_record(exc, game_index) from None

    def records(self, game_ids: Iterable[str] = ()) -> Iterator[tuple[str, bytes]]:
        """(game id, record JSON) of finished games in schedule order (streamed); only
        ``game_ids`` if given."""
        wanted = list(game_ids)
        sql = "SELECT s.game_id, g.record FROM games g JOIN schedule s USING (game_index)"
        stmt = sa.text(sql + " ORDER BY g.game_index")
        if wanted:
            stmt = sa.text(sql + " WHERE s.game_id IN :ids ORDER BY g.game_index").bindparams(
                sa.bindparam("ids", expanding=True)
            )
        for game_id, blob in self._stream(stmt, {"ids": wanted} if wanted else None, 200):
            try:
                data = gzip.decompress(blob)
            except (OSError, zlib.error, EOFError) as exc:
                raise self._damaged_record(exc, game_id) from None
            yield str(game_id), data

    def replay_source(self, game_index: int) -> tuple[bytes, bytes | None] | None:
        """(record JSON, stored replay frames JSON or None) of a finished game; None if it
        is not finished. A store from before frames were stored has none."""
        sql = "SELECT g.record, " + (
            "(SELECT r.frames FROM replays r WHERE r.game_index = g.game_index)"
            if "replays" in self.tables()
            else "NULL"
        )
        row = self._one(sql + " FROM games g WHERE g.game_index = :i", {"i": game_index})
        if row is None:
            return None
        record, frames = row
        try:
            return gzip.decompress(record), None if frames is None else gzip.decompress(frames)
        except (OSError, zlib.error, EOFError) as exc:
            raise self._damaged_record(exc, game_index) from None

    def game_listing(
        self, start: int = 0, indices: Iterable[int] | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """Finished games for listings, streamed in schedule order: (game_index, game_id,
        n_players, variant, end_reason, rounds, labels by seat, scores by seat, ranks by
        seat); aggregated in SQL, no record read. Only those from schedule position
        ``start`` on, and with ``indices`` only those games (a site lists a chosen few
        of a million)."""
        if indices is not None:
            wanted = sorted({int(i) for i in indices if int(i) >= start})
            for at in range(0, len(wanted), LISTING_CHUNK):
                chosen = ", ".join(map(str, wanted[at : at + LISTING_CHUNK]))
                yield from self._listing(f"g.game_index IN ({chosen})")
            return
        yield from self._listing(f"g.game_index >= {int(start)}")

    def _listing(self, where: str) -> Iterator[tuple[Any, ...]]:
        labels = self._label_map()
        seats = self._concat(
            ["bot_id", "score", "rank"], "seats t", "t.game_index = s.game_index", "seat"
        )
        rows = self._stream(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason, g.rounds, "
            f"{seats} FROM games g JOIN schedule s USING (game_index) WHERE {where} "
            "ORDER BY g.game_index"
        )
        for *head, text in rows:
            bots, scores, ranks = [*str(text or ";;").split(";"), "", ""][:3]
            yield (
                *head,
                tuple(labels[int(b)] for b in bots.split(",") if b),
                tuple(int(v) for v in scores.split(",") if v),
                tuple(int(v) for v in ranks.split(",") if v),
            )

    def recent_indices(self, limit: int, faulted: bool = False) -> list[int]:
        """Schedule positions of the ``limit`` last finished games (with ``faulted``, of
        those with a fault), ascending."""
        table = "faults" if faulted else "games"
        rows = self._all(
            f"SELECT DISTINCT game_index FROM {table} ORDER BY game_index DESC LIMIT :n",
            {"n": max(0, int(limit))},
        )
        return sorted(int(i) for (i,) in rows)

    def worst_losses(self, keep: int) -> list[tuple[str, int, int, int]]:
        """Per bot, its ``keep`` finished games lost by the widest margin to the winner's
        score (ties by game id): (label, game_index, seat, margin), each bot's widest
        first. Ranked in SQL: nothing per game is held here."""
        labels = self._label_map()
        rows = self._all(
            "WITH best AS (SELECT game_index, MAX(score) AS top FROM seats GROUP BY "
            "game_index), losses AS (SELECT t.bot_id, t.game_index, t.seat, "
            "b.top - t.score AS margin, ROW_NUMBER() OVER (PARTITION BY t.bot_id ORDER BY "
            "b.top - t.score DESC, s.game_id) AS n FROM seats t JOIN best b USING "
            "(game_index) JOIN schedule s USING (game_index) WHERE t.rank <> 1) "
            "SELECT bot_id, game_index, seat, margin FROM losses WHERE n <= :keep "
            "ORDER BY bot_id, n",
            {"keep": int(keep)},
        )
        return [(labels[int(b)], int(i), int(seat), int(m)) for b, i, seat, m in rows]

    def game_index_of(self, game_id: str) -> int | None:
        row = self._one("SELECT game_index FROM schedule WHERE game_id = :g", {"g": game_id})
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ reads for people

    def totals(self) -> Totals:
        """Counts and per-bot (games, wins) of finished games, aggregated in SQL."""
        totals = Totals(scheduled=self.expected_count(), finished=self.finished_count())
        labels = self._label_map()
        for bot_id, games, wins in self._all(
            f"SELECT bot_id, COUNT(*), {_ones('rank = 1')} FROM seats GROUP BY bot_id"
        ):
            totals.tallies[labels[int(bot_id)]] = Tally(int(games), int(wins))
        return totals

    def bot_stats(self) -> list[BotStats]:
        """Per-bot totals over finished games (aggregated in SQL)."""
        labels = self._label_map()
        faults = {
            int(b): int(n)
            for b, n in self._all("SELECT bot_id, COUNT(*) FROM faults GROUP BY bot_id")
        }
        rows = self._all(
            f"SELECT bot_id, COUNT(*), {_ones('rank = 1')}, AVG(score), SUM(forfeit) "
            "FROM seats GROUP BY bot_id"
        )
        return sorted(
            (
                BotStats(labels[int(b)], int(n), int(w), float(s), int(f), faults.get(int(b), 0))
                for b, n, w, s, f in rows
            ),
            key=lambda s: s.bot,
        )

    def games(
        self,
        *,
        bot: str | None = None,
        n_players: int | None = None,
        variant: str | None = None,
        finished: bool | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[GameSummary]:
        """A page of games in schedule order, filtered by a bot's label, the player
        count, the variant and whether the game is finished."""
        where: list[str] = []
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        expanding: list[sa.BindParameter[Any]] = []
        if bot is not None:
            ids = [i for i, label in self._label_map().items() if label == bot]
            if not ids:
                return []
            where.append(
                "EXISTS (SELECT 1 FROM lineup l WHERE l.game_index = s.game_index AND "
                "l.bot_id IN :ids)"
            )
            params["ids"] = ids
            expanding.append(sa.bindparam("ids", expanding=True))
        if n_players is not None:
            where.append("s.n_players = :n")
            params["n"] = n_players
        if variant is not None:
            where.append("s.variant = :variant")
            params["variant"] = variant
        if finished is not None:
            where.append(
                ("" if finished else "NOT ") + "EXISTS (SELECT 1 FROM games g WHERE "
                "g.game_index = s.game_index)"
            )
        sql = (
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason "
            "FROM schedule s LEFT JOIN games g USING (game_index)"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY s.game_index LIMIT :limit OFFSET :offset"
        )
        with self._read() as conn:
            rows = conn.execute(sa.text(sql).bindparams(*expanding), params).all()
            return [self._summary(conn, *row) for row in rows]

    def game(self, game_id: str) -> GameSummary | None:
        with self._read() as conn:
            row = conn.execute(
                sa.text(
                    "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason "
                    "FROM schedule s LEFT JOIN games g USING (game_index) "
                    "WHERE s.game_id = :g"
                ),
                {"g": game_id},
            ).first()
            return None if row is None else self._summary(conn, *row)

    def _summary(
        self, conn: Connection, index: int, game_id: str, n: int, variant: str, end: str | None
    ) -> GameSummary:
        labels = self._label_map()
        lineup = [
            labels[int(b)]
            for (b,) in conn.execute(
                sa.text("SELECT bot_id FROM lineup WHERE game_index = :i ORDER BY seat"),
                {"i": index},
            )
        ]
        seats = conn.execute(
            sa.text("SELECT score, rank FROM seats WHERE game_index = :i ORDER BY seat"),
            {"i": index},
        ).all()
        return GameSummary(
            int(index),
            str(game_id),
            int(n),
            str(variant),
            tuple(lineup),
            end is not None,
            None if end is None else str(end),
            tuple(int(s) for s, _ in seats),
            tuple(int(r) for _, r in seats),
        )

    # ------------------------------------------------------------------ reads for reports

    def schedule_rows(self) -> Iterator[tuple[Any, ...]]:
        """(game_index, game_id, n_players, variant, seed_index, deal_seed, rotation,
        labels by seat) for every scheduled game, streamed."""
        labels = self._label_map()
        rows = self._stream(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, s.deal_seed,"
            f" s.rotation, {self._lineup_sql()} FROM schedule s ORDER BY s.game_index"
        )
        for *head, lineup in rows:
            yield (*head, tuple(labels[int(b)] for b in str(lineup or "").split(",") if b))

    def game_rows(self) -> Iterator[tuple[Any, ...]]:
        """Finished games: the schedule row's fields then (finished_at, duration_s,
        end_reason, rounds, worker), streamed in schedule order."""
        labels = self._label_map()
        rows = self._stream(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, s.deal_seed,"
            f" s.rotation, {self._lineup_sql()}, "
            "g.finished_at, g.duration_s, g.end_reason, g.rounds, g.worker "
            "FROM games g JOIN schedule s USING (game_index) ORDER BY g.game_index"
        )
        for row in rows:
            bots = tuple(labels[int(b)] for b in str(row[7] or "").split(",") if b)
            yield (*row[:7], bots, *row[8:])

    def seat_rows(self) -> Iterator[tuple[Any, ...]]:
        """Seats of finished games in schedule order, streamed: (game_index, seat, label,
        score, round_score, bonus_rows, bonus_columns, bonus_colours, rank, full_rows,
        forfeit, fault, decisions, think_mean_ms, think_p95_ms, think_max_ms, cpu_mean_ms,
        cpu_max_ms, n_players, variant, seed_index, rotation); CPU times are None where
        not measured (a schema-2 store read without upgrading: NULL)."""
        labels = self._label_map()
        cpu = ", ".join(self._cpu_columns())
        rows = self._stream(
            "SELECT t.game_index, t.seat, t.bot_id, t.score, t.round_score, t.bonus_rows, "
            "t.bonus_columns, t.bonus_colours, t.rank, t.full_rows, t.forfeit, t.fault, "
            f"t.decisions, t.think_mean_ms, t.think_p95_ms, t.think_max_ms, {cpu}, "
            "s.n_players, s.variant, s.seed_index, s.rotation "
            "FROM seats t JOIN schedule s USING (game_index) ORDER BY t.game_index, t.seat"
        )
        for row in rows:
            yield (row[0], row[1], labels[int(row[2])], *row[3:])

    def _fault_order(self, alias: str = "f") -> str:
        """The order faults were stored in (SQLite: rowid; PostgreSQL: the id column)."""
        return f"{alias}.rowid" if self.is_sqlite else f"{alias}.id"

    def fault_rows(self) -> Iterator[tuple[Any, ...]]:
        """Faults of finished games: (game_index, seat, label, kind, round, message,
        forfeit, n_players, variant), streamed in schedule order."""
        labels = self._label_map()
        rows = self._stream(
            "SELECT f.game_index, f.seat, f.bot_id, f.kind, f.round, f.message, f.forfeit, "
            "s.n_players, s.variant FROM faults f JOIN schedule s USING (game_index) "
            f"ORDER BY f.game_index, {self._fault_order()}"
        )
        for row in rows:
            yield (row[0], row[1], labels[int(row[2])], *row[3:])

    def rated_games(
        self, start: int = 0, stop: int | None = None, key: str = "label"
    ) -> Iterator[tuple[int, tuple[str, ...], tuple[int, ...]]]:
        """(game_index, labels by seat, ranks) of finished games with ``start <= index <
        stop``, in schedule order, streamed: the input of the ratings. ``key="name"``
        gives bot names instead of labels."""
        labels = self._label_map()
        if key == "name":
            labels = {b.bot_id: b.name for b in self.bots()}
        if self.is_sqlite:
            sql = (
                "SELECT game_index, group_concat(bot_id), group_concat(rank) FROM "
                "(SELECT game_index, bot_id, rank FROM seats WHERE game_index >= :start AND "
                "game_index < :stop ORDER BY game_index, seat) AS ordered "
                "GROUP BY game_index ORDER BY game_index"
            )
        else:
            sql = (
                "SELECT game_index, string_agg(CAST(bot_id AS TEXT), ',' ORDER BY seat), "
                "string_agg(CAST(rank AS TEXT), ',' ORDER BY seat) FROM seats "
                "WHERE game_index >= :start AND game_index < :stop "
                "GROUP BY game_index ORDER BY game_index"
            )
        rows = self._stream(sql, {"start": start, "stop": stop if stop is not None else 2**62})
        for index, bots, ranks in rows:
            yield (
                int(index),
                tuple(labels[int(b)] for b in str(bots).split(",")),
                tuple(int(r) for r in str(ranks).split(",")),
            )

    # ------------------------------------------------------------------ report aggregates
    # The report's tables are aggregated here, in SQL: memory holds one row per bot (per
    # pair, seat, split), never one per seat of every game.

    def _cpu_columns(self, alias: str = "t") -> tuple[str, str]:
        """The CPU columns of ``seats`` (NULL in a schema-2 store read without upgrading)."""
        present = self.columns("seats")
        mean, peak = (f"{alias}.{c}" if c in present else "NULL" for c in _CPU_COLUMNS)
        return mean, peak

    def entrant_labels(self) -> list[str]:
        """Every bot scheduled or seated, by label, sorted."""
        labels = self._label_map()
        ids = self._all(
            "SELECT DISTINCT bot_id FROM lineup UNION SELECT DISTINCT bot_id FROM seats"
        )
        return sorted({labels[int(b)] for (b,) in ids})

    def rating_seats(self, chunk: int = 50_000) -> Iterator[list[tuple[int, int, int, int]]]:
        """(game_index, seat, bot_id, rank) of every seat of a finished game, in schedule
        order, in lists of ``chunk`` rows (the ratings turn each into compact columns)."""
        return self._chunks(
            "SELECT game_index, seat, bot_id, rank FROM seats ORDER BY game_index, seat", chunk
        )

    def outcome_seats(self, chunk: int = 50_000) -> Iterator[npt.NDArray[np.int64]]:
        """(game_index, seat, bot_id, rank, score) of every seat of a finished game, in
        schedule order, as int64 arrays of up to ``chunk`` rows: the one scan of every seat
        the report makes (its ratings and each bot's worst losses come from these)."""
        return self._int_chunks(
            ("game_index", "seat", "bot_id", "rank", "score"),
            "FROM seats ORDER BY game_index, seat",
            chunk,
        )

    def game_ids_at(self, indices: Iterable[int], chunk: int = 10_000) -> dict[int, str]:
        """The game id at each of ``indices`` (scheduled ones), by schedule position."""
        wanted = sorted({int(i) for i in indices})
        stmt = sa.text(
            "SELECT game_index, game_id FROM schedule WHERE game_index IN :ids"
        ).bindparams(sa.bindparam("ids", expanding=True))
        out: dict[int, str] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), chunk):
                rows = conn.execute(stmt, {"ids": wanted[start : start + chunk]}).all()
                out.update((int(i), str(g)) for i, g in rows)
        return out

    def finished_frontier(self) -> int | None:
        """The highest scheduled index up to which every scheduled game has finished (None
        if the first is still to play): how far stored ratings can safely advance."""
        first = self.first_unfinished()
        row = self._one(
            "SELECT MAX(game_index) FROM schedule WHERE game_index < :first", {"first": first}
        )
        return None if row[0] is None else int(row[0])

    def finished_index_chunks(self, chunk: int = 50_000) -> Iterator[npt.NDArray[np.int64]]:
        """Finished games' schedule indices, ascending, as int64 arrays of up to ``chunk``."""
        return self._int_chunks(("game_index",), "FROM games ORDER BY game_index", chunk)

    def game_counts(self, column: str) -> list[tuple[Any, int]]:
        """Finished games per value of ``column`` (``n_players``, ``variant`` or
        ``end_reason``), sorted by value."""
        source = {"n_players": "s.n_players", "variant": "s.variant", "end_reason": "g.end_reason"}
        key = source[column]
        return [
            (value, int(n))
            for value, n in self._all(
                f"SELECT {key}, COUNT(*) FROM games g JOIN schedule s USING (game_index) "
                f"GROUP BY {key} ORDER BY {key}"
            )
        ]

    def game_times(self) -> tuple[float | None, float | None, float | None]:
        """(mean duration_s, first finished_at, last finished_at) of the finished games."""
        row = self._one("SELECT AVG(duration_s), MIN(finished_at), MAX(finished_at) FROM games")
        return tuple(None if v is None else float(v) for v in row)  # type: ignore[return-value]

    def bot_totals(self) -> list[tuple[Any, ...]]:
        """Per bot label, over its seats in finished games: (label, games, wins, score sum,
        margin sum, margins counted, forfeits, decisions, think total ms, think p95 total,
        think max ms, CPU total ms, decisions with CPU measured). A margin is the game's
        best first-place score minus the seat's score."""
        labels = self._label_map()
        cpu, _ = self._cpu_columns()
        rows = self._all(
            "WITH best AS (SELECT game_index, MAX(score) AS top FROM seats WHERE rank = 1 "
            "GROUP BY game_index) "
            f"SELECT t.bot_id, COUNT(*), {_ones('t.rank = 1')}, SUM(t.score), "
            "SUM(best.top - t.score), COUNT(best.top), SUM(t.forfeit), SUM(t.decisions), "
            "SUM(t.think_mean_ms * t.decisions), SUM(t.think_p95_ms * t.decisions), "
            f"MAX(t.think_max_ms), COALESCE(SUM(CASE WHEN {cpu} IS NULL THEN 0.0 "
            f"ELSE {cpu} * t.decisions END), 0.0), COALESCE(SUM(CASE WHEN {cpu} IS NULL "
            "THEN 0.0 ELSE CAST(t.decisions AS DOUBLE PRECISION) END), 0.0) "
            "FROM seats t LEFT JOIN best USING (game_index) GROUP BY t.bot_id"
        )
        return [(labels[int(row[0])], *row[1:]) for row in rows]

    def fault_totals(self) -> list[tuple[str, str, int]]:
        """(bot label, fault kind, count) over every fault of a finished game."""
        labels = self._label_map()
        rows = self._all("SELECT bot_id, kind, COUNT(*) FROM faults GROUP BY bot_id, kind")
        return [(labels[int(b)], str(k), int(n)) for b, k, n in rows]

    def pair_totals(self) -> list[tuple[str, str, int, int, int, int]]:
        """Per ordered pair of different bots that shared a finished game: (bot, opponent,
        games, ahead, behind, ties); ahead = a strictly better rank."""
        labels = self._label_map()
        rows = self._all(
            f"SELECT a.bot_id, b.bot_id, COUNT(*), {_ones('a.rank < b.rank')}, "
            f"{_ones('a.rank > b.rank')}, {_ones('a.rank = b.rank')} "
            "FROM seats a JOIN seats b ON a.game_index = b.game_index "
            "AND a.bot_id != b.bot_id GROUP BY a.bot_id, b.bot_id"
        )
        return [
            (labels[int(a)], labels[int(b)], int(n), int(ahead), int(behind), int(ties))
            for a, b, n, ahead, behind, ties in rows
        ]

    def seat_totals(self) -> list[tuple[int, int, int, int, int]]:
        """Per (player count, seat): (n_players, seat, games, wins, score sum), sorted."""
        return [
            tuple(int(v) for v in row)  # type: ignore[misc]
            for row in self._all(
                f"SELECT s.n_players, t.seat, COUNT(*), {_ones('t.rank = 1')}, SUM(t.score) "
                "FROM seats t JOIN schedule s USING (game_index) "
                "GROUP BY s.n_players, t.seat ORDER BY s.n_players, t.seat"
            )
        ]

    def split_totals(self, by: str) -> list[tuple[Any, str, int, int, int]]:
        """Per (``by`` = ``variant`` or ``n_players``, bot label): (value, label, games,
        wins, score sum)."""
        column = {"variant": "s.variant", "n_players": "s.n_players"}[by]
        labels = self._label_map()
        rows = self._all(
            f"SELECT {column}, t.bot_id, COUNT(*), {_ones('t.rank = 1')}, SUM(t.score) "
            f"FROM seats t JOIN schedule s USING (game_index) GROUP BY {column}, t.bot_id"
        )
        return [(v, labels[int(b)], int(n), int(w), int(sc)) for v, b, n, w, sc in rows]

    def format_totals(self) -> list[tuple[int, str, str, int, int, int]]:
        """Per (player count, variant, bot label): (n_players, variant, label, games, wins,
        score sum); the export's per-format tables."""
        labels = self._label_map()
        rows = self._all(
            f"SELECT s.n_players, s.variant, t.bot_id, COUNT(*), {_ones('t.rank = 1')}, "
            "SUM(t.score) FROM seats t JOIN schedule s USING (game_index) "
            "GROUP BY s.n_players, s.variant, t.bot_id"
        )
        return [
            (int(n), str(v), labels[int(b)], int(g), int(w), int(sc)) for n, v, b, g, w, sc in rows
        ]

    def score_counts(self, label: str) -> list[tuple[int, int, int]]:
        """(n_players, score, games) of one bot's seats in finished games."""
        ids = [i for i, lbl in self._label_map().items() if lbl == label]
        if not ids:
            return []
        stmt = sa.text(
            "SELECT s.n_players, t.score, COUNT(*) FROM seats t JOIN schedule s "
            "USING (game_index) WHERE t.bot_id IN :ids "
            "GROUP BY s.n_players, t.score ORDER BY s.n_players, t.score"
        ).bindparams(sa.bindparam("ids", expanding=True))
        with self._read() as conn:
            rows = conn.execute(stmt, {"ids": ids}).all()
        return [(int(n), int(sc), int(c)) for n, sc, c in rows]

    def load_flagged_games(
        self, ratio: float, min_excess_ms: float
    ) -> list[tuple[int, str, int, float, float, list[tuple[str, float, float]]]]:
        """Games whose bots' wall time per decision is at least ``ratio`` times their CPU
        time and ``min_excess_ms`` more (seats with CPU measured and decisions only):
        (game_index, game_id, decisions, think mean ms, CPU mean ms, [(label, think mean,
        CPU mean) by seat])."""
        labels = self._label_map()
        cpu, _ = self._cpu_columns()
        measured = f"{cpu} IS NOT NULL AND t.decisions > 0"
        with self._read() as conn:
            flagged = conn.execute(
                sa.text(
                    "SELECT x.game_index, s.game_id, x.n, x.wall / x.n, x.busy / x.n FROM ("
                    "SELECT t.game_index, SUM(t.decisions) AS n, "
                    "SUM(t.think_mean_ms * t.decisions) AS wall, "
                    f"SUM({cpu} * t.decisions) AS busy "
                    f"FROM seats t WHERE {measured} GROUP BY t.game_index) AS x "
                    "JOIN schedule s ON s.game_index = x.game_index "
                    "WHERE x.wall / x.n >= :ratio * (x.busy / x.n) "
                    "AND x.wall / x.n - x.busy / x.n >= :excess ORDER BY x.game_index"
                ),
                {"ratio": ratio, "excess": min_excess_ms},
            ).all()
            out = []
            for index, game_id, n, wall, busy in flagged:
                seats = [
                    (labels[int(b)], float(w), float(c))
                    for b, w, c in conn.execute(
                        sa.text(
                            f"SELECT t.bot_id, t.think_mean_ms, {cpu} FROM seats t "
                            f"WHERE t.game_index = :i AND {measured} ORDER BY t.seat"
                        ),
                        {"i": index},
                    )
                ]
                out.append((int(index), str(game_id), int(n), float(wall), float(busy), seats))
        return out

    def game_ids(self) -> Iterator[tuple[int, str]]:
        """(game_index, game_id) of every finished game in schedule order, streamed."""
        for index, game_id in self._stream(
            "SELECT g.game_index, s.game_id FROM games g JOIN schedule s USING (game_index) "
            "ORDER BY g.game_index"
        ):
            yield int(index), str(game_id)

    def fault_log_rows(self) -> Iterator[tuple[Any, ...]]:
        """Faults of finished games with their game ids: (game_index, game_id, label, seat,
        kind, round, forfeit, message), streamed in schedule order."""
        labels = self._label_map()
        rows = self._stream(
            "SELECT f.game_index, s.game_id, f.bot_id, f.seat, f.kind, f.round, f.forfeit, "
            "f.message FROM faults f JOIN schedule s USING (game_index) "
            f"ORDER BY f.game_index, {self._fault_order()}"
        )
        for row in rows:
            yield (row[0], row[1], labels[int(row[2])], *row[3:])

    def first_unfinished(self, start: int = 0) -> int:
        """The lowest scheduled index >= ``start`` without a result (or the next index)."""
        row = self._one(
            "SELECT MIN(game_index) FROM schedule s WHERE game_index >= :start AND NOT EXISTS "
            "(SELECT 1 FROM games g WHERE g.game_index = s.game_index)",
            {"start": start},
        )
        return self.next_index() if row[0] is None else int(row[0])

    # ------------------------------------------------------------------ ratings

    def save_ratings(
        self,
        prefix: int,
        ratings: dict[str, tuple[float, float, int]],
        state: str | None = None,
    ) -> None:
        """Store ratings after every finished game with index < ``prefix``: ``ratings``
        maps labels to (mu, sigma, games) of the bots that changed (others are kept);
        ``state`` is the rating model's state to continue from (one transaction)."""
        ids = {label: bot_id for bot_id, label in self._label_map().items()}
        rows = [
            {"bot_id": ids[b], "mu": mu, "sigma": sigma, "games": n}
            for b, (mu, sigma, n) in ratings.items()
        ]
        meta = {"ratings_prefix": str(prefix)}
        if state is not None:
            meta["ratings_state"] = state
        if self._raw_writer is not None:
            with self._driver_write() as db:
                if rows:
                    db.executemany(_PUT_RATING, rows)
                self.put_meta(**meta)
            return
        with self._write() as conn:
            if rows:
                conn.execute(sa.text(_PUT_RATING), rows)
            self.put_meta(**meta)

    def ratings_state(self) -> str | None:
        """The rating model's own saved state (``IncrementalRatings`` JSON), if any."""
        return self.get_meta("ratings_state")

    def ratings_prefix(self) -> int:
        """The stored ratings cover every game with an index below this."""
        return int(self.get_meta("ratings_prefix") or 0)

    def ratings(self) -> tuple[int, list[StoredRating]]:
        """(prefix, stored ratings): ratings after every game with index < prefix."""
        labels = self._label_map()
        with self._read() as conn:
            prefix = int(self._get_meta(conn, "ratings_prefix") or 0)
            rows = conn.execute(sa.text("SELECT bot_id, mu, sigma, games FROM ratings")).all()
        return prefix, sorted(
            (StoredRating(labels[int(b)], float(m), float(s), int(n)) for b, m, s, n in rows),
            key=lambda r: r.bot,
        )

    # ------------------------------------------------------------------ checks

    def integrity_problems(self) -> list[str]:
        """SQLite's ``PRAGMA integrity_check`` plus: every stored game is scheduled,
        stored once, with one seat row per player."""
        problems = []
        if self.is_sqlite:
            check = self._all("PRAGMA integrity_check")
            if [tuple(row) for row in check] != [("ok",)]:
                problems += [str(row[0]) for row in check]
        orphans = self._one(
            "SELECT COUNT(*) FROM games WHERE game_index NOT IN (SELECT game_index FROM schedule)"
        )[0]
        if orphans:
            problems.append(f"{orphans} stored games are not in the schedule")
        bad_seats = self._all(
            "SELECT g.game_index FROM games g JOIN schedule s USING (game_index) "
            "LEFT JOIN seats t USING (game_index) GROUP BY g.game_index "
            "HAVING COUNT(t.seat) != MAX(s.n_players)"
        )
        if bad_seats:
            problems.append(f"games with a wrong number of seat rows: {[r[0] for r in bad_seats]}")
        bad_lineups = self._all(
            "SELECT s.game_index FROM schedule s LEFT JOIN lineup l USING (game_index) "
            "GROUP BY s.game_index HAVING COUNT(l.seat) != MAX(s.n_players)"
        )
        if bad_lineups:
            problems.append(f"games with a wrong line-up: {[r[0] for r in bad_lineups][:20]}")
        orphan_faults = self._one(
            "SELECT COUNT(*) FROM faults WHERE game_index NOT IN (SELECT game_index FROM games)"
        )[0]
        if orphan_faults:
            problems.append(f"{orphan_faults} fault rows of games that are not stored")
        stray = self._one(
            "SELECT COUNT(*) FROM seats WHERE game_index NOT IN (SELECT game_index FROM games)"
        )[0]
        if stray:
            problems.append(f"{stray} seat rows of games that are not stored")
        return problems


def iter_records(store: Store, indices: Iterable[int]) -> Iterable[tuple[int, bytes]]:
    for index in indices:
        data = store.record_json(index)
        if data is not None:
            yield index, data


# ---------------------------------------------------------------------- migration
# Schemas 1 and 2 only ever were SQLite files: their migrations are SQLite's own SQL, on
# the file's driver connection.


def migrate_v1(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2 in one transaction: bots get a ``bots`` table (version
    ``LEGACY_VERSION``: schema 1 did not record versions), seatings move to ``lineup``,
    seats and faults refer to bot ids. A failure leaves the schema-1 store untouched."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for table in ("schedule", "seats", "faults"):
            db.execute(f"ALTER TABLE {table} RENAME TO {table}_v1")
        db.execute("DROP INDEX IF EXISTS seats_bot")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        names: set[str] = set()
        for (bots,) in db.execute("SELECT bots FROM schedule_v1"):
            names.update(json.loads(bots))
        names.update(str(bot) for (bot,) in db.execute("SELECT DISTINCT bot FROM seats_v1"))
        ids: dict[str, int] = {}
        for name in sorted(names):
            cur = db.execute(
                "INSERT INTO bots(name, version) VALUES (?, ?)", (name, LEGACY_VERSION)
            )
            ids[name] = int(cur.lastrowid or 0)
        db.execute(
            "INSERT INTO schedule SELECT game_index, game_id, n_players, variant, seed_index, "
            "deal_seed, rotation FROM schedule_v1"
        )
        rows = db.execute("SELECT game_index, bots FROM schedule_v1").fetchall()
        db.executemany(
            "INSERT INTO lineup VALUES (?, ?, ?)",
            [
                (index, seat, ids[name])
                for index, bots in rows
                for seat, name in enumerate(json.loads(bots))
            ],
        )
        for table in ("seats", "faults"):
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table}_v1)")]
            select = ", ".join(
                "(SELECT bot_id FROM bots WHERE name = bot)" if c == "bot" else c for c in columns
            )
            into = ", ".join("bot_id" if c == "bot" else c for c in columns)
            db.execute(
                f"INSERT INTO {table}({into}) SELECT {select} FROM {table}_v1 ORDER BY rowid"
            )
        for table in ("schedule_v1", "seats_v1", "faults_v1"):
            db.execute(f"DROP TABLE {table}")
        identity = db.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        if identity is not None:
            data = json.loads(identity[0])
            data["bots"] = [[name, LEGACY_VERSION] for name in data.get("bots", [])]
            # what schema-1 tournaments were: round-robins with rotated seats
            data.setdefault("schedule", "round-robin")
            data.setdefault("challengers", [])
            data.setdefault("games", None)
            data.setdefault("seating", "rotations")
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'identity'",
                (json.dumps(data, sort_keys=True),),
            )
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        db.commit()
    except BaseException:
        db.rollback()
        raise


def migrate_v2(db: sqlite3.Connection) -> None:
    """Schema 2 -> 3 in one transaction: seats get nullable CPU-time columns (old rows keep
    NULL: not measured), and the stored definition names the clock its games were played
    on - wall clocks, the only ones before schema 3 - so a resume keeps them."""
    db.execute("BEGIN IMMEDIATE")
    try:
        present = {str(r[1]) for r in db.execute("PRAGMA table_info(seats)")}
        for column in _CPU_COLUMNS:
            if column not in present:
                db.execute(f"ALTER TABLE seats ADD COLUMN {column} REAL")
        for key in ("identity", "config"):
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is None:
                continue
            data = json.loads(row[0])
            time_control = data.get("time") if isinstance(data, dict) else None
            if isinstance(time_control, dict) and "clock" not in time_control:
                time_control.update(clock="wall", wall_ceiling=WALL_CEILING)
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = ?",
                    (json.dumps(data, sort_keys=True), key),
                )
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        db.commit()
    except BaseException:
        db.rollback()
        raise


def stored_schema_version(path: Path) -> str | None:
    """The schema version written in a store file (None: not a tournament store)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def upgrade_store(outdir: Path) -> bool:
    """Upgrade a tournament folder's store in place, keeping a copy of the old file
    (``tournament.sqlite.v1``, ``.v2``). Returns False if it was already current."""
    path = store_file(Path(outdir))
    if not path.is_file():
        raise StoreError(f"{outdir}: no tournament store here ({STORE_NAME} is missing)")
    version = stored_schema_version(path)
    if version == str(SCHEMA_VERSION):
        return False
    if version not in ("1", "2"):
        raise StoreError(f"{path}: not a tournament store this arena can upgrade ({version})")
    backup = path.with_name(f"{path.name}.v{version}")
    try:
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        with contextlib.closing(src), contextlib.closing(sqlite3.connect(backup)) as dst:
            src.backup(dst)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(explain(exc, str(backup)), resumable=True) from None
    Store(path).close()  # a writer's open migrates, under the lock
    return True
