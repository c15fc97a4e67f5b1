"""The page cache of ``arena serve``: public pages come from it until the store changes, and
never show a result older than the event that changed it (a game landing, a version
accepted); signed-in viewers always get their own page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.web_helpers import activate, csrf_of, make_site, play

PUBLIC = (
    "/",
    "/games",
    "/bots/alpha",
    "/api/health",
    "/api/leaderboard",
    "/api/games",
    "/api/bots/alpha",
)


def _store_unreadable(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every page that reads the store fail: only a cached answer still succeeds."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the store was read")

    for name in ("leaderboard", "games", "games_finished", "bot", "game"):
        monkeypatch.setattr(site.store, name, refuse)


def test_public_pages_are_served_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = make_site(tmp_path)
    csrf_of(site.client)  # a browser that has been here before
    paths = [*PUBLIC, f"/games/{site.games[0]}", f"/api/games/{site.games[0]}"]
    first = {path: site.client.get(path) for path in paths}
    assert all(r.status_code == 200 for r in first.values())
    with monkeypatch.context() as patch:
        _store_unreadable(site, patch)
        again = {path: site.client.get(path) for path in paths}
    for path in paths:
        assert again[path].status_code == 200, path
        assert again[path].content == first[path].content, path
        assert again[path].headers["content-security-policy"]  # security headers still added


def test_a_finished_game_shows_at_once(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    csrf_of(site.client)
    before = {path: site.client.get(path) for path in PUBLIC}
    assert before["/api/health"].json()["games_finished"] == 2
    alpha, beta = (site.store.bot(name) for name in ("alpha", "beta"))
    assert alpha is not None and beta is not None
    versions = [site.store.versions_of(name)[-1].id for name in ("alpha", "beta")]
    game = play(site.store, versions, ["alpha", "beta"], 7)

    assert site.client.get("/api/health").json()["games_finished"] == 3
    assert site.client.get("/api/leaderboard").json()["games_finished"] == 3
    assert game in {g["id"] for g in site.client.get("/api/games").json()["games"]}
    assert game in {g["id"] for g in site.client.get("/api/bots/alpha").json()["recent_games"]}
    for page in ("/games", "/bots/alpha"):
        assert game in site.client.get(page).text, page
    assert site.client.get("/").text != before["/"].text


def test_an_accepted_version_shows_at_once(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    csrf_of(site.client)
    before = site.client.get("/api/bots/alpha").json()
    page = site.client.get("/bots/alpha").text
    alpha = site.store.bot("alpha")
    assert alpha is not None
    activate(site.store, alpha.author_id, "alpha")
    after = site.client.get("/api/bots/alpha").json()
    assert len(after["versions"]) == len(before["versions"]) + 1
    assert site.client.get("/bots/alpha").text != page


def test_signed_in_viewers_get_their_own_page(tmp_path: Path) -> None:
    """The public's cached bot page must not reach the owner, nor the owner's the public."""
    site = make_site(tmp_path)
    csrf_of(site.client)
    public = site.client.get("/bots/alpha").text
    assert "build log of alpha" not in public
    site.sign_in("alice")
    own = site.client.get("/bots/alpha").text
    assert "Sign out" in own
    own_api = site.client.get("/api/bots/alpha", headers=site.auth("alice")).json()
    assert own_api["versions"][0]["build_log_available"]
    site.client.cookies.delete("arena_session")
    assert site.client.get("/bots/alpha").text == public
    anonymous = site.client.get("/api/bots/alpha").json()
    assert not anonymous["versions"][0]["build_log_available"]


def test_a_new_browser_still_gets_its_csrf_cookie(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    csrf_of(site.client)
    site.client.get("/")  # cached for browsers that have a CSRF cookie
    site.client.cookies.clear()
    reply = site.client.get("/")
    assert reply.status_code == 200
    assert "arena_csrf" in reply.cookies


def test_only_writes_that_change_rows_move_the_generation(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    store = site.store
    generation = store.generation
    assert store.claim_queued_version() is None  # the builder polling: nothing to do
    assert store.claim_scheduled_game() is None  # the ladder polling
    assert store.generation == generation
    store.set_paused(True)
    assert store.generation > generation


def test_metrics_count_hits_and_misses(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    csrf_of(site.client)
    for _ in range(3):
        site.client.get("/api/leaderboard")
    site.client.get("/api/leaderboard", headers=site.auth("alice"))  # never cached
    text = site.client.get("/metrics", headers=site.auth("org")).text
    assert 'arena_page_cache_total{result="miss"} 1.0' in text
    assert 'arena_page_cache_total{result="hit"} 2.0' in text


def test_a_page_reads_the_store_in_one_transaction(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from arena.server import views

    site = make_site(tmp_path)
    begun: list[object] = []
    sa.event.listen(site.store.engine, "begin", begun.append)
    assert views.bot_page(site.store, "alpha", None) is not None
    assert views.game_page(site.store, site.games[0], None) is not None
    assert len(begun) == 2  # each makes many reads: bot, versions, games, faults, ...
    site.store.bot("alpha")
    site.store.bot("beta")
    assert len(begun) == 4  # outside a page, a read is its own transaction
