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

Soft and hard limits (``hard_move_ms``, a course's rule such as COMP90054's): a decision
may then run on to the hard limit; one charged more than ``move_ms`` but within it is
accepted with a *warning*, and the ``warnings``-th warning of a game forfeits it (the
course's framework ends the game when a seat's warnings reach its limit). A seat's first
decision of each round may use ``round_start_ms`` instead of ``move_ms`` (frameworks whose
agents set up per round).
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arena.protocol.messages import Limits


class ClockKind(enum.Enum):
    CPU = "cpu"
    WALL = "wall"


DEFAULT_CLOCK = ClockKind.CPU
_CPU: Final = ClockKind.CPU
_WALL: Final = ClockKind.WALL
"""For the per-decision paths: an enum member through its class costs a metaclass
``__getattr__`` hook on Python 3.11."""
"""CPU clocks by default: scores and ratings must measure the bot, not the host's load."""
WALL_CEILING = 5.0
"""CPU clocks: a decision also ends after this many times its allowance of wall time."""
HARD_CEILING = 10.0
"""CPU clocks: a decision ends after this many times the wall ceiling, however loaded the
host (waiting for a CPU is forgiven up to here; a tournament can never stall)."""
_EPS_MS = 1e-3
"""Rounding slack: waking exactly at a ceiling must count as reaching it."""
MIN_CHECK_S = 0.01
"""CPU clocks: the shortest wait between two CPU-time readings while a bot thinks."""
MACHINE_CORES = os.cpu_count() or 1
"""No process tree can use CPU time faster than this many seconds per second, whatever
its quota: a decision whose wall time times this is within its budget cannot be over it."""
TIME_PRESETS: dict[str, dict[str, Any]] = {
    "comp90054": {
        "init_ms": 15000,
        "move_ms": 1000,
        "hard_move_ms": 3000,
        "warnings": 3,
        "round_start_ms": 5000,
        "clock": "cpu",
    },
}
"""Ready time rules (``preset = "comp90054"``); fields given with a preset override it.
COMP90054 (Melbourne's Azul contest): 1 s a move, a move over 1 s is a warning, the third
warning or one move over 3 s forfeits, 15 s start-up, 5 s for ``StartRound``."""


def _unset(value: object) -> bool:
    """A rule left unset is left out of dumps: settings stored before it existed (a
    tournament's identity, a competition's config) compare equal to today's."""
    return value is None


