"""The hostile-upload corpus through the HTTP API and the upload form: every unsafe
archive is refused at upload time (400, its reason; JSON for the API, the site's error
page for the form), nothing is stored or queued, and the author's upload allowance is
given back. The build worker checks again later (tests/server/test_build_worker.py)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from .upload_corpus import (
    BOT_TOML,
    Member,
    files,
    make_tgz,
    make_zip,
    many_files_tgz,
    tgz_bomb,
    zip_bomb,
)
from .web_helpers import XSS, Site, bot_zip, make_site, serving, web_settings


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def _nothing_kept(site: Site) -> None:
    uploads = site.data_dir / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == [], "nothing stored"
    assert [b.name for b in site.store.bots()] == ["alpha", "beta"], "no bot created"
    assert [v.number for v in site.store.versions_of("alpha")] == [1], "no version queued"
    assert site.woken["builder"] == 0


def _api_upload(site: Site, archive: bytes, name: str = "a.zip") -> tuple[int, str]:
    response = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": (name, archive, "application/octet-stream")},
    )
    assert response.headers["content-type"] == "application/json"
    return response.status_code, str(response.json().get("error", ""))


def _damaged_zip(tmp: Path) -> bytes:
    data = make_zip(tmp / "d.zip", files(Member("lib.py", b"x = 1\n" * 500))).read_bytes()
    return data[: len(data) // 2]


def _zip_without_manifest(tmp: Path) -> bytes:
    return make_zip(tmp / "n.zip", [Member("bot.py", b"print(1)\n")]).read_bytes()


def _bad_manifest(tmp: Path) -> bytes:
    manifest = b'name = "bad name!"\ncommand = "python3 bot.py"\n'
    return make_zip(tmp / "m.zip", files(manifest=manifest)).read_bytes()


ATTACKS: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "zip-slip": (
        lambda t: make_zip(t / "a.zip", files(Member("../evil.txt", b"owned"))).read_bytes(),
        "zip-slip",
    ),
    "zip-slip-tgz": (
        lambda t: make_tgz(t / "a.tgz", files(Member("a/../../evil.txt", b"x"))).read_bytes(),
        "zip-slip",
    ),
    "absolute-path": (
        lambda t: make_tgz(t / "a.tgz", files(Member("/tmp/evil.txt", b"x"))).read_bytes(),
        "absolute path",
    ),
    "symlink-out": (
        lambda t: make_zip(
            t / "a.zip", files(Member("link", kind="symlink", target="../../etc"))
        ).read_bytes(),
        "symlink",
    ),
    "symlink-absolute": (
        lambda t: make_tgz(
            t / "a.tgz", files(Member("link", kind="symlink", target="/etc/passwd"))
        ).read_bytes(),
        "symlink",
    ),
    "device": (
        lambda t: make_tgz(t / "a.tgz", files(Member("dev", kind="chr"))).read_bytes(),
        "a device",
    ),
    "fifo-in-zip": (
        lambda t: make_zip(t / "a.zip", files(Member("pipe", kind="fifo"))).read_bytes(),
        "FIFO",
    ),
    "hard-link": (
        lambda t: make_tgz(
            t / "a.tgz", files(Member("h", kind="hardlink", target="/etc/passwd"))
        ).read_bytes(),
        "hard link",
    ),
    "setuid": (
        lambda t: make_zip(
            t / "a.zip", files(Member("s", b"#!/bin/sh\n", mode=0o4755))
        ).read_bytes(),
        "setuid",
    ),
    "zip-bomb": (lambda t: zip_bomb(t / "bomb.zip").read_bytes(), "MiB"),
    "tgz-bomb": (lambda t: tgz_bomb(t / "bomb.tgz").read_bytes(), "MiB"),
    "too-many-entries": (
        lambda t: many_files_tgz(t / "many.tgz", 10_001).read_bytes(),
        "more than 10000 files",
    ),
    "damaged": (_damaged_zip, "damaged"),
    "no-manifest": (_zip_without_manifest, "no bot.toml"),
    "bad-manifest": (_bad_manifest, "name"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_unsafe_archives_are_refused_at_upload_through_the_api(
    site: Site, tmp_path: Path, attack: str
) -> None:
    make, words = ATTACKS[attack]
    status, reason = _api_upload(site, make(tmp_path))
    assert status == 400, reason
    assert words in reason, reason
    assert str(site.data_dir) not in reason and str(tmp_path) not in reason
    _nothing_kept(site)
    assert not list(tmp_path.rglob("evil.txt")) and not Path("/tmp/evil.txt").exists()


def test_refused_uploads_give_the_allowance_back(site: Site, tmp_path: Path) -> None:
    state = site.client.app.state.arena  # type: ignore[attr-defined]
    state.uploads_window.limit = 1
    slip = ATTACKS["zip-slip"][0](tmp_path)
    for _ in range(3):
        assert _api_upload(site, slip)[0] == 400
    status, _ = _api_upload(site, bot_zip("alpha"))
    assert status == 202
    assert [v.number for v in site.store.versions_of("alpha")] == [2, 1]


def test_a_good_archive_is_still_accepted_and_the_scratch_folder_removed(site: Site) -> None:
    status, _ = _api_upload(site, bot_zip("alpha", {"lib/x.py": b"x = 1\n"}, top="alpha/"))
    assert status == 202
    kept = list((site.data_dir / "uploads").iterdir())
    assert len(kept) == 1 and kept[0].suffix == ".zip", kept  # the archive, no scratch
    assert site.woken["builder"] == 1


def test_limits_of_the_competition_apply_at_upload(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(unpacked_bytes=2**20))
    big = bot_zip("alpha", {"data.bin": bytes(range(256)) * 8192})  # 2 MiB, zip-deflated
    status, reason = _api_upload(site, big)
    assert status == 400 and "more than 1 MiB" in reason
    _nothing_kept(site)


def test_a_hostile_name_in_the_reason_is_shown_as_text_on_the_form(site: Site) -> None:
    """The form answers with the site's error page (escaped), linking back to the form."""
    csrf = site.sign_in("alice")
    archive = make_zip(
        site.data_dir.parent / "x.zip", files(Member(f"../{XSS}.txt", b"x"))
    ).read_bytes()
    response = site.client.post(
        "/submit",
        data={"csrf": csrf},
        files={"archive": ("x.zip", archive, "application/zip")},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert "zip-slip" in response.text and "<script>alert" not in response.text
    assert "&lt;script&gt;" in response.text
    assert 'href="/submit"' in response.text
    assert "Me (alice)" in response.text and 'href="/login"' not in response.text  # signed in
    _nothing_kept(site)


@pytest.mark.parametrize("attack", ["zip-bomb", "symlink-out", "damaged"])
def test_unsafe_archives_through_the_form(site: Site, tmp_path: Path, attack: str) -> None:
    make, words = ATTACKS[attack]
    csrf = site.sign_in("alice")
    response = site.client.post(
        "/submit",
        data={"csrf": csrf},
        files={"archive": ("a.bin", make(tmp_path), "application/octet-stream")},
    )
    assert response.status_code == 400 and words in response.text
    assert response.headers["content-type"].startswith("text/html")
    _nothing_kept(site)


def test_oversized_form_upload_gets_the_html_error_page(tmp_path: Path) -> None:
    site = make_site(tmp_path, settings=web_settings(upload_bytes=2**20))
    csrf = site.sign_in("alice")
    with zipfile.ZipFile(tmp_path / "big.zip", "w") as zf:  # stored: really 3 MiB
        zf.writestr("bot.toml", BOT_TOML)
        zf.writestr("blob.bin", bytes(range(256)) * (12 * 1024))
    big = (tmp_path / "big.zip").read_bytes()
    response = site.client.post(
        "/submit", data={"csrf": csrf}, files={"archive": ("big.zip", big, "application/zip")}
    )
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")
    assert "the archive is larger than the limit of 1 MiB" in response.text
    assert "<title>" in response.text and 'href="/submit"' in response.text
    assert "Me (alice)" in response.text  # the navigation knows who is signed in
    assert "script-src 'self'" in response.headers["content-security-policy"]
    api = site.client.post(
        "/api/submissions",
        headers=site.auth("alice"),
        files={"archive": ("big.zip", big, "application/zip")},
    )
    assert api.status_code == 413
    assert api.json() == {"error": "the archive is larger than the limit of 1 MiB"}
    _nothing_kept(site)


def _plain_tar(tmp: Path) -> bytes:
    import tarfile

    with tarfile.open(tmp / "a.tar", "w") as tf:
        tf.add(make_zip(tmp / "inner.zip", files()), arcname="bot.zip")
    return (tmp / "a.tar").read_bytes()


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (_plain_tar, "an uncompressed tar; upload a .tar.gz"),
        (lambda t: __import__("bz2").compress(b"x" * 100), "a bzip2 archive"),
        (lambda t: __import__("lzma").compress(b"x" * 100), "a xz archive"),
        (lambda t: b"\x00" * 600, "not a .zip or .tar.gz archive"),
    ],
    ids=["tar", "bzip2", "xz", "junk"],
)
def test_other_formats_are_named_in_the_refusal(
    site: Site, tmp_path: Path, make: Callable[[Path], bytes], words: str
) -> None:
    status, reason = _api_upload(site, make(tmp_path))
    assert status == 400 and words in reason, reason
    _nothing_kept(site)


def test_oversized_form_upload_over_a_real_socket_gets_the_html_page(tmp_path: Path) -> None:
    """Through uvicorn: the browser hears the 413 page (answered before the body is read)."""
    import secrets

    import httpx

    site = make_site(tmp_path, settings=web_settings(upload_bytes=2**20))
    big = secrets.token_bytes(4 * 2**20)
    with serving(site.client.app) as base:
        response = httpx.post(
            f"{base}/submit",
            files={"archive": ("a.zip", big, "application/zip")},
            data={"csrf": "x"},
            timeout=60,
        )
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")
    assert "the archive is larger than the limit of 1 MiB" in response.text
    _nothing_kept(site)
