"""The ``arena`` command line: a registry of commands, each in its own module under
``arena/commands/`` (its parser and a call into the package that does the work)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.markup import escape

from arena import __version__
from arena.commands import (
    backup,
    bench,
    check_bot,
    demo,
    doctor,
    export,
    match,
    new_bot,
    play,
    replay,
    report,
    restore,
    roster,
    schema,
    serve,
    sprt,
    submit,
    token,
    tournament,
    upgrade,
    view,
)
from arena.commands.output import err_console
from arena.errors import ArenaError
from arena.textsafe import visible

COMMANDS = (
    replay,
    view,
    match,
    play,
    check_bot,
    submit,
    new_bot,
    tournament,
    demo,
    sprt,
    report,
    export,
    upgrade,
    schema,
    doctor,
    serve,
    token,
    roster,
    backup,
    restore,
    bench,
)
"""Every command module, in the order ``arena --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena",
        description="Azul Arena: referee Azul games between bots, run tournaments, rate bots.",
        epilog=(
            "Start with: arena demo | arena check-bot bots/python-greedy | "
            "arena match bots/c-greedy bots/js-random. Bot protocol: protocol/SPEC.md."
        ),
    )
    parser.add_argument("--version", action="version", version=f"arena {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a user's or environment's error is one line and status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        status: int = args.run(args)
    except ArenaError as exc:
        err_console.print(f"[red]error:[/red] {escape(visible(str(exc), multiline=True))}")
        if exc.hint:
            err_console.print(escape(visible(exc.hint, multiline=True)))
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
