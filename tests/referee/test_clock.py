"""Clock accounting against a fake CPU-time source and a fake monotonic clock (no timing)."""

from __future__ import annotations

import pytest

from arena.referee.clock import Clock, ClockKind, Spent, Stopwatch, TimeControl


class FakeHost:
    """A bot and the host clock: ``run(wall_s, cpu_share)`` advances wall time while the
    bot gets ``cpu_share`` of a core (a loaded host gives it less); a bot with
    ``cpu_share == 0`` sleeps, otherwise it waits for a CPU the rest of the time."""

    def __init__(self, pressure: bool = True) -> None:
        self.t = 100.0
        self.cpu = 5_000_000_000  # the process already used 5 s before this decision
        self.wait = 7_000_000_000
        self.pressure = pressure
        self.readable = True
        self.readings = 0

    def now(self) -> float:
        return self.t

    def cpu_ns(self) -> int | None:
        self.readings += 1
        return self.cpu if self.readable else None

    def cpu_wait_ns(self) -> int | None:
        self.readings += 1
        return self.wait if self.pressure else None

    def run(self, wall_s: float, cpu_share: float) -> None:
        self.t += wall_s
        self.cpu += int(wall_s * cpu_share * 1e9)
        if cpu_share > 0:
            self.wait += int(wall_s * max(0.0, 1 - cpu_share) * 1e9)

    def think(self, watch: Stopwatch, cpu_needed_s: float, cpu_share: float) -> str | Spent:
        """Play the referee's loop: wait until ``wake_at`` or the reply, whichever first."""
        left = cpu_needed_s
        while True:
            until_reply = left / cpu_share if cpu_share > 0 else float("inf")
            if self.t + until_reply <= watch.wake_at:
                self.run(until_reply, cpu_share)
                spent = watch.stop()
                return watch.verdict(spent) or spent
            step = watch.wake_at - self.t
            self.run(step, cpu_share)
            left -= step * cpu_share
            why = watch.overrun()
            if why is not None:
                return why


CPU = TimeControl(move_ms=1000, grace_ms=50, clock=ClockKind.CPU, wall_ceiling=5)
WALL = TimeControl(move_ms=1000, grace_ms=50, clock=ClockKind.WALL)


def watch(host: FakeHost, control: TimeControl = CPU, allowance: int = 1000) -> Stopwatch:
    return Stopwatch(allowance, control, host, now=host.now)


@pytest.mark.parametrize(("load", "pressure"), [(1, True), (4, True), (40, True), (4.9, False)])
def test_cpu_clock_charges_cpu_only_whatever_the_load(load: float, pressure: bool) -> None:
    """With pressure information any load up to the hard ceiling (50x) is forgiven;
    without it, up to the wall ceiling (5x)."""
    host = FakeHost(pressure)
    result = host.think(watch(host), cpu_needed_s=0.8, cpu_share=1 / load)
    assert isinstance(result, Spent)
    assert result.clock is ClockKind.CPU
    assert result.cpu_ms == pytest.approx(800, abs=1)
    assert result.wall_ms == pytest.approx(800 * load, abs=1)
    assert result.charged_ms == result.cpu_ms


@pytest.mark.parametrize("load", [1, 2, 4])
def test_wall_clock_charges_the_load(load: float) -> None:
    host = FakeHost()
    result = host.think(watch(host, WALL), cpu_needed_s=0.8, cpu_share=1 / load)
    if load == 1:
        assert isinstance(result, Spent) and result.charged_ms == pytest.approx(800, abs=1)
    else:
        assert result == "no move within 1000 ms"


@pytest.mark.parametrize("load", [1, 2, 4])
def test_cpu_clock_times_out_a_bot_over_its_cpu_time(load: float) -> None:
    host = FakeHost()
    result = host.think(watch(host), cpu_needed_s=1.2, cpu_share=1 / load)
    assert isinstance(result, str) and "CPU time" in result


