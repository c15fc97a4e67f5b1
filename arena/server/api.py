"""The JSON API: everything the pages show, and every write, behind Bearer tokens.

Errors are ``{"error": "readable reason"}`` with 400/401/403/404/409/413/429. Reads are
public except ``/api/me`` and private fields (build logs, stderr), which follow the token.
"""

from __future__ import annotations

import json as stdlib_json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from arena.server import views
from arena.server.app import AppState
from arena.server.auth import (
    AuthError,
    bearer_author,
    client_address,
    require_author,
    require_organiser,
)
from arena.server.ratelimit import WINDOW_SECONDS, RateLimited
from arena.server.receive import UploadError, check_received, receive_upload
from arena.store.competition import Invalid, NotFound
from arena.store.competition_models import Author, GameRow, Version
from arena.textsafe import visible

_log = logging.getLogger("arena.server")

BOT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class ChallengeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    opponents: list[str] = Field(min_length=1, max_length=4)
    players: int = Field(default=2, ge=2, le=4)
    variant: Literal["coloured", "gray"] = "coloured"
    bot: str | None = Field(default=None, min_length=1, max_length=64)
    """Which of the author's active bots takes seat 0 (default: their latest active)."""


class NameRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)


class AuthorRequest(NameRequest):
    organiser: bool = False
    staff: bool = False
    """A staff team: its bots are baselines (badged, no prize rank)."""


class PhaseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deadline: str | None = Field(default=None, max_length=64)
    """extend, reopen: the new deadline (ISO 8601 with an offset or 'Z')."""


def phase_action(
    state: AppState, action: str, actor: Author, deadline: str | None, naive_is_utc: bool
) -> str:
    """One organiser action on the phases (API and admin page); what it did, in words.
    ``naive_is_utc``: the admin form's deadline field (labelled UTC) has no offset; the
    API's deadline must carry one."""
    from arena.competition.phases import ACTIONS, PHASE_TEXT, parse_deadline

    phases = state.phases
    if action in ("extend", "reopen"):
        if not deadline:
            raise Invalid(f"{action}: give the new deadline")
        when = parse_deadline(deadline, naive_is_utc=naive_is_utc)
        view = (phases.extend if action == "extend" else phases.reopen)(actor.name, when)
        return PHASE_TEXT[view.phase]
    if action == "start-round":
        return phases.start_round(actor.name)
    known = {
        "start-finals": phases.start_finals,
        "rerun-finals": phases.rerun_finals,
        "publish": phases.publish,
    }
    if action not in known:
        raise NotFound(f"no phase action {action!r}: one of {', '.join(ACTIONS)}")
    return PHASE_TEXT[known[action](actor.name).phase]


def json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return PlainJSONResponse(data, status_code=status, headers=headers)


class PlainJSONResponse(JSONResponse):
    """What JSONResponse sends for ``jsonable_encoder(data)``, encoded by the standard
    library in one pass (jsonable_encoder walks every value in Python first: a bot page's
    1,500 rating points took most of its time); anything the plain encoder does not know
    goes through jsonable_encoder as before."""

    def render(self, content: Any) -> bytes:
        try:
            return _dumps(content)
        except TypeError:
            return _dumps(jsonable_encoder(content))


