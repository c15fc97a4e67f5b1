"""Measure how long a sandboxed spawn takes, from spawn() to the child's first answer.

The probe bot is ``/bin/cat``: we send one line and time until it comes back, which
proves the whole exec chain (cgroup join, prlimit, bwrap, setpriv) has finished and the
bot's own program is running.  Kill time is measured separately.
"""

from __future__ import annotations

import os
import select
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox.process import spawn
from arena.sandbox.spec import DEFAULT_LEVEL, Level


@dataclass(frozen=True)
class SpawnTiming:
    """Spawn-to-echo and kill latencies in milliseconds."""

    level: Level
    layers: tuple[str, ...]
    spawn_ms: tuple[float, ...]
    kill_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        """Median spawn-to-echo time."""
        return statistics.median(self.spawn_ms)

    @property
    def median_kill_ms(self) -> float:
        """Median kill() time (tree kill, reap, cgroup removal)."""
        return statistics.median(self.kill_ms)


def _echo_roundtrip(fd_out: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("probe bot did not echo")
        ready, _, _ = select.select([fd_out], [], [], left)
        if ready:
            if not os.read(fd_out, 4096):
                raise RuntimeError("probe bot exited before echoing")
            return


def measure_spawn(level: Level = DEFAULT_LEVEL, runs: int = 20, warmup: int = 2) -> SpawnTiming:
    """Spawn ``runs`` echo bots (after ``warmup`` unmeasured ones) and time each."""
    spawn_ms: list[float] = []
    kill_ms: list[float] = []
    used: tuple[str, ...] = ()
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)
        for i in range(warmup + runs):
            began = time.perf_counter()
            proc = spawn(["/bin/cat"], folder, level=level)
            try:
                proc.stdin.write(b"ping\n")
                _echo_roundtrip(proc.stdout.fileno(), 10.0)
                answered = time.perf_counter()
            finally:
                proc.kill()
            killed = time.perf_counter()
            used = tuple(proc.layers)
            if i >= warmup:
                spawn_ms.append((answered - began) * 1000)
                kill_ms.append((killed - answered) * 1000)
    return SpawnTiming(level, used, tuple(spawn_ms), tuple(kill_ms))
