"""`arena bench tournament`: the same small tournament with 1 worker and with all cores,
with persistent and with per-game bot processes; games/s and the speed-ups, and where
one game's time goes (:mod:`arena.bench.gamecost`)."""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

import orjson
from rich.console import Console
from rich.table import Table

import arena.engine
from arena.bench.comp90054_runner import Comp90054Runner
from arena.bench.gamecost import PARTS, GameCost, measure_game_cost
from arena.errors import ArenaError
from arena.play.build import build_bot
from arena.referee import load_bot
from arena.tournament import Progress, Store, TournamentConfig, run_tournament, store_path


@dataclass(frozen=True)
class TournamentBench:
    label: str
    workers: int
    persistent: bool
    games: int
    seconds: float
    steady_games_per_s: float
    """Between the workers' first results and the last one: play without start-up
    (pool, bot processes) and shutdown."""
    load_average: float
    """The machine's 1-minute load average as the run started: a speed-up is only as
    good as the cores the other processes left (2 cores here, shared)."""
    cpu_s: float
    """CPU time of every process of the run: this one (the tournament's parent), the
    workers (counted when the pool is closed) and the bots (:func:`_bots_cpu_s`)."""
    parent_cpu_s: float = 0.0
    """Of ``cpu_s``, this process's (the parent: schedule, store, the pool's threads)."""
    bots_cpu_s: float = 0.0
    """Of ``cpu_s``, the bots' as the store records it; the rest is the workers'."""

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds

    @property
    def cores(self) -> float:
        """Cores the run kept busy on average: 1 worker already uses more than one (its
        parent stores results on another core while it plays), which bounds what a second
        worker can add on 2 cores."""
        return self.cpu_s / self.seconds

    @property
    def cpu_ms_per_game(self) -> float:
        return self.cpu_s * 1000 / self.games

    def cpu_ms_per_game_by_process(self) -> dict[str, float]:
        """``cpu_ms_per_game`` split: parent, workers, bots."""
        workers = self.cpu_s - self.parent_cpu_s - self.bots_cpu_s
        return {
            "parent": self.parent_cpu_s * 1000 / self.games,
            "workers": workers * 1000 / self.games,
            "bots": self.bots_cpu_s * 1000 / self.games,
        }


@dataclass(frozen=True)
class VsComp90054:
    """The arena's 1-worker persistent tournament and the COMP90054 runner's own game loop
    (:mod:`arena.bench.comp90054_runner`), in alternating blocks of one run.

    Per core = games per CPU-second of every process the run used: for the arena this
    process (the tournament's parent: schedule, store, ratings), its pool worker (reaped
    when the pool closes) and the bots (:func:`_bots_cpu_s`), start-up included but the
    bots'; for the runner its one process (agents in it). The 1-worker wall figure is
    beside it."""

    folder: str
    blocks: int
    arena_games: int
    """Games per arena block (the tournament, all of it)."""
    comp90054_games: int
    """Games per runner block."""
    arena_cpu_ms_per_game: float
    """Median over blocks, CPU of every process per game."""
    arena_bots_cpu_ms_per_game: float
    """Median over blocks, the bots' part of it (what the arena's own processes cannot
    cut: the runner's CPU per game over this bounds ``per_core``)."""
    arena_wall_games_per_s: float
    """Median over blocks, 1 worker's games per wall second (whole run)."""
    comp90054_cpu_ms_per_game: float
    comp90054_wall_games_per_s: float
    comp90054_actions_per_game: float
    """Actions in the runner's game histories (its game master's round actions included)."""
    load_average: list[float]
    """The 1-minute load average before each block (arena, runner, arena, ...)."""
    per_core_blocks: list[float] = field(default_factory=list)
    """Per pair of blocks (an arena block and the runner's right after it), the runner's
    CPU per game over the arena's."""

    @property
    def per_core(self) -> float:
        """Games/s per core, the arena over the runner: the median pair's ratio. This
        machine class changes speed by up to 1.6x from one second to the next, and the two
        workloads feel it differently, so only blocks side by side are compared (the ratio
        of the two medians can pair a fast second of one with a slow one of the other)."""
        if self.per_core_blocks:
            return statistics.median(self.per_core_blocks)
        return self.comp90054_cpu_ms_per_game / self.arena_cpu_ms_per_game

    @property
    def bots_bound(self) -> float:
        """The largest ``per_core`` the bots' own CPU leaves (the arena's processes free)."""
        return self.comp90054_cpu_ms_per_game / max(self.arena_bots_cpu_ms_per_game, 1e-9)

    @property
    def one_worker(self) -> float:
        """Games per wall second, the arena's 1 worker over the runner."""
        return self.arena_wall_games_per_s / self.comp90054_wall_games_per_s

    def as_json(self) -> dict[str, object]:
        return asdict(self) | {
            "arena_games_per_cpu_s": 1000 / self.arena_cpu_ms_per_game,
            "comp90054_games_per_cpu_s": 1000 / self.comp90054_cpu_ms_per_game,
            "per_core": self.per_core,
            "bots_bound": self.bots_bound,
            "one_worker": self.one_worker,
        }


