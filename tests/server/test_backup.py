"""``arena backup`` / ``arena restore``, run as a user does: a competition with finished
games backed up, restored into a fresh data folder, and the same games and ratings there."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from arena.competition.config import STORE_ENV, load_competition
from arena.store.competition import CompetitionStore
from tests.pgutil import drop_database

from .web_helpers import play

ROOT = Path(__file__).resolve().parents[2]


def arena(*args: str | Path, store: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(STORE_ENV, None)
    if store is not None:
        env[STORE_ENV] = store
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def competition(folder: Path, data: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    toml = folder / "competition.toml"
    toml.write_text(f'[competition]\nname = "backed up"\ndata_dir = "{data}"\n')
    return toml


def _add_bot(store: CompetitionStore, data_dir: Path, author_id: int, name: str) -> int:
    upload = data_dir / "uploads" / f"{name}.zip"
    upload.parent.mkdir(parents=True, exist_ok=True)
    upload.write_bytes(name.encode() * 100)
    digest = hashlib.sha256(upload.read_bytes()).hexdigest()
    store.add_submission(author_id, name, str(upload), digest)
    claimed = store.claim_queued_version()
    assert claimed is not None
    built = data_dir / "bots" / str(claimed.id)
    built.mkdir(parents=True)
    (built / "bot.py").write_text(f"# {name}\n")
    done = store.finish_build(
        claimed.id, True, "accepted", "log", str(built), name[0] * 12, {"language": "python"}
    )
    return done.id


def _populated(tmp_path: Path, url: str | None = None) -> Path:
    toml = competition(tmp_path / "old", "data")
    config = load_competition(toml)
    config.data_dir.mkdir()
    with CompetitionStore.open(url or config.store_url) as store:
        alice, _ = store.create_author("alice")
        bob, _ = store.create_author("bob")
        a = _add_bot(store, config.data_dir, alice.id, "alpha")
        b = _add_bot(store, config.data_dir, bob.id, "beta")
        for seed in (1, 2, 3):
            play(store, [a, b], ["alpha", "beta"], seed)
    source = config.data_dir / "submissions" / str(a)
    source.mkdir(parents=True)
    (source / "manifest.json").write_text("{}")  # an author's file named like the backup's
    return toml


def _state(store: CompetitionStore) -> tuple[object, ...]:
    return (
        [(g.id, g.status, g.seed) for g in store.games(limit=100)],
        [(r.bot_name, r.mu, r.sigma, r.games) for r in store.leaderboard()],
        store.game_counts(),
    )


def test_backup_then_restore_into_a_fresh_data_dir(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    backup = tmp_path / "backup"
    done = arena("backup", old, backup)
    assert done.returncode == 0, done.stderr
    assert "3 game(s)" in done.stdout
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["counts"]["games"] == 3 and manifest["schema"]
    assert "data/uploads/alpha.zip" in manifest["files"]

    new = competition(tmp_path / "new", "restored")
    done = arena("restore", backup, new)
    assert done.returncode == 0, done.stderr
    new_config = load_competition(new)
    with (
        CompetitionStore.open(load_competition(old).store_url) as before,
        CompetitionStore.open(new_config.store_url) as after,
    ):
        assert _state(after) == _state(before)
        assert after.record(before.games(limit=1)[0].id) is not None
        for version in after.active_versions():
            archive = after.archive_of(version.id)
            assert archive is not None
            assert Path(archive[0]).is_relative_to(new_config.data_dir)
            assert Path(archive[0]).is_file()
            info = after.launch_info(version.id)
            assert info is not None and Path(info.built_path).is_relative_to(new_config.data_dir)
            assert (Path(info.built_path) / "bot.py").is_file()


def test_restore_refuses_a_damaged_backup_and_a_used_data_dir(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    backup = tmp_path / "backup"
    assert arena("backup", old, backup).returncode == 0

    used = arena("restore", backup, old)
    assert used.returncode != 0
    assert "not empty" in used.stderr and "Traceback" not in used.stderr

    new = competition(tmp_path / "new", "restored")
    (backup / "data" / "uploads" / "alpha.zip").write_bytes(b"tampered")
    damaged = arena("restore", backup, new)
    assert damaged.returncode != 0
    assert "damaged" in damaged.stderr and "alpha.zip" in damaged.stderr
    assert "Traceback" not in damaged.stderr
    assert not load_competition(new).data_dir.exists()  # nothing written

    again = arena("backup", old, backup)
    assert again.returncode != 0 and "not empty" in again.stderr


def test_a_backup_without_a_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    new = competition(tmp_path / "new", "restored")
    done = arena("restore", tmp_path / "junk", new)
    assert done.returncode != 0 and "not a backup" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("missing", ["manifest.json", "store.sqlite"])
def test_a_backup_missing_a_file_is_damaged(tmp_path: Path, missing: str) -> None:
    old = _populated(tmp_path)
    backup = tmp_path / "backup"
    assert arena("backup", old, backup).returncode == 0
    (backup / missing).unlink()
    done = arena("restore", backup, competition(tmp_path / "new", "restored"))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert ("not a backup" if missing == "manifest.json" else "missing") in done.stderr


def test_postgresql_backup_and_restore(
    tmp_path: Path, postgres_url: str, second_database: str
) -> None:
    if shutil.which("pg_dump") is None:
        pytest.skip("no pg_dump")
    old = _populated(tmp_path, postgres_url)
    backup = tmp_path / "backup"
    done = arena("backup", old, backup, store=postgres_url)
    assert done.returncode == 0, done.stderr
    assert (backup / "store.pgdump").is_file()

    refused = arena("restore", backup, competition(tmp_path / "x", "x"), store=postgres_url)
    assert refused.returncode != 0 and "has tables" in refused.stderr

    new = competition(tmp_path / "new", "restored")
    done = arena("restore", backup, new, store=second_database)
    assert done.returncode == 0, done.stderr
    with (
        CompetitionStore.open(postgres_url) as before,
        CompetitionStore.open(second_database) as after,
    ):
        assert _state(after) == _state(before)
        for version in after.active_versions():
            archive = after.archive_of(version.id)
            assert archive is not None and Path(archive[0]).is_file()


def test_a_sqlite_backup_taken_during_a_write_holds_only_committed_rows(tmp_path: Path) -> None:
    """The online backup API copies a committed snapshot while another connection writes
    (as the ladder does under ``arena serve``)."""
    from arena.store.backup import backup, read_manifest

    old = _populated(tmp_path)
    config = load_competition(old)
    store_file = config.data_dir / "competition.sqlite"
    with contextlib.closing(sqlite3.connect(store_file, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE games SET status = 'void'")  # not committed yet
        done = backup(config.store_url, config.data_dir, tmp_path / "backup")
        writer.execute("ROLLBACK")
    assert done.counts["games"] == 3
    uri = f"file:{tmp_path / 'backup' / 'store.sqlite'}?mode=ro&immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as copy:
        statuses = {row[0] for row in copy.execute("SELECT status FROM games")}
    assert statuses == {"finished"}
    assert read_manifest(tmp_path / "backup")["counts"]["games"] == 3


def test_a_backup_of_a_newer_arena_is_refused(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    backup = tmp_path / "backup"
    assert arena("backup", old, backup).returncode == 0
    manifest = json.loads((backup / "manifest.json").read_text())
    manifest["schema"] = "9999_from_the_future"
    (backup / "manifest.json").write_text(json.dumps(manifest))
    new = competition(tmp_path / "new", "restored")
    done = arena("restore", backup, new)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "newer arena" in done.stderr
    assert not load_competition(new).data_dir.exists()


def test_a_failed_restore_leaves_no_half_restored_folder(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    backup = tmp_path / "backup"
    assert arena("backup", old, backup).returncode == 0
    manifest = json.loads((backup / "manifest.json").read_text())
    manifest["counts"]["games"] += 1  # the store copy does not hold what the manifest says
    (backup / "manifest.json").write_text(json.dumps(manifest))
    new = competition(tmp_path / "new", "restored")
    done = arena("restore", backup, new)
    assert done.returncode != 0 and "does not hold the rows" in done.stderr
    assert "Traceback" not in done.stderr
    assert not load_competition(new).data_dir.exists()


def test_a_backup_inside_the_data_folder_is_refused(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    inside = load_competition(old).data_dir / "backups" / "today"
    done = arena("backup", old, inside)
    assert done.returncode != 0 and "inside the data folder" in done.stderr
    assert not inside.exists()


@pytest.fixture
def second_database(postgres_url: str, postgres_server: str) -> Iterator[str]:
    """Another empty database on the server of ``postgres_url``: a restore's target."""
    name = f"arena_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield (
            sa.engine.make_url(postgres_url)
            .set(database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        drop_database(admin, name)
        admin.dispose()


def test_a_postgresql_backup_counts_the_rows_it_dumped(
    tmp_path: Path, postgres_url: str, second_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write committed while pg_dump starts (the ladder never waits for a backup) is in
    neither the dump nor its counts, so the restore's check holds."""
    if shutil.which("pg_dump") is None:
        pytest.skip("no pg_dump")
    from arena.store import backup as backups

    old = _populated(tmp_path, postgres_url)
    real_run = backups._run

    def a_write_first(command: list[str], what: str, env: dict[str, str]) -> None:
        if command[0] == "pg_dump":
            with CompetitionStore.open(postgres_url) as other:
                other.create_author("late")
        real_run(command, what, env)

    monkeypatch.setattr(backups, "_run", a_write_first)
    done = backups.backup(postgres_url, load_competition(old).data_dir, tmp_path / "backup")
    monkeypatch.undo()
    assert done.counts["authors"] == 2  # alice and bob; "late" came after the snapshot
    restored = backups.restore(tmp_path / "backup", second_database, tmp_path / "restored")
    assert restored.counts == done.counts
    with CompetitionStore.open(second_database) as store:
        assert store.author_by_name("late") is None and store.author_by_name("alice")


def test_a_failed_backup_leaves_no_folder_that_looks_like_one(tmp_path: Path) -> None:
    old = _populated(tmp_path)
    store_file = load_competition(old).data_dir / "competition.sqlite"
    for extra in ("-wal", "-shm"):
        Path(f"{store_file}{extra}").unlink(missing_ok=True)
    store_file.write_bytes(b"not a database at all" * 100)
    dest = tmp_path / "backup"
    done = arena("backup", old, dest)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "cannot back up the store" in done.stderr
    assert not dest.exists()


def test_files_and_folders_the_server_removes_during_a_backup_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server goes on while a backup copies: an upload spent, a game's log folder
    gone. The backup holds what was still there, and restores."""
    from arena.store import backup as backup_module

    old = _populated(tmp_path)
    data_dir = load_competition(old).data_dir
    logs = data_dir / "game-logs" / "0123abcd"
    logs.mkdir(parents=True)
    (logs / "alpha.w0.stderr.log").write_text("thinking\n")
    doomed = data_dir / "submissions" / "doomed"
    (doomed / "inner").mkdir(parents=True)
    (doomed / "inner" / "bot.py").write_text("pass\n")
    spent = data_dir / "submissions" / "spent.zip"
    spent.write_bytes(b"zip")
    (data_dir / "uploads").chmod(0o700)  # as the server keeps it
    real_copy = shutil.copy2

    def copy_while_the_server_cleans_up(source: str | Path, target: str | Path) -> object:
        shutil.rmtree(doomed, ignore_errors=True)
        spent.unlink(missing_ok=True)
        return real_copy(source, target)

    monkeypatch.setattr(shutil, "copy2", copy_while_the_server_cleans_up)
    dest = tmp_path / "backup"
    summary = backup_module.backup(load_competition(old).store_url, data_dir, dest)
    monkeypatch.undo()
    files = set(json.loads((dest / "manifest.json").read_text())["files"])
    assert "data/uploads/alpha.zip" in files
    assert any(f.startswith("data/submissions/") and f.endswith("/manifest.json") for f in files)
    assert not any("game-logs" in f or "doomed" in f or "spent" in f for f in files)
    assert summary.files == len(files)
    assert (dest / "data" / "uploads").stat().st_mode & 0o777 == 0o700  # private stays so
    done = arena("restore", dest, competition(tmp_path / "new", "restored"))
    assert done.returncode == 0, done.stderr
