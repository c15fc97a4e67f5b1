"""Time control: how long a bot may think, on which clock, and the per-game bank.

Two clocks (``TimeControl.clock``):

* ``cpu`` (the default): a decision is charged the CPU time the bot's whole process
  tree used while it thought (its cgroup's accounting; see ``BotProcess.cpu_ns``), so a
  loaded host - more workers than cores, another job on the machine - slows a bot down
  without costing it a single millisecond of its time. A wall-clock ceiling of
  ``wall_ceiling`` x the allowance still ends a decision of a bot that sleeps, blocks or
  waits for input, so no bot can stall a tournament.
* ``wall``: a decision is charged the elapsed time from request written to reply read.

Either way a decision times out when its charge exceeds the allowance plus the
unannounced grace; banks and increments use the same charge.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from arena.protocol.messages import Limits


class ClockKind(enum.Enum):
    CPU = "cpu"
    WALL = "wall"


DEFAULT_CLOCK = ClockKind.CPU
"""CPU clocks by default: scores and ratings must measure the bot, not the host's load."""
WALL_CEILING = 5.0
"""CPU clocks: a decision also ends after this many times its allowance of wall time."""
MIN_CHECK_S = 0.01
"""CPU clocks: the shortest wait between two CPU-time readings while a bot thinks."""


@dataclass(frozen=True)
class TimeControl:
    init_ms: int = 5000
    """Handshake: process start to ``ready``."""
    move_ms: int = 1000
    """Per decision (the cap when a bank is used too)."""
    bank_ms: int | None = None
    """Optional per-game bank; each decision may use what is left of it."""
    increment_ms: int = 0
    grace_ms: int = 50
    """Not announced to bots: absorbs pipe and scheduling jitter (wall clocks) and CPU
    accounting granularity (CPU clocks)."""
    clock: ClockKind = DEFAULT_CLOCK
    wall_ceiling: float = WALL_CEILING

    def __post_init__(self) -> None:
        if self.wall_ceiling < 1:
            raise ValueError("wall_ceiling must be at least 1 (x the allowance)")

    def limits(self, max_line: int, clock: ClockKind | None = None) -> Limits:
        """What ``hello`` announces; ``clock`` is the clock that really applies (a CPU
        clock falls back to wall time when the bot's CPU time cannot be read)."""
        clock = clock or self.clock
        return Limits(
            init_ms=self.init_ms,
            move_ms=self.move_ms,
            time_bank_ms=self.bank_ms,
            increment_ms=self.increment_ms,
            max_line_bytes=max_line,
            clock=clock.value,
            wall_ceiling=self.wall_ceiling if clock is ClockKind.CPU else None,
        )


class Clock:
    """One seat's clock for one game."""

    def __init__(self, control: TimeControl) -> None:
        self.control = control
        self.bank_ms = float(control.bank_ms) if control.bank_ms is not None else None

    def allowance_ms(self) -> int:
        """Time announced for the next decision."""
        if self.bank_ms is None:
            return self.control.move_ms
        return max(0, int(min(self.bank_ms, self.control.move_ms)))

    def charge(self, spent: Spent) -> None:
        if self.bank_ms is not None:
            self.bank_ms = max(0.0, self.bank_ms - spent.charged_ms) + self.control.increment_ms


class CpuMeter(Protocol):
    """Where CPU time comes from: a bot process (``BotProcess.cpu_ns``), or a fake in tests."""

    def cpu_ns(self) -> int | None: ...


@dataclass(frozen=True)
class Spent:
    """What one decision (or handshake) cost."""

    wall_ms: float
    cpu_ms: float | None
    """CPU time of the bot's process tree; None when it could not be read."""
    clock: ClockKind
    """The clock that applied (CPU falls back to wall when CPU time is unreadable)."""

    @property
    def charged_ms(self) -> float:
        if self.clock is ClockKind.CPU and self.cpu_ms is not None:
            return self.cpu_ms
        return self.wall_ms


class Stopwatch:
    """Times one decision against its allowance on the chosen clock.

    The reader waits for the bot's reply until :attr:`wake_at`, then calls
    :meth:`overrun`: None means "still within its time, wait again" (CPU clocks:
    a new ``wake_at`` is set from the CPU time left). With CPU clocks the bot's CPU time
    is read only when it could have used up its allowance: a bot that answers in time
    costs two readings (start and :meth:`stop`), whatever the host's load.
    """

    def __init__(
        self,
        allowance_ms: int,
        control: TimeControl,
        meter: CpuMeter | None,
        *,
        cores: float = 1.0,
        clock: ClockKind | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        """``meter`` is read whatever the clock, so a record shows CPU time under wall
        clocks too; ``clock`` overrides ``control.clock`` (a seat's fallback)."""
        self.allowance_ms = allowance_ms
        self.budget_ms = allowance_ms + control.grace_ms
        self._now = now
        self._meter = meter
        self._cores = max(1.0, cores)
        """How many cores the bot can keep busy: its CPU time grows at most this fast."""
        self._cpu0 = meter.cpu_ns() if meter is not None else None
        wanted = clock or control.clock
        self.clock = wanted if self._cpu0 is not None else ClockKind.WALL
        self.start = now()
        if self.clock is ClockKind.CPU:
            self.ceiling = self.start + allowance_ms * control.wall_ceiling / 1000
            self.ceiling = max(self.ceiling, self.start + self.budget_ms / 1000)
            self.wake_at = min(self.ceiling, self.start + self.budget_ms / 1000 / self._cores)
        else:
            self.ceiling = self.start + self.budget_ms / 1000
            self.wake_at = self.ceiling

    def _cpu_ms(self) -> float | None:
        if self._cpu0 is None or self._meter is None:
            return None
        used = self._meter.cpu_ns()
        return None if used is None else max(0, used - self._cpu0) / 1e6

    def stop(self) -> Spent:
        """The cost so far (call it when the reply is in)."""
        wall_ms = (self._now() - self.start) * 1000
        return Spent(wall_ms, self._cpu_ms(), self.clock)

    def verdict(self, spent: Spent) -> str | None:
        """Why ``spent`` is over the time, or None if it is within it."""
        if self.clock is ClockKind.WALL or spent.cpu_ms is None:
            if spent.wall_ms > self.budget_ms:
                return f"no move within {self.allowance_ms} ms"
            return None
        if spent.cpu_ms > self.budget_ms:
            return (
                f"used {spent.cpu_ms:.0f} ms of CPU time, over its {self.allowance_ms} ms "
                f"(wall time {spent.wall_ms:.0f} ms)"
            )
        if spent.wall_ms >= (self.ceiling - self.start) * 1000:
            return (
                f"no move within {spent.wall_ms:.0f} ms of wall time, the ceiling for "
                f"{self.allowance_ms} ms of CPU time (it used {spent.cpu_ms:.0f} ms: "
                "sleeping or blocked?)"
            )
        return None

    def overrun(self) -> str | None:
        """Called at :attr:`wake_at` without a reply: the timeout message, or None
        (and a later ``wake_at``) while the bot is within its time."""
        spent = self.stop()
        why = self.verdict(spent)
        if why is not None:
            return why
        if self.clock is ClockKind.WALL or spent.cpu_ms is None:
            return f"no move within {self.allowance_ms} ms"  # woke at the deadline
        left_s = (self.budget_ms - spent.cpu_ms) / 1000 / self._cores
        self.wake_at = min(self.ceiling, self._now() + max(MIN_CHECK_S, left_s))
        return None
