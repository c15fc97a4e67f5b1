"""``arena schema``: regenerate (or check) protocol/schemas/ from the protocol models."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.output import console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schema",
        help="regenerate protocol/schemas/ from the protocol models",
        description=(
            "Write the JSON Schemas of every protocol message, the observation and the game "
            "record, generated from the pydantic models. --check only compares."
        ),
    )
    p.add_argument("--check", action="store_true", help="exit 1 if the files are stale")
    p.add_argument("--dir", help="folder (default: the repository's protocol/schemas)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.protocol.schema import DEFAULT_DIR, stale_schemas, write_schemas

    folder = Path(args.dir) if args.dir else DEFAULT_DIR
    if args.check:
        stale = stale_schemas(folder)
        if stale:
            console.print(
                f"[red]stale[/red] in {folder}: {', '.join(stale)} (regenerate: arena schema)"
            )
            return 1
        console.print(f"schemas in {folder} match the protocol models")
        return 0
    for path in write_schemas(folder):
        console.print(f"wrote {path}")
    return 0
