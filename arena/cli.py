"""The ``arena`` command line. Thin: each command calls into one package."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from arena import __version__

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class UserError(Exception):
    """A mistake in the user's input: printed as one clear line, exit status 2."""


# ---------------------------------------------------------------- replay


def cmd_replay(args: argparse.Namespace) -> int:
    from arena.engine import Game, ReplayError, replay
    from arena.recordio import RecordFileError, load_record

    status = 0
    for path in args.records:
        try:
            record = load_record(Path(path))
        except RecordFileError as exc:
            raise UserError(str(exc)) from None

        names = record.players

        def show(game: Game, move: str, seat: int, names: list[str] = names) -> None:
            if game.rounds[-1].decisions == [] and game.decision.value == "draft":
                console.print(f"\n{game.render()}")
            console.print(f"  round {game.round}  {names[seat]} (seat {seat}): {move}")

        try:
            game = replay(record, on_decision=show if args.show else None)
        except ReplayError as exc:
            console.print(f"[red]{path}: {exc}[/red]")
            status = 1
            continue
        if args.show:
            console.print(f"\n{game.render()}")
        scores = ", ".join(f"{f.player} {f.total} (#{f.rank})" for f in record.final)
        decisions = sum(len(r.decisions) for r in record.rounds)
        console.print(
            f"[green]OK[/green] {path}: {record.n_players} players, {record.variant} wall, "
            f"{len(record.rounds)} rounds, {decisions} decisions, "
            f"end {record.end_reason}; {scores}"
        )
    return status


# ---------------------------------------------------------------- bench


def cmd_bench_engine(args: argparse.Namespace) -> int:
    from rich.table import Table

    from arena.bench.engine import bench_engine

    with console.status("random playouts…"):
        results = bench_engine(games=args.games, repeats=args.repeats, seed=args.seed)
    table = Table(title=f"Random playouts, median of {args.repeats} x {args.games} games")
    for col in ("variant", "players", "games/s", "moves/s", "moves/game"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r.variant.value,
            str(r.players),
            f"{r.games_per_s:,.0f}",
            f"{r.moves_per_s:,.0f}",
            f"{r.moves_per_game:.1f}",
        )
    console.print(table)
    two = next(r for r in results if r.players == 2 and r.variant.value == "coloured")
    verdict = "meets" if two.games_per_s >= 2000 else "MISSES"
    console.print(
        f"2-player coloured: {two.games_per_s:,.0f} games/s ({verdict} the 2,000/s target)"
    )
    return 0


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena",
        description="Azul Arena: referee Azul games between bots, run tournaments, rate bots.",
    )
    parser.add_argument("--version", action="version", version=f"arena {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "replay",
        help="re-execute game records and verify every deal, move and score",
        description=(
            "Re-execute a game record with no RNG: checks that every deal was drawable, "
            "every decision legal and every score right. Prints OK and a summary, or the "
            "first divergence with the position; exits 1 if any record diverges."
        ),
    )
    p.add_argument("records", nargs="+", metavar="RECORD", help="game record (.json or .json.gz)")
    p.add_argument("--show", action="store_true", help="print the game turn by turn")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("bench", help="run a benchmark", description="Speed benchmarks.")
    bench = p.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    b = bench.add_parser(
        "engine",
        help="random playouts through the Game API",
        description=(
            "Random playouts (list all legal moves, pick one uniformly, apply) for 2-4 players "
            "and both walls; prints games/s, moves/s and moves per game (median of repeats)."
        ),
    )
    b.add_argument("--games", type=int, default=1000, help="games per repeat (default 1000)")
    b.add_argument("--repeats", type=int, default=5, help="repeats; the median is shown")
    b.add_argument("--seed", type=int, default=0)
    b.set_defaults(func=cmd_bench_engine)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status: int = args.func(args)
    except UserError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