class TimeControl(BaseModel):
    """How long a bot may think and on which clock: the one definition of these settings
    and their defaults (CLI flags, tournament files, workers and the referee all use it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    init_ms: int = Field(default=5000, gt=0, description="Start-up and handshake time.")
    """Handshake: process start to ``ready``."""
    move_ms: int = Field(default=1000, gt=0, description="Time per decision.")
    """Per decision (the cap when a bank is used too)."""
    bank_ms: int | None = Field(default=None, gt=0, description="Optional per-game bank.")
    """Optional per-game bank; each decision may use what is left of it."""
    increment_ms: int = Field(default=0, ge=0, description="Added to the bank per decision.")
    grace_ms: int = Field(default=50, ge=0, exclude=True)
    """Not announced to bots: absorbs pipe and scheduling jitter (wall clocks) and CPU
    accounting granularity (CPU clocks)."""
    clock: ClockKind = Field(
        default=DEFAULT_CLOCK,
        description="cpu: charge the CPU time of the bot's process tree; wall: elapsed time.",
    )
    wall_ceiling: float = Field(
        default=WALL_CEILING, ge=1, description="CPU clocks: idle-time cap, x the allowance."
    )
    hard_move_ms: int | None = Field(
        default=None,
        exclude_if=_unset,
        gt=0,
        description="Hard limit per decision: over it forfeits at once; between move_ms and "
        "it, the move counts and earns a warning.",
    )
    warnings: int | None = Field(
        default=None,
        exclude_if=_unset,
        ge=1,
        description="With hard_move_ms: the game's N-th warning forfeits (unset: warnings "
        "never forfeit).",
    )
    round_start_ms: int | None = Field(
        default=None,
        exclude_if=_unset,
        gt=0,
        description="Time for a seat's first decision of each round (instead of move_ms).",
    )

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, value: Any) -> Any:
        """``preset = "comp90054"``: the preset's fields, then the ones given."""
        if not isinstance(value, dict) or "preset" not in value:
            return value
        given = dict(value)
        name = given.pop("preset")
        preset = TIME_PRESETS.get(name) if isinstance(name, str) else None
        if preset is None:
            known = ", ".join(sorted(TIME_PRESETS))
            raise ValueError(f"unknown time preset {name!r} (known: {known})")
        return {**preset, **given}

    @model_validator(mode="after")
    def _consistent(self) -> TimeControl:
        if self.hard_move_ms is not None and self.hard_move_ms <= self.move_ms:
            raise ValueError(
                f"hard_move_ms ({self.hard_move_ms}) must be more than move_ms ({self.move_ms})"
            )
        if self.warnings is not None and self.hard_move_ms is None:
            raise ValueError("warnings needs hard_move_ms (the limit a warned move stays within)")
        if self.bank_ms is not None and (
            self.hard_move_ms is not None or self.round_start_ms is not None
        ):
            raise ValueError("a time bank does not combine with hard_move_ms or round_start_ms")
        return self

    def hard_limit_ms(self, allowance_ms: int) -> int | None:
        """The hard limit of a decision announced ``allowance_ms`` (None: no soft/hard
        split, the allowance is the limit). A round-start allowance above the hard limit
        is its own hard limit: over it forfeits."""
        hard = self.hard_move_ms
        return None if hard is None else max(hard, allowance_ms)

    @property
    def write_timeout_s(self) -> float:
        """How long writing one message to a bot may block (one decision's time)."""
        return self.move_ms / 1000

    def describe(self) -> str:
        """The time control in words, for people (reports, check-bot, benchmarks)."""
        text = f"{self.move_ms} ms per decision"
        if self.hard_move_ms is not None:
            text += f" (over it: a warning; over {self.hard_move_ms} ms forfeits"
            if self.warnings is not None:
                text += f", as does warning {self.warnings}"
            text += ")"
        if self.round_start_ms is not None:
            text += f", {self.round_start_ms} ms for a bot's first decision of each round"
        text += f", {self.init_ms} ms start-up"
        if self.bank_ms is not None:
            text += f", bank {self.bank_ms} ms (+{self.increment_ms} ms per decision)"
        if self.clock is ClockKind.CPU:
            return text + f", cpu clock (idle ceiling {self.wall_ceiling:g}x)"
        return text + f", {self.clock.value} clock"

    def identity(self) -> list[int | None]:
        """What an SPRT ledger records of the time control (resuming with another is
        refused): start-up, per decision, bank, increment (then the hard limit, warnings
        and round-start time, where any is set: older ledgers stay valid)."""
        identity = [self.init_ms, self.move_ms, self.bank_ms, self.increment_ms]
        extra = [self.hard_move_ms, self.warnings, self.round_start_ms]
        return identity + extra if any(v is not None for v in extra) else identity

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
            hard_move_ms=self.hard_move_ms,
            warnings=self.warnings,
            round_start_ms=self.round_start_ms,
        )


class Clock:
    """One seat's clock for one game."""

    def __init__(self, control: TimeControl) -> None:
        self.control = control
        self.bank_ms = float(control.bank_ms) if control.bank_ms is not None else None
        self._move_ms = control.move_ms
        """``control`` is frozen: read once, not through a pydantic attribute per decision."""

    def allowance_ms(self, round_start: bool = False) -> int:
        """Time announced for the next decision (``round_start``: the seat's first of
        its round, which may have ``round_start_ms``)."""
        if self.bank_ms is None:
            if round_start and self.control.round_start_ms is not None:
                return self.control.round_start_ms
            return self._move_ms
        return max(0, int(min(self.bank_ms, self._move_ms)))

    def charge(self, spent: Spent) -> None:
        if self.bank_ms is not None:
            self.bank_ms = max(0.0, self.bank_ms - spent.charged_ms) + self.control.increment_ms


class CpuMeter(Protocol):
    """Where CPU time comes from: a bot process (``BotProcess``), or a fake in tests."""

    def cpu_ns(self) -> int | None:
        """CPU time the bot's process tree has used so far."""
        ...

    def cpu_wait_ns(self) -> int | None:
        """Time the bot's tasks were runnable but waiting for a CPU (None: unknown)."""
        ...


