"""``arena new-bot``: start a bot from a language's starter kit."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "new-bot",
        help="start a bot from a language's starter kit",
        description=(
            "Copy the starter kit of a language (a small commented greedy bot that passes "
            "check-bot) into a new folder, renamed. Languages: python, javascript, typescript, "
            "c, cpp, java, go, rust; comp90054 wraps a COMP90054 course agent (player.py) "
            "unchanged."
        ),
    )
    p.add_argument("name", help="the new bot's name (a-z, 0-9, '.', '_', '-'); also its folder")
    p.add_argument(
        "--language", "-l", required=True, help="python, javascript, typescript, ..., comp90054"
    )
    p.add_argument("--dir", default="bots", help="parent folder (default bots)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.kits import kit_for, new_bot

    folder = new_bot(args.name, args.language, Path(args.dir))  # KitError: one line, status 2
    kit = kit_for(args.language)
    assert kit is not None
    console.print(f"created {escape(str(folder))} from the {kit.language} kit (bots/{kit.folder})")
    console.print(f"  JSON: {kit.json}; flush: {kit.flush}")
    check = " ".join(filter(None, ["arena check-bot", kit.check_flags, escape(str(folder))]))
    console.print(f"Next: {kit.next_step}, then: {check}")
    return 0
