"""Fixtures of the server tests: a competition store on SQLite, and on a real PostgreSQL
(``postgres_url``, from tests/conftest.py); headless Chromium for the end-to-end tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")


from arena.store.competition import CompetitionStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty competition store, on each supported database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'competition.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[CompetitionStore]:
    opened = CompetitionStore.open(store_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def pages_outlive_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the store outdates a kept page, never the clock: an entry's ``MAX_AGE_S`` (1 s)
    can run out between two requests on a loaded machine and make a kept page look made
    anew. For tests that count hits; the clock's own part is tested with a driven clock
    (test_pagecache_stale.py)."""
    from arena.server import pagecache

    monkeypatch.setattr(pagecache, "MAX_AGE_S", 3600.0)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright (no browser download); see tests/viewer."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    reason = None
    if executable is None:
        reason = "no chromium on this machine (apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason:
        if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} (ARENA_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=flags)
        try:
            yield browser
        finally:
            browser.close()
