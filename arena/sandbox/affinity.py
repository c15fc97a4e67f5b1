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

Pool workers claim their core machine-wide (:func:`claim_core`), so that two arenas on
one machine (two tournaments, a tournament beside ``arena serve``'s ladder) spread over
the cores instead of each putting its first worker on the first core.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


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


CLAIMS_DIR = Path(tempfile.gettempdir()) / f"arena-cores-{os.getuid()}"
"""Where pool workers claim their cores: a lock file per core and slot, held (``flock``)
for as long as the worker lives; the kernel drops a claim with its process, ``kill -9``
included, so nothing is ever left to clean up."""
CLAIM_SLOTS = 64
"""Claims per core before a worker gives up claiming and takes its round-robin core."""

_CLAIMS: list[int] = []
"""This process's claims (their descriptors, kept open: closing one drops its claim)."""


def claim_core(index: int, cores: list[int]) -> int:
    """The core for pool worker ``index`` (from 0), claimed machine-wide: a core of
    ``cores`` no live worker of any arena on this machine holds, else one held by the
    fewest (slot 0 of every core is tried, then slot 1, ...), starting round-robin from
    ``index`` so that one pool's workers spread over the cores. Without a usable claims
    folder, plain round-robin."""
    n = len(cores)
    folder = _claims_folder()
    if folder is not None:
        for slot in range(CLAIM_SLOTS):
            for k in range(n):
                core = cores[(index + k) % n]
                if _claim(folder / f"core-{core}.{slot}"):
                    return core
    return cores[index % n]


def claim_order(cores: list[int] | None = None) -> list[int]:
    """``cores`` (default: every core this thread may use) with those no worker claims
    first: what a pool's parent hands its workers before it forks them, so that worker
    ``i`` starts its search at the ``i``-th (:func:`claim_core`). Without it a worker
    pushed off a claimed core takes its sibling's, and the sibling stacks on top."""
    cores = allowed_cores() if cores is None else cores
    folder = _claims_folder()
    if folder is None:
        return list(cores)
    free = []
    for core in cores:
        if _claim(folder / f"core-{core}.0"):
            os.close(_CLAIMS.pop())  # only a look: released at once
            free.append(core)
    return free + [c for c in cores if c not in free]


def release_claims() -> None:
    """Drop this process's claims (tests; a worker's are dropped with it)."""
    while _CLAIMS:
        with contextlib.suppress(OSError):
            os.close(_CLAIMS.pop())


def _claims_folder() -> Path | None:
    """:data:`CLAIMS_DIR`, made if missing; None unless it is a real folder of ours (it
    lives in a shared temporary folder: another user's folder or link is not used)."""
    folder = CLAIMS_DIR
    with contextlib.suppress(FileExistsError, OSError):
        folder.mkdir(mode=0o700)
    try:
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return None
    return folder


def _claim(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by a live worker (or no locks here): not ours
        os.close(fd)
        return False
    _CLAIMS.append(fd)
    return True


def pin_worker(index: int, order: list[int] | None = None) -> int | None:
    """Pin a pool worker (numbered from 0) to a core of its own where the machine has
    one free of other arena workers (:func:`claim_core`), else to the least-claimed;
    ``order``: its pool's :func:`claim_order`. Returns the core, None when nothing was
    pinned."""
    allowed = allowed_cores()
    if len(allowed) < 2:
        return None  # one core already: nothing to choose
    cores = [c for c in order or () if c in allowed]
    cores += [c for c in allowed if c not in cores]
    core = claim_core(index, cores)
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
