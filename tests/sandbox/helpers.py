"""Small helpers shared by the sandbox tests: bounded reads and "nothing survived" checks."""

from __future__ import annotations

import dataclasses
import os
import select
import time

from arena.sandbox import BotProcess, layers
from arena.sandbox.reaper import pids_of_uid
from arena.sandbox.spec import LayerStatus


def read_line(proc: BotProcess, timeout_s: float = 10.0) -> str:
    """One stdout line, or AssertionError after ``timeout_s`` (tests never hang)."""
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout_s
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f"no line from bot within {timeout_s} s (got {buf!r})"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 1)
            assert chunk, f"bot closed stdout (got {buf!r}); stderr: {proc.stderr_tail()!r}"
            buf += chunk
    return buf.decode().rstrip("\n")


def assert_nothing_left(proc: BotProcess) -> None:
    """After kill(): no process of the bot's uid, no cgroup left, the process reaped."""
    assert proc.returncode is not None
    if proc.uid is not None:
        assert not pids_of_uid(proc.uid), f"processes of uid {proc.uid} survived"
    for d in proc.cgroup_dirs:
        assert not d.exists(), f"cgroup {d} was not removed"


def simulated(*off: str) -> layers.Detection:
    """This machine's detection with some layers switched off (and their tools gone)."""
    real = layers.detection()
    statuses = tuple(
        LayerStatus(s.name, False, "simulated missing") if s.name in off else s for s in real.layers
    )
    return dataclasses.replace(
        real,
        layers=statuses,
        bwrap=None if layers.BWRAP in off else real.bwrap,
        setpriv=None if layers.UID in off else real.setpriv,
        cgroups=None if layers.CGROUPS in off else real.cgroups,
        prlimit=None if layers.RLIMITS in off else real.prlimit,
        seccomp=None if layers.SECCOMP in off or layers.BWRAP in off else real.seccomp,
    )
