"""The leaderboard as a rich table, for ``arena report``, the tournament runner's final
summary and the demo."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from arena.report.format import NOT_SEPARABLE, leaderboard_display

_RIGHT = {"#", "Rating", "Rank 95%", "Games", "Wins", "Win %", "Score", "Margin"}


def progress_text(finished: int, scheduled: int) -> str:
    """``"37/120 games finished"`` (the tournament is still running or was cut short)."""
    return f"{finished}/{scheduled} games finished"


def leaderboard_table(
    leaderboard: pd.DataFrame,
    *,
    finished: int | None = None,
    scheduled: int | None = None,
    title: str = "Leaderboard",
) -> Table:
    """``leaderboard``: ``Report.leaderboard`` (or any frame with its columns).

    With ``finished < scheduled`` the title says how many games are in.
    """
    shown = leaderboard_display(leaderboard, compact=True)
    if finished is not None and scheduled is not None and finished < scheduled:
        title = f"{title} ({progress_text(finished, scheduled)})"
    table = Table(
        title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for header in shown.columns:
        faults = header == "Faults"
        table.add_column(
            str(header),
            justify="right" if header in _RIGHT or "ms" in str(header) else "left",
            no_wrap=not faults,
            min_width=7 if faults else None,
            overflow="fold" if faults else "ellipsis",
        )
    for row in shown.itertuples(index=False):
        table.add_row(*(Text(str(v)) for v in row))  # Text: bot names are not markup
    notes = ["Rating = μ − 3σ (TrueSkill); Rank 95% = bootstrap rank interval"]
    if leaderboard["separable"].eq(False).any():
        notes.append(
            f"{NOT_SEPARABLE} interval overlaps a neighbour's: that order is not established"
        )
    table.caption = "\n".join(notes)
    table.caption_justify = "left"
    return table
