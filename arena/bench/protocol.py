"""`arena bench protocol`: what the referee itself costs per decision.

Two persistent C bots play whole games. For each game, the referee's overhead is
the game's wall time minus the think time it measured for the bots (write of
the request to read of the reply), divided by the decisions: that is the time
spent in rules, encoding, validation and bookkeeping. A raw pipe round trip is
measured in the same run as a baseline.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from arena.engine import Variant
from arena.referee import BotSeat, GameSettings, SandboxSettings, load_bot, play_game
from arena.referee.build import build_bot
from arena.sandbox import Level
from arena.sandbox.bench import measure_spawn


@dataclass(frozen=True)
class ProtocolBench:
    games: int
    decisions: int
    overhead_us: float
    """Median over games of (wall - think) / decisions."""
    think_us: float
    """Median measured think time per decision (bot compute + pipe round trip)."""
    decisions_per_s: float
    spawn_ms: float
    spawn_layers: tuple[str, ...]
    pipe_roundtrip_us: float


def pipe_roundtrip_us(rounds: int = 2000) -> float:
    """Median round trip of a short line through ``cat`` over plain pipes (baseline)."""
    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
    times = []
    try:
        for _ in range(rounds):
            t = time.perf_counter()
            os.write(wfd, b'{"type":"move","id":1,"index":0}\n')
            os.read(rfd, 4096)
            times.append(time.perf_counter() - t)
    finally:
        proc.kill()
        proc.wait()
    return statistics.median(times) * 1e6


def bench_protocol(bot_dir: Path, games: int = 20, level: Level = Level.AUTO) -> ProtocolBench:
    spec = build_bot(load_bot(bot_dir), level).spec
    seats = [
        BotSeat(spec, sandbox=SandboxSettings(level=level, slot=i), persistent=True)
        for i in range(2)
    ]
    overheads, thinks = [], []
    total_decisions = 0
    total_time = 0.0
    try:
        for seat in seats:
            seat.start()
        for g in range(games):
            variant = Variant.COLOURED if g % 2 == 0 else Variant.GRAY
            t = time.perf_counter()
            outcome = play_game(seats, GameSettings(variant=variant, seed=g), f"bench-{g}")
            wall = time.perf_counter() - t
            think_ms = [
                d.think_ms
                for r in outcome.record.rounds
                for d in r.decisions
                if d.think_ms is not None
            ]
            if outcome.record.faults:
                raise RuntimeError(f"bench bot faulted: {outcome.record.faults[0].message}")
            n = len(think_ms)
            overheads.append((wall - sum(think_ms) / 1000) / n * 1e6)
            thinks.append(statistics.median(think_ms) * 1000)
            total_decisions += n
            total_time += wall
    finally:
        for seat in seats:
            seat.close()
    spawn = measure_spawn(level, runs=20)
    return ProtocolBench(
        games=games,
        decisions=total_decisions,
        overhead_us=statistics.median(overheads),
        think_us=statistics.median(thinks),
        decisions_per_s=total_decisions / total_time,
        spawn_ms=spawn.median_ms,
        spawn_layers=spawn.layers,
        pipe_roundtrip_us=pipe_roundtrip_us(),
    )
