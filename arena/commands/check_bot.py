"""``arena check-bot``: build, handshake, quick games against random, and a verdict."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.markup import escape

from arena.commands.options import add_game_options, load_bots, play_settings, sandbox_settings
from arena.commands.output import UserError, console

if TYPE_CHECKING:
    from arena.engine import Variant


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check-bot",
        help="check a bot before a tournament: build, handshake, quick games, verdict",
        description=(
            "Build the bot, run the handshake, play quick 2-, 3- and 4-player games on both "
            "walls against the built-in random policy, and print a verdict with latency "
            "figures, warnings for slow answers and any protocol mistake explained in plain "
            "words. Exit status 0 on PASS, 1 on FAIL."
        ),
    )
    p.add_argument("bot", metavar="BOT_DIR", help="bot folder (with bot.toml)")
    p.add_argument(
        "--games",
        type=int,
        default=1,
        help="games per player count (2, 3, 4) and wall (default 1, so 6 games)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start no game after this much wall time of games, the first always played "
        "(default 20; 0: no limit), so a bot that sleeps is checked quickly",
    )
    p.add_argument(
        "--players",
        metavar="N[,N]",
        help="check only these player counts, as the competition plays them "
        "(e.g. 2; default 2,3,4)",
    )
    p.add_argument(
        "--walls",
        metavar="WALL[,WALL]",
        help="check only these walls: coloured, gray (default both)",
    )
    add_game_options(p)
    p.set_defaults(run=run)


def _players(text: str | None) -> tuple[int, ...]:
    from arena.play.checkbot import PLAYER_COUNTS

    if text is None:
        return PLAYER_COUNTS
    try:
        counts = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        counts = ()
    if not counts or not set(counts) <= set(PLAYER_COUNTS):
        raise UserError(f"--players {text!r}: give player counts among 2, 3, 4 (e.g. 2 or 2,4)")
    return counts


def _walls(text: str | None) -> tuple[Variant, ...]:
    from arena.engine import Variant

    if text is None:
        return tuple(Variant)
    names = {part.strip().lower() for part in text.split(",") if part.strip()}
    known = {v.value for v in Variant}
    if not names or not names <= known:
        raise UserError(f"--walls {text!r}: give walls among coloured, gray (e.g. coloured)")
    return tuple(v for v in Variant if v.value in names)


def run(args: argparse.Namespace) -> int:
    from arena.play.checkbot import GAMES_BUDGET_S, check_bot
    from arena.play.verdict import check_lines
    from arena.sandbox import SandboxBusy

    (spec,) = load_bots([args.bot])
    if args.games < 1:
        raise UserError("--games must be 1 or more")
    if args.budget is not None and args.budget < 0:
        raise UserError("--budget must be 0 (no limit) or more seconds")
    counts, walls = _players(args.players), _walls(args.walls)
    budget = GAMES_BUDGET_S if args.budget is None else args.budget or None
    play = play_settings(args)
    sandbox = sandbox_settings(play)
    with console.status(f"checking {spec.name}…"):
        try:
            report = check_bot(
                spec, sandbox, play.time, args.games, counts, budget_s=budget, walls=walls
            )
        except SandboxBusy as exc:
            raise UserError(str(exc)) from None
    console.print(f"bot {spec.name} ({escape(str(spec.folder))})")
    if report.build_s is not None:
        console.print(f"  build          ok in {report.build_s:.1f} s")
    for line in check_lines(report, play.time, terminal=True):
        console.print(line)
    if report.ok:
        opponent = "bots/python-random" if spec.name == "python-greedy" else "bots/python-greedy"
        console.print(
            "[green]PASS[/green]: the bot follows protocol v1. Next: "
            f"arena match {escape(args.bot)} {opponent}"
        )
        return 0
    console.print(
        "[red]FAIL[/red]: fix the problems above (protocol/SPEC.md explains each message)"
    )
    return 1
