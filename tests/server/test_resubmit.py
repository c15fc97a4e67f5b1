"""An identical resubmission keeps its version and rating: an upload that unpacks to the
same files as the author's active version of the bot creates no version, stores no
archive, wakes no build and leaves the rating alone; the answer says which version was
kept (API, form, ``arena submit``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from .upload_corpus import Member, make_tgz, make_zip
from .web_helpers import Site, make_site, play, serving

ROOT = Path(__file__).resolve().parents[2]

MANIFEST = b'name = "alpha"\ncommand = "python3 bot.py"\n'


def _members(body: bytes = b"print('v2')\n") -> list[Member]:
    return [Member("bot.toml", MANIFEST), Member("bot.py", body), Member("lib/util.py", b"x=1\n")]


def _upload(site: Site, who: str, archive: bytes, name: str) -> httpx.Response:
    return site.client.post(
        "/api/submissions",
        headers=site.auth(who),
        files={"archive": (name, archive, "application/octet-stream")},
    )


def _build(site: Site) -> int:
    """What the build worker does with the queued version: accept it (keeping the meta)."""
    claimed = site.store.claim_queued_version()
    assert claimed is not None
    done = site.store.finish_build(
        claimed.id, True, "accepted", "log", f"/built/{claimed.id}", "d" * 12, {"language": "py"}
    )
    assert done.status == "active"
    return done.id


def _alpha_row(site: Site) -> tuple[int, float, float, int]:
    row = next(r for r in site.store.leaderboard() if r.bot_name == "alpha")
    return row.version_number, row.mu, row.sigma, row.games


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def test_an_identical_upload_keeps_the_active_version_and_its_rating(
    site: Site, tmp_path: Path
) -> None:
    first = _upload(site, "alice", make_zip(tmp_path / "a.zip", _members()).read_bytes(), "a.zip")
    assert first.status_code == 202 and first.json()["kept"] is False
    assert first.json()["version"] == 2
    v2 = _build(site)
    beta = site.store.versions_of("beta")[0].id
    play(site.store, [v2, beta], ["alpha", "beta"], seed=7)
    before = _alpha_row(site)
    assert before[0] == 2 and before[3] == 1
    woken = site.woken["builder"]
    stored = sorted((site.data_dir / "uploads").iterdir())

    # the same files, packed differently (tar.gz, other order): still identical
    again = make_tgz(tmp_path / "b.tar.gz", list(reversed(_members()))).read_bytes()
    response = _upload(site, "alice", again, "b.tar.gz")

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["kept"] is True and body["version"] == 2 and body["status"] == "active"
    assert body["submission"] == v2
    assert body["message"] == "identical to version 2: kept"
    assert [v.number for v in site.store.versions_of("alpha")] == [2, 1]
    assert _alpha_row(site) == before
    assert site.woken["builder"] == woken
    assert sorted((site.data_dir / "uploads").iterdir()) == stored, "no archive kept"


def test_a_changed_upload_is_a_new_version(site: Site, tmp_path: Path) -> None:
    _upload(site, "alice", make_zip(tmp_path / "a.zip", _members()).read_bytes(), "a.zip")
    _build(site)
    changed = make_zip(tmp_path / "c.zip", _members(b"print('v3')\n")).read_bytes()
    response = _upload(site, "alice", changed, "c.zip")
    assert response.status_code == 202 and response.json()["kept"] is False
    assert [v.number for v in site.store.versions_of("alpha")] == [3, 2, 1]


def test_identical_to_a_version_still_queued_is_not_kept(site: Site, tmp_path: Path) -> None:
    """Only the active version counts: one still building may yet be rejected."""
    archive = make_zip(tmp_path / "a.zip", _members()).read_bytes()
    assert _upload(site, "alice", archive, "a.zip").status_code == 202
    assert _upload(site, "alice", archive, "a.zip").status_code == 202
    assert [v.number for v in site.store.versions_of("alpha")] == [3, 2, 1]


def test_another_author_sending_the_same_files_is_refused_not_kept(
    site: Site, tmp_path: Path
) -> None:
    archive = make_zip(tmp_path / "a.zip", _members()).read_bytes()
    _upload(site, "alice", archive, "a.zip")
    _build(site)
    response = _upload(site, "bob", archive, "a.zip")
    assert response.status_code == 409
    assert "kept" not in response.text


def test_the_form_says_which_version_was_kept(site: Site, tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", _members()).read_bytes()
    _upload(site, "alice", archive, "a.zip")
    v2 = _build(site)
    csrf = site.sign_in("alice")
    response = site.client.post(
        "/submit",
        data={"csrf": csrf},
        files={"archive": ("a.zip", archive, "application/zip")},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == f"/me?kept={v2}#submission-{v2}"
    page = site.client.get(response.headers["location"])
    assert "alpha: identical to version 2: kept" in page.text
    assert [v.number for v in site.store.versions_of("alpha")] == [2, 1]


def test_the_kept_notice_never_names_another_authors_version(site: Site) -> None:
    beta = site.store.versions_of("beta")[0].id
    site.sign_in("alice")
    page = site.client.get(f"/me?kept={beta}")
    assert page.status_code == 200 and "identical to version" not in page.text


def test_arena_submit_says_kept(site: Site, tmp_path: Path) -> None:
    """``arena submit`` as a user runs it, against the server over a real socket: the
    first send is queued and built; the same folder again is kept, exit 0."""
    folder = tmp_path / "alpha"
    (folder / "lib").mkdir(parents=True)
    for m in _members():
        (folder / m.name).write_bytes(m.data)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARENA_TOKEN": site.tokens["alice"]}

    def submit(base: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "arena.cli", "submit", str(folder), "--server", base]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    with serving(site.client.app) as base:
        first = submit(base)
        assert first.returncode == 0, first.stderr
        assert "submitted alpha version 2" in first.stdout
        _build(site)
        again = submit(base)
    assert again.returncode == 0, again.stderr
    assert "alpha: identical to version 2: kept" in again.stdout
    assert [v.number for v in site.store.versions_of("alpha")] == [2, 1]
