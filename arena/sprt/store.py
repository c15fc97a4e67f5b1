"""The SPRT ledger: one SQLite file per test, one row per finished game, keyed by pair.

A game is written in one transaction when it finishes, so an interrupted test loses
at most the games in flight; on resume only the missing legs are played. The test's
definition is stored too: resuming with different settings is refused.
"""

from __future__ import annotations

import gzip
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from arena.errors import ArenaError

STORE_NAME = "sprt.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS legs (
    pair        INTEGER NOT NULL,      -- pair id: both legs share the deal
    leg         INTEGER NOT NULL,      -- 0: NEW in seat 0; 1: NEW in seat 1
    game_id     TEXT NOT NULL,
    variant     TEXT NOT NULL,
    deal_seed   INTEGER NOT NULL,
    new_points  REAL NOT NULL,         -- 1 win, 0.5 draw, 0 loss (for NEW)
    new_score   INTEGER NOT NULL,
    old_score   INTEGER NOT NULL,
    end_reason  TEXT NOT NULL,
    faults      TEXT NOT NULL,         -- e.g. "old:timeout", "" when none
    record      BLOB NOT NULL,         -- gzip of the game record JSON
    PRIMARY KEY (pair, leg)
);
"""


class SprtStoreError(ArenaError):
    """The ledger cannot be opened or written (a damaged file, a read-only folder)."""


@dataclass(frozen=True)
class LegResult:
    pair: int
    leg: int
    game_id: str
    variant: str
    deal_seed: int
    new_points: float
    new_score: int
    old_score: int
    end_reason: str
    faults: str
    record_json: bytes


class SprtStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path)
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SprtStoreError(f"{path}: cannot open the SPRT ledger ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        try:
            with self.db:
                self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        except sqlite3.Error as exc:
            raise SprtStoreError(f"{self.path}: cannot write ({exc})") from None

    def add(self, leg: LegResult) -> None:
        """Idempotent: a leg stored twice keeps its first result."""
        try:
            with self.db:
                self.db.execute(
                    "INSERT OR IGNORE INTO legs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        leg.pair,
                        leg.leg,
                        leg.game_id,
                        leg.variant,
                        leg.deal_seed,
                        leg.new_points,
                        leg.new_score,
                        leg.old_score,
                        leg.end_reason,
                        leg.faults,
                        gzip.compress(leg.record_json),
                    ),
                )
        except sqlite3.Error as exc:
            raise SprtStoreError(f"{self.path}: cannot store a game ({exc})") from None

    def legs(self) -> dict[tuple[int, int], float]:
        """(pair, leg) -> NEW's points, for every stored game."""
        rows = self.db.execute("SELECT pair, leg, new_points FROM legs").fetchall()
        return {(int(p), int(g)): float(x) for p, g, x in rows}

    def fault_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for (faults,) in self.db.execute("SELECT faults FROM legs WHERE faults != ''"):
            for item in str(faults).split(","):
                counts[item] = counts.get(item, 0) + 1
        return counts

    def record_json(self, pair: int, leg: int) -> bytes | None:
        row = self.db.execute(
            "SELECT record FROM legs WHERE pair = ? AND leg = ?", (pair, leg)
        ).fetchone()
        return None if row is None else gzip.decompress(row[0])
