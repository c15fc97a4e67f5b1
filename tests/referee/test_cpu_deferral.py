"""The closing CPU reading of an answer in time may wait until the bot is idle again
(after the next request went out): fake meters and clocks, no timing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from arena.engine import Game
from arena.protocol.messages import GameEnd
from arena.referee.channel import ChannelError, ReadFailure
from arena.referee.clock import MACHINE_CORES, ClockKind, Stopwatch, TimeControl
from arena.referee.manifest import BotManifest, BotSpec, Built
from arena.referee.seats import _RESTING, BotSeat, Choice, freeze_resting, settle_cpu

from .test_clock import CPU, FakeHost


class FakeSeat:
    """What ``Choice.settle`` needs of a ``BotSeat``: its meter and CPU-seconds tally."""

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self._busy_s = 0.0

    def cpu_reading(self) -> int | None:
        return self.host.cpu_ns()

    def rest(self, reading: int | None, *, freeze: bool = True) -> None:
        self.rested = reading


def answered(host: FakeHost, cpu_s: float, control: TimeControl = CPU) -> tuple[Choice, Any]:
    """A bot that computes ``cpu_s`` on one core and answers: the seat's quick path."""
    watch = Stopwatch(1000, control, host, now=host.now)
    host.run(cpu_s, 1.0)
    wall_ms = watch.quick_stop()
    assert wall_ms is not None
    seat = FakeSeat(host)
    choice = Choice(0, wall_ms, None, None, ClockKind.CPU)
    choice._pending = (watch, seat, None, 0)  # type: ignore[assignment]
    return choice, seat


def test_an_answer_in_time_needs_one_reading_until_settled() -> None:
    host = FakeHost()
    choice, seat = answered(host, 0.1)
    assert host.readings == 1  # only the opening one: the verdict cannot depend on CPU
    host.run(2.0, 0.0)  # idle while the other seats think
    choice.settle()
    assert choice.cpu_ms == pytest.approx(100.0)
    assert seat._busy_s == pytest.approx(0.1)
    assert host.readings == 2


def test_a_later_opening_reading_closes_the_previous_answer() -> None:
    host = FakeHost()
    choice, _ = answered(host, 0.25)
    host.run(0.5, 0.0)
    opening = host.cpu_ns()  # the same bot's next request: one reading does both
    choice.settle(opening, read=False)
    assert choice.cpu_ms == pytest.approx(250.0)
    assert host.readings == 2


def test_cpu_ms_settles_on_first_use() -> None:
    host = FakeHost()
    choice, _ = answered(host, 0.05)
    assert choice.cpu_ms == pytest.approx(50.0)
    host.cpu += 10**9
    assert choice.cpu_ms == pytest.approx(50.0)  # read once only


def test_settle_cpu_takes_the_thread_s_deferred_readings() -> None:
    from arena.referee import seats

    host = FakeHost()
    choice, _ = answered(host, 0.2)
    seats._UNSETTLED.choices.append(choice)
    settle_cpu()
    assert seats._UNSETTLED.choices == []
    host.cpu += 10**9
    assert choice.cpu_ms == pytest.approx(200.0)


def test_no_deferral_once_the_cpu_could_be_over() -> None:
    host = FakeHost()
    w = Stopwatch(1000, CPU, host, now=host.now)
    host.run(1.0 / MACHINE_CORES, 1.0)  # all cores for this long could use the allowance
    assert w.quick_stop() is None
    w = Stopwatch(1000, CPU, host, now=host.now)
    host.run(w.wake_at - host.t, 0.1)
    assert w.overrun() is None  # a reading between: from then on, read at once
    assert w.quick_stop() is None


class _FakeProcess:
    """The bot process a ``BotSeat`` sees: CPU readings from ``host``, always alive."""

    def __init__(self, host: FakeHost, sink: Any = None) -> None:
        self.host = host
        self.sink = sink

    def cpu_ns(self) -> int | None:
        return self.host.cpu_ns()

    def cpu_wait_ns(self) -> int | None:
        return self.host.cpu_wait_ns()

    def poll(self) -> int | None:
        return None

    def kill(self) -> None:
        return None

    frozen = False

    def freeze(self) -> bool:
        self.frozen = True
        return True

    def thaw(self) -> None:
        self.frozen = False


