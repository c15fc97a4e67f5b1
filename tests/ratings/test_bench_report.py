"""`arena bench report` runs `arena report` on stores of real games and reports JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.bench.realgames import play_pool
from arena.bench.report import GrowingStore, time_report
from arena.cli import main
from arena.engine import GameRecord, replay
from arena.report import load_results
from arena.store.tournament import STORE_NAME, Store


def test_bench_stores_hold_real_verifiable_games_with_faults(tmp_path: Path) -> None:
    pool = play_pool(30)
    store = GrowingStore(tmp_path, pool, 8, frames=True)
    store.grow(40)
    store.grow(60)  # grows in place: the first 40 games stay as they were
    results = load_results(tmp_path)
    assert results.finished == results.scheduled == 60
    assert set(results.game_counts["n_players"]) == {"2", "4"}
    with Store(tmp_path / STORE_NAME, readonly=True) as db:
        names = {b.name for b in db.bots()}
        faults = list(db.fault_rows())
        for index, game_id in db.game_ids():
            source = db.replay_source(index)
            assert source is not None and source[1] is not None
            record = GameRecord.model_validate_json(source[0])
            replay(record)  # a real game: the engine verifies every move
            assert set(record.players) <= names and game_id.startswith(f"{record.n_players}p-")
    assert faults and {f[3] for f in faults} == {"malformed"}
    assert all(f[2].startswith("faulty-") for f in faults)  # only the faulty bots fault


@pytest.mark.slow
def test_bench_report_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "report", "--sizes", "60", "--baseline-games", "0", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["games"] for r in runs] == [60, 60, 60]
    assert [r["path"] for r in runs] == ["first", "again", "frames drawn"]
    assert all(r["seconds"] > 0 and r["peak_mb"] > 10 for r in runs)
    assert runs[0]["ratings_seconds"] > 0
    assert all(r["site_mb"] > 0 for r in runs)  # the site is there after each run


@pytest.mark.slow
def test_old_path_reports_the_same_leaderboard(tmp_path: Path) -> None:
    GrowingStore(tmp_path, play_pool(30), 5, frames=True).grow(50)
    time_report(tmp_path, "first")
    new = (tmp_path / "report" / "leaderboard.csv").read_text()
    time_report(tmp_path, "old", old=True)
    old = (tmp_path / "report" / "leaderboard.csv").read_text()
    assert new.splitlines()[0] == old.splitlines()[0]
    column = new.splitlines()[0].split(",").index("bot")
    assert [r.split(",")[column] for r in new.splitlines()] == [
        r.split(",")[column] for r in old.splitlines()
    ]
