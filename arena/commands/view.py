"""``arena view``: a self-contained HTML replay of a game (or of a tournament's games)."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.output import UserError, console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "view",
        help="write an HTML replay of a game (open it in any browser, no network needed)",
        description=(
            "Re-execute a game record through the engine and write a single self-contained "
            "HTML file that replays it: the board, every move with think time and the bot's "
            "stderr, faults, the final breakdown and the command that reproduces the game. "
            "A record file gives NAME.html beside it; a tournament folder gives "
            "OUTDIR/replays/GAME_ID.html for each game (or those picked with --game)."
        ),
    )
    p.add_argument("target", metavar="RECORD|OUTDIR", help="game record file or tournament folder")
    p.add_argument("--game", action="append", metavar="GAME_ID", help="only this game (repeatable)")
    p.add_argument("--out", help="output file (one game) or folder")
    p.add_argument("--open", action="store_true", help="open the (first) replay in a browser")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.viewer.command import ViewError, write_views

    try:
        write_views(
            Path(args.target),
            args.game or [],
            Path(args.out) if args.out else None,
            args.open,
            say=console.print,
        )
    except ViewError as exc:
        raise UserError(str(exc)) from None
    return 0