class _InstantChannel:
    """Answers every ``decide`` with option 0 at once; notes the readings taken by then."""

    transcript = None
    last_line = None

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.readings_at_send: list[int] = []
        self._reply = b""

    def send(self, data: bytes, deadline: float) -> None:
        self.readings_at_send.append(self.host.readings)
        rid = orjson.loads(data).get("id", 0)
        self._reply = b'{"type":"move","id":%d,"index":0}' % rid

    def read_line(self, deadline: float) -> bytes:
        self.host.run(0.001, 1.0)
        return self._reply

    def close(self) -> None:
        return None


def _seat(host: FakeHost, sink: Any = None) -> tuple[BotSeat, _InstantChannel]:
    fake = BotSpec(folder=Path("/nonexistent"), manifest=BotManifest(name="fake", command="x"))
    seat = BotSeat(Built(fake, 0.0, False, "fake", fake.folder), time_control=CPU)
    chan = _InstantChannel(host)
    seat.attach(chan, _FakeProcess(host, sink), clock=ClockKind.CPU)  # type: ignore[arg-type]
    return seat, chan


def test_the_opening_reading_is_taken_after_the_request_is_written() -> None:
    """Seats that alternate: no CPU reading between a reply and the next request (the
    bots would wait for it); each decision is still charged its own CPU time."""
    host = FakeHost()
    game = Game.new(players=2, seed=1)
    seats = [_seat(host), _seat(host)]
    choices = []
    for req_id in range(1, 7):
        seat, chan = seats[game.current_player]
        before = host.readings
        options = game.legal_moves()
        choice = seat.decide(req_id, game, options, 1000, "g")
        assert isinstance(choice, Choice)
        assert chan.readings_at_send[-1] == before  # the request went out first
        choices.append(choice)
        game.apply(options[choice.index])
    settle_cpu()
    assert [c.cpu_ms for c in choices] == pytest.approx([1.0] * 6)


class _ThinkingChannel(_InstantChannel):
    """Answers like :class:`_InstantChannel`, but only to a read whose deadline is at
    least ``think_s`` after the request: earlier reads time out, as while a bot thinks
    (no sleeping: the seat's read loop is driven by its deadlines alone)."""

    def __init__(self, host: FakeHost, think_s: float) -> None:
        super().__init__(host)
        self.think_s = think_s
        self.sent_at = 0.0
        self.on_reply: Any = None

    def send(self, data: bytes, deadline: float) -> None:
        super().send(data, deadline)
        self.sent_at = time.monotonic()

    def read_line(self, deadline: float) -> bytes | ReadFailure:  # type: ignore[override]
        if deadline < self.sent_at + self.think_s:
            return ReadFailure(ChannelError.TIMEOUT, b"")
        if self.on_reply is not None:
            self.on_reply()
        return super().read_line(deadline)


def _thinking_seat(host: FakeHost, think_s: float) -> tuple[BotSeat, _ThinkingChannel]:
    seat, _ = _seat(host)
    chan = _ThinkingChannel(host, think_s)
    seat.attach(chan, seat._proc, clock=ClockKind.CPU)
    return seat, chan


def test_quick_decisions_leave_the_resting_bots_unfrozen() -> None:
    """Decisions answered within REST_FREEZE_S freeze nobody (fast games pay no freeze);
    the bots between their turns wait on the resting list."""
    host = FakeHost()
    game = Game.new(players=2, seed=1)
    seats = [_seat(host), _seat(host)]
    procs = [seat._proc for seat, _ in seats]
    for req_id in range(1, 7):
        current = game.current_player
        seat, _ = seats[current]
        options = game.legal_moves()
        choice = seat.decide(req_id, game, options, 1000, "g")
        assert isinstance(choice, Choice)
        if req_id > 1:
            assert seats[1 - current][0] in _RESTING.seats  # settled: resting
        assert seat not in _RESTING.seats  # its answer is open
        game.apply(options[choice.index])
    settle_cpu()
    assert not any(p.frozen for p in procs)  # type: ignore[union-attr]
    freeze_resting()
    assert all(p.frozen for p in procs) and _RESTING.seats == []  # type: ignore[union-attr]


