"""Loading a store: only finished games, schedule joined, optional config, clear errors."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from arena.play.job import FaultRow
from arena.report import load_results
from arena.store.tournament import STORE_NAME, Store, StoreError

from .conftest import hand_games
from .helpers import game, make_store, result


def test_finished_games_joined_with_schedule(hand_outdir: Path) -> None:
    results = load_results(hand_outdir)
    assert (results.scheduled, results.finished, results.complete) == (6, 5, False)
    assert list(results.finished_index) == [0, 1, 2, 3, 4]  # schedule order
    assert list(results.rated.index) == [0, 1, 2, 3, 4]
    assert results.game_ids() == {i: f"g{i:05d}" for i in range(5)}
    assert results.game_counts["n_players"] == {"2": 3, "3": 2}
    assert results.game_counts["end_reason"] == {"normal": 5}
    assert int(results.bot_totals["games"].sum()) == 2 + 2 + 2 + 3 + 3  # seats of finished games
    assert int(results.seat_totals["games"].sum()) == 2 + 2 + 2 + 3 + 3
    assert list(results.faults["kind"]) == ["illegal", "malformed", "timeout"]
    assert results.bots == ["alpha", "beta", "gamma"]
    assert results.config is None


def test_config_is_read_when_present(tmp_path: Path) -> None:
    outdir = make_store(tmp_path, hand_games()[:1], config={"name": "demo", "games": 1})
    results = load_results(outdir)
    assert results.config == {"name": "demo", "games": 1}
    assert results.complete


def test_missing_folder_or_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such folder"):
        load_results(tmp_path / "absent")
    with pytest.raises(StoreError, match="no tournament store here"):
        load_results(tmp_path)


def test_garbage_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / STORE_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable tournament store"):
        load_results(tmp_path)


def test_empty_sqlite_file_is_a_clear_error(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / STORE_NAME).close()
    with pytest.raises(StoreError, match="not a usable tournament store"):
        load_results(tmp_path)


def test_reads_while_the_tournament_writes(tmp_path: Path) -> None:
    games = [game(i, ("a", 10 + i, 1), ("b", i, 2)) for i in range(4)]
    unfinished = [replace(g, finished=False) for g in games[2:]]
    outdir = make_store(tmp_path, [*games[:2], *unfinished])
    with Store(outdir / STORE_NAME) as writer:  # the runner keeps its connection open
        assert load_results(outdir).finished == 2
        writer.add_result(result(games[3]))
        later = load_results(outdir)
        assert later.finished == 3
        assert list(later.finished_index) == [0, 1, 3]
        assert later.frontier == 1  # game 2 is still to play


def test_loading_never_writes(hand_outdir: Path) -> None:
    path = hand_outdir / STORE_NAME
    before = path.read_bytes()
    load_results(hand_outdir)
    assert path.read_bytes() == before


def test_snapshot_is_consistent_under_concurrent_writes(tmp_path: Path) -> None:
    """Games, seats and faults are read in one transaction: every snapshot taken while a
    writer adds games has exactly the seats (and faults) of the games it contains."""
    games = [
        game(
            i,
            ("a", 30, 1),
            ("b", 20, 2),
            ("c", 10, 3),
            faults=(FaultRow(2, "c", "timeout", 1, "slow", False),),
        )
        for i in range(80)
    ]
    outdir = make_store(tmp_path, [replace(g, finished=False) for g in games])

    def write() -> None:
        with Store(outdir / STORE_NAME) as writer:
            for g in games:
                writer.add_result(result(g))

    thread = threading.Thread(target=write)
    thread.start()
    snapshots = 0
    while thread.is_alive() or snapshots == 0:
        r = load_results(outdir)
        assert int(r.bot_totals["games"].sum()) == 3 * r.finished
        assert len(r.faults) == r.finished
        assert list(r.rated.index) == list(r.finished_index)
        snapshots += 1
    thread.join()
    assert load_results(outdir).finished == 80
