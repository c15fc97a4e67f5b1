"""``arena report OUTDIR``: print the leaderboard and write the report files.

Never shows a traceback for a bad folder: a missing or unusable store is one line on the
console and exit status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.markup import escape

from arena.ratings import DEFAULT_SEED
from arena.report.build import REPORT_FORMAT, Report, build_report
from arena.report.data import FAULT_LOG_COLUMNS, load_results
from arena.report.files import write_report
from arena.report.sections import bootstrap_lines, ranking_lines
from arena.report.site import BotPlots, write_site
from arena.report.standings import DEFAULT_RANKING, RankingChoice
from arena.report.terminal import fault_groups_table, leaderboard_table
from arena.store.tournament import StoreError

if TYPE_CHECKING:
    from arena.ratings import GameTable

EXIT_OK = 0
EXIT_WRITE_FAILED = 1
EXIT_BAD_STORE = 2
SHOWN_PROBLEMS = 10
"""Site problems printed one per line; beyond, a count (a damaged store can have many)."""


def make_report(
    outdir: Path,
    *,
    bootstrap: int | None = None,
    seed: int = DEFAULT_SEED,
    ranking: RankingChoice = DEFAULT_RANKING,
) -> Report:
    """Load and build (raises ``StoreError`` for a missing or unusable store), continuing
    from the ratings the tournament stored as its games finished."""
    from arena.ratings.bootstrap import prefetch, resamples_for
    from arena.ratings.incremental import IncrementalRatings, StateError
    from arena.report.build import RATINGS_CACHE

    outdir = Path(outdir)
    folder = outdir if outdir.is_dir() else outdir.parent

    def start_bootstrap(rated: GameTable, entrants: list[str]) -> None:
        # The resamples are rated while the store's other tables are read.
        everyone = sorted(set(entrants) | set(rated.names))
        prefetch(
            rated,
            everyone,
            resamples=resamples_for(bootstrap, len(rated)),
            seed=seed,
            cache_dir=folder / RATINGS_CACHE,
        )

    results = load_results(outdir, on_rated=start_bootstrap)
    state = None
    if results.ratings_state:
        try:
            state = IncrementalRatings.from_json(results.ratings_state)
        except StateError:
            state = None  # re-rated from scratch
    return build_report(results, bootstrap=bootstrap, seed=seed, state=state, ranking=ranking)


def report_command(
    outdir: Path,
    *,
    console: Console,
    bootstrap: int | None = None,
    write: bool = True,
    ranking: RankingChoice = DEFAULT_RANKING,
) -> int:
    """Print the leaderboard; with ``write``, write ``OUTDIR/report/``. Returns the exit
    status: 0, 1 if the files cannot be written, 2 for a missing or unusable store.

    ``bootstrap=0`` skips the rank intervals (instant; e.g. for a runner's final summary
    with ``write=False``); None is the default count for the store's size.
    """
    written = written_report(outdir, bootstrap, ranking) if write else None
    if written is not None:
        # Nothing finished or scheduled since the files were written with these options:
        # they are this report (a million games are not read again to say so).
        print_written(written, outdir, console)
        return EXIT_OK
    try:
        doing = (
            "Rating..."
            if bootstrap == 0
            else "Rating (bootstrap resamples)..."
            if bootstrap is None
            else f"Rating ({bootstrap} bootstrap resamples)..."
        )
        with console.status(doing):
            report = make_report(outdir, bootstrap=bootstrap, ranking=ranking)
    except StoreError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return EXIT_BAD_STORE
    results = report.results
    if results.scheduled == 0:
        console.print(f"{escape(str(outdir))}: no games scheduled yet")
    else:
        console.print(
            leaderboard_table(
                report.leaderboard,
                finished=results.finished,
                scheduled=results.scheduled,
                width=console.width,
                notes=ranking_lines(report),
            )
        )
        faults = fault_groups_table(report.fault_log, width=console.width)
        if faults is not None:
            console.print(faults)
    _host_load_note(report.summary["host_load_games"], console)
    if not write:
        return EXIT_OK
    try:
        # The bot pages' plots are drawn in worker processes from here on.
        with BotPlots(report, list(report.leaderboard["bot"])) as plots:
            files = write_report(report, results.outdir)
            with console.status("Writing the report site..."):
                site = write_site(report, results.outdir, plots=plots)
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot write the report: {escape(str(exc))}")
        return EXIT_WRITE_FAILED
    for problem in site.problems[:SHOWN_PROBLEMS]:
        console.print(f"[yellow]warning:[/yellow] {escape(problem)}")
    if len(site.problems) > SHOWN_PROBLEMS:
        console.print(
            f"[yellow]warning:[/yellow] ... and {len(site.problems) - SHOWN_PROBLEMS} more "
            "game(s) the site could not show (arena replay OUTDIR checks every record)"
        )
    _where(files.html, site.index, console)
    return EXIT_OK


SITE_PAGES = ("index.html", "games.html", "report.html", "report.md")
"""Files whose absence makes a report be written again even when it is current."""


def written_report(
    outdir: Path, bootstrap: int | None, ranking: RankingChoice
) -> dict[str, Any] | None:
    """``report.json`` of ``OUTDIR/report/`` when it was written from the store as it is
    now, with the same resamples and the default ranking, and the site is all there;
    else None (the report is built)."""
    from arena.report.current import REPORT_JSON, store_fingerprint

    if ranking != DEFAULT_RANKING:
        return None
    folder = Path(outdir) / REPORT_JSON.parent
    if not all((folder / name).is_file() for name in SITE_PAGES):
        return None
    try:
        written: dict[str, Any] = orjson.loads((Path(outdir) / REPORT_JSON).read_bytes())
        summary, tables = written["summary"], written["tables"]
        same = (
            summary.get("report_format") == REPORT_FORMAT
            and summary["store_fingerprint"] == store_fingerprint(outdir)
            and summary["bootstrap"].get("requested", 0) == bootstrap
            and summary["bootstrap"]["seed"] == DEFAULT_SEED
            and (summary.get("ranking") or {}).get("rank_by") == "trueskill"
        )
        if not same or not isinstance(tables.get("leaderboard"), list):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable or of another shape: the report is built
    return written


def print_written(written: dict[str, Any], outdir: Path, console: Console) -> None:
    """The console output of a report, from its ``report.json``."""
    import pandas as pd

    from arena.ratings import RATING_COLUMNS

    summary, tables = written["summary"], written["tables"]
    if summary["scheduled"] == 0:
        console.print(f"{escape(str(outdir))}: no games scheduled yet")
    else:
        leaderboard = pd.DataFrame(tables["leaderboard"])
        leaderboard = leaderboard.astype(
            {"rank_low": "Int64", "rank_high": "Int64", "separable": "boolean"}
        )
        numeric = [c for c in leaderboard.columns if c not in (*RATING_COLUMNS, "version")]
        leaderboard[numeric] = leaderboard[numeric].apply(pd.to_numeric, errors="coerce")
        console.print(
            leaderboard_table(
                leaderboard,
                finished=summary["finished"],
                scheduled=summary["scheduled"],
                width=console.width,
                notes=bootstrap_lines(summary),
            )
        )
        log = pd.DataFrame(tables.get("faults") or [], columns=FAULT_LOG_COLUMNS)
        faults = fault_groups_table(log, width=console.width)
        if faults is not None:
            console.print(faults)
    _host_load_note(summary["host_load_games"], console)
    folder = Path(outdir) / "report"
    _where(folder / "report.html", folder / "index.html", console)


def _host_load_note(loaded: int, console: Console) -> None:
    if loaded:
        console.print(
            f"[yellow]note:[/yellow] in {loaded} game(s) the bots' wall time far exceeded their "
            "CPU time (overloaded host, or a bot that sleeps): see Host load in the report"
        )


def _where(html: Path, index: Path, console: Console) -> None:
    """The last lines: where the files are."""
    console.print(f"tables: {escape(str(html))} (also report.md, report.json, CSV files)")
    console.print(f"report site: {escape(str(index))}   (open it in a browser)")
