"""The closing CPU reading of an answer in time may wait until the bot is idle again
(after the next request went out): fake meters and clocks, no timing."""

from __future__ import annotations

from typing import Any

import pytest

from arena.referee.clock import MACHINE_CORES, ClockKind, Stopwatch, TimeControl
from arena.referee.seats import Choice, settle_cpu

from .test_clock import CPU, FakeHost


class FakeSeat:
    """What ``Choice.settle`` needs of a ``BotSeat``: its meter and CPU-seconds tally."""

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self._busy_s = 0.0

    def cpu_reading(self) -> int | None:
        return self.host.cpu_ns()


def answered(host: FakeHost, cpu_s: float, control: TimeControl = CPU) -> tuple[Choice, Any]:
    """A bot that computes ``cpu_s`` on one core and answers: the seat's quick path."""
    watch = Stopwatch(1000, control, host, now=host.now)
    host.run(cpu_s, 1.0)
    wall_ms = watch.quick_stop()
    assert wall_ms is not None
    seat = FakeSeat(host)
    choice = Choice(0, wall_ms, None, None, ClockKind.CPU)
    choice._pending = (watch, seat)  # type: ignore[assignment]
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
