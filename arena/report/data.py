"""Load a tournament's finished games from its store as pandas tables (read-only).

Everything is read inside one SQLite read transaction, so a report taken while the
tournament runs sees one consistent snapshot (a game is either wholly there or absent).
Only finished games count: a scheduled game without a ``games`` row is still to play.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from arena.tournament.store import SCHEMA_VERSION, STORE_NAME, Store, StoreError

SCHEDULE_COLUMNS = {
    "game_index": "int64",
    "game_id": "str",
    "n_players": "int64",
    "variant": "str",
    "seed_index": "int64",
    "deal_seed": "int64",
    "rotation": "int64",
    "bots": "object",  # tuple of bot names by seat
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

_SCHEDULE_SQL = f"SELECT {', '.join(SCHEDULE_COLUMNS)} FROM schedule ORDER BY game_index"
_GAMES_SQL = (
    f"SELECT {', '.join('s.' + c for c in SCHEDULE_COLUMNS)}, "
    "g.finished_at, g.duration_s, g.end_reason, g.rounds, g.worker "
    "FROM games g JOIN schedule s USING (game_index) ORDER BY g.game_index"
)
_SEAT_OWN = list(SEAT_COLUMNS)[:18]


def _seats_sql(present: set[str]) -> str:
    """Columns an older store lacks read as NULL."""
    own = ", ".join(f"t.{c}" if c in present else f"NULL AS {c}" for c in _SEAT_OWN)
    return (
        f"SELECT {own}, s.n_players, s.variant, s.seed_index, s.rotation "
        "FROM seats t JOIN games g USING (game_index) JOIN schedule s USING (game_index) "
        "ORDER BY t.game_index, t.seat"
    )


_FAULTS_SQL = (
    "SELECT f.game_index, f.seat, f.bot, f.kind, f.round, f.message, f.forfeit, "
    "s.n_players, s.variant "
    "FROM faults f JOIN games g USING (game_index) JOIN schedule s USING (game_index) "
    "ORDER BY f.game_index, f.rowid"
)


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
    return outdir if outdir.is_file() else outdir / STORE_NAME


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
    db = store.db
    db.execute("BEGIN")  # one read transaction = one consistent snapshot (WAL)
    try:
        version = store.get_meta("schema_version")
        if version is not None and version != str(SCHEMA_VERSION):
            raise StoreError(
                f"{store.path}: store schema version {version}, this arena reads {SCHEMA_VERSION}"
            )
        config_text = store.get_meta("config")
        schedule_rows = db.execute(_SCHEDULE_SQL).fetchall()
        game_rows = db.execute(_GAMES_SQL).fetchall()
        seat_rows = db.execute(_seats_sql(store.columns("seats"))).fetchall()
        fault_rows = db.execute(_FAULTS_SQL).fetchall()
    finally:
        db.rollback()
    schedule = _frame(schedule_rows, SCHEDULE_COLUMNS)
    games = _frame(game_rows, GAME_COLUMNS)
    schedule["bots"] = schedule["bots"].map(_bots)
    games["bots"] = games["bots"].map(_bots)
    return Results(
        outdir=outdir,
        schedule=schedule,
        games=games,
        seats=_frame(seat_rows, SEAT_COLUMNS),
        faults=_frame(fault_rows, FAULT_COLUMNS),
        scheduled=len(schedule),
        config=_config(config_text),
    )


def _frame(rows: list[Any], columns: dict[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame([tuple(r) for r in rows], columns=list(columns))
    return frame.astype({c: t for c, t in columns.items() if t != "object"})


def _bots(text: str) -> tuple[str, ...]:
    return tuple(str(bot) for bot in json.loads(text))


def _config(text: str | None) -> dict[str, Any] | None:
    """The tournament config, if stored and readable (it is informative only)."""
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        return None
    return config if isinstance(config, dict) else None