@dataclass(frozen=True)
class Spent:
    """What one decision (or handshake) cost."""

    wall_ms: float
    cpu_ms: float | None
    """CPU time of the bot's process tree; None when it could not be read."""
    clock: ClockKind
    """The clock that applied (CPU falls back to wall when CPU time is unreadable)."""
    wait_ms: float | None = None
    """Time the bot was ready to run but the host gave its CPU to others (None: unknown)."""
    between_ms: float = 0.0
    """CPU time the bot used after its previous reply and before this request (pondering,
    background threads): charged to this decision on CPU clocks, never free."""

    @property
    def charged_ms(self) -> float:
        if self.clock is ClockKind.CPU and self.cpu_ms is not None:
            return self.cpu_ms + self.between_ms
        return self.wall_ms

    @property
    def idle_ms(self) -> float:
        """Wall time the bot neither ran nor waited for a CPU: it slept or blocked."""
        return self.wall_ms - (self.cpu_ms or 0.0) - (self.wait_ms or 0.0)


_Plan = tuple[TimeControl, int, int, float, float, float, float, float]
"""A decision's limits, fixed by its allowance and time control (see :func:`_plan`)."""
_PLANS: dict[tuple[int, int, float, bool], _Plan] = {}
"""Plans by (allowance, id of the control, cores, CPU clock?): a decision's limits are the
same as the last one's unless a bank shrinks its allowance. The control is kept in the
plan (and compared by identity), so a recycled id never finds another's limits."""


def _plan(allowance_ms: int, control: TimeControl, cores: float, clock: ClockKind) -> _Plan:
    """(control, allowance, budget, cores, idle limit, hard ceiling (ms), ceiling and first
    wake-up (s after the start))."""
    budget_ms = allowance_ms + control.grace_ms
    cores = max(1.0, cores)
    """How many cores the bot can keep busy: its CPU time grows at most this fast."""
    if clock is ClockKind.CPU:
        idle_limit_ms = max(budget_ms, allowance_ms * control.wall_ceiling)
        hard_ms = idle_limit_ms * HARD_CEILING  # until we know there is no PSI
        first = min(budget_ms / cores, idle_limit_ms)
        return (
            control,
            allowance_ms,
            budget_ms,
            cores,
            idle_limit_ms,
            hard_ms,
            hard_ms / 1000,
            first / 1000,
        )
    return (
        control,
        allowance_ms,
        budget_ms,
        cores,
        budget_ms,
        budget_ms,
        budget_ms / 1000,
        budget_ms / 1000,
    )


