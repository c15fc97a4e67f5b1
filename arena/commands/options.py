"""The option groups several commands share, and their one translation into settings."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from arena.commands.output import UserError, err_console

if TYPE_CHECKING:
    from arena.referee import BotSpec, SandboxSettings
    from arena.referee.clock import TimeControl
    from arena.referee.settings import PlaySettings


def add_game_options(p: argparse.ArgumentParser) -> None:
    """Clock, fault and sandbox flags. An absent flag is None: the defaults live in
    ``PlaySettings`` (and a tournament file's values are not overridden)."""
    from arena.referee.settings import DEFAULTS

    time = DEFAULTS.time
    time_per_move_option(p)
    p.add_argument(
        "--time-bank",
        type=int,
        metavar="MS",
        help="optional per-game time bank in ms (each decision capped at the time per move)",
    )
    p.add_argument(
        "--increment",
        type=int,
        metavar="MS",
        help=f"added to the bank after each decision (default {time.increment_ms})",
    )
    p.add_argument(
        "--init-time",
        type=int,
        metavar="MS",
        help=f"time to start and answer the handshake (default {time.init_ms})",
    )
    from arena.referee.clock import TIME_PRESETS

    p.add_argument(
        "--time-preset",
        choices=sorted(TIME_PRESETS),
        help="ready time rules (comp90054: 1000 ms a decision, over it a warning, the 3rd "
        "warning or one over 3000 ms forfeits, 15000 ms start-up, 5000 ms at each round's "
        "start, cpu clock); other time flags override it",
    )
    p.add_argument(
        "--hard-time",
        type=int,
        metavar="MS",
        help="hard limit per decision: over it forfeits at once, between the time per move "
        "and it the move counts with a warning",
    )
    p.add_argument(
        "--warnings",
        type=int,
        metavar="N",
        help="with --hard-time: a seat's N-th warning of a game forfeits it",
    )
    p.add_argument(
        "--round-start-time",
        type=int,
        metavar="MS",
        help="time for a bot's first decision of each round (instead of the time per move)",
    )
    p.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        help=f"what a decision is charged (default {time.clock.value}): cpu = CPU time of the "
        "bot's process tree, so a loaded host costs it nothing (an idle ceiling of "
        f"{time.wall_ceiling:g}x the decision's time still stops a bot that sleeps); "
        "wall = elapsed time",
    )
    p.add_argument(
        "--fault-policy",
        metavar="POLICY",
        help=f"'forfeit' or 'strikes:N' (default {DEFAULTS.fault_policy})",
    )
    p.add_argument(
        "--round-limit",
        type=int,
        help=f"adjudicate after N rounds (default {DEFAULTS.round_limit})",
    )
    p.add_argument(
        "--sandbox",
        choices=["auto", "strict", "off"],
        help=f"auto: every layer available (default {DEFAULTS.sandbox.value}); strict: refuse "
        "unless all are on; off: process group and rlimits only (for debugging your own bot)",
    )
    p.add_argument(
        "--toolchain",
        action="append",
        metavar="PATH",
        help="a toolchain folder outside /usr (e.g. /opt/rust) to show read-only inside the "
        "sandbox, its bin/ added to PATH; repeatable",
    )
    p.add_argument(
        "--python-env",
        action="append",
        metavar="PATH",
        help="a Python environment (a virtualenv, or a folder of modules such as a course "
        "framework) to show read-only inside the sandbox and put on every bot's PYTHONPATH; "
        "repeatable",
    )


def time_per_move_option(p: argparse.ArgumentParser, default: int | None = None) -> None:
    """``--time-per-move MS`` (``--move-ms`` is its older spelling)."""
    from arena.referee.settings import DEFAULTS

    shown = default if default is not None else DEFAULTS.time.move_ms
    p.add_argument(
        "--time-per-move",
        "--move-ms",
        dest="time_per_move",
        type=int,
        default=default,
        metavar="MS",
        help=f"time per decision in ms (default {shown})",
    )


def time_control(args: argparse.Namespace) -> TimeControl:
    """The time control the flags ask for (absent ones: the defaults). Raises ValueError
    (pydantic's) for an impossible value."""
    from arena.referee.clock import TimeControl

    given = {"move_ms": args.time_per_move}
    return TimeControl.model_validate({k: v for k, v in given.items() if v is not None})


