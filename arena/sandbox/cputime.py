"""CPU time of a bot's process tree without cgroups: one scan of /proc.

The fallback for machines where the bot has no cgroup with CPU accounting (see
``BotCgroup.cpu_ns`` for the exact, cheap way). It sums user + system time, plus the
time of reaped children, over every live descendant of the bot's first process and
every process of its uid (which catches a double-forked orphan outside bubblewrap).
Precision is the kernel's clock tick (usually 10 ms) and one scan costs about a
millisecond per hundred processes on the machine. A process that exits and is reaped
outside the tree takes its CPU time with it: the count is a lower bound, which the
referee's wall-clock ceiling backs up.
"""

from __future__ import annotations

import os

_TICK_NS = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, CPU ticks including reaped children) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw.rpartition(b")")[2].split()
    # after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime ...
    try:
        ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        return int(fields[1]), ticks
    except (IndexError, ValueError):
        return None


def tree_cpu_ns(root: int, uid: int | None = None) -> int | None:
    """CPU time (ns) used so far by ``root``'s descendants (itself included) and by every
    process of ``uid``; None when /proc cannot be read."""
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return None
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    owned: set[int] = set()
    for name in names:
        st = _stat(name)
        if st is None:
            continue
        pid = int(name)
        parent[pid], ticks[pid] = st
        if uid is not None:
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    owned.add(pid)
            except OSError:
                continue
    if root not in ticks and not owned:
        return None
    total = 0
    for pid, used in ticks.items():
        seen = 0
        node = pid
        while node not in (root, 0, 1) and seen < 64:  # bounded: pids are reused
            node = parent.get(node, 0)
            seen += 1
        if node == root or pid in owned:
            total += used
    return total * _TICK_NS
