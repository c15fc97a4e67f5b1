"""``arena sprt NEW OLD``: the command's options, its live line and its verdict."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from arena.play.build import BuildError
from arena.play.executors import WORKERS_HELP, worker_count
from arena.referee import BotSpec
from arena.referee.settings import PlaySettings
from arena.referee.toolchains import explain_build_failure
from arena.sprt.runner import (
    DEFAULT_ROOT,
    SprtConfig,
    SprtError,
    SprtStatus,
    default_output,
    run_sprt,
)
from arena.sprt.stats import EloEstimate, SprtBounds, Verdict
from arena.store.sprt import SprtStoreError

DESCRIPTION = """\
Is NEW stronger than OLD? Plays 2-player game pairs (the same deal twice, seats
swapped) and stops as soon as a sequential probability ratio test decides: H1
"NEW is at least ELO1 stronger" or H0 "NEW is at most ELO0 stronger", with error
rates ALPHA (accepting H1 wrongly) and BETA (accepting H0 wrongly). The statistic is
the pentanomial GSPRT of fishtest and fastchess in logistic Elo. Games are stored in
OUT/sprt.sqlite as they finish: run the same command again to resume. Exit status:
0 = H1 accepted, 1 = H0 accepted, 3 = no decision within --max-pairs.
3- and 4-player A/B tests are not supported (see docs/tournaments.md)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's own options (clock, fault and sandbox flags are added by the CLI)."""
    p.add_argument("new", metavar="NEW", help="bot folder of the candidate")
    p.add_argument("old", metavar="OLD", help="bot folder of the baseline")
    p.add_argument("--elo0", type=float, default=0.0, help="H0: NEW is at most this (default 0)")
    p.add_argument("--elo1", type=float, default=20.0, help="H1: NEW is at least this (default 20)")
    p.add_argument("--alpha", type=float, default=0.05, help="false H1 rate (default 0.05)")
    p.add_argument("--beta", type=float, default=0.05, help="false H0 rate (default 0.05)")
    p.add_argument(
        "--variants",
        nargs="+",
        choices=["coloured", "gray"],
        default=["coloured", "gray"],
        help="walls, used in turn pair by pair (default both)",
    )
    p.add_argument("--players", type=int, default=2, help="only 2 is supported")
    p.add_argument("--max-pairs", type=int, default=2000, help="give up after N pairs")
    p.add_argument("--master-seed", type=int, default=1, help="derives every pair's deal")
    p.add_argument("--workers", type=int, default=0, help=WORKERS_HELP)
    p.add_argument(
        "--out",
        help="output folder (default: the test's own results/sprt/NEW-vs-OLD, -2, -3... "
        "for another test of the same bots)",
    )
    p.add_argument(
        "--per-game-processes", action="store_true", help="start bots afresh for every game"
    )
    p.add_argument("--quiet", action="store_true", help="no live status line")


def config_from_args(args: argparse.Namespace, play: PlaySettings) -> SprtConfig:
    """The test from its own flags; ``play`` (clock, faults, sandbox) comes validated."""
    if args.players != 2:
        raise SprtError(
            "arena sprt tests 2-player games only: with 3 or 4 players a game has no "
            "single opponent, so there are no game pairs and no pentanomial. Compare bots "
            "in 3-4 player games with a tournament instead: "
            f"arena tournament --bots {args.new} {args.old} OTHER... --players {args.players}"
        )
    try:
        bounds = SprtBounds(args.elo0, args.elo1, args.alpha, args.beta)
    except ValueError as exc:
        raise SprtError(str(exc)) from None
    for flag, value, low in (
        ("--max-pairs", args.max_pairs, 1),
        ("--workers", args.workers, 0),
        ("--master-seed", args.master_seed, 0),
    ):
        if value < low:
            raise SprtError(f"{flag} must be at least {low}, got {value}")
    config = SprtConfig(
        new=Path(args.new),
        old=Path(args.old),
        bounds=bounds,
        variants=tuple(dict.fromkeys(args.variants)),
        master_seed=args.master_seed,
        max_pairs=args.max_pairs,
        play=play,
        persistent=not args.per_game_processes,
        workers=args.workers,
        output=Path(args.out or DEFAULT_ROOT).resolve(),
    )
    return config if args.out else replace(config, output=default_output(config))


def _elo(x: float) -> str:
    if not math.isfinite(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:+.1f}" if round(x, 1) != 0 else "0.0"


def status_line(s: SprtStatus) -> str:
    elo = s.elo
    return (
        f"pairs {s.penta.pairs} · games {s.games} (W {s.wins} D {s.draws} L {s.losses}) · "
        f"penta {s.penta} · LLR {s.llr:+.2f} ({s.bounds.lower:+.2f}, {s.bounds.upper:+.2f}) · "
        f"Elo {_elo(elo.elo)} · LOS {s.los:.1%} · draws {s.draw_ratio:.0%}"
    )