def test_the_overrun_is_caught_close_to_the_budget() -> None:
    host = FakeHost()
    w = watch(host)
    result = host.think(w, cpu_needed_s=100, cpu_share=1)
    assert isinstance(result, str) and result.startswith("used ")
    used_ms = (host.cpu - 5_000_000_000) / 1e6
    assert 1050 < used_ms <= 1050 + 1000 * 0.01 + 1  # within one minimum check interval


@pytest.mark.parametrize("pressure", [True, False])
def test_a_sleeping_bot_hits_the_wall_ceiling(pressure: bool) -> None:
    host = FakeHost(pressure)
    result = host.think(watch(host), cpu_needed_s=0.01, cpu_share=0.0)
    assert isinstance(result, str) and "ceiling" in result and "sleeping" in result
    assert host.t - 100.0 == pytest.approx(5.0)


def test_a_bot_that_works_then_sleeps_hits_the_ceiling_on_idle_time() -> None:
    host = FakeHost()
    w = watch(host)
    host.run(w.wake_at - host.t, 0.25)  # a loaded host: 1.05 s for 262 ms of CPU
    assert w.overrun() is None  # the first reading of the wait counter
    host.run(2.0 - 1.05, 0.25)  # 500 ms of CPU in all, then it blocks
    result = host.think(w, cpu_needed_s=1.0, cpu_share=0.0)
    assert isinstance(result, str) and "idle" in result
    # Idle = wall - CPU - wait since the first reading: the 0.79 s waited before it
    # count as idle, so the 5 s are reached 0.79 s early (after 2 s + 5 s - 0.79 s).
    assert host.t - 100.0 == pytest.approx(7.0 - 1.05 * 0.75, abs=0.02)


def test_without_pressure_a_starved_bot_is_stopped_at_the_wall_ceiling() -> None:
    host = FakeHost(pressure=False)
    result = host.think(watch(host), cpu_needed_s=0.9, cpu_share=0.1)  # needs 9 s of wall
    assert isinstance(result, str) and "ceiling" in result


def test_the_hard_ceiling_ends_even_a_starved_bot() -> None:
    host = FakeHost()
    result = host.think(watch(host), cpu_needed_s=0.9, cpu_share=0.01)  # needs 90 s of wall
    assert isinstance(result, str) and "hard ceiling" in result
    assert host.t - 100.0 == pytest.approx(50.0, abs=0.02)


def test_a_reply_over_its_cpu_time_between_readings_is_still_late() -> None:
    host = FakeHost()
    w = watch(host)
    host.run(0.5, 1.0)  # the reply arrives before the first reading is due
    host.cpu += 700_000_000  # ...but a second thread burned CPU meanwhile
    verdict = w.verdict(w.stop())
    assert verdict is not None and "CPU time" in verdict


def test_a_quick_answer_costs_two_readings() -> None:
    host = FakeHost()
    result = host.think(watch(host), cpu_needed_s=0.05, cpu_share=0.5)
    assert isinstance(result, Spent)
    assert host.readings == 2


def test_multicore_bots_are_read_sooner() -> None:
    host = FakeHost()
    w = Stopwatch(1000, CPU, host, cores=2, now=host.now)
    assert w.wake_at - host.t == pytest.approx(0.525)
    result = host.think(w, cpu_needed_s=1.0, cpu_share=2)  # two busy threads: 1 s CPU in 0.5 s
    assert isinstance(result, Spent) and result.cpu_ms == pytest.approx(1000, abs=1)


def test_unreadable_cpu_time_falls_back_to_wall() -> None:
    host = FakeHost()
    host.readable = False
    w = watch(host)
    assert w.clock is ClockKind.WALL
    assert host.think(w, cpu_needed_s=0.8, cpu_share=0.5) == "no move within 1000 ms"


def test_wall_clock_still_records_cpu_time() -> None:
    host = FakeHost()
    result = host.think(watch(host, WALL), cpu_needed_s=0.3, cpu_share=0.5)
    assert isinstance(result, Spent)
    assert result.clock is ClockKind.WALL and result.cpu_ms == pytest.approx(300, abs=1)
    assert result.charged_ms == result.wall_ms


