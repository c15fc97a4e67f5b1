"""A cache of the public read pages of ``arena serve``, each invalidated when what it shows
changes.

On a deadline night hundreds of visitors refresh the same leaderboard, bot and game pages,
which change only when the store does (a game lands, a version is accepted). Each of those
pages costs milliseconds of queries and template work on a worker thread; a cached answer
costs a dictionary look-up on the event loop.

An entry is the whole answer (status, headers, body) of an anonymous GET, keyed by host
and path with its query, and valid while the store's stamp of the page's topics
(:func:`topics_of`: a game page shows one game, the leaderboard the results; the store
bumps a topic after each write transaction of this process that changed it, and every
topic on a write that did not say what it changes) is the one read before the page was
made, and for at most ``MAX_AGE_S`` (pages that depend on the clock, such as the phase's deadline,
and writes by another process such as ``arena`` commands run beside the server). Only
answers that set no cookie are kept, and only requests without a session cookie, an
``Authorization`` header or (for pages, whose forms need it) a missing CSRF cookie are
answered from the cache: a signed-in viewer always gets a page made for them. When many
visitors miss the same entry at once, one makes it and the others wait for it.

Stale while revalidate (RFC 5861): on a deadline night a game lands every second or so and
outdates the leaderboard and its bots' pages each time, so a strict cache mostly misses and
every miss holds a route thread for milliseconds. With ``stale_seconds`` > 0 an outdated
entry is still answered at once, and one background request makes the page anew (the
others keep getting the kept page meanwhile), but only for ``stale_seconds`` after the
entry became outdated: the moment it was made when the store changed (the change came
later), the end of ``MAX_AGE_S`` otherwise. Past that a visitor waits for the fresh page as
with ``stale_seconds`` = 0, which is the strict cache: never a page older than a write.
A page is made anew at most once per :data:`REFRESH_GAP_S` (half ``stale_seconds`` if
that is less; until then its outdated entry is answered without starting a refresh): every
landed game outdates every bot page (they show the ratings), and remaking them after each
game was most of the server's work besides the answers themselves (docs/benchmarks.md).
A kept answer says how old it is (``Age``) and keeps ``Cache-Control: no-store``, so that
no browser or proxy adds its own staleness to the bound.

Under ``arena serve`` the pages are made in a process of their own
(:mod:`arena.server.pagemaker`), so that making them never holds the server's interpreter
lock; the app here makes a page only when that process cannot.

The cache wraps the whole app, so a hit costs no routing and no middleware: the kept
answer already carries the headers the app's middleware added. ``arena serve``'s protocol
(:mod:`arena.server.guard`) goes further and answers what :meth:`PageCache.answer_at_once`
gives it before any ASGI call: the same bytes with no task, no framework and one write.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.server.auth import CSRF_COOKIE, SESSION_COOKIE
from arena.store.competition import GAMES, RESULTS, bot_topic, game_topic

log = logging.getLogger(__name__)

MAX_AGE_S = 1.0
"""Longest an entry is served (clock-dependent pages, other processes' writes)."""
REFRESH = "arena.page_refresh"
"""Scope key of the cache's own background requests: their answers reach no client (the
request counter leaves them out)."""
MAX_ENTRIES = 2048
"""Entries kept; when full, the cache starts over (keys are client-chosen paths)."""
REFRESH_GAP_S = 0.5
"""The least time between two background remakes of one page (at most half
``stale_seconds``, so that a remake still lands well within the bound)."""
CACHED = re.compile(
    r"/|/games|/bots/[^/]+|/games/[^/]+"
    r"|/api/(health|leaderboard|games|bots/[^/]+|games/[^/]+)"
)
"""Paths answered from the cache: the public pages and their JSON twins."""


def topics_of(path: str) -> tuple[str, ...]:
    """What the public page at ``path`` shows, as store topics (see
    :meth:`CompetitionStore.stamp`)."""
    api = path.removeprefix("/api")
    if api in ("/", "/leaderboard", "/health"):
        return (RESULTS,)
    if api == "/games":
        return (GAMES,)
    if api.startswith("/games/"):
        return (game_topic(api.removeprefix("/games/")),)
    return (bot_topic(api.removeprefix("/bots/")), RESULTS)  # its games, every rating


@dataclass(frozen=True)
class Entry:
    topics: tuple[str, ...]
    stamp: int
    made: float
    start: Message
    body: bytes

    def outdated_since(self, current: bool) -> float:
        """When this entry stopped being fresh (``current``: the store has not changed its
        topics since, so only its age can have outdated it)."""
        return self.made + MAX_AGE_S if current else self.made


def _cookies(scope: Scope) -> tuple[bool, bool]:
    """(has a session cookie, has a CSRF cookie), from the raw Cookie headers."""
    session = csrf = False
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            return True, csrf
        if key == b"cookie":
            text = value.decode("latin-1")
            session = session or f"{SESSION_COOKIE}=" in text
            csrf = csrf or f"{CSRF_COOKIE}=" in text
    return session, csrf


def cache_key(scope: Scope) -> tuple[str, str, bytes] | None:
    """The entry a request may be answered from, or None when it must reach the app."""
    if scope["type"] != "http" or scope["method"] != "GET":
        return None
    path: str = scope["path"]
    if not CACHED.fullmatch(path):
        return None
    signed_in, has_csrf = _cookies(scope)
    if signed_in or (not has_csrf and not path.startswith("/api/")):
        return None
    host = next((v for k, v in scope.get("headers", []) if k == b"host"), b"")
    return host.decode("latin-1"), path, scope.get("query_string", b"")


class PageCache:
    """ASGI middleware: anonymous GETs of :data:`CACHED` paths from the cache."""

    def __init__(
        self,
        app: ASGIApp,
        stamp: Callable[[Iterable[str]], int],
        *,
        stale_seconds: float,
        counted: Callable[[str], None] = lambda result: None,
        clock: Callable[[], float] = time.monotonic,
        built: Callable[[PageCache], None] = lambda cache: None,
        maker: Callable[[Scope], Awaitable[tuple[Message, bytes] | None]] | None = None,
        answered: Callable[[int], None] = lambda status: None,
    ) -> None:
        """``built`` is told of the new cache (the app's stack is made at its first call).
        ``maker`` makes a page elsewhere (:class:`arena.server.pagemaker.PageMaker`; None
        from it, or no maker: the app here makes it); ``answered`` is told the status of
        each visitor's page it made (the app's request counter did not see them)."""
        self.app = app
        self.maker = maker
        self.answered = answered
        self.stamp = stamp
        self.stale_seconds = stale_seconds
        """How long an outdated entry is still answered while it is made anew (0: never)."""
        self.refresh_gap = min(REFRESH_GAP_S, stale_seconds / 2)
        """An outdated entry younger than this is answered without a refresh."""
        self.counted = counted
        """Called with ``"hit"``, ``"stale"`` or ``"miss"`` for each cacheable request
        (metrics)."""
        self.clock = clock
        self.entries: dict[tuple[str, str, bytes], Entry] = {}
        self.making: dict[tuple[str, str, bytes], asyncio.Future[Entry | None]] = {}
        self.refreshes: set[asyncio.Task[None]] = set()
        """Background refreshes running (kept so that none is collected half-way)."""
        built(self)

    def look_up(self, key: tuple[str, str, bytes]) -> tuple[Entry | None, bool]:
        """(the entry to answer from, whether it is stale) or (None, False) for a miss."""
        entry = self.entries.get(key)
        if entry is None:
            return None, False
        now = self.clock()
        current = entry.stamp == self.stamp(entry.topics)
        if current and now - entry.made <= MAX_AGE_S:
            return entry, False
        if self.stale_seconds > 0 and now - entry.outdated_since(current) <= self.stale_seconds:
            return entry, True
        return None, False

    def _answerable(
        self, key: tuple[str, str, bytes], scope: Scope | None
    ) -> tuple[Entry | None, bool]:
        """(the entry to answer ``key`` with now, stale) or (None, False); a stale entry
        due for a remake starts its refresh as the visitor of ``scope`` (None: the caller
        has no ASGI scope, so such an entry is not answerable here)."""
        entry, stale = self.look_up(key)
        if entry is None or not stale:
            return entry, False
        if key not in self.making and self.clock() - entry.made >= self.refresh_gap:
            if scope is None:
                return None, False
            self._refresh(key, scope)
        return entry, True

    def answer_at_once(self, scope: Scope) -> Entry | None:
        """The kept entry that answers the request of ``scope`` (only its method, path,
        query string and headers are read) with no ASGI call: a hit, or a stale answer
        whose refresh needs no start; None means the request goes through the app.
        Counted as the app counts it."""
        key = cache_key(scope)
        if key is None:
            return None
        entry, stale = self._answerable(key, None)
        if entry is not None:
            self.counted("stale" if stale else "hit")
        return entry

    def headers_of(self, entry: Entry) -> list[tuple[bytes, bytes]]:
        """The response headers of a kept answer: the app's, then its ``Age`` (whole
        seconds since it was made, RFC 9111)."""
        age = str(int(max(0.0, self.clock() - entry.made))).encode()
        return [*entry.start.get("headers", []), (b"age", age)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = cache_key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        entry, stale = self._answerable(key, scope)
        if stale and entry is not None:
            self.counted("stale")
            await self._replay(entry, send)
            return
        if entry is None and key in self.making:
            entry = await asyncio.shield(self.making[key])
            if entry is not None and entry.stamp != self.stamp(entry.topics):
                entry = None  # made from a store that has changed since
        if entry is not None:
            self.counted("hit")
            await self._replay(entry, send)
            return
        self.counted("miss")
        await self._make(key, scope, receive, send)

    def _refresh(self, key: tuple[str, str, bytes], scope: Scope) -> None:
        """Make the page at ``key`` anew in the background, as the visitor of ``scope``."""
        done = asyncio.Event()

        async def request() -> Message:
            if not done.is_set():
                done.set()
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Event().wait()  # nobody disconnects: the task ends with the answer
            raise AssertionError("unreachable")

        async def dropped(message: Message) -> None:
            pass

        async def refresh() -> None:
            try:
                await self._make(key, {**scope, REFRESH: True}, request, dropped, waiting)
            except Exception:  # the app's own error handler has answered nobody: say it here
                log.exception("refreshing the kept page %s failed", key[1])

        waiting = self._waiting(key)  # now, so that the next stale visitor starts none
        task = asyncio.create_task(refresh())
        self.refreshes.add(task)
        task.add_done_callback(self.refreshes.discard)

    def _waiting(self, key: tuple[str, str, bytes]) -> asyncio.Future[Entry | None]:
        """The entry being made at ``key``, for the visitors who wait for it."""
        waiting: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        self.making.setdefault(key, waiting)
        return waiting

    async def _make(
        self,
        key: tuple[str, str, bytes],
        scope: Scope,
        receive: Receive,
        send: Send,
        waiting: asyncio.Future[Entry | None] | None = None,
    ) -> None:
        """Run the app, pass its answer on and keep it when it may be shared."""
        topics = topics_of(key[1])
        stamp = self.stamp(topics)  # before the app reads the store
        made = self.clock()
        if waiting is None:
            waiting = self._waiting(key)
        start: Message | None = None
        chunks: list[bytes] = []
        entry: Entry | None = None

        async def kept(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            await send(message)

        try:
            answer = await self.maker(scope) if self.maker is not None else None
            if answer is not None:
                start, body = answer
                await send(start)
                await send({"type": "http.response.body", "body": body, "more_body": False})
                if not scope.get(REFRESH):
                    self.answered(start["status"])
                chunks.append(body)
            else:
                await self.app(scope, receive, kept)
            if start is not None and _shareable(start):
                entry = Entry(topics, stamp, made, start, b"".join(chunks))
                if len(self.entries) >= MAX_ENTRIES:
                    self.entries.clear()
                self.entries[key] = entry
        finally:
            if self.making.get(key) is waiting:
                del self.making[key]
            if not waiting.done():
                waiting.set_result(entry)

    async def _replay(self, entry: Entry, send: Send) -> None:
        """The kept answer, with its ``Age``."""
        await send({**entry.start, "headers": self.headers_of(entry)})
        await send({"type": "http.response.body", "body": entry.body, "more_body": False})


def _shareable(start: Message) -> bool:
    """A 200 that sets no cookie (a cookie belongs to one browser)."""
    if start.get("status") != 200:
        return False
    return all(key.lower() != b"set-cookie" for key, _ in start.get("headers", []))
