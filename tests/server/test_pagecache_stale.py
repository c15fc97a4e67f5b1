"""Stale while revalidate in the page cache: an outdated page is answered at once while ONE
background request makes it anew, never longer than ``stale_seconds`` after it was outdated,
and ``stale_seconds = 0`` is the strict cache. The clock is driven by the tests (no timing)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from arena.server.pagecache import MAX_AGE_S, PageCache, cache_key
from tests.server.web_helpers import csrf_of, make_site, play

PATIENCE_S = 30.0
"""How long a test waits for a background refresh on the real clock (it needs 0.5 s)."""


class Store:
    """The store's generation, bumped by each write, and a page per generation."""

    def __init__(self) -> None:
        self.generation = 0
        self.made: list[str] = []
        """Each page the app made, in order (the path and the generation it showed)."""
        self.gate: asyncio.Event | None = None
        """When set: the app waits for it before answering (a page that takes a while)."""

    def stamp(self, topics: Iterable[str]) -> int:
        return self.generation

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = f"{scope['path']} at {self.generation}"
        self.made.append(body)
        if self.gate is not None:
            await self.gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body.encode()})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _scope(
    path: str = "/api/leaderboard", headers: list[tuple[bytes, bytes]] | None = None
) -> Scope:
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"arena.test"), *(headers or [])],
    }


