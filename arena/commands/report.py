"""``arena report``: the leaderboard and report files of a tournament folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.options import add_bootstrap_option, add_ranking_options
from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="leaderboard and reports of a tournament (also while it runs)",
        description=(
            "Print the leaderboard (TrueSkill, rank intervals by bootstrap) and write Markdown, "
            "CSV, JSON and a self-contained HTML report into OUTDIR/report/."
        ),
    )
    p.add_argument("outdir", metavar="OUTDIR", help="tournament output folder")
    add_bootstrap_option(p)
    add_ranking_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.report.current import print_report

    return print_report(
        Path(args.outdir),
        console=console,
        bootstrap=args.bootstrap,
        rank_by=args.rank_by,
        points=args.points,
    )
