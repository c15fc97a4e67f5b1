"""How the Ray executor cuts its queue into batches (no cluster needed: the remote call
is replaced by one that records each batch's size)."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

from arena.play.ray_executor import RayExecutor


def _executor(cpus: int, batch_size: int, queued: int) -> tuple[RayExecutor, list[int]]:
    sent: list[int] = []

    class Remote:
        def remote(self, items: list[Any], refs: dict[str, Any]) -> object:
            sent.append(len(items))
            return object()

    executor = RayExecutor.__new__(RayExecutor)  # its state, without joining a cluster
    executor.cpus, executor.batch_size, executor.tasks = cpus, batch_size, 0
    executor._batches, executor._bundle_refs = [], {}
    executor._remote = Remote()
    executor._queue = deque(
        SimpleNamespace(job=SimpleNamespace(game=SimpleNamespace(game_index=i)), digests=())
        for i in range(queued)
    )
    return executor, sent


def test_the_last_games_are_shared_out_over_every_cpu() -> None:
    """A finals of 12 short games, batches learned at 30 games: two batches of 6 (one per
    node of 1 CPU), not one node playing all 12 while the other idles."""
    executor, sent = _executor(cpus=2, batch_size=30, queued=12)
    executor._dispatch(flush=True)
    assert sent == [6, 6] and not executor._queue


def test_a_full_queue_goes_in_whole_batches_and_the_rest_waits() -> None:
    executor, sent = _executor(cpus=2, batch_size=5, queued=12)
    executor._dispatch(flush=False)
    assert sent == [5, 5] and len(executor._queue) == 2
    executor, sent = _executor(cpus=2, batch_size=30, queued=1)
    executor._dispatch(flush=True)
    assert sent == [1]


def test_an_event_submitted_game_by_game_starts_on_every_idle_cpu() -> None:
    """A finals of 12 games handed over one by one, batches learned at exactly 12 games:
    the first game of each idle CPU goes at once (the rest wait for a CPU and are then
    shared out), not one batch of all 12 on one node while the other idles (seen on a
    namespace cluster: the finals played on one worker host only)."""
    executor, sent = _executor(cpus=2, batch_size=12, queued=0)
    for index in range(12):
        executor.submit(SimpleNamespace(bots=(), game=SimpleNamespace(game_index=index)))  # type: ignore[arg-type]
    assert sent == [1, 1] and len(executor._queue) == 10
