"""The tournament store on SQLite and on a real PostgreSQL: resume, exactly-once results,
the one writer, and the same records and ratings from the same master seed."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from tournament.simulate import by_strength, config, result, simulate

from arena.play.job import FaultRow
from arena.ratings import rate_games, seatings_to_games
from arena.report.data import load_results
from arena.store.tournament import (
    EXPECTED_KEY,
    SCHEMA,
    STORE_NAME,
    STORE_URL_NAME,
    Store,
    StoreError,
    StoreLocked,
    metadata,
    remember_location,
    store_location,
)
from arena.tournament.ledger import RatingLedger
from arena.tournament.runner import store_path

REPO = Path(__file__).resolve().parents[2]
BOTS = [f"bot{i}" for i in range(5)]
STRENGTH = {b: float(i) for i, b in enumerate(BOTS)}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """Where the games go: None (tournament.sqlite in the folder) or a PostgreSQL URL."""
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("postgres_url"))


def test_resume_stores_every_game_once_and_rates_them_as_from_scratch(
    tmp_path: Path, store_url: str | None
) -> None:
    cfg = config(tmp_path, BOTS, players=[2, 3], seeds=2, store=store_url)
    simulate(cfg, by_strength(STRENGTH), seed=1, stop_after=9)  # interrupted
    with Store(store_path(cfg)) as store:
        assert store.finished_count() == 9 < store.scheduled_count()
        RatingLedger(store).advance()
    games = simulate(cfg, by_strength(STRENGTH), seed=2)  # resumed: the rest only
    with Store(store_path(cfg)) as store:
        before = list(store.seat_rows())
        for game in games:  # every result delivered again: stored once
            assert not store.add_result(result(game, by_strength(STRENGTH)(game)))
        assert list(store.seat_rows()) == before
        assert store.finished_count() == store.scheduled_count() == len(games)
        assert store.integrity_problems() == []
        assert store.first_unfinished() == len(games)
        RatingLedger(store).advance()
        prefix, stored = store.ratings()
        rows = [(r[0], r[1], r[2], r[8]) for r in store.seat_rows()]
    assert prefix == len(games)
    scratch = rate_games(seatings_to_games(rows))
    assert {r.bot: pytest.approx((r.mu, r.sigma), abs=1e-9) for r in stored} == {
        bot: (float(r.mu), float(r.sigma)) for bot, r in scratch.items()
    }


def test_the_report_reads_a_database_store_through_the_folder(
    tmp_path: Path, store_url: str | None
) -> None:
    cfg = config(tmp_path, BOTS[:3], store=store_url)
    games = simulate(cfg, by_strength(STRENGTH))
    if store_url is not None:
        remember_location(cfg.output, store_url)
        assert not (cfg.output / STORE_NAME).exists()
        assert (cfg.output / STORE_URL_NAME).stat().st_mode & 0o077 == 0  # owner only
    assert store_location(cfg.output) == (store_url or cfg.output / STORE_NAME)
    results = load_results(cfg.output)
    assert results.finished == results.scheduled == len(games)
    assert set(results.bots) == set(BOTS[:3])


def test_faults_keep_their_order_and_hostile_text(tmp_path: Path, store_url: str | None) -> None:
    cfg = config(tmp_path, BOTS[:2], store=store_url)
    games = simulate(cfg, by_strength(STRENGTH), stop_after=0)
    faults = (
        FaultRow(1, "bot1", "timeout", 3, "late", False),
        FaultRow(0, "bot0", "illegal", 4, "nul \x00 and \x1b[2J", False),
        FaultRow(1, "bot1", "crash", 4, "gone", True),
    )
    with Store(store_path(cfg)) as store:
        assert store.add_result(dataclasses.replace(result(games[0], (2, 1)), faults=faults))
        logged = [(row[4], row[7]) for row in store.fault_log_rows()]
    assert [kind for kind, _ in logged] == ["timeout", "illegal", "crash"]
    message = logged[1][1]
    # SQLite keeps the raw text; PostgreSQL cannot hold NUL (a replacement character)
    assert message == ("nul \x00 and \x1b[2J" if store_url is None else "nul \ufffd and \x1b[2J")


def test_one_writer_at_a_time_readers_welcome(tmp_path: Path, store_url: str | None) -> None:
    location = store_url or tmp_path / STORE_NAME
    with Store(location) as writer:
        with pytest.raises(StoreLocked, match="another arena run"):
            Store(location)
        with Store(location, readonly=True) as reader:
            assert reader.scheduled_count() == 0
            with pytest.raises(StoreError, match="read-only"):
                reader.put_meta(x="1")
        writer.put_meta(x="1")
    Store(location).close()  # released on close


def test_the_expected_total_outlives_a_stopped_run(tmp_path: Path, store_url: str | None) -> None:
    """A report of a stopped run counts the whole schedule the scheduler announced, and
    never fewer games than were handed out."""
    cfg = config(tmp_path, BOTS, players=[2, 3], seeds=2, store=store_url)
    simulate(cfg, by_strength(STRENGTH), seed=1, stop_after=3)
    if store_url is not None:
        remember_location(cfg.output, store_url)  # the report finds the database
    with Store(store_path(cfg)) as store:
        handed_out = store.scheduled_count()
        assert store.expected_count() == handed_out  # nothing announced: what was handed out
        store.set_meta(EXPECTED_KEY, str(handed_out + 100))
    with Store(store_path(cfg), readonly=True) as reader:
        assert reader.expected_count() == reader.totals().scheduled == handed_out + 100
    assert load_results(cfg.output).scheduled == handed_out + 100
    with Store(store_path(cfg)) as store:
        store.set_meta(EXPECTED_KEY, "1")
        assert store.expected_count() == handed_out


def test_a_folder_keeps_its_games_where_they_are(tmp_path: Path, postgres_url: str) -> None:
    folder = tmp_path / "t"
    Store(folder / STORE_NAME).close()
    with pytest.raises(StoreError, match=r"games are in .*tournament\.sqlite"):
        store_location(folder, postgres_url)
    other = tmp_path / "u"
    remember_location(other, postgres_url)
    assert store_location(other) == store_location(other, postgres_url) == postgres_url
    with pytest.raises(StoreError, match="games are in postgresql"):
        store_location(other, "postgresql+psycopg://someone@elsewhere/db")


def test_an_unreachable_server_is_one_clear_line() -> None:
    with pytest.raises(StoreError, match="cannot reach the database server") as caught:
        Store("postgresql+psycopg://arena:secret@127.0.0.1:1/none")
    assert "secret" not in str(caught.value)  # the password is never shown


def test_sqlite_and_postgresql_have_the_same_tables(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "s.sqlite")
    db.executescript(SCHEMA)
    written = {
        table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    db.close()
    declared = {
        t.name: [c.name for c in t.columns if (t.name, c.name) != ("faults", "id")]
        for t in metadata.sorted_tables
    }
    assert written == declared


def moves(record_json: bytes) -> object:
    """A record without its timings (think and CPU time differ from run to run)."""
    record = json.loads(record_json)
    for round_ in record["rounds"]:
        for decision in round_["decisions"]:
            decision.pop("think_ms", None)
            decision.pop("cpu_ms", None)
            decision.pop("between_ms", None)
    return record


def _make_public(path: Path) -> None:
    """Bots run under their own uid: the folders must be readable all the way down."""
    for p in [path, *path.parents]:
        if p == Path("/tmp") or p == p.parent:
            break
        p.chmod(p.stat().st_mode | 0o755)


def test_the_same_master_seed_gives_the_same_records_and_ratings_on_both(
    tmp_path: Path, postgres_url: str
) -> None:
    """Real games (`arena tournament`), once into tournament.sqlite and once into
    PostgreSQL (``--store``): the same records, results and ratings; a second run into
    PostgreSQL resumes and has nothing left to play."""
    _make_public(tmp_path)
    bots = []
    for name in ("python-greedy", "python-random"):
        dest = tmp_path / "bots" / name
        shutil.copytree(REPO / "bots" / name, dest, ignore=shutil.ignore_patterns("bot"))
        bots.append(str(dest))
    _make_public(tmp_path / "bots")
    base = [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--bots", *bots]
    base += ["--seeds", "2", "--variants", "coloured", "gray", "--master-seed", "7"]
    base += ["--workers", "2"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    on_sqlite = tmp_path / "sqlite"
    on_postgres = tmp_path / "postgres"
    for cmd in (
        [*base, "--out", str(on_sqlite)],
        [*base, "--out", str(on_postgres), "--store", postgres_url],
        [*base, "--out", str(on_postgres)],  # resumed from the folder's store.url
    ):
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert not (on_postgres / STORE_NAME).exists()

    def stored(folder: Path) -> tuple[Any, Any, Any]:
        with Store(store_location(folder), readonly=True) as store:
            assert store.integrity_problems() == []
            seats = [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]
            return [(g, moves(data)) for g, data in store.records()], seats, store.ratings()

    records, seats, ratings = stored(on_sqlite)
    assert len(records) == 8
    assert stored(on_postgres) == (records, seats, ratings)
    report = {}
    for folder in (on_sqlite, on_postgres):
        results = load_results(folder)
        report[folder.name] = (results.finished, sorted(results.bots))
    assert report["sqlite"] == report["postgres"] == (8, ["python-greedy", "python-random"])
    replay = subprocess.run(
        [sys.executable, "-m", "arena.cli", "replay", str(on_postgres)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert replay.returncode == 0 and "8/8 records verified" in replay.stdout, replay.stdout


def test_postgresql_snapshot_sees_one_state(postgres_url: str, tmp_path: Path) -> None:
    cfg = config(tmp_path, BOTS[:3], store=postgres_url)
    games = simulate(cfg, by_strength(STRENGTH), stop_after=2)
    with Store(postgres_url, readonly=True) as reader, reader.snapshot():
        before = reader.finished_count()
        with Store(postgres_url) as writer:
            unfinished = list(writer.unfinished())
            writer.add_result(result(unfinished[0], (1, 2)))
        assert reader.finished_count() == before == 2  # the snapshot's state
    with Store(postgres_url, readonly=True) as reader:
        assert reader.finished_count() == 3
    assert len(games) > 3
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:  # a real PostgreSQL database, not a file
        assert conn.execute(sa.text("SELECT COUNT(*) FROM games")).scalar() == 3
    engine.dispose()


def test_the_tournament_file_names_the_store(tmp_path: Path) -> None:
    from arena.tournament.config import ConfigError, load_config

    file = tmp_path / "t.toml"
    file.write_text('bots = ["a", "b"]\nstore = "postgresql+psycopg://arena@db/games"\n')
    cfg = load_config(file, {})
    assert cfg.store == "postgresql+psycopg://arena@db/games"
    assert "store" not in cfg.model_dump() and "store" not in cfg.identity()  # no password
    assert load_config(file, {"store": "postgresql+psycopg://x@y/z"}).store.endswith("y/z")  # type: ignore[union-attr]
    file.write_text('bots = ["a", "b"]\nstore = "mysql://db/games"\n')
    with pytest.raises(ConfigError, match="not a database URL"):
        load_config(file, {})


def test_a_competition_database_is_not_taken_for_a_tournament(postgres_url: str) -> None:
    from arena.store.competition import CompetitionStore

    CompetitionStore.open(postgres_url).close()
    with pytest.raises(StoreError, match=r"not a tournament store \(it holds other tables"):
        Store(postgres_url)


@pytest.mark.slow
def test_kill_and_resume_on_postgresql_equals_an_uninterrupted_sqlite_run(
    tmp_path: Path, postgres_url: str
) -> None:
    """kill -9 of a tournament writing to PostgreSQL: its session (and the writer's
    advisory lock) ends with it; the resumed run stores every game once, with the
    results of an uninterrupted run into tournament.sqlite."""
    import signal
    import time

    _make_public(tmp_path)
    bots = []
    for name in ("python-greedy", "python-random", "c-greedy"):
        dest = tmp_path / "bots" / name
        shutil.copytree(REPO / "bots" / name, dest, ignore=shutil.ignore_patterns("bot"))
        bots.append(str(dest))
    _make_public(tmp_path / "bots")
    base = [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--bots", *bots]
    base += ["--players", "2", "3", "--seeds", "4", "--workers", "2"]
    out = tmp_path / "killed"
    cmd = [*base, "--out", str(out), "--store", postgres_url]

    def finished() -> int:
        try:
            with Store(postgres_url, readonly=True) as store:
                return store.finished_count()
        except StoreError:
            return 0  # not created yet

    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while finished() < 10 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the tournament ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert finished() >= 10
    resumed = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    clean = tmp_path / "clean"
    once = subprocess.run([*base, "--out", str(clean)], cwd=REPO, capture_output=True, timeout=300)
    assert once.returncode == 0, once.stderr

    def seats(location: Path | str) -> list[tuple[object, ...]]:
        with Store(location, readonly=True) as store:
            assert store.integrity_problems() == []
            assert store.finished_count() == store.scheduled_count()
            return [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]

    assert seats(postgres_url) == seats(clean / STORE_NAME)


def test_the_site_s_chosen_games_come_from_sql_on_both(
    tmp_path: Path, store_url: str | None
) -> None:
    """What the report site lists of a large tournament, chosen by the store: each bot's
    worst losses (as a plain sort of every loss), the last games (faulted ones), and the
    listing of a chosen few equal to the same rows of the whole listing."""
    cfg = config(tmp_path, BOTS, players=[2, 3], seeds=2, store=store_url)
    games = simulate(cfg, by_strength(STRENGTH), stop_after=0)
    with Store(store_path(cfg)) as store:
        for game in games:
            played = result(game, by_strength(STRENGTH)(game))
            if game is games[-2]:
                fault = FaultRow(0, game.bots[0], "timeout", 1, "late", False)
                played = dataclasses.replace(played, faults=(fault,))
            assert store.add_result(played)
    with Store(store_path(cfg), readonly=True) as store:
        seats = list(store.seat_rows())
        ids = dict(store.game_ids())
        everything = {row[0]: row for row in store.game_listing()}
        found = store.worst_losses(keep=3)
        recent, faulted = store.recent_indices(4), store.recent_indices(4, faulted=True)
        chosen = sorted(everything)[::3]
        picked = list(store.game_listing(indices=chosen))
    best = {i: max(r[3] for r in seats if r[0] == i) for i in ids}
    for bot in BOTS:
        losses = sorted(
            (-(best[r[0]] - r[3]), ids[r[0]], r[0], r[1])
            for r in seats
            if r[2] == bot and r[8] != 1
        )
        assert [(i, s, m) for b, i, s, m in found if b == bot] == [
            (i, s, -m) for m, _, i, s in losses[:3]
        ]
    assert recent == sorted(ids)[-4:]
    assert faulted == [games[-2].game_index]
    assert picked == [everything[i] for i in chosen]
