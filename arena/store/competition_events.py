"""The competition store's events (finals and scheduled rounds): the SQL behind
:mod:`arena.competition.events`.

An event's games are ordinary games of the store (``games.event_id``), inserted
``scheduled`` and unrated with ids made from the event (``finals1-0007``), so the ladder
loop plays them and TrueSkill never sees them. Every write is one transaction of
:class:`~arena.store.competition.CompetitionStore`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from arena.store.competition import (
    CompetitionStore,
    Conflict,
    NotFound,
    _now,
    _utc,
    _utc_req,
    _version_of,
    _version_select,
    bots,
    event_entrants,
    events,
    games,
    versions,
)
from arena.store.competition_models import EventKind, EventRow, GameRow, Version

PLAYABLE = ("active", "retired")
"""Version statuses that were built and accepted (a retired one was replaced later)."""
BUILDING = ("queued", "building")


@dataclass(frozen=True)
class EventGame:
    """One game of an event as it is scheduled: the id, the deal and the seats."""

    game_id: str
    players: int
    variant: str
    seed: int
    version_ids: tuple[int, ...]


@dataclass(frozen=True)
class Snapshot:
    """Each bot's version as of a cutoff: who plays, and who is still being built."""

    entrants: tuple[Version, ...]
    building: tuple[Version, ...]
    """Versions submitted by the cutoff whose build has not finished: the event waits."""


def _event_of(conn: Connection, row: Any) -> EventRow:
    entrants = tuple(
        int(v)
        for v in conn.execute(
            sa.select(event_entrants.c.version_id)
            .where(event_entrants.c.event_id == row.id)
            .order_by(event_entrants.c.version_id)
        ).scalars()
    )
    counts = {
        str(status): int(n)
        for status, n in conn.execute(
            sa.select(games.c.status, sa.func.count())
            .where(games.c.event_id == row.id)
            .group_by(games.c.status)
        ).all()
    }
    return EventRow(
        id=int(row.id),
        kind=row.kind,
        number=int(row.number),
        status=row.status,
        cutoff=_utc_req(row.cutoff),
        created=_utc_req(row.created),
        started=_utc(row.started),
        finished=_utc(row.finished),
        settings=json.loads(row.settings),
        created_by=row.created_by,
        entrants=entrants,
        games=counts,
        results=None if row.results is None else json.loads(row.results),
    )


def create_event(
    store: CompetitionStore,
    kind: EventKind,
    cutoff: datetime,
    settings: dict[str, Any],
    created_by: str | None,
    *,
    entrants: Sequence[int] = (),
    once_per_cutoff: bool = False,
) -> EventRow | None:
    """A new event (``scheduled``), numbered after the last of its kind. ``entrants``
    fixes who plays (a re-run); ``once_per_cutoff``: None if an event of this kind with
    this cutoff exists (a round for a slot already started: a restart never doubles it)."""
    with store._write() as conn:
        if once_per_cutoff:
            found = conn.execute(
                sa.select(events.c.id).where(events.c.kind == kind, events.c.cutoff == cutoff)
            ).first()
            if found is not None:
                return None
        number = conn.execute(
            sa.select(sa.func.coalesce(sa.func.max(events.c.number), 0)).where(
                events.c.kind == kind
            )
        ).scalar_one()
        event_id = conn.execute(
            sa.insert(events)
            .values(
                kind=kind,
                number=int(number) + 1,
                status="scheduled",
                cutoff=cutoff,
                created=_now(),
                settings=json.dumps(settings, sort_keys=True),
                created_by=None if created_by is None else created_by[:64],
            )
            .returning(events.c.id)
        ).scalar_one()
        if entrants:
            conn.execute(
                sa.insert(event_entrants),
                [{"event_id": event_id, "version_id": v} for v in sorted(set(entrants))],
            )
        row = conn.execute(sa.select(events).where(events.c.id == event_id)).one()
        return _event_of(conn, row)


def event(store: CompetitionStore, event_id: int) -> EventRow | None:
    with store._read() as conn:
        row = conn.execute(sa.select(events).where(events.c.id == event_id)).first()
        return None if row is None else _event_of(conn, row)


