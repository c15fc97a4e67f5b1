"""Downloads from a game page: the record (``record.json``) for anyone who may see the
game, redacted as the page is (no other author's stderr), and the signed-in author's own
bot's stderr of that game, never another author's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.engine import GameRecord

from .web_helpers import ALICE_STDERR, BOB_STDERR, XSS, Site, make_site


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def _attachment(response: object, media: str, suffix: str) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    assert headers["content-type"].startswith(media)
    disposition = headers["content-disposition"]
    assert disposition.startswith("attachment; filename=") and disposition.endswith(f'{suffix}"')


def test_anyone_downloads_the_record_without_anyones_stderr(site: Site) -> None:
    game = site.games[0]
    response = site.client.get(f"/games/{game}/record.json")
    assert response.status_code == 200
    _attachment(response, "application/json", "record.json")
    record = response.json()
    GameRecord.model_validate(record)  # the verified record: replayable as it is
    stored = site.store.record(game)
    assert stored is not None
    assert (
        record["rounds"][0]["decisions"][0]["move"] == stored["rounds"][0]["decisions"][0]["move"]
    )
    assert ALICE_STDERR not in response.text and BOB_STDERR not in response.text


def test_the_author_record_keeps_only_their_own_stderr(site: Site) -> None:
    site.sign_in("alice")
    response = site.client.get(f"/games/{site.games[0]}/record.json")
    assert response.status_code == 200
    assert ALICE_STDERR in response.text and BOB_STDERR not in response.text


def test_the_organiser_record_is_the_stored_one(site: Site) -> None:
    response = site.client.get(f"/games/{site.games[0]}/record.json", headers=site.auth("org"))
    assert response.json() == site.store.record(site.games[0])


def test_an_author_downloads_their_own_stderr(site: Site) -> None:
    site.sign_in("alice")
    response = site.client.get(f"/games/{site.games[0]}/stderr/0.txt")
    assert response.status_code == 200
    _attachment(response, "text/plain", "seat0.txt")
    assert response.text == site.store.seat_stderr(site.games[0], 0)
    assert ALICE_STDERR in response.text and XSS in response.text  # as written, not a page


def test_a_token_works_as_well_as_the_session(site: Site) -> None:
    response = site.client.get(f"/games/{site.games[0]}/stderr/1.txt", headers=site.auth("bob"))
    assert response.status_code == 200 and BOB_STDERR in response.text


@pytest.mark.parametrize("who", ["anonymous", "bob-cookie", "bob-token"])
def test_nobody_else_downloads_an_authors_stderr(site: Site, who: str) -> None:
    headers = {}
    if who == "bob-cookie":
        site.sign_in("bob")
    elif who == "bob-token":
        headers = site.auth("bob")
    response = site.client.get(
        f"/games/{site.games[0]}/stderr/0.txt", headers=headers, follow_redirects=False
    )
    if who == "anonymous":  # sent to sign in
        assert response.status_code == 303 and response.headers["location"] == "/login"
    else:
        assert response.status_code == 403
    assert ALICE_STDERR not in response.text


def test_missing_games_seats_and_bad_tokens(site: Site) -> None:
    bad = site.client.get(
        f"/games/{site.games[0]}/record.json",
        headers={"Authorization": "Bearer wrong"},
        follow_redirects=False,
    )
    assert bad.status_code == 303 and bad.headers["location"] == "/login"  # never anonymous
    site.sign_in("alice")
    assert site.client.get("/games/nope/record.json").status_code == 404
    assert site.client.get("/games/nope/stderr/0.txt").status_code == 404
    assert site.client.get(f"/games/{site.games[0]}/stderr/7.txt").status_code == 403


def test_the_game_page_links_the_downloads_the_viewer_may_have(site: Site) -> None:
    game = site.games[0]
    public = site.client.get(f"/games/{game}").text
    assert f'href="/games/{game}/record.json"' in public
    assert "/stderr/" not in public
    site.sign_in("alice")
    own = site.client.get(f"/games/{game}").text
    assert f'href="/games/{game}/stderr/0.txt"' in own
    assert f'href="/games/{game}/stderr/1.txt"' not in own
    api = site.client.get(f"/api/games/{game}", headers=site.auth("alice")).json()
    assert api["downloads"] == {
        "record": f"/games/{game}/record.json",
        "stderr": {"0": f"/games/{game}/stderr/0.txt"},
    }


def test_a_hostile_bot_name_is_inert_on_the_page_and_in_the_record(tmp_path: Path) -> None:
    site = make_site(tmp_path, hostile=True)
    game = site.games[-1]  # the hostile-named bot's game
    page = site.client.get(f"/games/{game}").text
    assert "<script>alert" not in page
    record = site.client.get(f"/games/{game}/record.json")
    assert record.status_code == 200
    assert json.loads(record.text)["players"][0].startswith("evil<script>")  # data, as stored
    assert "script" not in record.headers["content-disposition"]
