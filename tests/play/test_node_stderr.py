"""A Ray node sends back, with each game's result, what its seats wrote to stderr since
the last game: each byte once, and a restarted bot's rotated log read from its start."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arena.play import ray_executor
from arena.play.worker import WorkerState


@pytest.fixture
def job(tmp_path: Path) -> Any:
    bot = SimpleNamespace(spec=SimpleNamespace(name="python-greedy"))
    game = SimpleNamespace(game_id="g1")
    return SimpleNamespace(log_dir=tmp_path, collect_stderr=False, bots=(bot,), game=game)


def test_each_games_new_stderr_once_and_a_rotated_log_from_its_start(
    job: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray_executor, "_NODE", {})
    state = WorkerState(worker_id=3)
    log = state.stderr_log(job, job.bots[0])
    log.write_text("first game\n")
    assert ray_executor._new_stderr(state, job) == ((0, "first game\n"),)
    with log.open("a") as f:
        f.write("second game\n")
    assert ray_executor._new_stderr(state, job) == ((0, "second game\n"),)
    assert ray_executor._new_stderr(state, job) == ()  # nothing new: nothing sent
    log.replace(log.with_name(log.name + ".1"))  # the bot restarted: a new log
    log.write_text("new\n")
    assert ray_executor._new_stderr(state, job) == ((0, "new\n"),)
