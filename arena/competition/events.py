"""Events: the finals and scheduled rounds, tournaments over a snapshot of versions,
played by the competition's one executor through the store.

An event takes each bot's newest accepted version as of its cutoff (the finals: the
deadline, or when the organiser starts them; a round: its scheduled start), or the top K
of the ladder, plans a round-robin or a sampled schedule of seat-balanced sets on shared
deals (:mod:`arena.tournament.schedule`: fixed in advance, so a re-run with the same
entrants and master seed plays the same games), and inserts the games as unrated
scheduled games with ids made from the event. The ladder loop plays them first (also
while the ladder is paused). When every game of the event is finished or void, its
results are computed once (:mod:`arena.competition.event_results`) and kept.

A version submitted by the cutoff that is still being built holds the event back
(``scheduled``) until its build is decided: a late build of an early upload counts.

:class:`Events` is the seam the phase machine and the organiser's actions call
(:meth:`Events.start_finals`, :meth:`Events.start_round`); :meth:`Events.tick`, called by
the service's events thread with the clock's time, starts due rounds, starts events
whose builds are settled and finishes events whose games are done.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from arena.competition.config import CompetitionConfig, EventSection
from arena.competition.phases import ACTIONS, Phases
from arena.store.competition import CompetitionStore, Conflict, Invalid, StoreError
from arena.store.competition_events import (
    EventGame,
    create_event,
    event,
    event_games,
    finish_event,
    latest_finals,
    list_events,
    require_no_finals,
    snapshot,
    start_event,
)
from arena.store.competition_models import EventKind, EventRow, Version
from arena.textsafe import visible
from arena.tournament.schedule import Entrant, Sampled, enumerate_games, exhaustive_count

_log = logging.getLogger("arena.competition.events")

ROUNDS_SINCE = "rounds_since"
"""Store setting: when the rounds timer first ran (slots before it are not owed)."""
MAX_EVENT_GAMES = 200_000
"""Most games one event schedules (a round-robin of many entrants in 4-player games
would be millions: the organiser is told to sample instead)."""
TICK_S = 2.0
"""How often the service's events thread looks at the events."""

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def results_visible(shown: EventRow, phases: Phases | None) -> bool:
    """Whether everyone may see ``shown``'s results (organisers always may): a round's
    once it finished; the finals' once finished and, with ``[phases]``, published."""
    if shown.status != "finished":
        return False
    if shown.kind != "finals" or phases is None or not phases.enabled:
        return True
    return phases.view().phase == "published"


def event_settings(section: EventSection, pairing: str) -> dict[str, Any]:
    """What an event keeps of its configuration (a re-run copies it)."""
    return {
        "pairing": pairing,
        "entrants": section.entrants,
        "games_per_bot": section.games_per_bot,
        "deals": section.deals,
        "players": list(section.players),
        "variants": list(section.variants),
        "master_seed": section.master_seed,
        "rank_by": section.rank_by,
        "points": section.points,
    }


def plan_games(
    kind: EventKind, number: int, entrants: list[int], settings: dict[str, Any]
) -> list[EventGame]:
    """The event's games: the schedule of ``settings`` over ``entrants`` (version ids),
    seat-balanced sets on shared deals; ids ``finals1-0000``, ``round3-0012``."""
    bots = [Entrant(str(v), str(v)) for v in sorted(entrants)]
    players = [k for k in settings["players"] if k <= len(bots)]
    if not players:
        return []
    seed = int(settings["master_seed"])
    if settings["pairing"] == "sampled":
        per_bot = int(settings["games_per_bot"])
        sampler = Sampled(bots, players, settings["variants"], 0, seed, "balanced")
        planned = sampler.plan(per_bot)
    else:
        count = sum(
            exhaustive_count(
                len(bots), [k], len(settings["variants"]), int(settings["deals"]), "balanced"
            )
            for k in players
        )
        if count > MAX_EVENT_GAMES:
            raise Invalid(
                f"a round-robin of {len(bots)} entrants would be {count} games (more than "
                f"{MAX_EVENT_GAMES}): use schedule = 'sampled' with games_per_bot"
            )
        planned = list(
            enumerate_games(
                bots, players, settings["variants"], int(settings["deals"]), seed, "balanced"
            )
        )
    return [
        EventGame(
            f"{kind}{number}-{index:04d}",
            g.n_players,
            g.variant,
            g.deal_seed,
            tuple(int(v) for v in g.versions),
        )
        for index, g in enumerate(planned)
    ]


@dataclass
class TickReport:
    """What one :meth:`Events.tick` did (for logs and tests)."""

    created: list[EventRow] = field(default_factory=list)
    started: list[int] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)


