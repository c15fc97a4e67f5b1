"""The build worker and the builds the ladder plays: an arena-side build failure is
never the author's rejection, and an active version's build outlives the build cache's
garbage collection."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")

from arena.competition.config import CompetitionConfig
from arena.errors import ArenaError
from arena.server.service import BuildVerdict, BuildWorker
from arena.store.competition import CompetitionStore
from arena.store.competition_models import Version


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


def test_an_active_versions_build_survives_the_build_cache_collector(
    store: CompetitionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real build (staged into a build cache), then the cache's garbage collection
    evicts the entry as it does for one unused for a day past its bounds: the ladder
    still finds the version's build and starts the game (no void)."""
    import os
    import shutil
    import tarfile
    import time

    import arena.server.submissions as submissions
    from arena.competition.ladder import Ladder
    from arena.play.build import build_bot, collect_garbage
    from arena.play.job import GameJob, GameResult
    from arena.referee.manifest import load_bot
    from arena.server.service import build_submission
    from arena.server.submissions import SubmissionOutcome

    repo = Path(__file__).resolve().parents[2]
    cache = tmp_path / "build-cache"

    def process(
        folder: Path, settings: object, limits: object, **_options: object
    ) -> SubmissionOutcome:
        built = build_bot(load_bot(folder), cache=cache)  # check-bot is not the point here
        return SubmissionOutcome(True, "accepted", "ok", built, built.version, {})

    monkeypatch.setattr(submissions, "process_submission", process)
    config = _config(tmp_path)
    author, _ = store.create_author("alice")
    archives = []
    for name in ("first", "second"):
        bot = tmp_path / "src" / name
        shutil.copytree(repo / "bots" / "python-random", bot)
        (bot / "bot.toml").write_text(
            (bot / "bot.toml").read_text().replace('"python-random"', f'"{name}"')
        )
        archive = tmp_path / f"{name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tf:
            tf.add(bot, arcname=name)
        archives.append(archive)
        store.add_submission(author.id, name, str(archive), "0" * 64)
    worker = BuildWorker(store, config, lambda: None, build_submission)
    for _ in archives:
        claimed = store.claim_queued_version()
        assert claimed is not None
        assert worker.build_one(claimed).status == "active"

    entries = [p for p in cache.iterdir() if not p.name.startswith("tmp-")]
    assert len(entries) == 2
    two_days_ago = time.time() - 2 * 24 * 3600
    for entry in entries:
        os.utime(entry / "meta.json", (two_days_ago, two_days_ago))
    assert sorted(collect_garbage(cache, max_entries=0)) == sorted(p.name for p in entries)
    assert not any(p.exists() for p in entries)  # the cache's copies are gone

    started: list[GameJob] = []

    class Recording:
        workers = 1

        def submit(self, job: GameJob) -> None:
            started.append(job)

        def poll(self, timeout: float) -> GameResult | None:
            return None

        def next_result(self) -> GameResult:
            raise AssertionError("not played here")

        def close(self, abort: bool = False) -> None:
            pass

    ladder = Ladder(store, config.ladder, config.play, config.data_dir, Recording())
    ladder.config = ladder.config.model_copy(update={"games_in_flight": 1})
    voided: list[str] = []
    void_game = store.void_game

    def void_once(game_id: str, reason: str) -> bool:
        voided.append(reason)
        ladder.stop()  # a missing build would otherwise void game after game
        return void_game(game_id, reason)

    monkeypatch.setattr(store, "void_game", void_once)
    ladder._fill()
    assert voided == []
    assert ladder.voided == 0 and len(started) == 1
    for bot in started[0].bots:
        spec = bot.spec
        assert spec.folder.is_relative_to(config.data_dir / "bots")
        assert (spec.folder / "bot.py").is_file() and (spec.folder / "bot.toml").is_file()
        assert not os.access(spec.folder, os.W_OK) or os.geteuid() == 0
        assert spec.folder.stat().st_mode & 0o777 == 0o555  # read-only for everyone


def test_a_lost_archive_is_a_verdict_not_an_endless_retry(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """The uploaded archive is gone from data_dir/uploads (a rebuild after the build copy
    was lost too): no retry can help, so the version gets a verdict that says so and the
    queue moves on."""
    author, _ = store.create_author("alice")
    store.add_submission(author.id, "lost", str(tmp_path / "gone.zip"), "0" * 64)
    worker = BuildWorker(store, _config(tmp_path), lambda: None)
    claimed = store.claim_queued_version()
    assert claimed is not None
    done = worker.build_one(claimed)
    assert done.status == "rejected" and worker.backoff == 0
    assert done.verdict is not None and "submit the bot again" in done.verdict
    assert store.claim_queued_version() is None


def test_a_restart_clears_partial_uploads_and_keeps_archives(tmp_path: Path) -> None:
    from arena.server.service import clear_partial_uploads

    uploads = tmp_path / "uploads"
    (uploads / "checking-0123abcd" / "bot").mkdir(parents=True)
    (uploads / "checking-0123abcd" / "bot" / "bot.toml").write_text("x")
    (uploads / "checking-0123abcd" / "bot").chmod(0o555)
    (uploads / "incoming-0123abcd.part").write_bytes(b"PK")
    (uploads / "0123456789abcdef-0a1b2c3d.zip").write_bytes(b"PK")
    assert clear_partial_uploads(tmp_path) == 2
    assert [p.name for p in uploads.iterdir()] == ["0123456789abcdef-0a1b2c3d.zip"]
    assert clear_partial_uploads(tmp_path / "nowhere") == 0
