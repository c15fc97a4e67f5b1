"""``arena export competition.toml``: a hosted competition's finals and rounds as CSV and
JSON Lines: one table per finished event (``finals``, ``finals-run-2``, ``round-3``: the
results the pages show, computed when it finished) and every game of every event
(``event-games``: CSV one row per seat, JSON Lines one object per game).

The files are written as ``arena export`` writes a tournament's (``arena.report.export``:
atomic renames, spreadsheet-safe cells).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pandas as pd

from arena.report.export import Written, _atomic, _frame_csv, _frame_jsonl, csv_safe
from arena.store.competition import CompetitionStore
from arena.store.competition_events import event_games, list_events
from arena.store.competition_models import EventRow

TABLE_COLUMNS = [
    "rank",
    "prize_rank",
    "bot",
    "staff",
    "version",
    "author",
    "games",
    "wins",
    "ties",
    "losses",
    "points",
    "failed",
    "faults",
    "score",
    "final_rank",
    "strength",
    "low",
    "high",
    "held",
    "held_leave_out",
    "mu",
    "sigma",
    "trueskill",
]
GAME_COLUMNS = ["event", "game_id", "players", "variant", "seed", "status", "end_reason"]
SEAT_COLUMNS = ["seat", "bot", "version", "score", "rank", "forfeit", "faults"]


def table_name(shown: EventRow) -> str:
    """``finals``, ``finals-run-2``, ``round-3``: an event's file name."""
    if shown.kind == "finals":
        return "finals" if shown.number == 1 else f"finals-run-{shown.number}"
    return f"round-{shown.number}"


def event_table(shown: EventRow) -> pd.DataFrame:
    rows = (shown.results or {}).get("rows", [])
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _games(store: CompetitionStore, shown: list[EventRow]) -> Iterator[dict[str, Any]]:
    for one in shown:
        for game in event_games(store, one.id):
            yield {
                "event": table_name(one),
                "game_id": game.id,
                "players": game.players,
                "variant": game.variant,
                "seed": game.seed,
                "status": game.status,
                "end_reason": game.end_reason,
                "seats": [
                    {
                        "seat": s.seat,
                        "bot": s.bot_name,
                        "version": s.version_number,
                        "score": s.score,
                        "rank": s.rank,
                        "forfeit": s.forfeit,
                        "faults": " ".join(s.faults),
                    }
                    for s in game.seats
                ],
            }


def _games_fill(
    store: CompetitionStore, shown: list[EventRow], kind: str
) -> Callable[[IO[str]], int]:
    import csv
    import json

    def fill(out: IO[str]) -> int:
        count = 0
        writer = csv.writer(out) if kind == "csv" else None
        if writer is not None:
            writer.writerow([*GAME_COLUMNS, *SEAT_COLUMNS])
        for game in _games(store, shown):
            count += 1
            if writer is None:
                out.write(json.dumps(game, ensure_ascii=False) + "\n")
                continue
            head = [csv_safe(game[c]) for c in GAME_COLUMNS]
            for seat in game["seats"]:
                writer.writerow([*head, *(csv_safe(seat[c]) for c in SEAT_COLUMNS)])
        return count

    return fill


def write_event_export(store: CompetitionStore, target: Path, fmt: str = "both") -> list[Written]:
    """Write every finished event's table and every event game into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    kinds = ("csv", "jsonl") if fmt == "both" else (fmt,)
    finished = sorted(list_events(store, status="finished"), key=lambda e: e.id)
    written: list[Written] = []
    for kind in kinds:
        for shown in finished:
            frame = event_table(shown)
            path = target / f"{table_name(shown)}.{kind}"
            fill = _frame_csv(frame) if kind == "csv" else _frame_jsonl(frame)
            written.append(Written(path, _atomic(path, fill), "bots"))
        path = target / f"event-games.{kind}"
        written.append(Written(path, _atomic(path, _games_fill(store, finished, kind)), "games"))
    return written
