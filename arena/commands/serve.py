"""``arena serve``: host a competition (web pages, submissions, the continuous ladder)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from arena.commands.output import UserError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="host a competition: web server, submissions, continuous ladder",
        description="Run the competition defined by COMPETITION.toml until Ctrl-C/SIGTERM: "
        "the web pages and JSON API, a build worker for uploads and the continuous ladder. "
        "The first start creates the store and prints the organiser token (also kept in "
        "DATA_DIR/organiser.token). A restart resumes: running games are played again.",
    )
    add_competition_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    status: int = service().serve(args.competition)
    return status


def add_competition_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "competition",
        metavar="COMPETITION.toml",
        type=Path,
        help="the competition file (docs/hosting.md)",
    )


def service() -> ModuleType:
    """arena.server.service, or a clear error without the server extra."""
    try:
        from arena.server import service
    except ImportError as exc:
        raise UserError(
            f"arena serve needs the server extra ({exc.name} is missing)",
            hint="pip install 'azul-arena[server]'",
        ) from None
    return service
