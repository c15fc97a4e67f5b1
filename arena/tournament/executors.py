"""Executors run scheduled games somewhere and stream results back, in any order.

The scheduler and the store only see this interface, so a distributed engine can be
added as another executor (its workers call :func:`arena.tournament.worker.run_job`)
without touching either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from arena.tournament.store import GameResult
from arena.tournament.worker import GameJob, WorkerState, init_pool_worker, pool_run_job, run_job


class Executor(Protocol):
    workers: int

    def run(self, jobs: Iterable[GameJob]) -> Iterator[GameResult]:
        """Yield each job's result as soon as it is finished."""
        ...

    def close(self, abort: bool = False) -> None:
        """Stop the workers; with ``abort``, abandon running games (their bots are killed)."""
        ...


class InlineExecutor:
    """Runs games one by one in this process (debugging, tests, profiling)."""

    workers = 1

    def __init__(self) -> None:
        self._state = WorkerState(worker_id=0)

    def run(self, jobs: Iterable[GameJob]) -> Iterator[GameResult]:
        for job in jobs:
            yield run_job(self._state, job)

    def close(self, abort: bool = False) -> None:
        self._state.close()


class LocalPoolExecutor:
    """A pool of worker processes on this machine (``multiprocess``)."""

    def __init__(self, workers: int) -> None:
        import multiprocess

        self.workers = workers
        self._pool: Any = multiprocess.Pool(workers, initializer=init_pool_worker)

    def run(self, jobs: Iterable[GameJob]) -> Iterator[GameResult]:
        yield from self._pool.imap_unordered(pool_run_job, jobs, chunksize=1)

    def close(self, abort: bool = False) -> None:
        if abort:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()
