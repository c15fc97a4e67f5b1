"""The web app of ``arena serve``: server-rendered pages, a JSON API, shipped static files.

``create_app(ctx)`` builds a FastAPI app over a :class:`ServerContext` (the store, the
settings, the data folder and two wake-up calls); it never opens the store itself, so a
test builds a context over a temporary SQLite store. Pages are Jinja2 templates with
autoescape on; every bot-controlled string also goes through :func:`arena.textsafe.visible`.
Responses carry a strict Content-Security-Policy (scripts and styles from this origin only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.competition.config import CompetitionConfig, UploadLimits
from arena.competition.phases import Phases
from arena.server.auth import AuthError, cookie_author, csrf_token, remember_csrf
from arena.server.pagecache import PageCache
from arena.server.ratelimit import FailedSignins, RateLimited, SlidingWindow, StoredWindow
from arena.server.receive import MULTIPART_OVERHEAD, UploadError, too_large
from arena.store.competition import CompetitionStore, Conflict, Invalid, NotFound, StoreError
from arena.store.competition_models import Author
from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.competition.events import Events
    from arena.server.pagemaker import PageMaker

SMALL_BODY = 64 * 1024
"""Largest request body outside the upload routes (forms, JSON)."""
UPLOAD_PATHS = ("/api/submissions", "/submit")
REGISTRATIONS_PER_HOUR = 10
"""Open registration: new authors per client address per hour."""
UPLOADS_PER_HOUR = 30
"""Submissions per author per hour (each costs a sandboxed build)."""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@dataclass(frozen=True)
class WebSettings:
    """What the web layer reads of ``competition.toml`` (defaults live there)."""

    name: str
    registration_open: bool
    challenges_per_hour: int
    upload_bytes: int
    unpacked_bytes: int
    staff_in_prizes: bool = False

    @classmethod
    def of(cls, config: CompetitionConfig) -> WebSettings:
        return cls(
            name=config.competition.name,
            registration_open=config.server.registration == "open",
            challenges_per_hour=config.challenges.per_hour,
            upload_bytes=config.limits.upload_mb * 2**20,
            unpacked_bytes=config.limits.unpacked_mb * 2**20,
            staff_in_prizes=config.competition.staff_in_prizes,
        )


@dataclass
class ServerContext:
    """Everything the app needs, built by ``arena serve`` (or a test)."""

    config: CompetitionConfig
    store: CompetitionStore
    data_dir: Path
    wake_builder: Callable[[], None] = lambda: None
    wake_ladder: Callable[[], None] = lambda: None
    phases: Phases | None = None
    """The competition's phases (default: over ``store`` and ``config``, with
    :attr:`events` as their finals runner)."""
    events: Events | None = None
    """Finals and rounds; None: built here over the store (a test's context)."""
    page_maker: PageMaker | None = None
    """Where the page cache has its pages made (``arena serve``: a process of its own);
    None: on the server's route threads."""

    def event_keeper(self) -> Events:
        """The competition's events (one per context: they share a lock)."""
        if self.events is None:
            from arena.competition.events import Events

            self.events = Events(self.store, self.config, self.wake_ladder)
            self.events.phases = self.phases
        return self.events


@dataclass
class AppState:
    """Per-app state shared by the routes."""

    ctx: ServerContext
    settings: WebSettings
    templates: Jinja2Templates
    challenges: SlidingWindow
    registrations: StoredWindow
    uploads_window: StoredWindow
    signins: FailedSignins
    started: datetime = field(default_factory=datetime.now)

    @property
    def store(self) -> CompetitionStore:
        return self.ctx.store

    @property
    def phases(self) -> Phases:
        assert self.ctx.phases is not None  # create_app makes one
        return self.ctx.phases

    def check_open(self) -> None:
        """Refuse (403, with when) an upload or a registration once submissions closed."""
        reason = self.phases.uploads_refusal()
        if reason is not None:
            raise UploadError(403, reason)

    @property
    def uploads(self) -> Path:
        return self.ctx.data_dir / "uploads"

    @property
    def upload_limits(self) -> UploadLimits:
        """The competition's ``[limits]``, with the sizes these settings give."""
        return self.ctx.config.limits.model_copy(
            update={
                "upload_mb": max(1, -(-self.settings.upload_bytes // 2**20)),
                "unpacked_mb": max(1, self.settings.unpacked_bytes // 2**20),
            }
        )

    def render(
        self,
        request: Request,
        template: str,
        viewer: Author | None,
        status: int = 200,
        **values: Any,
    ) -> Response:
        response = self.templates.TemplateResponse(
            request,
            template,
            {
                "viewer": viewer,
                "csrf": csrf_token(request),
                "competition": self.settings.name,
                "registration_open": self.settings.registration_open
                and self.phases.uploads_refusal() is None,
                **values,
            },
            status_code=status,
        )
        remember_csrf(request, response)
        return response


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.server", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # shipped templates: no stat() of the file on every page
    )
    env.filters["vis"] = lambda text: "" if text is None else visible(str(text))
    env.filters["vislines"] = lambda text: (
        "" if text is None else visible(str(text), multiline=True)
    )
    env.filters["when"] = _when
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return Jinja2Templates(env=env)


def _static(package: str) -> StaticFiles:
    return StaticFiles(directory=str(resources.files(package).joinpath("static")))


def create_app(
    ctx: ServerContext, settings: WebSettings | None = None, *, page_cache: bool = True
) -> FastAPI:
    """The ASGI app over ``ctx`` (see the module docstring); ``settings`` defaults to
    those of ``ctx.config``. Without ``page_cache`` every request reaches the routes (the
    app of the page-making process, :mod:`arena.server.pagemaker`)."""
    from arena.server import api, event_pages, metrics, pages

    if settings is None:
        settings = WebSettings.of(ctx.config)
    if ctx.phases is None:
        keeper = ctx.event_keeper()
        ctx.phases = Phases(ctx.store, ctx.config.phases, keeper.runner())
        keeper.phases = ctx.phases
    app = FastAPI(
        title=f"{settings.name} — Azul Arena",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    state = AppState(
        ctx=ctx,
        settings=settings,
        templates=_templates(),
        challenges=SlidingWindow(settings.challenges_per_hour),
        registrations=StoredWindow(ctx.store, "registration", REGISTRATIONS_PER_HOUR),
        uploads_window=StoredWindow(ctx.store, "upload", UPLOADS_PER_HOUR),
        signins=FailedSignins(ctx.store, ctx.config.server.signin_failures_per_hour),
    )
    app.state.arena = state
    app.mount("/static/viewer", _static("arena.viewer"), name="viewer-static")
    app.mount("/static/site", _static("arena.server"), name="site-static")
    registry, requests, cache_results = metrics.registry_for(ctx.store)
    app.include_router(metrics.router(ctx.store, registry))
    app.include_router(api.router(state))
    app.include_router(pages.router(state))
    app.include_router(event_pages.router(state))
    _handlers(app, state)
    app.add_middleware(
        BodyLimit,
        upload_bytes=settings.upload_bytes,
        refusal=lambda scope, reason: error_response(
            state, Request(scope), 413, reason, {"Connection": "close"}
        ),
    )
    app.add_middleware(SecurityHeaders)
    app.add_middleware(metrics.RequestCounter, requests=requests)
    hit_responses = requests.labels("GET", "200")
    by_result = {result: cache_results.labels(result) for result in ("hit", "stale", "miss")}

    def counted(result: str) -> None:
        by_result[result].inc()  # children looked up once: labels() takes a lock each call
        if result != "miss":  # an answer from the cache never reaches the request counter
            hit_responses.inc()

    # outermost: a hit is answered before any other middleware runs
    app.state.page_cache = None  # the cache once the stack is made (arena serve's protocol)
    if page_cache:
        app.add_middleware(
            PageCache,
            stamp=ctx.store.stamp,
            stale_seconds=ctx.config.server.stale_seconds,
            counted=counted,
            built=lambda cache: setattr(app.state, "page_cache", cache),
            maker=ctx.page_maker.make if ctx.page_maker is not None else None,
            answered=lambda status: requests.labels("GET", str(status)).inc(),
        )
    return app


def page_cache_of(app: Any) -> PageCache | None:
    """The page cache of an app of :func:`create_app`, once its stack is made (its first
    call: the lifespan at start-up); None before, or for another app."""
    cache = getattr(getattr(app, "state", None), "page_cache", None)
    return cache if isinstance(cache, PageCache) else None


def is_api(request: Request) -> bool:
    """Machine clients' paths: errors are JSON there, never a page or a redirect."""
    return request.url.path.startswith("/api/") or request.url.path == "/metrics"


def error_response(
    state: AppState,
    request: Request,
    status: int,
    reason: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """JSON ``{"error": reason}`` for the API; an HTML page (or the login page) otherwise."""
    if is_api(request):
        return JSONResponse({"error": reason}, status_code=status, headers=headers)
    if status == 401:
        return RedirectResponse("/login", status_code=303)
    try:  # the navigation shows who is signed in, as on every other page
        viewer = cookie_author(request, state.store)
    except StoreError:  # the error page must not fail with the store
        viewer = None
    response = state.render(
        request,
        "error.html",
        viewer,
        status=status,
        reason=reason,
        back=("/submit", "Back to the upload form")
        if request.url.path == "/submit"
        else ("/", "Back to the leaderboard"),
        status_text=HTTPStatus(status).phrase
        if status in HTTPStatus._value2member_map_
        else "Error",
    )
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def _handlers(app: FastAPI, state: AppState) -> None:
    def handle(status: int) -> Callable[[Request, Exception], Response]:
        def handler(request: Request, exc: Exception) -> Response:
            return error_response(state, request, status, str(exc))

        return handler

    app.add_exception_handler(NotFound, handle(404))
    app.add_exception_handler(Conflict, handle(409))
    app.add_exception_handler(Invalid, handle(400))

    def store_error(request: Request, exc: Exception) -> Response:
        return error_response(state, request, 503, f"the store is unavailable: {exc}")

    app.add_exception_handler(StoreError, store_error)

    def auth_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AuthError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 and is_api(request) else None
        return error_response(state, request, exc.status, exc.reason, headers)

    app.add_exception_handler(AuthError, auth_error)

    def upload_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, UploadError)
        return error_response(state, request, exc.status, exc.reason, {"Connection": "close"})

    app.add_exception_handler(UploadError, upload_error)

    def rate_limited(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RateLimited)
        return error_response(state, request, 429, str(exc), {"Retry-After": str(exc.wait)})

    app.add_exception_handler(RateLimited, rate_limited)

    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        reason = exc.detail if isinstance(exc.detail, str) else "bad request"
        if exc.status_code == 404 and reason == "Not Found":
            reason = "no such page"
        return error_response(state, request, exc.status_code, reason, exc.headers)

    app.add_exception_handler(StarletteHTTPException, http_error)

    def validation_error(request: Request, exc: Exception) -> Response:
        errors: list[dict[str, Any]] = list(getattr(exc, "errors", list)())
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
            for e in errors
        )
        return error_response(state, request, 400, problems or "bad request")

    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(RequestValidationError, validation_error)


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Refuse (413) request bodies beyond a bound: ``SMALL_BODY`` for forms and JSON, the
    upload limit on the upload routes (which also stop at the archive's own limit)."""

    def __init__(
        self, app: ASGIApp, upload_bytes: int, refusal: Callable[[Scope, str], Response]
    ) -> None:
        self.app = app
        self.upload_bytes = upload_bytes
        self.refusal = refusal
        """The 413 answer (the site's error page, or JSON for the API)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["path"] in UPLOAD_PATHS
        limit = self.upload_bytes + MULTIPART_OVERHEAD if upload else SMALL_BODY
        reason = (
            too_large(self.upload_bytes).reason
            if upload
            else f"the request body is larger than {SMALL_BODY // 1024} KiB"
        )
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await _refuse(scope, send, self.refusal(scope, reason))
                    return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started:
                await _refuse(scope, send, self.refusal(scope, reason))


async def _refuse(scope: Scope, send: Send, response: Response) -> None:
    """Answer without reading the rest of the body."""

    async def nothing() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, nothing, send)


class SecurityHeaders:
    """CSP, no sniffing, no framing, no referrer leaks (a game page URL names its bots)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"same-origin"),
                ]
                if not scope["path"].startswith("/static/"):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
