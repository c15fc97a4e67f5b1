"""The public pages of ``arena serve`` made in a process of their own.

The page cache (:mod:`arena.server.pagecache`) answers visitors from kept pages, and a
landed game outdates the leaderboard and its bots' pages, so on a deadline night the
server remakes a dozen pages a second. Made on the server's route threads, each remake
held the interpreter lock for milliseconds at a time, and the event loop, which gives
the lock up at every socket call, waited behind it to take it back: under 1,000
requests/s it spent over a third of its time waiting for the lock, and the slowest
answers of the cache waited 100-300 ms (``arena bench serve``; docs/benchmarks.md).

A :class:`PageMaker` runs the same app (:func:`arena.server.app.create_app`, without the
page cache) in a child process with its own store connection, and makes the pages the
cache asks for there: the server's process keeps the lock for the answers. The child is
a fresh interpreter (``spawn``: nothing of the server's threads or connections is
inherited), reads the store only (the cache sends it GETs of public pages), and dies
with the server. If it cannot make a page (it died, it is starting again, it took longer
than :data:`MAKE_TIMEOUT_S`), the cache makes the page on the server as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Scope

from arena.errors import ArenaError
from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.store.competition import CompetitionStore

_log = logging.getLogger("arena.server")

MAKE_TIMEOUT_S = 30.0
"""Longest the cache waits for the child's page before making it on the server (the
child is then started again: a page that takes this long is a stuck child)."""
RESTART_PAUSE_S = 5.0
"""How long after the child failed the server makes its pages itself."""
SCOPE_KEYS = (
    "type",
    "asgi",
    "http_version",
    "method",
    "scheme",
    "path",
    "raw_path",
    "query_string",
    "root_path",
    "headers",
    "client",
    "server",
)
"""What of a request's ASGI scope reaches the child (plain data: it is pickled)."""

TRACKER_QUIET = "ignore:resource_tracker:UserWarning"
"""A ``-W`` option for multiprocessing's resource tracker (see :meth:`PageMaker.start`)."""

Answer = tuple[Message, bytes]
"""A page as the app answered it: its ``http.response.start`` message and its body."""


class PageMaker:
    """The server's side: :meth:`make` sends a request to the child and gives its answer,
    or None when the server should make the page itself."""

    def __init__(self, toml: Path, generation: Callable[[], int] = lambda: 0) -> None:
        """``generation``: the server's store generation (``CompetitionStore.generation``),
        read before each page is asked for: when it moved, the child's store takes it as a
        write of its own, so that no part of a page it derived before is reused."""
        self.toml = toml
        self.generation = generation
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._failed_at: float | None = None

    def start(self) -> None:
        """Start the child now, on the calling thread (the server's main thread: the
        child's parent-death signal follows the thread that started it), and let it
        build its app while the server starts."""
        if self._pool is not None:
            return
        if TRACKER_QUIET not in sys.warnoptions:
            # Passed on to the processes multiprocessing starts (its resource tracker
            # among them): after a kill -9 of the server the tracker removes the pool's
            # semaphores, which it would also report as a warning on the server's stderr.
            sys.warnoptions.append(TRACKER_QUIET)
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_child_start,
            initargs=(str(self.toml), os.getpid()),
        )
        try:
            self._pool.submit(_child_ready)
        except (OSError, RuntimeError) as error:  # no process to be had (a limit, memory)
            self._failed(error)

    async def make(self, scope: Scope) -> Answer | None:
        """The child's answer to the request of ``scope`` (a GET of a public page)."""
        if self._failed_at is not None:
            if time.monotonic() - self._failed_at < RESTART_PAUSE_S:
                return None
            self._failed_at = None
            self.start()
        pool = self._pool
        if pool is None:
            return None
        plain = {key: scope[key] for key in SCOPE_KEYS if key in scope}
        generation = self.generation()  # before the child reads the store
        try:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(pool, _child_make, plain, generation)
            return await asyncio.wait_for(future, MAKE_TIMEOUT_S)
        except Exception as error:  # it died, hangs, cannot start, or the pool is shut down
            if pool is self._pool:
                self._failed(error)
            return None

    def _failed(self, error: BaseException) -> None:
        reason = str(error) if isinstance(error, CannotMakePages) else type(error).__name__
        _log.error(
            "the page-making process failed (%s); the server makes its pages for %g s, "
            "then starts it again",
            reason,
            RESTART_PAUSE_S,
        )
        self._discard()
        self._failed_at = time.monotonic()

    def child_pid(self) -> int | None:
        """The child's process id, once it is up (None: it is not running)."""
        pool = self._pool
        if pool is None:
            return None
        try:
            return pool.submit(os.getpid).result(MAKE_TIMEOUT_S)
        except (BrokenProcessPool, TimeoutError, RuntimeError, OSError):
            return None

    def stop(self) -> None:
        """End the child (its page in hand, if any, is dropped)."""
        self._discard()

    def _discard(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # A stuck child does not end on its own: end it, then let the pool's threads go.
        for process in list(getattr(pool, "_processes", {}).values()):
            if process.is_alive():
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)


class CannotMakePages(ArenaError):
    """The child could not build its app (the store cannot be opened, ...): said in one
    line by the server, which makes its pages itself meanwhile."""


# ------------------------------------------------------------------ the child

_app: ASGIApp | None = None
_loop: asyncio.AbstractEventLoop | None = None
_store: CompetitionStore | None = None
_server_generation = 0
"""The server's store generation at the last page (see :class:`PageMaker`)."""
_start_error: str | None = None


def _child_start(toml: str, server_pid: int) -> None:
    """The child's start: die with the server, open the store, build the app. A failure
    is kept for the first request to report (the pool would print a traceback)."""
    global _app, _loop, _store, _start_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    try:
        from arena.competition.config import load_competition
        from arena.play.worker import die_with_parent
        from arena.server.app import ServerContext, create_app
        from arena.server.logs import configure_logging
        from arena.server.service import open_store

        die_with_parent(signal.SIGTERM, server_pid)
        config = load_competition(Path(toml))
        configure_logging(config.server.log_format)
        _store = open_store(config)
        _app = create_app(ServerContext(config, _store, config.data_dir), page_cache=False)
        _loop = asyncio.new_event_loop()
    except Exception as error:
        _start_error = f"{type(error).__name__}: {error}"


def _child_ready() -> bool:
    return _app is not None


def _child_make(scope: dict[str, Any], server_generation: int) -> Answer:
    """Run the app on one request and keep its answer."""
    global _server_generation
    if _app is None or _loop is None or _store is None:
        raise CannotMakePages(_start_error or "the page-making process did not start")
    if server_generation != _server_generation:
        _server_generation = server_generation
        _store.note_write_elsewhere()
    return _loop.run_until_complete(_answer(_app, {**scope, "state": {}}))


async def _answer(app: ASGIApp, scope: Scope) -> Answer:
    start: Message = {"type": "http.response.start", "status": 500, "headers": []}
    chunks: list[bytes] = []
    asked = False

    async def receive() -> Message:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # nobody disconnects: the app ends with its answer
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = dict(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    try:
        await app(scope, receive, send)
    except Exception:
        # The app answered 500 and raised again, for the server's log: log it here (as
        # uvicorn would) and pass the answer on.
        _log.exception("making the page %s failed", visible(scope["path"]))  # client-chosen
    return start, b"".join(chunks)
