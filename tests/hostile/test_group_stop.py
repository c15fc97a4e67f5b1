"""SIGTERM to the whole process group, as ``timeout`` and a service manager's stop send it.

The workers of the local pool get it too: an idle one dies while it waits for a task,
holding the task queue's lock for ever, and the parent's pool teardown used to wait for
that lock ('Finished server process', then a hang until SIGKILL). Both commands must stop
promptly, as they do on Ctrl-C, and leave no process behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .hostile_support import (
    REPO,
    good_bot,
    kill_all,
    make_public,
    run_cli,
    store_problems,
    stored_games,
    tournament_command,
    wait_for_no_leftovers,
)

STOP_S = 60.0
"""A hang guard, not a speed target: both stop in about a second."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _stop_group(proc: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM to the process group; its exit status, None if it hung (then SIGKILLed)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(STOP_S)
    except subprocess.TimeoutExpired:
        return None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_serve_stopped_by_a_signal_to_its_process_group_exits(tmp_path: Path) -> None:
    """An idle ladder: every worker waits for a task, so one of them holds the lock."""
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    make_public(tmp_path)
    port = _free_port()
    toml = tmp_path / "cup.toml"
    toml.write_text(f"[server]\nport = {port}\n[ladder]\nworkers = 2\n")
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "serve", str(toml)],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as under timeout or systemd
        )
    deadline = time.monotonic() + 120
    while not _healthy(port):
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, "arena serve never became healthy"
        time.sleep(0.2)
    time.sleep(1.0)  # the workers are idle, waiting for a task
    code = _stop_group(proc)
    output = log.read_text(errors="replace")
    assert code is not None, f"arena serve hung after SIGTERM to its group:\n{output[-2000:]}"
    assert code == 0, output[-2000:]
    assert "Stopped: 0 running game(s)" in output
    left = wait_for_no_leftovers([tmp_path])
    kill_all(left)
    assert not left, [p.describe() for p in left]


def test_tournament_stopped_by_a_signal_to_its_process_group_can_resume(tmp_path: Path) -> None:
    """Mid-play: the interrupted message as on Ctrl-C, and resuming stores every game once."""
    make_public(tmp_path)
    bots = [good_bot(name, tmp_path / "bots") for name in ("python-greedy", "c-greedy")]
    out = tmp_path / "out"
    cmd = tournament_command(bots, out, seeds=150, sandbox="auto")
    log = tmp_path / "cli.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 120
    while stored_games(out) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the tournament ended before it could be stopped"
    code = _stop_group(proc)
    output = log.read_text(errors="replace")
    assert code is not None, f"arena tournament hung after SIGTERM to its group:\n{output[-2000:]}"
    assert code == 130, output[-2000:]
    assert "Resume with:" in output
    left = wait_for_no_leftovers([tmp_path])
    kill_all(left)
    assert not left, [p.describe() for p in left]

    from arena.tournament.schedule import build_schedule

    finished = run_cli(cmd, timeout_s=300)
    assert finished.returncode == 0, finished.output[-3000:]
    expected = build_schedule([b.name for b in bots], [2], ["coloured"], 150, master_seed=1)
    assert store_problems(out, [g.game_id for g in expected]) == []
