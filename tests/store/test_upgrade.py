"""`arena upgrade`: old tournament folders and competition databases are upgraded in
place; a newer store or something that is not a store is refused with what was found."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from arena.report.data import load_results
from arena.store.competition import CompetitionStore
from arena.store.engine import StoreError
from arena.store.migrations import head_revision
from arena.store.sprt import SprtStore
from arena.store.tournament import SCHEMA_VERSION, STORE_NAME, Store
from arena.store.upgrade import upgrade

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "tournament" / "fixtures"


def schema1_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    db = sqlite3.connect(folder / STORE_NAME)
    db.executescript((FIXTURES / "schema1.sql").read_text())
    db.close()
    return folder


def arena_upgrade(target: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "upgrade", str(target)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_a_schema1_folder_is_upgraded_once_and_keeps_a_copy(tmp_path: Path) -> None:
    folder = schema1_folder(tmp_path / "old")
    done = arena_upgrade(folder)
    assert done.returncode == 0, done.stderr
    assert f"upgraded from schema 1 to {SCHEMA_VERSION}" in done.stdout
    assert (folder / f"{STORE_NAME}.v1").is_file()
    assert load_results(folder).finished == 4
    again = arena_upgrade(folder / STORE_NAME)  # the file itself: the same store
    assert again.returncode == 0 and "already up to date" in again.stdout, again.stderr


def test_a_newer_tournament_store_is_refused_with_what_was_found(tmp_path: Path) -> None:
    path = tmp_path / "new" / STORE_NAME
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    refused = arena_upgrade(path.parent)
    assert refused.returncode == 2
    assert "tournament store of schema 9" in refused.stderr
    assert "newer arena" in refused.stderr and "Traceback" not in refused.stderr


def test_a_competition_database_at_head_is_current(database_url: str) -> None:
    CompetitionStore.open(database_url).close()
    done = upgrade(database_url)
    assert (done.kind, done.before, done.after) == ("competition store",) + (head_revision(),) * 2
    assert "already up to date" in done.describe()


def test_a_newer_competition_database_is_refused(database_url: str) -> None:
    CompetitionStore.open(database_url).close()
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"revision 9999.*newer arena"):
        upgrade(database_url)


def test_a_competition_toml_names_its_database(tmp_path: Path) -> None:
    toml = tmp_path / "competition.toml"
    toml.write_text('[competition]\nname = "t"\n')
    from arena.competition.config import load_competition

    CompetitionStore.open(load_competition(toml).store_url).close()
    done = arena_upgrade(toml)
    assert done.returncode == 0, done.stderr
    assert "competition store already up to date" in done.stdout


def test_an_sprt_ledger_and_a_tournament_database_are_current(
    tmp_path: Path, postgres_url: str
) -> None:
    SprtStore(tmp_path / "sprt" / "sprt.sqlite").close()
    assert not upgrade(tmp_path / "sprt").changed
    Store(postgres_url).close()
    done = upgrade(postgres_url)
    assert done.kind == "tournament store" and done.after == str(SCHEMA_VERSION)


def test_what_is_not_a_store_is_refused(tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="no arena store here"):
        upgrade(tmp_path / "empty")
    with pytest.raises(StoreError, match=r"not an arena store \(found an empty database"):
        upgrade(postgres_url)
    garbage = tmp_path / "g.sqlite"
    garbage.write_bytes(b"not a database" * 500)
    refused = arena_upgrade(garbage)
    assert refused.returncode == 2 and "damaged" in refused.stderr, refused.stderr
    with pytest.raises(StoreError, match="cannot reach the database server"):
        upgrade("postgresql+psycopg://nobody:pw@127.0.0.1:1/none")
