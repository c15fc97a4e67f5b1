"""Where a game runs: its referee and its bots on one core.

A game is strictly turn-based: while a bot thinks the referee waits for it, and while
the referee works every bot waits. Running them all on one core costs no parallelism,
and every hand-over then stays on that core: no wake-up across cores (an
inter-processor interrupt, slow on virtual machines) and warm caches. On the 2-core
VM we develop on this halves the referee's CPU time per decision
(``arena bench protocol`` measures both placements in one run).

Processes and threads inherit the affinity of the one that starts them, so pinning
the process that referees before it spawns its bots places the bots too. A bot may
use one core's worth of CPU time (its cgroup quota), so one core is all it can use.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def allowed_cores() -> list[int]:
    """The cores this thread may run on (empty where the OS cannot say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def current_core() -> int | None:
    """The core this thread is running on now (None where the OS cannot say)."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[36])  # field 39, "processor", counted after "pid (comm)"
    except (OSError, IndexError, ValueError):
        return None


def pin(core: int) -> bool:
    """Run this thread, and whatever it starts from now on, on ``core`` only."""
    try:
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError, ValueError):
        return False
    return True


def unpin() -> None:
    """Let this thread run on every core the machine has again (best effort)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


def pin_worker(index: int) -> int | None:
    """Pin a pool worker (numbered from 0) to its share of the cores it may use: workers
    are spread round-robin. Returns the core, None when nothing was pinned."""
    cores = allowed_cores()
    if len(cores) < 2:
        return None  # one core already: nothing to choose
    core = cores[index % len(cores)]
    return core if pin(core) else None


@contextlib.contextmanager
def one_core(enabled: bool = True) -> Iterator[int | None]:
    """Pin this thread to the core it runs on now for the ``with`` block (bots spawned
    inside inherit it), then give it back every core it had. Yields the core, or None
    when nothing was pinned (disabled, a single core, or no affinity support)."""
    before = allowed_cores()
    core = current_core() if enabled and len(before) > 1 else None
    if core is None or core not in before or not pin(core):
        yield None
        return
    try:
        yield core
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)
