"""Attacks on the web layer: forged tokens, other authors' logs and stderr, writes without
the right to write, cross-site forms, script injection through every bot-controlled field,
challenge floods and oversized uploads."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.server.receive import MULTIPART_OVERHEAD

from .web_helpers import (
    ALICE_STDERR,
    BOB_STDERR,
    EVIL_BOT,
    XSS,
    Site,
    bot_zip,
    csrf_of,
    make_site,
    serving,
    web_settings,
)

WRITES = [
    ("/api/submissions", None),
    ("/api/challenges", {"opponents": ["beta"]}),
    ("/api/admin/pause", None),
    ("/api/admin/resume", None),
    ("/api/admin/freeze", None),
    ("/api/admin/unfreeze", None),
    ("/api/admin/bots/beta/disqualify", None),
    ("/api/admin/games/GAME/rerun", None),
    ("/api/admin/authors", {"name": "mallory"}),
]
ORGANISER_ONLY = [url for url, _ in WRITES if url.startswith("/api/admin/")]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def _post(site: Site, url: str, body: Any, headers: dict[str, str]) -> Any:
    url = url.replace("GAME", site.games[0])
    if url == "/api/submissions":
        files = {"archive": ("a.zip", bot_zip("alpha"), "application/zip")}
        return site.client.post(url, files=files, headers=headers)
    return site.client.post(url, json=body, headers=headers)


def _unchanged(site: Site) -> None:
    assert not site.store.paused() and site.store.frozen() is None
    beta = site.store.bot("beta")
    assert beta is not None and not beta.disqualified
    assert [v.number for v in site.store.versions_of("alpha")] == [1]
    assert site.store.author_by_token("x") is None
    assert {a.name for a in site.store.authors()} == {"org", "alice", "bob"}
    assert site.store.games_finished() == 2
    assert site.woken == {"builder": 0, "ladder": 0}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer " + "A" * 43},  # forged
        {"Authorization": "Bearer "},
        {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
        {"Authorization": "Bearer " + "A" * 5000},
    ],
    ids=["none", "forged", "empty", "basic", "huge"],
)
def test_every_write_needs_a_valid_token(site: Site, headers: dict[str, str]) -> None:
    for url, body in WRITES:
        response = _post(site, url, body, headers)
        assert response.status_code == 401, (url, response.text)
        assert "error" in response.json()
        assert response.headers["www-authenticate"] == "Bearer"
    _unchanged(site)


def test_forged_token_is_401_also_on_reads(site: Site) -> None:
    forged = {"Authorization": "Bearer " + site.tokens["alice"][:-2] + "xx"}
    for url in ("/api/me", "/api/bots/alpha", f"/api/games/{site.games[0]}"):
        assert site.client.get(url, headers=forged).status_code == 401, url
    assert site.client.get("/api/me").status_code == 401


def test_authors_cannot_use_organiser_actions(site: Site) -> None:
    for url in ORGANISER_ONLY:
        body = {"name": "mallory"} if url.endswith("authors") else None
        response = _post(site, url, body, site.auth("alice"))
        assert response.status_code == 403, url
    _unchanged(site)
    csrf = site.sign_in("alice")
    assert site.client.get("/admin").status_code == 403
    for action in ("pause", "freeze", "disqualify", "rerun", "authors"):
        form = {"csrf": csrf, "target": "beta", "name": "mallory"}
        assert site.client.post(f"/admin/{action}", data=form).status_code == 403, action
    _unchanged(site)


def test_an_author_cannot_take_another_authors_bot_name(site: Site) -> None:
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("bob"),
        files={"archive": ("a.zip", bot_zip("alpha"), "application/zip")},
    )
    assert response.status_code == 409 and "another author" in response.json()["error"]
    assert [v.number for v in site.store.versions_of("alpha")] == [1]
    assert list((site.data_dir / "uploads").iterdir()) == []


def test_another_authors_logs_and_stderr_stay_hidden(site: Site) -> None:
    bob_version = site.store.versions_of("beta")[0].id
    # an accepted version: public status, but the build log is bob's
    seen = site.client.get(f"/api/submissions/{bob_version}", headers=site.auth("alice")).json()
    assert seen["log"] is None and "build log of beta" not in str(seen)
    # a rejected one is not even listed for others
    rejected = site.store.add_submission(3, "beta", "/uploads/x.zip", "2" * 64)  # bob is 3
    site.store.claim_queued_version()
    site.store.finish_build(rejected.id, False, "bob's secret verdict", "bob's log", None, None, {})
    hidden = site.client.get(f"/api/submissions/{rejected.id}", headers=site.auth("alice"))
    assert hidden.status_code == 404
    assert (
        site.client.get(f"/api/submissions/{rejected.id}", headers=site.auth("bob")).json()["log"]
        == "bob's log"
    )
    bot = site.client.get("/api/bots/beta", headers=site.auth("alice")).text
    assert "bob's secret verdict" not in bot and "bob's log" not in bot
    page = site.client.get("/bots/beta").text
    assert "bob's secret verdict" not in page
    me = site.client.get("/api/me", headers=site.auth("alice")).text
    assert BOB_STDERR not in me and "build log of beta" not in me
    for game in site.games:
        text = site.client.get(f"/api/games/{game}", headers=site.auth("alice")).text
        assert BOB_STDERR not in text and ALICE_STDERR in text
    site.sign_in("alice")
    for url in ["/me", "/bots/beta", *(f"/games/{g}" for g in site.games)]:
        text = site.client.get(url).text
        assert BOB_STDERR not in text and "bob's log" not in text, url


def test_api_ignores_the_session_cookie(site: Site) -> None:
    """The cookie signs in pages only; the API needs the Bearer header, so a cross-site
    request that carries the cookie can write nothing."""
    site.sign_in("org")
    assert site.client.post("/api/admin/pause").status_code == 401
    assert site.client.get("/api/me").status_code == 401
    _unchanged(site)


def test_forms_need_the_csrf_token_and_this_origin(site: Site) -> None:
    csrf = site.sign_in("org")
    for data in ({}, {"csrf": "wrong" * 8}):
        response = site.client.post("/admin/pause", data=data)
        assert response.status_code == 403 and "form" in response.text
    foreign = site.client.post(
        "/admin/pause", data={"csrf": csrf}, headers={"Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403
    upload = site.client.post(
        "/submit", files={"archive": ("a.zip", bot_zip("alpha"), "application/zip")}
    )
    assert upload.status_code == 403
    assert site.client.post("/logout", data={}).status_code == 403
    assert site.client.post("/login", data={"token": site.tokens["alice"]}).status_code == 403
    _unchanged(site)
    ok = site.client.post(
        "/admin/pause", data={"csrf": csrf}, headers={"Origin": "http://testserver"}
    )
    assert ok.status_code == 200 and site.store.paused()


def test_session_cookies_are_httponly_and_strict(site: Site) -> None:
    csrf = csrf_of(site.client)
    response = site.client.post(
        "/login", data={"token": site.tokens["bob"], "csrf": csrf}, follow_redirects=False
    )
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    first = site.client.__class__(site.client.app).get("/login")
    assert "httponly" in first.headers["set-cookie"].lower()


def test_security_headers(site: Site) -> None:
    for url in ("/", f"/games/{site.games[0]}", "/api/health"):
        headers = site.client.get(url).headers
        assert "script-src 'self'" in headers["content-security-policy"], url
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def test_script_injection_is_escaped_in_every_page(tmp_path: Path) -> None:
    site = make_site(tmp_path, hostile=True)
    evil_game = site.games[-1]
    evil_url = "/bots/" + quote(EVIL_BOT, safe="")
    public = ["/", "/games", evil_url, "/bots/alpha", f"/games/{evil_game}", "/login"]
    private = ["/me", "/admin", f"/games/{evil_game}", "/bots/alpha", "/submit"]
    pages: dict[str, str] = {}
    for url in public:
        response = site.client.get(url)
        assert response.status_code == 200, url
        pages[f"public {url}"] = response.text
    for who in ("alice", "org"):
        site.sign_in(who)
        for url in private:
            response = site.client.get(url)
            assert response.status_code in (200, 403), (who, url)
            pages[f"{who} {url}"] = response.text
    for name, text in pages.items():
        assert "<script>alert" not in text, name
        assert "\x1b" not in text and "\x07" not in text, name
        scripts = re.findall(r"<script(?![^>]*application/json)[^>]*>", text)
        assert all('src="/static/viewer/' in s for s in scripts), (name, scripts)
    # the hostile text is there, escaped (not silently dropped)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages["public /"]  # author, language
    assert "evil&lt;script&gt;" in pages["public /"] and "\\x1b[2J" in pages["public /"]
    assert "&lt;script&gt;" in pages[f"public {evil_url}"]  # ready_author/version
    me = pages["alice /me"]
    assert "build failed &lt;script&gt;" in me and "\\x1b]52;c;x\\x07" in me
    assert "alice-secret-stderr &lt;script&gt;" in me
    assert "\\u003cscript\\u003e" in pages[f"public /games/{evil_game}"]  # the viewer data
    # the JSON API keeps the raw text: JSON quoting makes it harmless
    board = site.client.get("/api/leaderboard").json()
    assert EVIL_BOT in {r["bot_name"] for r in board["rows"]}
    assert site.client.get("/api/leaderboard").headers["content-type"] == "application/json"
    # the organiser can still act on a bot with such a name (the form carries it encoded)
    csrf = site.sign_in("org")
    site.client.post("/admin/disqualify", data={"csrf": csrf, "target": quote(EVIL_BOT)})
    evil = site.store.bot(EVIL_BOT)
    assert evil is not None and evil.disqualified


def test_error_pages_escape_the_path(site: Site) -> None:
    response = site.client.get(f"/bots/{XSS}")
    assert response.status_code == 404 and "<script>alert" not in response.text
    api = site.client.get(f"/api/bots/{XSS}")
    assert api.status_code == 404 and api.headers["content-type"] == "application/json"


def test_challenge_flood_is_429(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(challenges_per_hour=5))
    codes = [
        site.client.post(
            "/api/challenges", json={"opponents": ["beta"]}, headers=site.auth("alice")
        ).status_code
        for _ in range(20)
    ]
    assert codes == [202] * 5 + [429] * 15
    assert len(site.store.games(kind="challenge")) == 5


def test_oversized_upload_with_a_length_is_refused_unread(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(upload_bytes=256 * 1024))
    big = bot_zip("alpha", {"blob.bin": b"x" * (2 * 2**20)})
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("big.zip", big, "application/zip")},
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]
    assert not (site.data_dir / "uploads").exists() or not any(
        (site.data_dir / "uploads").iterdir()
    )
    assert [v.number for v in site.store.versions_of("alpha")] == [1]
    assert site.woken["builder"] == 0


def test_oversized_streamed_upload_stops_at_the_limit(tmp_path: Path) -> None:
    """No Content-Length (chunked): the server reads only about the limit, writes no more
    than the limit, answers 413 and keeps no partial file."""
    limit = 256 * 1024
    site = make_site(tmp_path, settings=web_settings(upload_bytes=limit))
    app = site.client.app
    boundary = b"XyZ"
    head = (
        b'--XyZ\r\nContent-Disposition: form-data; name="archive"; filename="a.zip"\r\n'
        b"Content-Type: application/zip\r\n\r\nPK\x03\x04"
    )
    chunk = b"z" * 65536
    total_chunks = 160  # 10 MiB
    sent = {"chunks": 0}
    largest = {"bytes": 0}
    uploads = site.data_dir / "uploads"

    async def receive() -> dict[str, Any]:
        if uploads.exists():
            for path in uploads.iterdir():
                largest["bytes"] = max(largest["bytes"], path.stat().st_size)
        if sent["chunks"] == 0:
            sent["chunks"] += 1
            return {"type": "http.request", "body": head, "more_body": True}
        sent["chunks"] += 1
        more = sent["chunks"] < total_chunks
        return {"type": "http.request", "body": chunk, "more_body": more}

    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/submissions",
        "raw_path": b"/api/submissions",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {site.tokens['alice']}".encode()),
            (b"content-type", b"multipart/form-data; boundary=" + boundary),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    start = next(m for m in messages if m["type"] == "http.response.start")
    assert start["status"] == 413
    read = (sent["chunks"] - 1) * len(chunk)
    assert read <= limit + MULTIPART_OVERHEAD + len(chunk), read
    assert sent["chunks"] < total_chunks / 4
    assert largest["bytes"] <= limit
    assert not any(uploads.iterdir())
    assert [v.number for v in site.store.versions_of("alpha")] == [1]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversized_upload_over_a_real_socket(tmp_path: Path, chunked: bool) -> None:
    """Through uvicorn on loopback the client does hear the 413 (the server answers before
    reading the rest), and nothing is kept."""
    import httpx

    site = make_site(tmp_path, settings=web_settings(upload_bytes=2**20))
    big = bot_zip("alpha", {"blob.bin": secrets.token_bytes(6 * 2**20)})
    with serving(site.client.app) as base:
        url = f"{base}/api/submissions"
        if chunked:

            def body() -> Iterator[bytes]:
                yield b"--B\r\nContent-Disposition: form-data; "
                yield b'name="archive"; filename="a.zip"\r\n\r\n'
                for i in range(0, len(big), 65536):
                    yield big[i : i + 65536]
                yield b"\r\n--B--\r\n"

            headers = {**site.auth("alice"), "Content-Type": "multipart/form-data; boundary=B"}
            response = httpx.post(url, headers=headers, content=body(), timeout=60)
        else:
            files = {"archive": ("a.zip", big, "application/zip")}
            response = httpx.post(url, headers=site.auth("alice"), files=files, timeout=60)
    assert response.status_code == 413
    assert response.json() == {"error": "the archive is larger than the limit of 1 MiB"}
    uploads = site.data_dir / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())
    assert [v.number for v in site.store.versions_of("alpha")] == [1]


def test_large_form_bodies_are_refused(site: Site) -> None:
    csrf = csrf_of(site.client)
    response = site.client.post("/login", data={"token": "x" * 200_000, "csrf": csrf})
    assert response.status_code == 413
    api = site.client.post(
        "/api/challenges",
        content=b"[" + b"1," * 100_000 + b"1]",
        headers={**site.auth("alice"), "Content-Type": "application/json"},
    )
    assert api.status_code == 413 and "error" in api.json()


def test_gzip_bomb_is_refused(tmp_path: Path) -> None:
    """A .tar.gz that unpacks far beyond the limit before any bot.toml: refused with a
    reason, cheaply (reading stops at the unpacked limit)."""
    site = make_site(tmp_path, settings=web_settings(unpacked_bytes=8 * 2**20))
    import gzip
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        junk = tarfile.TarInfo("junk.bin")
        junk.size = 80 * 2**20
        tar.addfile(junk, io.BytesIO(b"\0" * junk.size))
    bomb = gzip.compress(raw.getvalue(), compresslevel=9)
    assert len(bomb) < 1024 * 1024
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("bomb.tar.gz", bomb, "application/gzip")},
    )
    assert response.status_code == 400 and "limit" in response.json()["error"]
    assert not any((site.data_dir / "uploads").iterdir())


def test_upload_flood_is_429(site: Site) -> None:
    state = site.client.app.state.arena  # type: ignore[attr-defined]
    state.uploads_window.limit = 2
    codes = []
    for _ in range(4):
        response = site.client.post(
            "/api/submissions",
            headers=site.auth("alice"),
            files={"archive": ("a.zip", bot_zip("alpha"), "application/zip")},
        )
        codes.append(response.status_code)
    assert codes == [202, 202, 429, 429]
    assert int(response.headers["Retry-After"]) >= 1
    assert [v.number for v in site.store.versions_of("alpha")] == [3, 2, 1]
    # refused uploads do not count: bob's bad archive leaves his allowance intact
    for _ in range(3):
        bad = site.client.post(
            "/api/submissions",
            headers=site.auth("bob"),
            files={"archive": ("a.zip", b"junk", "application/zip")},
        )
        assert bad.status_code == 400
