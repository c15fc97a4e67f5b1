"""Paging: an author's submissions on /me (and /api/me) come 20 to a page with links;
/games pages back to the newest games."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.server.views import SUBMISSIONS_PER_PAGE

from .web_helpers import XSS, make_site


def test_me_pages_the_submissions(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    alice = site.store.author_by_name("alice")
    assert alice is not None
    for i in range(SUBMISSIONS_PER_PAGE + 5):  # 26 in all with alpha v1
        site.store.add_submission(alice.id, "alpha", f"/uploads/{i}.zip", f"{i:064d}")
    site.sign_in("alice")

    def cards(text: str) -> list[int]:
        return [int(n) for n in re.findall(r'id="submission-(\d+)"', text)]

    first = site.client.get("/me").text
    assert len(cards(first)) == SUBMISSIONS_PER_PAGE
    assert "page 1 of 2, 26 in all" in first
    assert 'href="/me?page=2" rel="next"' in first and 'rel="prev"' not in first
    second = site.client.get("/me?page=2").text
    assert len(cards(second)) == 6
    assert 'href="/me?page=1" rel="prev"' in second and 'rel="next"' not in second
    assert set(cards(first)).isdisjoint(cards(second))
    assert max(cards(second)) < min(cards(first))  # newest first
    assert cards(site.client.get("/me?page=99").text) == cards(second)  # clamped
    assert site.client.get("/me?page=0").status_code == 400
    assert site.client.get(f"/me?page={XSS}").status_code == 400

    api = site.client.get("/api/me?page=2", headers=site.auth("alice")).json()
    assert (api["page"], api["pages"], api["submissions_total"]) == (2, 2, 26)
    assert [s["id"] for s in api["submissions"]] == cards(second)
    assert len(site.client.get("/api/me", headers=site.auth("alice")).json()["submissions"]) == 20


def test_one_page_has_no_page_links(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.sign_in("bob")
    text = site.client.get("/me").text
    assert "/me?page=" not in text and 'id="submission-' in text


def test_older_games_link_back_to_the_newest(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    newest = site.client.get("/games").text
    assert "Newest games" not in newest
    older = site.client.get(f"/games?before={site.games[-1]}&bot=alpha").text
    assert 'href="/games?bot=alpha">← Newest games' in older
    assert site.games[0] in older and site.games[-1] not in older.split("Newest games")[1]
