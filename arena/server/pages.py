"""The server-rendered pages. They work without JavaScript (except the replay viewer);
forms post with the session cookie and a CSRF token (see :mod:`arena.server.auth`)."""

from __future__ import annotations

import json
import re
from typing import Literal
from urllib.parse import unquote

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from markupsafe import Markup
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from arena.engine import GameRecord, ReplayError
from arena.server import views
from arena.server.api import (
    BOT_NAME,
    ChallengeRequest,
    phase_action,
    start_challenge,
    take_submission,
)
from arena.server.app import AppState
from arena.server.auth import (
    AuthError,
    bearer_author,
    check_csrf,
    client_address,
    cookie_author,
    csrf_token,
    end_session,
    remember_csrf,
    start_session,
)
from arena.server.plots import rating_svg
from arena.server.ratelimit import RateLimited
from arena.store.competition import Invalid, NotFound
from arena.store.competition_models import Author
from arena.viewer.frames import viewer_data
from arena.viewer.page import replay_page

GAMES_PER_PAGE = 50


def _form_text(value: object) -> str:
    return value if isinstance(value, str) else ""


def router(state: AppState) -> APIRouter:
    pages = APIRouter()
    store = state.store
    render = state.render
    session_s = state.ctx.config.server.session_days * 86400

    def viewer_of(request: Request) -> Author | None:
        return cookie_author(request, store)

    def signed_in(request: Request) -> Author:
        author = viewer_of(request)
        if author is None:
            raise AuthError(401, "sign in first")
        return author

    async def form_of(request: Request) -> dict[str, str]:
        form = await request.form()
        return {key: _form_text(value) for key, value in form.items()}

    def back(url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)

    @pages.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @pages.get("/")
    def leaderboard(request: Request) -> Response:
        board = views.leaderboard(store, state.settings)
        return render(
            request, "leaderboard.html", viewer_of(request), board=board, phase=state.phases.view()
        )

    @pages.get("/bots/{name:path}")
    def bot(name: str, request: Request) -> Response:
        viewer = viewer_of(request)
        page = views.bot_page(store, name, viewer, staff_in_prizes=state.settings.staff_in_prizes)
        if page is None:
            raise NotFound(f"no bot named {name!r}")
        plot = Markup(rating_svg(page.history)) if page.history else None
        return render(request, "bot.html", viewer, page=page, plot=plot)

    @pages.get("/games")
    def games(
        request: Request,
        bot: str | None = None,
        kind: Literal["ladder", "challenge"] | None = None,
        before: str | None = None,
    ) -> Response:
        rows = store.games(bot=bot or None, kind=kind, limit=GAMES_PER_PAGE, before=before)
        more = rows[-1].id if len(rows) == GAMES_PER_PAGE else None
        return render(
            request,
            "games.html",
            viewer_of(request),
            games=rows,
            bot=bot,
            kind=kind,
            more=more,
            before=before,
        )

    def download_viewer(request: Request) -> Author | None:
        """Downloads follow the session cookie, or a token (``curl -H 'Authorization: ...'``)."""
        return viewer_of(request) or bearer_author(request, store)

    def attachment(body: str | bytes, media_type: str, filename: str) -> Response:
        return Response(
            body,
            media_type=media_type,
            headers={"Content-Disposition": f'attachment; filename="{filename}"'},
        )

    @pages.get("/games/{game_id}/record.json")
    def game_record(game_id: str, request: Request) -> Response:
        """The verified record as stored, redacted like the page: other authors' stderr out."""
        page = views.game_page(store, game_id, download_viewer(request))
        if page is None:
            raise NotFound(f"no game {game_id!r}")
        if page.record is None:
            raise NotFound(f"game {game_id!r} has no record: it is {page.game.status}")
        body = json.dumps(page.record, ensure_ascii=False, indent=1)
        return attachment(body, "application/json", views.download_name(game_id, "record.json"))

    @pages.get("/games/{game_id}/stderr/{seat:int}.txt")
    def game_stderr(game_id: str, seat: int, request: Request) -> Response:
        """One's own bot's stderr of the game (whole game, its kept tail)."""
        viewer = download_viewer(request)
        if viewer is None:
            raise AuthError(401, "sign in to download your bot's stderr")
        try:
            text = views.own_stderr(store, game_id, seat, viewer)
        except LookupError:
            raise NotFound(f"no game {game_id!r}") from None
        except PermissionError:
            raise AuthError(403, "that seat is not your bot's: its stderr is private") from None
        if text is None:
            raise NotFound(f"seat {seat} wrote nothing to stderr in this game")
        return attachment(
            text, "text/plain; charset=utf-8", views.download_name(game_id, f"seat{seat}.txt")
        )

    @pages.get("/games/{game_id}")
    def game(game_id: str, request: Request) -> Response:
        viewer = viewer_of(request)
        page = views.game_page(store, game_id, viewer)
        if page is None:
            raise NotFound(f"no game {game_id!r}")
        data = None
        problem = None
        if page.record is not None:
            try:
                data = viewer_data(GameRecord.model_validate(page.record), game_id)
            except (ValidationError, ReplayError) as exc:
                problem = f"the stored record cannot be replayed: {exc}"
        if data is None:
            return render(request, "game.html", viewer, page=page, problem=problem)
        head = state.templates.get_template("game_head.html").render(
            viewer=viewer,
            page=page,
            csrf=csrf_token(request),
            competition=state.settings.name,
            registration_open=state.settings.registration_open,
        )
        response = Response(
            replay_page(data, asset_prefix="/static/viewer/", nav=head),
            media_type="text/html; charset=utf-8",
        )
        remember_csrf(request, response)
        return response

    @pages.get("/me")
    def me(
        request: Request,
        page_number: int = Query(default=1, ge=1, le=100_000, alias="page"),
        kept: int | None = Query(default=None, ge=1, le=2**62),
    ) -> Response:
        author = signed_in(request)
        page = views.me_page(store, author, page_number)
        # After an identical resubmission: say which version was kept (only one's own).
        kept_version = store.version(kept) if kept is not None else None
        if kept_version is not None and (
            kept_version.author_id != author.id or kept_version.status != "active"
        ):
            kept_version = None
        own = {b.name for b in page.bots}
        board = store.leaderboard()
        opponents = [
            row.bot_name
            for row in board
            if row.bot_name not in own and re.fullmatch(BOT_NAME, row.bot_name)
        ]
        own_active = [
            row.bot_name
            for row in board
            if row.bot_name in own and re.fullmatch(BOT_NAME, row.bot_name)
        ]
        return render(
            request,
            "me.html",
            author,
            page=page,
            opponents=opponents,
            own_active=own_active,
            kept=kept_version,
            challenges_closed=state.phases.challenges_refusal(),
        )

    @pages.get("/login")
    def login_form(request: Request) -> Response:
        return render(request, "login.html", viewer_of(request), problem=None, issued=None)

    @pages.post("/login")
    async def login(request: Request) -> Response:
        form = await form_of(request)
        check_csrf(request, form.get("csrf"))
        client = client_address(request)
        await run_in_threadpool(state.signins.check, client)
        token = form.get("token", "").strip()
        author = await run_in_threadpool(
            lambda: store.author_by_token(token) if token and len(token) <= 200 else None
        )
        if author is None:
            await run_in_threadpool(state.signins.failed, client, "sign-in form")
            return render(
                request,
                "login.html",
                None,
                status=401,
                problem="That token is not valid.",
                issued=None,
            )
        response = back("/me")
        await run_in_threadpool(start_session, request, response, store, author, session_s)
        return response

    @pages.post("/logout")
    async def logout(request: Request) -> Response:
        form = await form_of(request)
        check_csrf(request, form.get("csrf"))
        response = back("/")
        await run_in_threadpool(end_session, request, response, store)
        return response

    @pages.post("/register")
    async def register(request: Request) -> Response:
        form = await form_of(request)
        check_csrf(request, form.get("csrf"))
        if not state.settings.registration_open:
            raise AuthError(403, "registration is closed: ask the organiser for a token")
        await run_in_threadpool(state.check_open)
        wait = await run_in_threadpool(state.registrations.take, client_address(request))
        if wait is not None:
            raise RateLimited("registrations", wait)
        name = form.get("name", "").strip()
        author, token = await run_in_threadpool(store.create_author, name)
        response = render(
            request,
            "login.html",
            author,
            problem=None,
            issued={"name": author.name, "token": token},
        )
        await run_in_threadpool(start_session, request, response, store, author, session_s)
        return response

    @pages.get("/submit")
    def submit_form(request: Request) -> Response:
        author = signed_in(request)
        return render(
            request,
            "submit.html",
            author,
            limit_mb=state.settings.upload_bytes // 2**20,
            phase=state.phases.view(),
        )

    @pages.post("/submit")
    async def submit(request: Request) -> Response:
        author = await run_in_threadpool(signed_in, request)
        taken = await take_submission(
            state, request, author, lambda fields: check_csrf(request, fields.get("csrf"))
        )
        version = taken.version
        if taken.kept:
            return back(f"/me?kept={version.id}#submission-{version.id}")
        return back(f"/me#submission-{version.id}")

    @pages.post("/challenge")
    async def challenge(request: Request) -> Response:
        form = await request.form()
        check_csrf(request, _form_text(form.get("csrf")))
        author = await run_in_threadpool(signed_in, request)
        try:
            body = ChallengeRequest(
                opponents=[o for o in (_form_text(v) for v in form.getlist("opponent")) if o],
                players=int(_form_text(form.get("players")) or 2),
                variant=_form_text(form.get("variant")) or "coloured",
                bot=_form_text(form.get("bot")) or None,
            )
        except (ValidationError, ValueError):
            raise Invalid("pick 1 to 3 opponents, 2 to 4 players and a wall") from None
        game = await run_in_threadpool(start_challenge, state, author, body)
        return back(f"/games/{game.id}")

    # ------------------------------------------------------------------ organiser

    def organiser(request: Request) -> Author:
        author = signed_in(request)
        if not author.organiser:
            raise AuthError(403, "only the organiser may see this page")
        return author

    def admin_page(
        request: Request, author: Author, issued: dict[str, str] | None = None
    ) -> Response:
        return render(
            request,
            "admin.html",
            author,
            paused=store.paused(),
            frozen=store.frozen(),
            counts=store.game_counts(),
            balance=store.ladder_balance(),
            authors=store.authors(),
            bots=store.bots(),
            games=store.games(limit=30),
            phase=state.phases.view(),
            phases_on=state.phases.enabled,
            phase_log=state.phases.log(),
            issued=issued,
        )

    @pages.get("/admin")
    def admin(request: Request) -> Response:
        return admin_page(request, organiser(request))

    @pages.post("/admin/phase/{action}")
    async def admin_phase(action: str, request: Request) -> Response:
        form = await form_of(request)
        check_csrf(request, form.get("csrf"))
        author = await run_in_threadpool(organiser, request)
        await run_in_threadpool(
            phase_action, state, action, author, form.get("deadline") or None, True
        )
        return back("/admin#phases")

    @pages.post("/admin/{action}")
    async def admin_action(action: str, request: Request) -> Response:
        form = await form_of(request)
        check_csrf(request, form.get("csrf"))
        author = await run_in_threadpool(organiser, request)
        if action == "authors":
            name = form.get("name", "").strip()
            made, token = await run_in_threadpool(
                store.create_author, name, form.get("organiser") == "on"
            )
            return admin_page(request, author, issued={"name": made.name, "token": token})
        target = unquote(form.get("target", ""))  # percent-encoded: names are bot text
        actions = {
            "pause": lambda: store.set_paused(True),
            "resume": lambda: store.set_paused(False),
            "freeze": lambda: store.freeze(staff_in_prizes=state.settings.staff_in_prizes),
            "unfreeze": store.unfreeze,
            "disqualify": lambda: store.disqualify(target),
            "rerun": lambda: store.rerun(target),
        }
        if action not in actions:
            raise NotFound(f"no organiser action {action!r}")
        await run_in_threadpool(actions[action])
        state.ctx.wake_ladder()
        return back("/admin")

    return pages
