"""Browser fixtures: Debian's ``chromium`` driven by Playwright (no browser download).

Without a browser (or without Playwright) the browser tests skip with the reason;
``ARENA_REQUIRE_BROWSER=1`` (set by ``.ci/run``) turns that skip into a failure.
Screenshots go to the test's folder, and also to ``$ARENA_SCREENSHOT_DIR`` when set.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _unavailable(reason: str) -> None:
    if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (ARENA_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, for one module: Playwright's sync API keeps an event loop running while
    it is open, so a test after it that calls ``asyncio.run()`` (on the same pytest-xdist
    worker) would fail."""
    executable = _chromium()
    if executable is None:
        _unavailable("no chromium on this machine (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (1280x900) that fails the test on any script error or dialog."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.errors = errors
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


@pytest.fixture
def shoot(tmp_path: Path) -> Any:
    """``shoot(page, name)``: a PNG screenshot, kept in $ARENA_SCREENSHOT_DIR when set."""

    def take(page: Any, name: str, **kwargs: Any) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), **kwargs)
        keep = os.environ.get("ARENA_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)
        assert path.stat().st_size > 1000
        return path

    return take


CHATTY_READY = {"author": "Eve \x1b[2J<img src=x onerror=alert(1)>", "version": "2.0\u202erc"}
"""What the chatty bot says in ``ready``: markup, a terminal escape, a bidi override."""
SCRIPTED_BOT = Path(__file__).resolve().parents[1] / "referee" / "fixtures" / "scripted_bot.py"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def small_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 12-game tournament: python-random, a bot that writes stderr on every other
    decision (and announces ``CHATTY_READY``, no author in its bot.toml), and one that sends
    a malformed line at its third decision (forfeits)."""
    from arena.referee import TimeControl
    from arena.tournament import TournamentConfig, run_tournament

    root = tmp_path_factory.mktemp("site")
    root.chmod(0o755)  # readable by the per-bot uid
    bots = [REPO / "bots" / "python-random"]
    for name, mode, after in (("chatty", "chatty", 3), ("faulty", "malformed", 3)):
        folder = root / name
        folder.mkdir()
        shutil.copy(SCRIPTED_BOT, folder / "bot.py")
        author = "" if name == "chatty" else 'author = "A. <Tester> & co"\n'
        (folder / "bot.toml").write_text(
            f'name = "{name}"\nlanguage = "python"\n{author}'
            f'command = "/usr/bin/python3 bot.py {mode} {after}"\n'
        )
        if name == "chatty":  # announces itself with hostile text in `ready`
            (folder / "ready.json").write_text(json.dumps(CHATTY_READY))
        folder.chmod(0o755)
        bots.append(folder)
    # Generous clocks and no sandbox (its uid pool is shared machine-wide): these games test
    # the report site, and must fault exactly as scripted however loaded the machine is.
    config = TournamentConfig(
        bots=bots,
        players=[2],
        variants=["coloured", "gray"],
        seeds=1,
        output=root / "out",
        time=TimeControl(move_ms=10_000, init_ms=60_000),
        sandbox="off",
    )
    progress = run_tournament(config)
    assert progress.done == progress.total == 12
    return config.output
