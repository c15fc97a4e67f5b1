"""Teams through the real app: a member's token signs in as the team (API and pages), the
team's members share its bots, logs and page, another team's member sees nothing
private, and staff bots are badged and skipped by the prize rank."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from fastapi.testclient import TestClient

from arena.competition.config import CompetitionConfig
from arena.server.app import ServerContext, create_app
from arena.store.roster import parse_roster

from .web_helpers import ALICE_STDERR, BOB_STDERR, XSS, Site, bot_zip, make_site, web_settings

ROSTER = "team,member,email\nalice,ann,ann@uni.edu\nalice,al,al@uni.edu\nbob,ben,ben@uni.edu\n"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """make_site's authors alice and bob as teams: ann and al are alice's members, ben bob's."""
    made = make_site(tmp_path)
    for member, token in made.store.import_roster(parse_roster(ROSTER)):
        made.tokens[member.name] = token
    return made


def test_a_member_token_is_the_team_and_says_which_member(site: Site) -> None:
    me = site.client.get("/api/me", headers=site.auth("ann")).json()
    assert me["author"]["name"] == "alice" and me["member"] == "ann"
    assert me["team"] == {
        "name": "alice",
        "members": [{"name": "al", "email": "al@uni.edu"}, {"name": "ann", "email": "ann@uni.edu"}],
    }
    assert me["bots"] == ["alpha"]  # the team's bot
    assert ALICE_STDERR in me["games"][0]["stderr"]["0"]
    team = site.client.get("/api/me", headers=site.auth("alice")).json()
    assert team["member"] is None and team["bots"] == ["alpha"]


def test_members_share_the_team_page_and_sign_in_as_the_team(site: Site) -> None:
    site.store.add_member("alice", XSS)  # a member's name is shown, never run
    site.sign_in("al")
    page = site.client.get("/me")
    assert page.status_code == 200
    assert "Me (al (team alice))" in page.text
    assert "Team members" in page.text and "<strong>al (you)</strong>" in page.text
    assert "ann" in page.text and "ben" not in page.text
    assert "build log of alpha" in page.text and ALICE_STDERR in page.text
    assert BOB_STDERR not in page.text and "build log of beta" not in page.text
    assert XSS not in page.text and "&lt;script&gt;" in page.text


def test_another_teams_member_sees_nothing_private(site: Site) -> None:
    game = site.games[0]
    ben = site.client.get(f"/api/games/{game}", headers=site.auth("ben")).text
    assert BOB_STDERR in ben and ALICE_STDERR not in ben
    ann = site.client.get(f"/api/games/{game}", headers=site.auth("ann")).text
    assert ALICE_STDERR in ann and BOB_STDERR not in ann
    site.sign_in("ben")
    own = site.client.get(f"/games/{game}/stderr/1.txt")
    assert own.status_code == 200 and BOB_STDERR in own.text
    theirs = site.client.get(f"/games/{game}/stderr/0.txt")
    assert theirs.status_code in (403, 404) and ALICE_STDERR not in theirs.text
    alpha_log = site.client.get("/api/me", headers=site.auth("ben")).json()["submissions"]
    assert [s["bot"] for s in alpha_log] == ["beta"]


def test_two_members_submit_to_the_same_bot(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="arena.server")
    versions = []
    for who, body in (("ann", "1"), ("al", "2")):
        response = site.client.post(
            "/api/submissions",
            headers=site.auth(who),
            files={
                "archive": (
                    "t.zip",
                    bot_zip("teambot", {"extra.py": body.encode()}),
                    "application/octet-stream",
                )
            },
        )
        assert response.status_code == 202, response.text
        versions.append(response.json())
    assert [(v["bot"], v["version"]) for v in versions] == [("teambot", 1), ("teambot", 2)]
    bot = site.store.bot("teambot")
    assert bot is not None and bot.author_name == "alice"
    assert "teambot v1 by ann (team alice)" in caplog.text
    assert "teambot v2 by al (team alice)" in caplog.text
    # another team's member cannot take the team's bot name
    refused = site.client.post(
        "/api/submissions",
        headers=site.auth("ben"),
        files={"archive": ("t.zip", bot_zip("teambot"), "application/octet-stream")},
    )
    assert refused.status_code == 409, refused.text


def test_renewing_a_member_token_ends_only_that_members_sessions(site: Site) -> None:
    site.sign_in("ann")
    assert site.client.get("/me", follow_redirects=False).status_code == 200
    other = TestClient(site.client.app, base_url="http://testserver")
    other_site = Site(site.store, other, site.data_dir, site.tokens)
    other_site.sign_in("al")
    site.tokens["ann"] = site.store.new_member_token("alice", "ann")
    assert site.client.get("/me", follow_redirects=False).status_code == 303  # signed out
    assert other.get("/me", follow_redirects=False).status_code == 200  # al stays in
    assert site.client.get("/api/me", headers=site.auth("ann")).json()["member"] == "ann"


def test_staff_bots_are_badged_and_skipped_by_the_prize_rank(site: Site) -> None:
    site.store.set_staff("bob", True)
    board = site.client.get("/api/leaderboard").json()["rows"]
    by_bot = {r["bot_name"]: r for r in board}
    assert by_bot["beta"]["staff"] is True and by_bot["beta"]["prize_rank"] is None
    assert by_bot["alpha"]["staff"] is False and by_bot["alpha"]["prize_rank"] == 1
    html = site.client.get("/").text
    beta_row = next(line for line in html.splitlines() if "/bots/beta" in line)
    assert ">staff</span>" in beta_row
    alpha_row = next(line for line in html.splitlines() if "/bots/alpha" in line)
    assert "staff" not in alpha_row
    assert "Prize rank" in html and "the prize rank skips them" in html
    page = site.client.get("/bots/beta").text
    assert ">staff</span>" in page.split("</h1>")[0]
    assert site.client.get("/api/bots/beta").json()["bot"]["staff"] is True
    assert site.client.get("/api/me", headers=site.auth("ben")).json()["author"]["staff"] is True


def test_the_organiser_api_makes_a_staff_author(site: Site) -> None:
    made = site.client.post(
        "/api/admin/authors", headers=site.auth("org"), json={"name": "baseline", "staff": True}
    )
    assert made.status_code == 201 and made.json()["staff"] is True
    baseline = site.store.author_by_name("baseline")
    assert baseline is not None and site.store.staff_author_ids() == {baseline.id}


def test_staff_may_count_for_prizes(site: Site) -> None:
    site.store.set_staff("bob", True)
    config = CompetitionConfig.model_validate(
        {"competition": {"staff_in_prizes": True}, "server": {"stale_seconds": 0}}
    )  # the strict page cache: the leaderboard read after the freeze shows it
    ctx = ServerContext(config=config, store=site.store, data_dir=site.data_dir)
    settings = web_settings(staff_in_prizes=config.competition.staff_in_prizes)
    client = TestClient(create_app(ctx, settings), base_url="http://testserver")
    rows = client.get("/api/leaderboard").json()["rows"]
    assert sorted(r["prize_rank"] for r in rows) == [1, 2]
    assert [r["prize_rank"] for r in rows] == [r["rank"] for r in rows]
    frozen = client.post("/api/admin/freeze", headers=site.auth("org"))
    assert frozen.status_code == 200, frozen.text
    kept = client.get("/api/leaderboard").json()["frozen"]["rows"]
    assert [(r["prize_rank"], r["staff"]) for r in kept] == [
        (r["prize_rank"], r["staff"]) for r in rows
    ]
