"""The page cache's pages made in a process of their own (``arena.server.pagemaker``):
the same bytes as the server's own app, the server making them itself while the process
cannot, a dead process replaced, and no process left once the server is gone."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Scope

from arena.competition.config import STORE_FILE, load_competition
from arena.server import pagemaker
from arena.server.app import ServerContext, create_app
from arena.server.pagecache import REFRESH, PageCache
from arena.server.pagemaker import PageMaker
from arena.store.competition import CompetitionStore, sqlite_url
from tests.server.procs import alive
from tests.server.test_pagecache_stale import Clock, Store, _get, _refreshed
from tests.server.web_helpers import activate, play

PATIENCE_S = 30.0
"""How long a test waits for a process to start or to end."""


def _wait_for(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _scope(path: str) -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


@pytest.fixture
def competition(tmp_path: Path) -> Iterator[Path]:
    """A competition.toml whose store holds two bots and a game between them."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    toml = tmp_path / "competition.toml"
    toml.write_text(f'[competition]\nname = "maker"\ndata_dir = "{data_dir}"\n')
    store = CompetitionStore.open(sqlite_url(data_dir / STORE_FILE))
    alice, _ = store.create_author("alice")
    bob, _ = store.create_author("bob")
    versions = [activate(store, alice.id, "alpha"), activate(store, bob.id, "beta")]
    play(store, versions, ["alpha", "beta"], seed=3)
    store.close()
    yield toml


def _pages_here(toml: Path, paths: list[str]) -> dict[str, tuple[int, bytes]]:
    """The same pages from the app in this process (as the server made them before)."""
    config = load_competition(toml)
    store = CompetitionStore.open(config.store_url)
    try:
        app = create_app(ServerContext(config, store, config.data_dir), page_cache=False)
        pages = {}
        with TestClient(app, base_url="http://testserver") as client:
            for path in paths:
                answer = client.get(path)
                pages[path] = (answer.status_code, answer.content)
        return pages
    finally:
        store.close()


@pytest.mark.slow
def test_the_child_makes_the_same_pages_as_the_server(competition: Path) -> None:
    paths = ["/api/leaderboard", "/api/bots/alpha", "/api/games"]
    maker = PageMaker(competition)
    maker.start()
    try:
        child = maker.child_pid()
        assert child is not None and child != os.getpid()

        async def made() -> dict[str, tuple[int, bytes]]:
            answers = {p: await maker.make(_scope(p)) for p in paths}
            return {p: (a[0]["status"], a[1]) for p, a in answers.items() if a is not None}

        there = asyncio.run(made())
    finally:
        maker.stop()
    here = _pages_here(competition, paths)
    assert there == here
    assert all(status == 200 for status, _ in there.values())
    assert b"alpha" in there["/api/bots/alpha"][1]
    _wait_for("the stopped child to end", lambda: not alive(child))


@pytest.mark.slow
def test_a_write_of_the_server_reaches_the_next_page_at_once(competition: Path) -> None:
    """The child keeps parts of bot pages while its store's stamps say nothing changed; the
    server's writes are not its own, so the server's generation, sent with each page,
    tells it: the page made after a new version is accepted lists it."""
    config = load_competition(competition)
    server_store = CompetitionStore.open(config.store_url)
    maker = PageMaker(competition, lambda: server_store.generation)
    maker.start()
    try:

        async def versions() -> int:
            answer = await maker.make(_scope("/api/bots/alpha"))
            assert answer is not None and answer[0]["status"] == 200
            return len(json.loads(answer[1])["versions"])

        assert asyncio.run(versions()) == 1
        alice = server_store.author_by_name("alice")
        assert alice is not None
        activate(server_store, alice.id, "alpha")  # a second version, accepted
        assert asyncio.run(versions()) == 2
    finally:
        maker.stop()
        server_store.close()


@pytest.mark.slow
def test_a_dead_child_is_replaced_and_the_server_makes_pages_meanwhile(
    competition: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pagemaker, "RESTART_PAUSE_S", 3600.0)  # no restart until told
    maker = PageMaker(competition)
    maker.start()
    try:
        first = maker.child_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        _wait_for("the killed child to end", lambda: not alive(first))
        assert asyncio.run(maker.make(_scope("/api/leaderboard"))) is None
        assert "the page-making process failed" in caplog.text
        # within the pause the server makes its pages itself, without asking again
        assert asyncio.run(maker.make(_scope("/api/leaderboard"))) is None
        monkeypatch.setattr(pagemaker, "RESTART_PAUSE_S", 0.0)
        answer = asyncio.run(maker.make(_scope("/api/leaderboard")))
        assert answer is not None and answer[0]["status"] == 200
        second = maker.child_pid()
        assert second is not None and second != first
    finally:
        maker.stop()
    _wait_for("the stopped child to end", lambda: not alive(second))


