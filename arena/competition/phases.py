"""A hosted competition's phases: open → closed → finals → results → published.

The phase is derived here and only here, from the ``[phases]`` table of
``competition.toml`` and what the store holds (:class:`PhaseState`, one ``settings``
row): the *effective* deadline starts as the file's and changes only by an organiser's
action, so an extension survives a restart. Time moves the phase on (the deadline
passing: :class:`PhaseTimer` wakes at it, and at a start past it); so do the
organiser's actions (extend, reopen, start or re-run the finals, publish, start a
round). Every change is one compare-and-set in the store with its ``phase_log`` row,
so a timer firing again after a restart, or two organisers clicking at once, changes
the phase once.

The finals and scheduled rounds themselves are run elsewhere, behind the small
:class:`EventStarter` seam the service passes in; its owner reports finished finals
back with :meth:`Phases.finals_finished`. No ``[phases]`` table: always open, no
deadline (the continuous ladder for ever).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from arena.competition.config import PhasesSection
from arena.store.competition import CompetitionStore, Conflict, Invalid
from arena.store.competition_models import PhaseLogRow

_log = logging.getLogger("arena.server.phases")

Phase = Literal["open", "closed", "finals", "results", "published"]
PHASE_TEXT: dict[Phase, str] = {
    "open": "open for submissions",
    "closed": "submissions closed; finals not started",
    "finals": "finals running",
    "results": "final results ready (not yet published)",
    "published": "results published",
}
STATE_KEY = "phases"
SCHEDULE = "schedule"
"""The actor of changes the clock makes (the deadline passing, finals at the deadline)."""
TIMER_MAX_WAIT_S = 3600.0
"""The timer looks again at least this often (a clock stepped by NTP, a missed wake)."""

ACTIONS: dict[str, tuple[Phase, ...]] = {
    "extend": ("open", "closed"),
    "reopen": ("closed", "finals", "results", "published"),
    "start-finals": ("open", "closed"),
    "rerun-finals": ("finals", "results", "published"),
    "publish": ("results",),
    "start-round": ("open",),
}
"""The organiser's actions and the phases each may be taken in."""
CLOCK_CHANGES: dict[str, tuple[Phase, ...]] = {
    "deadline": ("closed",),
    "finals-finished": ("finals",),
}
"""Changes that are not the organiser's buttons: the deadline passing (noted once it
has), the finals runner's report."""

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def shown_time(when: datetime) -> str:
    """How a phase time is shown everywhere: ``2026-12-20 12:00 UTC``."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def time_until(delta: timedelta) -> str:
    """``in 3 days``, ``in 5 hours``, ``in 12 minutes``, ``in under a minute``."""
    seconds = delta.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"in {n} {unit}{'s' if n != 1 else ''}"
    return "in under a minute"


def parse_deadline(text: str, naive_is_utc: bool = False) -> datetime:
    """A new deadline an organiser typed: ISO 8601 with an offset or 'Z' (the web form's
    ``datetime-local`` field has none and is labelled UTC: ``naive_is_utc``)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise Invalid(
            f"deadline {text[:40]!r}: give a UTC time such as 2026-12-20T12:00:00Z"
        ) from None
    if when.tzinfo is None:
        if not naive_is_utc:
            raise Invalid(f"deadline {text[:40]!r}: give it with a UTC offset or 'Z'")
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


class EventStarter(Protocol):
    """What starts the finals and scheduled rounds (their runner lives elsewhere); each
    call answers a short description of what it started, or raises with why not."""

    def start_finals(self, actor: str, rerun: bool) -> str: ...

    def start_round(self, actor: str) -> str: ...


class NoEvents:
    """The starter when no finals runner is wired in: says so, starts nothing."""

    def start_finals(self, actor: str, rerun: bool) -> str:
        raise Conflict("this arena has no finals runner: the finals cannot start")

    def start_round(self, actor: str) -> str:
        raise Conflict("this arena has no round runner: no round can start")


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).isoformat()


def _time(text: object) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None


