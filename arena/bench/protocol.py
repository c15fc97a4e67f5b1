"""`arena bench protocol`: what the referee itself costs per decision.

Two persistent C bots play whole games. The referee's overhead is the time the bots
wait for it: from reading a reply to writing the next ``decide`` (rules, encoding,
validation, bookkeeping), measured at every decision. Per game, the median of those
gaps plus the game's fixed cost (record, ``game_end``/``game_start``: the gap across
the boundary between two games) spread over its decisions; the median over games is
reported. Medians make it robust to a loaded machine, where a few preempted gaps
would dominate a mean. The old measure (game wall time minus measured think time,
over decisions) is reported too, and a raw pipe round trip as the baseline.

Three set-ups are measured, interleaved in blocks so that they see the same load,
each as games run in a tournament: the CPU clock (the default) with the game's
referee and bots on one core (``PlaySettings.one_core``, the default), the same clock
with the OS placing them (the baseline for the pinning), and the wall clock (never
pinned). Both clocks read the bots' CPU time (the wall clock for the record), so they
differ only in what the clock itself costs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arena.engine import Variant
from arena.play.bots import ready_bot
from arena.referee import BotSeat, GameSettings, SandboxSettings, play_game
from arena.referee.channel import Channel, ChannelError, ReadFailure
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.referee import GameOutcome
from arena.sandbox import DEFAULT_LEVEL, Level, affinity
from arena.sandbox.bench import measure_spawn


@dataclass(frozen=True)
class ProtocolBench:
    games: int
    """Games per set-up."""
    decisions: int
    overhead_us: float
    """On the default (CPU) clock: median over games of (median reply-to-next-request gap
    + game fixed cost / decisions)."""
    overhead_by_clock_us: dict[str, float]
    """The same figure per clock kind (``cpu``, ``wall``), each set up as a tournament
    runs it (CPU: on one core; wall: placed by the OS), measured interleaved in one run."""
    referee_cpu_by_clock_us: dict[str, float]
    """Per clock kind, median over games of the referee process's CPU time per decision
    (everything it does, system calls included): unlike the gaps, hardly moved by load."""
    overhead_os_placed_us: float | None
    """The CPU clock with the OS placing the referee and bots (``one_core = false``),
    interleaved with the rest: the baseline for the pinning (None: single core)."""
    referee_cpu_os_placed_us: float | None
    one_core_speedup: float | None
    """``overhead_os_placed_us / overhead_us``, from the same run."""
    overhead_wall_us: float
    """Median over games of (wall - think) / decisions (a mean: load-sensitive)."""
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


class _TimedChannel:
    """Wraps a seat's channel to time the referee's gaps: from reading a reply to
    writing the next ``decide`` (bench only; the seat's own code is unchanged)."""

    def __init__(self, chan: Channel, gaps: list[float]) -> None:
        self.chan = chan
        self.gaps = gaps
        """Shared by the seats: one gap per decision, in order."""
        self._last_read: float | None = None

    def send(self, data: bytes, deadline: float) -> ChannelError | None:
        if data.startswith(b'{"type":"decide"') and _LAST_READ[0] is not None:
            self.gaps.append(time.perf_counter() - _LAST_READ[0])
            _LAST_READ[0] = None
        return self.chan.send(data, deadline)

    def read_line(self, deadline: float) -> bytes | ReadFailure:
        line = self.chan.read_line(deadline)
        _LAST_READ[0] = time.perf_counter()
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.chan, name)


_LAST_READ: list[float | None] = [None]
"""When the last reply (of either seat) was read."""


@dataclass
class _GameFigures:
    overhead_us: float
    wall_overhead_us: float
    think_us: float
    decisions: int
    wall_s: float
    referee_cpu_us: float


