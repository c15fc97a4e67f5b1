"""Executors run game jobs somewhere and hand results back, in any order.

Callers (a tournament, an SPRT run, the server's ladder) only see this interface: they
submit jobs (plain picklable data, :class:`arena.play.job.GameJob`) a few at a time and
collect :class:`~arena.play.job.GameResult`\\ s keyed by their game index; the store
inserts a result only if absent, so an executor may deliver a game twice (a retried
remote worker) but never needs to track the store. A job that failed (the arena's
problem: a sandbox that cannot start, a full disk) re-raises its exception from
:meth:`Executor.poll` / :meth:`Executor.next_result`, tagged with its game
(:func:`arena.play.worker.failed_game`).
"""

from __future__ import annotations

import functools
import os
import pickle
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from arena.play.job import GameJob, GameResult, JobPickler
from arena.play.worker import (
    WorkerState,
    init_pool_worker,
    pool_run_job,
    pool_run_pickled,
    run_job,
    tag_failure,
)

WORKERS_HELP = "parallel games: worker processes (default 0: one per core)"
"""What ``workers`` means wherever it is set (tournament, SPRT, the server's ladder)."""


def worker_count(workers: int = 0) -> int:
    """How many worker processes ``workers`` asks for: the number itself, 0 one per core.
    The one default and the one meaning of the setting."""
    if workers < 0:
        raise ValueError(f"workers must be 0 (one per core) or more, not {workers}")
    return workers or os.cpu_count() or 1


POLL_S = 0.25
"""How long a blocking wait sleeps between checks (so Ctrl-C and SIGTERM get through)."""
ABORT_WAIT_S = 5.0
"""How long an aborting pool waits for each step (its workers to exit after SIGTERM, then
after SIGKILL; its own teardown): a worker kills its bots and exits within 2 s."""


class Executor(Protocol):
    @property
    def workers(self) -> int:
        """How many games run at once (a tournament keeps about twice this many submitted;
        read again after every result, so it may grow, e.g. Ray's batches)."""
        ...

    def submit(self, job: GameJob) -> None:
        """Start (or queue) one game."""
        ...

    def poll(self, timeout: float) -> GameResult | None:
        """A finished game's result if one is ready within ``timeout`` seconds, else None."""
        ...

    def next_result(self) -> GameResult:
        """Block until a submitted game finishes; return its result (any order)."""
        ...

    def close(self, abort: bool = False) -> None:
        """Stop the workers; with ``abort``, abandon running games (their bots are killed)."""
        ...


def wait_result(executor: Executor) -> GameResult:
    """:meth:`Executor.next_result` for executors that only poll."""
    while True:
        result = executor.poll(POLL_S)
        if result is not None:
            return result


class InlineExecutor:
    """Runs games one by one in this process (debugging, tests, profiling).

    ``play`` replaces how a job becomes a result (tests script games this way, as
    python-chess's ``MockTransport`` scripts an engine); by default the real worker plays
    it with this executor's own persistent bots."""

    workers = 1

    def __init__(
        self,
        max_live_bots: int | None = None,
        play: Callable[[GameJob], GameResult] | None = None,
    ) -> None:
        self._state = WorkerState(worker_id=0, max_live_bots=max_live_bots)
        self._play = play or (lambda job: run_job(self._state, job))
        self._jobs: deque[GameJob] = deque()

    def submit(self, job: GameJob) -> None:
        self._jobs.append(job)

    def poll(self, timeout: float) -> GameResult | None:
        if not self._jobs:
            return None
        job = self._jobs.popleft()
        try:
            return self._play(job)
        except Exception as exc:
            tag_failure(exc, job)
            raise

    def next_result(self) -> GameResult:
        if not self._jobs:
            raise RuntimeError("next_result() with no game submitted")
        result = self.poll(0)
        assert result is not None
        return result

    def close(self, abort: bool = False) -> None:
        self._jobs.clear()
        self._state.close()


@functools.cache
def _quiet_pool_class() -> type[Any]:
    import multiprocess.pool

    class QuietPool(multiprocess.pool.Pool):  # type: ignore[misc]
        """The pool whose worker handler waits for what it handles only: a worker's exit
        and the pool's own change notices (the task cache emptied, a terminate), not for
        the result pipe as the standard pool does. That thread only replaces dead workers,
        but the pipe stays readable from a result's arrival until the result thread has
        read it, so in the parent it woke and spun (wait, check every worker, wait again)
        for as long as each result sat there: a sixth of the parent's CPU a game, and a
        core the 2-worker run shares."""

        def _get_sentinels(self) -> list[Any]:
            return [self._change_notifier._reader]

        def _setup_queues(self) -> None:
            """The task and result queues carry the standard pickler's bytes (see
            :func:`_dumps`); the workers, forked, share these very queues."""
            self._inqueue = _fast_queue_class()(ctx=self._ctx)
            self._outqueue = _fast_queue_class()(ctx=self._ctx)
            writer, reader = self._inqueue._writer, self._outqueue._reader
            self._quick_put = lambda obj: writer.send_bytes(_dumps(obj))
            self._quick_get = lambda: _loads(reader.recv_bytes())

        @staticmethod
        def _help_stuff_finish(inqueue: Any, task_handler: Any, size: int) -> None:
            """The pool's own, discarding tasks as bytes (its ``recv()`` would unpickle
            them with ``dill``, which cannot read :func:`_dumps`'s)."""
            inqueue._rlock.acquire()
            while task_handler.is_alive() and inqueue._reader.poll():
                inqueue._reader.recv_bytes()
                time.sleep(0)

    return QuietPool


_STD, _DILL = b"P", b"D"
"""First byte of a pool message: which pickler wrote the rest."""


