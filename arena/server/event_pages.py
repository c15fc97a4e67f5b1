"""Pages and API of the competition's events: ``/results`` (the finals), ``/events/<id>``
(any round or re-run), ``/rounds`` (the list), ``/api/events`` and ``/api/events/<id>``,
and the organiser's ``POST /api/admin/finals`` and ``POST /api/admin/rounds``.

Results come from what the event stored when it finished (never refitted for a view);
whether everyone may see them is :func:`arena.competition.events.results_visible`'s
call (the finals: once the phases publish them), organisers always may. The organiser's
``POST /api/admin/finals`` goes through the phases when there are ``[phases]`` (as
``POST /api/admin/phase/start-finals`` does), else to the events directly.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from arena.competition.events import results_visible
from arena.server.api import json
from arena.server.app import AppState
from arena.server.auth import bearer_author, cookie_author, require_organiser
from arena.store.competition import NotFound
from arena.store.competition_events import event, event_games, latest_finals, list_events
from arena.store.competition_models import Author, EventRow, GameRow


class FinalsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rerun: bool = False
    """Play the last finals again: same entrants, same seeds, a new event."""


def _summary(shown: EventRow) -> dict[str, Any]:
    return {
        "id": shown.id,
        "kind": shown.kind,
        "number": shown.number,
        "title": shown.title,
        "status": shown.status,
        "cutoff": shown.cutoff,
        "created": shown.created,
        "started": shown.started,
        "finished": shown.finished,
        "created_by": shown.created_by,
        "entrants": len(shown.entrants),
        "games": shown.games,
        "settings": shown.settings,
        "url": f"/events/{shown.id}",
    }


def _game(game: GameRow) -> dict[str, Any]:
    return {
        "id": game.id,
        "status": game.status,
        "players": game.players,
        "variant": game.variant,
        "seed": game.seed,
        "end_reason": game.end_reason,
        "url": f"/games/{game.id}",
        "seats": [
            {
                "seat": s.seat,
                "bot": s.bot_name,
                "version": s.version_number,
                "score": s.score,
                "rank": s.rank,
                "faults": s.faults,
                "forfeit": s.forfeit,
            }
            for s in game.seats
        ],
    }


def router(state: AppState) -> APIRouter:
    routes = APIRouter()
    store = state.store

    def viewer_of(request: Request) -> Author | None:
        return cookie_author(request, store) or bearer_author(request, store)

    def shown_results(shown: EventRow, viewer: Author | None) -> dict[str, Any] | None:
        """The stored results, if this viewer may see them yet."""
        if viewer is not None and viewer.organiser:
            return shown.results
        return shown.results if results_visible(shown, state.phases) else None

    def page(request: Request, shown: EventRow | None) -> Response:
        viewer = cookie_author(request, store)
        games = event_games(store, shown.id) if shown is not None else []
        results = shown_results(shown, viewer) if shown is not None else None
        return state.render(
            request,
            "event.html",
            viewer,
            event=shown,
            results=results,
            games=games if results is not None or (viewer and viewer.organiser) else [],
        )

    @routes.get("/results")
    def results(
        request: Request, event_id: int | None = Query(default=None, alias="event")
    ) -> Response:
        """The finals (the latest run), or ``?event=ID`` for any event."""
        if event_id is not None:
            return events_page(event_id, request)
        return page(request, latest_finals(store))

    @routes.get("/events/{event_id}")
    def events_page(event_id: int, request: Request) -> Response:
        shown = event(store, event_id)
        if shown is None:
            raise NotFound(f"no event {event_id}")
        return page(request, shown)

    @routes.get("/rounds")
    def rounds(request: Request) -> Response:
        return state.render(
            request,
            "rounds.html",
            cookie_author(request, store),
            events=list_events(store),
            next_round=state.ctx.event_keeper().next_round(),
        )

    @routes.get("/api/events")
    def api_events() -> JSONResponse:
        return json(
            {
                "events": [_summary(e) for e in list_events(store)],
                "next_round": state.ctx.event_keeper().next_round(),
            }
        )

    @routes.get("/api/events/{event_id}")
    def api_event(event_id: int, request: Request) -> JSONResponse:
        shown = event(store, event_id)
        if shown is None:
            raise NotFound(f"no event {event_id}")
        results = shown_results(shown, viewer_of(request))
        body = _summary(shown)
        body["results"] = results
        body["visible"] = results is not None  # to this viewer
        if results is not None:
            body["game_list"] = [_game(g) for g in event_games(store, shown.id)]
        return json(body)

    def finals_now(actor: str, rerun: bool) -> EventRow:
        """With ``[phases]``, through them (the change is logged; they call the events);
        without, straight to the events."""
        phases = state.phases
        if phases.enabled:
            (phases.rerun_finals if rerun else phases.start_finals)(actor)
            made = latest_finals(store)
            assert made is not None
            return made
        return state.ctx.event_keeper().start_finals(actor, rerun)

    def round_now(actor: str) -> EventRow:
        state.phases.start_round(actor)  # checks the phase, logs, calls the events
        made = list_events(store, kind="round")
        return made[0]

    @routes.post("/api/admin/finals")
    async def start_finals(request: Request, body: FinalsRequest | None = None) -> JSONResponse:
        author = await run_in_threadpool(require_organiser, request, store)
        rerun = body.rerun if body is not None else False
        made = await run_in_threadpool(finals_now, author.name, rerun)
        return json(_summary(made), status=202)

    @routes.post("/api/admin/rounds")
    async def start_round(request: Request) -> JSONResponse:
        author = await run_in_threadpool(require_organiser, request, store)
        made = await run_in_threadpool(round_now, author.name)
        return json(_summary(made), status=202)

    return routes
