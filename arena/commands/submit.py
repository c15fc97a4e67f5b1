"""``arena submit``: send a bot to a competition server and follow its verdict."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from arena.server.client import add_arguments

    p = sub.add_parser(
        "submit",
        help="send a bot to a competition server (arena serve)",
        description=(
            "Pack the bot folder into a .tar.gz (version control folders and caches left "
            "out), upload it to the server's /api/submissions with your author token, and "
            "with --wait follow the build and check-bot until the verdict (the log is shown "
            "when it is rejected). Exit status 0 when accepted or queued, 1 when rejected."
        ),
    )
    add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.server.client import run_submit

    return run_submit(args)
