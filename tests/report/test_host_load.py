"""CPU time in the store and reports, and the Host load flag (synthetic stores)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arena.report import build_report, load_results
from arena.report.sections import sections
from arena.store.tournament import STORE_NAME, Store

from .helpers import Game, Seat, game, make_store


def two(index: int, wall: float, cpu: float | None, other_cpu: float | None = None) -> Game:
    return game(
        index,
        Seat("a", 40, 1, decisions=10, think_mean_ms=wall, cpu_mean_ms=cpu),
        Seat("b", 30, 2, decisions=30, think_mean_ms=wall, cpu_mean_ms=other_cpu or cpu),
    )


def test_games_with_wall_far_above_cpu_are_flagged(tmp_path: Path) -> None:
    games = [
        two(0, wall=400.0, cpu=390.0),  # busy bots on a quiet host
        two(1, wall=400.0, cpu=100.0),  # the host was overloaded: 4x
        two(2, wall=4.0, cpu=1.0),  # 4x, but 3 ms of pipe latency is no harness trouble
        two(3, wall=400.0, cpu=None),  # CPU not measured: nothing to say
        two(4, wall=300.0, cpu=300.0, other_cpu=50.0),  # only b waited: b sleeps
    ]
    make_store(tmp_path, games, config={"time": {"clock": "cpu"}})
    report = build_report(load_results(tmp_path), bootstrap=0)
    flagged = report.host_load
    assert list(flagged["game_id"]) == ["g00001", "g00004"]
    first = flagged.iloc[0]
    assert first["wall_per_cpu"] == pytest.approx(4.0)
    assert first["seats"] == "a 4.0x, b 4.0x"
    assert flagged.iloc[1]["seats"] == "a 1.0x, b 6.0x"
    # 10 decisions at 300/300 and 30 at 300/50: per-decision means over the game.
    assert flagged.iloc[1]["cpu_mean_ms"] == pytest.approx((10 * 300 + 30 * 50) / 40)
    assert report.summary["host_load_games"] == 2
    section = next(s for s in sections(report) if s.key == "host_load")
    assert "stayed fair" in section.note and len(section.table) == 2
    lb = report.leaderboard.set_index("bot")
    # a: CPU measured in 4 games of 10 decisions (390, 100, 1, 300).
    assert lb.loc["a", "cpu_mean_ms"] == pytest.approx((390 + 100 + 1 + 300) / 4)


def test_wall_clock_tournaments_are_told_their_games_may_be_unfair(tmp_path: Path) -> None:
    make_store(tmp_path, [two(0, 400.0, 100.0)])
    report = build_report(load_results(tmp_path), bootstrap=0)
    note = next(s for s in sections(report) if s.key == "host_load").note
    assert "wall clocks" in note and "--clock cpu" in note


def test_older_stores_without_cpu_columns_still_load_and_upgrade(tmp_path: Path) -> None:
    make_store(tmp_path, [two(0, 400.0, 100.0)])
    path = tmp_path / STORE_NAME
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE seats DROP COLUMN cpu_mean_ms")
    db.execute("ALTER TABLE seats DROP COLUMN cpu_max_ms")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")  # as schema 2 wrote
    db.commit()
    db.close()
    results = load_results(tmp_path)  # read-only: the columns read as missing
    assert (results.bot_totals["cpu_decisions"] == 0).all()
    assert build_report(results, bootstrap=0).host_load.empty
    with Store(path) as store:  # opened for writing: migrated to schema 3
        assert {"cpu_mean_ms", "cpu_max_ms"} <= store.columns("seats")
        assert store.get_meta("schema_version") == "3"
