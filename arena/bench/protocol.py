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

The floor the overhead is judged against is a raw pipe round trip through an echo
process (a few lines of C: read one line, write one line) with the same message sizes as
a decision (the median ``decide`` request and reply seen in the games), measured in every
block right after the games, in both placements: on the games' core (the echo started
while pinned, as ``one_core`` places a bot) and placed by the OS. A round trip through an
unpinned process swings several-fold with cross-core wake-ups, so only a floor measured
with the games' placement, in the same run, gives a ratio that means something
(``overhead_vs_floor``). Last, a few games are played under cProfile (on the CPU clock,
the bench's own process: the referee) and its CPU time per decision grouped by module.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import arena.engine
from arena.engine import Variant
from arena.errors import ArenaError
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
    floor_us: dict[str, float]
    """Median raw pipe round trip through the echo process, per placement (``one_core``:
    on the games' core; ``os_placed``), with a decision's message sizes, interleaved."""
    floor_by_block_us: dict[str, list[float]]
    """The same medians block by block: how much the floor moved during the run."""
    overhead_vs_floor: dict[str, float]
    """Per placement, the CPU clock's overhead there over that placement's floor
    (``one_core``: ``overhead_us``; ``os_placed``: ``overhead_os_placed_us``)."""
    message_bytes: dict[str, int]
    """The sizes the floor sends (``request``) and gets back (``reply``)."""
    profile: list[dict[str, Any]]
    """The referee's CPU time per decision under cProfile, by module (own time), largest
    first: ``module``, ``us`` (inflated by the profiler), ``share`` of the total."""
    profiled_us: float
    """The profiled CPU time per decision in total (the profiler inflates it: read shares)."""
    engine_build: str = ""
    """``arena.engine.ENGINE_BUILD``: the rules (and the observation's encoding) in C or Python."""


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
        self._after_decide = False

    def send(self, data: bytes, deadline: float) -> ChannelError | None:
        if data.startswith(b'{"type":"decide"'):
            if _LAST_READ[0] is not None:
                self.gaps.append(time.perf_counter() - _LAST_READ[0])
                _LAST_READ[0] = None
            _SIZES["request"].append(len(data))
            self._after_decide = True
        return self.chan.send(data, deadline)

    def read_line(self, deadline: float) -> bytes | ReadFailure:
        line = self.chan.read_line(deadline)
        if self._after_decide and isinstance(line, bytes):  # before the clock: not a gap
            _SIZES["reply"].append(len(line) + 1)  # the newline, stripped by the channel
        self._after_decide = False
        _LAST_READ[0] = time.perf_counter()
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.chan, name)


_LAST_READ: list[float | None] = [None]
"""When the last reply (of either seat) was read."""

_SIZES: dict[str, list[int]] = {"request": [], "reply": []}
"""Bytes of every ``decide`` request written and of the reply read after it."""

