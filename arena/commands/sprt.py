"""``arena sprt NEW OLD``: is NEW stronger than OLD? A sequential test on game pairs."""

from __future__ import annotations

import argparse

from arena.commands.options import add_game_options, play_settings, sandbox_settings
from arena.commands.output import UserError, console, err_console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from arena.sprt.command import DESCRIPTION, add_arguments

    p = sub.add_parser(
        "sprt",
        help="is NEW stronger than OLD? a sequential test on 2-player game pairs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    add_game_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.sprt.command import sprt_command

    play = play_settings(args)
    sandbox_settings(play)  # strict: refuse early; auto: say what is missing; the layers
    return sprt_command(args, play, console, err_console, UserError)
