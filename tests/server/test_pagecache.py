"""The page cache of ``arena serve``: public pages come from it until the store changes, and
never show a result older than the event that changed it (a game landing, a version
accepted); signed-in viewers always get their own page."""

from __future__ import annotations

import re
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


@pytest.mark.usefixtures("pages_outlive_the_clock")
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


@pytest.mark.usefixtures("pages_outlive_the_clock")
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


def _misses(site: Any) -> float:
    text = site.client.get("/metrics", headers=site.auth("org")).text
    found = re.search(r'^arena_page_cache_total\{result="miss"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def _made(site: Any, path: str) -> bool:
    """Whether GET ``path`` was made by the app (a miss) rather than answered from the
    cache."""
    before = _misses(site)
    assert site.client.get(path).status_code == 200, path
    return _misses(site) > before


def _three_bots(tmp_path: Path) -> tuple[Any, dict[str, int]]:
    """The site with a third bot, ``gamma``, that plays in none of the games below."""
    site = make_site(tmp_path)
    carol, site.tokens["carol"] = site.store.create_author("carol")
    activate(site.store, carol.id, "gamma")
    csrf_of(site.client)
    versions = {n: site.store.versions_of(n)[-1].id for n in ("alpha", "beta", "gamma")}
    return site, versions


@pytest.mark.usefixtures("pages_outlive_the_clock")
def test_a_game_changes_exactly_the_pages_that_show_it(tmp_path: Path) -> None:
    site, versions = _three_bots(tmp_path)
    old_game = site.games[0]
    watched = [
        "/",
        "/api/leaderboard",
        "/api/health",
        "/games",
        "/api/games",
        "/bots/alpha",
        "/api/bots/gamma",
        f"/games/{old_game}",
        f"/api/games/{old_game}",
    ]
    for path in watched:
        site.client.get(path)
    assert not any(_made(site, path) for path in watched)  # all cached now

    game = site.store.schedule_game(
        kind="ladder",
        players=2,
        variant="coloured",
        seed=11,
        version_ids=[versions["alpha"], versions["beta"]],
        rated=True,
    )
    # scheduled: the lists of games and alpha's games change; no result does
    made = {path: _made(site, path) for path in watched}
    assert made == {
        "/": False,
        "/api/leaderboard": False,
        "/api/health": False,
        "/games": True,
        "/api/games": True,
        "/bots/alpha": True,
        "/api/bots/gamma": False,
        f"/games/{old_game}": False,
        f"/api/games/{old_game}": False,
    }
    assert site.client.get(f"/api/games/{game.id}").json()["game"]["status"] == "scheduled"

    claimed = site.store.claim_scheduled_game()
    assert claimed is not None and claimed.id == game.id
    assert site.client.get(f"/api/games/{game.id}").json()["game"]["status"] == "running"
    assert not _made(site, f"/api/games/{old_game}")


def test_a_landed_game_is_never_shown_stale(tmp_path: Path) -> None:
    site, versions = _three_bots(tmp_path)
    before = {
        path: site.client.get(path).json()
        for path in ("/api/health", "/api/leaderboard", "/api/bots/gamma", "/api/bots/alpha")
    }
    game = play(site.store, [versions["alpha"], versions["beta"]], ["alpha", "beta"], 5)
    assert site.client.get(f"/api/games/{game}").json()["game"]["status"] == "finished"
    assert site.client.get("/api/health").json()["games_finished"] == (
        before["/api/health"]["games_finished"] + 1
    )
    board = site.client.get("/api/leaderboard").json()
    assert board["games_finished"] == before["/api/leaderboard"]["games_finished"] + 1
    alpha = site.client.get("/api/bots/alpha").json()
    assert alpha["leaderboard"]["games"] == before["/api/bots/alpha"]["leaderboard"]["games"] + 1
    assert game in {g["id"] for g in alpha["recent_games"]}
    # gamma played no game, but its rank among the others' new ratings is shown fresh
    gamma = site.client.get("/api/bots/gamma").json()
    ranks = {row["bot_name"]: row["rank"] for row in board["rows"]}
    assert gamma["leaderboard"]["rank"] == ranks["gamma"]


def test_writes_that_do_not_say_what_they_change_empty_every_page(tmp_path: Path) -> None:
    site, _ = _three_bots(tmp_path)
    paths = ["/api/health", f"/api/games/{site.games[0]}", "/api/bots/gamma"]
    for path in paths:
        site.client.get(path)
    site.store.set_paused(True)
    assert all(_made(site, path) for path in paths)
    assert site.client.get("/api/health").json()["paused"] is True


def test_topics_of_pages() -> None:
    from arena.server.pagecache import topics_of
    from arena.store.competition import GAMES, RESULTS, bot_topic, game_topic

    assert topics_of("/") == topics_of("/api/leaderboard") == (RESULTS,)
    assert topics_of("/games") == topics_of("/api/games") == (GAMES,)
    assert topics_of("/games/abc") == topics_of("/api/games/abc") == (game_topic("abc"),)
    assert topics_of("/bots/x y") == (bot_topic("x y"), RESULTS)