@dataclass(frozen=True)
class PhaseState:
    """What the store keeps of the phases (one JSON ``settings`` row)."""

    deadline: datetime
    deadline_noted: datetime | None = None
    """The deadline whose passing was logged (so it is logged once)."""
    finals_started: datetime | None = None
    finals_finished: datetime | None = None
    published: datetime | None = None

    def phase(self, now: datetime) -> Phase:
        if self.published is not None:
            return "published"
        if self.finals_finished is not None:
            return "results"
        if self.finals_started is not None:
            return "finals"
        return "closed" if now >= self.deadline else "open"

    def closed_at(self) -> datetime:
        """When submissions closed: the deadline, or an earlier start of the finals."""
        if self.finals_started is not None and self.finals_started < self.deadline:
            return self.finals_started
        return self.deadline

    def to_json(self) -> str:
        return json.dumps(
            {
                "deadline": _iso(self.deadline),
                "deadline_noted": _iso(self.deadline_noted),
                "finals_started": _iso(self.finals_started),
                "finals_finished": _iso(self.finals_finished),
                "published": _iso(self.published),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> PhaseState:
        data = json.loads(text)
        deadline = _time(data.get("deadline"))
        if deadline is None:
            raise ValueError("no deadline")
        return cls(
            deadline=deadline,
            deadline_noted=_time(data.get("deadline_noted")),
            finals_started=_time(data.get("finals_started")),
            finals_finished=_time(data.get("finals_finished")),
            published=_time(data.get("published")),
        )


@dataclass(frozen=True)
class PhaseView:
    """The phase as pages and ``GET /api/phase`` show it."""

    phase: Phase
    deadline: datetime | None
    now: datetime
    next_event: str | None
    closed_reason: str | None
    """Why an upload is refused now (None: uploads open)."""

    @property
    def uploads_open(self) -> bool:
        return self.closed_reason is None

    @property
    def actions(self) -> tuple[str, ...]:
        """The organiser's actions that fit this phase (none without phases)."""
        if self.deadline is None:
            return ()
        return tuple(action for action, phases in ACTIONS.items() if self.phase in phases)

    def banner(self) -> str | None:
        """``Submissions close 2026-12-20 12:00 UTC (in 3 days)``, ``Submissions closed
        ...``; None without phases."""
        if self.deadline is None:
            return None
        if self.phase == "open":
            left = time_until(self.deadline - self.now)
            return f"Submissions close {shown_time(self.deadline)} ({left})"
        what = {
            "closed": "finals not started yet",
            "finals": "finals running",
            "results": "final results ready, to be published",
            "published": "results published",
        }[self.phase]
        return f"Submissions closed ({what})"

    def api(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "description": PHASE_TEXT[self.phase],
            "deadline": _iso(self.deadline),
            "uploads_open": self.uploads_open,
            "closed_reason": self.closed_reason,
            "next_event": self.next_event,
            "actions": list(self.actions),
        }


class Phases:
    """The one owner of the phase: what it is now, whether uploads and the ladder may
    run, and every change (by the clock or an organiser), logged with its actor."""

    def __init__(
        self,
        store: CompetitionStore,
        config: PhasesSection | None,
        events: EventStarter | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.store = store
        self.config = config
        self.events: EventStarter = events if events is not None else NoEvents()
        self.clock = clock
        self.changed = threading.Event()
        """Set on every change (the timer looks again)."""
        self.on_change: Callable[[], None] = lambda: None
        """Also called on every change (the service wakes the ladder)."""

    @property
    def enabled(self) -> bool:
        return self.config is not None

    # ------------------------------------------------------------ reading

    def _stored(self) -> tuple[str | None, PhaseState | None]:
        if self.config is None:
            return None, None
        text = self.store.setting(STATE_KEY)
        if text is not None:
            try:
                return text, PhaseState.from_json(text)
            except (ValueError, TypeError):
                _log.error("the stored phase state is unreadable; using competition.toml's")
        return text, PhaseState(deadline=self.config.deadline)

    def state(self) -> PhaseState | None:
        return self._stored()[1]

    def view(self) -> PhaseView:
        now = self.clock()
        state = self.state()
        if state is None:
            return PhaseView("open", None, now, None, None)
        phase = state.phase(now)
        closed = None
        if phase != "open":
            closed = f"submissions closed at {shown_time(state.closed_at())}"
        return PhaseView(phase, state.deadline, now, self._next_event(state, phase), closed)

    def _next_event(self, state: PhaseState, phase: Phase) -> str | None:
        assert self.config is not None
        if phase == "open":
            then = "the finals start" if self.config.finals == "at-deadline" else "finals follow"
            return f"submissions close at {shown_time(state.deadline)}; {then}"
        if phase == "closed":
            if self.config.finals == "at-deadline":
                return "the finals start now"
            return "the organiser starts the finals"
        if phase == "finals":
            return "results when the finals finish"
        if phase == "results":
            if self.config.publish == "auto":
                return "results are published now"
            return "the organiser publishes the results"
        return None

    def uploads_refusal(self) -> str | None:
        """Why an upload (or a registration) is refused now; None while open."""
        return self.view().closed_reason

    def challenges_refusal(self) -> str | None:
        """Why a challenge is refused now: once submissions close the finals have the
        machine, unless the ladder keeps going after the deadline (``ladder = "always"``)."""
        if self.config is not None and self.config.ladder == "always":
            return None
        closed = self.view().closed_reason
        return None if closed is None else f"challenges ended when {closed}"

    def ladder_allowed(self) -> bool:
        """Whether the continuous ladder may start new games now."""
        if self.config is None or self.config.ladder == "always":
            return True
        if self.config.ladder == "off":
            return False
        return self.view().phase == "open"

    def log(self, limit: int = 200) -> list[PhaseLogRow]:
        return self.store.phase_log(limit)

    # ------------------------------------------------------------ changing

    def _change(
        self,
        action: str,
        actor: str,
        make: Callable[[PhaseState, datetime], PhaseState],
        detail: dict[str, Any] | None = None,
        logged_from: Phase | None = None,
    ) -> tuple[int, PhaseState] | None:
        """Apply ``make`` to the state if the phase allows ``action`` (:data:`ACTIONS`, or
        :data:`CLOCK_CHANGES` for the clock's and the runner's), stored with its log row
        in one compare-and-set. None when another change won the race. ``logged_from``:
        the phase the log names as left (the deadline passing: open)."""
        if self.config is None:
            raise Conflict("this competition has no [phases] table: no deadline to change")
        text, state = self._stored()
        assert state is not None
        now = self.clock()
        phase = state.phase(now)
        if phase not in ACTIONS.get(action, CLOCK_CHANGES.get(action, ())):
            raise Conflict(f"cannot {action.replace('-', ' ')} now: {PHASE_TEXT[phase]}")
        new = make(state, now)
        log_id = self.store.change_phase(
            STATE_KEY,
            text,
            new.to_json(),
            action=action,
            phase_from=logged_from or phase,
            phase_to=new.phase(now),
            actor=actor,
            detail=detail or {},
            at=now,
        )
        if log_id is None:
            return None
        self.changed.set()
        self.on_change()
        _log.info("phase: %s by %s (%s → %s)", action, actor, phase, new.phase(now))
        return log_id, new

    def _must(self, done: tuple[int, PhaseState] | None, action: str) -> PhaseView:
        if done is None:
            raise Conflict(f"the phase changed while you asked to {action}: look again")
        return self.view()

    def extend(self, actor: str, deadline: datetime) -> PhaseView:
        """A later deadline, before the finals started (open or closed)."""
        now = self.clock()
        current = self.state()
        if current is not None and deadline <= current.deadline:
            raise Invalid(f"extend to a time after the deadline ({shown_time(current.deadline)})")
        if deadline <= now:
            raise Invalid(f"extend to a time in the future (now {shown_time(now)})")
        done = self._change(
            "extend",
            actor,
            lambda s, _: replace(s, deadline=deadline, deadline_noted=None),
            {"deadline": _iso(deadline)},
        )
        return self._must(done, "extend the deadline")

    def reopen(self, actor: str, deadline: datetime) -> PhaseView:
        """Back to open with a new deadline, from any phase (the finals, if any, are
        forgotten here; their games stay in the store)."""
        if deadline <= self.clock():
            raise Invalid("reopen with a deadline in the future")
        done = self._change(
            "reopen",
            actor,
            lambda _s, _: PhaseState(deadline=deadline),
            {"deadline": _iso(deadline)},
        )
        return self._must(done, "reopen")

    def start_finals(self, actor: str) -> PhaseView:
        """Close submissions (if still open) and start the finals."""
        if not self._run_finals(actor, rerun=False):
            raise Conflict("the phase changed while you asked to start the finals: look again")
        return self.view()

    def rerun_finals(self, actor: str) -> PhaseView:
        """Play the finals again (same seeds: the runner's part); results unpublished."""
        if not self._run_finals(actor, rerun=True):
            raise Conflict("the phase changed while you asked to re-run the finals: look again")
        return self.view()

    def _run_finals(self, actor: str, rerun: bool) -> bool:
        """Record the finals as started (once: the compare-and-set), then start them;
        False when another change won. A runner's failure is logged with the change and
        leaves the phase at finals: the organiser re-runs them."""
        action = "rerun-finals" if rerun else "start-finals"
        done = self._change(
            action,
            actor,
            lambda s, now: replace(s, finals_started=now, finals_finished=None, published=None),
        )
        if done is None:
            return False
        log_id = done[0]
        try:
            started = self.events.start_finals(actor, rerun)
        except Exception as exc:  # the runner's problem: logged where the organiser looks
            _log.error("phase: the finals did not start: %s", exc)
            self.store.add_phase_detail(log_id, {"error": str(exc)})
            raise Conflict(f"the finals did not start: {exc}") from None
        self.store.add_phase_detail(log_id, {"started": started})
        return True

    def finals_finished(self, actor: str = SCHEDULE) -> PhaseView:
        """The finals runner's report: results ready (published at once under
        ``publish = "auto"``)."""
        done = self._change(
            "finals-finished",
            actor,
            lambda s, now: replace(s, finals_finished=now),
        )
        self._must(done, "record the finished finals")
        assert self.config is not None
        if self.config.publish == "auto":
            return self.publish(SCHEDULE)
        return self.view()

    def publish(self, actor: str) -> PhaseView:
        done = self._change("publish", actor, lambda s, now: replace(s, published=now))
        return self._must(done, "publish the results")

    def start_round(self, actor: str) -> str:
        """A scheduled round now (while open), logged; what the runner started."""
        if self.config is not None:
            phase = self.view().phase
            if phase not in ACTIONS["start-round"]:
                raise Conflict(f"cannot start a round now: {PHASE_TEXT[phase]}")
        started = self.events.start_round(actor)
        if self.config is not None:
            text, state = self._stored()
            assert state is not None
            now = self.clock()
            self.store.change_phase(
                STATE_KEY,
                text,
                state.to_json(),
                action="start-round",
                phase_from="open",
                phase_to="open",
                actor=actor,
                detail={"started": started},
                at=now,
            )
        return started

    def tick(self) -> float | None:
        """The clock's part: log the deadline passing (once), start the finals at it
        under ``finals = "at-deadline"`` (once: the store records it). Seconds until
        the next deadline, or None when nothing is due by time."""
        state = self.state()
        if state is None or self.config is None:
            return None
        now = self.clock()
        phase = state.phase(now)
        if phase == "open":
            return (state.deadline - now).total_seconds()
        if phase == "closed" and state.deadline_noted != state.deadline:
            deadline = state.deadline
            self._change(
                "deadline",
                SCHEDULE,
                lambda s, _: replace(s, deadline_noted=deadline),
                {"deadline": _iso(deadline)},
                logged_from="open",
            )
        if self.config.finals == "at-deadline" and self.view().phase == "closed":
            try:
                self._run_finals(SCHEDULE, rerun=False)
            except Conflict as exc:  # logged with the change; the organiser re-runs them
                _log.error("phase: %s", exc)
        return None


class PhaseTimer:
    """Wakes at the deadline (not polling every second) to run :meth:`Phases.tick`;
    looks again whenever the phase changes, and on start (a restart past the deadline
    closes at once)."""

    def __init__(self, phases: Phases) -> None:
        self.phases = phases
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()
        self.phases.changed.set()

    def run(self) -> None:
        while not self._stop.is_set():
            self.phases.changed.clear()
            try:
                due = self.phases.tick()
            except Exception:  # the store away, a bug: the web server keeps serving
                _log.exception("phase timer")
                due = 30.0
            wait = TIMER_MAX_WAIT_S if due is None else min(max(due, 0.05), TIMER_MAX_WAIT_S)
            self.phases.changed.wait(wait)
