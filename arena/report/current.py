"""Is the report of a tournament folder up to date? And a leaderboard from the stored
ratings. No pandas, no matplotlib: a run with nothing new to play costs almost nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from arena.report.names import short_names
from arena.store.tournament import Store, store_location
from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.report.standings import RankingChoice

REPORT_JSON = Path("report") / "report.json"


def report_is_current(outdir: Path) -> bool:
    """The report files were written from the store as it is now."""
    try:
        summary = json.loads((Path(outdir) / REPORT_JSON).read_text(encoding="utf-8"))["summary"]
        return bool(summary.get("store_fingerprint") == store_fingerprint(outdir))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def store_fingerprint(outdir: Path) -> str | None:
    """The store's state now (``Store.fingerprint``), None if it cannot be read."""
    try:
        with Store(store_location(Path(outdir)), readonly=True) as store:
            return store.fingerprint()
    except Exception:  # an unusable store: the full report explains it
        return None


STORED_COLUMNS = ("#", "Bot", "Version", "Rating", "Games", "Win %", "Faults")
_OTHER_CELLS = 2 + 12 + 6 + 5 + 5 + 6 + 3 * len(STORED_COLUMNS) - 1
"""Cells of every column but the name's (rank, 12-character version, numbers, padding)."""


def stored_leaderboard(outdir: Path, limit: int = 20, width: int | None = None) -> Table:
    """Bots by stored TrueSkill rating (mu - 3 sigma), with games, wins and faults; with
    ``width`` (the terminal's) long names are elided in the middle to fit."""
    with Store(store_location(Path(outdir)), readonly=True) as store:
        _, ratings = store.ratings()
        stats = {s.bot: s for s in store.bot_stats()}
        versions = {b.label: b.version for b in store.bots()}
    table = Table(
        title="Leaderboard (stored ratings)",
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for header in STORED_COLUMNS:
        table.add_column(
            header,
            justify="left" if header in ("Bot", "Version") else "right",
            no_wrap=header != "Bot",
        )
    ranked = sorted(ratings, key=lambda r: (-(r.mu - 3 * r.sigma), -r.mu, r.bot))[:limit]
    names = None
    if width is not None:
        names = short_names((r.bot for r in ranked), max(8, width - _OTHER_CELLS))
    for place, r in enumerate(ranked, start=1):
        s = stats.get(r.bot)
        win = f"{s.wins / s.games:.0%}" if s and s.games else "-"
        table.add_row(
            str(place),
            Text(names[r.bot] if names else visible(r.bot)),  # bot names are not markup
            versions.get(r.bot, "")[:12],
            f"{r.mu - 3 * r.sigma:.1f}",
            str(s.games if s else 0),
            win,
            str(s.faults if s else 0),
        )
    notes = []
    if len(ratings) > limit:
        notes.append(f"top {limit} of {len(ratings)} bots")
    if any(s.faults for s in stats.values()):
        notes.append("faults by kind, with examples: arena report " + str(outdir))
    table.caption = "; ".join(notes) or None
    table.caption_justify = "left"
    return table


def print_report(
    outdir: Path,
    *,
    console: Console,
    bootstrap: int | None = None,
    quiet: bool = True,
    reuse_current: bool = False,
    rank_by: str = "trueskill",
    points: str | None = None,
) -> int:
    """``arena report``, also after a run; returns its exit status.  ``bootstrap`` None
    is the default resamples.  ``reuse_current`` (the run played nothing new): when the
    written report is up to date, print the stored leaderboard instead (no re-rating).
    ``rank_by`` / ``points``: what ranks the leaderboard (``arena.report.standings``)."""
    from arena.errors import ArenaError

    if reuse_current and rank_by == "trueskill" and points is None and report_is_current(outdir):
        console.print(stored_leaderboard(outdir, width=console.width))
        index = escape(str(outdir / "report" / "index.html"))
        console.print(f"report site (up to date): {index}")
        return 0
    if bootstrap is not None and bootstrap < 0:
        raise ArenaError("--bootstrap must be 0 or more")
    ranking = ranking_choice(rank_by, points)
    if not quiet:
        console.print(f"(arena report {outdir} re-renders the report at any time)")
    from arena.report.command import report_command

    status: int = report_command(outdir, console=console, bootstrap=bootstrap, ranking=ranking)
    return status  # its last line is the path of the report site


def ranking_choice(rank_by: str, points: str | None) -> RankingChoice:
    """The organiser's choice, checked (``ArenaError`` with the formula's problem)."""
    from arena.errors import ArenaError
    from arena.ratings.points import FormulaError, parse_formula
    from arena.report.standings import RANK_BY, RankingChoice

    if rank_by not in RANK_BY:
        raise ArenaError(f"--rank-by must be one of {', '.join(RANK_BY)}, not {rank_by!r}")
    if rank_by == "points" and points is None:
        raise ArenaError('--rank-by points needs a formula: --points "50*wins + 20*ties + points"')
    try:
        formula = None if points is None else parse_formula(points)
    except FormulaError as exc:
        raise ArenaError(f"--points: {exc}") from None
    return RankingChoice(rank_by=rank_by, formula=formula)