def _play_block(
    seats: list[BotSeat], gaps: list[float], games: int, first_seed: int
) -> list[_GameFigures]:
    """``games`` games on one pair of seats (plus one that closes the last game's boundary)."""
    played: list[tuple[GameOutcome, float, int, float]] = []
    """Per game: outcome, wall time, index of its first gap, the referee's CPU time
    (bookkeeping after the block,
    so that the bench's own work does not land in the gaps it measures)."""
    settings = [
        GameSettings(
            variant=Variant.COLOURED if g % 2 == 0 else Variant.GRAY,
            seed=g,
            time_control=seats[0].time_control,
        )
        for g in range(first_seed, first_seed + games + 1)
    ]
    """Made before the games: the caller's cost, not the referee's (it lands in the gaps)."""
    _LAST_READ[0] = None
    for g, game in zip(range(first_seed, first_seed + games + 1), settings, strict=True):
        first = len(gaps)
        t, cpu = time.perf_counter(), time.process_time()
        outcome = play_game(seats, game, f"bench-{g}")
        played.append((outcome, time.perf_counter() - t, first, time.process_time() - cpu))
    figures = []
    for g in range(games):
        outcome, wall, first, cpu_s = played[g]
        if outcome.record.faults:
            raise RuntimeError(f"bench bot faulted: {outcome.record.faults[0].message}")
        think_ms = [
            d.think_ms for r in outcome.record.rounds for d in r.decisions if d.think_ms is not None
        ]
        n = len(think_ms)
        # Gaps inside this game; the first gap of the next game is this game's fixed cost
        # (its record and game_end, the next game_start).
        inner = gaps[first + (1 if g else 0) : played[g + 1][2]]
        boundary = gaps[played[g + 1][2]]
        figures.append(
            _GameFigures(
                overhead_us=(statistics.median(inner) + boundary / n) * 1e6,
                wall_overhead_us=(wall - sum(think_ms) / 1000) / n * 1e6,
                think_us=statistics.median(think_ms) * 1000,
                decisions=n,
                wall_s=wall,
                referee_cpu_us=cpu_s / n * 1e6,
            )
        )
    return figures


SETUPS: dict[str, tuple[ClockKind, bool]] = {
    "cpu": (ClockKind.CPU, True),
    "cpu-os": (ClockKind.CPU, False),
    "wall": (ClockKind.WALL, False),
}
"""The set-ups measured, by name: (clock, on one core?); the default first. As in a
tournament, the wall clock is never pinned (see ``PlaySettings.pins_core``)."""