def _cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (and theirs)."""
    return _own_cpu_seconds() + _children_cpu_seconds()


def _own_cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _children_cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def _bots_cpu_s(config: TournamentConfig) -> float:
    """The bots' CPU as the records show it, decision by decision (their cgroups' CPU):
    a sandboxed bot is no reaped child of this process, so :func:`_cpu_seconds` misses it.
    What a bot used between its turns is counted too (``between_ms``, charged to its next
    decision); its start-up is not."""
    total_ms = 0.0
    with Store(store_path(config), readonly=True) as store:
        for _, raw in store.records():
            for rnd in orjson.loads(raw)["rounds"]:
                for decision in rnd["decisions"]:
                    total_ms += (decision.get("cpu_ms") or 0.0) + decision.get("between_ms", 0.0)
    return total_ms / 1000


def _one_worker(bots: list[Path], seeds: int, output: Path) -> TournamentConfig:
    return TournamentConfig(
        bots=bots,
        players=[2],
        variants=["coloured"],
        seeds=seeds,
        workers=1,
        persistent=True,
        output=output,
    )


VS_COMP90054_BLOCKS = 5
"""Pairs of blocks (the arena's, then the runner's) for the ratio per core: an odd number,
so that the median is one pair's ratio."""


def bench_vs_comp90054(
    bots: list[Path], seeds: int, runner: Comp90054Runner, blocks: int = VS_COMP90054_BLOCKS
) -> VsComp90054:
    """Blocks alternate (arena, runner, arena, ...) so the machine's load weighs on both
    alike, and each pair's ratio is taken; the runner plays a fifth as many games (it is
    several times slower)."""
    arena_cpu, arena_wall, comp_cpu, comp_wall, loads = [], [], [], [], []
    arena_bots_cpu: list[float] = []
    arena_games = comp_games = actions = 0
    runner.play(1, seed=0)  # its imports and first-call costs, untimed
    with tempfile.TemporaryDirectory(prefix="arena-bench-comp-") as tmp:
        for block in range(blocks):
            loads.append(os.getloadavg()[0])
            config = _one_worker(bots, seeds, Path(tmp) / f"block{block}")
            cpu, start = _cpu_seconds(), time.perf_counter()
            progress = run_tournament(config)
            wall = time.perf_counter() - start
            bots_cpu = _bots_cpu_s(config)
            cpu = _cpu_seconds() - cpu + bots_cpu
            arena_games = progress.done
            arena_cpu.append(cpu * 1000 / arena_games)
            arena_bots_cpu.append(bots_cpu * 1000 / arena_games)
            arena_wall.append(arena_games / wall)
            loads.append(os.getloadavg()[0])
            comp_games = max(2, arena_games // 5)
            cpu_s, wall_s, played = runner.play(comp_games, seed=1 + block * comp_games)
            actions += played
            comp_cpu.append(cpu_s * 1000 / comp_games)
            comp_wall.append(comp_games / wall_s)
    return VsComp90054(
        folder=str(runner.folder),
        blocks=blocks,
        arena_games=arena_games,
        comp90054_games=comp_games,
        arena_cpu_ms_per_game=statistics.median(arena_cpu),
        arena_bots_cpu_ms_per_game=statistics.median(arena_bots_cpu),
        arena_wall_games_per_s=statistics.median(arena_wall),
        comp90054_cpu_ms_per_game=statistics.median(comp_cpu),
        comp90054_wall_games_per_s=statistics.median(comp_wall),
        comp90054_actions_per_game=actions / (blocks * comp_games),
        load_average=loads,
        per_core_blocks=[c / a for a, c in zip(arena_cpu, comp_cpu, strict=True)],
    )


def print_vs_comp90054(vs: VsComp90054, console: Console) -> None:
    ratio = (
        "; per pair of blocks "
        + ", ".join(f"{x:.1f}x" for x in vs.per_core_blocks)
        + f": median {vs.per_core:.1f}x"
        if vs.per_core_blocks
        else f" = {vs.per_core:.1f}x"
    )
    console.print(
        f"against the COMP90054 runner ({vs.folder}: its Game.Run(), first_move vs random, "
        f"in-process, timeouts off), {vs.blocks} alternating blocks of {vs.arena_games} arena "
        f"/ {vs.comp90054_games} runner games, medians: per core (games per CPU-second of "
        f"every process) {1000 / vs.arena_cpu_ms_per_game:.1f} vs "
        f"{1000 / vs.comp90054_cpu_ms_per_game:.1f}{ratio} (target ≥ 10x; "
        f"the bots' own {vs.arena_bots_cpu_ms_per_game:.2f} of the arena's "
        f"{vs.arena_cpu_ms_per_game:.2f} ms a game leave at most {vs.bots_bound:.1f}x); "
        f"1 worker, wall {vs.arena_wall_games_per_s:.1f} vs {vs.comp90054_wall_games_per_s:.1f} "
        f"games/s = {vs.one_worker:.1f}x (load average "
        f"{min(vs.load_average):.1f}-{max(vs.load_average):.1f})"
    )


SCALING_PAIRS = 3
"""Persistent 1-worker and all-core runs, alternating, for the speed-up: this machine class
changes speed by up to 1.6x from one second to the next (entry 43), and a run at the
default seeds is 0.3-0.5 s; runs side by side see the same speed."""


@dataclass(frozen=True)
class Scaling:
    """Steady games/s of persistent runs with 1 worker and with every core, in alternating
    pairs (the first pair is the runs table's), and beside each pair the machine's own
    ceiling: as many independent 1-worker tournaments as cores, at once."""

    pairs: list[tuple[float, float]]
    loads: list[float]
    """The load average before each pair."""
    independent: list[tuple[float | None, float | None]] = field(default_factory=list)
    """Per pair, games/s of one 1-worker tournament in a process of its own, then of as
    many as cores at once, together (None: too little overlap to measure)."""

    @property
    def speedups(self) -> list[float]:
        return [many / one for one, many in self.pairs]

    @property
    def speedup(self) -> float:
        """The median pair's speed-up (the target's figure)."""
        return statistics.median(self.speedups)

    @property
    def ceilings(self) -> list[float | None]:
        """Per pair, the independent tournaments at once over one alone, each in a process
        of its own, measured right after the pair: what this machine gives N games that
        share nothing (benchmarks entry 44 measured 1.45-1.65x on this VM's 2 cores: both
        busy, they slow each other down)."""
        return [
            None if alone is None or together is None else together / alone
            for alone, together in self.independent
        ]

    @property
    def ceiling(self) -> float | None:
        """The median pair's ceiling."""
        known = [c for c in self.ceilings if c is not None]
        return statistics.median(known) if known else None

    @property
    def of_ceiling(self) -> float | None:
        """The speed-up over the ceiling: 1.0 means the tournament scales as far as the
        machine lets independent games scale."""
        ceiling = self.ceiling
        return self.speedup / ceiling if ceiling else None


def independent_rate(stamps: list[list[float]]) -> float | None:
    """Games/s of independent tournaments together, each given as its progress stamps
    (when it started, then when each of its games ended; its first game, which carries
    the start-up, is left out), counted only while all of them played: the sum of their
    steady rates inside the window they overlap. None when a tournament ended fewer than
    two games in that window."""
    if not stamps or any(len(s) < 3 for s in stamps):
        return None
    lo, hi = max(s[1] for s in stamps), min(s[-1] for s in stamps)
    total = 0.0
    for s in stamps:
        inside = [t for t in s if lo <= t <= hi]
        if len(inside) < 2 or inside[-1] <= inside[0]:
            return None
        total += (len(inside) - 1) / (inside[-1] - inside[0])
    return total


SOLO_SEEDS_FACTOR = 10
"""An independent tournament gets this many times the bench's seeds, so that it is still
playing when the bench has counted its games (it is stopped then)."""


def _ceiling_pair(
    bots: list[Path], seeds: int, games: int, cores: int, output: Path
) -> tuple[float | None, float | None]:
    """One 1-worker tournament alone, then ``cores`` of them at once (games/s), each
    counted over ``games`` games (a pair's run) once all of them play."""
    if cores < 2:
        return None, None
    alone = _independent(bots, seeds, games, 1, output / "alone")
    return alone, _independent(bots, seeds, games, cores, output / "together")


def _independent(
    bots: list[Path], seeds: int, games: int, copies: int, output: Path
) -> float | None:
    """``copies`` 1-worker tournaments at once, each a process of its own
    (:mod:`arena.bench.solo`) started together once all are loaded, stopped once each
    has ended ``games`` games after the last one's first: their games/s together
    (:func:`independent_rate`)."""
    with contextlib.ExitStack() as stack:
        # Their stderr goes to files: a pipe nobody reads while they play could fill.
        logs = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(copies)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "arena.bench.solo",
                    str(seeds * SOLO_SEEDS_FACTOR),
                    str(output / f"solo{i}"),
                    *(str(b) for b in bots),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
            for i, log in enumerate(logs)
        ]
        stamps: list[list[float]] = [[] for _ in procs]
        try:
            for proc, log in zip(procs, logs, strict=True):
                assert proc.stdout is not None
                if proc.stdout.readline().strip() != b"ready":
                    raise ArenaError(_solo_failure(proc, log))
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
                proc.stdin.flush()
            _collect(procs, logs, stamps, games)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)  # its workers and bots stop with it
            for proc in procs:
                try:
                    proc.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
    return independent_rate(stamps)


