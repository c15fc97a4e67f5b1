"""A game's referee and bots on one core (``PlaySettings.one_core``): who gets pinned,
what the bots inherit through the sandbox, and that everything is given back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from arena.play.build import build_bot
from arena.play.executors import LocalPoolExecutor
from arena.play.match import run_match
from arena.referee import BotSeat, BotSpec, GameSettings
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.settings import PlaySettings
from arena.sandbox import affinity

CORES = affinity.allowed_cores()
needs_two_cores = pytest.mark.skipif(len(CORES) < 2, reason="needs a machine with 2+ cores")


@pytest.fixture(autouse=True)
def own_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Core claims in a folder of this test's: other arenas on the machine (another test
    run, a tournament) hold theirs elsewhere and cannot move these tests' cores. Pool
    workers are forked, so they see the same folder."""
    folder = tmp_path / "claims"
    monkeypatch.setattr(affinity, "CLAIMS_DIR", folder)
    yield folder
    affinity.release_claims()


T = TypeVar("T")


def in_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a fresh thread: affinity is per thread, so the test's own is untouched."""
    out: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return out[0]


def test_pins_core_only_on_the_cpu_clock() -> None:
    assert PlaySettings().pins_core  # the default: CPU clock, one core
    assert not PlaySettings(one_core=False).pins_core
    assert not PlaySettings(time=TimeControl(clock=ClockKind.WALL)).pins_core


@needs_two_cores
def test_one_core_pins_where_it_runs_and_gives_every_core_back() -> None:
    def body() -> tuple[int | None, list[int], list[int]]:
        with affinity.one_core() as core:
            inside = affinity.allowed_cores()
        return core, inside, affinity.allowed_cores()

    core, inside, after = in_thread(body)
    assert core in CORES
    assert inside == [core]
    assert after == CORES


def test_one_core_disabled_or_on_a_single_core_changes_nothing() -> None:
    def disabled() -> tuple[int | None, list[int]]:
        with affinity.one_core(False) as core:
            return core, affinity.allowed_cores()

    assert in_thread(disabled) == (None, CORES)

    def single() -> tuple[int | None, list[int]]:
        os.sched_setaffinity(0, {CORES[0]})
        with affinity.one_core() as core:
            return core, affinity.allowed_cores()

    assert in_thread(single) == (None, [CORES[0]])


@needs_two_cores
def test_pool_workers_are_spread_over_the_cores() -> None:
    for one_core, expected in ((True, 1), (False, len(CORES))):
        pool = LocalPoolExecutor(2, one_core=one_core)
        try:
            seen = pool._pool.map(_my_cores, range(40), chunksize=1)
        finally:
            pool.close()
        assert {len(cores) for cores in seen} == {expected}
        if one_core:
            assert len(set(seen)) == 2  # two workers, two different cores


def test_claims_spread_over_the_cores_then_stack_evenly() -> None:
    cores = [3, 5]  # any numbers the machine allows; nothing is pinned here
    first = [affinity.claim_core(0, cores) for _ in range(2)]
    assert first == [3, 5]  # one pool's workers, or two arenas' first workers
    assert affinity.claim_core(1, cores) == 5  # every core has one: round-robin from 1
    assert affinity.claim_core(1, cores) == 3
    affinity.release_claims()
    assert affinity.claim_core(1, cores) == 5  # released: all free again


def test_a_pool_beside_a_claimed_core_spreads_its_workers_over_the_others() -> None:
    cores = [3, 5]
    assert affinity.claim_core(0, cores) == 3  # another arena's worker, idle or not
    order = affinity.claim_order(cores)  # the pool's parent, before it forks
    assert order == [5, 3]
    siblings = [affinity.claim_core(i, order) for i in range(2)]
    assert siblings == [5, 3]  # not both on 5: the first took the second's first choice
    assert affinity.claim_order(cores) == cores  # every core claimed: the plain order


