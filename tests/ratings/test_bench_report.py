"""`arena bench report` runs `arena report` on synthetic stores and reports JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.bench.report import synthetic_store, time_report
from arena.cli import main
from arena.report import load_results


def test_synthetic_store_is_a_finished_tournament(tmp_path: Path) -> None:
    synthetic_store(tmp_path, 40, 6)
    results = load_results(tmp_path)
    assert results.finished == results.scheduled == 40
    assert set(results.game_counts["n_players"]) == {"2", "4"}
    assert len(results.bots) == 6


@pytest.mark.slow
def test_bench_report_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "report", "--sizes", "60", "--baseline-games", "0", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["games"] for r in runs] == [60, 60]
    assert [r["path"] for r in runs] == ["new", "new, cached"]
    assert all(r["seconds"] > 0 and r["peak_mb"] > 10 and r["ratings_seconds"] > 0 for r in runs)


@pytest.mark.slow
def test_old_path_reports_the_same_leaderboard(tmp_path: Path) -> None:
    synthetic_store(tmp_path, 50, 5)
    time_report(tmp_path)
    new = (tmp_path / "report" / "leaderboard.csv").read_text()
    time_report(tmp_path, old=True)
    old = (tmp_path / "report" / "leaderboard.csv").read_text()
    assert new.splitlines()[0] == old.splitlines()[0]
    column = new.splitlines()[0].split(",").index("bot")
    assert [r.split(",")[column] for r in new.splitlines()] == [
        r.split(",")[column] for r in old.splitlines()
    ]
