"""The replay viewer in a real browser (headless Chromium): load, step, check what is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.viewer.command import replay_html
from arena.viewer.frames import viewer_data

from .helpers import HOSTILE, random_record

PAGE_TIME = 1_800_000_000_000
"""The fake clock's start (ms since the epoch)."""


def _open(page: Any, tmp_path: Path, record: Any, name: str = "replay") -> None:
    path = tmp_path / f"{name}.html"
    path.write_text(replay_html(record, "g-7"), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("[data-testid=step]")


def _final_shown(page: Any, n: int) -> list[int]:
    return [int(page.inner_text(f"[data-testid=final-total-{seat}]")) for seat in range(n)]


def test_step_to_the_end_shows_the_recorded_scores(page: Any, tmp_path: Path, shoot: Any) -> None:
    names = ["c-greedy", "python-greedy"]
    record = random_record(2, "coloured", seed=11, names=names, stderr=True, greedy=True)
    _open(page, tmp_path, record)
    total = sum(len(r.decisions) for r in record.rounds)
    assert page.inner_text("[data-testid=step]") == f"round 1 · decision 1 of {total}"
    assert page.inner_text("[data-testid=move-now]") == record.rounds[0].decisions[0].move
    assert "considering move 1" in page.inner_text("[data-testid=stderr-now]")
    page.click("[data-testid=next]")
    page.click("[data-testid=next]")
    assert page.inner_text("[data-testid=step]") == f"round 1 · decision 3 of {total}"
    # 5 factories + the centre with the marker, 2 boards of 25 wall cells
    assert page.locator(".az-factory").count() == 5
    assert page.locator(".az-board").count() == 2
    assert page.locator(".az-board").first.locator("[data-cell]").count() == 25
    page.click("[data-testid=next-round]")
    assert "round 2 · decision" in page.inner_text("[data-testid=step]")
    page.click("[data-testid=next-round]")
    assert "considering move" in page.inner_text("[data-testid=stderr-now]")
    shoot(page, "replay-coloured-2p")
    page.keyboard.press("End")
    assert page.inner_text("[data-testid=step]") == f"final position · {total} decisions"
    expected = [f.total for f in record.final]
    assert _final_shown(page, 2) == expected
    assert [page.inner_text(f"[data-testid=score-{s}]") for s in range(2)] == [
        f"final {t}" for t in expected
    ]
    page.keyboard.press("ArrowLeft")
    assert page.inner_text("[data-testid=step]") == f"round {record.rounds[-1].number} · " + (
        f"decision {total} of {total}"
    )


def test_gray_four_players_with_a_fault(page: Any, tmp_path: Path, shoot: Any) -> None:
    record = random_record(4, "gray", seed=4, names=[HOSTILE, "b", "c", "d"], fault_seat=2)
    _open(page, tmp_path, record)
    assert page.locator(".az-factory").count() == 9
    assert page.locator(".az-board").count() == 4
    # gray wall: empty cells carry no colour
    assert page.locator(".az-board .az-cell[class*=az-ghost]").count() == 0
    faults = page.inner_text("[data-testid=faults]")
    assert "malformed in round 1 — forfeit" in faults and "the reply is not JSON" in faults
    assert HOSTILE in faults  # shown as text, never as markup
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    page.click("text=go to move")
    assert "played by the referee" in page.inner_text("[data-testid=now]")
    page.click("[data-testid=last]")
    assert _final_shown(page, 4) == [f.total for f in record.final]
    assert page.inner_text("[data-testid=reproduce]").startswith("arena match ")
    shoot(page, "replay-gray-4p-final", full_page=True)


def test_timeline_speed_first_fault_and_no_spoiler(page: Any, tmp_path: Path, shoot: Any) -> None:
    record = random_record(2, "coloured", seed=5, names=["ann", "faulty"], fault_seat=1)
    data = viewer_data(record)
    total = sum(len(r.decisions) for r in record.rounds)
    # Playback runs on a fake clock, paused: only run_for() moves it, whatever the load
    # (installed alone, it also ticks with real time: 2 steps too many on a busy machine).
    page.clock.install(time=PAGE_TIME)
    _open(page, tmp_path, record)
    page.clock.pause_at(PAGE_TIME + 60_000)
    # No spoiler: the result is not on the page before the final position...
    assert page.locator("[data-testid=final]").is_hidden()
    assert page.locator("[data-testid=final-total-0]").is_hidden()
    assert page.locator("[data-testid=reproduce]").is_visible()
    # ...unless asked for.
    page.click("[data-testid=show-result]")
    assert page.locator("[data-testid=final-total-0]").is_visible()
    page.click("[data-testid=show-result]")
    assert page.locator("[data-testid=final]").is_hidden()
    # The timeline: any decision at once.
    page.locator("[data-testid=timeline]").fill("17")
    assert _step(page) == 17
    assert "decision 18 of" in page.inner_text("[data-testid=step]")
    page.keyboard.press("ArrowRight")
    assert page.input_value("[data-testid=timeline]") == "18"
    # Playback speed: 1x is a decision per 500 ms, 4x per 125 ms.
    page.keyboard.press("Home")
    page.click("[aria-label='play / pause (space)']")
    page.clock.run_for(1000)
    assert _step(page) == 2
    page.select_option("[data-testid=speed]", label="4×")
    page.clock.run_for(1000)
    assert _step(page) == 2 + 8
    page.click("[aria-label='play / pause (space)']")
    # Jump to the first fault: the first decision the referee played for the faulty seat.
    first = min(s for s in data["fault_steps"] if s is not None)
    page.click("[data-testid=first-fault]")
    assert _step(page) == first
    assert "played by the referee" in page.inner_text("[data-testid=now]")
    shoot(page, "replay-timeline-first-fault", full_page=True)
    page.keyboard.press("End")
    assert _step(page) == total
    assert page.locator("[data-testid=final-total-0]").is_visible()
    assert page.locator("[data-testid=show-result]").is_hidden()
    shoot(page, "replay-final-result", full_page=True)


def test_white_tiles_are_told_from_empty_cells(page: Any, tmp_path: Path, shoot: Any) -> None:
    record = random_record(2, "coloured", seed=11, greedy=True)
    _open(page, tmp_path, record)
    page.keyboard.press("End")
    white = page.locator(".az-board .az-wallrow .az-t-W").first
    empty = page.locator(".az-board .az-cell.az-ghost-W").first
    assert white.count() == 1 and empty.count() == 1

    def style(locator: Any) -> dict[str, str]:
        return locator.evaluate(
            "e => { const s = getComputedStyle(e); return {border: s.borderTopStyle, "
            "width: s.borderTopWidth, image: s.backgroundImage}; }"
        )

    tile, cell = style(white), style(empty)
    assert tile["border"] == "solid" and cell["border"] == "dashed"
    assert float(tile["width"].removesuffix("px")) >= 2 > float(cell["width"].removesuffix("px"))
    assert "radial-gradient" in tile["image"] and cell["image"] == "none"
    white.scroll_into_view_if_needed()
    shoot(page, "replay-white-tiles")


def _step(page: Any) -> int:
    return int(page.get_attribute("#azul-viewer", "data-step"))


def test_time_warnings_are_listed_as_text(page: Any, tmp_path: Path, shoot: Any) -> None:
    from arena.engine.record import WarningRecord

    record = random_record(2, "coloured", seed=5, names=[HOSTILE, "b"])
    warned = record.model_copy(
        update={
            "warnings": [
                WarningRecord(seat=0, round=2, message="used 1400 ms of CPU time, over its 1000 ms")
            ]
        }
    )
    _open(page, tmp_path, warned)
    shown = page.inner_text("[data-testid=time-warnings]")
    assert "Time warnings (1)" in shown and "over the soft limit in round 2" in shown
    assert "used 1400 ms of CPU time" in shown and HOSTILE in shown  # text, never markup
    shoot(page, "replay-time-warnings", full_page=True)
    _open(page, tmp_path, record, "plain")
    assert page.locator("[data-testid=time-warnings]").count() == 0