def test_a_long_decision_freezes_the_resting_bots_until_their_next_request() -> None:
    """Once a decision has run REST_FREEZE_S the others are frozen while it goes on
    (they cannot ponder, nor slow the one thinking); each is thawed just after its own
    request is written."""
    host = FakeHost()
    game = Game.new(players=2, seed=1)
    seats = [_thinking_seat(host, think_s=0.05), _thinking_seat(host, think_s=0.05)]
    procs = [seat._proc for seat, _ in seats]
    seen: list[tuple[bool, bool]] = []
    for _, chan in seats:
        chan.on_reply = lambda: seen.append(tuple(p.frozen for p in procs))  # type: ignore[union-attr]
    for req_id in range(1, 7):
        current = game.current_player
        seat, _ = seats[current]
        options = game.legal_moves()
        choice = seat.decide(req_id, game, options, 1000, "g")
        assert isinstance(choice, Choice)
        game.apply(options[choice.index])
    # At each reply the one answering ran; from the second decision on, the other was
    # frozen meanwhile (the first found nobody resting: the other had not played yet).
    for req_id, frozen in enumerate(seen, start=1):
        current = (req_id - 1) % 2
        assert not frozen[current]
        assert frozen[1 - current] == (req_id > 1), seen
    settle_cpu()


def test_a_persistent_bot_is_frozen_between_games() -> None:
    """``game_end`` freezes a persistent bot at once: no game of its own, no CPU."""
    host = FakeHost()
    seat, _ = _seat(host)
    game = Game.new(players=2, seed=1)
    choice = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(choice, Choice)
    settle_cpu()
    seat.end(GameEnd(game_id="g", end_reason="normal", results=[]))
    assert seat._proc.frozen  # type: ignore[union-attr]
    assert seat not in _RESTING.seats


def test_cpu_used_between_turns_is_charged_to_the_next_decision() -> None:
    """Where a bot cannot be frozen, what it used after its reply is charged to its next
    decision (``between_ms``), on top of what it used while deciding."""
    host = FakeHost()
    game = Game.new(players=2, seed=1)
    seat, _ = _seat(host)
    first = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(first, Choice)
    settle_cpu()
    host.run(0.3, 1.0)  # pondering while another bot thinks
    second = seat.decide(2, game, game.legal_moves(), 1000, "g")
    assert isinstance(second, Choice)
    assert second.between_ms == pytest.approx(300, abs=0.01)
    assert second.cpu_ms == pytest.approx(1.0)
    assert second.spent.charged_ms == pytest.approx(301, abs=0.01)


def test_an_unreadable_meter_after_the_request_falls_back_to_the_wall_clock() -> None:
    host = FakeHost()
    w = Stopwatch(1000, CPU, host, now=host.now, read_now=False)
    assert w.clock is ClockKind.CPU
    cpu_ceiling = w.ceiling
    host.readable = False
    w.open()
    assert w.clock is ClockKind.WALL
    assert w.ceiling < cpu_ceiling  # the wall clock's limits, from the same start
    host.run(0.5, 1.0)
    assert w.verdict(w.stop()) is None
    host.run(0.6, 1.0)
    assert w.verdict(w.stop()) is not None


class _LoggingSink:
    """A stderr sink that notes when it is asked for a decision's stderr."""

    def __init__(self, log: list[str], name: str, active: bool) -> None:
        self.log, self.name, self.active = log, name, active

    def mark(self) -> int:
        return 0

    def active_since(self, mark: int) -> bool:
        return self.active

    def since(self, mark: int, limit: int) -> str | None:
        self.log.append(f"stderr {self.name}")
        return None


@pytest.mark.parametrize(
    ("clock", "active", "before_next_request"),
    [
        (ClockKind.CPU, False, False),  # quiet: collected once the next request is out
        (ClockKind.CPU, True, True),  # it is writing: collecting may wait, so at once
        (ClockKind.WALL, False, True),  # a wait would run on the next bot's wall clock
    ],
)
def test_when_a_decision_s_stderr_is_collected(
    clock: ClockKind, active: bool, before_next_request: bool
) -> None:
    host = FakeHost()
    control = CPU if clock is ClockKind.CPU else TimeControl(move_ms=1000, clock=clock)
    log: list[str] = []
    game = Game.new(players=2, seed=1)
    seats = []
    for name in ("a", "b"):
        seat, chan = _seat(host, _LoggingSink(log, name, active))
        seat.time_control = control
        seat.clock = clock
        sent = chan.send

        def logged(data: bytes, deadline: float, sent: Any = sent, name: str = name) -> None:
            log.append(f"request {name}")
            sent(data, deadline)

        chan.send = logged  # type: ignore[method-assign]
        seats.append(seat)
    for req_id in (1, 2):
        seat = seats[game.current_player]
        options = game.legal_moves()
        choice = seat.decide(req_id, game, options, 1000, "g")
        assert isinstance(choice, Choice)
        game.apply(options[choice.index])
    first, second = ("a", "b") if log[0] == "request a" else ("b", "a")
    collected = log.index(f"stderr {first}")
    assert (collected < log.index(f"request {second}")) == before_next_request, log
