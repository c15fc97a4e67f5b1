"""The store API: idempotent results, stored ratings, schema migration and refusal, the
writer's lock, and clear errors (the store left consistent) when writing fails."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from arena.ratings import rate_games, seatings_to_games
from arena.report.data import load_results
from arena.store.tournament import (
    LEGACY_VERSION,
    SCHEMA_VERSION,
    STORE_NAME,
    Store,
    StoreError,
    StoreLocked,
    upgrade_store,
)
from arena.tournament.config import TournamentConfig
from arena.tournament.ledger import RatingLedger

from .simulate import by_strength, config, result, simulate

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
BOTS = [f"bot{i}" for i in range(6)]
STRENGTH = {b: float(i) for i, b in enumerate(BOTS)}


def schema1_store(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / STORE_NAME)
    db.executescript((FIXTURES / "schema1.sql").read_text())
    db.close()
    return folder


def test_a_result_delivered_twice_is_stored_once(tmp_path: Path) -> None:
    games = simulate(config(tmp_path, BOTS[:3]), by_strength(STRENGTH))
    with Store(tmp_path / "out" / STORE_NAME) as store:
        before = list(store.seat_rows())
        assert not store.add_result(result(games[0], (2, 1)))
        assert list(store.seat_rows()) == before


def test_stored_ratings_equal_a_from_scratch_rating(tmp_path: Path) -> None:
    """Ratings updated as games finish (out of order), then compared with rating every
    finished game in schedule order from scratch."""
    cfg = config(tmp_path, BOTS, players=[2, 3], seeds=2)
    simulate(cfg, by_strength(STRENGTH), seed=3, stop_after=25)
    with Store(cfg.output / STORE_NAME) as store:
        RatingLedger(store).advance()
    simulate(cfg, by_strength(STRENGTH), seed=4)  # resume: the ledger goes on from there
    with Store(cfg.output / STORE_NAME) as store:
        ledger = RatingLedger(store)
        ledger.advance()
        prefix, stored = store.ratings()
        rows = [(r[0], r[1], r[2], r[8]) for r in store.seat_rows()]
        assert prefix == store.scheduled_count() == store.finished_count()
    scratch = rate_games(seatings_to_games(rows))
    assert {r.bot for r in stored} == set(scratch)
    for r in stored:
        assert r.mu == pytest.approx(float(scratch[r.bot].mu), abs=1e-9)
        assert r.sigma == pytest.approx(float(scratch[r.bot].sigma), abs=1e-9)


def test_ledger_rates_only_the_finished_prefix(tmp_path: Path) -> None:
    cfg = config(tmp_path, BOTS[:3])
    games = simulate(cfg, by_strength(STRENGTH), stop_after=0)
    with Store(cfg.output / STORE_NAME) as store:
        ledger = RatingLedger(store)
        store.add_result(result(games[1], (1, 2)))  # game 0 still running
        assert ledger.advance() == 0
        assert store.ratings() == (0, [])
        store.add_result(result(games[0], (1, 2)))
        assert ledger.advance() == 2
        assert store.ratings()[0] == 2


def test_schema1_store_is_refused_read_only_with_the_upgrade_command(tmp_path: Path) -> None:
    folder = schema1_store(tmp_path / "old")
    with pytest.raises(StoreError, match=f"arena upgrade {folder}"):
        load_results(folder)


def test_schema1_store_upgrades_and_keeps_every_result(tmp_path: Path) -> None:
    folder = schema1_store(tmp_path / "old")
    assert upgrade_store(folder)
    assert (folder / (STORE_NAME + ".v1")).is_file()
    assert not upgrade_store(folder)  # already current
    results = load_results(folder)
    assert results.finished == 4 and results.scheduled == 6
    assert sorted(results.bots) == ["a", "b", "c"]
    assert list(results.faults["bot"]) == ["c", "c"]
    wins = results.bot_totals["wins"]
    assert set(wins[wins > 0].index) == {"a"}
    with Store(folder / STORE_NAME, readonly=True) as store:
        assert store.integrity_problems() == []
        assert {b.version for b in store.bots()} == {LEGACY_VERSION}
        assert [g.bots for g in store.unfinished()] == [("b", "c"), ("c", "b")]
        identity = json.loads(store.get_meta("identity") or "{}")
        assert identity["bots"][0] == ["a", LEGACY_VERSION]
        assert identity["seating"] == "rotations"  # how schema-1 stores seated bots
        assert identity["time"]["clock"] == "wall"  # the only clock before schema 3
        assert (results.bot_totals["cpu_decisions"] == 0).all()  # not measured


def schema2_store(tmp_path: Path) -> Path:
    """A store as schema 2 wrote it: no per-seat CPU columns, no clock in its definition."""
    cfg = config(tmp_path, BOTS[:3])
    simulate(cfg, by_strength(STRENGTH))
    path = cfg.output / STORE_NAME
    db = sqlite3.connect(path)
    for column in ("cpu_mean_ms", "cpu_max_ms"):
        db.execute(f"ALTER TABLE seats DROP COLUMN {column}")
    for key, data in (("identity", cfg.identity()), ("config", cfg.model_dump(mode="json"))):
        for name in ("clock", "wall_ceiling"):
            del data["time"][name]
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(data)))
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    return cfg.output


def test_schema2_store_reads_without_cpu_times_and_upgrades_to_wall_clocks(
    tmp_path: Path,
) -> None:
    folder = schema2_store(tmp_path)
    before = load_results(folder)  # read-only, not upgraded: CPU times read as missing
    assert before.finished > 0 and (before.bot_totals["cpu_decisions"] == 0).all()
    assert upgrade_store(folder)
    assert (folder / (STORE_NAME + ".v2")).is_file()
    assert not upgrade_store(folder)
    with Store(folder / STORE_NAME, readonly=True) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION) == "3"
        assert {"cpu_mean_ms", "cpu_max_ms"} <= store.columns("seats")
        for key in ("identity", "config"):
            time_control = json.loads(store.get_meta(key) or "{}")["time"]
            assert (time_control["clock"], time_control["wall_ceiling"]) == ("wall", 5.0)
    after = load_results(folder)
    assert after.finished == before.finished
    assert (after.bot_totals["cpu_decisions"] == 0).all()
    assert after.config is not None and after.config["time"]["clock"] == "wall"


def test_a_current_store_keeps_its_clock(tmp_path: Path) -> None:
    cfg = config(tmp_path, BOTS[:3])
    simulate(cfg, by_strength(STRENGTH))
    with Store(cfg.output / STORE_NAME) as store:
        store.put_meta(identity=json.dumps(cfg.identity(), sort_keys=True))
    with Store(cfg.output / STORE_NAME) as store:  # reopened for writing: nothing migrates
        assert json.loads(store.get_meta("identity") or "{}")["time"]["clock"] == "cpu"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / STORE_NAME) as store:
        store.put_meta(schema_version=str(SCHEMA_VERSION + 1))
    for readonly in (True, False):
        with pytest.raises(StoreError, match="newer arena"):
            Store(tmp_path / STORE_NAME, readonly=readonly)


def test_one_writer_per_store_and_the_lock_names_it(tmp_path: Path) -> None:
    with Store(tmp_path / STORE_NAME):
        code = (
            "import sys; from pathlib import Path; from arena.store.tournament import Store, "
            "StoreLocked\ntry:\n    Store(Path(sys.argv[1]))\nexcept StoreLocked as e:\n"
            "    print(e)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / STORE_NAME)],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert f"another arena run (pid {os.getpid()})" in out.stdout, out.stderr
        Store(tmp_path / STORE_NAME, readonly=True).close()  # readers are welcome
    Store(tmp_path / STORE_NAME).close()  # released on close
    with pytest.raises(StoreLocked), Store(tmp_path / STORE_NAME), Store(tmp_path / STORE_NAME):
        pass


@contextlib.contextmanager
def failing_inserts(store: Store, error: str, after: int) -> Iterator[None]:
    """Make the store's n-th INSERT fail like a full disk or a read-only folder (the
    driver's own error, as SQLite raises it), on Core's executions and on the writer's
    driver connection alike (results are written on the latter)."""
    left = [after]

    def check(statement: str) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            if left[0] == 0:
                raise sqlite3.OperationalError(error)
            left[0] -= 1

    def hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        check(statement)

    class Failing:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        @property
        def in_transaction(self) -> bool:
            return self.db.in_transaction

        def execute(self, sql: str, *args: Any) -> Any:
            check(sql)
            return self.db.execute(sql, *args)

        def executemany(self, sql: str, *args: Any) -> Any:
            check(sql)
            return self.db.executemany(sql, *args)

    driver = store._raw_writer
    assert driver is not None
    sa.event.listen(store.engine, "before_cursor_execute", hook)
    store._raw_writer = Failing(driver)  # type: ignore[assignment]
    try:
        yield
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", hook)
        store._raw_writer = driver


@pytest.mark.parametrize(
    ("error", "says"),
    [
        ("database or disk is full", "the disk is full"),
        ("attempt to write a readonly database", "cannot write here"),
    ],
)
def test_a_failed_write_is_a_clear_resumable_error_and_leaves_the_store_consistent(
    tmp_path: Path, error: str, says: str
) -> None:
    cfg = config(tmp_path, BOTS[:3])
    games = simulate(cfg, by_strength(STRENGTH), stop_after=2)
    with Store(cfg.output / STORE_NAME) as store:
        unfinished = list(store.unfinished())
        with (
            failing_inserts(store, error, after=1),
            pytest.raises(StoreError, match=says) as caught,
        ):
            store.add_result(result(unfinished[0], (1, 2)))  # fails on its seat rows
        assert caught.value.resumable
        assert store.integrity_problems() == []
        assert store.finished_count() == 2  # the half-written game is not there
    assert len(games) > 2


def test_a_damaged_store_is_a_clear_error(tmp_path: Path) -> None:
    cfg = config(tmp_path, BOTS[:3])
    simulate(cfg, by_strength(STRENGTH))
    path = cfg.output / STORE_NAME
    data = bytearray(path.read_bytes())
    data[100:4096] = os.urandom(3996)  # the header page's schema area
    path.write_bytes(bytes(data))
    replay = subprocess.run(
        [sys.executable, "-m", "arena.cli", "replay", str(cfg.output)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert replay.returncode == 2
    assert "not a usable tournament store" in replay.stderr
    assert "Traceback" not in replay.stderr


def test_resume_takes_the_stored_seating_when_none_is_given(tmp_path: Path) -> None:
    """A schema-1 store seated by rotations (then the only mode): resuming it with the
    same command, which no longer says so, plays on by rotations; a seating the user
    does give is checked against the store as before."""
    from arena.tournament.runner import resumed_config

    folder = schema1_store(tmp_path / "old")
    with Store(folder / STORE_NAME) as store:  # opened for writing: migrated
        two = [tmp_path / "a", tmp_path / "b"]
        unset = TournamentConfig(bots=two, output=folder)
        assert unset.seating == "balanced"  # today's default
        assert resumed_config(store, unset).seating == "rotations"
        given = TournamentConfig(bots=two, output=folder, seating="balanced")
        assert resumed_config(store, given).seating == "balanced"  # refused later, by name
    fresh = tmp_path / "fresh"
    with Store(fresh / STORE_NAME) as store:  # nothing stored: the defaults
        fresh_config = TournamentConfig(bots=[tmp_path / "a", tmp_path / "b"], output=fresh)
        assert resumed_config(store, fresh_config).seating == "balanced"


def test_resume_takes_the_stored_clock_when_none_is_given(tmp_path: Path) -> None:
    from arena.referee.clock import TimeControl
    from arena.tournament.runner import resumed_config

    folder = schema2_store(tmp_path)
    with Store(folder / STORE_NAME) as store:  # migrated: its games ran on wall clocks
        unset = config(tmp_path, BOTS[:3])
        assert unset.time.clock.value == "cpu"
        assert resumed_config(store, unset).time.clock.value == "wall"
        given = config(tmp_path, BOTS[:3], time=TimeControl(clock="cpu"))
        assert resumed_config(store, given).time.clock.value == "cpu"


def test_each_bot_version_keeps_the_first_ready_it_announced(tmp_path: Path) -> None:
    from dataclasses import replace

    from arena.play.job import Announcement, ScheduledGame

    path = tmp_path / STORE_NAME
    hostile = Announcement("x\x1b[2J", "<b>Eve</b>", "1.0\u202e")
    with Store(path) as store:
        store.schedule_games(
            ScheduledGame(i, f"g{i}", 2, "coloured", 0, i, 0, ("a", "b"), ("v1", "v1"))
            for i in range(3)
        )
        first = replace(result(next(store.schedule()), (1, 2)), announced=(hostile, None))
        assert store.add_result(first)
        games = list(store.schedule())
        later = Announcement("a", "someone else", "2.0")
        store.add_result(replace(result(games[1], (2, 1)), announced=(later, Announcement("b"))))
        store.add_result(result(games[2], (1, 2)))  # a result without announcements
    with Store(path, readonly=True) as store:
        # raw in the store (shown through textsafe); the first announcement is kept
        assert store.announcements() == {"a": hostile, "b": Announcement("b", None, None)}


def test_a_store_from_before_announcements_opens_and_gains_them(tmp_path: Path) -> None:
    cfg = config(tmp_path, BOTS[:3])
    simulate(cfg, by_strength(STRENGTH))
    path = cfg.output / STORE_NAME
    db = sqlite3.connect(path)
    db.execute("DROP TABLE announced")
    db.commit()
    db.close()
    with Store(path, readonly=True) as store:  # read-only: nothing announced, no error
        assert store.announcements() == {} and store.finished_count() > 0
    assert load_results(cfg.output).finished > 0
    with Store(path) as store:  # a writer's open adds the table
        assert store.announcements() == {}
        assert "announced" in store.tables()


def test_scheduling_skips_games_already_scheduled_by_index_or_id(tmp_path: Path) -> None:
    """Games are scheduled a batch to a statement: one already stored (by index or game
    id) or twice in the batch is skipped, as a per-game insert doing nothing on conflict
    did, and results find their seats with and without the store that scheduled them."""
    from arena.play.job import ScheduledGame

    def game(index: int, game_id: str, bots: tuple[str, str]) -> ScheduledGame:
        return ScheduledGame(index, game_id, 2, "coloured", 0, index, 0, bots, ("v1", "v1"))

    with Store(tmp_path / STORE_NAME) as store:
        assert store.schedule_games([game(0, "a", ("x", "y"))]) == 1
        batch = [
            game(0, "other", ("y", "x")),  # index taken
            game(5, "a", ("y", "x")),  # id taken
            game(1, "b", ("y", "x")),
            game(1, "b", ("x", "y")),  # twice in the batch: the first is kept
            game(2, "c", ("x", "y")),
        ]
        assert store.schedule_games(batch) == 2
        assert store.scheduled_count() == 3
        assert store.add_result(result(game(1, "b", ("y", "x")), (1, 2)))
    with Store(tmp_path / STORE_NAME) as store:  # reopened: seats looked up in the store
        assert store.add_result(result(game(2, "c", ("x", "y")), (2, 1)))
        assert store.add_result(result(game(0, "a", ("x", "y")), (1, 2)))
        assert not store.add_result(result(game(0, "a", ("x", "y")), (1, 2)))
        rows = {(r[0], r[1]) for r in store._all("SELECT game_index, seat FROM seats")}
        names = dict(store._all("SELECT game_index, game_id FROM schedule"))
        seated = store._all(
            "SELECT s.game_index, s.seat, b.name FROM seats s JOIN bots b USING (bot_id) "
            "ORDER BY 1, 2"
        )
    assert names == {0: "a", 1: "b", 2: "c"}
    assert [tuple(r) for r in seated] == [
        (0, 0, "x"), (0, 1, "y"), (1, 0, "y"), (1, 1, "x"), (2, 0, "x"), (2, 1, "y"),
    ]  # fmt: skip
    assert rows == {(i, s) for i in range(3) for s in range(2)}


def test_sqlite_stores_a_result_row_for_row_as_core_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite writes a result as SQL run as written, other databases through Core: the
    same rows either way (faults, frames and announcements included), and a result
    delivered twice is stored once by both."""
    import dataclasses

    import arena.store.tournament as tournament_store
    from arena.play.job import Announcement, FaultRow

    def played(game: Any) -> Any:
        plain = result(game, (1, 2))
        return dataclasses.replace(
            plain,
            record_json=b'{"r": 1}',
            replay_json=b'{"frames": []}',
            faults=(FaultRow(1, game.bots[1], "timeout", 2, "slow <b>", True),),
            announced=(Announcement("n0", "a0", "1.0"), None),
        )

    tables = ("games", "seats", "faults", "replays", "announced")
    rows = {}
    for path in ("raw", "core"):
        cfg = config(tmp_path / path, BOTS[:3])
        simulate(cfg, by_strength(STRENGTH), stop_after=0)
        if path == "core":
            monkeypatch.setattr(tournament_store, "_add_rows_sqlite", tournament_store._add_rows)
        with Store(cfg.output / STORE_NAME) as store:
            for game in list(store.unfinished())[:3]:
                assert store.add_result(played(game))
                assert not store.add_result(played(game))
        db = sqlite3.connect(cfg.output / STORE_NAME)
        rows[path] = {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}
        db.close()
    finished_at = 1  # the games' column set by the clock
    for rows_of in rows.values():
        rows_of["games"] = [r[:finished_at] + r[finished_at + 1 :] for r in rows_of["games"]]
    assert rows["raw"] == rows["core"]
    assert [len(rows["raw"][t]) for t in tables] == [3, 6, 3, 3, 2]  # seat 0 rotates
