"""``arena export``: a tournament's results as CSV and JSON Lines, for spreadsheets and scripts."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.options import add_bootstrap_option, add_ranking_options
from arena.commands.output import console

EXIT_BAD_TARGET = 2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export",
        help="results as CSV / JSON Lines: the final table, per-format tables, every game",
        description=(
            "Write the final table (as arena report ranks it), one table per player count "
            "and variant, and every finished game (CSV: one row per seat; JSON Lines: one "
            "object per game, seats nested) into FOLDER (default OUTDIR/export/)."
        ),
    )
    p.add_argument("outdir", metavar="OUTDIR", help="tournament output folder")
    p.add_argument("--to", metavar="FOLDER", default=None, help="where to write the files")
    p.add_argument(
        "--format", choices=("csv", "jsonl", "both"), default="both", help="default both"
    )
    add_bootstrap_option(p)
    add_ranking_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from arena.errors import ArenaError
    from arena.ratings import DEFAULT_RESAMPLES
    from arena.report.command import make_report
    from arena.report.current import ranking_choice
    from arena.report.export import EXPORT_DIR, write_export
    from arena.store.tournament import Store, StoreError

    outdir = Path(args.outdir)
    target = Path(args.to) if args.to is not None else outdir / EXPORT_DIR
    bootstrap = DEFAULT_RESAMPLES if args.bootstrap is None else args.bootstrap
    if bootstrap < 0:
        raise ArenaError("--bootstrap must be 0 or more")
    ranking = ranking_choice(args.rank_by, args.points)
    try:
        with console.status("Rating..."):
            report = make_report(outdir, bootstrap=bootstrap, ranking=ranking)
        with Store(report.results.store_path, readonly=True) as store:
            export = write_export(report, store, target, args.format)
    except StoreError as exc:
        raise ArenaError(str(exc)) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ArenaError(f"cannot write the export to {target}: {reason}") from None
    for item in export.files:
        console.print(f"wrote {escape(str(item.path))} ({item.rows} {item.what})")
    if not export.same_snapshot:
        console.print(
            "[yellow]note:[/yellow] games finished while exporting: the games files have "
            "some the final table does not count yet (export again when the run ends)"
        )
    return 0
