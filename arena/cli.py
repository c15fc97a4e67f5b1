"""The ``arena`` command line. Thin: each command calls into one package."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape as esc

from arena import __version__
from arena.errors import ArenaError
from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.engine.record import DecisionRecord
    from arena.referee import BotSpec, SandboxSettings
    from arena.referee.settings import PlaySettings
    from arena.tournament import TournamentConfig


def _console(stderr: bool = False) -> Console:
    """Tables stay readable when output goes to a file or CI log (rich assumes 80 columns)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


console = _console()
err_console = _console(stderr=True)


def shown(text: str) -> str:
    """Bot-controlled text for the terminal: control characters visible, no rich markup."""
    return esc(visible(text))


def shown_lines(text: str, indent: str, last: int = 5) -> str:
    """The last lines of bot-controlled text (a stderr tail, build output), made safe."""
    lines = visible(text.strip(), multiline=True).split("\n")[-last:]
    return esc(indent + ("\n" + indent).join(lines))


class UserError(ArenaError):
    """A mistake in the user's input: printed as one clear line, exit status 2."""


# ---------------------------------------------------------------- replay


def _replay_sources(paths: Sequence[str], game_ids: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """(label, GameRecord) from record files and from tournament folders' stores."""
    from arena.recordio import load_record
    from arena.tournament.records import stored_records

    for text in paths:
        path = Path(text)
        if path.is_dir():
            yield from stored_records(path, game_ids)
        else:
            yield text, load_record(path)


def _times_text(decision: DecisionRecord) -> str:
    """``"  (wall 3.1 ms, CPU 0.4 ms)"`` for ``replay --show``; empty when not measured."""
    parts = [
        f"{label} {value:.1f} ms"
        for label, value in (("wall", decision.think_ms), ("CPU", decision.cpu_ms))
        if value is not None
    ]
    if decision.auto:
        parts.append("played by the referee")
    return f"  ({', '.join(parts)})" if parts else ""


def cmd_replay(args: argparse.Namespace) -> int:
    from arena.engine import Game, ReplayError, replay

    status = checked = 0
    sources = list(_replay_sources(args.records, args.game or []))
    verbose = args.show or len(sources) <= 20
    for label, record in sources:
        names = record.players
        times = iter([_times_text(d) for r in record.rounds for d in r.decisions])

        def show(
            game: Game,
            move: str,
            seat: int,
            names: list[str] = names,
            times: Iterator[str] = times,
        ) -> None:
            if game.rounds[-1].decisions == [] and game.decision.value == "draft":
                console.print(f"\n{game.render(names)}")
            spent = next(times, "")
            console.print(f"  round {game.round}  {names[seat]} (seat {seat}): {move}{spent}")

        try:
            game = replay(record, on_decision=show if args.show else None)
        except ReplayError as exc:
            console.print(f"[red]{esc(label)}: {esc(str(exc))}[/red]")
            status = 1
            continue
        checked += 1
        if args.show:
            console.print(f"\n{game.render(names)}")
        if verbose:
            scores = ", ".join(f"{f.player} {f.total} (#{f.rank})" for f in record.final)
            decisions = sum(len(r.decisions) for r in record.rounds)
            console.print(
                f"[green]OK[/green] {esc(label)}: {record.n_players} players, "
                f"{record.variant} wall, "
                f"{len(record.rounds)} rounds, {decisions} decisions, "
                f"end {record.end_reason}; {scores}"
            )
            for fault in record.faults:
                console.print(
                    f"  fault: seat {fault.seat} ({shown(names[fault.seat])}) {fault.kind} in "
                    f"round {fault.round}: {shown(fault.message)}"
                    + (" (forfeit)" if fault.forfeit else " (strike, forgiven)")
                )
                _print_evidence(fault, "    ")
    if not sources:
        raise UserError("no finished game to replay there")
    summary = f"{checked}/{len(sources)} records verified"
    console.print(f"[green]{summary}[/green]" if status == 0 else f"[red]{summary}[/red]")
    return status


def cmd_view(args: argparse.Namespace) -> int:
    from arena.viewer.command import ViewError, write_views

    try:
        write_views(
            Path(args.target),
            args.game or [],
            Path(args.out) if args.out else None,
            args.open,
            say=console.print,
        )
    except ViewError as exc:
        raise UserError(str(exc)) from None
    return 0


# ---------------------------------------------------------------- match


def _load_bots(folders: Sequence[str]) -> list[BotSpec]:
    from arena.referee import ManifestError, load_bot

    try:
        return [load_bot(folder) for folder in folders]
    except ManifestError as exc:
        raise UserError(str(exc)) from None


def _sandbox_settings(play: PlaySettings) -> SandboxSettings:
    """The sandbox for ``play`` (level, declared toolchains), after checking its layers."""
    from arena.referee import SandboxSettings
    from arena.sandbox import Level, SandboxUnavailable, detect_layers, sandbox_warning

    settings = SandboxSettings(level=play.sandbox, toolchains=play.toolchains)
    if settings.level is Level.STRICT:
        missing = [layer for layer in detect_layers() if not layer.on]
        if missing:
            from arena.sandbox.layers import unavailable_message

            raise UserError(unavailable_message(missing))
    elif settings.level is Level.AUTO:
        warning = sandbox_warning(detect_layers())
        if warning:
            err_console.print(f"[yellow]warning:[/yellow] {warning}")
    _ = SandboxUnavailable
    return settings


def _play_settings(args: argparse.Namespace) -> PlaySettings:
    """The play settings from the game flags (defaults: ``PlaySettings``)."""
    from pydantic import ValidationError

    from arena.referee.settings import PlaySettings
    from arena.tournament.config import explain

    data: dict[str, Any] = {
        "time": {
            k: v
            for k, v in {
                "move_ms": args.time_per_move,
                "init_ms": args.init_time,
                "bank_ms": args.time_bank,
                "increment_ms": args.increment,
                "clock": args.clock,
            }.items()
            if v is not None
        },
        "fault_policy": args.fault_policy,
        "sandbox": args.sandbox,
        "round_limit": args.round_limit,
        "toolchains": args.toolchain,
    }
    try:
        return PlaySettings.model_validate({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        raise UserError(explain(exc, "command line")) from None


def _print_evidence(fault: Any, indent: str) -> None:
    """A fault's last line and stderr tail (bot-controlled text: made visible and safe)."""
    if fault.last_message:
        console.print(f"{indent}last line: {shown(fault.last_message)}")
    if fault.stderr_tail:
        console.print(f"{indent}stderr tail:\n" + shown_lines(fault.stderr_tail, indent + "  "))


def _match_folder(out: str | None) -> Path:
    """``--out`` if it holds no record yet, else a new timestamped folder: never overwrite."""
    from arena.referee.match import new_match_folder

    if out is not None:
        if (Path(out) / "record.json").exists():
            raise UserError(f"{out} already holds a game record; choose another --out")
        return Path(out)
    try:
        return new_match_folder(Path("results") / "matches")
    except OSError as exc:
        raise UserError(f"cannot create a folder in results/matches: {exc}") from None


def cmd_match(args: argparse.Namespace) -> int:
    from rich.table import Table

    from arena.referee.build import BuildError
    from arena.referee.match import run_match
    from arena.referee.toolchains import explain_build_failure
    from arena.sandbox import SandboxBusy

    if not 2 <= len(args.bots) <= 4:
        raise UserError(f"a game needs 2, 3 or 4 bots, not {len(args.bots)}")
    specs = _load_bots(args.bots)
    play = _play_settings(args)
    settings = play.game(args.variant, args.seed)
    sandbox = _sandbox_settings(play)
    out = _match_folder(args.out)
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
    table = Table(
        title=f"{record.variant} wall, seed {args.seed}, end: {record.end_reason}, "
        f"{record.clock} clock"
    )
    cols = ("rank", "seat", "bot", "rounds", "+rows", "+cols", "+colours", "total", "think ms")
    for col in (*cols, "cpu ms"):
        table.add_column(col, justify="right" if col not in ("bot",) else "left")
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
            f.player,
            str(f.rounds),
            str(f.rows),
            str(f.columns),
            str(f.colours),
            f"[bold]{f.total}[/bold]",
            f"{stats.mean_ms:.1f} avg / {stats.max_ms:.1f} max" if stats.decisions else "-",
            f"{sum(used) / len(used):.1f} avg / {max(used):.1f} max" if used else "-",
        )
    console.print(table)
    for fault in record.faults:
        verdict = "forfeit" if fault.forfeit else "strike"
        console.print(
            f"[red]fault[/red] seat {fault.seat} ({record.players[fault.seat]}): "
            f"{fault.kind} in round {fault.round}: {shown(fault.message)} ({verdict})"
        )
        _print_evidence(fault, "  ")
    console.print(f"record: {result.record_path}   (verify: arena replay {result.record_path})")
    console.print(f"bot logs: {out}/")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from arena.human.command import play_with_human
    from arena.referee.build import BuildError

    if not args.human:
        raise UserError("arena play seats a person: add --human (bots only: arena match)")
    if not 1 <= len(args.bots) <= 3:
        raise UserError(f"a game needs 1-3 bots beside you, not {len(args.bots)}")
    play = _play_settings(args)
    settings = play.game(args.variant, args.seed)
    specs = _load_bots(args.bots)
    sandbox = _sandbox_settings(play)
    out = _match_folder(args.out) if args.out else _play_folder()
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
    console.print(result.final_position.render(record.players))
    for f in sorted(record.final, key=lambda f: (f.rank, f.seat)):
        console.print(f"#{f.rank} {esc(f.player)} (seat {f.seat}): {f.total}")
    console.print(f"record: {result.record_path}   (replay: arena view {result.record_path})")
    return 0


def _play_folder() -> Path:
    from arena.referee.match import new_match_folder

    try:
        return new_match_folder(Path("results") / "play")
    except OSError as exc:
        raise UserError(f"cannot create a folder in results/play: {exc}") from None


# ---------------------------------------------------------------- check-bot


def cmd_check_bot(args: argparse.Namespace) -> int:
    import statistics

    from arena.referee.checkbot import advice, check_bot
    from arena.sandbox import SandboxBusy

    (spec,) = _load_bots([args.bot])
    if args.games < 1:
        raise UserError("--games must be 1 or more")
    play = _play_settings(args)
    sandbox = _sandbox_settings(play)
    tc = play.time
    with console.status(f"checking {spec.name}…"):
        try:
            report = check_bot(spec, sandbox, tc, games_per_setting=args.games)
        except SandboxBusy as exc:
            raise UserError(str(exc)) from None
    console.print(f"bot {spec.name} ({esc(str(spec.folder))})")
    if report.build_s is not None:
        console.print(f"  build          ok in {report.build_s:.1f} s")
    if report.spawn_ms is not None:
        console.print(f"  start          {report.spawn_ms:.0f} ms (sandboxed spawn)")
    if report.handshake_ms is not None:
        who = ", ".join(f"{k} {v}" for k, v in report.reported.items() if v)
        console.print(
            f"  handshake      {report.handshake_ms:.0f} ms (limit {tc.init_ms} ms); "
            f"says: {shown(who)}"
        )
    if report.games:
        mean = sum(report.scores) / len(report.scores)
        settings = ", ".join(f"{n}p {wall}" for n, wall in report.played)
        console.print(
            f"  games          {report.games} vs random ({settings}): "
            f"{report.wins} won, mean score {mean:.1f}"
        )
    latency = report.latency()
    if latency:
        med, p95, worst = latency
        console.print(
            f"  think time     median {med:.2f} ms, p95 {p95:.2f} ms, max {worst:.2f} ms "
            f"(limit {tc.move_ms} ms)"
        )
    for problem in report.problems:  # may quote the build's output: bot-controlled
        text = esc(visible(problem, multiline=True)).replace("\n", "\n      ")
        console.print(f"  [red]problem[/red] {text}")
    if report.cpu_ms:
        ordered = sorted(report.cpu_ms)
        console.print(
            f"  CPU time       median {statistics.median(ordered):.2f} ms, max {ordered[-1]:.2f} "
            f"ms per decision; this arena charges {tc.clock.value} time"
        )
    for where, fault in report.faults:
        console.print(
            f"  [red]{fault.kind}[/red] in {where}, round {fault.round}: {shown(fault.message)}"
        )
        _print_evidence(fault, "      ")
    for kind in dict.fromkeys(fault.kind for _, fault in report.faults):
        console.print(f"  how to fix {kind}: {esc(advice(kind, report.language))}")
    for note in report.explanations():  # quotes the bot's line
        console.print(f"  why: {shown(note)}")
    for warning in report.warnings():
        console.print(f"  [yellow]warning[/yellow] {esc(warning)}")
    if report.ok:
        opponent = "bots/python-random" if spec.name == "python-greedy" else "bots/python-greedy"
        console.print(
            "[green]PASS[/green]: the bot follows protocol v1. Next: "
            f"arena match {esc(args.bot)} {opponent}"
        )
        return 0
    console.print(
        "[red]FAIL[/red]: fix the problems above (protocol/SPEC.md explains each message)"
    )
    return 1


# ---------------------------------------------------------------- submit


def cmd_submit(args: argparse.Namespace) -> int:
    from arena.server.client import run_submit

    return run_submit(args)


# ---------------------------------------------------------------- new-bot


def cmd_new_bot(args: argparse.Namespace) -> int:
    from arena.kits import KitError, kit_for, new_bot

    try:
        folder = new_bot(args.name, args.language, Path(args.dir))
    except KitError as exc:
        raise UserError(str(exc)) from None
    kit = kit_for(args.language)
    assert kit is not None
    console.print(f"created {esc(str(folder))} from the {kit.language} kit (bots/{kit.folder})")
    console.print(f"  JSON: {kit.json}; flush: {kit.flush}")
    console.print(f"Next: edit choose() in it, then: arena check-bot {esc(str(folder))}")
    return 0


# ---------------------------------------------------------------- tournament


def _tournament_config(args: argparse.Namespace) -> TournamentConfig:
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
        "fault_policy": args.fault_policy,
        "sandbox": args.sandbox,
        "toolchains": args.toolchain,
        "round_limit": args.round_limit,
        "persistent": False if args.per_game_processes else None,
        "executor": getattr(args, "executor", None),
        "ray_address": getattr(args, "ray_address", None),
        "time": {
            "move_ms": args.time_per_move,
            "init_ms": args.init_time,
            "bank_ms": args.time_bank,
            "increment_ms": args.increment,
            "clock": args.clock,
        },
    }
    return load_config(Path(args.config) if args.config else None, overrides)


def run_tournament_command(config: TournamentConfig, args: argparse.Namespace) -> int:
    """Run with a live progress bar (or quiet / JSON lines), then the report."""
    from arena.tournament.command import run_with_progress

    mode = "jsonl" if args.jsonl else "quiet" if args.quiet else "bar"
    if config.sandbox.value != "off":
        _sandbox_settings(config)
    outcome = run_with_progress(
        config, mode=mode, extend=args.extend, console=console, err_console=err_console
    )
    progress = outcome.progress
    if progress is None or mode == "jsonl":
        return outcome.status
    if progress.done == progress.done_before:
        from arena.report.current import report_is_current, stored_leaderboard

        if report_is_current(config.output):  # nothing new: no pandas, no re-rating
            console.print(stored_leaderboard(config.output, width=console.width))
            console.print(
                f"report site (up to date): {esc(str(config.output / 'report' / 'index.html'))}"
            )
            return 0
    return _print_report(config.output, bootstrap=args.bootstrap, quiet=mode == "quiet")


def _print_report(out: Path, bootstrap: int | None, quiet: bool = False) -> int:
    from arena.ratings import DEFAULT_RESAMPLES
    from arena.report.command import report_command

    resamples = DEFAULT_RESAMPLES if bootstrap is None else bootstrap
    if resamples < 0:
        raise UserError("--bootstrap must be 0 or more")
    if not quiet:
        console.print(f"(arena report {out} re-renders the report at any time)")
    status: int = report_command(out, console=console, bootstrap=resamples)
    return status  # its last line is the path of the report site


def cmd_tournament(args: argparse.Namespace) -> int:
    config = _tournament_config(args)
    return run_tournament_command(config, args)


DEMO_SEEDS = 6
"""5 bots: 2p: 10 pairs x 2 seatings, 4p: 5 sets x 12 balanced seatings; x 2 walls x 6 deals
= 960 games (the search bot c-mcts costs about twice a quick bot per game)."""
DEMO_BANK_MS = 1000
"""Per-game time bank in the demo: ample for the greedy and random bots, and it keeps
the search bot (bots/c-mcts, which spends half a fair share of its bank per move) quick."""


def cmd_demo(args: argparse.Namespace) -> int:
    """A round-robin of every bundled bot: both walls, 2- and 4-player games."""
    from arena.referee.clock import TimeControl
    from arena.tournament import TournamentConfig

    bots = _bundled_bots()
    out = Path(args.out).resolve()
    config = TournamentConfig(
        bots=bots,
        players=[2, 4] if len(bots) >= 4 else [2],
        variants=["coloured", "gray"],
        seeds=args.seeds,
        master_seed=1,
        time=TimeControl(bank_ms=DEMO_BANK_MS),
        workers=args.workers or 0,
        output=out,
    )
    console.print(
        f"Demo tournament: {len(bots)} bots ({', '.join(b.name for b in bots)}), "
        f"{' and '.join(f'{k}-player' for k in config.players)} games, both walls, "
        f"{args.seeds} deals per pairing, {config.worker_count} workers -> {out}"
    )
    args.extend = False
    return run_tournament_command(config, args)


def cmd_sprt(args: argparse.Namespace) -> int:
    from arena.sprt.command import sprt_command

    play = _play_settings(args)
    if play.sandbox.value != "off":
        _sandbox_settings(play)  # strict: refuse early; auto: say what is missing
    return sprt_command(args, play, console, err_console, UserError)


def cmd_report(args: argparse.Namespace) -> int:
    return _print_report(Path(args.outdir), bootstrap=args.bootstrap, quiet=True)


def cmd_upgrade(args: argparse.Namespace) -> int:
    from arena.store.upgrade import upgrade

    target: str | Path = args.outdir if "://" in args.outdir else Path(args.outdir)
    if isinstance(target, Path) and target.suffix == ".toml" and target.is_file():
        from arena.server.config import load_competition

        target = load_competition(target).store_url  # the competition's database
    console.print(esc(upgrade(target).describe()))
    return 0


# ---------------------------------------------------------------- schema


def cmd_schema(args: argparse.Namespace) -> int:
    from arena.protocol.schema import DEFAULT_DIR, stale_schemas, write_schemas

    folder = Path(args.dir) if args.dir else DEFAULT_DIR
    if args.check:
        stale = stale_schemas(folder)
        if stale:
            console.print(
                f"[red]stale[/red] in {folder}: {', '.join(stale)} (regenerate: arena schema)"
            )
            return 1
        console.print(f"schemas in {folder} match the protocol models")
        return 0
    for path in write_schemas(folder):
        console.print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------- doctor


def cmd_doctor(args: argparse.Namespace) -> int:
    from arena.sandbox import detect_layers

    layers = detect_layers()
    for layer in layers:
        mark = "[green]on [/green]" if layer.on else "[red]off[/red]"
        console.print(f"{mark} {layer.name:<14} {layer.reason}")
    from arena.referee.build import describe_cache

    console.print(f"\n{esc(describe_cache())}")
    missing = [layer.name for layer in layers if not layer.on]
    if missing:
        console.print(
            f"\nRunning with {len(layers) - len(missing)}/{len(layers)} layers; "
            "`--sandbox strict` would refuse to run."
        )
        return 1
    console.print("\nAll sandbox layers are on: `--sandbox strict` will run.")
    return 0


# ---------------------------------------------------------------- bench


def cmd_bench_engine(args: argparse.Namespace) -> int:
    from arena.bench.engine import run

    return run(args.games, args.repeats, args.seed, args.json)


def cmd_bench_protocol(args: argparse.Namespace) -> int:
    from arena.bench.protocol import run
    from arena.sandbox import Level

    return run(Path(args.bot), args.games, Level(args.sandbox), args.json)


def cmd_bench_report(args: argparse.Namespace) -> int:
    from arena.bench.report import run_bench_report

    return run_bench_report(
        args.sizes, args.bots, args.baseline_games, args.json, console, before=args.before
    )


def cmd_bench_tournament(args: argparse.Namespace) -> int:
    from rich.table import Table

    from arena.bench.tournament import bench_tournament

    folders = [Path(b) for b in args.bots] if args.bots else _bundled_bots()
    if args.executor == "ray":
        from arena.bench.distributed import print_ray_bench

        return print_ray_bench(folders, args.seeds or 30, args.ray_address, console, args.json)
    if args.end_to_end:
        from arena.bench.endtoend import print_end_to_end

        return print_end_to_end(folders, args.seeds, args.baseline, console, args.json)
    with console.status("running the same tournament four ways…"):
        runs = bench_tournament(folders, seeds=args.seeds or 30)
    table = Table(title=f"{runs[0].games} games of {len(folders)} bots, 2 players")
    for col in ("run", "seconds", "games/s overall", "games/s steady"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            r.label, f"{r.seconds:.2f}", f"{r.games_per_s:.1f}", f"{r.steady_games_per_s:.1f}"
        )
    console.print(table)
    one, many, one_fresh, many_fresh = runs

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x"

    console.print(
        f"speed-up 1 -> {many.workers} workers, steady play: "
        f"{ratio(many.steady_games_per_s, one.steady_games_per_s)} persistent, "
        f"{ratio(many_fresh.steady_games_per_s, one_fresh.steady_games_per_s)} per-game; "
        f"overall: {ratio(many.games_per_s, one.games_per_s)} / "
        f"{ratio(many_fresh.games_per_s, one_fresh.games_per_s)} (target ≥ 1.7x on 2 cores)"
    )
    console.print(
        "persistent vs per-game processes: "
        f"{ratio(one.steady_games_per_s, one_fresh.steady_games_per_s)} (1 worker), "
        f"{ratio(many.steady_games_per_s, many_fresh.steady_games_per_s)} "
        f"({many.workers} workers)"
    )
    return 0


def cmd_bench_clocks(args: argparse.Namespace) -> int:
    import json

    from arena.bench.clocks import bench_clocks, print_clocks
    from arena.sandbox import Level

    if args.oversubscription < 2 or args.decisions < 1:
        raise UserError("--oversubscription must be at least 2 and --decisions at least 1")
    if args.move_ms < 300:
        raise UserError("--move-ms must be at least 300: 20% over it must exceed the 50 ms grace")
    with console.status(f"honest and over-budget bots at 1x and {args.oversubscription}x…"):
        result = bench_clocks(
            args.oversubscription, args.decisions, args.move_ms, level=Level(args.sandbox)
        )
    if args.json:
        print(json.dumps(result))
    else:
        print_clocks(result, console.print)
    return 0 if result["goal_met"] else 1


def cmd_bench_serve(args: argparse.Namespace) -> int:
    from arena.bench.serve import run

    return run(args.clients, args.seconds, args.json, console, args.store)


def _bundled_bots() -> list[Path]:
    from arena.kits import NOT_IN_DEMO

    root = Path(__file__).resolve().parents[1] / "bots"
    found = sorted(
        p
        for p in (root.iterdir() if root.is_dir() else [])
        if (p / "bot.toml").is_file() and p.name not in NOT_IN_DEMO
    )
    if len(found) < 2:
        raise UserError(f"no bundled bots found in {root}")
    return found


# ---------------------------------------------------------------- parser


def _add_game_options(p: argparse.ArgumentParser) -> None:
    """Clock, fault and sandbox flags. An absent flag is None: the defaults live in
    ``PlaySettings`` (and a tournament file's values are not overridden)."""
    from arena.referee.settings import DEFAULTS

    time = DEFAULTS.time
    p.add_argument(
        "--time-per-move",
        type=int,
        metavar="MS",
        help=f"time per decision in ms (default {time.move_ms})",
    )
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena",
        description="Azul Arena: referee Azul games between bots, run tournaments, rate bots.",
        epilog=(
            "Start with: arena demo | arena check-bot bots/python-greedy | "
            "arena match bots/c-greedy bots/js-random. Bot protocol: protocol/SPEC.md."
        ),
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
    p.add_argument(
        "records",
        nargs="+",
        metavar="RECORD",
        help="game record (.json or .json.gz), or a tournament folder (every stored game)",
    )
    p.add_argument("--show", action="store_true", help="print the game turn by turn")
    p.add_argument(
        "--game",
        action="append",
        metavar="GAME_ID",
        help="with a tournament folder: only this game (repeatable)",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "view",
        help="write an HTML replay of a game (open it in any browser, no network needed)",
        description=(
            "Re-execute a game record through the engine and write a single self-contained "
            "HTML file that replays it: the board, every move with think time and the bot's "
            "stderr, faults, the final breakdown and the command that reproduces the game. "
            "A record file gives NAME.html beside it; a tournament folder gives "
            "OUTDIR/replays/GAME_ID.html for each game (or those picked with --game)."
        ),
    )
    p.add_argument("target", metavar="RECORD|OUTDIR", help="game record file or tournament folder")
    p.add_argument("--game", action="append", metavar="GAME_ID", help="only this game (repeatable)")
    p.add_argument("--out", help="output file (one game) or folder")
    p.add_argument("--open", action="store_true", help="open the (first) replay in a browser")
    p.set_defaults(func=cmd_view)

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
    _add_game_options(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser(
        "play",
        help="play against bots yourself, in the terminal or a browser",
        description=(
            "Seat a person (--human) against 1-3 bot folders. In the terminal: the board and a "
            "numbered move list; answer with a number or the move's notation. With --browser: "
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
    _add_game_options(p)
    for action in p._actions:  # a person needs a generous clock (for every seat alike)
        if action.dest == "time_per_move":
            action.default, action.help = 300_000, "time per decision in ms (default 300000)"
    p.set_defaults(func=cmd_play)

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
    _add_game_options(p)
    p.set_defaults(func=cmd_check_bot)

    p = sub.add_parser(
        "submit",
        help="send a bot to a competition server (arena serve)",
        description=(
            "Pack the bot folder into a .tar.gz (version control folders and caches left "
            "out), upload it to the server's /api/submissions with your author token, and "
            "with --wait follow the build and check-bot until the verdict (the log is shown "
            "when it is rejected). Exit status 0 when accepted or queued, 1 when rejected."
        ),
    )
    from arena.server.client import add_arguments as _submit_arguments

    _submit_arguments(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser(
        "new-bot",
        help="start a bot from a language's starter kit",
        description=(
            "Copy the starter kit of a language (a small commented greedy bot that passes "
            "check-bot) into a new folder, renamed. Languages: python, javascript, typescript, "
            "c, cpp, java, go, rust."
        ),
    )
    p.add_argument("name", help="the new bot's name (a-z, 0-9, '.', '_', '-'); also its folder")
    p.add_argument("--language", "-l", required=True, help="python, javascript, typescript, ...")
    p.add_argument("--dir", default="bots", help="parent folder (default bots)")
    p.set_defaults(func=cmd_new_bot)

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
    p.add_argument("--workers", type=int, help="parallel games (default: one per core)")
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
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--jsonl", action="store_true", help="one JSON line per finished game")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="rank-interval resamples (default 100; 0 = none)",
    )
    _add_game_options(p)
    p.set_defaults(func=cmd_tournament)

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
    p.add_argument("--workers", type=int, help="parallel games (default: one per core)")
    p.add_argument("--out", default="results/demo", help="output folder (default results/demo)")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="rank-interval resamples (default 100; 0 = none)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--jsonl", action="store_true", help="one JSON line per finished game")
    p.set_defaults(func=cmd_demo)

    from arena.sprt.command import DESCRIPTION as SPRT_DESCRIPTION
    from arena.sprt.command import add_arguments as add_sprt_arguments

    p = sub.add_parser(
        "sprt",
        help="is NEW stronger than OLD? a sequential test on 2-player game pairs",
        description=SPRT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_sprt_arguments(p)
    _add_game_options(p)
    p.set_defaults(func=cmd_sprt)

    p = sub.add_parser(
        "report",
        help="leaderboard and reports of a tournament (also while it runs)",
        description=(
            "Print the leaderboard (TrueSkill, rank intervals by bootstrap) and write Markdown, "
            "CSV, JSON and a self-contained HTML report into OUTDIR/report/."
        ),
    )
    p.add_argument("outdir", metavar="OUTDIR", help="tournament output folder")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="rank-interval resamples (default 100; 0 = none)",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "upgrade",
        help="upgrade a store (tournament, competition) written by an older arena",
        description=(
            "Upgrade a store in place to this arena's schema: a tournament folder's "
            "tournament.sqlite (a copy of the old file is kept next to it) or database, a "
            "store file, a competition (its competition.toml or database URL). Results, "
            "faults and records are kept; bots of a schema-1 tournament get their versions "
            "when it is next resumed. A store written by a newer arena, or anything that is "
            "not an arena store, is refused with what was found."
        ),
    )
    p.add_argument(
        "outdir",
        metavar="TARGET",
        help="tournament folder, store file, competition.toml or database URL",
    )
    p.set_defaults(func=cmd_upgrade)

    p = sub.add_parser(
        "schema",
        help="regenerate protocol/schemas/ from the protocol models",
        description=(
            "Write the JSON Schemas of every protocol message, the observation and the game "
            "record, generated from the pydantic models. --check only compares."
        ),
    )
    p.add_argument("--check", action="store_true", help="exit 1 if the files are stale")
    p.add_argument("--dir", help="folder (default: the repository's protocol/schemas)")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser(
        "doctor",
        help="show which sandbox layers are available",
        description=(
            "Detect each sandbox layer (bubblewrap, seccomp, separate uid, rlimits, cgroups, "
            "process group) and print it as on/off with the reason; also where built bots "
            "are cached. Exit status 1 if `--sandbox strict` would refuse to run."
        ),
    )
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser(
        "serve",
        help="host a competition: web server, submissions, continuous ladder",
        description="Run the competition defined by COMPETITION.toml until Ctrl-C/SIGTERM: "
        "the web pages and JSON API, a build worker for uploads and the continuous ladder. "
        "The first start creates the store and prints the organiser token (also kept in "
        "DATA_DIR/organiser.token). A restart resumes: running games are played again.",
    )
    p.add_argument(
        "competition",
        metavar="COMPETITION.toml",
        type=Path,
        help="the competition file (README: Hosting a competition)",
    )
    p.set_defaults(func=lambda a: _serve().serve(a.competition))

    p = sub.add_parser(
        "token",
        help="issue an author token for a hosted competition",
        description="Create author NAME in the competition's store and print their token "
        "(once: only its hash is stored).",
    )
    p.add_argument(
        "competition",
        metavar="COMPETITION.toml",
        type=Path,
        help="the competition file (README: Hosting a competition)",
    )
    p.add_argument("name", metavar="NAME", help="the author's name (shown on the leaderboard)")
    p.add_argument("--organiser", action="store_true", help="may pause, disqualify, freeze")
    p.add_argument("--renew", action="store_true", help="replace an existing author's token")
    p.set_defaults(
        func=lambda a: _serve().token_command(
            a.competition, a.name, a.organiser, a.renew, sys.stdout
        )
    )

    p = sub.add_parser("bench", help="run a benchmark", description="Speed benchmarks.")
    bench = p.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
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
    b.set_defaults(func=cmd_bench_engine)
    b = bench.add_parser(
        "protocol",
        help="referee overhead per decision and sandboxed spawn time",
        description=(
            "Two persistent C bots play whole games in three set-ups, interleaved: the CPU "
            "clock with the game on one core (the default), the CPU clock placed by the OS "
            "(the baseline for pinning), and the wall clock; prints the referee's overhead "
            "per decision (the gap from reading a reply to writing the next request, and "
            "wall time minus bot think time), decisions/s, a raw pipe round trip for "
            "comparison, and the sandboxed spawn time."
        ),
    )
    b.add_argument("--bot", default="bots/c-greedy", help="bot folder (default bots/c-greedy)")
    b.add_argument("--games", type=int, default=60, help="games per set-up (default 60)")
    b.add_argument("--sandbox", choices=["auto", "strict", "off"], default="auto")
    b.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document (overhead_us, spawn_ms, ...) instead",
    )
    b.set_defaults(func=cmd_bench_protocol)
    b = bench.add_parser(
        "tournament",
        help="games/s with 1 worker vs all cores, persistent vs per-game bots",
        description=(
            "Runs the same small round-robin four times: 1 worker and one per core, with "
            "persistent bot processes and with a fresh process per game; prints games/s and "
            "the speed-ups (measured in one run)."
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
    b.add_argument("--json", action="store_true", help="with --end-to-end: JSON output")
    b.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="ray: instead, the same tournament on the local pool and on Ray (games/s, "
        "per-game overhead of Ray)",
    )
    b.add_argument("--ray-address", metavar="ADDR", help="with --executor ray (default: local)")
    b.set_defaults(func=cmd_bench_tournament)
    b = bench.add_parser(
        "report",
        help="arena report time and peak memory from 1k to 100k games, vs the old path",
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
        "--json", action="store_true", help="print a JSON list of {games, seconds, peak_mb, path}"
    )
    b.set_defaults(func=cmd_bench_report)
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
    b.add_argument("--move-ms", type=int, default=500, help="time per decision (default 500)")
    b.add_argument("--sandbox", choices=["auto", "strict", "off"], default="auto")
    b.add_argument("--json", action="store_true", help="print one JSON document")
    b.set_defaults(func=cmd_bench_clocks)
    b = bench.add_parser(
        "serve",
        help="a live competition server under concurrent page/API clients",
        description=(
            "Starts the real `arena serve` on a loopback port with a temporary competition "
            "(three bundled bots uploaded through the API, the ladder playing), then runs "
            "CLIENTS concurrent clients over a mix of pages and API routes for SECONDS. "
            "Prints requests, errors and p50/p95/p99 latency overall, per route and per half "
            "of the run, and the games finished meanwhile. Exit status 1 on any error. "
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
    b.add_argument("--json", action="store_true", help="print one JSON document")
    b.set_defaults(func=cmd_bench_serve)
    return parser


def _serve() -> Any:
    """arena.server.service, or a clear error without the server extra."""
    try:
        from arena.server import service
    except ImportError as exc:
        raise UserError(
            f"arena serve needs the server extra ({exc.name} is missing)",
            hint="pip install 'azul-arena[server]'",
        ) from None
    return service


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status: int = args.func(args)
    except ArenaError as exc:
        err_console.print(f"[red]error:[/red] {esc(visible(str(exc), multiline=True))}")
        if exc.hint:
            err_console.print(esc(visible(exc.hint, multiline=True)))
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
