"""Abuse limits of ``arena serve`` beyond the socket (tests/server/test_abuse_http.py):
guessing tokens, sessions, rate limits across a restart, one author's builds against
everyone else's, an author's disk, and look-alike names."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from fastapi.testclient import TestClient

from arena.competition.config import CompetitionConfig
from arena.server.app import ServerContext, create_app
from arena.server.service import BuildVerdict, BuildWorker
from arena.store.competition import CompetitionStore, Conflict, Invalid, sqlite_url
from arena.store.competition_models import Version

from .web_helpers import Site, bot_zip, csrf_of, make_site, web_settings


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def _restarted(site: Site, tmp_path: Path, **settings: object) -> TestClient:
    """The same competition served by a new process: a fresh store object and app over
    the same database (nothing kept in memory survives)."""
    store = CompetitionStore.open(sqlite_url(tmp_path / "store.db"))
    ctx = ServerContext(config=CompetitionConfig(), store=store, data_dir=site.data_dir)
    return TestClient(create_app(ctx, web_settings(**settings) if settings else None))


# ---------------------------------------------------------------- guessing tokens


def test_failed_sign_ins_are_logged_and_limited_even_across_a_restart(
    site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limit = CompetitionConfig().server.signin_failures_per_hour
    csrf = csrf_of(site.client)
    caplog.set_level(logging.WARNING, logger="arena.server")
    for n in range(limit):
        guess = site.client.post("/login", data={"token": f"guess{n:038d}", "csrf": csrf})
        assert guess.status_code == 401
    assert caplog.text.count("failed sign-in (sign-in form) from testclient") == limit
    # Past the limit even the right token is refused from that address: guessing stops.
    blocked = site.client.post("/login", data={"token": site.tokens["alice"], "csrf": csrf})
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
    api = site.client.get("/api/me", headers=site.auth("alice"))
    assert api.status_code == 429 and "failed sign-ins" in api.json()["error"]
    again = _restarted(site, tmp_path)
    assert again.get("/api/me", headers=site.auth("alice")).status_code == 429


def test_bad_api_tokens_count_as_failed_sign_ins(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="arena.server")
    limit = CompetitionConfig().server.signin_failures_per_hour
    for n in range(limit):
        bad = {"Authorization": f"Bearer guess{n:038d}"}
        assert site.client.get("/api/me", headers=bad).status_code == 401
    assert "failed sign-in (API token) from testclient" in caplog.text
    assert site.client.get("/api/me", headers=site.auth("alice")).status_code == 429


# ---------------------------------------------------------------- sessions


def test_a_session_is_its_own_token_and_signing_out_revokes_it(site: Site) -> None:
    client = site.client
    csrf = site.sign_in("alice")
    session = client.cookies.get("arena_session")
    assert session and session != site.tokens["alice"]  # the API token never sits in a cookie
    assert site.tokens["alice"] not in str(client.cookies.jar)
    # The session is no API credential, and the API token is no session.
    assert client.get("/api/me", headers={"Authorization": f"Bearer {session}"}).status_code == 401
    spoof = TestClient(client.app, cookies={"arena_session": site.tokens["alice"]})
    assert spoof.get("/me", follow_redirects=False).status_code == 303
    copied = TestClient(client.app, cookies={"arena_session": session})
    assert copied.get("/me").status_code == 200
    assert client.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    # The copied cookie stops working at once; the API token is untouched.
    assert copied.get("/me", follow_redirects=False).headers["location"] == "/login"
    assert client.get("/api/me", headers=site.auth("alice")).status_code == 200


def test_renewing_a_token_ends_the_sessions_it_opened(site: Site) -> None:
    site.sign_in("alice")
    assert site.client.get("/me").status_code == 200
    site.store.new_token("alice")
    assert site.client.get("/me", follow_redirects=False).status_code == 303


def test_sessions_expire(site: Site) -> None:
    author = site.store.author_by_name("alice")
    assert author is not None
    lasting = site.store.create_session(author.id, 3600)
    brief = site.store.create_session(author.id, 0.001)
    time.sleep(0.01)
    assert site.store.author_by_session(lasting) == author
    assert site.store.author_by_session(brief) is None


# ---------------------------------------------------------------- rate limits and restarts


def test_the_upload_limit_survives_a_restart(site: Site, tmp_path: Path) -> None:
    state = site.client.app.state.arena  # type: ignore[attr-defined]
    author = site.store.author_by_name("alice")
    assert author is not None
    for _ in range(state.uploads_window.limit):
        assert state.uploads_window.take(author.id) is None
    again = _restarted(site, tmp_path)
    refused = again.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("a.zip", bot_zip("alpha"), "application/octet-stream")},
    )
    assert refused.status_code == 429 and "uploads" in refused.json()["error"]


def test_the_registration_limit_survives_a_restart(site: Site, tmp_path: Path) -> None:
    first = _restarted(site, tmp_path, registration_open=True)
    codes = [first.post("/api/register", json={"name": f"new{n}x"}).status_code for n in range(10)]
    assert codes == [201] * 10
    second = _restarted(site, tmp_path, registration_open=True)
    assert second.post("/api/register", json={"name": "late"}).status_code == 429


def test_stored_rate_limits_count_per_key_and_say_when(store: CompetitionStore) -> None:
    for _ in range(3):
        assert store.take_event("upload", "7", 3, 3600) is None
    wait = store.take_event("upload", "7", 3, 3600)
    assert wait is not None and 3590 <= wait <= 3600
    assert store.take_event("upload", "7", 3, 3600, record=False) == wait
    assert store.take_event("upload", "8", 3, 3600) is None  # another author
    assert store.take_event("registration", "7", 3, 3600) is None  # another limit
    store.give_back_event("upload", "7")
    assert store.take_event("upload", "7", 3, 3600) is None
    time.sleep(0.01)
    assert store.take_event("upload", "7", 3, 0.001, record=False) is None  # window passed


# ---------------------------------------------------------------- the build queue


def _config(tmp_path: Path, **limits: object) -> CompetitionConfig:
    return CompetitionConfig.model_validate(
        {"competition": {"data_dir": tmp_path / "data"}, "limits": limits}
    )


def test_one_authors_endless_builds_never_delay_another_author(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """Three uploads of mallory that build until told to stop, then one of alice: with
    the default two workers alice's verdict comes while mallory's first build still
    runs, and mallory never holds both workers."""
    mallory, _ = store.create_author("mallory")
    alice, _ = store.create_author("alice")
    for n in range(3):
        store.add_submission(mallory.id, "forever", f"/uploads/f{n}.zip", "0" * 64)
    honest = store.add_submission(alice.id, "quick", "/uploads/q.zip", "1" * 64)
    release = threading.Event()
    running: list[str] = []

    def build(version: Version, archive: Path, config: CompetitionConfig) -> BuildVerdict:
        running.append(version.author_name)
        if version.author_name == "mallory":
            release.wait(60)
        return BuildVerdict(False, "rejected: no", "", None, None, {})

    config = _config(tmp_path)
    assert config.limits.build_workers == 2
    worker = BuildWorker(store, config, lambda: None, build)
    threads = [threading.Thread(target=worker.run, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while (v := store.version(honest.id)) is not None and v.status != "rejected":
            assert time.monotonic() < deadline, f"alice still waits: {running}"
            time.sleep(0.05)
        assert running.count("mallory") == 1  # one build of one author at a time
        assert not release.is_set()
    finally:
        release.set()
        worker.stop()
        for t in threads:
            t.join(30)


def test_authors_take_turns_and_a_spent_build_budget_waits(
    store: CompetitionStore, tmp_path: Path
) -> None:
    mallory, _ = store.create_author("mallory")
    alice, _ = store.create_author("alice")
    for n in range(3):
        store.add_submission(mallory.id, "forever", f"/uploads/f{n}.zip", "0" * 64)
    store.add_submission(alice.id, "quick", "/uploads/q1.zip", "1" * 64)
    store.add_submission(alice.id, "quick", "/uploads/q2.zip", "1" * 64)

    def build_next(budget: float) -> str | None:
        version = store.claim_queued_version(budget_s=budget)
        if version is None:
            return None
        store.finish_build(version.id, False, "rejected", "", None, None, {})
        return version.author_name

    order = [build_next(3600) for _ in range(4)]
    assert order == ["mallory", "alice", "mallory", "alice"]  # turns, not arrival order
    # mallory's builds so far took > 0 s of a budget of 0.0001 s: the queue passes her by.
    assert build_next(0.0001) is None
    assert [v.status for v in store.versions_of("forever")].count("queued") == 1


# ---------------------------------------------------------------- disk


def test_an_upload_past_the_authors_disk_quota_is_refused(site: Site) -> None:
    state = site.client.app.state.arena  # type: ignore[attr-defined]
    state.ctx.config = CompetitionConfig.model_validate({"limits": {"disk_mb": 1}})
    author = site.store.author_by_name("alice")
    assert author is not None
    site.store.add_submission(author.id, "alpha", "/uploads/big.zip", "2" * 64, 2**20)
    refused = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("a.zip", bot_zip("alpha"), "application/octet-stream")},
    )
    assert refused.status_code == 413 and "disk quota of 1 MiB" in refused.json()["error"]
    assert [p.name for p in (site.data_dir / "uploads").iterdir()] == []
    # bob's disk is his own
    bob = site.client.post(
        "/api/submissions",
        headers=site.auth("bob"),
        files={"archive": ("b.zip", bot_zip("beta"), "application/octet-stream")},
    )
    assert bob.status_code == 202


def test_spent_versions_lose_their_archives_and_sources(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """Rejected and replaced versions: their archive in data_dir/uploads and their source
    in data_dir/submissions go, and no longer count against the author's disk; the
    active version keeps everything."""
    config = _config(tmp_path)
    uploads = config.data_dir / "uploads"
    uploads.mkdir(parents=True)
    author, _ = store.create_author("alice")
    made: dict[str, int] = {}
    for label, ok in (("old", True), ("bad", False), ("new", True)):
        archive = uploads / f"{label}.zip"
        archive.write_bytes(b"z" * 1000)
        version = store.add_submission(author.id, "alpha", str(archive), "0" * 64, 1000)
        source = config.data_dir / "submissions" / str(version.id)
        source.mkdir(parents=True)
        (source / "bot.py").write_bytes(b"s" * 500)
        claimed = store.claim_queued_version()
        assert claimed is not None and claimed.id == version.id
        store.finish_build(version.id, ok, label, "", "/b" if ok else None, None, {}, 1500)
        made[label] = version.id
    assert store.stored_bytes_of(author.id) == 4500
    worker = BuildWorker(store, config, lambda: None)
    assert worker.collect_files() == 2
    assert sorted(p.name for p in uploads.iterdir()) == ["new.zip"]
    assert sorted(p.name for p in (config.data_dir / "submissions").iterdir()) == [str(made["new"])]
    assert store.stored_bytes_of(author.id) == 1500
    assert worker.collect_files() == 0


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name",
    # all Cyrillic (one script, so only its look gives it away); case; digit one; capital I
    ["\u0430\u04cf\u0456\u0441\u0435", "Alice", "ALICE", "al1ce", "aIice"],
)
def test_author_names_confusable_with_a_taken_one_are_refused(site: Site, name: str) -> None:
    with pytest.raises(Conflict, match="looks like 'alice'"):
        site.store.create_author(name)


def test_mixed_script_names_are_refused_and_single_scripts_welcome(site: Site) -> None:
    with pytest.raises(Invalid, match="mixes scripts"):
        site.store.create_author("Jоhn")  # Cyrillic о inside Latin
    assert site.store.create_author("Иван_2")[0].name == "Иван_2"
    assert site.store.create_author("café")[0].name == "café"


def test_registration_refuses_a_look_alike_name(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(registration_open=True))
    answer = site.client.post("/api/register", json={"name": "b0b"})
    assert answer.status_code == 409 and "looks like 'bob'" in answer.json()["error"]
    mixed = site.client.post("/api/register", json={"name": "bоb2"})
    assert mixed.status_code == 400 and "mixes scripts" in mixed.json()["error"]


def test_a_bot_name_like_another_authors_bot_is_refused(site: Site) -> None:
    bob = site.store.author_by_name("bob")
    alice = site.store.author_by_name("alice")
    assert bob is not None and alice is not None
    with pytest.raises(Conflict, match="looks like 'alpha'"):
        site.store.add_submission(bob.id, "ALPHA", "/uploads/x.zip", "0" * 64)
    # the owner may name their own bots alike
    assert site.store.add_submission(alice.id, "alpha1", "/u/y.zip", "0" * 64).bot_name
    answer = site.client.post(
        "/api/submissions",
        headers=site.auth("bob"),
        files={"archive": ("a.zip", bot_zip("a1pha"), "application/octet-stream")},
    )
    assert answer.status_code == 409 and "looks like 'alpha'" in answer.json()["error"]
