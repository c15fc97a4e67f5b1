"""``arena upgrade``: bring a store written by an older arena up to date (or refuse it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "upgrade",
        help="upgrade a store (tournament, competition) written by an older arena",
        description=(
            "Upgrade a store in place to this arena's schema: a tournament folder's "
            "tournament.sqlite (a copy of the old file is kept next to it) or database, a "
            "store file, a competition (its competition.toml or database URL). Results, "
            "faults and records are kept; bots of a schema-1 tournament get their versions "
            "when it is next resumed. A store written by a newer arena, or anything that is "
            "not an arena store, is refused with what was found."
        ),
    )
    p.add_argument(
        "outdir",
        metavar="TARGET",
        help="tournament folder, store file, competition.toml or database URL",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.store.upgrade import upgrade

    target: str | Path = args.outdir if "://" in args.outdir else Path(args.outdir)
    if isinstance(target, Path) and target.suffix == ".toml" and target.is_file():
        from arena.competition.config import load_competition

        target = load_competition(target).store_url  # the competition's database
    console.print(escape(upgrade(target).describe()))
    return 0