@pytest.mark.parametrize("pressure", [True, False])
def test_empty_bank_leaves_the_grace(pressure: bool) -> None:
    host = FakeHost(pressure)
    result = host.think(watch(host, allowance=0), cpu_needed_s=0.01, cpu_share=0.0)
    assert isinstance(result, str) and "sleeping" in result
    assert host.t - 100.0 == pytest.approx(0.05, abs=0.011)  # within one check interval


@pytest.mark.parametrize("clock", list(ClockKind))
def test_bank_and_increment_are_charged_on_the_clock(clock: ClockKind) -> None:
    control = TimeControl(move_ms=1000, bank_ms=3000, increment_ms=100, clock=clock)
    bank = Clock(control)
    bank.charge(Spent(wall_ms=900, cpu_ms=400, clock=clock))
    expected = 3000 - (400 if clock is ClockKind.CPU else 900) + 100
    assert bank.bank_ms == pytest.approx(expected)
    bank.charge(Spent(wall_ms=5000, cpu_ms=5000, clock=clock))
    assert bank.bank_ms == 100 and bank.allowance_ms() == 100


def test_hello_limits_name_the_clock() -> None:
    assert CPU.limits(1000).clock == "cpu" and CPU.limits(1000).wall_ceiling == 5
    fallback = CPU.limits(1000, ClockKind.WALL)
    assert fallback.clock == "wall" and fallback.wall_ceiling is None


def test_ceiling_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="wall_ceiling"):
        TimeControl(wall_ceiling=0.5)


def test_replay_show_prints_both_times_per_decision() -> None:
    from arena.commands.replay import times_text
    from arena.engine.record import DecisionRecord

    both = DecisionRecord(seat=0, move="col1", think_ms=12.34, cpu_ms=0.5)
    assert times_text(both) == "  (wall 12.3 ms, CPU 0.5 ms)"
    old = DecisionRecord(seat=0, move="col1", think_ms=3.0)  # a record from before cpu_ms
    assert times_text(old) == "  (wall 3.0 ms)"
    assert times_text(DecisionRecord(seat=1, move="col1", auto=True)) == (
        "  (played by the referee)"
    )


def test_cpu_used_since_the_previous_reply_is_charged_to_the_next_decision() -> None:
    """Pondering is never free: with the previous reply's reading as ``prior_ns``, what
    the bot used before the request counts against this decision's allowance."""
    host = FakeHost()
    prior = host.cpu
    host.run(0.5, 0.6)  # 300 ms of CPU while the others thought
    w = Stopwatch(1000, CPU, host, now=host.now, prior_ns=prior)
    assert w.between_ms == pytest.approx(300, abs=0.01)
    result = host.think(w, cpu_needed_s=0.2, cpu_share=1)
    assert isinstance(result, Spent)
    assert result.cpu_ms == pytest.approx(200, abs=1)
    assert result.between_ms == pytest.approx(300, abs=0.01)
    assert result.charged_ms == pytest.approx(500, abs=1)


def test_a_bot_that_pondered_past_its_time_times_out_naming_it() -> None:
    host = FakeHost()
    prior = host.cpu
    host.run(2.0, 0.6)  # 1200 ms between its turns, more than its 1000 ms
    w = Stopwatch(1000, CPU, host, now=host.now, prior_ns=prior)
    assert w.quick_stop() is None  # an instant reply cannot skip the closing reading
    assert w.wake_at == host.t  # no time left: look at once
    result = host.think(w, cpu_needed_s=0.001, cpu_share=1)
    assert isinstance(result, str)
    assert "between its turns" in result and "1200 ms" in result


def test_pondering_on_the_wall_clock_is_recorded_not_charged() -> None:
    host = FakeHost()
    prior = host.cpu
    host.run(0.5, 1)
    w = Stopwatch(1000, WALL, host, now=host.now, prior_ns=prior)
    result = host.think(w, cpu_needed_s=0.1, cpu_share=1)
    assert isinstance(result, Spent)
    assert result.between_ms == pytest.approx(500, abs=0.01)
    assert result.charged_ms == pytest.approx(100, abs=1)