def _dumps(obj: object) -> bytes:
    """A pool message (a task, a result) by the standard pickler, or by ``dill`` (the
    pool's own) for what only it can pickle. Every task and result of a game is a
    module-level function with bytes (see :func:`pool_run_pickled`): ``dill`` took ~55 µs
    for each, the standard pickler ~2."""
    try:
        return _STD + pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        from multiprocess.reduction import ForkingPickler

        return _DILL + bytes(ForkingPickler.dumps(obj))


def _loads(data: bytes) -> Any:
    if data[:1] == _STD:
        return pickle.loads(data[1:])
    from multiprocess.reduction import ForkingPickler

    return ForkingPickler.loads(data[1:])


@functools.cache
def _fast_queue_class() -> type[Any]:
    import multiprocess.queues

    class FastQueue(multiprocess.queues.SimpleQueue):  # type: ignore[misc]
        """A pool queue whose messages go through :func:`_dumps` / :func:`_loads`."""

        def get(self) -> Any:
            with self._rlock:
                data = self._reader.recv_bytes()
            return _loads(data)

        def put(self, obj: object) -> None:
            data = _dumps(obj)
            with self._wlock:
                self._writer.send_bytes(data)

    return FastQueue


def quiet_pool(workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> Any:
    """A ``multiprocess`` pool of ``workers`` (as ``multiprocess.Pool``), its worker
    handler woken only when there is something for it to do (see ``QuietPool``)."""
    import multiprocess

    return _quiet_pool_class()(workers, initializer, initargs, context=multiprocess.get_context())


class LocalPoolExecutor:
    """A pool of worker processes on this machine (``multiprocess``), each with its own
    persistent bots; workers die with this process (also on kill -9)."""

    def __init__(self, workers: int, one_core: bool = False) -> None:
        """``one_core``: each worker and its bots on one core (``PlaySettings.pins_core``).

        The sandbox's probe of the machine (bubblewrap, seccomp, cgroups: ~25 ms of CPU,
        mostly in the programs it runs) is made before the workers are forked, so no
        worker of this pool, nor of the next one this process starts, makes it again."""
        from arena.sandbox import affinity, layers

        layers.detection()  # probed here once: every worker forked below inherits it
        self.workers = workers
        order = affinity.claim_order() if one_core else None  # free cores first
        self._pool: Any = quiet_pool(
            workers, initializer=init_pool_worker, initargs=(None, one_core, os.getpid(), order)
        )
        self._done: queue.SimpleQueue[GameResult | BaseException] = queue.SimpleQueue()
        self._pickler = JobPickler()

    def submit(self, job: GameJob) -> None:
        """The job goes pickled by the standard pickler (:func:`pool_run_pickled`: the
        pool's own cost the parent ~2 ms a game), its shared parts once
        (:class:`~arena.play.job.JobPickler`); one it cannot pickle goes as before."""
        try:
            data = self._pickler.dumps(job)
        except (pickle.PicklingError, TypeError, AttributeError):
            self._pool.apply_async(
                pool_run_job, (job,), callback=self._done.put, error_callback=self._done.put
            )
            return
        self._pool.apply_async(
            pool_run_pickled, (data,), callback=self._unpickle, error_callback=self._done.put
        )

    def _unpickle(self, data: bytes) -> None:
        """In the pool's result thread: the result back from its bytes."""
        try:
            self._done.put(pickle.loads(data))
        except Exception as exc:  # a result that does not load is the job's failure
            self._done.put(exc)

    def poll(self, timeout: float) -> GameResult | None:
        try:
            item = self._done.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def next_result(self) -> GameResult:
        return wait_result(self)

    def close(self, abort: bool = False) -> None:
        if abort:
            self._abort()
            return
        try:
            self._pool.close()
            self._pool.join()
        except BaseException:  # stopped while waiting (Ctrl-C, SIGTERM): as an abort
            self._abort()
            raise

    def _abort(self) -> None:
        """Stop the workers ourselves, then tear the pool down without waiting on it.

        ``Pool.terminate()`` alone can wait for ever: a worker killed while it waited for
        a task (SIGTERM to the whole process group: ``timeout``, a service manager's stop)
        still holds the task queue's lock, and one killed while sending a result holds the
        result queue's lock or leaves half a message the pool's result thread waits out.
        So no replacement workers are started, every worker is stopped here (SIGTERM: it
        kills its bots and exits; SIGKILL if it has not within a bound), and the pool's
        own teardown, which needs nothing from them now, gets a bounded wait in a daemon
        thread, none when a dead worker holds a lock it needs: it is left behind, blocked
        (the process is ending; the pool is marked done, so its exit does not wait either)."""
        import multiprocess.pool

        pool = self._pool
        handler = pool._worker_handler
        handler._state = multiprocess.pool.TERMINATE  # replaces no dead worker from here on
        pool._change_notifier.put(None)  # wakes it to see that
        handler.join(ABORT_WAIT_S)
        workers = list(pool._pool)
        for worker in workers:
            if worker.exitcode is None:
                worker.terminate()
        deadline = time.monotonic() + ABORT_WAIT_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        for worker in workers:
            if worker.exitcode is None:
                worker.kill()
                worker.join(ABORT_WAIT_S)
        stuck = any(_held(lock) for lock in (pool._inqueue._rlock, pool._outqueue._wlock))
        teardown = threading.Thread(target=pool.terminate, name="pool-teardown", daemon=True)
        teardown.start()  # even when stuck: it marks the pool done (nothing left for exit)
        if not stuck:
            teardown.join(ABORT_WAIT_S)


def _held(lock: Any) -> bool:
    """Whether a pool's queue lock is taken (once its workers are dead: by a dead one, for
    ever); probing it takes and gives it back at once."""
    if lock is None or not lock.acquire(block=False):
        return lock is not None
    lock.release()
    return False
