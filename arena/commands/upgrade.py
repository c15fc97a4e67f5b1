"""``arena upgrade``: bring a tournament store written by an older arena up to date."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "upgrade",
        help="upgrade a tournament store written by an older arena",
        description=(
            "Upgrade OUTDIR/tournament.sqlite in place to this arena's store schema (a copy "
            "of the old file is kept next to it). Results, faults and records are kept; bots "
            "of a schema-1 store get their versions when the tournament is next resumed."
        ),
    )
    p.add_argument("outdir", metavar="OUTDIR", help="tournament output folder")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.tournament.store import upgrade_store

    done = upgrade_store(Path(args.outdir))
    console.print(f"{escape(args.outdir)}: " + ("upgraded" if done else "already up to date"))
    return 0
