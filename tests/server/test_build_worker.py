"""The build worker and the builds the ladder plays: an arena-side build failure is
never the author's rejection, and an active version's build outlives the build cache's
garbage collection."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")

from arena.errors import ArenaError
from arena.server.config import CompetitionConfig
from arena.server.models import Version
from arena.server.service import BuildVerdict, BuildWorker
from arena.server.store import CompetitionStore


def _config(tmp_path: Path) -> CompetitionConfig:
    return CompetitionConfig.model_validate({"competition": {"data_dir": tmp_path / "data"}})


def test_an_arena_side_build_failure_stays_queued_and_is_retried(
    store: CompetitionStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No free sandbox uid (an ArenaError from the build): the version goes back to the
    queue with no verdict, the worker backs off, and the next try records the real one."""
    author, _ = store.create_author("alice")
    store.add_submission(author.id, "patient", "/uploads/patient.zip", "0" * 64)
    attempts: list[int] = []

    def build(version: Version, archive: Path, config: CompetitionConfig) -> BuildVerdict:
        attempts.append(version.id)
        if len(attempts) == 1:
            raise ArenaError("cannot build submissions here: no free sandbox uid")
        return BuildVerdict(True, "accepted", "build ok", str(tmp_path), "abc123", {})

    activated = threading.Event()
    worker = BuildWorker(store, _config(tmp_path), activated.set, build)

    claimed = store.claim_queued_version()
    assert claimed is not None
    after = worker.build_one(claimed)
    assert after.status == "queued" and after.verdict is None
    assert store.version(claimed.id) == after
    assert not store.submission_log(claimed.id)  # nothing shown to the author
    assert worker.backoff > 0
    assert "the arena could not build it" in caplog.text and "queued again" in caplog.text

    again = store.claim_queued_version()
    assert again is not None and again.id == claimed.id
    done = worker.build_one(again)
    assert done.status == "active" and done.verdict == "accepted"
    assert activated.is_set() and worker.backoff == 0
    assert attempts == [claimed.id, claimed.id]


def test_the_worker_waits_out_its_back_off_and_stops_promptly(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """run(): an arena failure is retried only after the back-off, which stop() cuts
    short; the version is never rejected meanwhile."""
    author, _ = store.create_author("alice")
    version = store.add_submission(author.id, "patient", "/uploads/patient.zip", "0" * 64)
    tried = threading.Event()

    def build(v: Version, archive: Path, config: CompetitionConfig) -> BuildVerdict:
        tried.set()
        raise ArenaError("a sandbox layer is missing under strict")

    worker = BuildWorker(store, _config(tmp_path), lambda: None, build)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        assert tried.wait(60)
    finally:
        worker.stop()
        thread.join(30)
    assert not thread.is_alive()
    current = store.version(version.id)
    assert current is not None and current.status == "queued" and current.verdict is None