class Stopwatch:
    """Times one decision against its allowance on the chosen clock.

    CPU clocks end a decision when the bot's CPU time exceeds the allowance (plus
    grace), when it has been *idle* (wall time minus CPU time minus time spent waiting
    for a CPU) for ``wall_ceiling`` x the allowance, or - whatever the host's load - at
    ``HARD_CEILING`` x that. Where the kernel cannot say how long the bot waited for a
    CPU (no cgroup v2 pressure information), the ceiling is on plain wall time.

    The reader waits for the bot's reply until :attr:`wake_at`, then calls
    :meth:`overrun`: None means "still within its time, wait again" and sets a new
    ``wake_at``. The CPU time is read only when the bot could have used up its
    allowance: a bot that answers in time costs two readings (start and :meth:`stop`),
    whatever the host's load, and when its wall time shows it cannot be late
    (:meth:`quick_stop`) the closing one may wait until the next request is out. The
    wait counter is first read at the first :meth:`overrun` (one allowance in), so
    waiting before that counts as idle: the idle ceiling is effectively between
    ``wall_ceiling - 1`` and ``wall_ceiling`` allowances.
    """

    __slots__ = (
        "_allowance_in",
        "_control",
        "_cores",
        "_cpu0",
        "_meter",
        "_now",
        "_prior",
        "_wait0",
        "_wait_read",
        "allowance_ms",
        "between_ms",
        "budget_ms",
        "ceiling",
        "clock",
        "closing_ns",
        "hard_ms",
        "idle_limit_ms",
        "quick_limit_ms",
        "soft_ms",
        "start",
        "wake_at",
    )

    def __init__(
        self,
        allowance_ms: int,
        control: TimeControl,
        meter: CpuMeter | None,
        *,
        cores: float = 1.0,
        clock: ClockKind | None = None,
        now: Callable[[], float] = time.monotonic,
        read_now: bool = True,
        prior_ns: int | None = None,
        soft_ms: int | None = None,
    ) -> None:
        """``meter`` is read whatever the clock, so a record shows CPU time under wall
        clocks too; ``clock`` overrides ``control.clock`` (a seat's fallback).

        ``read_now=False``: the opening CPU reading waits for :meth:`open`, which the
        referee calls just after writing the request, so the bot does not wait for a
        system call (the wall clock starts now either way).

        ``prior_ns``: the meter's reading at the bot's previous reply. What it used since
        then, up to the opening reading, is :attr:`between_ms`, charged to this decision
        (CPU clocks): CPU time between turns is never free.

        ``soft_ms``: a soft limit below ``allowance_ms`` (then the hard one): a decision
        charged more than it (plus grace) is in time but earns a :meth:`warning`."""
        self.soft_ms = soft_ms
        self._now = now
        self._prior = prior_ns
        self.between_ms = 0.0
        self.closing_ns: int | None = None
        """The latest reading taken by :meth:`stop` (None: none yet, or unknown)."""
        self._meter = meter
        self._cpu0: int | None = None
        self._wait0: int | None = None
        self._wait_read = False
        self._allowance_in = allowance_ms
        self._control = control
        self.start = now()
        self._set_clock(clock or control.clock, cores)
        self.quick_limit_ms = self.allowance_ms if soft_ms is None else soft_ms
        """:meth:`quick_stop` vouches for a decision only below the soft limit too."""
        if read_now:
            self.open()

    def _set_clock(self, clock: ClockKind, cores: float) -> None:
        control = self._control
        allowance_ms = self._allowance_in
        self.clock = clock
        key = (allowance_ms, id(control), cores, clock is _CPU)  # (Enum hash: slow)
        plan = _PLANS.get(key)
        if plan is None or plan[0] is not control:
            plan = _plan(allowance_ms, control, cores, clock)
            if len(_PLANS) > 256:
                _PLANS.clear()
            _PLANS[key] = plan
        (
            _,
            self.allowance_ms,
            self.budget_ms,
            self._cores,
            self.idle_limit_ms,
            self.hard_ms,
            ceiling_s,
            wake_s,
        ) = plan
        start = self.start
        self.ceiling = start + ceiling_s
        self.wake_at = start + wake_s

    def open(self) -> None:
        """Take the opening CPU reading; without one the decision is timed on the wall
        clock (the meter is unreadable: the bot's accounting is gone)."""
        meter = self._meter
        cpu0 = self._cpu0 = meter.cpu_ns() if meter is not None else None
        if cpu0 is None:
            if self.clock is not _WALL:
                self._set_clock(_WALL, self._cores)
            return
        prior = self._prior
        if prior is not None and cpu0 > prior:
            between = self.between_ms = (cpu0 - prior) / 1e6
            if self.clock is _CPU:  # less is left: look sooner
                left_s = max(0.0, self.budget_ms - between) / self._cores / 1000
                self.wake_at = min(self.wake_at, self.start + left_s)

    def _since_start(self, reading: int | None, first: int | None) -> float | None:
        return None if reading is None or first is None else max(0, reading - first) / 1e6

    @property
    def opening_ns(self) -> int | None:
        """The CPU reading taken when the decision started (None: unknown)."""
        return self._cpu0

    def quick_stop(self) -> float | None:
        """The wall time so far (ms) when no CPU reading can make this decision late:
        its wall time times :data:`MACHINE_CORES` is within the budget and no wait
        went past :attr:`wake_at`. Then the closing CPU reading may wait until the bot
        is idle again (:meth:`cpu_ms_at`). None: call :meth:`stop`, which reads it now."""
        wall_ms = (self._now() - self.start) * 1000
        if (
            self._wait_read
            or (wall_ms + 1.0) * MACHINE_CORES + self.between_ms >= self.quick_limit_ms
        ):
            return None
        return wall_ms

    def cpu_ms_at(self, reading: int | None) -> float | None:
        """CPU time (ms) between the opening reading and ``reading`` (a later
        ``meter.cpu_ns()``), None when either is unknown."""
        return self._since_start(reading, self._cpu0)

    def stop(self) -> Spent:
        """The cost so far (call it when the reply is in)."""
        wall_ms = (self._now() - self.start) * 1000
        meter = self._meter
        reading = self.closing_ns = meter.cpu_ns() if meter else None
        cpu_ms = self._since_start(reading, self._cpu0)
        wait_ms = None
        if (
            meter is not None
            and self._wait0 is not None
            and wall_ms >= self.idle_limit_ms - _EPS_MS
        ):
            wait_ms = self._since_start(meter.cpu_wait_ns(), self._wait0)  # only when needed
        return Spent(wall_ms, cpu_ms, self.clock, wait_ms, self.between_ms)

    def verdict(self, spent: Spent) -> str | None:
        """Why ``spent`` is over the time, or None if it is within it."""
        if self.clock is ClockKind.WALL or spent.cpu_ms is None:
            if spent.wall_ms > self.budget_ms:
                return f"no move within {self.allowance_ms} ms"
            return None
        if spent.cpu_ms + spent.between_ms > self.budget_ms:
            if spent.between_ms >= 0.5:
                return (
                    f"used {spent.cpu_ms + spent.between_ms:.0f} ms of CPU time, over its "
                    f"{self.allowance_ms} ms: {spent.between_ms:.0f} ms of it between its "
                    f"turns, after its previous reply (wall time {spent.wall_ms:.0f} ms)"
                )
            return (
                f"used {spent.cpu_ms:.0f} ms of CPU time, over its {self.allowance_ms} ms "
                f"(wall time {spent.wall_ms:.0f} ms)"
            )
        if self._wait0 is None:  # no pressure information: a plain wall-clock ceiling
            if spent.wall_ms >= self.idle_limit_ms - _EPS_MS:
                return (
                    f"no move within {spent.wall_ms:.0f} ms of wall time, the ceiling for "
                    f"{self.allowance_ms} ms of CPU time (it used {spent.cpu_ms:.0f} ms: "
                    "sleeping or blocked?)"
                )
            return None
        if spent.idle_ms >= self.idle_limit_ms - _EPS_MS:
            return (
                f"no move after {spent.wall_ms:.0f} ms: idle {spent.idle_ms:.0f} ms (sleeping "
                f"or blocked?), over the wall-clock ceiling of {self.idle_limit_ms:.0f} ms for "
                f"{self.allowance_ms} ms of CPU time (it used {spent.cpu_ms:.0f} ms)"
            )
        if spent.wall_ms >= self.hard_ms - _EPS_MS:  # (only with pressure information)
            return (
                f"no move after {spent.wall_ms:.0f} ms of wall time, the hard ceiling for "
                f"{self.allowance_ms} ms of CPU time (it used {spent.cpu_ms:.0f} ms; the host "
                "is overloaded)"
            )
        return None

    def warning(self, spent: Spent) -> str | None:
        """Why ``spent`` (in time: see :meth:`verdict`) is over the soft limit, or None."""
        soft = self.soft_ms
        if soft is None or spent.charged_ms <= soft + self._control.grace_ms:
            return None
        if spent.clock is ClockKind.CPU and spent.cpu_ms is not None:
            used = f"used {spent.charged_ms:.0f} ms of CPU time"
        else:
            used = f"took {spent.charged_ms:.0f} ms"
        return f"{used}, over its {soft} ms (within the hard limit of {self.allowance_ms} ms)"

    def overrun(self) -> str | None:
        """Called at :attr:`wake_at` without a reply: the timeout message, or None
        (and a later ``wake_at``) while the bot is within its time."""
        if self.clock is ClockKind.CPU and not self._wait_read:
            self._wait_read = True
            self._wait0 = self._meter.cpu_wait_ns() if self._meter is not None else None
            if self._wait0 is None:  # no pressure information: the ceiling is on wall time
                self.hard_ms = self.idle_limit_ms
                self.ceiling = self.start + self.idle_limit_ms / 1000
        spent = self.stop()
        why = self.verdict(spent)
        if why is not None:
            return why
        if self.clock is ClockKind.WALL or spent.cpu_ms is None:
            return f"no move within {self.allowance_ms} ms"  # woke at the deadline
        cpu_left_ms = (self.budget_ms - spent.cpu_ms - spent.between_ms) / self._cores
        idle_left_ms = self.idle_limit_ms - spent.idle_ms  # idle time grows at most as fast
        step_s = max(MIN_CHECK_S, min(cpu_left_ms, idle_left_ms) / 1000)
        self.wake_at = min(self.ceiling, self._now() + step_s)
        return None
