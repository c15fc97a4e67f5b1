"""An author picks which of their own active bots plays a challenge (API and form); they
can never seat another author's bot as theirs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from .web_helpers import EVIL_BOT, Site, activate, make_site


@pytest.fixture
def site(tmp_path: Path) -> Site:
    made = make_site(tmp_path)
    alice = made.store.author_by_name("alice")
    assert alice is not None
    activate(made.store, alice.id, "alpha2")  # now alice's latest active bot
    return made


def _challenge(site: Site, who: str, **body: object) -> tuple[int, dict[str, object]]:
    response = site.client.post(
        "/api/challenges", json={"opponents": ["beta"], **body}, headers=site.auth(who)
    )
    return response.status_code, response.json()


def _seat0(site: Site, game_id: object) -> str:
    game = site.store.game(str(game_id))
    assert game is not None
    return game.seats[0].bot_name


def test_the_chosen_bot_takes_seat_0(site: Site) -> None:
    status, body = _challenge(site, "alice", bot="alpha")
    assert status == 202 and _seat0(site, body["game"]) == "alpha"


def test_without_a_choice_the_latest_active_bot_plays(site: Site) -> None:
    status, body = _challenge(site, "alice")
    assert status == 202 and _seat0(site, body["game"]) == "alpha2"


@pytest.mark.parametrize("name", ["beta", "nosuchbot"])
def test_another_authors_bot_or_none_is_refused(site: Site, name: str) -> None:
    before = site.store.game_counts()
    status, body = _challenge(site, "alice", opponents=["alpha2"], bot=name)
    assert status == 404 and name in str(body["error"])
    assert site.store.game_counts() == before


def test_a_chosen_bot_needs_one_opponent_fewer_than_players(site: Site) -> None:
    status, body = _challenge(site, "alice", opponents=["beta", "alpha2"], bot="alpha")
    assert status == 400 and "1 opponents" in str(body["error"])


def test_the_form_offers_only_ones_own_active_bots_and_seats_the_choice(site: Site) -> None:
    csrf = site.sign_in("alice")
    page = site.client.get("/me").text
    form = page[page.index('name="bot"') : page.index("</select>", page.index('name="bot"'))]
    assert '<option value="alpha">' in form and '<option value="alpha2">' in form
    assert "beta" not in form
    response = site.client.post(
        "/challenge",
        data={"csrf": csrf, "opponent": "beta", "players": "2", "bot": "alpha"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    game_id = response.headers["location"].removeprefix("/games/")
    assert _seat0(site, game_id) == "alpha"


def test_the_form_refuses_another_authors_bot(site: Site) -> None:
    csrf = site.sign_in("bob")
    response = site.client.post(
        "/challenge", data={"csrf": csrf, "opponent": "alpha2", "players": "2", "bot": "alpha"}
    )
    assert response.status_code == 404 and "no active bot named" in response.text


def test_a_name_no_manifest_allows_is_not_offered(tmp_path: Path) -> None:
    """Like the opponents list: an option's value is sent back verbatim, so only names a
    bot.toml may carry are offered (a stored hostile name never reaches the page raw)."""
    site = make_site(tmp_path, hostile=True)
    site.sign_in("alice")
    page = site.client.get("/me").text
    form = page[page.index('name="bot"') : page.index("</select>", page.index('name="bot"'))]
    assert '<option value="alpha">' in form
    assert "evil" not in form and "\x1b" not in page and EVIL_BOT not in page