class Events:
    """Starts and finishes the competition's events over the store (see the module)."""

    def __init__(
        self,
        store: CompetitionStore,
        config: CompetitionConfig,
        wake_ladder: Callable[[], None] = lambda: None,
        clock: Clock = utc_now,
    ) -> None:
        self.store = store
        self.config = config
        self.wake_ladder = wake_ladder
        self.clock = clock
        self.phases: Phases | None = None
        """The competition's phases, when they start the finals: the finals' cutoff is
        when submissions closed, and finished finals are reported to them."""
        self._lock = threading.Lock()

    def runner(self) -> EventRunner:
        """These events as the phases' finals and rounds runner."""
        return EventRunner(self)

    # ------------------------------------------------------------ the seam

    def start_finals(
        self, actor: str | None, rerun: bool = False, cutoff: datetime | None = None
    ) -> EventRow:
        """Create the finals (entrants as of ``cutoff``, default now) and start them as
        soon as the entrants' builds are settled; ``rerun``: a new finals event with the
        last one's entrants and settings (seeds included): the same games again."""
        if rerun:
            last = latest_finals(self.store)
            if last is None or not last.entrants:
                raise Conflict("no finals to re-run yet: start the finals first")
            settings = {k: v for k, v in last.settings.items() if k != "notes"}
            settings["rerun_of"] = last.id
            made = create_event(
                self.store, "finals", last.cutoff, settings, actor, entrants=last.entrants
            )
        else:
            if self.phases is None or not self.phases.enabled:
                require_no_finals(self.store)  # the phases own which action fits when
            section = self.config.finals
            made = create_event(
                self.store,
                "finals",
                cutoff or self._closed_at() or self.clock(),
                event_settings(section, section.pairing),
                actor,
            )
        assert made is not None
        _log.info("%s created by %s", made.title, visible(actor or "the service"))
        self.tick()
        return event(self.store, made.id) or made

    def start_round(self, actor: str | None, cutoff: datetime | None = None) -> EventRow:
        """A round now (entrants as of now), besides the scheduled ones."""
        section = self.config.rounds
        if section is None:
            raise Invalid("this competition has no [rounds] table in its competition.toml")
        made = create_event(
            self.store,
            "round",
            cutoff or self.clock(),
            event_settings(section, section.pairing),
            actor,
        )
        assert made is not None
        self.tick()
        return event(self.store, made.id) or made

    def _closed_at(self) -> datetime | None:
        """When submissions closed, by the phases (None: no phases)."""
        state = self.phases.state() if self.phases is not None else None
        return None if state is None else state.closed_at()

    # ------------------------------------------------------------ the timer

    def due_slot(self, now: datetime) -> datetime | None:
        """The latest scheduled round start at or before ``now`` that is owed (after the
        timer first ran), or None."""
        section = self.config.rounds
        if section is None:
            return None
        from croniter import croniter

        since_text = self.store.setting(ROUNDS_SINCE)
        if since_text is None:
            self.store.set_setting(ROUNDS_SINCE, now.isoformat())
            return None
        if self.phases is not None and self.phases.view().phase not in ACTIONS["start-round"]:
            return None  # rounds run while submissions are open
        since = datetime.fromisoformat(since_text)
        slot = croniter(section.cron, now).get_prev(datetime)
        slot = slot if slot.tzinfo else slot.replace(tzinfo=UTC)
        return slot if slot > since else None

    def next_round(self) -> datetime | None:
        """When the next scheduled round starts (None: no ``[rounds]``, or none will
        before submissions close: rounds run while they are open)."""
        section = self.config.rounds
        if section is None:
            return None
        from croniter import croniter

        upcoming: datetime = croniter(section.cron, self.clock()).get_next(datetime)
        upcoming = upcoming if upcoming.tzinfo else upcoming.replace(tzinfo=UTC)
        if self.phases is not None and self.phases.enabled:
            view = self.phases.view()
            if view.phase not in ACTIONS["start-round"]:
                return None
            if view.deadline is not None and upcoming > view.deadline:
                return None
        return upcoming

    def tick(self) -> TickReport:
        """One look at the events, at the clock's time: start the round that is due (at
        most one per slot, across restarts), start events whose entrants are built, and
        finish events whose games are all done."""
        report = TickReport()
        with self._lock:
            now = self.clock()
            slot = self.due_slot(now)
            section = self.config.rounds
            if slot is not None and section is not None:
                made = create_event(
                    self.store,
                    "round",
                    slot,
                    event_settings(section, section.pairing),
                    None,
                    once_per_cutoff=True,
                )
                if made is not None:
                    _log.info("%s scheduled for %s", made.title, slot.isoformat())
                    report.created.append(made)
            for waiting in list_events(self.store, status="scheduled"):
                if self._start(waiting):
                    report.started.append(waiting.id)
            for running in list_events(self.store, status="running"):
                if self._finish(running):
                    report.finished.append(running.id)
        if report.started:
            self.wake_ladder()
        return report

    # ------------------------------------------------------------ steps

    def _entrants(self, shown: EventRow) -> tuple[list[int], list[str]] | None:
        """Who plays ``shown`` and what was decided on the way; None: wait for builds."""
        if shown.entrants:  # fixed at creation (a re-run)
            return list(shown.entrants), []
        top = EventSection.model_validate({"entrants": shown.settings["entrants"]}).top
        if top is not None:
            active = {(v.bot_name, v.number): v.id for v in self.store.active_versions()}
            board = self.store.leaderboard()[:top]
            chosen = [active[(r.bot_name, r.version_number)] for r in board]
            return chosen, [f"the top {top} of the ladder when the event started"]
        taken = snapshot(self.store, shown.cutoff)
        if taken.building:
            return None
        return [v.id for v in taken.entrants], []

    def _start(self, shown: EventRow) -> bool:
        picked = self._entrants(shown)
        if picked is None:
            return False
        entrants, notes = picked
        try:
            planned = plan_games(shown.kind, shown.number, entrants, shown.settings)
        except Invalid as exc:  # said on the event's page; it finishes with no games
            planned, notes = [], [*notes, str(exc)]
            _log.error("%s: %s", shown.title, exc)
        else:
            if not planned:
                notes = [*notes, f"{len(entrants)} entrant(s): too few to play"]
        started = start_event(self.store, shown.id, entrants, planned, notes)
        if started:
            _log.info("%s started: %d entrants, %d games", shown.title, len(entrants), len(planned))
        return started

    def _finish(self, shown: EventRow) -> bool:
        if shown.games.get("scheduled", 0) or shown.games.get("running", 0):
            return False
        from arena.competition.event_results import event_results

        versions = [v for v in (self.store.version(i) for i in shown.entrants) if v is not None]
        staff = frozenset(b.name for b in self.store.bots() if b.staff)
        results = event_results(
            event_games(self.store, shown.id),
            versions,
            shown.settings,
            staff=staff,
            staff_in_prizes=self.config.competition.staff_in_prizes,
        )
        done = finish_event(self.store, shown.id, results)
        if done:
            _log.info("%s finished: %d games", shown.title, results["games"])
            self._report_finals(shown)
        return done

    def _report_finals(self, shown: EventRow) -> None:
        """Tell the phases the (latest) finals finished: results ready, or published."""
        if shown.kind != "finals" or self.phases is None or not self.phases.enabled:
            return
        last = latest_finals(self.store)
        if last is None or last.id != shown.id or self.phases.view().phase != "finals":
            return
        try:
            self.phases.finals_finished()
        except StoreError as exc:  # the phase changed meanwhile (reopened): say so
            _log.warning("%s finished, but the phases did not take it: %s", shown.title, exc)


