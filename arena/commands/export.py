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
            "object per game, seats nested) into FOLDER (default OUTDIR/export/). Given a "
            "competition.toml: the finals' and every round's tables and their games "
            "(default DATA_DIR/export/)."
        ),
    )
    p.add_argument(
        "outdir", metavar="OUTDIR", help="tournament output folder, or a competition.toml"
    )
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
    from arena.report.command import make_report
    from arena.report.current import ranking_choice
    from arena.report.export import EXPORT_DIR, write_export
    from arena.store.tournament import Store, StoreError

    outdir = Path(args.outdir)
    if outdir.suffix == ".toml" and not outdir.is_dir():
        return run_competition(outdir, args)
    target = Path(args.to) if args.to is not None else outdir / EXPORT_DIR
    bootstrap = args.bootstrap  # None: the default for the store's size
    if bootstrap is not None and bootstrap < 0:
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


def run_competition(toml: Path, args: argparse.Namespace) -> int:
    """The hosted competition's events (finals, rounds) from its store."""
    from rich.markup import escape

    from arena.competition.config import STORE_FILE, load_competition
    from arena.competition.event_export import write_event_export
    from arena.errors import ArenaError
    from arena.store.competition import CompetitionStore, StoreError

    config = load_competition(toml)
    default_store = config.data_dir / STORE_FILE
    if config.store_url == f"sqlite:///{default_store}" and not default_store.is_file():
        raise ArenaError(
            f"{toml}: no competition store at {default_store} yet",
            hint="run arena serve first",
        )
    target = Path(args.to) if args.to is not None else config.data_dir / "export"
    try:
        with CompetitionStore.open(config.store_url) as store:
            written = write_event_export(store, target, args.format)
    except StoreError as exc:
        raise ArenaError(str(exc)) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ArenaError(f"cannot write the export to {target}: {reason}") from None
    for item in written:
        console.print(f"wrote {escape(str(item.path))} ({item.rows} {item.what})")
    return 0