@pytest.mark.slow
def test_a_child_that_cannot_open_the_store_is_one_line_and_the_server_makes_pages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / STORE_FILE).write_bytes(b"this is not a database\n" * 100)
    toml = tmp_path / "competition.toml"
    toml.write_text(f'[competition]\nname = "damaged"\ndata_dir = "{data_dir}"\n')
    maker = PageMaker(toml)
    maker.start()
    try:
        assert asyncio.run(maker.make(_scope("/api/leaderboard"))) is None
    finally:
        maker.stop()
    failures = [r.getMessage() for r in caplog.records if "page-making" in r.getMessage()]
    assert len(failures) == 1
    assert "not a database" in failures[0] or "damaged" in failures[0], failures[0]
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
def test_the_child_dies_with_the_server(competition: Path) -> None:
    """``kill -9`` of the server leaves no page-making process behind."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from arena.server.pagemaker import PageMaker
        maker = PageMaker(Path({str(competition)!r}))
        maker.start()
        print(maker.child_pid(), flush=True)
        time.sleep(600)
        """
    )
    server = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        child = int(server.stdout.readline())
        assert alive(child)
    finally:
        server.kill()
    # the pipes end once every process holding them has (the child, the resource tracker)
    _, stderr = server.communicate(timeout=PATIENCE_S)
    assert not alive(child)
    assert "Warning" not in stderr and "Traceback" not in stderr, stderr


# ------------------------------------------------------------ the cache with a maker


class Maker:
    """A page maker that answers from its own text (or not at all, when ``down``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.asked: list[str] = []
        self.down = False
        self.status = 200

    async def make(self, scope: Scope) -> tuple[Message, bytes] | None:
        self.asked.append(scope["path"])
        assert REFRESH not in scope or scope[REFRESH] is True
        if self.down:
            return None
        start = {"type": "http.response.start", "status": self.status, "headers": []}
        return start, f"made elsewhere: {scope['path']} at {self.store.generation}".encode()


def _cache_with(store: Store, maker: Maker) -> tuple[PageCache, list[str], list[int]]:
    counts: list[str] = []
    answered: list[int] = []
    cache = PageCache(
        store.app,
        store.stamp,
        stale_seconds=1.0,
        counted=counts.append,
        clock=Clock(),
        maker=maker.make,
        answered=answered.append,
    )
    return cache, counts, answered


def test_misses_and_refreshes_are_made_by_the_maker_not_the_app() -> None:
    async def scenario() -> None:
        store = Store()
        maker = Maker(store)
        cache, counts, answered = _cache_with(store, maker)
        assert (await _get(cache))[0] == "made elsewhere: /api/leaderboard at 0"
        store.generation = 1
        cache.clock.now += 0.5  # type: ignore[attr-defined]
        assert (await _get(cache))[0] == "made elsewhere: /api/leaderboard at 0"  # stale
        await _refreshed(cache)
        assert (await _get(cache))[0] == "made elsewhere: /api/leaderboard at 1"
        assert store.made == []  # the app made nothing
        assert maker.asked == ["/api/leaderboard", "/api/leaderboard"]
        assert counts == ["miss", "stale", "hit"]
        assert answered == [200]  # the visitor's page, not the refresh

    asyncio.run(scenario())


def test_without_the_maker_the_app_makes_the_page() -> None:
    async def scenario() -> None:
        store = Store()
        maker = Maker(store)
        maker.down = True
        cache, counts, answered = _cache_with(store, maker)
        assert (await _get(cache))[0] == "/api/leaderboard at 0"
        assert store.made == ["/api/leaderboard at 0"]
        assert answered == []  # the app's own request counter saw it
        maker.down = False
        assert (await _get(cache))[0] == "/api/leaderboard at 0"  # kept: a hit
        assert counts == ["miss", "hit"]

    asyncio.run(scenario())


def test_a_failed_page_from_the_maker_reaches_the_visitor_and_is_not_kept() -> None:
    async def scenario() -> None:
        store = Store()
        maker = Maker(store)
        maker.status = 500
        cache, counts, answered = _cache_with(store, maker)
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            sent.append(message)

        scope: dict[str, Any] = {
            "type": "http",
            "method": "GET",
            "path": "/api/leaderboard",
            "query_string": b"",
            "headers": [(b"host", b"arena.test")],
        }
        await cache(scope, receive, send)
        assert sent[0]["status"] == 500
        assert cache.entries == {}
        assert answered == [500]
        maker.status = 200
        assert (await _get(cache))[0] == "made elsewhere: /api/leaderboard at 0"
        assert counts == ["miss", "miss"]

    asyncio.run(scenario())


def test_a_failing_page_is_passed_on_and_its_client_chosen_path_logged_visibly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"oops"})
        raise RuntimeError("the app's bug")

    start, body = asyncio.run(pagemaker._answer(app, _scope("/bots/\x1b[2Jevil")))
    assert (start["status"], body) == (500, b"oops")
    logged = [r.getMessage() for r in caplog.records if "making the page" in r.getMessage()]
    assert len(logged) == 1 and "\x1b" not in logged[0]
