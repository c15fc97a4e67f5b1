"""Export a tournament's results as plain data: the final table, one table per format
(player count x variant) and every finished game, as CSV and/or JSON Lines.

CSV has one row per *seat* of a game (the game's fields repeated); JSON Lines has one
object per game with its seats nested. Games are streamed from the store straight to the
file, a row at a time, so a million games never sit in memory.

Bot-controlled text is data here: JSON keeps it raw (its quoting makes it harmless); a
CSV cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return) gets a
leading ``'`` so a spreadsheet shows it as text instead of running it as a formula.

Every file is written to a temporary name and renamed into place: a reader never sees a
half-written export, and a failed export leaves the previous one whole.
"""

from __future__ import annotations

import csv
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd

from arena.report.build import Report
from arena.report.stats import SPLIT_COLUMNS
from arena.store.tournament import Store

EXPORT_DIR = "export"
"""Default target, inside the tournament folder."""
FORMATS = ("csv", "jsonl", "both")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet may read as the start of a formula (OWASP's CSV-injection list)."""
GAME_COLUMNS = [
    "game_index",
    "game_id",
    "n_players",
    "variant",
    "seed_index",
    "deal_seed",
    "rotation",
    "end_reason",
    "rounds",
    "duration_s",
    "finished_at",
]
SEAT_COLUMNS = ["seat", "bot", "score", "rank", "forfeit", "fault"]
FORMAT_COLUMNS = ["n_players", "variant", "bot", *SPLIT_COLUMNS]


@dataclass(frozen=True)
class Written:
    """One exported file and how many rows (CSV) or lines (JSON Lines) it holds."""

    path: Path
    rows: int
    what: str


def csv_safe(value: Any) -> Any:
    """A text cell a spreadsheet will not run as a formula (other values as they are)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):  # object or string dtype
            out[column] = out[column].map(csv_safe)
    return out


def format_tables(store: Store) -> dict[tuple[int, str], pd.DataFrame]:
    """Per (player count, variant) played: games, wins, win rate and mean score per bot
    (the report's split columns), best win rate first."""
    totals = pd.DataFrame(
        store.format_totals(),
        columns=["n_players", "variant", "bot", "games", "wins", "score_sum"],
    )
    tables = {}
    pairs = zip(totals["n_players"], totals["variant"], strict=True)
    formats = sorted({(int(n), str(v)) for n, v in pairs})
    for n_players, variant in formats:
        part = totals["n_players"].eq(n_players) & totals["variant"].eq(variant)
        table = totals[part].copy()
        table["win_rate"] = table["wins"] / table["games"]
        table["mean_score"] = table["score_sum"] / table["games"]
        table = table.sort_values(["win_rate", "mean_score", "bot"], ascending=[False, False, True])
        tables[(n_players, variant)] = table[FORMAT_COLUMNS].reset_index(drop=True)
    return tables


def format_name(n_players: int, variant: str) -> str:
    """``format-2p-coloured``: a file name from the format (variants are config words)."""
    return f"format-{n_players}p-{re.sub(r'[^A-Za-z0-9_-]', '_', variant)}"


def iter_games(store: Store) -> Iterator[dict[str, Any]]:
    """Every finished game in schedule order, seats nested: two streams over the store
    (games, seats; both ordered by game index) merged a game at a time."""
    seats = store.seat_rows()
    pending = next(seats, None)
    for row in store.game_rows():
        index, game_id, n_players, variant, seed_index, deal_seed, rotation, _lineup = row[:8]
        finished_at, duration_s, end_reason, rounds = row[8:12]
        game_seats = []
        while pending is not None and int(pending[0]) <= int(index):
            if int(pending[0]) == int(index):
                game_seats.append(
                    {
                        "seat": int(pending[1]),
                        "bot": str(pending[2]),
                        "score": int(pending[3]),
                        "rank": int(pending[8]),
                        "forfeit": bool(pending[10]),
                        "fault": None if pending[11] is None else str(pending[11]),
                    }
                )
            pending = next(seats, None)
        yield {
            "game_index": int(index),
            "game_id": str(game_id),
            "n_players": int(n_players),
            "variant": str(variant),
            "seed_index": int(seed_index),
            "deal_seed": int(deal_seed),
            "rotation": int(rotation),
            "end_reason": None if end_reason is None else str(end_reason),
            "rounds": None if rounds is None else int(rounds),
            "duration_s": None if duration_s is None else float(duration_s),
            "finished_at": None if finished_at is None else float(finished_at),
            "seats": game_seats,
        }


def _atomic(path: Path, fill: Callable[[IO[str]], int]) -> int:
    """Write ``path`` via a temporary file renamed into place; returns ``fill``'s count."""
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            count = fill(out)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def _frame_csv(frame: pd.DataFrame) -> Callable[[IO[str]], int]:
    def fill(out: IO[str]) -> int:
        _safe_frame(frame).to_csv(out, index=False)
        return len(frame)

    return fill


def _frame_jsonl(frame: pd.DataFrame) -> Callable[[IO[str]], int]:
    def fill(out: IO[str]) -> int:
        # The same conversion as report.json (NaN/NA as null), a record per line.
        for record in json.loads(frame.to_json(orient="records", force_ascii=False)):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return len(frame)

    return fill


def _games_csv(store: Store) -> Callable[[IO[str]], int]:
    def fill(out: IO[str]) -> int:
        writer = csv.writer(out)
        writer.writerow([*GAME_COLUMNS, *SEAT_COLUMNS])
        games = 0
        for game in iter_games(store):
            head = [csv_safe(game[c]) for c in GAME_COLUMNS]
            for seat in game["seats"]:
                writer.writerow([*head, *(csv_safe(seat[c]) for c in SEAT_COLUMNS)])
            games += 1
        return games

    return fill


def _games_jsonl(store: Store) -> Callable[[IO[str]], int]:
    def fill(out: IO[str]) -> int:
        games = 0
        for game in iter_games(store):
            out.write(json.dumps(game, ensure_ascii=False) + "\n")
            games += 1
        return games

    return fill


@dataclass(frozen=True)
class Export:
    files: list[Written]
    same_snapshot: bool
    """The games were read from the store as the final table was rated (False: a
    running tournament finished games in between, which the final table does not count)."""


def write_export(report: Report, store: Store, target: Path, fmt: str = "both") -> Export:
    """Write the final table, the per-format tables and the games into ``target``
    (created if missing); raises ``OSError`` if it cannot be written."""
    target.mkdir(parents=True, exist_ok=True)
    kinds = ("csv", "jsonl") if fmt == "both" else (fmt,)
    written: list[Written] = []
    with store.snapshot():
        same = store.fingerprint() == report.results.fingerprint
        tables = {"final": report.leaderboard} | {
            format_name(*key): table for key, table in format_tables(store).items()
        }
        for kind in kinds:
            for name, frame in tables.items():
                path = target / f"{name}.{kind}"
                fill = _frame_csv(frame) if kind == "csv" else _frame_jsonl(frame)
                written.append(Written(path, _atomic(path, fill), "bots"))
            path = target / f"games.{kind}"
            fill = _games_csv(store) if kind == "csv" else _games_jsonl(store)
            written.append(Written(path, _atomic(path, fill), "games"))
    return Export(written, same)
