"""``arena tournament``: run or resume a round-robin, gauntlet or sampled tournament."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.commands.options import (
    add_bootstrap_option,
    add_game_options,
    add_progress_options,
    game_flags,
    sandbox_settings,
)
from arena.commands.output import console, err_console
from arena.play.executors import WORKERS_HELP

if TYPE_CHECKING:
    from arena.tournament import TournamentConfig


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tournament",
        help="run or resume a tournament (round-robin, gauntlet or sampled)",
        description=(
            "Run a tournament: by default a round-robin (every combination of k bots for each "
            "player count k plays every deal seed under a balanced set of seatings), or a "
            "gauntlet, or a sampled schedule for many bots; in parallel. Results go to a "
            "SQLite store in the output folder; run the same command again to resume after an "
            "interruption. Flags override the values of the TOML config file."
        ),
    )
    p.add_argument("config", nargs="?", help="tournament TOML file (optional)")
    p.add_argument("--bots", nargs="+", metavar="BOT_DIR", help="bot folders")
    p.add_argument("--players", nargs="+", type=int, choices=[2, 3, 4], help="player counts")
    p.add_argument("--variants", nargs="+", choices=["coloured", "gray"], help="walls")
    p.add_argument(
        "--schedule",
        choices=["round-robin", "gauntlet", "sampled"],
        help="round-robin (default): every combination of k bots; gauntlet: the "
        "--challengers against the field only; sampled: --games N games for many bots, "
        "chosen where ratings are least certain, game counts kept even",
    )
    p.add_argument(
        "--challengers", nargs="+", metavar="BOT_DIR", help="gauntlet: bots (among --bots)"
    )
    p.add_argument("--games", type=int, help="sampled: how many games to play")
    p.add_argument(
        "--seating",
        choices=["balanced", "rotations"],
        help="balanced (default): each deal under seatings where every bot sits in every seat "
        "and after every other bot equally often (3p: 6, 4p: 12); rotations: k seatings, "
        "seats only (cheaper)",
    )
    p.add_argument("--seeds", type=int, help="deals per pairing (default 4)")
    p.add_argument("--master-seed", type=int, help="derives every game's deal (default 1)")
    p.add_argument("--workers", type=int, help=WORKERS_HELP)
    p.add_argument(
        "--executor",
        choices=["local", "ray"],
        help="local: a process pool here (default); ray: a Ray cluster (pip install "
        "'azul-arena[ray]'), games sent in batches, bots as bundles built on each node",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: 'auto' joins the running cluster (ray start), "
        "ray://HOST:10001 a remote one; unset starts a local one",
    )
    p.add_argument("--out", help="output folder (default results/tournament)")
    p.add_argument(
        "--store",
        metavar="URL",
        help="keep the games in a database (postgresql+psycopg://user@host/db) instead of "
        "tournament.sqlite in --out; the folder still holds the report and logs",
    )
    p.add_argument(
        "--per-game-processes", action="store_true", help="start bots afresh for every game"
    )
    p.add_argument(
        "--extend",
        action="store_true",
        help="allow adding games (new bots, seeds, ...) to an existing tournament",
    )
    add_progress_options(p)
    add_bootstrap_option(p)
    add_game_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_and_report(tournament_config(args), args, extend=args.extend)


def tournament_config(args: argparse.Namespace) -> TournamentConfig:
    """The config file (if any) with the flags given on top of it."""
    from arena.tournament import load_config

    overrides: dict[str, Any] = {
        "bots": args.bots,
        "players": args.players,
        "variants": args.variants,
        "schedule": args.schedule,
        "challengers": args.challengers,
        "games": args.games,
        "seating": args.seating,
        "seeds": args.seeds,
        "master_seed": args.master_seed,
        "workers": args.workers,
        "output": args.out,
        "store": getattr(args, "store", None),
        "persistent": False if args.per_game_processes else None,
        "executor": args.executor,
        "ray_address": args.ray_address,
        **game_flags(args),
    }
    return load_config(Path(args.config) if args.config else None, overrides)


def run_and_report(config: TournamentConfig, args: argparse.Namespace, *, extend: bool) -> int:
    """Run with a live progress bar (or quiet / JSON lines), then the report (the stored
    one when nothing new was played and it is up to date)."""
    from arena.report.current import print_report
    from arena.tournament.command import run_with_progress

    mode = "jsonl" if args.jsonl else "quiet" if args.quiet else "bar"
    sandbox_settings(config)  # strict: refuse early; auto: say what is missing; the layers
    outcome = run_with_progress(
        config, mode=mode, extend=extend, console=console, err_console=err_console
    )
    progress = outcome.progress
    if progress is None or mode == "jsonl":
        return outcome.status
    return print_report(
        config.output,
        console=console,
        bootstrap=args.bootstrap,
        quiet=mode == "quiet",
        reuse_current=progress.done == progress.done_before,
    )
