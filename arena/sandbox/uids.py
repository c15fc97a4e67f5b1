"""Lease per-bot uids so that no two live bots on this machine ever share one.

The caller's slot picks the preferred uid (``61000 + slot``), but several arena
processes (parallel tournaments, test runs) may use the same slot numbers at once.
Sharing a uid would merge their RLIMIT_NPROC budgets and let one bot's kill() sweep
the other's processes, so each uid is held under an exclusive ``flock`` for the life of
the bot; a busy uid falls over to ``61000 + slot + 1000 * k``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox import reaper
from arena.sandbox.spec import SandboxBusy, SandboxError

UID_BASE = 61000
SLOTS = 1000
ALTERNATES = 4  # uids 61000 .. 64999
WAIT_S = 60.0
"""How long a bot waits for a free uid before the arena stops with SandboxBusy."""
LOCK_DIRS = (Path("/run/arena-sandbox"), Path("/tmp/arena-sandbox-root"))


@dataclass(eq=False)
class UidLease:
    """An exclusively held uid; ``release()`` when the bot is dead (idempotent)."""

    uid: int
    fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        """Drop the lock so another bot may use the uid."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)  # "released cleanly"
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


_held: weakref.WeakSet[UidLease] = weakref.WeakSet()


def _forget_in_child() -> None:
    """A forked child must not keep its parent's uid locks alive (flock is per open file):
    close its inherited copies, which leaves the parent's locks untouched."""
    for held in list(_held):
        if held.fd is not None:
            with contextlib.suppress(OSError):
                os.close(held.fd)
            held.fd = None
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _lock_dir() -> Path:
    """A root-only directory for the lock files (bots must not be able to touch them)."""
    for d in LOCK_DIRS:
        try:
            d.mkdir(mode=0o700, exist_ok=True)
            st = d.lstat()
            if st.st_uid == os.geteuid() and not st.st_mode & 0o077 and d.is_dir():
                return d
        except OSError:
            continue
    raise SandboxError("cannot create a private lock directory for per-bot uids")


def _try(folder: Path, uid: int, setpriv: str | None) -> UidLease | None:
    """Lock ``uid`` if no live bot holds it, clearing out any orphan of a crashed arena."""
    fd = os.open(folder / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    # A holder that released cleanly left the file empty.  Otherwise an arena crashed
    # while holding it, and anything still running under the uid is its orphan: it
    # would eat this bot's RLIMIT_NPROC budget.  (Checking the marker instead of
    # scanning /proc keeps spawn fast.)
    if os.pread(fd, 32, 0) and reaper.pids_of_uid(uid):
        reaper.kill_uid(uid, setpriv)
    # Whatever a bot of this uid left in host-wide kernel state (an older arena, a run
    # without bubblewrap or seccomp) goes before a new bot gets the uid.
    reaper.clear_uid_state(uid, setpriv)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    held = UidLease(uid, fd)
    _held.add(held)
    return held


def candidates(slot: int) -> Iterator[int]:
    """The slot's own uids first (61000 + slot + 1000 k), then every other uid of the pool
    (lazily: a spawn usually takes the first; listing all 4,000 cost ~0.3 ms a spawn)."""
    preferred = [UID_BASE + slot + SLOTS * k for k in range(ALTERNATES)]
    yield from preferred
    for uid in range(UID_BASE, UID_BASE + SLOTS * ALTERNATES):
        if uid not in preferred:
            yield uid


def lease(slot: int, setpriv: str | None, wait_s: float | None = None) -> UidLease:
    """Lock a uid for a bot in ``slot``: its own, else any free one of the pool.

    When every uid is held by a live bot (many arena processes on one host) this waits
    up to ``wait_s`` for one to be released, then raises :class:`SandboxBusy`: a lack
    of arena resources is never the bot's fault.
    """
    if not 0 <= slot < SLOTS:
        raise SandboxError(f"slot must be in 0..{SLOTS - 1}, got {slot}")
    folder = _lock_dir()
    wait_s = WAIT_S if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    while True:
        for uid in candidates(slot):
            held = _try(folder, uid, setpriv)
            if held is not None:
                return held
        if time.monotonic() >= deadline:
            raise SandboxBusy(
                f"all {SLOTS * ALTERNATES} per-bot uids ({UID_BASE}-"
                f"{UID_BASE + SLOTS * ALTERNATES - 1}) are in use by other bots on this "
                f"machine (waited {wait_s:g} s); run fewer arena processes at once, then "
                "run the same command again to resume"
            )
        time.sleep(0.2)
