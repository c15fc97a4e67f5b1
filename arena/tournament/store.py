"""The results store: one SQLite file (WAL) per tournament, and the only code that speaks SQL.

Every query of a tournament's data lives here: the schedule, results, game records, the
progress tally, the report's snapshot, bots and their versions, stored ratings. Readers
(reports, replay, a web viewer) open it read-only while a tournament runs; one process at
a time writes (a lock file names it).

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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.play.job import Announcement, GameResult, ScheduledGame
from arena.referee.clock import WALL_CEILING

SCHEMA_VERSION = 3
STORE_NAME = "tournament.sqlite"
LOCK_NAME = "tournament.lock"
LEGACY_VERSION = "v1-unknown"
"""The version of bots of a schema-1 store, which did not record versions."""

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

_LABEL = (
    "CASE WHEN (SELECT COUNT(*) FROM bots b2 WHERE b2.name = b.name) > 1 "
    "THEN b.name || '@' || b.version ELSE b.name END"
)
"""How a bot is shown and keyed in ratings and reports: its name, or ``name@version`` when
the store holds more than one version of that name (never silently mixed)."""


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


class StoreError(ArenaError):
    """A store that cannot be used or written, with a message (and maybe a hint).

    ``resumable``: the store is consistent and the run can be resumed once the cause is
    fixed (a full disk, a read-only folder); not for a damaged store."""

    def __init__(self, message: str, *, hint: str | None = None, resumable: bool = False):
        super().__init__(message, hint=hint)
        self.resumable = resumable


class StoreLocked(StoreError):
    """Another process is writing this store."""


def store_file(outdir: Path) -> Path:
    """The store file of a tournament folder (or the file itself if given one)."""
    return outdir if outdir.is_file() else outdir / STORE_NAME


def _explain(exc: BaseException, path: Path, doing: str = "store error") -> str:
    """A user's description of a failed store operation (by errno, or SQLite's message)."""
    text = str(exc)
    low = text.lower() if isinstance(exc, sqlite3.Error) else ""
    code = exc.errno if isinstance(exc, OSError) else None
    if code == errno.ENOSPC or "disk is full" in low:
        return f"{path}: the disk is full ({text}); free some space"
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or any(
        s in low for s in ("readonly database", "read-only", "unable to open", "disk i/o error")
    ):
        return f"{path}: cannot write here ({text}); check the folder is writable and mounted"
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return (
            f"{path}: not a usable tournament store: damaged ({text}); start afresh with "
            f"another --out, or try to rescue it with: sqlite3 {path} .recover"
        )
    return f"{path}: {doing} ({text})"


class Store:
    """Access to one tournament's SQLite file. ``readonly`` opens never write or lock."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._lock: int | None = None
        self._labels: dict[int, str] | None = None
        self._has_replays: bool | None = None
        try:
            if readonly:
                if not self.path.exists():
                    raise StoreError(f"{self.path}: no tournament store here")
                uri = f"file:{self.path}?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, timeout=10)
                self._check_version(writable=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._take_lock()
                self.db = sqlite3.connect(self.path, timeout=10)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._check_version(writable=True)
                self.db.executescript(SCHEMA)
                if self.get_meta("schema_version") is None:
                    with self.db:
                        self.set_meta("schema_version", str(SCHEMA_VERSION))
        except StoreError:
            self._release_lock()
            raise
        except (sqlite3.Error, OSError) as exc:
            self._release_lock()
            message = _explain(exc, self.path, "not a usable tournament store")
            raise StoreError(message, resumable=not message.endswith(".recover")) from None

    # ------------------------------------------------------------------ lifecycle

    def _take_lock(self) -> None:
        """One writer per store: an flock on ``tournament.lock`` holding the writer's pid
        (released by the kernel when the process dies, kill -9 included)."""
        lock_path = self.path.parent / LOCK_NAME
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
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

    def _release_lock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock, 0)
            os.close(self._lock)
            self._lock = None

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self.db.close()
        self._release_lock()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction; failures become a ``StoreError`` (the transaction is rolled
        back, so the store stays consistent)."""
        try:
            with self.db:
                yield self.db
        except sqlite3.IntegrityError:
            raise
        except (sqlite3.Error, OSError) as exc:
            self._labels = None
            message = _explain(exc, self.path)
            raise StoreError(message, resumable="damaged" not in message) from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Every read inside sees one consistent state (one read transaction, WAL)."""
        self.db.execute("BEGIN")
        try:
            yield self
        finally:
            self.db.rollback()

    # ------------------------------------------------------------------ versions

    def _check_version(self, writable: bool) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables:
            if "schedule" in tables or not writable:
                if not writable and not tables:
                    raise StoreError(f"{self.path}: not a usable tournament store (empty)")
                if tables:
                    raise StoreError(f"{self.path}: not a usable tournament store (no meta table)")
            return
        found = self.get_meta("schema_version")
        if found is None or found == str(SCHEMA_VERSION):
            return
        if found == "2":
            if writable:
                migrate_v2(self.db)
            return  # read-only, it reads as a store whose CPU times were not measured
        if found == "1":
            if not writable:
                raise StoreError(
                    f"{self.path}: written by an older arena (store schema 1, this arena "
                    f"reads {SCHEMA_VERSION}); upgrade it in place with: arena upgrade "
                    f"{self.path.parent}"
                )
            migrate_v1(self.db)
            migrate_v2(self.db)
            return
        raise StoreError(
            f"{self.path}: store schema version {found}, this arena reads {SCHEMA_VERSION} "
            "(written by a newer arena? use that version)"
        )

    # ------------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def columns(self, table: str) -> set[str]:
        """The columns a table has (a schema-2 store opened read-only lacks newer ones)."""
        return {str(row[1]) for row in self.db.execute(f"PRAGMA table_info({table})")}

    def set_meta(self, key: str, value: str) -> None:
        """Inside a caller's transaction (``with store.db:``) or auto-committed."""
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def put_meta(self, **values: str) -> None:
        """Set several meta keys in one transaction."""
        with self._write() as db:
            for key, value in values.items():
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ bots

    def register_bot(self, name: str, version: str) -> int:
        """The ``bot_id`` of ``(name, version)``, added if new."""
        row = self.db.execute(
            "SELECT bot_id FROM bots WHERE name = ? AND version = ?", (name, version)
        ).fetchone()
        if row is not None:
            return int(row[0])
        with self._write() as db:
            cur = db.execute("INSERT INTO bots(name, version) VALUES (?, ?)", (name, version))
        self._labels = None
        return int(cur.lastrowid or 0)

    def adopt_versions(self, versions: dict[str, str]) -> None:
        """Give the bots of a migrated schema-1 store (versions not recorded) the
        versions found now."""
        with self._write() as db:
            for name, version in versions.items():
                db.execute(
                    "UPDATE bots SET version = ? WHERE name = ? AND version = ?",
                    (version, name, LEGACY_VERSION),
                )
        self._labels = None

    def bots(self) -> list[BotEntry]:
        rows = self.db.execute(
            f"SELECT b.bot_id, b.name, b.version, {_LABEL} FROM bots b ORDER BY b.name, b.bot_id"
        ).fetchall()
        return [BotEntry(int(i), str(n), str(v), str(lbl)) for i, n, v, lbl in rows]

    def versions(self, name: str) -> list[str]:
        """Every stored version of a bot name, oldest first."""
        rows = self.db.execute(
            "SELECT version FROM bots WHERE name = ? ORDER BY bot_id", (name,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def announcements(self) -> dict[str, Announcement]:
        """Per bot label, the first ``ready`` its version sent (name, author, version);
        empty for a store from before they were recorded, opened read-only."""
        has_table = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'announced'"
        ).fetchone()
        if has_table is None:
            return {}
        labels = self._label_map()
        rows = self.db.execute("SELECT bot_id, name, author, version FROM announced").fetchall()
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
                lineup.append((g.game_index, seat, ids[key]))
            rows.append((g, lineup))
        new = 0
        with self._write() as db:
            for g, lineup in rows:
                cur = db.execute(
                    "INSERT OR IGNORE INTO schedule VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        g.game_index,
                        g.game_id,
                        g.n_players,
                        g.variant,
                        g.seed_index,
                        g.deal_seed,
                        g.rotation,
                    ),
                )
                if cur.rowcount:
                    new += 1
                    db.executemany("INSERT INTO lineup VALUES (?, ?, ?)", lineup)
            for name, value in (state or {}).items():
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (name, value))
        return new

    save_schedule = schedule_games
    """Older name of :meth:`schedule_games`."""

    def has_game_id(self, game_id: str) -> bool:
        row = self.db.execute("SELECT 1 FROM schedule WHERE game_id = ?", (game_id,)).fetchone()
        return row is not None

    def scheduled_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM schedule").fetchone()[0])

    def finished_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    def fingerprint(self) -> str:
        """Changes whenever a game is scheduled or finished: whether a report is current."""
        row = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM schedule), COUNT(*), MAX(finished_at) FROM games"
        ).fetchone()
        return f"{row[0]}:{row[1]}:{row[2]}"

    def next_index(self) -> int:
        row = self.db.execute("SELECT MAX(game_index) FROM schedule").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def _games_from(self, sql: str, params: Sequence[Any] = ()) -> Iterator[ScheduledGame]:
        """Scheduled games (streamed) from a query selecting schedule rows ordered by index."""
        cur = self.db.execute(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, "
            "s.deal_seed, s.rotation, "
            "(SELECT json_group_array(json_array(b.name, b.version)) FROM "
            " (SELECT bot_id FROM lineup l WHERE l.game_index = s.game_index ORDER BY seat) x "
            " JOIN bots b USING (bot_id)) "
            f"FROM schedule s {sql} ORDER BY s.game_index",
            params,
        )
        for row in cur:
            lineup = json.loads(row[7])
            yield ScheduledGame(
                int(row[0]),
                str(row[1]),
                int(row[2]),
                str(row[3]),
                int(row[4]),
                int(row[5]),
                int(row[6]),
                tuple(str(n) for n, _ in lineup),
                tuple(str(v) for _, v in lineup),
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
        return next(self._games_from("WHERE s.game_index = ?", (game_index,)), None)

    def finished_indices(self) -> set[int]:
        """Indices of finished games (small stores and tests; large ones stream instead)."""
        return {int(r[0]) for r in self.db.execute("SELECT game_index FROM games")}

    def lineup_counts(self, n_players: int | None = None) -> dict[tuple[str, str], int]:
        """Scheduled games per (name, version), optionally for one player count."""
        sql = (
            "SELECT b.name, b.version, COUNT(*) FROM lineup l JOIN bots b USING (bot_id) "
            "JOIN schedule s USING (game_index) "
        )
        params: tuple[Any, ...] = ()
        if n_players is not None:
            sql += "WHERE s.n_players = ? "
            params = (n_players,)
        rows = self.db.execute(sql + "GROUP BY l.bot_id", params).fetchall()
        return {(str(n), str(v)): int(c) for n, v, c in rows}

    # ------------------------------------------------------------------ results

    def add_result(self, result: GameResult) -> bool:
        """Write one finished game atomically; False if it was already stored (a result
        delivered twice, e.g. by a retried distributed worker, is stored once)."""
        lineup = dict(
            self.db.execute(
                "SELECT seat, bot_id FROM lineup WHERE game_index = ?", (result.game_index,)
            ).fetchall()
        )
        if len(lineup) != len(result.seats):
            raise StoreError(
                f"{self.path}: result of game {result.game_index} does not match the schedule "
                f"({len(result.seats)} seats, {len(lineup)} scheduled)"
            )
        record = gzip.compress(result.record_json, mtime=0)
        with self._write() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO games VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    result.game_index,
                    time.time(),
                    result.duration_s,
                    result.end_reason,
                    result.rounds,
                    result.worker,
                    record,
                ),
            )
            if not cur.rowcount:
                return False
            db.executemany(
                "INSERT INTO seats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        result.game_index,
                        s.seat,
                        lineup[s.seat],
                        s.score,
                        s.round_score,
                        s.bonus_rows,
                        s.bonus_columns,
                        s.bonus_colours,
                        s.rank,
                        s.full_rows,
                        int(s.forfeit),
                        s.fault,
                        s.decisions,
                        s.think_mean_ms,
                        s.think_p95_ms,
                        s.think_max_ms,
                        s.cpu_mean_ms,
                        s.cpu_max_ms,
                    )
                    for s in result.seats
                ],
            )
            db.executemany(
                "INSERT INTO faults VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        result.game_index,
                        f.seat,
                        lineup[f.seat],
                        f.kind,
                        f.round,
                        f.message,
                        int(f.forfeit),
                    )
                    for f in result.faults
                ],
            )
            if result.replay_json is not None:
                db.execute(
                    "INSERT INTO replays VALUES (?, ?)",
                    (result.game_index, gzip.compress(result.replay_json, 6, mtime=0)),
                )
            db.executemany(
                "INSERT OR IGNORE INTO announced VALUES (?, ?, ?, ?)",
                [
                    (lineup[seat], a.name, a.author, a.version)
                    for seat, a in enumerate(result.announced)
                    if a is not None and seat in lineup
                ],
            )
        return True

    def record_json(self, game_index: int) -> bytes | None:
        row = self.db.execute(
            "SELECT record FROM games WHERE game_index = ?", (game_index,)
        ).fetchone()
        return None if row is None else gzip.decompress(row[0])

    def records(self, game_ids: Iterable[str] = ()) -> Iterator[tuple[str, bytes]]:
        """(game id, record JSON) of finished games in schedule order (streamed); only
        ``game_ids`` if given."""
        wanted = list(game_ids)
        sql = "SELECT s.game_id, g.record FROM games g JOIN schedule s USING (game_index)"
        if wanted:
            sql += f" WHERE s.game_id IN ({','.join('?' * len(wanted))})"
        for game_id, blob in self.db.execute(sql + " ORDER BY g.game_index", wanted):
            yield str(game_id), gzip.decompress(blob)

    def replay_source(self, game_index: int) -> tuple[bytes, bytes | None] | None:
        """(record JSON, stored replay frames JSON or None) of a finished game; None if it
        is not finished. A store from before frames were stored has none."""
        if self._has_replays is None:
            self._has_replays = "replays" in self.tables()
        sql = "SELECT g.record, " + (
            "(SELECT r.frames FROM replays r WHERE r.game_index = g.game_index)"
            if self._has_replays
            else "NULL"
        )
        row = self.db.execute(
            sql + " FROM games g WHERE g.game_index = ?", (game_index,)
        ).fetchone()
        if row is None:
            return None
        record, frames = row
        return gzip.decompress(record), None if frames is None else gzip.decompress(frames)

    def tables(self) -> set[str]:
        """The tables this store has (one opened read-only may predate newer ones)."""
        return {str(r[0]) for r in self.db.execute("SELECT name FROM sqlite_master")}

    def game_listing(self) -> Iterator[tuple[Any, ...]]:
        """Finished games for listings, streamed in schedule order: (game_index, game_id,
        n_players, variant, end_reason, rounds, labels by seat, scores by seat, ranks by
        seat); aggregated in SQL, no record read."""
        labels = self._label_map()
        cur = self.db.execute(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason, g.rounds, "
            "(SELECT group_concat(bot_id) || ';' || group_concat(score) || ';' || "
            "group_concat(rank) FROM (SELECT bot_id, score, rank FROM seats t "
            "WHERE t.game_index = s.game_index ORDER BY seat)) "
            "FROM games g JOIN schedule s USING (game_index) ORDER BY g.game_index"
        )
        for *head, seats in cur:
            bots, scores, ranks = [*str(seats or ";;").split(";"), "", ""][:3]
            yield (
                *head,
                tuple(labels[int(b)] for b in bots.split(",") if b),
                tuple(int(v) for v in scores.split(",") if v),
                tuple(int(v) for v in ranks.split(",") if v),
            )

    def game_index_of(self, game_id: str) -> int | None:
        row = self.db.execute(
            "SELECT game_index FROM schedule WHERE game_id = ?", (game_id,)
        ).fetchone()
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ reads for people

    def totals(self) -> Totals:
        """Counts and per-bot (games, wins) of finished games, aggregated in SQL."""
        totals = Totals(scheduled=self.scheduled_count(), finished=self.finished_count())
        labels = self._label_map()
        for bot_id, games, wins in self.db.execute(
            "SELECT bot_id, COUNT(*), SUM(rank = 1) FROM seats GROUP BY bot_id"
        ):
            totals.tallies[labels[int(bot_id)]] = Tally(int(games), int(wins))
        return totals

    def bot_stats(self) -> list[BotStats]:
        """Per-bot totals over finished games (aggregated in SQL)."""
        labels = self._label_map()
        faults = dict(
            self.db.execute("SELECT bot_id, COUNT(*) FROM faults GROUP BY bot_id").fetchall()
        )
        rows = self.db.execute(
            "SELECT bot_id, COUNT(*), SUM(rank = 1), AVG(score), SUM(forfeit) FROM seats "
            "GROUP BY bot_id"
        ).fetchall()
        return sorted(
            (
                BotStats(labels[int(b)], int(n), int(w), float(s), int(f), int(faults.get(b, 0)))
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
        params: list[Any] = []
        if bot is not None:
            ids = [i for i, label in self._label_map().items() if label == bot]
            if not ids:
                return []
            where.append(
                "EXISTS (SELECT 1 FROM lineup l WHERE l.game_index = s.game_index AND "
                f"l.bot_id IN ({','.join('?' * len(ids))}))"
            )
            params += ids
        if n_players is not None:
            where.append("s.n_players = ?")
            params.append(n_players)
        if variant is not None:
            where.append("s.variant = ?")
            params.append(variant)
        if finished is not None:
            where.append(
                ("" if finished else "NOT ") + "EXISTS (SELECT 1 FROM games g WHERE "
                "g.game_index = s.game_index)"
            )
        sql = (
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason "
            "FROM schedule s LEFT JOIN games g USING (game_index)"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY s.game_index LIMIT ? OFFSET ?"
        )
        rows = self.db.execute(sql, [*params, limit, offset]).fetchall()
        return [self._summary(*row) for row in rows]

    def game(self, game_id: str) -> GameSummary | None:
        row = self.db.execute(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, g.end_reason "
            "FROM schedule s LEFT JOIN games g USING (game_index) WHERE s.game_id = ?",
            (game_id,),
        ).fetchone()
        return None if row is None else self._summary(*row)

    def _summary(
        self, index: int, game_id: str, n: int, variant: str, end: str | None
    ) -> GameSummary:
        labels = self._label_map()
        lineup = [
            labels[int(b)]
            for (b,) in self.db.execute(
                "SELECT bot_id FROM lineup WHERE game_index = ? ORDER BY seat", (index,)
            )
        ]
        seats = self.db.execute(
            "SELECT score, rank FROM seats WHERE game_index = ? ORDER BY seat", (index,)
        ).fetchall()
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
        cur = self.db.execute(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, s.deal_seed,"
            " s.rotation, (SELECT group_concat(bot_id) FROM (SELECT bot_id FROM lineup l "
            " WHERE l.game_index = s.game_index ORDER BY seat)) FROM schedule s "
            "ORDER BY s.game_index"
        )
        for *head, lineup in cur:
            yield (*head, tuple(labels[int(b)] for b in str(lineup or "").split(",") if b))

    def game_rows(self) -> Iterator[tuple[Any, ...]]:
        """Finished games: the schedule row's fields then (finished_at, duration_s,
        end_reason, rounds, worker), streamed in schedule order."""
        labels = self._label_map()
        cur = self.db.execute(
            "SELECT s.game_index, s.game_id, s.n_players, s.variant, s.seed_index, s.deal_seed,"
            " s.rotation, (SELECT group_concat(bot_id) FROM (SELECT bot_id FROM lineup l "
            " WHERE l.game_index = s.game_index ORDER BY seat)), "
            "g.finished_at, g.duration_s, g.end_reason, g.rounds, g.worker "
            "FROM games g JOIN schedule s USING (game_index) ORDER BY g.game_index"
        )
        for row in cur:
            bots = tuple(labels[int(b)] for b in str(row[7] or "").split(",") if b)
            yield (*row[:7], bots, *row[8:])

    def seat_rows(self) -> Iterator[tuple[Any, ...]]:
        """Seats of finished games in schedule order, streamed: (game_index, seat, label,
        score, round_score, bonus_rows, bonus_columns, bonus_colours, rank, full_rows,
        forfeit, fault, decisions, think_mean_ms, think_p95_ms, think_max_ms, cpu_mean_ms,
        cpu_max_ms, n_players, variant, seed_index, rotation); CPU times are None where
        not measured (a schema-2 store read without upgrading: NULL)."""
        labels = self._label_map()
        present = self.columns("seats")
        cpu = ", ".join(f"t.{c}" if c in present else "NULL" for c in _CPU_COLUMNS)
        cur = self.db.execute(
            "SELECT t.game_index, t.seat, t.bot_id, t.score, t.round_score, t.bonus_rows, "
            "t.bonus_columns, t.bonus_colours, t.rank, t.full_rows, t.forfeit, t.fault, "
            f"t.decisions, t.think_mean_ms, t.think_p95_ms, t.think_max_ms, {cpu}, "
            "s.n_players, s.variant, s.seed_index, s.rotation "
            "FROM seats t JOIN schedule s USING (game_index) ORDER BY t.game_index, t.seat"
        )
        for row in cur:
            yield (row[0], row[1], labels[int(row[2])], *row[3:])

    def fault_rows(self) -> Iterator[tuple[Any, ...]]:
        """Faults of finished games: (game_index, seat, label, kind, round, message,
        forfeit, n_players, variant), streamed in schedule order."""
        labels = self._label_map()
        cur = self.db.execute(
            "SELECT f.game_index, f.seat, f.bot_id, f.kind, f.round, f.message, f.forfeit, "
            "s.n_players, s.variant FROM faults f JOIN schedule s USING (game_index) "
            "ORDER BY f.game_index, f.rowid"
        )
        for row in cur:
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
        cur = self.db.execute(
            "SELECT game_index, group_concat(bot_id), group_concat(rank) FROM "
            "(SELECT game_index, bot_id, rank FROM seats WHERE game_index >= ? AND "
            "game_index < ? ORDER BY game_index, seat) GROUP BY game_index ORDER BY game_index",
            (start, stop if stop is not None else 2**62),
        )
        for index, bots, ranks in cur:
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
        ids = self.db.execute(
            "SELECT DISTINCT bot_id FROM lineup UNION SELECT DISTINCT bot_id FROM seats"
        ).fetchall()
        return sorted({labels[int(b)] for (b,) in ids})

    def rating_seats(self, chunk: int = 50_000) -> Iterator[list[tuple[int, int, int, int]]]:
        """(game_index, seat, bot_id, rank) of every seat of a finished game, in schedule
        order, in lists of ``chunk`` rows (the ratings turn each into compact columns)."""
        cur = self.db.execute(
            "SELECT game_index, seat, bot_id, rank FROM seats ORDER BY game_index, seat"
        )
        while rows := cur.fetchmany(chunk):
            yield rows

    def finished_frontier(self) -> int | None:
        """The highest scheduled index up to which every scheduled game has finished (None
        if the first is still to play): how far stored ratings can safely advance."""
        first = self.first_unfinished()
        row = self.db.execute(
            "SELECT MAX(game_index) FROM schedule WHERE game_index < ?", (first,)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    def finished_index_chunks(self, chunk: int = 50_000) -> Iterator[list[tuple[int]]]:
        """Finished games' schedule indices, ascending, in lists of ``chunk`` rows."""
        cur = self.db.execute("SELECT game_index FROM games ORDER BY game_index")
        while rows := cur.fetchmany(chunk):
            yield rows

    def game_counts(self, column: str) -> list[tuple[Any, int]]:
        """Finished games per value of ``column`` (``n_players``, ``variant`` or
        ``end_reason``), sorted by value."""
        source = {"n_players": "s.n_players", "variant": "s.variant", "end_reason": "g.end_reason"}
        key = source[column]
        return [
            (value, int(n))
            for value, n in self.db.execute(
                f"SELECT {key}, COUNT(*) FROM games g JOIN schedule s USING (game_index) "
                f"GROUP BY {key} ORDER BY {key}"
            )
        ]

    def game_times(self) -> tuple[float | None, float | None, float | None]:
        """(mean duration_s, first finished_at, last finished_at) of the finished games."""
        row = self.db.execute(
            "SELECT AVG(duration_s), MIN(finished_at), MAX(finished_at) FROM games"
        ).fetchone()
        return tuple(None if v is None else float(v) for v in row)  # type: ignore[return-value]

    def bot_totals(self) -> list[tuple[Any, ...]]:
        """Per bot label, over its seats in finished games: (label, games, wins, score sum,
        margin sum, margins counted, forfeits, decisions, think total ms, think p95 total,
        think max ms, CPU total ms, decisions with CPU measured). A margin is the game's
        best first-place score minus the seat's score."""
        labels = self._label_map()
        cpu, _ = self._cpu_columns()
        rows = self.db.execute(
            "WITH best AS (SELECT game_index, MAX(score) AS top FROM seats WHERE rank = 1 "
            "GROUP BY game_index) "
            "SELECT t.bot_id, COUNT(*), SUM(t.rank = 1), SUM(t.score), SUM(best.top - t.score),"
            " COUNT(best.top), SUM(t.forfeit), SUM(t.decisions), "
            "SUM(t.think_mean_ms * t.decisions), SUM(t.think_p95_ms * t.decisions), "
            f"MAX(t.think_max_ms), TOTAL(CASE WHEN {cpu} IS NULL THEN 0.0 "
            f"ELSE {cpu} * t.decisions END), TOTAL(CASE WHEN {cpu} IS NULL THEN 0 "
            "ELSE t.decisions END) "
            "FROM seats t LEFT JOIN best USING (game_index) GROUP BY t.bot_id"
        ).fetchall()
        return [(labels[int(row[0])], *row[1:]) for row in rows]

    def fault_totals(self) -> list[tuple[str, str, int]]:
        """(bot label, fault kind, count) over every fault of a finished game."""
        labels = self._label_map()
        rows = self.db.execute("SELECT bot_id, kind, COUNT(*) FROM faults GROUP BY bot_id, kind")
        return [(labels[int(b)], str(k), int(n)) for b, k, n in rows]

    def pair_totals(self) -> list[tuple[str, str, int, int, int, int]]:
        """Per ordered pair of different bots that shared a finished game: (bot, opponent,
        games, ahead, behind, ties); ahead = a strictly better rank."""
        labels = self._label_map()
        rows = self.db.execute(
            "SELECT a.bot_id, b.bot_id, COUNT(*), SUM(a.rank < b.rank), SUM(a.rank > b.rank), "
            "SUM(a.rank = b.rank) FROM seats a JOIN seats b ON a.game_index = b.game_index "
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
            for row in self.db.execute(
                "SELECT s.n_players, t.seat, COUNT(*), SUM(t.rank = 1), SUM(t.score) "
                "FROM seats t JOIN schedule s USING (game_index) "
                "GROUP BY s.n_players, t.seat ORDER BY s.n_players, t.seat"
            )
        ]

    def split_totals(self, by: str) -> list[tuple[Any, str, int, int, int]]:
        """Per (``by`` = ``variant`` or ``n_players``, bot label): (value, label, games,
        wins, score sum)."""
        column = {"variant": "s.variant", "n_players": "s.n_players"}[by]
        labels = self._label_map()
        rows = self.db.execute(
            f"SELECT {column}, t.bot_id, COUNT(*), SUM(t.rank = 1), SUM(t.score) "
            f"FROM seats t JOIN schedule s USING (game_index) GROUP BY {column}, t.bot_id"
        )
        return [(v, labels[int(b)], int(n), int(w), int(sc)) for v, b, n, w, sc in rows]

    def score_counts(self, label: str) -> list[tuple[int, int, int]]:
        """(n_players, score, games) of one bot's seats in finished games."""
        ids = [i for i, lbl in self._label_map().items() if lbl == label]
        return [
            (int(n), int(sc), int(c))
            for n, sc, c in self.db.execute(
                "SELECT s.n_players, t.score, COUNT(*) FROM seats t JOIN schedule s "
                f"USING (game_index) WHERE t.bot_id IN ({','.join('?' * len(ids))}) "
                "GROUP BY s.n_players, t.score ORDER BY s.n_players, t.score",
                ids,
            )
        ]

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
        flagged = self.db.execute(
            "SELECT game_index, game_id, n, wall / n, busy / n FROM ("
            "SELECT t.game_index, SUM(t.decisions) AS n, "
            f"SUM(t.think_mean_ms * t.decisions) AS wall, SUM({cpu} * t.decisions) AS busy "
            f"FROM seats t WHERE {measured} GROUP BY t.game_index) "
            "JOIN schedule USING (game_index) "
            "WHERE wall / n >= ? * (busy / n) AND wall / n - busy / n >= ? ORDER BY game_index",
            (ratio, min_excess_ms),
        ).fetchall()
        out = []
        for index, game_id, n, wall, busy in flagged:
            seats = [
                (labels[int(b)], float(w), float(c))
                for b, w, c in self.db.execute(
                    f"SELECT t.bot_id, t.think_mean_ms, {cpu} FROM seats t "
                    f"WHERE t.game_index = ? AND {measured} ORDER BY t.seat",
                    (index,),
                )
            ]
            out.append((int(index), str(game_id), int(n), float(wall), float(busy), seats))
        return out

    def game_ids(self) -> Iterator[tuple[int, str]]:
        """(game_index, game_id) of every finished game in schedule order, streamed."""
        yield from self.db.execute(
            "SELECT g.game_index, s.game_id FROM games g JOIN schedule s USING (game_index) "
            "ORDER BY g.game_index"
        )

    def fault_log_rows(self) -> Iterator[tuple[Any, ...]]:
        """Faults of finished games with their game ids: (game_index, game_id, label, seat,
        kind, round, forfeit, message), streamed in schedule order."""
        labels = self._label_map()
        cur = self.db.execute(
            "SELECT f.game_index, s.game_id, f.bot_id, f.seat, f.kind, f.round, f.forfeit, "
            "f.message FROM faults f JOIN schedule s USING (game_index) "
            "ORDER BY f.game_index, f.rowid"
        )
        for row in cur:
            yield (row[0], row[1], labels[int(row[2])], *row[3:])

    def first_unfinished(self, start: int = 0) -> int:
        """The lowest scheduled index >= ``start`` without a result (or the next index)."""
        row = self.db.execute(
            "SELECT MIN(game_index) FROM schedule s WHERE game_index >= ? AND NOT EXISTS "
            "(SELECT 1 FROM games g WHERE g.game_index = s.game_index)",
            (start,),
        ).fetchone()
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
        with self._write() as db:
            db.executemany(
                "INSERT OR REPLACE INTO ratings VALUES (?, ?, ?, ?)",
                [(ids[b], mu, sigma, n) for b, (mu, sigma, n) in ratings.items()],
            )
            db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('ratings_prefix', ?)",
                (str(prefix),),
            )
            if state is not None:
                db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('ratings_state', ?)",
                    (state,),
                )

    def ratings_state(self) -> str | None:
        """The rating model's own saved state (``IncrementalRatings`` JSON), if any."""
        return self.get_meta("ratings_state")

    def ratings_prefix(self) -> int:
        """The stored ratings cover every game with an index below this."""
        return int(self.get_meta("ratings_prefix") or 0)

    def ratings(self) -> tuple[int, list[StoredRating]]:
        """(prefix, stored ratings): ratings after every game with index < prefix."""
        labels = self._label_map()
        prefix = int(self.get_meta("ratings_prefix") or 0)
        rows = self.db.execute("SELECT bot_id, mu, sigma, games FROM ratings").fetchall()
        return prefix, sorted(
            (StoredRating(labels[int(b)], float(m), float(s), int(n)) for b, m, s, n in rows),
            key=lambda r: r.bot,
        )

    # ------------------------------------------------------------------ checks

    def integrity_problems(self) -> list[str]:
        """``PRAGMA integrity_check`` plus: every stored game is scheduled, stored once,
        with one seat row per player."""
        problems = []
        check = self.db.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            problems += [str(row[0]) for row in check]
        orphans = self.db.execute(
            "SELECT COUNT(*) FROM games WHERE game_index NOT IN (SELECT game_index FROM schedule)"
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} stored games are not in the schedule")
        bad_seats = self.db.execute(
            "SELECT g.game_index FROM games g JOIN schedule s USING (game_index) "
            "LEFT JOIN seats t USING (game_index) GROUP BY g.game_index "
            "HAVING COUNT(t.seat) != MAX(s.n_players)"
        ).fetchall()
        if bad_seats:
            problems.append(f"games with a wrong number of seat rows: {[r[0] for r in bad_seats]}")
        bad_lineups = self.db.execute(
            "SELECT s.game_index FROM schedule s LEFT JOIN lineup l USING (game_index) "
            "GROUP BY s.game_index HAVING COUNT(l.seat) != MAX(s.n_players)"
        ).fetchall()
        if bad_lineups:
            problems.append(f"games with a wrong line-up: {[r[0] for r in bad_lineups][:20]}")
        orphan_faults = self.db.execute(
            "SELECT COUNT(*) FROM faults WHERE game_index NOT IN (SELECT game_index FROM games)"
        ).fetchone()[0]
        if orphan_faults:
            problems.append(f"{orphan_faults} fault rows of games that are not stored")
        stray = self.db.execute(
            "SELECT COUNT(*) FROM seats WHERE game_index NOT IN (SELECT game_index FROM games)"
        ).fetchone()[0]
        if stray:
            problems.append(f"{stray} seat rows of games that are not stored")
        return problems


def iter_records(store: Store, indices: Iterable[int]) -> Iterable[tuple[int, bytes]]:
    for index in indices:
        data = store.record_json(index)
        if data is not None:
            yield index, data


# ---------------------------------------------------------------------- migration


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


_CPU_COLUMNS = ("cpu_mean_ms", "cpu_max_ms")
"""Schema 3's per-seat CPU time per decision (NULL: not measured)."""


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
        raise StoreError(_explain(exc, backup)) from None
    Store(path).close()  # a writer's open migrates, under the lock
    return True