def list_events(
    store: CompetitionStore, kind: EventKind | None = None, status: str | None = None
) -> list[EventRow]:
    """Events, newest first."""
    query = sa.select(events).order_by(events.c.id.desc())
    if kind is not None:
        query = query.where(events.c.kind == kind)
    if status is not None:
        query = query.where(events.c.status == status)
    with store._read() as conn:
        return [_event_of(conn, row) for row in conn.execute(query).all()]


def snapshot(store: CompetitionStore, cutoff: datetime) -> Snapshot:
    """Per bot not disqualified: its newest version submitted at or before ``cutoff``
    that was accepted (active, or retired by a later upload) and still has its build;
    a newer one submitted by then that is still queued or building is reported (the
    event waits for it); rejected ones are passed over."""
    with store._read() as conn:
        rows = conn.execute(
            _version_select()
            .add_columns(versions.c.built_path.label("kept_build"))
            .where(versions.c.submitted <= cutoff, bots.c.disqualified.is_(False))
            .order_by(bots.c.id, versions.c.number.desc())
        ).all()
    chosen: dict[int, Version] = {}
    waiting: dict[int, Version] = {}
    for row in rows:
        version = _version_of(row)
        if version.bot_id in chosen or version.bot_id in waiting:
            continue
        if version.status in BUILDING:
            waiting[version.bot_id] = version
        elif version.status in PLAYABLE and row.kept_build is not None:
            chosen[version.bot_id] = version
    return Snapshot(
        tuple(sorted(chosen.values(), key=lambda v: v.id)),
        tuple(sorted(waiting.values(), key=lambda v: v.id)),
    )


def start_event(
    store: CompetitionStore,
    event_id: int,
    entrants: Sequence[int],
    planned: Sequence[EventGame],
    notes: Sequence[str] = (),
) -> bool:
    """Fix the entrants and schedule the event's games (unrated), and mark it running;
    False if it is no longer ``scheduled`` (another start got there first)."""
    with store._write() as conn:
        row = conn.execute(sa.select(events).where(events.c.id == event_id)).first()
        if row is None:
            raise NotFound(f"no event {event_id}")
        if row.status != "scheduled":
            return False
        known = set(
            conn.execute(
                sa.select(event_entrants.c.version_id).where(event_entrants.c.event_id == event_id)
            ).scalars()
        )
        fresh = sorted(set(entrants) - known)
        if fresh:
            conn.execute(
                sa.insert(event_entrants),
                [{"event_id": event_id, "version_id": v} for v in fresh],
            )
        for game in planned:
            store._insert_game(
                conn,
                str(row.kind),
                game.players,
                game.variant,
                game.seed,
                game.version_ids,
                False,
                None,
                None,
                game_id=game.game_id,
                event_id=event_id,
            )
        settings = json.loads(row.settings)
        if notes:
            settings["notes"] = [*settings.get("notes", []), *notes]
        conn.execute(
            sa.update(events)
            .where(events.c.id == event_id)
            .values(status="running", started=_now(), settings=json.dumps(settings, sort_keys=True))
        )
    return True


def event_games(store: CompetitionStore, event_id: int) -> list[GameRow]:
    """The event's games in schedule order (the order they were inserted; a game the
    organiser re-ran comes last)."""
    with store._read() as conn:
        return store._games_where(conn, games.c.event_id == event_id, None, order_desc=False)


def finish_event(store: CompetitionStore, event_id: int, results: dict[str, Any]) -> bool:
    """Mark a running event finished with its results, if every one of its games is
    finished or void (checked in this transaction); False otherwise."""
    with store._write() as conn:
        open_games = conn.execute(
            sa.select(sa.func.count()).where(
                games.c.event_id == event_id, games.c.status.in_(("scheduled", "running"))
            )
        ).scalar_one()
        if int(open_games):
            return False
        done = conn.execute(
            sa.update(events)
            .where(events.c.id == event_id, events.c.status == "running")
            .values(
                status="finished",
                finished=_now(),
                results=json.dumps(results, sort_keys=True),
            )
        ).rowcount
    return bool(done)


def latest_finals(store: CompetitionStore) -> EventRow | None:
    found = list_events(store, kind="finals")
    return found[0] if found else None


def require_no_finals(store: CompetitionStore) -> None:
    """Conflict if the finals were already started (re-run them instead)."""
    last = latest_finals(store)
    if last is not None:
        raise Conflict(
            f"the finals were already started ({last.title}, {last.status}); "
            "re-run them to play them again"
        )