def _plain(value: Any) -> Any:
    """What jsonable_encoder makes of the values the API's views hold."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(type(value).__name__)


def _dumps(data: Any) -> bytes:
    return stdlib_json.dumps(
        data, default=_plain, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode()


@dataclass(frozen=True)
class Taken:
    """What became of an upload: a new queued ``version``, or (``kept``) the author's
    active version it is identical to, left as it is with its rating."""

    version: Version
    kept: bool = False

    def message(self) -> str:
        v = self.version
        if self.kept:
            return f"identical to version {v.number}: kept"
        return f"version {v.number} queued for its build"


async def take_submission(
    state: AppState,
    request: Request,
    author: Author,
    check_fields: Callable[[dict[str, str]], None] | None = None,
) -> Taken:
    """Stream an upload to ``data_dir/uploads``, check it in full (every rule the build
    worker's unpacking applies, into a scratch folder removed at once), and queue it for
    the build worker. A refused upload answers 400 with its reason and leaves nothing
    stored; the build worker checks it again before it builds (defence in depth). An
    upload identical to the bot's active version stores nothing and keeps that version.
    After the deadline every upload is refused (403) before its body is read; a build
    queued before it still runs."""
    await run_in_threadpool(state.check_open)
    wait = await run_in_threadpool(state.uploads_window.take, author.id)
    if wait is not None:
        raise RateLimited("uploads", wait)
    try:
        received = await receive_upload(request, state.uploads, state.settings.upload_bytes)
    except BaseException:
        await run_in_threadpool(state.uploads_window.give_back, author.id)
        raise
    assert received.archive is not None
    archive = received.archive
    try:
        if check_fields is not None:
            check_fields(received.fields)
        await run_in_threadpool(check_disk_quota, state, author, received.size)
        scratch = state.uploads / f"checking-{secrets.token_hex(8)}"
        checked = await run_in_threadpool(check_received, archive, scratch, state.upload_limits)
        name = checked.manifest.name
        asked = received.fields.get("bot", "").strip()
        if asked and asked != name:
            raise UploadError(400, f"the archive's bot.toml names {name!r}, not {asked!r}")
        unchanged = await run_in_threadpool(
            state.store.unchanged_version, author.id, name, checked.source_digest
        )
        if unchanged is not None:
            archive.unlink(missing_ok=True)
            return Taken(unchanged, kept=True)
        final = state.uploads / f"{received.sha256[:16]}-{secrets.token_hex(4)}{received.suffix}"
        archive.rename(final)
        archive = final
        version = await run_in_threadpool(
            state.store.add_submission,
            author.id,
            name,
            str(final),
            received.sha256,
            received.size,
            checked.source_digest,
        )
    except BaseException:
        archive.unlink(missing_ok=True)
        await run_in_threadpool(state.uploads_window.give_back, author.id)
        raise
    _log.info("upload: %s v%d by %s", visible(name), version.number, visible(author.who))
    state.ctx.wake_builder()
    return Taken(version)


def check_disk_quota(state: AppState, author: Author, archive_bytes: int) -> None:
    """Refuse (413) an upload that would take the author past ``[limits] disk_mb``: what
    their kept versions hold (archives, sources, builds) plus this archive."""
    quota = state.ctx.config.limits.disk_bytes
    used = state.store.stored_bytes_of(author.id)
    if used + archive_bytes > quota:
        raise UploadError(
            413,
            f"this upload would pass your disk quota of {quota / 2**20:.0f} MiB (your kept "
            f"versions use {used / 2**20:.1f} MiB); replaced and rejected versions are "
            "deleted as they go, or ask the organiser for more",
        )


def start_challenge(state: AppState, author: Author, body: ChallengeRequest) -> GameRow:
    """An unrated game the author asked for, within the hourly limit (else RateLimited),
    while challenges are open (else AuthError 403 with the reason)."""
    refusal = state.phases.challenges_refusal()
    if refusal is not None:
        raise AuthError(403, refusal)
    store = state.store
    since = datetime.now(UTC) - timedelta(seconds=WINDOW_SECONDS)
    wait = state.challenges.take(author.id, already=store.challenges_since(author.id, since))
    if wait is not None:
        raise RateLimited("challenges", wait)
    try:
        game = store.add_challenge(
            author.id, body.opponents, body.players, body.variant, own_bot=body.bot
        )
    except BaseException:
        state.challenges.give_back(author.id)
        raise
    state.ctx.wake_ladder()
    return game


def submission_created(taken: Taken) -> dict[str, Any]:
    version = taken.version
    return {
        "submission": version.id,
        "bot": version.bot_name,
        "version": version.number,
        "status": version.status,
        "kept": taken.kept,
        "message": taken.message(),
    }


def router(state: AppState) -> APIRouter:
    api = APIRouter(prefix="/api")
    store = state.store

    @api.get("/health")
    def health() -> JSONResponse:
        return json(
            {"ok": True, "games_finished": store.games_finished(), "paused": store.paused()}
        )

    @api.get("/phase")
    def phase(request: Request) -> JSONResponse:
        """The phase, the deadline and what comes next; the organiser also gets the log."""
        body = state.phases.view().api()
        viewer = bearer_author(request, store)
        if viewer is not None and viewer.organiser:
            body["log"] = [views.phase_log_api(row) for row in state.phases.log()]
        return json(body)

    @api.get("/leaderboard")
    def leaderboard() -> JSONResponse:
        return json(views.leaderboard(store, state.settings).api())

    @api.get("/bots/{name:path}")
    def bot(name: str, request: Request) -> JSONResponse:
        page = views.bot_page(
            store,
            name,
            bearer_author(request, store),
            staff_in_prizes=state.settings.staff_in_prizes,
        )
        if page is None:
            raise NotFound(f"no bot named {name!r}")
        return json(page.api())

    @api.get("/games")
    def games(
        bot: str | None = None,
        kind: Literal["ladder", "challenge"] | None = None,
        limit: int = 50,
        before: str | None = None,
    ) -> JSONResponse:
        rows = store.games(bot=bot or None, kind=kind, limit=max(1, min(limit, 500)), before=before)
        return json({"games": [views.game_api(g) for g in rows]})

    @api.get("/games/{game_id}")
    def game(game_id: str, request: Request) -> JSONResponse:
        page = views.game_page(store, game_id, bearer_author(request, store))
        if page is None:
            raise NotFound(f"no game {game_id!r}")
        return json(page.api())

    @api.get("/me")
    def me(request: Request, page: int = Query(default=1, ge=1, le=100_000)) -> JSONResponse:
        return json(views.me_page(store, require_author(request, store), page).api())

    @api.post("/submissions")
    async def submit(request: Request) -> JSONResponse:
        author = await run_in_threadpool(require_author, request, store)
        taken = await take_submission(state, request, author)
        return json(submission_created(taken), status=200 if taken.kept else 202)

    @api.get("/submissions/{version_id}")
    def submission(version_id: int, request: Request) -> JSONResponse:
        try:
            found = views.submission(store, version_id, bearer_author(request, store))
        except LookupError:
            raise NotFound(f"no submission {version_id}") from None
        return json(found.api())

    @api.post("/challenges")
    def challenge(body: ChallengeRequest, request: Request) -> JSONResponse:
        game = start_challenge(state, require_author(request, store), body)
        return json({"game": game.id, "status": game.status, "seats": game.seats}, status=202)

    @api.post("/register")
    def register(body: NameRequest, request: Request) -> JSONResponse:
        if not state.settings.registration_open:
            raise AuthError(403, "registration is closed: ask the organiser for a token")
        state.check_open()
        wait = state.registrations.take(client_address(request))
        if wait is not None:
            raise RateLimited("registrations", wait)
        author, token = store.create_author(body.name.strip())
        return json({"author": author.name, "token": token}, status=201)

    # ------------------------------------------------------------------ organiser

    @api.get("/admin/balance")
    def balance(request: Request) -> JSONResponse:
        """How evenly the ladder spreads games: per active version its games against its
        fair share since activation, and the player-count and wall mix."""
        require_organiser(request, store)
        return json(store.ladder_balance())

    @api.post("/admin/pause")
    def pause(request: Request) -> JSONResponse:
        require_organiser(request, store)
        store.set_paused(True)
        state.ctx.wake_ladder()
        return json({"paused": True})

    @api.post("/admin/resume")
    def resume(request: Request) -> JSONResponse:
        require_organiser(request, store)
        store.set_paused(False)
        state.ctx.wake_ladder()
        return json({"paused": False})

    @api.post("/admin/freeze")
    def freeze(request: Request) -> JSONResponse:
        require_organiser(request, store)
        ranking = store.freeze(staff_in_prizes=state.settings.staff_in_prizes)
        state.ctx.wake_ladder()
        return json({"frozen": ranking.frozen, "rows": ranking.rows, "paused": True})

    @api.post("/admin/unfreeze")
    def unfreeze(request: Request) -> JSONResponse:
        require_organiser(request, store)
        store.unfreeze()
        return json({"frozen": None})

    @api.post("/admin/bots/{name:path}/disqualify")
    def disqualify(name: str, request: Request) -> JSONResponse:
        require_organiser(request, store)
        bot = store.disqualify(name)
        state.ctx.wake_ladder()
        return json({"bot": bot.name, "disqualified": bot.disqualified})

    @api.post("/admin/games/{game_id}/rerun")
    def rerun(game_id: str, request: Request) -> JSONResponse:
        require_organiser(request, store)
        game = store.rerun(game_id)
        state.ctx.wake_ladder()
        return json({"rerun_of": game_id, "game": game.id, "status": game.status}, status=202)

    @api.post("/admin/phase/{action}")
    def change_phase(
        action: str, request: Request, body: PhaseRequest | None = None
    ) -> JSONResponse:
        """extend, reopen (with a new ``deadline``), start-finals, rerun-finals, publish,
        start-round: logged with the organiser's name."""
        author = require_organiser(request, store)
        done = phase_action(
            state, action, author, body.deadline if body else None, naive_is_utc=False
        )
        return json({**state.phases.view().api(), "done": done})

    @api.post("/admin/authors")
    def new_author(body: AuthorRequest, request: Request) -> JSONResponse:
        require_organiser(request, store)
        author, token = store.create_author(
            body.name.strip(), organiser=body.organiser, staff=body.staff
        )
        return json(
            {
                "author": author.name,
                "organiser": author.organiser,
                "staff": author.staff,
                "token": token,
            },
            status=201,
        )

    return api