async def _get(cache: PageCache, path: str = "/api/leaderboard") -> tuple[str, dict[str, str]]:
    """GET ``path`` through the cache: (body, headers)."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await cache(_scope(path), receive, send)
    headers = {k.decode(): v.decode() for k, v in sent[0].get("headers", [])}
    return b"".join(m.get("body", b"") for m in sent[1:]).decode(), headers


def _cache(store: Store, clock: Clock, stale_seconds: float) -> tuple[PageCache, list[str]]:
    counts: list[str] = []
    cache = PageCache(
        store.app, store.stamp, stale_seconds=stale_seconds, counted=counts.append, clock=clock
    )
    return cache, counts


async def _refreshed(cache: PageCache) -> None:
    """Until every background refresh has ended."""
    while cache.refreshes:
        await asyncio.gather(*cache.refreshes)


def test_a_stale_page_is_answered_within_the_bound_and_replaced_after_the_refresh() -> None:
    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=1.0)
        assert (await _get(cache))[0] == "/api/leaderboard at 0"
        store.generation = 1  # a game landed
        clock.now += 0.5  # the page is as old as the least gap between two remakes
        store.gate = asyncio.Event()  # the refresh takes a while
        body, headers = await _get(cache)
        assert body == "/api/leaderboard at 0"  # at once, not waiting for the new page
        assert headers["age"] == "0"
        await asyncio.sleep(0)  # the refresh starts and waits on the gate
        assert store.made == ["/api/leaderboard at 0", "/api/leaderboard at 1"]
        clock.now += 0.4  # 0.9 s after the page was made, the change came later
        assert (await _get(cache))[0] == "/api/leaderboard at 0"
        store.gate.set()
        await _refreshed(cache)
        store.gate = None
        body, headers = await _get(cache)
        assert body == "/api/leaderboard at 1"
        assert headers["age"] == "0"
        assert counts == ["miss", "stale", "stale", "hit"]
        assert len(store.made) == 2  # the refresh made the new page, no visitor did

    asyncio.run(scenario())


def test_past_the_bound_the_visitor_waits_for_the_fresh_page() -> None:
    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=1.0)
        await _get(cache)
        store.generation = 1
        clock.now += 1.01  # the change came after the page was made: more than 1 s ago
        assert (await _get(cache))[0] == "/api/leaderboard at 1"
        assert counts == ["miss", "miss"]

    asyncio.run(scenario())


def test_a_page_past_its_age_is_stale_for_the_bound_past_it() -> None:
    """Without a write, an entry is outdated by its age (clock-dependent pages, writes of
    other processes): it is answered stale for ``stale_seconds`` past ``MAX_AGE_S``."""

    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=1.0)
        await _get(cache)
        clock.now += MAX_AGE_S + 0.5
        body, headers = await _get(cache)
        assert (body, headers["age"]) == ("/api/leaderboard at 0", "1")
        await _refreshed(cache)
        clock.now += MAX_AGE_S + 1.01  # the refreshed page, too old and past the bound
        store.generation = 2
        assert (await _get(cache))[0] == "/api/leaderboard at 2"
        assert counts == ["miss", "stale", "miss"]

    asyncio.run(scenario())


def test_one_refresh_per_change_under_concurrent_visitors() -> None:
    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=1.0)
        pages = ("/api/leaderboard", "/api/bots/alpha")
        for path in pages:
            await _get(cache, path)
        for change in (1, 2):
            store.generation = change
            clock.now += 0.5
            store.gate = asyncio.Event()
            answers = await asyncio.gather(*(_get(cache, p) for p in pages * 25))
            assert {body for body, _ in answers} == {f"{p} at {change - 1}" for p in pages}
            store.gate.set()
            await _refreshed(cache)
            store.gate = None
            answers = await asyncio.gather(*(_get(cache, p) for p in pages * 25))
            assert {body for body, _ in answers} == {f"{p} at {change}" for p in pages}
        assert sorted(store.made) == sorted(f"{p} at {g}" for p in pages for g in (0, 1, 2))
        assert counts.count("miss") == 2  # only the first visit of each page waited

    asyncio.run(scenario())


def test_a_page_is_made_anew_at_most_once_per_gap() -> None:
    """Games landing every 0.1 s: the kept page is answered (stale) without a remake until
    it is half ``stale_seconds`` old, then one refresh makes it."""

    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=1.0)
        await _get(cache)
        for change in range(1, 5):  # 0.1 to 0.4 s after the page was made
            store.generation = change
            clock.now += 0.1
            assert (await _get(cache))[0] == "/api/leaderboard at 0"
            assert not cache.refreshes
        store.generation = 5
        clock.now += 0.11  # 0.51 s: the gap has passed
        assert (await _get(cache))[0] == "/api/leaderboard at 0"
        await _refreshed(cache)
        assert (await _get(cache))[0] == "/api/leaderboard at 5"
        assert store.made == ["/api/leaderboard at 0", "/api/leaderboard at 5"]
        assert counts == ["miss", *["stale"] * 5, "hit"]

    asyncio.run(scenario())


def test_visitors_past_the_bound_wait_for_the_refresh_under_way() -> None:
    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, _ = _cache(store, clock, stale_seconds=1.0)
        await _get(cache)
        store.generation = 1
        clock.now += 0.5
        store.gate = asyncio.Event()
        await _get(cache)  # stale, the refresh starts
        await asyncio.sleep(0)
        clock.now += 0.6  # past the bound while the refresh is still making the page
        waiting = asyncio.gather(*(_get(cache) for _ in range(10)))
        await asyncio.sleep(0)
        store.gate.set()
        assert {body for body, _ in await waiting} == {"/api/leaderboard at 1"}
        assert len(store.made) == 2

    asyncio.run(scenario())


def test_strict_cache_never_answers_a_page_older_than_a_write() -> None:
    async def scenario() -> None:
        store, clock = Store(), Clock()
        cache, counts = _cache(store, clock, stale_seconds=0)
        await _get(cache)
        assert (await _get(cache))[0] == "/api/leaderboard at 0"
        store.generation = 1  # at the same instant: still never the old page
        assert (await _get(cache))[0] == "/api/leaderboard at 1"
        clock.now += MAX_AGE_S + 0.01
        store.generation = 1
        assert (await _get(cache))[0] == "/api/leaderboard at 1"
        assert counts == ["miss", "hit", "miss", "miss"]
        assert not cache.refreshes

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "path, headers",
    [
        ("/me", [(b"cookie", b"arena_csrf=x")]),
        ("/api/me", []),
        ("/admin", [(b"cookie", b"arena_csrf=x")]),
        ("/admin/balance", [(b"cookie", b"arena_csrf=x")]),
        ("/submit", [(b"cookie", b"arena_csrf=x")]),
        ("/metrics", []),
        ("/api/leaderboard", [(b"authorization", b"Bearer t")]),
        ("/bots/alpha", [(b"cookie", b"arena_csrf=x; arena_session=s")]),
    ],
)
def test_authenticated_pages_are_never_cached(
    path: str, headers: list[tuple[bytes, bytes]]
) -> None:
    assert cache_key(_scope(path, headers)) is None


def test_the_server_answers_stale_pages_for_its_setting(tmp_path: Path) -> None:
    """``[server] stale_seconds`` reaches the app's cache: after a landed game the first
    visitor gets the kept page, with its age, and a later one the fresh page."""
    site = make_site(tmp_path, stale_seconds=60)
    with TestClient(site.client.app, base_url="http://testserver") as client:
        csrf_of(client)
        before = client.get("/api/health").json()["games_finished"]
        alpha, beta = (site.store.versions_of(n)[-1].id for n in ("alpha", "beta"))
        play(site.store, [alpha, beta], ["alpha", "beta"], 9)
        stale = client.get("/api/health")
        assert stale.json()["games_finished"] == before
        assert int(stale.headers["age"]) >= 0  # whole seconds since it was made
        assert stale.headers["cache-control"] == "no-store"
        deadline = time.monotonic() + PATIENCE_S  # the first refresh waits REFRESH_GAP_S
        while client.get("/api/health").json()["games_finished"] != before + 1:
            assert time.monotonic() < deadline, "the kept page was never made anew"
            time.sleep(0.02)  # the refresh runs on the server's loop meanwhile
        metrics = client.get("/metrics", headers=site.auth("org")).text
        assert 'arena_page_cache_total{result="stale"}' in metrics


def _get_200s(client: TestClient, site: Any) -> float:
    text = client.get("/metrics", headers=site.auth("org")).text
    found = re.search(r'^arena_http_requests_total\{method="GET",status="200"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_background_refreshes_are_not_counted_as_requests(tmp_path: Path) -> None:
    """The request counter counts answers to clients: a stale answer once, the refresh it
    started never (its answer reaches nobody)."""
    site = make_site(tmp_path, stale_seconds=60)
    with TestClient(site.client.app, base_url="http://testserver") as client:
        before_games = client.get("/api/health").json()["games_finished"]
        alpha, beta = (site.store.versions_of(n)[-1].id for n in ("alpha", "beta"))
        play(site.store, [alpha, beta], ["alpha", "beta"], 9)
        before = _get_200s(client, site)
        visits = 0
        deadline = time.monotonic() + PATIENCE_S
        while True:  # stale answers until a visit past the gap started the refresh and it landed
            visits += 1
            if client.get("/api/health").json()["games_finished"] == before_games + 1:
                break
            assert time.monotonic() < deadline, "the kept page was never made anew"
            time.sleep(0.02)
        assert _get_200s(client, site) - before == visits + 1  # + the first /metrics read
