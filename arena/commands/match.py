"""``arena match``: one refereed game between 2-4 bot folders, printed and written."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from arena.commands.options import (
    add_game_options,
    announce_sandbox,
    load_bots,
    play_settings,
    sandbox_settings,
)
from arena.commands.output import UserError, console, print_evidence, shown

if TYPE_CHECKING:
    from rich.table import Table

    from arena.engine.record import GameRecord
    from arena.play.match import MatchResult
    from arena.referee.manifest import BotSpec

MATCHES = Path("results") / "matches"
"""Where a match goes without ``--out`` (a new timestamped folder)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "match",
        help="play one game between 2-4 bot folders",
        description=(
            "Build the bots, play one refereed game, print the final boards, scores and "
            "faults, and write the game record and the bots' stderr logs."
        ),
    )
    p.add_argument("bots", nargs="+", metavar="BOT_DIR", help="bot folder (with bot.toml); 2-4")
    p.add_argument("--variant", choices=["coloured", "gray"], default="coloured")
    p.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    p.add_argument("--out", help="output folder (default results/matches/TIMESTAMP)")
    p.add_argument(
        "--transcript",
        action="store_true",
        help="also write every protocol line per seat ('>' to the bot, '<' from it)",
    )
    add_game_options(p)
    p.set_defaults(run=run)


def _refuse_undeclared(specs: list[BotSpec], variant: str) -> None:
    """A bot is seated only in games its bot.toml declares it can play."""
    for spec in specs:
        if not spec.manifest.plays(len(specs), variant):
            raise UserError(
                f"bot {spec.name} declares {spec.manifest.declared_limits()} in its bot.toml: "
                f"it cannot play a {len(specs)}-player {variant} game"
            )


def run(args: argparse.Namespace) -> int:
    from arena.play.build import BuildError
    from arena.play.match import match_folder, run_match
    from arena.referee.toolchains import explain_build_failure
    from arena.sandbox import SandboxBusy

    if not 2 <= len(args.bots) <= 4:
        raise UserError(f"a game needs 2, 3 or 4 bots, not {len(args.bots)}")
    specs = load_bots(args.bots)
    _refuse_undeclared(specs, args.variant)
    play = play_settings(args)
    settings = play.game(args.variant, args.seed)
    sandbox = sandbox_settings(play, announce=False)
    out = match_folder(Path(args.out) if args.out is not None else None, MATCHES)
    announce_sandbox(play)  # after the checks: a refusal stays one line
    try:
        result = run_match(
            specs, settings, out, sandbox, transcripts=args.transcript, one_core=play.pins_core
        )
    except SandboxBusy as exc:
        raise UserError(str(exc)) from None
    except BuildError as exc:
        raise UserError(explain_build_failure(str(exc), sandbox.toolchains)) from None
    record = result.outcome.record
    names = [f"{name} (seat {i})" for i, name in enumerate(record.players)]
    console.print(result.final_position.render(names))
    console.print(_score_table(result, args.seed))
    _print_warnings_and_faults(record)
    console.print(f"record: {result.record_path}   (verify: arena replay {result.record_path})")
    console.print(f"bot logs: {out}/")
    return 0


def _print_warnings_and_faults(record: GameRecord) -> None:
    """Time warnings (slow moves that counted), then faults with their evidence."""
    for warning in record.warnings:
        console.print(
            f"[yellow]warning[/yellow] seat {warning.seat} ({shown(record.players[warning.seat])}):"
            f" round {warning.round}: {shown(warning.message)}"
        )
    for fault in record.faults:
        verdict = "forfeit" if fault.forfeit else "strike"
        console.print(
            f"[red]fault[/red] seat {fault.seat} ({record.players[fault.seat]}): "
            f"{fault.kind} in round {fault.round}: {shown(fault.message)} ({verdict})"
        )
        print_evidence(fault, "  ")


def _score_table(result: MatchResult, seed: int) -> Table:
    """Scores by rank with each seat's think and CPU time per decision."""
    from rich.table import Table

    record = result.outcome.record
    table = Table(
        title=f"{record.variant} wall, seed {seed}, end: {record.end_reason}, {record.clock} clock",
        caption="bonus: rows + columns + colours; ms: mean / max per decision",
    )
    for col in ("#", "seat", "bot", "rounds", "bonus", "total", "think ms", "cpu ms"):
        # The bot's name never wraps or shrinks: fits 80 columns with 20-character names.
        bot = col == "bot"
        table.add_column(col, justify="left" if bot else "right", no_wrap=True)
    cpu: dict[int, list[float]] = {}
    for rnd in record.rounds:
        for d in rnd.decisions:
            if d.cpu_ms is not None:
                cpu.setdefault(d.seat, []).append(d.cpu_ms)
    for f in sorted(record.final, key=lambda f: (f.rank, f.seat)):
        stats = result.outcome.think[f.seat]
        used = cpu.get(f.seat, [])
        table.add_row(
            str(f.rank),
            str(f.seat),
            shown(f.player),
            str(f.rounds),
            f"{f.rows}+{f.columns}+{f.colours}",
            f"[bold]{f.total}[/bold]",
            f"{stats.mean_ms:.1f}/{stats.max_ms:.1f}" if stats.decisions else "-",
            f"{sum(used) / len(used):.1f}/{max(used):.1f}" if used else "-",
        )
    return table
