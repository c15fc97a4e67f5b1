"""``arena demo``: a round-robin of the bundled bots, then the leaderboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.commands.options import add_bootstrap_option, add_progress_options
from arena.commands.output import console
from arena.commands.tournament import run_and_report
from arena.play.executors import WORKERS_HELP

DEMO_SEEDS = 2
"""5 bots: 2p: 10 pairs x 2 seatings, 4p: 5 sets x 4 seat rotations; x 2 walls x 2 deals
= 160 games: ``make demo`` on a fresh clone, set-up included, stays under 3 minutes on a
loaded 2-core machine (docs/benchmarks.md), so a newcomer's first command is a cheap one."""
DEMO_BANK_MS = 1000
"""Per-game time bank in the demo: ample for the greedy and random bots, and it keeps
the search bot (bots/c-mcts, which spends half a fair share of its bank per move) quick."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="run the demo: a round-robin of the bundled bots, then the leaderboard",
        description=(
            "Round-robin of every bundled bot (Python, JavaScript, C), both walls, 2- and "
            "4-player games; prints the leaderboard and the path of the HTML report. Running it "
            "again resumes (or just shows the result)."
        ),
    )
    p.add_argument("--seeds", type=int, default=DEMO_SEEDS, help="deals per pairing")
    p.add_argument("--workers", type=int, help=WORKERS_HELP)
    p.add_argument("--out", default="results/demo", help="output folder (default results/demo)")
    add_bootstrap_option(p)
    add_progress_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.kits import bundled_bots
    from arena.referee.clock import TimeControl
    from arena.tournament import TournamentConfig

    bots = bundled_bots()
    out = Path(args.out).resolve()
    config = TournamentConfig(
        bots=bots,
        players=[2, 4] if len(bots) >= 4 else [2],
        variants=["coloured", "gray"],
        seeds=args.seeds,
        seating="rotations",  # 4 seatings per 4-player deal instead of 12: a quick demo
        master_seed=1,
        time=TimeControl(bank_ms=DEMO_BANK_MS),
        workers=args.workers or 0,
        output=out,
    )
    console.print(
        f"Demo tournament: {len(bots)} bots ({', '.join(b.name for b in bots)}), "
        f"{' and '.join(f'{k}-player' for k in config.players)} games, both walls, "
        f"{args.seeds} deals per pairing, seats rotated, {config.worker_count} workers -> {out}"
    )
    return run_and_report(config, args, extend=False)
