"""The server's pages in headless Chromium (Debian's ``chromium`` via Playwright), served
by uvicorn on a loopback port: readable at 1280 px and on a phone, the replay viewer runs
under the Content-Security-Policy, forms work without JavaScript."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

from .web_helpers import ALICE_STDERR, BOB_STDERR, Site, make_site, serving

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
PHONE = {"width": 390, "height": 844}


def _unavailable(reason: str) -> None:
    if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (ARENA_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        _unavailable("no chromium on this machine (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, str]]:
    site = make_site(tmp_path_factory.mktemp("web"), hostile=True)
    with serving(site.client.app) as base:
        yield site, base


@pytest.fixture
def shoot(tmp_path: Path) -> Any:
    def take(page: Any, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        keep = os.environ.get("ARENA_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)
        assert path.stat().st_size > 1000
        return path

    return take


def _page(browser: Any, viewport: dict[str, int]) -> Any:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.on("dialog", lambda d: (page.problems.append(f"dialog {d.message}"), d.dismiss()))
    page.on(
        "console",
        lambda m: page.problems.append(m.text) if m.type == "error" else None,
    )
    page.on(
        "response",
        lambda r: page.problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    return page


def _fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, PHONE], ids=["1280", "phone"])
def test_pages_are_readable(
    browser: Any, served: tuple[Site, str], shoot: Any, viewport: dict[str, int]
) -> None:
    _, base = served
    page = _page(browser, viewport)
    tag = "wide" if viewport["width"] > 1000 else "phone"
    try:
        page.goto(base + "/")
        assert "leaderboard" in page.inner_text("h1")
        assert page.locator("table.srv-board tr").count() == 4  # header + 3 bots
        assert _fits(page)  # the table scrolls inside its box, the page does not
        shoot(page, f"server-leaderboard-{tag}")
        page.click("table.srv-board >> text=alpha")
        page.wait_for_url("**/bots/alpha")  # the click only starts the navigation
        assert page.inner_text("h1").startswith("alpha")
        assert page.locator("svg.az-plot").count() == 1
        assert _fits(page)
        shoot(page, f"server-bot-{tag}")
        page.goto(base + "/games")
        assert _fits(page)
        page.locator("table.srv-games a code").first.click()
        page.wait_for_selector("[data-testid=step]")  # the viewer ran (CSP allows it)
        page.keyboard.press("End")
        assert page.inner_text("[data-testid=step]").startswith("final position")
        assert _fits(page)
        shoot(page, f"server-game-{tag}")
        assert page.problems == []
    finally:
        page.context.close()


def test_sign_in_and_see_own_stderr_only(
    browser: Any, served: tuple[Site, str], shoot: Any
) -> None:
    site, base = served
    page = _page(browser, {"width": 1280, "height": 900})
    try:
        page.goto(base + "/login")
        page.fill("input[name=token]", site.tokens["alice"])
        page.click("form[action='/login'] button")
        page.wait_for_url(base + "/me")
        text = page.inner_text("body")
        assert "Submissions" in text and "alpha" in text
        page.click("text=Build log and check-bot output >> nth=0")
        shoot(page, "server-me")
        page.goto(base + f"/games/{site.games[0]}")
        page.wait_for_selector("[data-testid=step]")
        page.click("summary")
        stderr = page.inner_text(".srv-stderr")
        assert ALICE_STDERR in stderr and BOB_STDERR not in page.content()
        page.click("button:has-text('Sign out')")
        page.wait_for_url(base + "/")
        assert "Sign in" in page.inner_text("nav")
        assert page.problems == []
    finally:
        page.context.close()


def test_organiser_page_shows_the_ladder_balance(
    browser: Any, served: tuple[Site, str], shoot: Any
) -> None:
    site, base = served
    page = _page(browser, {"width": 1280, "height": 900})
    try:
        page.goto(base + "/login")
        page.fill("input[name=token]", site.tokens["org"])
        page.click("form[action='/login'] button")
        page.goto(base + "/admin")
        assert "Ladder balance" in page.inner_text("body")
        assert _fits(page)
        shoot(page, "server-admin")
        assert page.problems == []
    finally:
        page.context.close()
