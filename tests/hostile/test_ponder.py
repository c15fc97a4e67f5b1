"""CPU time between turns is never free (issue 22): a bot that keeps a thread computing
while the others think and answers its own requests at once (fixtures/ponder).

On the real sandbox: where its cgroup can be frozen (cgroup v2), it gets no CPU time
while an opponent thinks (frozen once that decision has run ``REST_FREEZE_S``), measured
from its cgroup's own accounting; where it cannot be frozen, the CPU time it used since
its last reply is charged to its next decision, so it times out. Honest bots are
unaffected. No assertion is on speed: only on CPU time a frozen cgroup cannot use, and
on faults.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arena.engine import Game
from arena.engine.tables import AnyMove
from arena.play.build import build_bot
from arena.protocol.messages import GameEnd, GameStart
from arena.referee import BotSeat, GameSettings, load_bot, play_game
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.faults import Fault
from arena.referee.seats import Choice
from arena.sandbox import BotProcess, Level

from .conftest import require_full_sandbox
from .hostile_support import FIXTURES, copy_bot, good_bot, hostile_bot

pytestmark = pytest.mark.usefixtures("full_sandbox")

WINDOW_S = 0.3
"""How long the slow opponent thinks (sleeps) for each of its decisions."""
FROZEN_SLACK_MS = 20.0
"""CPU time a frozen bot may still show in one window: what it ran before the freeze,
issued 1 ms (``REST_FREEZE_S``) into the opponent's decision, took hold."""
SLOW_THINKER = f"""import time
from azulbot import run


def think(decision):
    time.sleep({WINDOW_S})  # no CPU time: the referee waits in its read loop
    return None  # a valid move


if __name__ == "__main__":
    run("slow-thinker", on_decide=think)
"""


def slow_thinker(root: Path) -> Path:
    """An honest bot that takes ``WINDOW_S`` over every decision (built in ``root``)."""
    src = root / "src" / "slow-thinker"
    src.mkdir(parents=True)
    shutil.copy(FIXTURES / "_lib" / "azulbot.py", src / "azulbot.py")
    (src / "bot.py").write_text(SLOW_THINKER)
    (src / "bot.toml").write_text(
        'name = "slow-thinker"\nlanguage = "python"\ncommand = "/usr/bin/python3 bot.py"\n'
    )
    return copy_bot(src, root)


class Watching:
    """An opponent (a real bot seat) whose decisions are timed windows: it measures
    through the other bot's cgroup how much CPU time that bot uses while it decides
    (the referee waiting for its reply, as for any slow thinker)."""

    def __init__(self, seat: BotSeat, other: BotSeat, *, until_cpu_ms: float = 0.0) -> None:
        self.seat = seat
        self.name = seat.name
        self.other = other
        self.until_cpu_ms = until_cpu_ms
        """Wait (rather than a fixed window) until the other has used this much."""
        self.windows: list[float] = []
        """CPU time (ms) the other bot used during each window."""

    def begin(self, start: GameStart) -> Fault | None:
        return self.seat.begin(start)

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        before = self.other.cpu_reading()
        answer = self.seat.decide(req_id, game, options, time_left_ms, game_id)
        if before is None:  # not started yet, or gone
            return answer
        if self.until_cpu_ms:
            before = self.other.cpu_reading() or before
            give_up = time.monotonic() + 60
            used = 0.0
            while used < self.until_cpu_ms and time.monotonic() < give_up:
                time.sleep(0.02)
                used = ((self.other.cpu_reading() or before) - before) / 1e6
        after = self.other.cpu_reading()
        if after is not None:
            self.windows.append((after - before) / 1e6)
        return answer

    def end(self, end: GameEnd) -> None:
        self.seat.end(end)

    def abandon(self) -> None:
        self.seat.abandon()