def _collect(
    procs: list[subprocess.Popen[bytes]],
    logs: Sequence[IO[bytes]],
    stamps: list[list[float]],
    games: int,
) -> None:
    """Read the tournaments' stamps until each has ended ``games`` games after every one
    of them ended its first (or one ended its whole tournament)."""
    deadline = time.monotonic() + SOLO_TIMEOUT_S
    partial = [b"" for _ in procs]
    with selectors.DefaultSelector() as sel:
        for i, proc in enumerate(procs):
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            sel.register(proc.stdout, selectors.EVENT_READ, i)
        while True:
            if all(len(s) >= 2 for s in stamps):
                lo = max(s[1] for s in stamps)
                if all(sum(1 for t in s if t > lo) >= games for s in stamps):
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                raise ArenaError(
                    f"bench tournament: independent 1-worker tournaments played fewer than "
                    f"{games} games each in {SOLO_TIMEOUT_S:g} s"
                )
            for key, _ in sel.select(timeout=left):
                i = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:  # its tournament ended (or it failed)
                    if procs[i].wait() != 0 or len(stamps[i]) < 2:
                        raise ArenaError(_solo_failure(procs[i], logs[i]))
                    return
                *lines, partial[i] = (partial[i] + chunk).split(b"\n")
                for line in lines:
                    with contextlib.suppress(ValueError):  # not a stamp: not ours to read
                        stamps[i].append(float(line))


