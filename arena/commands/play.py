"""``arena play --human``: a person against 1-3 bots, in the terminal or a browser."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from arena.commands.options import (
    add_game_options,
    announce_sandbox,
    load_bots,
    play_settings,
    sandbox_settings,
)
from arena.commands.output import UserError, console

PLAYS = Path("results") / "play"
"""Where a game goes without ``--out`` (a new timestamped folder)."""
PERSON_MOVE_MS = 300_000
"""A person needs a generous clock (every seat gets it alike)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "play",
        help="play against bots yourself, in the terminal or a browser",
        description=(
            "Seat a person (--human) against 1-3 bot folders. In the terminal: each bot move "
            "in words, the board, and the legal moves grouped by source and colour; answer "
            "with source, colour and line (0B2 = factory 0's blue to line 2). With --browser: "
            "a local page on 127.0.0.1 shows the board and takes clicks. The person is one "
            "more seat behind the referee: same clocks (5 minutes per move by default) and a "
            "game record at the end."
        ),
    )
    p.add_argument("bots", nargs="+", metavar="BOT_DIR", help="bot folders (1-3)")
    p.add_argument("--human", action="store_true", help="seat a person (required)")
    p.add_argument("--seat", type=int, default=0, help="your seat (default 0: you start)")
    p.add_argument("--name", default="human", help="your name in the record (default human)")
    p.add_argument("--browser", action="store_true", help="play in a browser page")
    p.add_argument("--no-open", action="store_true", help="with --browser: only print the URL")
    p.add_argument("--variant", choices=["coloured", "gray"], default="coloured")
    p.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    p.add_argument("--out", help="output folder (default results/play/TIMESTAMP)")
    add_game_options(p)
    for action in p._actions:
        if action.dest == "time_per_move":
            action.default = PERSON_MOVE_MS
            action.help = f"time per decision in ms (default {PERSON_MOVE_MS})"
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.human.command import play_with_human
    from arena.human.screen import fault_notices
    from arena.play.build import BuildError
    from arena.play.match import match_folder
    from arena.textsafe import visible

    if not args.human:
        raise UserError("arena play seats a person: add --human (bots only: arena match)")
    if not 1 <= len(args.bots) <= 3:
        raise UserError(f"a game needs 1-3 bots beside you, not {len(args.bots)}")
    play = play_settings(args)
    settings = play.game(args.variant, args.seed)
    specs = load_bots(args.bots)
    sandbox = sandbox_settings(play, announce=False)
    out = match_folder(Path(args.out) if args.out else None, PLAYS)
    announce_sandbox(play)  # after the checks: a refusal stays one line
    try:
        result = play_with_human(
            specs,
            settings,
            out,
            human_seat=args.seat,
            human_name=args.name,
            browser=args.browser,
            open_browser=not args.no_open,
            sandbox=sandbox,
            say=console.print,
        )
    except (BuildError, ValueError) as exc:
        raise UserError(str(exc)) from None
    record = result.outcome.record
    if args.browser:  # the terminal seat showed its end screen itself
        for f in sorted(record.final, key=lambda f: (f.rank, f.seat)):
            console.print(f"#{f.rank} {escape(visible(f.player))} (seat {f.seat}): {f.total}")
        for notice in fault_notices(record):
            console.print(f"[red]{escape(notice)}[/red]")
    console.print(f"record: {result.record_path}   (replay: arena view {result.record_path})")
    return 0