def entrant_versions(store: CompetitionStore, shown: EventRow) -> list[Version]:
    """The event's entrants as versions (for pages and exports)."""
    return [v for v in (store.version(i) for i in shown.entrants) if v is not None]


class EventRunner:
    """:class:`Events` as the phases' :class:`~arena.competition.phases.EventStarter`:
    each start answers what it started, in words (the phase log keeps it)."""

    def __init__(self, events: Events) -> None:
        self.events = events

    def start_finals(self, actor: str, rerun: bool) -> str:
        made = self.events.start_finals(actor, rerun)
        return _started(made)

    def start_round(self, actor: str) -> str:
        return _started(self.events.start_round(actor))


def _started(made: EventRow) -> str:
    """``Finals (run 2), event 7: 12 entrants, 132 games``."""
    if made.status == "scheduled":
        return f"{made.title}, event {made.id}: waiting for builds"
    return f"{made.title}, event {made.id}: {len(made.entrants)} entrants, {made.total_games} games"


class EventsThread:
    """The service's events timer: :meth:`Events.tick` every ``TICK_S`` until stopped."""

    def __init__(self, events: Events, every_s: float = TICK_S) -> None:
        self.events = events
        self.every_s = every_s
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.events.tick()
            except StoreError as exc:  # the database is away: one line, try again next tick
                _log.error("events: %s", exc)
            except Exception:  # a bug must not end the timer
                _log.exception("events: cannot look at the events")

    def stop(self) -> None:
        self._stop.set()