SOLO_TIMEOUT_S = 600.0
"""How long the independent tournaments of one measurement may take."""


def _solo_failure(proc: subprocess.Popen[bytes], log: IO[bytes]) -> str:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log.seek(0)
    lines = log.read().decode(errors="replace").strip().splitlines()
    last = lines[-1:] or [f"exit status {proc.returncode}"]
    return f"bench tournament: an independent 1-worker tournament failed: {last[0]}"


def bench_tournament(
    bots: list[Path], seeds: int = 30, scaling_pairs: int = SCALING_PAIRS
) -> tuple[list[TournamentBench], Scaling, GameCost]:
    """Bots are built first, so every run measures play (plus pool and bot start-up);
    then more alternating persistent pairs for the speed-up (:class:`Scaling`), and one
    game's cost, part by part."""
    build_bots(bots)
    cores = os.cpu_count() or 1
    runs = [
        ("1 worker, persistent", 1, True),
        (f"{cores} workers, persistent", cores, True),
        ("1 worker, per-game processes", 1, False),
        (f"{cores} workers, per-game processes", cores, False),
    ]
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        out = [
            _run(bots, seeds, label, workers, persistent, Path(tmp) / f"run{i}")
            for i, (label, workers, persistent) in enumerate(runs)
        ]
        pairs = [(out[0].steady_games_per_s, out[1].steady_games_per_s)]
        loads = [out[0].load_average]
        games = out[0].games  # each independent tournament is counted over a pair's run
        independent = [_ceiling_pair(bots, seeds, games, cores, Path(tmp) / "pair0")]
        for k in range(1, scaling_pairs):
            one = _run(bots, seeds, "", 1, True, Path(tmp) / f"pair{k}-1")
            many = _run(bots, seeds, "", cores, True, Path(tmp) / f"pair{k}-n")
            pairs.append((one.steady_games_per_s, many.steady_games_per_s))
            loads.append(one.load_average)
            independent.append(_ceiling_pair(bots, seeds, games, cores, Path(tmp) / f"pair{k}"))
    return out, Scaling(pairs, loads, independent), measure_game_cost(bots, seeds)