def game_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The game flags given, as ``PlaySettings`` fields; an absent flag is left out (so the
    defaults, or a tournament file's values, stay)."""
    time = {
        "move_ms": args.time_per_move,
        "init_ms": args.init_time,
        "bank_ms": args.time_bank,
        "increment_ms": args.increment,
        "clock": args.clock,
        "preset": args.time_preset,
        "hard_move_ms": args.hard_time,
        "warnings": args.warnings,
        "round_start_ms": args.round_start_time,
    }
    data: dict[str, Any] = {
        "time": {k: v for k, v in time.items() if v is not None},
        "fault_policy": args.fault_policy,
        "sandbox": args.sandbox,
        "round_limit": args.round_limit,
        "toolchains": args.toolchain,
        "python_env": args.python_env,
    }
    return {k: v for k, v in data.items() if v is not None}


def play_settings(args: argparse.Namespace) -> PlaySettings:
    """The play settings from the game flags (defaults: ``PlaySettings``)."""
    from pydantic import ValidationError

    from arena.referee.settings import PlaySettings
    from arena.tournament.config import explain

    try:
        return PlaySettings.model_validate(game_flags(args))
    except ValidationError as exc:
        raise UserError(explain(exc, "command line")) from None


def sandbox_settings(play: PlaySettings, *, announce: bool = True) -> SandboxSettings:
    """The sandbox for ``play`` (level, declared toolchains), after checking its layers:
    ``strict`` refuses when one is missing, ``auto`` warns. ``announce``: print the layers
    in force (False: the caller does, once its other checks passed, so that a refusal
    stays one line)."""
    from arena.referee import SandboxSettings
    from arena.sandbox import SandboxUnavailable, check_level

    try:
        warning = check_level(play.sandbox)
    except SandboxUnavailable as exc:
        raise UserError(str(exc)) from None
    if warning:
        err_console.print(warning, style="yellow", markup=False)
    if announce:
        announce_sandbox(play)
    return SandboxSettings(
        level=play.sandbox, toolchains=play.toolchains, python_env=play.python_env
    )


def announce_sandbox(play: PlaySettings) -> None:
    """Print :func:`sandbox_in_force` on stderr."""
    err_console.print(sandbox_in_force(play), markup=False, highlight=False)


def sandbox_in_force(play: PlaySettings) -> str:
    """One line naming the sandbox level and the layers it really uses here, so a run
    says what protected it (``--sandbox strict`` refuses before this if one is off)."""
    from arena.sandbox import detect_layers

    if play.sandbox.value == "off":
        return "sandbox off: no bubblewrap, seccomp or cgroups (for bots you trust)"
    layers = detect_layers()
    text = f"sandbox {play.sandbox.value}: " + ", ".join(s.name for s in layers if s.on)
    off = [s.name for s in layers if not s.on]
    return text + (f" (off: {', '.join(off)})" if off else "")


def load_bots(folders: Sequence[str]) -> list[BotSpec]:
    """The bots in these folders (their bot.toml read and checked)."""
    from arena.referee import ManifestError, load_bot

    try:
        return [load_bot(folder) for folder in folders]
    except ManifestError as exc:
        raise UserError(str(exc)) from None


def add_bootstrap_option(p: argparse.ArgumentParser) -> None:
    """``--bootstrap``: the report's rank-interval resamples."""
    p.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="rank-interval resamples (default 100, fewer past 500,000 games: at most "
        "50M rated games; 0 = none)",
    )


def add_ranking_options(p: argparse.ArgumentParser) -> None:
    """``--rank-by`` and ``--points``: what ranks a leaderboard (report, export)."""
    p.add_argument(
        "--rank-by",
        choices=("trueskill", "final", "points"),
        default="trueskill",
        help="what ranks the leaderboard: online TrueSkill (default), the final ranking "
        "(a batch fit of every game, order-invariant, with a stability audit), or --points",
    )
    p.add_argument(
        "--points",
        metavar="FORMULA",
        default=None,
        help="a points formula over wins, ties, losses, points, faults, failed, games, e.g. "
        '"50*wins + 20*ties + points" (+ - * / and parentheses); adds Points and Failed',
    )


def add_progress_options(p: argparse.ArgumentParser) -> None:
    """How a tournament shows its progress: a bar, nothing, or JSON lines."""
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--jsonl", action="store_true", help="one JSON line per finished game")
