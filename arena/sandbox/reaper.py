"""Last-resort tree killing without cgroups: by process group and by per-bot uid.

A grandchild that double-forks and calls setsid() leaves the bot's process group, so
``killpg`` misses it.  If the bot has its own uid we can still find everything it owns:
``kill(-1, SIGKILL)`` issued *as that uid* kills every process of the uid in one atomic
sweep (the kernel holds the task list while it signals, so a fork bomb cannot outrun it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time


def pids_of_uid(uid: int) -> set[int]:
    """Live processes whose real uid is ``uid`` (from /proc, so it sees every namespace).

    Zombies are skipped: they are dead, and orphans may wait a long time to be reaped.
    """
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"State:") and line.split()[1] in (b"Z", b"X"):
                        break
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.add(int(name))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, ignoring a group that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_uid(uid: int, setpriv: str | None, timeout_s: float = 2.0) -> bool:
    """Kill every process of ``uid``; True when none is left.

    Never call this for uid 0 or for a uid shared with anything but one bot.
    """
    if uid <= 0:
        raise ValueError("refusing to kill by uid 0")
    deadline = time.monotonic() + timeout_s
    while True:
        pids = pids_of_uid(uid)
        if not pids:
            return True
        if setpriv is not None:
            # kill(-1) from inside the uid: atomic against fork, unlike a /proc scan.
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [
                        setpriv,
                        f"--reuid={uid}",
                        f"--regid={uid}",
                        "--clear-groups",
                        "--",
                        "/bin/sh",
                        "-c",
                        "kill -KILL -1",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=2,
                    check=False,
                )
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not pids_of_uid(uid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
