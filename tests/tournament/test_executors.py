"""Executors are interchangeable: the same schedule gives the same results whoever runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.play.executors import InlineExecutor, LocalPoolExecutor
from arena.tournament import STORE_NAME, Store, TournamentConfig, run_tournament

REPO = Path(__file__).resolve().parents[2]


def results(out: Path) -> list[tuple[object, ...]]:
    with Store(out / STORE_NAME, readonly=True) as store:
        return [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]


def test_inline_and_pool_executors_store_identical_results(tmp_path: Path) -> None:
    bots = [REPO / "bots" / name for name in ("python-greedy", "python-random", "js-random")]
    outs = []
    for name, executor in (("inline", InlineExecutor()), ("pool", LocalPoolExecutor(2))):
        config = TournamentConfig(
            bots=bots, players=[2, 3], variants=["gray"], seeds=2, output=tmp_path / name
        )
        progress = run_tournament(config, executor=executor)
        assert progress.done == progress.total == 3 * 2 * 2 + 6 * 2  # 3p: 6 seatings
        outs.append(results(config.output))
    assert outs[0] == outs[1]
    assert len({row[0] for row in outs[0]}) == 24


def test_a_worker_keeps_few_bot_processes_least_recently_used_closed_first(
    tmp_path: Path,
) -> None:
    """100 bots through one worker: never more than its limit alive, the current game's
    bots always kept (seats are created lazily, so no process starts here)."""
    from arena.play.job import GameJob, ScheduledGame
    from arena.play.worker import WorkerState
    from arena.referee import load_bot
    from arena.referee.manifest import Built
    from arena.referee.settings import PlaySettings

    spec = load_bot(REPO / "bots" / "python-random")
    specs = [
        Built(spec.model_copy(update={"folder": tmp_path / f"b{i}"}), 0.0, False, "v", REPO)
        for i in range(100)
    ]
    state = WorkerState(worker_id=0, max_live_bots=6)
    for start in range(0, 100, 3):
        seated = specs[start : start + 4]
        game = ScheduledGame(start, f"g{start}", len(seated), "coloured", 0, 1, 0, ("x",) * 4)
        job = GameJob(game, tuple(seated), PlaySettings(), True, tmp_path)
        keep = {(s.spec.name, str(s.spec.folder)) for s in seated}
        seats = [state.seat_for(job, i, keep) for i in range(len(seated))]
        assert len(state.seats) <= 6
        assert all(key in state.seats for key in keep)
        assert len({id(s) for s in seats}) == len(seated)
        assert len({slot for _, slot in state.seats.values()}) == len(state.seats)
    state.close()
    assert state.seats == {}


def test_workers_has_one_default_and_one_meaning(tmp_path: Path) -> None:
    """A tournament, an SPRT run and the server's ladder read ``workers`` alike: worker
    processes, 0 (the default everywhere) one per core."""
    import os

    from arena.competition.config import LadderSection
    from arena.play.executors import worker_count
    from arena.sprt.runner import SprtConfig

    cores = os.cpu_count() or 1
    assert worker_count(0) == cores and worker_count(3) == 3
    with pytest.raises(ValueError, match="one per core"):
        worker_count(-1)
    bots = [REPO / "bots" / "python-random", REPO / "bots" / "python-greedy"]
    tournament = TournamentConfig(bots=bots)
    sprt = SprtConfig(new=bots[0], old=bots[1])
    ladder = LadderSection(games_in_flight=7)
    assert tournament.workers == sprt.workers == ladder.workers == 0
    assert tournament.worker_count == worker_count(sprt.workers) == ladder.worker_count == cores
    assert (
        LadderSection(workers=3).worker_count == TournamentConfig(bots=bots, workers=3).worker_count
    )


TERMINATED_MID_KILL = r"""
import os, signal, sys, time
from pathlib import Path
from arena.play import worker
from arena.play.job import GameJob, ScheduledGame
from arena.referee import load_bot
from arena.referee.manifest import Built
from arena.referee.settings import PlaySettings

folder = Path(sys.argv[1])
worker.init_pool_worker(1, False, os.getppid())
bot = Built(load_bot(folder), 0.0, False, "v", folder)
game = ScheduledGame(0, "g0", 2, "coloured", 0, 1, 0, ("x",) * 4)
job = GameJob(game, (bot, bot), PlaySettings(sandbox="auto"), True, Path(sys.argv[2]))
seat = worker._STATE.seat_for(job, 0, set())
assert seat.start() is None, "the bot did not start"
print(seat.pid, flush=True)
seat._proc._kill_lock.acquire()  # as if the signal came while the worker killed this bot
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(20)
print("still running", flush=True)
"""


def test_a_worker_terminated_in_the_middle_of_killing_a_bot_still_exits(
    tmp_path: Path,
) -> None:
    """SIGTERM (the parent died) can interrupt a worker anywhere, even inside a bot's own
    kill(), which holds that bot's lock: the handler must neither wait for that lock
    nor for anything else. Here the lock is held on purpose; the worker and its bot must
    be gone at once (the old handler, which killed through kill(), hung for ever)."""
    import subprocess
    import sys
    import time

    bot = REPO / "bots" / "python-greedy"
    proc = subprocess.Popen(
        [sys.executable, "-c", TERMINATED_MID_KILL, str(bot), str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 1, (proc.returncode, out, err[-2000:])
    bot_pid = int(out.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{bot_pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    break  # dead, waiting for init to reap it
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the bot (pid {bot_pid}) outlived its worker")
    assert "still running" not in out


def test_the_pools_worker_handler_sleeps_while_results_arrive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The standard pool's worker handler also waits on the result pipe, so every result
    woke it (and it spun until the result thread had read it): CPU of the parent, which
    2 workers share their cores with. Now it wakes for a worker's exit or the pool's own
    notices only: a few times for 40 results, not at least once per result."""
    import time

    executor = LocalPoolExecutor(1)
    pool = executor._pool
    wakes = []
    maintain = type(pool)._maintain_pool

    def counted(*args: object) -> None:
        wakes.append(1)
        maintain(*args)

    monkeypatch.setattr(type(pool), "_maintain_pool", staticmethod(counted))
    try:
        pending = [pool.apply_async(time.sleep, (0.005,)) for _ in range(40)]
        for job in pending:
            job.get(timeout=30)
        assert len(wakes) < 10
    finally:
        executor.close()


