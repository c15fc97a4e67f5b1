"""``arena view``: a self-contained HTML replay of a game (or of a tournament's games)."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.output import UserError, console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "view",
        help="write HTML replays of games (open them in any browser, no network needed)",
        description=(
            "Re-execute a game record through the engine and write a single self-contained "
            "HTML file that replays it: the board, every move with think time and the bot's "
            "stderr, faults, the final breakdown and the command that reproduces the game. "
            "A record file gives NAME.html beside it; a tournament folder gives "
            "OUTDIR/replays/GAME_ID.html for each game (or those picked with --game). "
            "Several records and folders may be given (a shell glob such as "
            "results/matches/*/record.json): each gets its replay, and --open opens one "
            "browser tab per record (a folder's first replay)."
        ),
    )
    p.add_argument(
        "targets",
        nargs="+",
        metavar="RECORD|OUTDIR",
        help="game record files or tournament folders",
    )
    p.add_argument("--game", action="append", metavar="GAME_ID", help="only this game (repeatable)")
    p.add_argument("--out", help="output file (one game) or folder (several)")
    p.add_argument(
        "--open",
        action="store_true",
        help="open each record's replay (a folder's first) in a browser",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.viewer.command import ViewError, write_views

    try:
        write_views(
            [Path(target) for target in args.targets],
            args.game or [],
            Path(args.out) if args.out else None,
            args.open,
            say=console.print,
        )
    except ViewError as exc:
        raise UserError(str(exc)) from None
    return 0
