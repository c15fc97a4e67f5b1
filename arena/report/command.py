"""``arena report OUTDIR``: print the leaderboard and write the report files.

Never shows a traceback for a bad folder: a missing or unusable store is one line on the
console and exit status 2.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from arena.ratings import DEFAULT_RESAMPLES, DEFAULT_SEED
from arena.report.build import Report, build_report
from arena.report.data import load_results
from arena.report.files import write_report
from arena.report.sections import ranking_lines
from arena.report.site import BotPlots, write_site
from arena.report.standings import DEFAULT_RANKING, RankingChoice
from arena.report.terminal import fault_groups_table, leaderboard_table
from arena.store.tournament import StoreError

EXIT_OK = 0
EXIT_WRITE_FAILED = 1
EXIT_BAD_STORE = 2
SHOWN_PROBLEMS = 10
"""Site problems printed one per line; beyond, a count (a damaged store can have many)."""


def make_report(
    outdir: Path,
    *,
    bootstrap: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    ranking: RankingChoice = DEFAULT_RANKING,
) -> Report:
    """Load and build (raises ``StoreError`` for a missing or unusable store), continuing
    from the ratings the tournament stored as its games finished."""
    from arena.ratings.incremental import IncrementalRatings, StateError

    results = load_results(Path(outdir))
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
    bootstrap: int = DEFAULT_RESAMPLES,
    write: bool = True,
    ranking: RankingChoice = DEFAULT_RANKING,
) -> int:
    """Print the leaderboard; with ``write``, write ``OUTDIR/report/``. Returns the exit
    status: 0, 1 if the files cannot be written, 2 for a missing or unusable store.

    ``bootstrap=0`` skips the rank intervals (instant; e.g. for a runner's final summary
    with ``write=False``).
    """
    try:
        doing = f"Rating ({bootstrap} bootstrap resamples)..." if bootstrap > 0 else "Rating..."
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
    loaded = report.summary["host_load_games"]
    if loaded:
        console.print(
            f"[yellow]note:[/yellow] in {loaded} game(s) the bots' wall time far exceeded their "
            "CPU time (overloaded host, or a bot that sleeps): see Host load in the report"
        )
    if not write:
        return EXIT_OK
    try:
        # The bot pages' plots are drawn in worker processes from here on.
        with BotPlots(report, list(report.leaderboard["bot"])) as plots:
            files = write_report(report, results.outdir)
            with console.status("Writing the report site (a replay page per new game)..."):
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
    console.print(f"tables: {escape(str(files.html))} (also report.md, report.json, CSV files)")
    console.print(f"report site: {escape(str(site.index))}   (open it in a browser)")
    return EXIT_OK
