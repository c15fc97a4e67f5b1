"""Reading a real bot's CPU time: cgroup accounting and the /proc fallback agree, and
both count the CPU of a child process that has already exited."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.sandbox import Level, cputime, spawn
from arena.sandbox.layers import plan

# Burns 300 ms of CPU in a child (which exits and is reaped), 200 ms itself, says so,
# then waits for stdin to close.
BURNER = """\
import os, sys, time
def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass
pid = os.fork()
if pid == 0:
    burn(0.3)
    os._exit(0)
os.waitpid(pid, 0)
burn(0.2)
print("done", flush=True)
sys.stdin.read()
"""


def _wait_for_line(fd: int, timeout_s: float = 60.0) -> None:
    """Wait (a generous bound: the host may be loaded) for the bot to print its line."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    while b"\n" not in buf:
        assert time.monotonic() < deadline, "the burner never finished"
        os.set_blocking(fd, False)
        try:
            buf += os.read(fd, 100)
        except BlockingIOError:
            time.sleep(0.02)


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A folder the per-bot uid can reach (pytest's tmp_path sits under a 0700 folder)."""
    root = Path(tempfile.mkdtemp(prefix="arena-cpu-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("level", [Level.AUTO, Level.OFF])
def test_tree_cpu_time_includes_exited_children(public_dir: Path, level: Level) -> None:
    folder = public_dir / "bot"
    folder.mkdir()
    (folder / "bot.py").write_text(BURNER)
    for p in (folder, folder / "bot.py"):
        p.chmod(0o755)
    proc = spawn(["/usr/bin/python3", "bot.py"], folder, level=level)
    try:
        _wait_for_line(proc.stdout.fileno())
        used = proc.cpu_ns()
        scanned = cputime.tree_cpu_ns(proc.pid, proc.uid)
        assert used is not None and scanned is not None
        # 500 ms burned plus start-up; /proc samples in clock ticks, so allow some slack.
        assert 0.45e9 <= used < 5e9
        assert 0.45e9 <= scanned < 5e9
        if level is Level.AUTO and plan(Level.AUTO).cgroups is not None:
            assert abs(used - scanned) < 0.1e9
    finally:
        proc.kill()


def test_tree_cpu_time_of_a_missing_process_is_unknown() -> None:
    assert cputime.tree_cpu_ns(2**22 + 12345) is None