def _sandbox_probed_here() -> bool:
    """In a pool worker: whether its first sandbox detection had to probe the machine."""
    from arena.sandbox import layers

    misses = layers.detection.cache_info().misses
    layers.detection()
    return layers.detection.cache_info().misses > misses


def test_pool_workers_inherit_the_sandbox_probe() -> None:
    """The probe (~60 ms of CPU) is made once in the parent before the workers fork, not
    again in each worker of each pool (a process that runs several tournaments, the
    ladder, a bench, paid it per pool and worker)."""
    from arena.sandbox import layers

    layers.detection.cache_clear()
    executor = LocalPoolExecutor(2)
    try:
        probed = [executor._pool.apply_async(_sandbox_probed_here) for _ in range(4)]
        assert [job.get(timeout=60) for job in probed] == [False] * 4
    finally:
        executor.close()


def _fails(message: str) -> None:
    raise ValueError(message)


def test_the_pools_queues_carry_what_only_dill_can_pickle_and_abort_with_tasks_queued() -> None:
    """Tasks and results go by the standard pickler (a game's are a module-level function
    and bytes), else by the pool's own ``dill``: a closure still runs, an exception still
    comes back, and an abort with tasks still queued drains them without unpickling."""
    import pickle
    import time

    from arena.play import executors

    assert executors._dumps((1, b"x"))[:1] == b"P"
    offset = 3
    closure = executors._dumps(lambda x: x + offset)
    assert closure[:1] == b"D"
    assert executors._loads(closure)(1) == 4
    executor = LocalPoolExecutor(1)
    pool = executor._pool
    try:
        assert pool.apply_async(lambda x: x * offset, (5,)).get(timeout=30) == 15
        assert pool.apply_async(pickle.dumps, (b"y",)).get(timeout=30) == pickle.dumps(b"y")
        with pytest.raises(ValueError, match="from the worker"):
            pool.apply_async(_fails, ("from the worker",)).get(timeout=30)
        for _ in range(20):
            pool.apply_async(time.sleep, (0.05,))
        pool.terminate()  # (what an abort's teardown does) drains the queued tasks
    finally:
        executor.close(abort=True)


def test_a_terminating_pool_drains_queued_tasks_as_bytes() -> None:
    """``terminate`` discards the tasks still queued while its task thread lives: read as
    bytes (the standard pool unpickles them with ``dill``, which cannot read them)."""
    import multiprocess

    from arena.play import executors

    inqueue = executors._fast_queue_class()(ctx=multiprocess.get_context())
    for i in range(3):
        inqueue.put((i, b"task"))

    class Alive:
        def is_alive(self) -> bool:
            return True

    executors._quiet_pool_class()._help_stuff_finish(inqueue, Alive(), 1)
    assert not inqueue._reader.poll()
    inqueue._rlock.release()
    inqueue.close()


def test_jobs_cross_to_a_worker_with_their_shared_parts_unpickled_once(tmp_path: Path) -> None:
    """A pool's jobs: each arrives equal to what was submitted; the settings, log folder
    and bots that jobs share are one object each on the worker's side; a different object
    (a settings change, another bot) is a part of its own, never mistaken for one seen."""
    from arena.play.job import GameJob, JobPickler, JobUnpickler, ScheduledGame
    from arena.referee import load_bot
    from arena.referee.manifest import Built
    from arena.referee.settings import PlaySettings

    folder = REPO / "bots" / "python-random"
    a = Built(load_bot(folder), 0.0, False, "v1", folder)
    b = Built(load_bot(folder), 0.0, False, "v2", folder)
    settings = PlaySettings(sandbox="off")
    games = [ScheduledGame(i, f"g{i}", 2, "coloured", i, i, 0, ("a", "b")) for i in range(3)]
    jobs = [
        GameJob(games[0], (a, b), settings, True, tmp_path),
        GameJob(games[1], (b, a), settings, True, tmp_path, compress=True),
        GameJob(games[2], (a, a), PlaySettings(sandbox="auto"), False, tmp_path / "other"),
    ]
    pickler, unpickler = JobPickler(), JobUnpickler()
    read = [unpickler.loads(pickler.dumps(job)) for job in jobs]
    assert read == jobs
    assert read[0].bots[0] is read[1].bots[1] is read[2].bots[0]  # bot a: one object
    assert read[0].bots[1] is read[1].bots[0] and read[0].bots[0] is not read[0].bots[1]
    assert read[0].settings is read[1].settings and read[2].settings != read[0].settings
    assert read[1].compress and not read[0].compress and not read[2].persistent
