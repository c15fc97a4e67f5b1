"""The replay viewer in a real browser (headless Chromium): load, step, check what is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.viewer.command import replay_html

from .helpers import HOSTILE, random_record


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
