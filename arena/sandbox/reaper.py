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


# ---------------------------------------------------------------- per-uid kernel state

_SYSV = (("shm", "shmctl"), ("msg", "msgctl"), ("sem", "semctl"))
IPC_RMID = 0
SHARED_DIRS = ("/dev/shm", "/dev/mqueue")
# Clears the user and session keyrings of the uid it runs as (keyctl(KEYCTL_CLEAR, ...)).
_CLEAR_KEYS = (
    "import ctypes, platform\n"
    "n = {'x86_64': 250, 'aarch64': 219}.get(platform.machine(), 250)\n"
    "libc = ctypes.CDLL(None)\n"
    "[libc.syscall(n, 7, ring) for ring in (-4, -3, -5)]\n"
)
_keys_cleared: set[int] = set()
KEY_GC_WAIT_S = 5.0
"""Longest wait for the kernel to free a dead bot's keyrings (usually milliseconds)."""


def sysv_objects_of_uid(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of the SysV IPC objects in *our* ipc namespace owned by ``uid``."""
    found = []
    for kind, _ in _SYSV:
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                header = fh.readline().split()
                id_col, uid_col = 1, header.index("uid")
                for line in fh:
                    fields = line.split()
                    if len(fields) > uid_col and int(fields[uid_col]) == uid:
                        found.append((kind, int(fields[id_col])))
        except (OSError, ValueError):
            continue
    return found


def keys_of_uid(uid: int) -> int:
    """How many keys the kernel holds for ``uid`` (``/proc/key-users``), 0 if none."""
    try:
        with open("/proc/key-users") as fh:
            for line in fh:
                who, _, rest = line.partition(":")
                if who.strip() == str(uid):
                    return int(rest.split()[1].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def clear_uid_state(uid: int, setpriv: str | None) -> list[str]:
    """Remove what ``uid`` left in host-wide kernel state: SysV IPC objects, files in
    /dev/shm and /dev/mqueue, the contents of its keyrings.  Without bubblewrap's ipc
    namespace and seccomp filter a bot can leave these for the next bot of its uid.
    Returns what was removed (best effort; never for uid 0)."""
    if uid <= 0:
        raise ValueError("refusing to clear the state of uid 0")
    removed = []
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in sysv_objects_of_uid(uid):
        if kind == "sem":
            result = libc.semctl(ident, 0, IPC_RMID)
        else:
            result = getattr(libc, f"{kind}ctl")(ident, IPC_RMID, None)
        if result == 0:
            removed.append(f"sysv {kind} {ident}")
    for folder in SHARED_DIRS:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    import shutil

                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed.append(entry.path)
    # Once cleared, a uid keeps its two (empty) user and user-session keyrings.
    if setpriv is not None and keys_of_uid(uid) > (2 if uid in _keys_cleared else 0):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [
                    setpriv,
                    f"--reuid={uid}",
                    f"--regid={uid}",
                    "--clear-groups",
                    "--",
                    "/usr/bin/python3",
                    "-c",
                    _CLEAR_KEYS,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=5,
                check=False,
            )
            removed.append(f"keys of uid {uid}")
        _keys_cleared.add(uid)
        # A bot without a session keyring that adds a key to one gets an anonymous
        # session keyring, which the kernel frees asynchronously once the bot is gone:
        # wait for that, so the next bot of this uid cannot find its keys.
        deadline = time.monotonic() + KEY_GC_WAIT_S
        while keys_of_uid(uid) > 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    return removed
