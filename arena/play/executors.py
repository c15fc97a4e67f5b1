"""Executors run scheduled games somewhere and hand results back, in any order.

The runner only sees this interface: it submits jobs (plain picklable data, see
:class:`arena.play.worker.GameJob`) a few at a time, as the scheduler hands them
out, and collects results keyed by their game index; the store inserts a result only if
absent, so an executor may deliver a game twice (a retried remote worker) but never needs
to track the store. A distributed engine is another executor whose workers call
:func:`arena.play.worker.run_job`.
"""

from __future__ import annotations

import queue
from collections import deque
from typing import Any, Protocol

from arena.play.job import GameJob, GameResult
from arena.play.worker import WorkerState, init_pool_worker, pool_run_job, run_job


class Executor(Protocol):
    @property
    def workers(self) -> int:
        """How many games run at once (the runner keeps about twice this many submitted;
        read again after every result, so it may grow, e.g. Ray's batches)."""
        ...

    def submit(self, job: GameJob) -> None:
        """Start (or queue) one game."""
        ...

    def next_result(self) -> GameResult:
        """Block until a submitted game finishes; return its result (any order).
        A job that failed with an exception re-raises it here."""
        ...

    def close(self, abort: bool = False) -> None:
        """Stop the workers; with ``abort``, abandon running games (their bots are killed)."""
        ...


class InlineExecutor:
    """Runs games one by one in this process (debugging, tests, profiling)."""

    workers = 1

    def __init__(self, max_live_bots: int | None = None) -> None:
        self._state = WorkerState(worker_id=0, max_live_bots=max_live_bots)
        self._jobs: deque[GameJob] = deque()

    def submit(self, job: GameJob) -> None:
        self._jobs.append(job)

    def next_result(self) -> GameResult:
        return run_job(self._state, self._jobs.popleft())

    def close(self, abort: bool = False) -> None:
        self._state.close()


class LocalPoolExecutor:
    """A pool of worker processes on this machine (``multiprocess``)."""

    def __init__(self, workers: int, one_core: bool = False) -> None:
        """``one_core``: each worker and its bots on one core (``PlaySettings.pins_core``)."""
        import multiprocess

        self.workers = workers
        self._pool: Any = multiprocess.Pool(
            workers, initializer=init_pool_worker, initargs=(None, one_core)
        )
        self._done: queue.SimpleQueue[GameResult | BaseException] = queue.SimpleQueue()

    def submit(self, job: GameJob) -> None:
        self._pool.apply_async(
            pool_run_job, (job,), callback=self._done.put, error_callback=self._done.put
        )

    def next_result(self) -> GameResult:
        while True:
            try:
                item = self._done.get(timeout=0.25)  # wakes up for Ctrl-C / SIGTERM
            except queue.Empty:
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def close(self, abort: bool = False) -> None:
        if abort:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()