def summary(s: SprtStatus, config: SprtConfig, resume: str) -> list[str]:
    """The verdict, the Elo with its interval, and what to do next (rich markup)."""
    b, elo = s.bounds, s.elo
    new, old = escape(s.new), escape(s.old)
    lines = [
        f"[bold]SPRT {new} vs {old}[/bold]: elo0 {b.elo0:g}, elo1 {b.elo1:g}, "
        f"alpha {b.alpha:g}, beta {b.beta:g} (pentanomial GSPRT, logistic Elo)",
        f"Games  {s.games} in {s.penta.pairs} pairs: W {s.wins}  D {s.draws}  L {s.losses}   "
        f"pentanomial [LL LD WL+DD WD WW] = {s.penta}",
        _elo_line(elo),
        f"LOS    {s.los:.1%} (likelihood that {new} is stronger)   draw ratio "
        f"{s.draw_ratio:.1%} of games",
        f"LLR    {s.llr:+.2f}  (bounds {b.lower:+.2f}, {b.upper:+.2f})",
    ]
    lines += [f"[yellow]Warning[/yellow]: {escape(w)}" for w in s.warnings]
    if s.faults:
        faults = ", ".join(f"{escape(k)} ×{v}" for k, v in sorted(s.faults.items()))
        lines.append(f"Faults {faults}  (logs: {config.output / 'logs'})")
        for role, folder in (("new", config.new), ("old", config.old)):
            if any(k.startswith(f"{role}:") for k in s.faults):
                lines.append(
                    f"       {role.upper()} faulted (a fault loses the game): "
                    f"arena check-bot {escape(str(folder))}"
                )
    if s.verdict is Verdict.H1:
        lines += [
            f"[green]H1 accepted[/green]: {new} is stronger than {old} by at least about "
            f"{b.elo1:g} Elo (false-positive rate {b.alpha:g}).",
            f"Next: keep {new} as the new baseline and test the next change against it "
            "(arena sprt NEXT " + escape(str(config.new)) + ").",
        ]
    elif s.verdict is Verdict.H0:
        lines += [
            f"[red]H0 accepted[/red]: {new} is not {b.elo1:g} Elo stronger than {old} "
            f"(it is at most about {b.elo0:g}; false-negative rate {b.beta:g}).",
            f"Next: keep {old}; rework the change, or if it simplifies the bot, check it is "
            f"no regression with --elo0 {-b.elo1:g} --elo1 {b.elo0:g}.",
        ]
    else:
        lean = "H1 (NEW better)" if s.llr > 0 else "H0 (NEW not better)"
        lines += [
            f"[yellow]No decision[/yellow] after {s.penta.pairs} pairs (--max-pairs "
            f"{config.max_pairs}); the LLR leans towards {lean}.",
            f"Next: continue the same test with more pairs ({escape(resume)} --max-pairs "
            f"{config.max_pairs * 2}); a test that never decides means a difference between "
            "elo0 and elo1, too small to matter at these bounds.",
        ]
    lines.append(
        f"Ledger: {config.output / 'sprt.sqlite'}   summary: {config.output / 'sprt.json'}"
    )
    return lines


def _elo_line(elo: EloEstimate) -> str:
    if math.isfinite(elo.elo) and math.isfinite(elo.low) and math.isfinite(elo.high):
        interval = f"95% CI {_elo(elo.low)} .. {_elo(elo.high)}"
    elif elo.score in (0.0, 1.0):
        interval = "no finite estimate: one bot scored every point"
    else:
        interval = f"95% CI {_elo(elo.low)} .. {_elo(elo.high)}"
    return f"Elo    {_elo(elo.elo)}  ({interval}), score {elo.score:.3f} per game"


EXIT = {Verdict.H1: 0, Verdict.H0: 1, Verdict.CONTINUE: 3}


def _without_max_pairs(argv: list[str]) -> list[str]:
    """The command line minus --max-pairs (the resume hint adds a larger one)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--max-pairs":
            skip = True
        elif not arg.startswith("--max-pairs="):
            out.append(arg)
    return out


def sprt_command(
    args: argparse.Namespace,
    play: PlaySettings,
    console: Console,
    err_console: Console,
    user_error: Callable[[str], Exception],
) -> int:
    """Run the test with a live status line; print the verdict, or how to resume."""
    try:
        config = config_from_args(args, play)
    except (SprtError, SprtStoreError) as exc:
        raise user_error(str(exc)) from None
    quiet = bool(args.quiet)
    resume = (
        "arena " + shlex.join(_without_max_pairs(sys.argv[1:])) if sys.argv[1:] else "arena sprt"
    )

    def on_start(new: BotSpec, old: BotSpec) -> None:
        if not quiet:
            err_console.print(
                f"SPRT {escape(new.name)} vs {escape(old.name)}, "
                f"{worker_count(config.workers)} worker(s), "
                f"-> {config.output}"
            )

    def on_progress(s: SprtStatus) -> None:
        if not quiet and s.games > s.games_before and s.games % 2 == 0:
            err_console.print(status_line(s), markup=False, highlight=False)

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    # Ctrl-C even when started in the background by a shell that ignores SIGINT there
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status = run_sprt(config, on_progress=on_progress, on_start=on_start)
    except KeyboardInterrupt:
        err_console.print(
            f"\n[yellow]Interrupted.[/yellow] Finished games are stored in {config.output}; "
            f"running games were abandoned.\nResume with: {escape(resume)}"
        )
        return 130
    except (SprtError, SprtStoreError) as exc:
        raise user_error(str(exc)) from None
    except BuildError as exc:
        raise user_error(explain_build_failure(str(exc), play.toolchains)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    try:
        _write_summary(config.output / "sprt.json", status.to_json())
    except SprtError as exc:
        raise user_error(str(exc)) from None
    for line in summary(status, config, resume):
        console.print(line)
    return EXIT[status.verdict]


def _write_summary(path: Path, data: dict[str, Any]) -> None:
    def finite(x: Any) -> Any:
        return x if not isinstance(x, float) or math.isfinite(x) else None

    cleaned = {
        k: [finite(v) for v in x] if isinstance(x, list) else finite(x) for k, x in data.items()
    }
    try:
        path.write_text(json.dumps(cleaned, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise SprtError(f"{path}: cannot write the summary ({exc})") from None
