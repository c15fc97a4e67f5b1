"""The report site in headless Chromium: index -> games (filtered) -> replay; a bot page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from arena.report.command import report_command


@pytest.fixture(scope="module")
def site(small_tournament: Path) -> Path:
    console = Console(file=open("/dev/null", "w"), width=80)  # noqa: SIM115
    assert report_command(small_tournament, console=console, bootstrap=0) == 0
    return small_tournament / "report"


def test_index_games_filter_replay_and_bot_page(page: Any, site: Path, shoot: Any) -> None:
    page.goto((site / "index.html").as_uri())
    assert "Leaderboard" in page.inner_text("h2")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no overflow
    shoot(page, "site-index", full_page=True)
    page.click("nav >> text=Games")
    assert page.inner_text("#shown") == "12 of 12 games"
    page.select_option("select[name=faults]", "malformed")
    assert page.inner_text("#shown") == "8 of 12 games"
    page.select_option("select[name=variant]", "gray")
    assert page.inner_text("#shown") == "4 of 12 games"
    assert "faults=malformed" in page.url
    shoot(page, "site-games")
    page.locator("#games tbody tr:not([hidden]) td:nth-child(2) a").first.click()
    page.wait_for_selector("[data-testid=step]")
    assert "gray wall" in page.inner_text(".az-sub")
    assert "malformed" in page.inner_text("[data-testid=faults]")
    page.keyboard.press("End")
    assert page.inner_text("[data-testid=step]").startswith("final position")
    page.click("nav >> text=Leaderboard")
    page.click("table.az-grid >> text=faulty")
    assert page.inner_text("h1") == "faulty"
    assert "malformed" in page.inner_text(".az-fault")
    assert page.locator("svg").count() == 2  # rating over games, score distribution
    shoot(page, "site-bot", full_page=True)
    page.click(".az-fault a")  # the example opens its replay
    page.wait_for_selector("[data-testid=faults]")
