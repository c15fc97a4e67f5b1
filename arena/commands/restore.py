"""``arena restore``: a backup made by ``arena backup`` into an empty data folder and store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.commands.serve import add_competition_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "restore",
        help="restore a competition backup into an empty data folder and store",
        description="Check BACKUP's checksums, then restore it into the data folder and "
        "store COMPETITION.toml names (both must be empty); arena serve then resumes.",
    )
    r.add_argument("backup", metavar="BACKUP", type=Path, help="a folder made by arena backup")
    add_competition_argument(r)
    r.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.competition.config import load_competition
    from arena.store.backup import restore

    config = load_competition(args.competition)
    done = restore(args.backup, config.store_url, config.data_dir)
    games = done.counts.get("games", 0)
    sys.stdout.write(
        f"restored {games} game(s) and {done.files} file(s) into {done.folder}; "
        f"arena serve {args.competition} resumes the competition\n"
    )
    return 0