def _run(
    bots: list[Path], seeds: int, label: str, workers: int, persistent: bool, output: Path
) -> TournamentBench:
    config = TournamentConfig(
        bots=bots,
        players=[2],
        variants=["coloured"],
        seeds=seeds,
        workers=workers,
        persistent=persistent,
        output=output,
    )
    stamps: list[float] = []

    def stamp(_: Progress) -> None:
        stamps.append(time.perf_counter())

    load = os.getloadavg()[0]
    own, children, start = _own_cpu_seconds(), _children_cpu_seconds(), time.perf_counter()
    progress = run_tournament(config, on_progress=stamp)
    seconds = time.perf_counter() - start
    own = _own_cpu_seconds() - own
    bots_s = _bots_cpu_s(config)
    cpu = own + _children_cpu_seconds() - children + bots_s
    first = min(workers, len(stamps) - 2)
    steady = (len(stamps) - 1 - first) / (stamps[-1] - stamps[first])
    return TournamentBench(
        label,
        workers,
        persistent,
        progress.done,
        seconds,
        steady,
        load,
        cpu,
        parent_cpu_s=own,
        bots_cpu_s=bots_s,
    )


def build_bots(bots: list[Path]) -> None:
    for folder in bots:
        build_bot(load_bot(folder))


def bench_tournament_json(
    runs: list[TournamentBench], scaling: Scaling, cost: GameCost, vs: VsComp90054 | None = None
) -> dict[str, object]:
    return {
        "runs": [
            asdict(r)
            | {
                "games_per_s": r.games_per_s,
                "cores": r.cores,
                "cpu_ms_per_game": r.cpu_ms_per_game,
                "cpu_ms_per_game_by_process": r.cpu_ms_per_game_by_process(),
            }
            for r in runs
        ],
        "speedup_steady_persistent": scaling.speedup,
        "speedup_steady_persistent_pairs": scaling.speedups,
        "speedup_pair_load_average": scaling.loads,
        "machine_ceiling": scaling.ceiling,
        "machine_ceiling_pairs": scaling.ceilings,
        "speedup_of_ceiling": scaling.of_ceiling,
        "load_average": [r.load_average for r in runs],
        "game_cost": cost.as_json(),
        "vs_comp90054": vs.as_json() if vs is not None else None,
        "engine_build": arena.engine.ENGINE_BUILD,
    }


