"""The results store: one SQLite file (WAL) per tournament, written only by the parent.

Each finished game is written in one transaction (its result, per-seat rows, faults
and the compressed game record), so a crash loses at most the games in flight and
a game is never stored twice (its schedule index is the primary key).

Readers (ratings, reports) open the file read-only while a tournament runs.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SCHEMA_VERSION = 1
STORE_NAME = "tournament.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS schedule (
    game_index  INTEGER PRIMARY KEY,   -- schedule order: ratings are computed in this order
    game_id     TEXT NOT NULL UNIQUE,
    n_players   INTEGER NOT NULL,
    variant     TEXT NOT NULL,
    seed_index  INTEGER NOT NULL,      -- which deal of the pairing (same deal for all rotations)
    deal_seed   INTEGER NOT NULL,
    rotation    INTEGER NOT NULL,
    bots        TEXT NOT NULL          -- JSON list of bot names by seat
);
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
    bot         TEXT NOT NULL,
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
CREATE TABLE IF NOT EXISTS faults (
    game_index  INTEGER NOT NULL REFERENCES games(game_index),
    seat        INTEGER NOT NULL,
    bot         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    round       INTEGER NOT NULL,
    message     TEXT NOT NULL,
    forfeit     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS seats_bot ON seats(bot);
"""


@dataclass(frozen=True)
class ScheduledGame:
    game_index: int
    game_id: str
    n_players: int
    variant: str
    seed_index: int
    deal_seed: int
    rotation: int
    bots: tuple[str, ...]


@dataclass(frozen=True)
class SeatRow:
    seat: int
    bot: str
    score: int
    round_score: int
    bonus_rows: int
    bonus_columns: int
    bonus_colours: int
    rank: int
    full_rows: int
    forfeit: bool
    fault: str | None
    decisions: int
    think_mean_ms: float
    think_p95_ms: float
    think_max_ms: float
    cpu_mean_ms: float | None = None
    """CPU time of the bot's process tree per decision (think times are wall time)."""
    cpu_max_ms: float | None = None


# Columns added after stores were first written: (table, column, SQL type).
_ADDED_COLUMNS = (("seats", "cpu_mean_ms", "REAL"), ("seats", "cpu_max_ms", "REAL"))


@dataclass(frozen=True)
class FaultRow:
    seat: int
    bot: str
    kind: str
    round: int
    message: str
    forfeit: bool


@dataclass(frozen=True)
class GameResult:
    """A finished game as a worker reports it (picklable, no live objects)."""

    game_index: int
    duration_s: float
    end_reason: str
    rounds: int
    worker: str
    record_json: bytes
    seats: tuple[SeatRow, ...]
    faults: tuple[FaultRow, ...]


class StoreError(Exception):
    """A store that cannot be used, with a message for the user."""


class Store:
    """Read/write access to a tournament's SQLite file."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        try:
            if readonly:
                if not path.exists():
                    raise StoreError(f"{path}: no tournament store here")
                uri = f"file:{path}?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, timeout=10)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, timeout=10)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
                self._check_version()
                self._add_columns()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not a usable tournament store ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_version(self) -> None:
        found = self.get_meta("schema_version")
        if found is None:
            with self.db:
                self.set_meta("schema_version", str(SCHEMA_VERSION))
        elif found != str(SCHEMA_VERSION):
            raise StoreError(
                f"{self.path}: store schema version {found}, this arena writes {SCHEMA_VERSION}"
            )

    def _add_columns(self) -> None:
        """Bring an older store up to date (new columns are nullable: old rows keep NULL)."""
        for table, column, kind in _ADDED_COLUMNS:
            if column not in self.columns(table):
                with self.db:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def columns(self, table: str) -> set[str]:
        return {str(row[1]) for row in self.db.execute(f"PRAGMA table_info({table})")}

    # ------------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ schedule

    def save_schedule(self, games: Sequence[ScheduledGame]) -> None:
        """Store new scheduled games (existing indices must match exactly)."""
        with self.db:
            for g in games:
                self.db.execute(
                    "INSERT OR IGNORE INTO schedule VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        g.game_index,
                        g.game_id,
                        g.n_players,
                        g.variant,
                        g.seed_index,
                        g.deal_seed,
                        g.rotation,
                        json.dumps(list(g.bots)),
                    ),
                )

    def schedule(self) -> list[ScheduledGame]:
        rows = self.db.execute("SELECT * FROM schedule ORDER BY game_index").fetchall()
        return [
            ScheduledGame(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(json.loads(r[7])))
            for r in rows
        ]

    def finished_indices(self) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT game_index FROM games")}

    # ------------------------------------------------------------------ results

    def add_result(self, result: GameResult) -> None:
        """Write one finished game atomically."""
        record = gzip.compress(result.record_json, mtime=0)
        with self.db:
            self.db.execute(
                "INSERT INTO games VALUES (?, ?, ?, ?, ?, ?, ?)",
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
            self.db.executemany(
                "INSERT INTO seats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        result.game_index,
                        s.seat,
                        s.bot,
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
            self.db.executemany(
                "INSERT INTO faults VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (result.game_index, f.seat, f.bot, f.kind, f.round, f.message, int(f.forfeit))
                    for f in result.faults
                ],
            )

    def record_json(self, game_index: int) -> bytes | None:
        row = self.db.execute(
            "SELECT record FROM games WHERE game_index = ?", (game_index,)
        ).fetchone()
        return None if row is None else gzip.decompress(row[0])

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
        return problems


def iter_records(store: Store, indices: Iterable[int]) -> Iterable[tuple[int, bytes]]:
    for index in indices:
        data = store.record_json(index)
        if data is not None:
            yield index, data
