"""Is the report of a tournament folder up to date? And a leaderboard from the stored
ratings. No pandas, no matplotlib: a run with nothing new to play costs almost nothing."""

from __future__ import annotations

import json
from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from arena.tournament.store import STORE_NAME, Store

REPORT_JSON = Path("report") / "report.json"


def report_is_current(outdir: Path) -> bool:
    """The report files were written from the store as it is now."""
    try:
        summary = json.loads((Path(outdir) / REPORT_JSON).read_text(encoding="utf-8"))["summary"]
        with Store(Path(outdir) / STORE_NAME, readonly=True) as store:
            return bool(summary.get("store_fingerprint") == store.fingerprint())
    except (OSError, ValueError, KeyError, TypeError):
        return False
    except Exception:  # an unusable store: the full report explains it
        return False


def stored_leaderboard(outdir: Path, limit: int = 20) -> Table:
    """Bots by stored TrueSkill rating (mu - 3 sigma), with games and wins."""
    with Store(Path(outdir) / STORE_NAME, readonly=True) as store:
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
    for header in ("#", "Bot", "Version", "Rating", "Games", "Win %"):
        table.add_column(header, justify="left" if header in ("Bot", "Version") else "right")
    ranked = sorted(ratings, key=lambda r: (-(r.mu - 3 * r.sigma), -r.mu, r.bot))
    for place, r in enumerate(ranked[:limit], start=1):
        s = stats.get(r.bot)
        win = f"{s.wins / s.games:.0%}" if s and s.games else "-"
        table.add_row(
            str(place),
            Text(r.bot),  # bot names are not markup
            versions.get(r.bot, ""),
            f"{r.mu - 3 * r.sigma:.1f}",
            str(s.games if s else 0),
            win,
        )
    if len(ranked) > limit:
        table.caption = f"top {limit} of {len(ranked)} bots; arena report for everything"
    return table
