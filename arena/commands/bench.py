"""``arena bench BENCHMARK``: the speed benchmarks (engine, protocol, tournament, report,
clocks, serve, builds); each runs in its own ``arena.bench`` module."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from arena.commands.options import time_control, time_per_move_option
from arena.commands.output import UserError, console

if TYPE_CHECKING:
    from arena.bench.tournament import VsComp90054

    Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def register(sub: Sub) -> None:
    p = sub.add_parser("bench", help="run a benchmark", description="Speed benchmarks.")
    bench = p.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    for add in (_engine, _protocol, _tournament, _report, _clocks, _serve, _builds, _scale):
        add(bench)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runner: Callable[[argparse.Namespace], int] = args.bench_run
    return runner(args)


def _engine(bench: Sub) -> None:
    b = bench.add_parser(
        "engine",
        help="random playouts through the Game API",
        description=(
            "Random playouts (list all legal moves, pick one uniformly, apply) for 2-4 players "
            "and both walls; prints games/s, moves/s and moves per game (CPU time, median of "
            "repeats), the speed ratio to the tests' plain reference model of the rules "
            "measured in the same run, and the cost of Game.copy() and of a search node."
        ),
    )
    b.add_argument("--games", type=int, default=1000, help="games per repeat (default 1000)")
    b.add_argument("--repeats", type=int, default=5, help="repeats; the median is shown")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--json", action="store_true", help="print one JSON document instead")
    b.add_argument(
        "--baseline-comp90054",
        type=Path,
        metavar="FOLDER",
        help="your copy of the COMP90054 Azul framework (the folder holding Azul/azul_model.py): "
        "its 2-player games are timed in the same run, interleaved with the engine's",
    )
    b.set_defaults(bench_run=run_engine)


def run_engine(args: argparse.Namespace) -> int:
    from arena.bench.engine import BaselineError
    from arena.bench.engine import run as bench_engine

    try:
        return bench_engine(args.games, args.repeats, args.seed, args.json, args.baseline_comp90054)
    except BaselineError as error:
        raise UserError(str(error)) from None


def _protocol(bench: Sub) -> None:
    b = bench.add_parser(
        "protocol",
        help="referee overhead per decision and sandboxed spawn time",
        description=(
            "Two persistent C bots play whole games in three set-ups, interleaved: the CPU "
            "clock with the game on one core (the default), the CPU clock placed by the OS "
            "(the baseline for pinning), and the wall clock; prints the referee's overhead "
            "per decision (the gap from reading a reply to writing the next request, and "
            "wall time minus bot think time), decisions/s, the raw pipe floor (an echo "
            "process with a decision's message sizes, on the games' core and placed by the "
            "OS, interleaved) and the overhead over it per placement, the referee's CPU per "
            "decision under cProfile by module, and the sandboxed spawn time."
        ),
    )
    b.add_argument("--bot", default="bots/c-greedy", help="bot folder (default bots/c-greedy)")
    b.add_argument("--games", type=int, default=60, help="games per set-up (default 60)")
    b.add_argument("--sandbox", choices=["auto", "strict", "off"], default="auto")
    b.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document (overhead_us, floor_us, overhead_vs_floor, ...) instead",
    )
    b.set_defaults(bench_run=run_protocol)


def run_protocol(args: argparse.Namespace) -> int:
    from arena.bench.protocol import run as bench_protocol
    from arena.sandbox import Level

    return bench_protocol(Path(args.bot), args.games, Level(args.sandbox), args.json)


def _tournament(bench: Sub) -> None:
    b = bench.add_parser(
        "tournament",
        help="games/s with 1 worker vs all cores, persistent vs per-game bots",
        description=(
            "Runs the same small round-robin four times: 1 worker and one per core, with "
            "persistent bot processes and with a fresh process per game; prints games/s and "
            "the speed-ups (measured in one run) beside the machine's own ceiling (as many "
            "independent 1-worker tournaments as cores at once, against one alone), then "
            "where one game's time goes (rules, encode, pipe wait, record, frames, store...: "
            "an inline run under cProfile)."
        ),
    )
    b.add_argument("--bots", nargs="+", metavar="BOT_DIR", help="default: the bundled bots")
    b.add_argument("--seeds", type=int, help="deals per pairing (default 30; 25 end to end)")
    b.add_argument(
        "--end-to-end",
        action="store_true",
        help="instead: a 300-game tournament as a user runs it (fresh process, cold builds, "
        "final report), then the same command with nothing to play",
    )
    b.add_argument(
        "--baseline",
        metavar="ARENA",
        help="with --end-to-end: another arena executable (e.g. an older install) measured "
        "in the same run, for before/after ratios",
    )
    b.add_argument("--json", action="store_true", help="print one JSON document instead")
    b.add_argument(
        "--baseline-comp90054",
        type=Path,
        metavar="FOLDER",
        help="your copy of the COMP90054 Azul framework (game.py, Azul/, agents/generic/): "
        "its runner's own game loop (first_move vs random) is timed in alternating blocks "
        "with a 1-worker tournament, games/s per core of each and the ratio",
    )
    b.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="ray: instead, the same tournament on the local pool and on Ray (games/s, "
        "per-game overhead of Ray)",
    )
    b.add_argument("--ray-address", metavar="ADDR", help="with --executor ray (default: local)")
    b.set_defaults(bench_run=run_tournament)


def run_tournament(args: argparse.Namespace) -> int:
    from arena.kits import bundled_bots

    folders = [Path(b) for b in args.bots] if args.bots else bundled_bots()
    if args.executor == "ray":
        from arena.bench.distributed import print_ray_bench

        return print_ray_bench(folders, args.seeds or 30, args.ray_address, console, args.json)
    if args.end_to_end:
        from arena.bench.endtoend import print_end_to_end

        return print_end_to_end(folders, args.seeds, args.baseline, console, args.json)
    from arena.bench.tournament import (
        bench_tournament,
        bench_tournament_json,
        print_bench_tournament,
        print_game_cost,
        print_vs_comp90054,
    )

    seeds = args.seeds or 30
    _check_bots(folders, seeds)
    vs = _vs_comp90054(args.baseline_comp90054, folders, seeds)
    with console.status(
        "running the same tournament four ways, two more 1-worker/all-core pairs, then profiled…"
    ):
        runs, scaling, cost = bench_tournament(folders, seeds=seeds)
    if args.json:
        print(json.dumps(bench_tournament_json(runs, scaling, cost, vs)))
        return 0
    print_bench_tournament(runs, scaling, len(folders), console)
    print_game_cost(cost, console)
    if vs is not None:
        print_vs_comp90054(vs, console)
    return 0


def _check_bots(folders: list[Path], seeds: int) -> None:
    """The bench's tournaments refuse what ``arena tournament`` refuses (the same folder
    twice, ...): say so in one line before the first run, not as a traceback from it."""
    from pydantic import ValidationError

    from arena.tournament import TournamentConfig
    from arena.tournament.config import explain

    try:
        TournamentConfig(bots=folders, players=[2], variants=["coloured"], seeds=seeds)
    except ValidationError as exc:
        raise UserError(explain(exc, "command line")) from None


def _vs_comp90054(framework: Path | None, folders: list[Path], seeds: int) -> VsComp90054 | None:
    """With ``--baseline-comp90054``: the arena and the user's COMP90054 runner timed in
    alternating blocks (None without the option)."""
    if framework is None:
        return None
    from arena.bench.comp90054_runner import load_runner
    from arena.bench.engine import BaselineError
    from arena.bench.tournament import bench_vs_comp90054, build_bots

    try:
        runner = load_runner(framework)
    except BaselineError as error:
        raise UserError(str(error)) from None
    with console.status("the arena and the COMP90054 runner in alternating blocks…"):
        build_bots(folders)
        return bench_vs_comp90054(folders, seeds, runner)


def _report(bench: Sub) -> None:
    b = bench.add_parser(
        "report",
        help="arena report time and peak memory from 1k to 100k games (or 1M), SQLite or "
        "PostgreSQL, vs the old path",
        description=(
            "Grows a store of real games (played by the engine, stored as a tournament "
            "stores them) to each size and times `arena report` on it in a fresh process "
            "(default bootstrap, replay pages included), with its peak memory: a first "
            "report and the same again; up to 5,000 games also the same games stored "
            "without replay frames; the old ratings path on the baseline size."
        ),
    )
    b.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000],
        metavar="GAMES",
        help="store sizes in finished games (default 1k 2k 5k 10k 20k 50k 100k)",
    )
    b.add_argument("--bots", type=int, default=16, help="bots in the field (default 16)")
    b.add_argument(
        "--baseline-games",
        type=int,
        default=1_000,
        help="store size the old ratings path is timed on (default 1000; 0 to skip: minutes)",
    )
    b.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="another arena source tree (e.g. `git worktree add /tmp/old main`): its "
        "`arena report` is timed on every size too, in the same run, for before/after ratios",
    )
    b.add_argument(
        "--store",
        metavar="URL",
        help="keep the games in PostgreSQL instead of SQLite files: a database URL "
        "(postgresql+psycopg://user:pw@host/db) of a user who may create databases; the "
        "bench makes its stores as new databases on that server and drops them at the end",
    )
    b.add_argument(
        "--json", action="store_true", help="print a JSON list of {games, seconds, peak_mb, path}"
    )
    b.set_defaults(bench_run=run_report)


def run_report(args: argparse.Namespace) -> int:
    from arena.bench.report import run_bench_report

    return run_bench_report(
        args.sizes,
        args.bots,
        args.baseline_games,
        args.json,
        console,
        before=args.before,
        store=args.store,
    )


def _clocks(bench: Sub) -> None:
    b = bench.add_parser(
        "clocks",
        help="false timeouts under wall vs CPU clocks on an oversubscribed host",
        description=(
            "A bot burning 80%% of its move time in CPU and one burning 120%%, run with as "
            "many busy bots as cores and then 4x as many, half on wall clocks and half on "
            "CPU clocks side by side. Counts false timeouts (honest bot) and timeouts of "
            "the over-budget bot per clock. Exits 1 unless CPU clocks have no false "
            "timeout and time out every over-budget decision. About a minute."
        ),
    )
    b.add_argument("--oversubscription", type=int, default=4, help="busy bots per core")
    b.add_argument("--decisions", type=int, default=6, help="decisions per bot (default 6)")
    time_per_move_option(b, default=500)
    b.add_argument("--sandbox", choices=["auto", "strict", "off"], default="auto")
    b.add_argument("--json", action="store_true", help="print one JSON document")
    b.set_defaults(bench_run=run_clocks)


def run_clocks(args: argparse.Namespace) -> int:
    from arena.bench.clocks import bench_clocks, print_clocks
    from arena.sandbox import Level

    if args.oversubscription < 2 or args.decisions < 1:
        raise UserError("--oversubscription must be at least 2 and --decisions at least 1")
    try:
        time = time_control(args)
        with console.status(f"honest and over-budget bots at 1x and {args.oversubscription}x…"):
            result = bench_clocks(
                args.oversubscription, args.decisions, time, level=Level(args.sandbox)
            )
    except ValueError as exc:
        raise UserError(f"--time-per-move: {exc}") from None
    if args.json:
        print(json.dumps(result))
    else:
        print_clocks(result, console.print)
    return 0 if result["goal_met"] else 1


def _serve(bench: Sub) -> None:
    b = bench.add_parser(
        "serve",
        help="a live competition server under concurrent page/API clients",
        description=(
            "Starts the real `arena serve` on a loopback port with a temporary competition "
            "(three bundled bots uploaded through the API, the ladder playing), then runs "
            "CLIENTS concurrent clients (wrk when on PATH, else httpx) over a mix of pages and "
            "API routes for SECONDS: first paced to --rate requests/s in all, then asking as "
            "fast as they are answered. Prints requests, errors and p50/p95/p99 latency "
            "overall, per route and per half of the run, the bot page as made without the "
            "cache, and the ladder's games/min alone, beside the paced load, beside idle "
            "processes using as much CPU (the machine's bound) and beside the full load. "
            "Exit status 1 on any error. "
            "Needs the server extra (pip install -e '.[server]')."
        ),
    )
    b.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    b.add_argument("--seconds", type=float, default=30, help="length of the load (default 30)")
    b.add_argument(
        "--store",
        default="sqlite",
        metavar="URL",
        help="the competition's store: sqlite (default, in a temporary folder) or an empty "
        "PostgreSQL database, postgresql+psycopg://USER:PW@HOST/DB",
    )
    b.add_argument(
        "--client",
        choices=["auto", "wrk", "httpx"],
        default="auto",
        help="the load generator: wrk (C, not the bottleneck; default when on PATH) or the "
        "bench's own async httpx clients",
    )
    b.add_argument(
        "--games",
        type=int,
        default=0,
        metavar="N",
        help="first store N finished games among the bots (SQL, fast): bot pages at scale",
    )
    b.add_argument(
        "--server-tree",
        type=Path,
        metavar="DIR",
        help="run the server from another source tree (e.g. a checkout of main): the "
        "before of a before/after in one run",
    )
    b.add_argument(
        "--rate",
        type=float,
        metavar="N",
        help="first, the same clients paced to send N requests/s in all for SECONDS, in "
        "turn with the ladder alone and with idle-priority processes spinning what the load "
        "used: the ladder's games/min beside a given load, as visitors who refresh now and "
        "then make it, and the machine's bound for it (default 1000, 0 = skip)",
    )
    b.add_argument("--json", action="store_true", help="print one JSON document")
    b.set_defaults(bench_run=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from arena.bench.serve import DEFAULT_RATE
    from arena.bench.serve import run as bench_serve

    return bench_serve(
        args.clients,
        args.seconds,
        args.json,
        console,
        args.store,
        args.client,
        args.games,
        args.server_tree,
        DEFAULT_RATE if args.rate is None else args.rate,
    )


def _builds(bench: Sub) -> None:
    b = bench.add_parser(
        "builds",
        help="cold build vs a warm one-line rebuild of the Go and Rust kits",
        description=(
            "Copies each kit as `arena new-bot` does, builds it with an empty build cache "
            "(cold), changes one line of code and builds it again (warm: the bot's own "
            "compiler cache is reused), in one run; prints both times and the ratio. "
            "Exits 1 unless every warm rebuild took at most 3 s."
        ),
    )
    b.add_argument(
        "--kit",
        action="append",
        choices=["go", "rust"],
        help="only this kit (repeatable; default: go and rust)",
    )
    b.add_argument("--sandbox", choices=["auto", "strict", "off"], default="auto")
    b.add_argument("--json", action="store_true", help="print one JSON document")
    b.set_defaults(bench_run=run_builds)


def run_builds(args: argparse.Namespace) -> int:
    from arena.bench.builds import bench_builds, print_builds
    from arena.sandbox import Level

    languages = tuple(args.kit or ("go", "rust"))
    with console.status("cold builds, then warm one-line rebuilds…"):
        result = bench_builds(languages, Level(args.sandbox))
    if args.json:
        print(json.dumps(result))
    else:
        print_builds(result, console.print)
    return 0 if result["goal_met"] else 1


def _scale(bench: Sub) -> None:
    b = bench.add_parser(
        "scale",
        help="a thousand bots: a sampled tournament and a ladder, memory and fairness",
        description=(
            "A sampled tournament's scheduler and the competition ladder (a SQLite store) "
            "over a field of --bots versions until each has --games-per-bot games, their "
            "results scripted (no bot process: the harness is measured); prints games, "
            "games/s (as a ratio to a tenth of the field, run as the baseline), peak MB "
            "per process, memory per bot and per game, games per bot max/min, the most "
            "persistent bots a worker held against its bound, and how many games start "
            "before a new version's first."
        ),
    )
    b.add_argument("--bots", type=int, default=1000, help="field size (default 1000)")
    b.add_argument("--games-per-bot", type=int, default=20, help="games each (default 20)")
    b.add_argument("--json", action="store_true", help="print one JSON document instead")
    b.set_defaults(bench_run=run_scale)


def run_scale(args: argparse.Namespace) -> int:
    from arena.bench.scale import run as bench_scale

    if args.bots < 10 or args.games_per_bot < 1:
        raise UserError("--bots must be 10 or more and --games-per-bot 1 or more")
    return bench_scale(args.bots, args.games_per_bot, args.json)
