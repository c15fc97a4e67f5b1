"""The report site in headless Chromium: index -> games (filtered) -> replay; a bot page."""

from __future__ import annotations

import re
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
    from playwright.sync_api import expect  # the page fixture has checked it is installed

    page.goto((site / "index.html").as_uri())
    assert "Leaderboard" in page.inner_text("h2")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no overflow
    shoot(page, "site-index", full_page=True)
    page.click("nav >> text=Games")
    # The click only starts the navigation: wait for the page's script to count the rows.
    expect(page.locator("#shown")).to_have_text("12 of 12 games")
    page.select_option("select[name=faults]", "malformed")
    expect(page.locator("#shown")).to_have_text("8 of 12 games")
    page.select_option("select[name=variant]", "gray")
    expect(page.locator("#shown")).to_have_text("4 of 12 games")
    assert "faults=malformed" in page.url
    shoot(page, "site-games")
    page.locator("#games tbody tr:not([hidden]) td:nth-child(2) a").first.click()
    page.wait_for_selector("[data-testid=step]")
    assert "gray wall" in page.inner_text(".az-sub")
    seed = re.search(r"--seed (\d+)", page.inner_text(".az-repro")).group(1)  # type: ignore[union-attr]
    assert int(seed) > 2**53  # tournament deal seeds are 64-bit ...
    assert f"seed {seed} " in page.inner_text(".az-sub")  # ... and shown exactly, not rounded
    assert "malformed" in page.inner_text("[data-testid=faults]")
    page.keyboard.press("End")
    assert page.inner_text("[data-testid=step]").startswith("final position")
    page.click("nav >> text=Leaderboard")
    page.click("table.az-grid >> text=faulty")
    expect(page.locator("h1")).to_have_text("faulty")
    assert "malformed" in page.inner_text(".az-fault")
    assert page.locator("svg").count() == 2  # rating over games, score distribution
    shoot(page, "site-bot", full_page=True)
    page.click(".az-fault a")  # the example opens its replay
    page.wait_for_selector("[data-testid=faults]")


PAGES = ("index.html", "games.html", "bots/faulty.html", "report.html")


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_a_laptop_and_a_phone(
    browser: Any, site: Path, shoot: Any, width: int
) -> None:
    """No page scrolls sideways (wide tables scroll inside their box); the report's
    leaderboard fits a 1280 px screen whole; on a phone the games list is one readable
    block per game, not columns squeezed to a letter."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        replay = next((site / "replays").glob("*.html")).relative_to(site)
        for name in (*PAGES, str(replay)):
            page.goto((site / name).as_uri())
            page_width = page.evaluate("document.documentElement.scrollWidth")
            assert page_width <= width, (name, page_width)
            shoot(page, f"site-{Path(name).stem[:24]}-{width}", full_page=name != "games.html")
        page.goto((site / "report.html").as_uri())
        board = page.locator("#leaderboard ~ div.scroll").first
        overflow = board.evaluate("e => e.scrollWidth - e.clientWidth")
        if width == 1280:
            assert overflow == 0  # the whole leaderboard, no scrolling
        else:
            assert overflow > 0  # it scrolls inside its box, the bot column stays put
            cell = board.locator("tbody tr td:nth-child(2)").first
            assert cell.evaluate("e => getComputedStyle(e).position") == "sticky"
        page.goto((site / "games.html").as_uri())
        first = page.locator("#games tbody tr").first
        height = first.evaluate("e => e.getBoundingClientRect().height")
        game_cell = first.locator("td:nth-child(2)").evaluate(
            "e => e.getBoundingClientRect().width"
        )
        assert height < 120 and game_cell > 150, (height, game_cell)
    finally:
        context.close()
