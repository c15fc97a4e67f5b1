"""The web layer's routes, as a browser and an API client use them (TestClient over a
temporary SQLite store with real finished games)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")


from .web_helpers import ALICE_STDERR, BOB_STDERR, Site, bot_zip, make_site, web_settings


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def test_pages_render_for_the_public(site: Site) -> None:
    game = site.games[0]
    pages = {
        "/": ["alpha", "beta", "Rating", "Interval", "Win rate", "Faults", "python", "alice"],
        "/bots/alpha": ["Versions", "Rating history", "Head to head", "beta", "timeout", "<svg"],
        "/games": [game, "alpha", "beta"],
        f"/games/{game}": ['class="azul-game"', "/static/viewer/viewer.js", "alpha"],
        "/login": ['name="token"', 'name="csrf"'],
    }
    for url, needles in pages.items():
        response = site.client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-type"].startswith("text/html")
        for needle in needles:
            assert needle in response.text, (url, needle)
    # every page works without JavaScript except the replay: no script outside the viewer
    assert "<script" not in site.client.get("/").text


def test_static_files_are_shipped(site: Site) -> None:
    for url in ("/static/viewer/viewer.js", "/static/viewer/viewer.css", "/static/site/site.css"):
        response = site.client.get(url)
        assert response.status_code == 200 and len(response.content) > 500, url
    page = site.client.get("/").text
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_json_api_mirrors_the_pages(site: Site) -> None:
    client = site.client
    health = client.get("/api/health").json()
    assert health == {"ok": True, "games_finished": 2, "paused": False}
    board = client.get("/api/leaderboard").json()
    ratings = [r["conservative"] for r in board["rows"]]
    assert {r["bot_name"] for r in board["rows"]} == {"alpha", "beta"}
    assert ratings == sorted(ratings, reverse=True) and [r["rank"] for r in board["rows"]] == [1, 2]
    assert {"mu", "sigma", "low", "high", "games", "win_rate", "faults", "version_number"} <= set(
        board["rows"][0]
    )
    bot = client.get("/api/bots/beta").json()
    assert bot["bot"]["author"] == "bob"
    assert [v["number"] for v in bot["versions"]] == [1]
    assert len(bot["rating_history"]["1"]) == 2
    assert bot["head_to_head"][0]["opponent"] == "alpha" and bot["head_to_head"][0]["games"] == 2
    assert bot["faults"][0]["kind"] == "timeout" and bot["faults"][0]["count"] == 2
    assert len(bot["recent_games"]) == 2
    games = client.get("/api/games", params={"bot": "alpha", "limit": 1}).json()["games"]
    assert len(games) == 1 and games[0]["id"] == site.games[1]
    game = client.get(f"/api/games/{site.games[0]}").json()
    assert game["game"]["status"] == "finished" and game["record"]["players"] == ["alpha", "beta"]
    for missing in ("/api/bots/nobody", "/api/games/nope", "/api/submissions/999"):
        response = client.get(missing)
        assert response.status_code == 404 and "error" in response.json(), missing
    assert client.get("/bots/nobody").status_code == 404


def test_game_stderr_is_redacted_per_viewer(site: Site) -> None:
    game = site.games[0]
    url = f"/api/games/{game}"

    def stderr_seen(headers: dict[str, str]) -> str:
        return site.client.get(url, headers=headers).text

    public = stderr_seen({})
    assert ALICE_STDERR not in public and BOB_STDERR not in public
    alice = stderr_seen(site.auth("alice"))
    assert ALICE_STDERR in alice and BOB_STDERR not in alice
    bob = stderr_seen(site.auth("bob"))
    assert BOB_STDERR in bob and ALICE_STDERR not in bob
    org = stderr_seen(site.auth("org"))
    assert ALICE_STDERR in org and BOB_STDERR in org
    data = site.client.get(url, headers=site.auth("alice")).json()
    assert set(data["stderr"]) == {"0"}  # seat 0 is alice's alpha
    assert data["record"]["faults"][0]["stderr_tail"] is None  # the fault is bob's seat 1
    # the game page follows the session cookie the same way
    assert ALICE_STDERR not in site.client.get(f"/games/{game}").text
    site.sign_in("alice")
    page = site.client.get(f"/games/{game}").text
    assert ALICE_STDERR in page and BOB_STDERR not in page


def test_login_me_and_logout(site: Site) -> None:
    client = site.client
    assert client.get("/me", follow_redirects=False).headers["location"] == "/login"
    csrf = site.sign_in("alice")
    cookie = next(c for c in client.cookies.jar if c.name == "arena_session")
    assert cookie.has_nonstandard_attr("HttpOnly")
    me = client.get("/me")
    assert me.status_code == 200
    assert "alpha" in me.text and "build log of alpha" in me.text and ALICE_STDERR in me.text
    assert BOB_STDERR not in me.text and "build log of beta" not in me.text
    assert client.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert client.get("/me", follow_redirects=False).status_code == 303


def test_login_with_a_bad_token_is_refused(site: Site) -> None:
    csrf = site.sign_in("alice")
    site.client.post("/logout", data={"csrf": csrf})
    response = site.client.post("/login", data={"token": "x" * 43, "csrf": csrf})
    assert response.status_code == 401 and "not valid" in response.text
    assert "arena_session" not in site.client.cookies


def test_api_me_and_submission_status(site: Site) -> None:
    me = site.client.get("/api/me", headers=site.auth("alice")).json()
    assert me["author"]["name"] == "alice" and me["bots"] == ["alpha"]
    assert me["submissions"][0]["log"] == "build log of alpha"
    assert [g["own_seats"] for g in me["games"]] == [[0], [0]]
    assert ALICE_STDERR in me["games"][0]["stderr"]["0"]
    version_id = me["submissions"][0]["id"]
    own = site.client.get(f"/api/submissions/{version_id}", headers=site.auth("alice")).json()
    assert own["status"] == "active" and own["log"] == "build log of alpha"
    public = site.client.get(f"/api/submissions/{version_id}").json()
    assert public["status"] == "active" and public["log"] is None


def test_upload_through_the_api_queues_a_version(site: Site) -> None:
    payload = bot_zip("alpha", top="alpha/")  # once: a zip holds the time it was made
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("alpha.zip", payload, "application/zip")},
    )
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["bot"] == "alpha" and body["version"] == 2 and body["status"] == "queued"
    assert site.woken["builder"] == 1
    stored = site.store.archive_of(body["submission"])
    assert stored is not None
    archive = Path(stored[0])
    assert archive.parent == site.data_dir / "uploads" and archive.suffix == ".zip"
    assert archive.read_bytes() == payload
    assert [p.name for p in archive.parent.iterdir()] == [archive.name]  # no leftovers
    status = site.client.get(f"/api/submissions/{body['submission']}", headers=site.auth("alice"))
    assert status.json()["status"] == "queued"
    # a queued version is its author's business only
    assert site.client.get(f"/api/submissions/{body['submission']}").status_code == 404


def test_upload_of_a_tar_gz_and_of_a_new_bot(site: Site) -> None:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'name = "gamma"\ncommand = "python3 bot.py"\n'
        info = tarfile.TarInfo("bot.toml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("bob"),
        files={"archive": ("gamma.tgz", buffer.getvalue(), "application/gzip")},
    )
    assert response.status_code == 202, response.text
    assert response.json()["bot"] == "gamma" and response.json()["version"] == 1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"not an archive at all", "not a .zip or .tar.gz"),
        (bot_zip("bad name!"), "bot.toml"),
        (b"PK\x03\x04 broken zip", "damaged"),
    ],
)
def test_bad_uploads_get_a_readable_reason(site: Site, payload: bytes, reason: str) -> None:
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("x.zip", payload, "application/zip")},
    )
    assert response.status_code == 400 and reason in response.json()["error"]
    assert list((site.data_dir / "uploads").iterdir()) == []


def test_upload_without_archive_or_multipart(site: Site) -> None:
    no_file = site.client.post("/api/submissions", headers=site.auth("alice"), data={"other": "x"})
    assert no_file.status_code == 400 and "archive" in no_file.json()["error"]
    raw = site.client.post("/api/submissions", headers=site.auth("alice"), content=bot_zip("alpha"))
    assert raw.status_code == 400 and "multipart" in raw.json()["error"]


def test_upload_through_the_page(site: Site) -> None:
    csrf = site.sign_in("alice")
    form = site.client.get("/submit")
    assert form.status_code == 200 and 'enctype="multipart/form-data"' in form.text
    response = site.client.post(
        "/submit",
        data={"csrf": csrf},
        files={"archive": ("alpha.zip", bot_zip("alpha"), "application/zip")},
        follow_redirects=False,
    )
    assert response.status_code == 303 and response.headers["location"].startswith("/me#")
    assert "queued" in site.client.get("/me").text


def test_challenges_are_unrated_and_rate_limited(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(challenges_per_hour=3))
    body = {"opponents": ["beta"], "players": 2, "variant": "gray"}
    for _ in range(3):
        response = site.client.post("/api/challenges", json=body, headers=site.auth("alice"))
        assert response.status_code == 202, response.text
        game = site.store.game(response.json()["game"])
        assert game is not None and game.kind == "challenge" and not game.rated
        assert [s.bot_name for s in game.seats] == ["alpha", "beta"]
    flood = site.client.post("/api/challenges", json=body, headers=site.auth("alice"))
    assert flood.status_code == 429 and "challenges" in flood.json()["error"]
    assert 1 <= int(flood.headers["Retry-After"]) <= 3600
    assert site.woken["ladder"] == 3
    # another author has their own allowance
    assert (
        site.client.post(
            "/api/challenges", json={"opponents": ["alpha"]}, headers=site.auth("bob")
        ).status_code
        == 202
    )


def test_challenge_limit_counts_the_stored_challenges(tmp_path: Path) -> None:
    """A restarted server (a new app over the same store) still refuses the flood."""
    site = make_site(tmp_path, settings=web_settings(challenges_per_hour=2))
    for _ in range(2):
        site.store.add_challenge(2, ["beta"], 2, "coloured")  # alice is author 2
    response = site.client.post(
        "/api/challenges", json={"opponents": ["beta"]}, headers=site.auth("alice")
    )
    assert response.status_code == 429 and "Retry-After" in response.headers


def test_bad_challenges_are_400_or_404_and_do_not_count(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(challenges_per_hour=1))
    bad = site.client.post(
        "/api/challenges", json={"opponents": ["nobody"]}, headers=site.auth("alice")
    )
    assert bad.status_code == 404 and "nobody" in bad.json()["error"]
    wrong = site.client.post(
        "/api/challenges", json={"opponents": ["beta"], "players": 9}, headers=site.auth("alice")
    )
    assert wrong.status_code == 400
    ok = site.client.post(
        "/api/challenges", json={"opponents": ["beta"]}, headers=site.auth("alice")
    )
    assert ok.status_code == 202


def test_challenge_from_the_page(site: Site) -> None:
    csrf = site.sign_in("alice")
    assert "Play a challenge" in site.client.get("/me").text
    response = site.client.post(
        "/challenge",
        data={"csrf": csrf, "players": "2", "variant": "coloured", "opponent": ["beta", ""]},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    game_id = response.headers["location"].rsplit("/", 1)[1]
    assert site.client.get(f"/games/{game_id}").status_code == 200


def test_organiser_actions_through_the_api(site: Site) -> None:
    client, org = site.client, site.auth("org")
    assert client.post("/api/admin/pause", headers=org).json() == {"paused": True}
    assert client.get("/api/health").json()["paused"] is True
    assert client.post("/api/admin/resume", headers=org).json() == {"paused": False}
    rerun = client.post(f"/api/admin/games/{site.games[0]}/rerun", headers=org)
    assert rerun.status_code == 202 and rerun.json()["status"] == "scheduled"
    assert client.get("/api/health").json()["games_finished"] == 1
    frozen = client.post("/api/admin/freeze", headers=org).json()
    assert frozen["paused"] is True and len(frozen["rows"]) == 2
    assert client.get("/api/leaderboard").json()["frozen"] is not None
    dq = client.post("/api/admin/bots/beta/disqualify", headers=org)
    assert dq.json() == {"bot": "beta", "disqualified": True}
    assert [r["bot_name"] for r in client.get("/api/leaderboard").json()["rows"]] == ["alpha"]
    made = client.post("/api/admin/authors", json={"name": "carol"}, headers=org)
    assert made.status_code == 201
    token = made.json()["token"]
    me = client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert me.json()["author"]["name"] == "carol"
    assert client.post("/api/admin/bots/nobody/disqualify", headers=org).status_code == 404
    assert site.woken["ladder"] >= 4


def test_organiser_page_and_its_forms(site: Site) -> None:
    csrf = site.sign_in("org")
    page = site.client.get("/admin")
    assert page.status_code == 200 and "Disqualify" in page.text and "Re-run" in page.text
    assert (
        site.client.post("/admin/pause", data={"csrf": csrf}, follow_redirects=False).status_code
        == 303
    )
    assert site.store.paused()
    site.client.post("/admin/disqualify", data={"csrf": csrf, "target": "beta"})
    bot = site.store.bot("beta")
    assert bot is not None and bot.disqualified
    issued = site.client.post("/admin/authors", data={"csrf": csrf, "name": "dave"})
    token = re.search(r'srv-token">([^<]+)<', issued.text)
    assert token and site.store.author_by_token(token.group(1)) is not None


def test_open_registration(tmp_path: Path) -> None:
    closed = make_site(tmp_path / "a")
    assert closed.client.post("/api/register", json={"name": "eve"}).status_code == 403
    site = make_site(tmp_path / "b", settings=web_settings(registration_open=True))
    response = site.client.post("/api/register", json={"name": "eve"})
    assert response.status_code == 201
    token = response.json()["token"]
    assert len(token) >= 40
    assert (
        site.client.get("/api/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    )
    assert site.client.post("/api/register", json={"name": "eve"}).status_code == 409


def test_ladder_balance_for_the_organiser_only(site: Site) -> None:
    balance = site.client.get("/api/admin/balance", headers=site.auth("org"))
    assert balance.status_code == 200, balance.text
    body = balance.json()
    assert sorted(r["bot"] for r in body["versions"]) == ["alpha", "beta"]
    by_bot = {r["bot"]: r["games"] for r in body["versions"]}
    for name, games in by_bot.items():
        listed = site.client.get(f"/api/games?bot={name}&limit=100").json()
        ladder = [g for g in listed["games"] if g["kind"] == "ladder"]
        assert games == len(ladder), (name, games, len(ladder))
    assert sum(body["players"].values()) == sum(body["variants"].values()) > 0
    assert site.client.get("/api/admin/balance", headers=site.auth("alice")).status_code == 403
    assert site.client.get("/api/admin/balance").status_code == 401
    site.sign_in("org")
    assert "Ladder balance" in site.client.get("/admin").text
