"""``arena backup``: a hosted competition's store and files, into a new folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.commands.serve import add_competition_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "backup",
        help="back up a hosted competition (store and files) into a new folder",
        description="Copy the competition's store (consistent while arena serve runs) and "
        "its data folder's uploads and builds into DEST, with a manifest of checksums.",
    )
    add_competition_argument(p)
    p.add_argument("dest", metavar="DEST", type=Path, help="a new (or empty) folder")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.competition.config import load_competition
    from arena.store.backup import backup

    config = load_competition(args.competition)
    done = backup(config.store_url, config.data_dir, args.dest)
    games = done.counts.get("games", 0)
    sys.stdout.write(f"backed up {games} game(s) and {done.files} file(s) into {done.folder}\n")
    return 0