_ECHO_C = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* One line in, one line of argv[1] bytes out: the floor of a decision's round trip. */
int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 2;
    if (n < 1) n = 1;
    char *reply = malloc(n), buf[65536];
    memset(reply, 'x', n - 1);
    reply[n - 1] = '\n';
    for (;;) {
        ssize_t got = read(0, buf, sizeof buf);
        if (got <= 0) return 0;
        if (memchr(buf, '\n', (size_t)got) == NULL) continue;
        for (size_t done = 0; done < n;) {
            ssize_t w = write(1, reply + done, n - done);
            if (w <= 0) return 0;
            done += (size_t)w;
        }
    }
}
"""


class _Echo:
    """The floor's echo process, started under the caller's current placement."""

    def __init__(self, binary: Path, request: int, reply: int) -> None:
        self.proc = subprocess.Popen(
            [str(binary), str(reply)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.request = b"x" * (request - 1) + b"\n"
        self.reply = reply
        self.times: list[float] = []
        self.block_medians: list[float] = []

    def measure(self, rounds: int) -> None:
        """``rounds`` round trips, each: write one request, read until the whole reply."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        wfd, rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        request, reply, times = self.request, self.reply, self.times
        for _ in range(rounds):
            t = time.perf_counter()
            os.write(wfd, request)
            got = len(os.read(rfd, 65536))
            while got < reply:
                got += len(os.read(rfd, 65536))
            times.append(time.perf_counter() - t)
        self.block_medians.append(statistics.median(times[-rounds:]))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _build_echo(workdir: Path) -> Path:
    """Compile the echo process (the bench's C bots need the same compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ArenaError("bench protocol needs a C compiler (cc) for its pipe floor")
    source, binary = workdir / "echo.c", workdir / "echo"
    source.write_text(_ECHO_C)
    built = subprocess.run([cc, "-O2", "-o", str(binary), str(source)], capture_output=True)
    if built.returncode != 0:
        first = (
            built.stderr.decode(errors="replace").strip().splitlines()
            or [f"{cc} exited {built.returncode}"]
        )[0]
        raise ArenaError(f"bench protocol could not build its pipe floor's echo process: {first}")
    return binary


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
        if outcome.faults:
            raise ArenaError(f"bench bot faulted: {outcome.faults[0].message}")
        think_ms = [
            d["think_ms"]
            for r in outcome.data["rounds"]
            for d in r["decisions"]
            if d["think_ms"] is not None
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
    bot_dir: Path,
    games: int = 60,
    level: Level = DEFAULT_LEVEL,
    blocks: int = 4,
    floor_rounds: int = 1000,
    profile_games: int = 6,
) -> ProtocolBench:
    """``games`` games per set-up, in ``blocks`` interleaved blocks (same load), each block
    followed by ``floor_rounds`` floor round trips per placement; then ``profile_games``
    games under cProfile."""
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
    placements = {"one_core": core, "os_placed": None} if core is not None else {"one_core": None}
    """Where the floor is measured: the games' core (as ``one_core`` pins), and the OS's."""
    echoes: dict[str, _Echo] = {}
    workdir = Path(tempfile.mkdtemp(prefix="arena-bench-floor-"))
    for sizes in _SIZES.values():
        sizes.clear()
    try:
        echo_binary = _build_echo(workdir)
        for name, seats in pairs.items():
            _place(core if setups[name][1] else None, everywhere)  # the bots inherit it
            for seat in seats:
                fault = seat.start()
                if fault is not None or seat._chan is None:
                    raise ArenaError(f"bench bot did not start: {fault.message if fault else ''}")
                seat._chan = _TimedChannel(seat._chan, gaps)  # type: ignore[assignment]
        blocks = max(1, min(blocks, games))
        sizes = [games // blocks + (1 if b < games % blocks else 0) for b in range(blocks)]
        seed = 0
        for size in sizes:
            for name, seats in pairs.items():
                _place(core if setups[name][1] else None, everywhere)
                figures[name] += _play_block(seats, gaps, size, seed)
            seed += size + 1
            for where, on in placements.items():
                _place(on, everywhere)
                if where not in echoes:  # sized by the first block's decisions
                    request = int(statistics.median(_SIZES["request"]))
                    reply = int(statistics.median(_SIZES["reply"]))
                    echoes[where] = _Echo(echo_binary, request, reply)  # inherits the placement
                echoes[where].measure(floor_rounds)
        _place(core, everywhere)
        for seat in pairs["cpu"]:  # profile the referee, not the bench's timing wrapper
            seat._chan = seat._chan.chan  # type: ignore[union-attr]
        profile, profiled_us = _profile(pairs["cpu"], profile_games, seed)
    finally:
        _place(None, everywhere)
        for echo in echoes.values():
            echo.close()
        shutil.rmtree(workdir, ignore_errors=True)
        for seats in pairs.values():
            for seat in seats:
                seat.close()

    def overhead(name: str) -> float:
        return statistics.median(f.overhead_us for f in figures[name])

    def referee_cpu(name: str) -> float:
        return statistics.median(f.referee_cpu_us for f in figures[name])

    default = figures["cpu"]
    os_placed = "cpu-os" in figures
    floor = {where: statistics.median(e.times) * 1e6 for where, e in echoes.items()}
    vs_floor = {"one_core": overhead("cpu") / floor["one_core"]}
    if os_placed and "os_placed" in floor:
        vs_floor["os_placed"] = overhead("cpu-os") / floor["os_placed"]
    echo_any = echoes["one_core"]
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
        floor_us=floor,
        floor_by_block_us={w: [m * 1e6 for m in e.block_medians] for w, e in echoes.items()},
        overhead_vs_floor=vs_floor,
        message_bytes={"request": len(echo_any.request), "reply": echo_any.reply},
        profile=profile,
        profiled_us=profiled_us,
        engine_build=arena.engine.ENGINE_BUILD,
    )


def _profile(
    seats: list[BotSeat], games: int, first_seed: int
) -> tuple[list[dict[str, Any]], float]:
    """``games`` games under cProfile on the process's CPU clock: the referee's own CPU time
    per decision, by module (own time; a built-in by its name: system calls show there)."""
    profiler = cProfile.Profile(time.process_time)
    decisions = 0
    for g in range(first_seed, first_seed + games):
        game = GameSettings(variant=Variant.COLOURED, seed=g, time_control=seats[0].time_control)
        profiler.enable()
        outcome = play_game(seats, game, f"bench-profile-{g}")
        profiler.disable()
        decisions += sum(len(r["decisions"]) for r in outcome.data["rounds"])
    by_module: dict[str, float] = defaultdict(float)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, own, _, callers) in stats.items():
        if filename != "~" or _is_system_call(function) or _COMPILED_ENGINE in function:
            by_module[_module_of(filename, function)] += own
            continue
        # A plain built-in (dict.get, len, bytes.join) is its callers' cost.
        spent = sum(c[2] for c in callers.values()) or 1.0
        for (caller_file, _, caller_function), c in callers.items():
            by_module[_module_of(caller_file, caller_function)] += own * c[2] / spent
    total = sum(by_module.values())
    ranked = sorted(by_module.items(), key=lambda kv: kv[1], reverse=True)
    per = 1e6 / max(decisions, 1)
    return [
        {"module": module, "us": own * per, "share": own / total if total else 0.0}
        for module, own in ranked[:PROFILE_TOP]
    ], total * per


PROFILE_TOP = 12
"""How many modules the profile keeps (the rest are small)."""


_SYSTEM_CALLS = ("posix.", "select.", "io.open", "_io.")
_COMPILED_ENGINE = "of 'arena.engine.game."
"""In a built-in's name: a method of the compiled engine (the C extension), kept as its module."""


