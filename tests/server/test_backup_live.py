"""Backup of a running ``arena serve`` (real bots, real games), restored into a fresh data
folder and served again: the same finished games and ratings, and the ladder resumes.
Also: the live server's JSON log lines and its ``/metrics`` agreeing with its API."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="the server extra is not installed")
pytest.importorskip("prometheus_client", reason="the server extra is not installed")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from arena.bench.serve import (  # noqa: E402
    LiveServer,
    arena_command,
    competition_toml,
    free_port,
    pack_bot,
    submit_archive,
    wait_for,
    wait_settled,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PATIENCE = 300


def _toml(root: Path, data: str) -> tuple[Path, int]:
    port = free_port()
    toml = root / f"{data}.toml"
    sandbox = "strict" if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1" else "auto"
    text = competition_toml(root / data, port, name="live", sandbox=sandbox)
    toml.write_text(text.replace('registration = "tokens"', 'log_format = "json"', 1))
    return toml, port


def _finished(server: LiveServer) -> set[str]:
    games = httpx.get(server.url + "/api/games?limit=500", timeout=30).json()["games"]
    return {str(g["id"]) for g in games if g["status"] == "finished"}


def _bots(server: LiveServer) -> set[str]:
    rows = httpx.get(server.url + "/api/leaderboard", timeout=30).json()["rows"]
    return {str(r["bot_name"]) for r in rows}


def _finished_in(backup: Path) -> set[str]:
    """The finished games of a backup's store, read without writing to the backup."""
    uri = f"file:{backup / 'store.sqlite'}?mode=ro&immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        return {row[0] for row in db.execute("SELECT id FROM games WHERE status = 'finished'")}


def _metrics(server: LiveServer) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {server.organiser_token()}"}
    text = httpx.get(server.url + "/metrics", headers=headers, timeout=30).text
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }


def test_a_live_backup_restores_and_the_ladder_resumes(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # readable by the per-bot uids
    toml, port = _toml(tmp_path, "old")
    server = LiveServer(toml, port, tmp_path / "old", tmp_path / "old.log")
    restored: LiveServer | None = None
    try:
        server.start()
        for author, bot in (("alice", "python-greedy"), ("bob", "python-random")):
            token = server.issue_token(author)
            reply = submit_archive(server.url, token, pack_bot(REPO / "bots" / bot), "b.tar.gz")
            assert wait_settled(server, token, reply["submission"], PATIENCE)["status"] == "active"
        wait_for("4 finished games", lambda: len(_finished(server)) >= 4, PATIENCE, server)

        backup = tmp_path / "backup"
        done = subprocess.run(
            [*arena_command(), "backup", str(toml), str(backup)],
            capture_output=True,
            text=True,
            timeout=300,
        )  # while the ladder plays on
        assert done.returncode == 0, done.stderr
        assert _metrics(server)["arena_games_finished_total"] >= 4
        assert server.terminate() == 0, server.log_tail()
        backed_up = _finished_in(backup)
        assert len(backed_up) >= 4
        shutil.rmtree(tmp_path / "old")  # the machine is lost: only the backup is left

        new_toml, new_port = _toml(tmp_path, "new")
        done = subprocess.run(
            [*arena_command(), "restore", str(backup), str(new_toml)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        restored = LiveServer(new_toml, new_port, tmp_path / "new", tmp_path / "new.log")
        restored.start()
        assert backed_up <= _finished(restored)
        assert _bots(restored) == {"python-greedy", "python-random"}
        # the ladder resumes on the restored folder: the restored builds play new games
        wait_for(
            "2 more games after the restore",
            lambda: len(_finished(restored) - backed_up) >= 2,
            PATIENCE,
            restored,
        )
        after = _metrics(restored)
        assert after["arena_games_finished_total"] >= len(backed_up) + 2
        assert after["arena_games_void_total"] == 0  # every restored build found and played
    finally:
        server.close()
        if restored is not None:
            restored.close()
    lines = [
        json.loads(line)
        for line in (tmp_path / "new.log").read_text().splitlines()
        if line.startswith("{")
    ]
    assert any(line["logger"] == "uvicorn.error" for line in lines)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