def test_a_claim_is_dropped_when_its_process_is_killed(own_claims: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from arena.sandbox import affinity; "
        "affinity.CLAIMS_DIR = Path(sys.argv[1]); "
        "print(affinity.claim_core(0, [0, 1]), flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(own_claims)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "0"
        assert affinity.claim_core(0, [0, 1]) == 1  # core 0 is the child's
        affinity.release_claims()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert affinity.claim_core(0, [0, 1]) == 0  # its claim went with it: nothing to clean


def test_a_claims_folder_that_is_not_ours_is_not_used(own_claims: Path) -> None:
    own_claims.parent.mkdir(exist_ok=True)
    elsewhere = own_claims.parent / "elsewhere"
    elsewhere.mkdir()
    own_claims.symlink_to(elsewhere)  # e.g. planted in a shared /tmp
    assert [affinity.claim_core(0, [0, 1]) for _ in range(2)] == [0, 0]  # round-robin
    assert not list(elsewhere.iterdir())


_ONE_WORKER_POOL = """
import sys
from pathlib import Path
from arena.play.executors import LocalPoolExecutor
from arena.sandbox import affinity
from tests.referee.test_one_core import _my_cores
affinity.CLAIMS_DIR = Path(sys.argv[1])
pool = LocalPoolExecutor(1, one_core=True)
print(*pool._pool.apply(_my_cores, (0,)), flush=True)
sys.stdin.read()
pool.close()
"""


@needs_two_cores
def test_two_arenas_on_one_machine_put_their_workers_on_different_cores(
    own_claims: Path,
) -> None:
    """Two 1-worker tournaments at once (or one beside the server's ladder), each its own
    process: both numbered their worker 0 and put it, with its bots, on the first core."""
    root = Path(__file__).resolve().parents[2]
    arenas, seen = [], []
    try:
        for _ in range(2):  # the second starts while the first one's worker runs
            arena = subprocess.Popen(
                [sys.executable, "-c", _ONE_WORKER_POOL, str(own_claims)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=root,
            )
            arenas.append(arena)
            assert arena.stdout is not None
            seen.append(arena.stdout.readline().split())
    finally:
        for arena in arenas:
            arena.communicate("", timeout=30)
    assert [len(cores) for cores in seen] == [1, 1]
    assert seen[0] != seen[1]


def _my_cores(_: int) -> tuple[int, ...]:
    import time

    time.sleep(0.01)  # let both workers take some
    return tuple(sorted(os.sched_getaffinity(0)))


@needs_two_cores
def test_bots_started_on_one_core_inherit_it_through_the_sandbox(
    scripted_bot: Callable[..., BotSpec],
) -> None:
    spec = scripted_bot("cores", name="cores")

    def started(pinned: bool) -> tuple[int | None, str]:
        with affinity.one_core(pinned) as core:
            seat = BotSeat(build_bot(spec))
            try:
                assert seat.start() is None
                assert seat.ready is not None
                return core, seat.ready.name
            finally:
                seat.close()

    core, name = in_thread(lambda: started(True))
    assert name == f"cores-{core}"
    _, name = in_thread(lambda: started(False))
    assert name == "cores-" + "-".join(map(str, CORES))


@needs_two_cores
def test_a_match_on_one_core_gives_the_caller_its_cores_back(
    scripted_bot: Callable[..., BotSpec], tmp_path: Path
) -> None:
    specs = [scripted_bot("good", name="a"), scripted_bot("good", name="b")]

    def match() -> list[int]:
        result = run_match(specs, GameSettings(seed=1), tmp_path / "m", one_core=True)
        assert not result.outcome.faults
        return affinity.allowed_cores()

    assert in_thread(match) == CORES


@needs_two_cores
def test_unpin_gives_a_pinned_worker_every_core() -> None:
    """A terminated worker unpins before killing its bots (its core may be busy)."""

    def body() -> tuple[int | None, list[int]]:
        core = affinity.pin_worker(1)
        pinned = affinity.allowed_cores()
        affinity.unpin()
        assert pinned == [core]
        return core, affinity.allowed_cores()

    core, after = in_thread(body)
    assert core == CORES[1] and after == CORES
