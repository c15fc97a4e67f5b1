"""`arena bench report` runs `arena report` on stores of real games and reports JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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


def _rows(folder: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (``finished_at`` aside: the time each game was stored)."""
    import sqlite3

    db = sqlite3.connect(folder / STORE_NAME)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {}
    for table in tables:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] != "finished_at"]
        out[table] = sorted(db.execute(f"SELECT {', '.join(columns)} FROM {table}"), key=repr)
    out["indexes"] = sorted(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
    db.close()
    return out


def test_copied_games_equal_games_stored_through_the_store_api(tmp_path: Path) -> None:
    pool = play_pool(30)
    copied = GrowingStore(tmp_path / "copied", pool, 8, frames=True, base=100)
    copied.grow(150)  # 100 through the API, 50 copied
    copied.grow(330)  # copied across two repetitions of the base
    stored = GrowingStore(tmp_path / "stored", pool, 8, frames=True, base=100)
    stored._store(0, 330)  # every game through the store API, the old way
    rows = _rows(copied.outdir)
    assert rows == _rows(stored.outdir)
    assert len(rows["games"]) == 330 and rows["faults"] and rows["replays"]
    with Store(copied.outdir / STORE_NAME, readonly=True) as db:
        assert db.integrity_problems() == []
        record = GameRecord.model_validate_json(db.replay_source(329)[0])  # type: ignore[index]
        replay(record)  # a copy is still a real game
    first, again = load_results(copied.outdir), load_results(stored.outdir)
    assert first.bot_totals.equals(again.bot_totals)
    assert first.rated.digest() == again.rated.digest()


def _pg_rows(url: str, tables: set[str]) -> dict[str, list[tuple[object, ...]]]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    out = {}
    with engine.connect() as conn:
        for table in tables:
            columns = [
                c["name"]
                for c in sa.inspect(conn).get_columns(table)
                if c["name"] not in ("finished_at", "id")  # faults.id: PostgreSQL's own order
            ]
            rows = conn.exec_driver_sql(f"SELECT {', '.join(columns)} FROM {table}")
            out[table] = sorted((tuple(r) for r in rows), key=repr)
    engine.dispose()
    return out


def test_games_copied_in_postgresql_equal_games_stored_through_the_api(
    tmp_path: Path, postgres_url: str
) -> None:
    pool = play_pool(30)
    copied = GrowingStore(tmp_path / "copied", pool, 8, frames=True, base=100, url=postgres_url)
    copied.grow(150)  # 100 through the API, 50 copied in PostgreSQL
    copied.grow(1_130)  # past game 999: the game ids keep their six digits, then seven
    stored = GrowingStore(tmp_path / "stored", pool, 8, frames=True, base=100)
    stored._store(0, 1_130)  # every game through the store API, in SQLite
    sqlite_rows = _rows(stored.outdir)
    tables = set(sqlite_rows) - {"indexes", "meta"}
    assert _pg_rows(postgres_url, tables) == {t: sqlite_rows[t] for t in tables}
    assert len(sqlite_rows["games"]) == 1_130 and sqlite_rows["faults"]
    first, again = load_results(copied.outdir), load_results(stored.outdir)
    assert first.bot_totals.sort_index().equals(again.bot_totals.sort_index())  # rows unordered
    assert first.rated.digest() == again.rated.digest()
    with Store(postgres_url, readonly=True) as db:
        assert db.integrity_problems() == []
        record = GameRecord.model_validate_json(db.replay_source(1_129)[0])  # type: ignore[index]
        replay(record)
    # The report's seat scan: PostgreSQL's binary COPY decoded as SQLite's rows read, in
    # blocks that split rows across the driver's buffers and in one block.
    with (
        Store(postgres_url, readonly=True) as pg,
        Store(stored.outdir / STORE_NAME, readonly=True) as lite,
    ):
        for chunk in (7, 50_000):
            seats = [np.concatenate(list(db.outcome_seats(chunk=chunk))) for db in (pg, lite)]
            assert seats[0].shape == (len(sqlite_rows["seats"]), 5)
            assert np.array_equal(seats[0], seats[1])
            finished = [np.concatenate(list(db.finished_index_chunks(chunk))) for db in (pg, lite)]
            assert np.array_equal(finished[0], finished[1]) and len(finished[0]) == 1_130


def test_bench_report_refuses_a_store_it_cannot_use(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "report", "--sizes", "60", "--store", "sqlite:///x.sqlite"]) == 2
    assert "not a PostgreSQL URL" in capsys.readouterr().out
    # No server there (port 1 refuses): one line, before any game is played.
    url = "postgresql+psycopg://arena:secret@127.0.0.1:1/postgres"
    code = main(["bench", "report", "--sizes", "60", "--json", "--store", url])
    shown = "".join(capsys.readouterr())
    assert code != 0 and "Traceback" not in shown
    assert "cannot create a scratch database on postgresql+psycopg://arena:***@" in shown
    assert "secret" not in shown
