"""The leaderboard as a rich table, for ``arena report``, the tournament runner's final
summary and the demo."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from arena.report.format import NOT_SEPARABLE, leaderboard_display
from arena.textsafe import visible

_RIGHT = {"#", "Rating", "Rank 95%", "Games", "Wins", "Win %", "Score", "Margin"}


ESSENTIAL = ("#", "Bot", "Rating", "Games", "Faults")
"""Never dropped, whatever the width: a bot's rank, its name and its faults."""
OPTIONAL = ("Win %", "Score", "Rank 95%", "Margin", "Think ms")
"""Added in this order while they fit."""
BOT_MAX = 24
"""Longer names wrap onto more lines (never truncated)."""
FAULTS_MAX = 18
_GAP = 2  # rich's cell padding between columns


def fitted_columns(shown: pd.DataFrame, width: int | None) -> tuple[list[str], int | None]:
    """The display columns that fit in ``width`` characters (the essential ones always, then
    the optional ones in priority order) and the width left for bot names (None: any)."""
    present = [c for c in shown.columns if c in ESSENTIAL or c in OPTIONAL]
    if width is None:
        return present, None

    def need(column: str) -> int:
        cells = [len(str(v)) for v in shown[column]] + [len(column)]
        cap = {"Bot": BOT_MAX, "Faults": FAULTS_MAX}.get(column, 99)
        return min(max(cells), cap) + _GAP

    keep = [c for c in present if c in ESSENTIAL]
    used = sum(need(c) for c in keep)
    for column in OPTIONAL:
        if column in present and used + need(column) <= width:
            keep.append(column)
            used += need(column)
    longest = max([len(str(v)) for v in shown["Bot"]] + [3])
    bot_width = min(longest, max(BOT_MAX, width - used + need("Bot") - _GAP))
    return [c for c in present if c in keep], bot_width


def progress_text(finished: int, scheduled: int) -> str:
    """``"37/120 games finished"`` (the tournament is still running or was cut short)."""
    return f"{finished}/{scheduled} games finished"


def leaderboard_table(
    leaderboard: pd.DataFrame,
    *,
    finished: int | None = None,
    scheduled: int | None = None,
    title: str = "Leaderboard",
    width: int | None = None,
) -> Table:
    """``leaderboard``: ``Report.leaderboard`` (or any frame with its columns).

    With ``finished < scheduled`` the title says how many games are in. With ``width``
    (the terminal's), less important columns are dropped until the table fits: rank, name
    and faults always stay, and long names wrap.
    """
    shown = leaderboard_display(leaderboard, compact=True)
    columns, bot_width = fitted_columns(shown, width)
    shown = shown[columns]
    if finished is not None and scheduled is not None and finished < scheduled:
        title = f"{title} ({progress_text(finished, scheduled)})"
    table = Table(
        title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for header in shown.columns:
        wraps = header in ("Faults", "Bot")
        table.add_column(
            str(header),
            justify="right" if header in _RIGHT or "ms" in str(header) else "left",
            no_wrap=not wraps,
            min_width=min(FAULTS_MAX, 7) if header == "Faults" else None,
            max_width=bot_width if header == "Bot" else None,
            overflow="fold" if wraps else "ellipsis",
        )
    for row in shown.itertuples(index=False):
        # Text, not markup; control characters removed: bot names are bot-controlled.
        table.add_row(*(Text(visible(str(v))) for v in row))
    notes = ["Rating = μ − 3σ (TrueSkill); Rank 95% = bootstrap rank interval"]
    if leaderboard["separable"].eq(False).any():
        notes.append(
            f"{NOT_SEPARABLE} interval overlaps a neighbour's: that order is not established"
        )
    table.caption = "\n".join(notes)
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
    table.add_column("Bot", max_width=BOT_MAX, overflow="fold")
    table.add_column("Kind")
    table.add_column("Count", justify="right")
    table.add_column("Forfeits", justify="right")
    table.add_column("First (game: what happened)", overflow="fold", ratio=1)
    grouped = fault_log.groupby(["bot", "kind"], sort=False)
    rows = sorted(grouped, key=lambda item: (item[0][0], -len(item[1])))
    for (bot, kind), group in rows:
        first = group.iloc[0]
        table.add_row(
            Text(visible(str(bot))),
            Text(str(kind)),
            str(len(group)),
            str(int(group["forfeit"].sum())),
            Text(visible(f"{first['game_id']}: {first['message']}")),
        )
    return table