def print_game_cost(cost: GameCost, console: Console) -> None:
    """The parts of one game (1 worker, persistent bots, in this process, profiled)."""
    table = Table(
        title=f"one game's time by part ({cost.games} games inline under cProfile, "
        f"{cost.profiled_game_ms:.2f} ms a game; {cost.game_ms:.2f} ms unprofiled)"
    )
    for col, justify in (("part", "left"), ("ms/game", "right"), ("share", "right"), ("", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    rows = [*cost.parts_ms.items(), ("other", cost.other_ms)]
    for part, ms in rows:
        share = ms / cost.profiled_game_ms if cost.profiled_game_ms else 0.0
        table.add_row(part, f"{ms:.2f}", f"{share:.0%}", PARTS.get(part, "the referee's own loop"))
    console.print(table)


def print_bench_tournament(
    runs: list[TournamentBench], scaling: Scaling, n_bots: int, console: Console
) -> None:
    """The four runs' games/s and the speed-ups between them."""
    table = Table(title=f"{runs[0].games} games of {n_bots} bots, 2 players")
    # Short headers: the table fits an 80-column terminal (steady: after start-up).
    for col in ("run", "seconds", "games/s", "steady/s", "load"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            r.label,
            f"{r.seconds:.2f}",
            f"{r.games_per_s:.1f}",
            f"{r.steady_games_per_s:.1f}",
            f"{r.load_average:.1f}",
        )
    console.print(table)
    console.print(f"engine: {arena.engine.ENGINE_BUILD}")
    one, many, one_fresh, many_fresh = runs

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x"

    pairs = ", ".join(f"{x:.2f}x" for x in scaling.speedups)
    loads = ", ".join(f"{x:.1f}" for x in scaling.loads)
    console.print(
        f"speed-up 1 -> {many.workers} workers, steady play: {scaling.speedup:.2f}x persistent "
        f"(median of {len(scaling.pairs)} alternating pairs: {pairs}; load average {loads} "
        f"before each, on {os.cpu_count() or 1} cores; target ≥ 1.7x), "
        f"{ratio(many_fresh.steady_games_per_s, one_fresh.steady_games_per_s)} per-game; "
        f"overall: {ratio(many.games_per_s, one.games_per_s)} / "
        f"{ratio(many_fresh.games_per_s, one_fresh.games_per_s)}"
    )
    if scaling.ceiling is not None and scaling.of_ceiling is not None:
        ceilings = ", ".join("-" if c is None else f"{c:.2f}x" for c in scaling.ceilings)
        console.print(
            f"the machine's ceiling: {many.workers} independent 1-worker tournaments at once "
            f"(processes of their own) played {scaling.ceiling:.2f}x one alone (after each "
            f"pair: {ceilings}); the speed-up is {scaling.of_ceiling:.0%} of it"
        )

    def split(run: TournamentBench) -> str:
        return " + ".join(f"{ms:.1f}" for ms in run.cpu_ms_per_game_by_process().values())

    console.print(
        "CPU of every process (parent + workers + bots) per game, persistent: "
        f"{one.cpu_ms_per_game:.1f} ms (1 worker: {split(one)}), {many.cpu_ms_per_game:.1f} ms "
        f"({many.workers} workers: {split(many)}); cores kept busy: {one.cores:.2f} and "
        f"{many.cores:.2f} (1 worker's parent stores results on another core while it plays)"
    )
    console.print(
        "persistent vs per-game processes: "
        f"{ratio(one.steady_games_per_s, one_fresh.steady_games_per_s)} (1 worker), "
        f"{ratio(many.steady_games_per_s, many_fresh.steady_games_per_s)} "
        f"({many.workers} workers)"
    )
