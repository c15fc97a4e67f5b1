"""Display versions of the report tables: rounded, percentages, readable headers.

One place for number formatting, so the terminal, Markdown and HTML reports agree. The
CSV and JSON files keep the raw numbers instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from arena.engine.record import FAULT_KINDS
from arena.textsafe import visible

NOT_SEPARABLE = "≈"
MISSING = "—"

Formatter = Callable[[Any], str]


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def number(digits: int) -> Formatter:
    def fmt(value: Any) -> str:
        return MISSING if _missing(value) else f"{float(value):.{digits}f}"

    return fmt


def percent(value: Any) -> str:
    return MISSING if _missing(value) else f"{100 * float(value):.0f}%"


def integer(value: Any) -> str:
    return MISSING if _missing(value) else str(int(value))


def text(value: Any) -> str:
    """Display text; bot-controlled strings (fault messages) get control characters
    made visible here, so the terminal, Markdown and HTML reports never carry them."""
    return MISSING if _missing(value) else visible(str(value))


def rank_interval(low: Any, high: Any) -> str:
    """``"2–4"``, ``"1"`` for a certain rank, ``"—"`` without bootstrap."""
    if _missing(low) or _missing(high):
        return MISSING
    return f"{int(low)}" if int(low) == int(high) else f"{int(low)}–{int(high)}"


def faults_text(row: Mapping[Any, Any]) -> str:
    """``"timeout 2, crash 1"`` from a leaderboard row's ``faults_*`` columns."""
    parts = [
        f"{column.removeprefix('faults_')} {int(value)}"
        for column, value in row.items()
        if str(column).startswith("faults_") and not _missing(value) and int(value) > 0
    ]
    return ", ".join(parts) or MISSING


def display(frame: pd.DataFrame, columns: Mapping[str, tuple[str, Formatter]]) -> pd.DataFrame:
    """``columns``: source column -> (header, formatter), in display order."""
    return pd.DataFrame(
        {header: [fmt(v) for v in frame[column]] for column, (header, fmt) in columns.items()},
        columns=[header for header, _ in columns.values()],
        dtype="object",
    )


# (column, header, formatter, shown in the compact terminal table)
_LEADERBOARD: list[tuple[str, str, Formatter, bool]] = [
    ("rank", "#", integer, True),
    ("bot", "Bot", text, True),
    ("version", "Version", text, False),
    ("rating", "Rating", number(1), True),
    ("mu", "μ", number(1), False),
    ("sigma", "σ", number(2), False),
    ("interval", "Rank 95%", text, True),
    ("games", "Games", integer, True),
    ("wins", "Wins", integer, False),
    ("win_rate", "Win %", percent, True),
    ("mean_score", "Score", number(1), True),
    ("mean_margin", "Margin", number(1), True),
    ("faults", "Faults", text, True),  # compact only; the files get one column per kind
    # Only when the organiser chose a points formula / the final ranking (--rank-by):
    ("outright_wins", "Sole wins", integer, False),
    ("ties", "Ties", integer, False),
    ("losses", "Losses", integer, False),
    ("failed", "Failed", integer, True),
    ("points", "Points", number(1), True),
    ("final_strength", "Strength", number(2), True),
    ("final_interval", "Final 95%", text, True),
    ("final_held", "Held", percent, True),
    ("final_held_leave_out", "Held (leave-out)", percent, False),
    ("forfeits", "Forfeits", integer, False),
    ("think_mean_ms", "Think ms", number(1), True),
    ("think_p95_ms", "p95 ms", number(1), False),
    ("cpu_mean_ms", "CPU ms", number(1), True),
]


def leaderboard_display(
    leaderboard: pd.DataFrame, *, compact: bool = False, merge_faults: bool = False
) -> pd.DataFrame:
    """The leaderboard for people. ``compact`` (terminal): fits ~80-100 columns, with the
    faults in one column; μ, σ, wins, forfeits and p95 are left to the files.
    ``merge_faults`` (web pages): every column, but the faults in one (``timeout 2, crash 1``)
    instead of one per kind."""
    lb = leaderboard.copy()
    lb["interval"] = [
        rank_interval(low, high) + ("" if _missing(sep) or bool(sep) else f" {NOT_SEPARABLE}")
        for low, high, sep in zip(lb["rank_low"], lb["rank_high"], lb["separable"], strict=True)
    ]
    lb["faults"] = [faults_text(row) for row in lb.to_dict("records")]
    if "final_low" in lb.columns:
        lb["final_interval"] = [
            rank_interval(low, high)
            for low, high in zip(lb["final_low"], lb["final_high"], strict=True)
        ]
    columns: dict[str, tuple[str, Formatter]] = {}
    for column, header, fmt, in_compact in _LEADERBOARD:
        if column not in lb.columns and column != "faults":
            continue
        if compact and in_compact:
            columns[column] = (header, fmt)
        elif not compact and column == "faults" and not merge_faults:
            for kind_column in (c for c in lb.columns if str(c).startswith("faults_")):
                kind = str(kind_column).removeprefix("faults_")
                header = kind.capitalize() if kind in FAULT_KINDS else kind
                columns[kind_column] = (header, integer)
        elif not compact:
            columns[column] = (header, fmt)
    return display(lb, columns)