def _is_system_call(builtin: str) -> bool:
    """Built-ins kept under their own name: the system calls (pipes, cgroup files)."""
    return any(name in builtin for name in _SYSTEM_CALLS)


def _module_of(filename: str, function: str) -> str:
    """A profiled function's module: dotted for Python files, the name for built-ins."""
    if filename == "~":
        if _COMPILED_ENGINE in function:
            return "arena.engine.game (compiled)"
        return function  # e.g. "<built-in method posix.write>"
    path = Path(filename)
    for root in sorted((Path(p) for p in sys.path if p), key=lambda p: len(str(p)), reverse=True):
        if path.is_relative_to(root):
            return ".".join(path.relative_to(root).with_suffix("").parts)
    return path.stem


def _place(core: int | None, everywhere: list[int]) -> None:
    """Run on ``core`` only, or (None) on every core this process may use."""
    if core is not None:
        affinity.pin(core)
    elif everywhere:
        os.sched_setaffinity(0, everywhere)


def _slashed(figures: list[float]) -> str:
    return "/".join(f"{f:.1f}" for f in figures)


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
    console.print(f"engine: {r.engine_build}")
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
    console.print(
        f"raw pipe floor (echo process, {r.message_bytes['request']} B request, "
        f"{r.message_bytes['reply']} B reply, median, interleaved with the games): "
        + ", ".join(
            f"{where} {us:.1f} µs (blocks {_slashed(r.floor_by_block_us[where])})"
            for where, us in r.floor_us.items()
        )
    )
    console.print(
        "referee overhead over the floor, same placement (target ≤ 3x): "
        + ", ".join(
            f"{where} {ratio:.2f}x ({'meets' if ratio <= 3 else 'MISSES'})"
            for where, ratio in r.overhead_vs_floor.items()
        )
    )
    console.print(
        f"the referee's CPU per decision under cProfile, by module (own time, inflated by "
        f"the profiler: {r.profiled_us:.0f} µs in all):"
    )
    for row in r.profile:
        line = f"  {row['module']}: {row['us']:.1f} µs ({row['share']:.0%})"
        console.print(line, markup=False, highlight=False)
    console.print(f"decisions/s: {r.decisions_per_s:,.0f}")
    console.print(
        f"sandboxed spawn (median of 20, layers: {', '.join(r.spawn_layers)}): "
        f"{r.spawn_ms:.1f} ms (target ≤ 50 ms) — {'meets' if r.spawn_ms <= 50 else 'MISSES'}"
    )
    return 0
