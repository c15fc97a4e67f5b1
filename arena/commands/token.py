"""``arena token``: issue an author token for a hosted competition."""

from __future__ import annotations

import argparse
import sys

from arena.commands.serve import add_competition_argument, service


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "token",
        help="issue an author token for a hosted competition",
        description="Create author NAME in the competition's store and print their token "
        "(once: only its hash is stored).",
    )
    add_competition_argument(p)
    p.add_argument("name", metavar="NAME", help="the author's name (shown on the leaderboard)")
    p.add_argument("--organiser", action="store_true", help="may pause, disqualify, freeze")
    p.add_argument("--renew", action="store_true", help="replace an existing author's token")
    p.add_argument(
        "--member",
        metavar="MEMBER",
        help="with --renew: a new token for this member of team NAME (ends their sessions)",
    )
    p.add_argument(
        "--staff",
        action="store_true",
        help="a staff team: its bots are baselines, badged, left out of prize ranks "
        "(marks an existing author too)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    status: int = service().token_command(
        args.competition,
        args.name,
        args.organiser,
        args.renew,
        sys.stdout,
        member=args.member,
        staff=args.staff,
    )
    return status