def pairs_display(pairs: pd.DataFrame) -> pd.DataFrame:
    return display(
        pairs,
        {
            "bot": ("Bot", text),
            "opponent": ("Opponent", text),
            "games": ("Games", integer),
            "ahead": ("Ahead", integer),
            "behind": ("Behind", integer),
            "ties": ("Ties", integer),
            "score": ("Score", percent),
        },
    )


def matrix_display(matrix: pd.DataFrame) -> pd.DataFrame:
    """Percentages, row labels as the first column."""
    out = matrix.map(percent)
    out.insert(0, "Bot ↓ vs →", list(matrix.index))
    return out.reset_index(drop=True)


def seat_display(seats: pd.DataFrame) -> pd.DataFrame:
    return display(
        seats,
        {
            "n_players": ("Players", integer),
            "seat": ("Seat", integer),
            "games": ("Games", integer),
            "wins": ("Wins", integer),
            "win_rate": ("Win %", percent),
            "fair_share": ("Fair share", percent),
            "mean_score": ("Score", number(1)),
        },
    )


FAULT_LOG_ROWS = 500
"""The displayed fault log is cut here (the CSV and JSON files hold every fault)."""


def forfeit_text(value: object) -> str:
    return "forfeit" if value else "strike (forgiven)"


def fault_log_display(log: pd.DataFrame) -> pd.DataFrame:
    return display(
        log.head(FAULT_LOG_ROWS),
        {
            "game_id": ("Game", text),
            "bot": ("Bot", text),
            "seat": ("Seat", integer),
            "kind": ("Fault", text),
            "round": ("Round", integer),
            "forfeit": ("Forfeit", forfeit_text),
            "message": ("What happened", text),
        },
    )


def fault_groups(log: pd.DataFrame) -> pd.DataFrame:
    """Faults grouped by bot and kind (bots by name, then most frequent kind first): count,
    forfeits, and the first fault of each group as its example (game, round, message)."""
    columns = ["bot", "kind", "count", "forfeits", "game_id", "round", "message"]
    if log.empty:
        return pd.DataFrame(columns=columns)
    grouped = log.groupby(["bot", "kind"], sort=False)
    out = grouped.first()[["game_id", "round", "message"]]
    out["count"] = grouped.size()
    out["forfeits"] = grouped["forfeit"].sum().astype(int)
    out = out.reset_index()
    out = out.assign(_order=-out["count"]).sort_values(["bot", "_order"], kind="stable")
    return out[columns].reset_index(drop=True)


def fault_groups_display(log: pd.DataFrame) -> pd.DataFrame:
    return display(
        fault_groups(log),
        {
            "bot": ("Bot", text),
            "kind": ("Fault", text),
            "count": ("Count", integer),
            "forfeits": ("Forfeits", integer),
            "game_id": ("First in game", text),
            "round": ("Round", integer),
            "message": ("What happened", text),
        },
    )


def host_load_display(games: pd.DataFrame) -> pd.DataFrame:
    return display(
        games,
        {
            "game_id": ("Game", text),
            "decisions": ("Decisions", integer),
            "think_mean_ms": ("Wall ms", number(1)),
            "cpu_mean_ms": ("CPU ms", number(1)),
            "wall_per_cpu": ("Wall/CPU", number(1)),
            "seats": ("Wall/CPU by bot", text),
        },
    )


def split_display(split: pd.DataFrame, by: str, header: str) -> pd.DataFrame:
    return display(
        split,
        {
            by: (header, text),
            "bot": ("Bot", text),
            "games": ("Games", integer),
            "wins": ("Wins", integer),
            "win_rate": ("Win %", percent),
            "mean_score": ("Score", number(1)),
        },
    )
