"""A bot page is made of parts kept apart, each remade only when what it shows changes: a
game of other bots remakes none of them (only the leaderboard row moves), a game of the
bot scheduled remakes its list of games, one finished its ratings and head-to-head, one
with a fault its faults. Every figure stays the one a fresh count gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from arena.server import views
from tests.server.web_helpers import activate, make_site, play

PARTS = ("bot", "versions_of", "rating_history", "head_to_head", "games", "faults_by_kind")


def _counting(store: Any, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the calls of each store method a bot page's parts are made from."""
    calls: Counter[str] = Counter()
    for name in PARTS:
        method = getattr(store, name)

        def counted(*args: Any, _name: str = name, _method: Any = method, **kw: Any) -> Any:
            calls[_name] += 1
            return _method(*args, **kw)

        monkeypatch.setattr(store, name, counted)
    return calls


def _site(tmp_path: Path) -> tuple[Any, dict[str, int]]:
    site = make_site(tmp_path)
    carol, _ = site.store.create_author("carol")
    activate(site.store, carol.id, "gamma")
    return site, {n: site.store.versions_of(n)[-1].id for n in ("alpha", "beta", "gamma")}


def _fresh(store: Any, name: str) -> dict[str, Any]:
    """The bot page's data read again from the store, no part kept."""
    views._parts.pop(store, None)
    return views.bot_page(store, name, None).api()  # type: ignore[union-attr]


def test_a_game_of_other_bots_remakes_no_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, v = _site(tmp_path)
    store = site.store
    views.bot_page(store, "gamma", None)
    calls = _counting(store, monkeypatch)
    board = views.bot_page(store, "gamma", None)
    assert board is not None and not calls  # nothing changed: every part kept
    play(store, [v["alpha"], v["beta"]], ["alpha", "beta"], 7)
    page = views.bot_page(store, "gamma", None)
    assert page is not None and not calls
    assert page.api() == _fresh(store, "gamma")  # its rank among the new ratings included


def test_each_part_is_remade_when_what_it_shows_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, v = _site(tmp_path)
    store = site.store
    views.bot_page(store, "alpha", None)
    calls = _counting(store, monkeypatch)

    store.schedule_game(
        kind="ladder",
        players=2,
        variant="coloured",
        seed=3,
        version_ids=[v["alpha"], v["gamma"]],
        rated=True,
    )
    page = views.bot_page(store, "alpha", None)
    assert page is not None
    assert calls == Counter({"bot": 1, "versions_of": 1, "games": 1})  # a game scheduled
    assert page.api() == _fresh(store, "alpha")

    calls.clear()
    views.bot_page(store, "alpha", None)
    store.claim_scheduled_game()
    play(store, [v["alpha"], v["beta"]], ["alpha", "beta"], 8, faulted=False)
    calls.clear()
    page = views.bot_page(store, "alpha", None)
    assert page is not None
    assert calls["faults_by_kind"] == 0  # no fault in that game
    assert calls["rating_history"] >= 1 and calls["head_to_head"] == 1
    assert page.api() == _fresh(store, "alpha")

    calls.clear()
    before = len(page.faults)
    play(store, [v["alpha"], v["beta"]], ["alpha", "beta"], 9)  # seat 1 (beta) times out
    page = views.bot_page(store, "beta", None)
    assert page is not None and calls["faults_by_kind"] == 1
    assert page.api() == _fresh(store, "beta")
    assert len(views.bot_page(store, "alpha", None).faults) == before  # type: ignore[union-attr]


def test_an_undeclared_write_remakes_every_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, _ = _site(tmp_path)
    store = site.store
    views.bot_page(store, "alpha", None)
    calls = _counting(store, monkeypatch)
    alpha = store.bot("alpha")
    assert alpha is not None
    calls.clear()
    activate(store, alpha.author_id, "alpha")  # a new version accepted
    page = views.bot_page(store, "alpha", None)
    assert page is not None
    assert set(calls) == set(PARTS)
    assert len(page.versions) == 2