@contextmanager
def ponder_against_watcher(
    root: Path, tc: TimeControl, *, until_cpu_ms: float = 0.0
) -> Iterator[tuple[BotSeat, Watching]]:
    root.chmod(0o755)
    ponder = BotSeat(
        build_bot(load_bot(hostile_bot("ponder", root)), Level.STRICT), time_control=tc
    )
    opponent = good_bot("python-greedy", root) if until_cpu_ms else slow_thinker(root)
    honest = BotSeat(build_bot(load_bot(opponent), Level.STRICT), time_control=tc)
    for slot, seat in enumerate((ponder, honest)):
        seat.sandbox.level = Level.STRICT
        seat.sandbox.slot = slot
    try:
        yield ponder, Watching(honest, ponder, until_cpu_ms=until_cpu_ms)
    finally:
        ponder.close()
        honest.close()


def test_a_pondering_bot_is_frozen_between_its_turns(tmp_path: Path) -> None:
    """The bot's thread gets no CPU time while its opponent thinks (frozen 1 ms into each
    of the opponent's decisions), so it gains nothing and does not slow the opponent; it
    plays the game to the end (no fault)."""
    tc = TimeControl(move_ms=1000, clock=ClockKind.CPU)
    with ponder_against_watcher(tmp_path, tc) as (ponder, watcher):
        record = play_game([ponder, watcher], GameSettings(seed=1, time_control=tc), "p1").record
        thinking = ponder.cpu_reading()
        time.sleep(WINDOW_S)  # after the game too (and before game_start of the next)
        resting = ((ponder.cpu_reading() or 0) - (thinking or 0)) / 1e6
        proc = ponder._proc
        assert proc is not None and proc.frozen
        ponder.abandon()  # killed while frozen: SIGKILL reaches frozen tasks
    assert proc.poll() is not None
    assert not any(d.exists() for d in proc.cgroup_dirs)
    assert record.faults == []
    assert len(watcher.windows) >= 10
    assert max(watcher.windows) < FROZEN_SLACK_MS, watcher.windows
    assert resting < FROZEN_SLACK_MS
    own = [d for r in record.rounds for d in r.decisions if d.seat == 0]
    # Charged to it: what ran between its reply's reading and the freeze taking hold, and
    # between the thaw and the next request's reading (a loaded host stretches both).
    between = [d.between_ms or 0.0 for d in own]
    assert max(between) < tc.move_ms / 4, between


def test_a_pondering_bot_that_cannot_be_frozen_is_charged_and_times_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a freezer (no cgroup v2) the fallback charges what it used since its last
    reply to its next decision: once that is more than its time, it times out, and the
    fault names the CPU time used between its turns."""
    monkeypatch.setattr(BotProcess, "freeze", lambda self: False)
    tc = TimeControl(move_ms=200, clock=ClockKind.CPU)
    with ponder_against_watcher(tmp_path, tc, until_cpu_ms=3 * tc.move_ms) as (ponder, watcher):
        record = play_game([ponder, watcher], GameSettings(seed=1, time_control=tc), "p2").record
    assert watcher.windows and watcher.windows[0] >= 3 * tc.move_ms  # it did ponder
    (fault,) = record.faults
    assert fault.seat == 0 and fault.kind == "timeout"
    assert "between its turns" in fault.message


def test_honest_bots_are_unaffected_across_games(tmp_path: Path) -> None:
    """Frozen between turns and between games (persistent processes), bots that do not
    ponder play every decision without a fault, on both kits' runtimes."""
    require_full_sandbox()
    tmp_path.chmod(0o755)
    tc = TimeControl(move_ms=300, clock=ClockKind.CPU)
    seats = [
        BotSeat(build_bot(load_bot(good_bot(name, tmp_path)), Level.STRICT), time_control=tc)
        for name in ("python-greedy", "c-greedy")
    ]
    for slot, seat in enumerate(seats):
        seat.sandbox.level = Level.STRICT
        seat.sandbox.slot = slot
    try:
        records = [
            play_game(seats, GameSettings(seed=g, time_control=tc), f"h{g}").record
            for g in range(2)
        ]
        pids = [seat.pid for seat in seats]
    finally:
        for seat in seats:
            seat.close()
    assert all(r.faults == [] for r in records)
    assert all(pid is not None for pid in pids)  # one persistent process each
    assert all(seat.pid is None for seat in seats)  # thawed for quit, then gone
