"""Load a tournament's finished games from its store as pandas tables (read-only).

Everything is read inside one SQLite read transaction, so a report taken while the
tournament runs sees one consistent snapshot (a game is either wholly there or absent).
Only finished games count: a scheduled game without a ``games`` row is still to play.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import pandas as pd

from arena.tournament.store import STORE_NAME, Store, StoreError, store_file

SCHEDULE_COLUMNS = {
    "game_index": "int64",
    "game_id": "str",
    "n_players": "int64",
    "variant": "str",
    "seed_index": "int64",
    "deal_seed": "int64",
    "rotation": "int64",
    "bots": "object",  # tuple of bot labels by seat (name, or name@version)
}
GAME_COLUMNS = SCHEDULE_COLUMNS | {
    "finished_at": "float64",
    "duration_s": "float64",
    "end_reason": "str",
    "rounds": "int64",
    "worker": "str",
}
SEAT_COLUMNS = {
    "game_index": "int64",
    "seat": "int64",
    "bot": "str",
    "score": "int64",
    "round_score": "int64",
    "bonus_rows": "int64",
    "bonus_columns": "int64",
    "bonus_colours": "int64",
    "rank": "int64",
    "full_rows": "int64",
    "forfeit": "bool",
    "fault": "object",
    "decisions": "int64",
    "think_mean_ms": "float64",
    "think_p95_ms": "float64",
    "think_max_ms": "float64",
    "cpu_mean_ms": "float64",  # NaN: not measured (older stores, or no CPU accounting)
    "cpu_max_ms": "float64",
    "n_players": "int64",
    "variant": "str",
    "seed_index": "int64",
    "rotation": "int64",
}
FAULT_COLUMNS = {
    "game_index": "int64",
    "seat": "int64",
    "bot": "str",
    "kind": "str",
    "round": "int64",
    "message": "str",
    "forfeit": "bool",
    "n_players": "int64",
    "variant": "str",
}


@dataclass(frozen=True)
class Results:
    """A snapshot of a tournament's results.

    ``schedule``: every scheduled game (``bots`` = tuple of names by seat).
    ``games``: one row per finished game with its schedule row, by ``game_index``.
    ``seats``: one row per seat of a finished game (+ ``n_players``, ``variant``, ...).
    ``faults``: every fault of a finished game (also the forgiven ones).
    """

    outdir: Path
    schedule: pd.DataFrame
    games: pd.DataFrame
    seats: pd.DataFrame
    faults: pd.DataFrame
    scheduled: int
    config: dict[str, Any] | None
    fingerprint: str = ""
    """The store's state this snapshot was taken at (see ``Store.fingerprint``)."""
    versions: dict[str, str] | None = None
    """Each bot's version by label."""
    ratings_state: str | None = None
    """The stored incremental ratings (JSON) the report continues from."""

    @property
    def finished(self) -> int:
        return len(self.games)

    @property
    def complete(self) -> bool:
        return self.scheduled > 0 and self.finished >= self.scheduled

    @property
    def bots(self) -> list[str]:
        """Every entrant: scheduled or seated, sorted by name."""
        names = {bot for bots in self.schedule["bots"] for bot in bots}
        return sorted(names | set(self.seats["bot"]))


def store_path(outdir: Path) -> Path:
    """The store file of a tournament folder (or the file itself if given one)."""
    return store_file(outdir)


def load_results(outdir: Path) -> Results:
    """Read a tournament folder's store. Raises ``StoreError`` (message for the user)."""
    outdir = Path(outdir)
    if not outdir.exists():
        raise StoreError(f"{outdir}: no such folder")
    path = store_path(outdir)
    if not path.is_file():
        raise StoreError(f"{outdir}: no tournament store here ({STORE_NAME} is missing)")
    with Store(path, readonly=True) as store:
        try:
            return _snapshot(store, outdir if outdir.is_dir() else path.parent)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: not a usable tournament store ({exc})") from None


def _snapshot(store: Store, outdir: Path) -> Results:
    with store.snapshot():  # one read transaction = one consistent snapshot (WAL)
        config_text = store.get_meta("config")
        fingerprint = store.fingerprint()
        versions = {b.label: b.version for b in store.bots()}
        ratings_state = store.ratings_state()
        schedule = _frame(store.schedule_rows(), SCHEDULE_COLUMNS)
        games = _frame(store.game_rows(), GAME_COLUMNS)
        seats = _frame(store.seat_rows(), SEAT_COLUMNS)
        faults = _frame(store.fault_rows(), FAULT_COLUMNS)
    return Results(
        outdir=outdir,
        schedule=schedule,
        games=games,
        seats=seats,
        faults=faults,
        scheduled=len(schedule),
        config=_config(config_text),
        fingerprint=fingerprint,
        versions=versions,
        ratings_state=ratings_state,
    )


CHUNK = 50_000
"""Rows turned into typed columns at a time: memory holds one chunk of Python tuples,
never a whole table of them."""


def _frame(rows: Iterable[Any], columns: dict[str, str]) -> pd.DataFrame:
    chunks: list[pd.DataFrame] = []
    source = iter(rows)
    while True:
        chunk = list(islice(source, CHUNK))
        if not chunk and chunks:
            break
        frame = pd.DataFrame([tuple(r) for r in chunk], columns=list(columns))
        chunks.append(frame.astype({c: t for c, t in columns.items() if t != "object"}))
        if len(chunk) < CHUNK:
            break
    return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)


def _config(text: str | None) -> dict[str, Any] | None:
    """The tournament config, if stored and readable (it is informative only)."""
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        return None
    return config if isinstance(config, dict) else None
