"""``arena roster``: import a course's teams and members from a CSV file, list them, add or
remove a member."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType

from arena.commands.output import UserError
from arena.commands.serve import add_competition_argument


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "roster",
        help="teams and their members for a hosted competition (one token per member)",
        description="A team owns its bots, pages and logs; each member has a token that "
        "signs in as the team. See docs/hosting.md, 'Teams and rosters'.",
    )
    actions = p.add_subparsers(dest="roster_action", metavar="ACTION", required=True)
    imp = actions.add_parser(
        "import",
        help="create the missing teams and members of a CSV roster",
        description="Read TEAMS.csv (header team,member,email and optionally staff; one "
        "line per member), create the missing teams and members and issue a token to each "
        "new member. Importing the same file again changes nothing. Any bad line: nothing "
        "is imported and every bad line is listed.",
    )
    add_competition_argument(imp)
    imp.add_argument("roster", metavar="TEAMS.csv", type=Path, help="the roster")
    imp.add_argument(
        "--tokens-out",
        metavar="FILE",
        type=Path,
        help="write the new members' tokens here as CSV (mode 0600) instead of printing them",
    )
    imp.add_argument("--force", action="store_true", help="overwrite an existing --tokens-out")
    imp.add_argument("--staff", action="store_true", help="every team of this file is staff")
    imp.set_defaults(run=run)
    lst = actions.add_parser("list", help="every team (staff marked) and its members")
    add_competition_argument(lst)
    lst.set_defaults(run=run)
    add = actions.add_parser("add-member", help="add a member to a team and print their token")
    add_competition_argument(add)
    add.add_argument("team", metavar="TEAM")
    add.add_argument("member", metavar="MEMBER")
    add.add_argument("--email", help="the member's email")
    add.set_defaults(run=run)
    rm = actions.add_parser(
        "remove-member", help="take a member off a team (their token and sessions stop working)"
    )
    add_competition_argument(rm)
    rm.add_argument("team", metavar="TEAM")
    rm.add_argument("member", metavar="MEMBER")
    rm.set_defaults(run=run)


def rosters() -> ModuleType:
    """arena.server.rosters, or a clear error without the server extra."""
    try:
        from arena.server import rosters
    except ImportError as exc:
        raise UserError(
            f"arena roster needs the server extra ({exc.name} is missing)",
            hint="pip install 'azul-arena[server]'",
        ) from None
    return rosters


def run(args: argparse.Namespace) -> int:
    work = rosters()
    out = sys.stdout
    status: int
    if args.roster_action == "import":
        status = work.import_command(
            args.competition, args.roster, args.tokens_out, args.force, args.staff, out
        )
    elif args.roster_action == "list":
        status = work.list_command(args.competition, out)
    elif args.roster_action == "add-member":
        status = work.add_member_command(args.competition, args.team, args.member, args.email, out)
    else:
        status = work.remove_member_command(args.competition, args.team, args.member, out)
    return status
