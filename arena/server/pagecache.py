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

The cache wraps the whole app, so a hit costs no routing and no middleware: the kept
answer already carries the headers the app's middleware added.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.server.auth import CSRF_COOKIE, SESSION_COOKIE
from arena.store.competition import GAMES, RESULTS, bot_topic, game_topic

MAX_AGE_S = 1.0
"""Longest an entry is served (clock-dependent pages, other processes' writes)."""
MAX_ENTRIES = 2048
"""Entries kept; when full, the cache starts over (keys are client-chosen paths)."""
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
        counted: Callable[[str], None] = lambda result: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.stamp = stamp
        self.counted = counted
        """Called with ``"hit"`` or ``"miss"`` for each cacheable request (metrics)."""
        self.clock = clock
        self.entries: dict[tuple[str, str, bytes], Entry] = {}
        self.making: dict[tuple[str, str, bytes], asyncio.Future[Entry | None]] = {}

    def fresh(self, key: tuple[str, str, bytes]) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        if entry.stamp != self.stamp(entry.topics) or self.clock() - entry.made > MAX_AGE_S:
            return None
        return entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = cache_key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        entry = self.fresh(key)
        if entry is None and key in self.making:
            entry = await asyncio.shield(self.making[key])
            if entry is not None and entry.stamp != self.stamp(entry.topics):
                entry = None  # made from a store that has changed since
        if entry is not None:
            self.counted("hit")
            await _replay(entry, send)
            return
        self.counted("miss")
        await self._make(key, scope, receive, send)

    async def _make(
        self, key: tuple[str, str, bytes], scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Run the app, pass its answer on and keep it when it may be shared."""
        topics = topics_of(key[1])
        stamp = self.stamp(topics)  # before the app reads the store
        made = self.clock()
        waiting: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        self.making.setdefault(key, waiting)
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


def _shareable(start: Message) -> bool:
    """A 200 that sets no cookie (a cookie belongs to one browser)."""
    if start.get("status") != 200:
        return False
    return all(key.lower() != b"set-cookie" for key, _ in start.get("headers", []))


async def _replay(entry: Entry, send: Send) -> None:
    await send(entry.start)
    await send({"type": "http.response.body", "body": entry.body, "more_body": False})