def bench_protocol(
    bot_dir: Path, games: int = 60, level: Level = DEFAULT_LEVEL, blocks: int = 4
) -> ProtocolBench:
    """``games`` games per set-up, in ``blocks`` interleaved blocks (same load)."""
    bot = ready_bot(bot_dir, level)
    everywhere = affinity.allowed_cores()
    core = affinity.current_core()
    setups = dict(SETUPS)
    if len(everywhere) < 2 or core is None or core not in everywhere:
        del setups["cpu-os"]  # nothing to compare: one core (or no affinity support)
        core = None
    pairs: dict[str, list[BotSeat]] = {}
    for k, (name, (clock, _)) in enumerate(setups.items()):
        pairs[name] = [
            BotSeat(
                bot,
                time_control=TimeControl(clock=clock),
                sandbox=SandboxSettings(level=level, slot=2 * k + i),
                persistent=True,
            )
            for i in range(2)
        ]
    gaps: list[float] = []
    figures: dict[str, list[_GameFigures]] = {name: [] for name in setups}
    try:
        for name, seats in pairs.items():
            _place(core if setups[name][1] else None, everywhere)  # the bots inherit it
            for seat in seats:
                fault = seat.start()
                if fault is not None or seat._chan is None:
                    raise RuntimeError(f"bench bot did not start: {fault.message if fault else ''}")
                seat._chan = _TimedChannel(seat._chan, gaps)  # type: ignore[assignment]
        blocks = max(1, min(blocks, games))
        sizes = [games // blocks + (1 if b < games % blocks else 0) for b in range(blocks)]
        seed = 0
        for size in sizes:
            for name, seats in pairs.items():
                _place(core if setups[name][1] else None, everywhere)
                figures[name] += _play_block(seats, gaps, size, seed)
            seed += size + 1
    finally:
        _place(None, everywhere)
        for seats in pairs.values():
            for seat in seats:
                seat.close()

    def overhead(name: str) -> float:
        return statistics.median(f.overhead_us for f in figures[name])

    def referee_cpu(name: str) -> float:
        return statistics.median(f.referee_cpu_us for f in figures[name])

    default = figures["cpu"]
    os_placed = "cpu-os" in figures
    spawn = measure_spawn(level, runs=20)
    return ProtocolBench(
        games=games,
        decisions=sum(f.decisions for f in default),
        overhead_us=overhead("cpu"),
        overhead_by_clock_us={"cpu": overhead("cpu"), "wall": overhead("wall")},
        referee_cpu_by_clock_us={"cpu": referee_cpu("cpu"), "wall": referee_cpu("wall")},
        overhead_os_placed_us=overhead("cpu-os") if os_placed else None,
        referee_cpu_os_placed_us=referee_cpu("cpu-os") if os_placed else None,
        one_core_speedup=overhead("cpu-os") / overhead("cpu") if os_placed else None,
        overhead_wall_us=statistics.median(f.wall_overhead_us for f in default),
        think_us=statistics.median(f.think_us for f in default),
        decisions_per_s=sum(f.decisions for f in default) / sum(f.wall_s for f in default),
        spawn_ms=spawn.median_ms,
        spawn_layers=spawn.layers,
        pipe_roundtrip_us=pipe_roundtrip_us(),
    )


def _place(core: int | None, everywhere: list[int]) -> None:
    """Run on ``core`` only, or (None) on every core this process may use."""
    if core is not None:
        affinity.pin(core)
    elif everywhere:
        os.sched_setaffinity(0, everywhere)


def run(bot: Path, games: int, level: Level, as_json: bool) -> int:
    """``arena bench protocol``: a line per figure, or one JSON document (``--json``)."""
    if as_json:
        r = bench_protocol(bot, games=games, level=level)
        data = asdict(r)
        data["spawn_layers"] = list(r.spawn_layers)
        print(json.dumps(data, indent=2))
        return 0
    from rich.console import Console

    console = Console()
    with Console(stderr=True).status("persistent C bots playing…"):
        r = bench_protocol(bot, games=games, level=level)
    console.print(f"games {r.games} per set-up, decisions {r.decisions} (default set-up)")
    console.print(
        f"referee overhead per decision (reply read -> next request written, median, plus "
        f"each game's fixed cost; median of games): {r.overhead_us:.1f} µs (target ≤ 25 µs) — "
        f"{'meets' if r.overhead_us <= 25 else 'MISSES'}"
    )
    console.print(
        "the same on each clock kind, interleaved in this run (CPU on one core, wall placed "
        "by the OS, as a tournament runs them): "
        + ", ".join(f"{kind} {us:.1f} µs" for kind, us in r.overhead_by_clock_us.items())
    )
    if r.overhead_os_placed_us is not None and r.referee_cpu_os_placed_us is not None:
        console.print(
            f"CPU clock with the OS placing referee and bots (one_core = false), interleaved: "
            f"{r.overhead_os_placed_us:.1f} µs, referee CPU {r.referee_cpu_os_placed_us:.1f} µs "
            f"per decision; one core is {r.one_core_speedup:.2f}x faster"
        )
    console.print(
        "the referee's own CPU time per decision (load hardly moves it): "
        + ", ".join(f"{kind} {us:.1f} µs" for kind, us in r.referee_cpu_by_clock_us.items())
    )
    console.print(
        f"as game wall time minus measured think time (a mean: load-sensitive): "
        f"{r.overhead_wall_us:.1f} µs"
    )
    console.print(
        f"bot think time as measured (request written -> reply read), median: "
        f"{r.think_us:.0f} µs; raw pipe round trip through cat: {r.pipe_roundtrip_us:.0f} µs "
        f"(ratio {r.think_us / r.pipe_roundtrip_us:.1f}x)"
    )
    console.print(f"decisions/s: {r.decisions_per_s:,.0f}")
    console.print(
        f"sandboxed spawn (median of 20, layers: {', '.join(r.spawn_layers)}): "
        f"{r.spawn_ms:.1f} ms (target ≤ 50 ms) — {'meets' if r.spawn_ms <= 50 else 'MISSES'}"
    )
    return 0
