"""The leaderboard as a rich table, for ``arena report``, the tournament runner's final
summary and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from arena.report.format import NOT_SEPARABLE, fault_groups, leaderboard_display
from arena.report.names import short_names
from arena.textsafe import visible

_RIGHT = {
    "#",
    "Rating",
    "Rank 95%",
    "Games",
    "Wins",
    "Win %",
    "Score",
    "Margin",
    "Failed",
    "Points",
    "Strength",
    "Final 95%",
    "Held",
}


ESSENTIAL = ("#", "Bot", "Rating", "Games", "Faults", "Failed", "Points", "Strength", "Held")
"""Never dropped, whatever the width: a bot's rank, its name and its faults (and the
chosen ranking's columns, present only when the organiser chose one)."""
OPTIONAL = ("Final 95%", "Win %", "Score", "Rank 95%", "Margin", "Think ms")
"""Added in this order while they fit (and dropped in reverse when names need the room)."""
BOT_MAX = 24
"""Cells a name gets before optional columns are added; longer names are elided in the
middle (``python-gr…dy``), or get more room when that would make two look alike."""
FAULTS_MAX = 18
_GAP = 3
"""Cells a column costs beside its text: one of padding on each side and a divider (the
table's outer padding is off, and its two edges cost one cell less than that)."""


@dataclass(frozen=True)
class Layout:
    """What the leaderboard shows at a width: its columns and each bot's name as shown
    (``names`` None: no width given or no elision tells the names apart; they wrap)."""

    columns: list[str]
    names: dict[str, str] | None


def fitted_columns(shown: pd.DataFrame, width: int | None) -> tuple[list[str], int | None]:
    """The display columns that fit in ``width`` characters (the essential ones always, then
    the optional ones in priority order) and the width left for bot names (None: any)."""
    present = [c for c in shown.columns if c in ESSENTIAL or c in OPTIONAL]
    if width is None:
        return present, None
    keep = [c for c in present if c in ESSENTIAL]
    used = sum(_need(shown, c) for c in keep)
    for column in OPTIONAL:
        if column in present and used + _need(shown, column) <= width:
            keep.append(column)
            used += _need(shown, column)
    columns = [c for c in present if c in keep]
    return columns, _bot_width(shown, columns, width)


def _need(shown: pd.DataFrame, column: str) -> int:
    cells = [cell_len(str(v)) for v in shown[column]] + [len(column)]
    cap = {"Bot": BOT_MAX, "Faults": FAULTS_MAX}.get(column, 99)
    return min(max(cells), cap) + _GAP


def _bot_width(shown: pd.DataFrame, columns: list[str], width: int) -> int:
    """The cells left for names once the other columns have theirs (at least 3)."""
    others = sum(_need(shown, c) for c in columns if c != "Bot")
    return max(3, width - others - _GAP + 1)


def layout(leaderboard: pd.DataFrame, width: int | None) -> Layout:
    """Columns and names as shown at ``width``: names on one line each, elided with an
    ellipsis where too long; optional columns are given up (least important first)
    rather than show two names alike."""
    shown = leaderboard_display(leaderboard, compact=True)
    columns, bot_width = fitted_columns(shown, width)
    bots = [str(b) for b in leaderboard["bot"]]
    if width is None or bot_width is None:
        return Layout(columns, None)
    while True:
        names = short_names(bots, bot_width)
        optional = [c for c in columns if c in OPTIONAL]
        if names is not None or not optional:
            return Layout(columns, names)
        drop = max(optional, key=OPTIONAL.index)
        columns = [c for c in columns if c != drop]
        bot_width = _bot_width(shown, columns, width)


def progress_text(finished: int, scheduled: int) -> str:
    """``"37/120 games finished"`` (the tournament is still running or was cut short)."""
    return f"{finished:,}/{scheduled:,} games finished"


def leaderboard_table(
    leaderboard: pd.DataFrame,
    *,
    finished: int | None = None,
    scheduled: int | None = None,
    title: str = "Leaderboard",
    width: int | None = None,
    notes: Sequence[str] = (),
) -> Table:
    """``leaderboard``: ``Report.leaderboard`` (or any frame with its columns).

    With ``finished < scheduled`` the title says how many games are in. With ``width``
    (the terminal's), less important columns are dropped until the table fits: rank, name
    and faults always stay; long names are elided in the middle (see :func:`layout`).
    ``notes``: more caption lines (e.g. the final ranking's stability audit).
    """
    shown = leaderboard_display(leaderboard, compact=True)
    fit = layout(leaderboard, width)
    shown = shown[fit.columns]
    if fit.names is not None:
        shown["Bot"] = [fit.names[str(b)] for b in leaderboard["bot"]]
    if finished is not None and scheduled is not None and finished < scheduled:
        title = f"{title} ({progress_text(finished, scheduled)})"
    table = Table(
        title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for header in shown.columns:
        # Names are elided to fit (one line each); they wrap only when no elision tells
        # them apart. Faults wrap between kinds, never cut.
        wraps = header == "Faults" or (header == "Bot" and fit.names is None)
        table.add_column(
            str(header),
            justify="right" if header in _RIGHT or "ms" in str(header) else "left",
            no_wrap=not wraps,
            min_width=_need(shown, "Faults") - _GAP if header == "Faults" else None,
            overflow="fold" if wraps else "ellipsis",
        )
    for row in shown.itertuples(index=False):
        # Text, not markup; control characters made visible: bot names are bot-controlled.
        table.add_row(*(Text(visible(str(v))) for v in row))
    caption = ["Rating = μ − 3σ (TrueSkill); Rank 95% = bootstrap rank interval"]
    if leaderboard["separable"].eq(False).any():
        caption.append(
            f"{NOT_SEPARABLE} interval overlaps a neighbour's: that order is not established"
        )
    caption += [visible(note) for note in notes]
    table.caption = Text("\n".join(caption))  # not markup: notes name bots
    table.caption_justify = "left"
    return table


def fault_groups_table(fault_log: pd.DataFrame, width: int | None = None) -> Table | None:
    """Faults grouped by bot and kind: count, forfeits, and the first one as an example
    (``arena replay OUTDIR --game ID`` shows its evidence). None when nobody faulted."""
    if fault_log.empty:
        return None
    table = Table(
        title="Faults by bot and kind",
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        width=width,
    )
    names = short_names((str(b) for b in fault_log["bot"]), BOT_MAX)
    if names is None:  # no elision tells them apart: whole names, wrapped
        table.add_column("Bot", max_width=BOT_MAX, overflow="fold")
    else:
        table.add_column("Bot", no_wrap=True)
    table.add_column("Kind")
    table.add_column("Count", justify="right")
    table.add_column("Forfeits", justify="right")
    table.add_column("First (game: what happened)", overflow="fold", ratio=1)
    for group in fault_groups(fault_log).itertuples(index=False):
        bot = str(group.bot)
        table.add_row(
            Text(visible(bot) if names is None else names[bot]),
            Text(visible(str(group.kind))),
            str(group.count),
            str(group.forfeits),
            Text(visible(f"{group.game_id}: {group.message}")),
        )
    return table
