"""A worker draws a tournament game's replay frames from the positions it saw during play,
byte for byte what replaying the record draws (what the store keeps and reports read)."""

from __future__ import annotations

import dataclasses
import gzip
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

import arena.play.worker as worker
from arena.engine import GameRecord
from arena.play.build import build_bot
from arena.play.job import GameJob, ScheduledGame
from arena.play.worker import WorkerState, run_job
from arena.referee import load_bot
from arena.referee.manifest import Built
from arena.referee.settings import PlaySettings
from arena.viewer.frames import replay_frames

REPO = Path(__file__).resolve().parents[2]


def _replays(monkeypatch: pytest.MonkeyPatch) -> list[GameRecord]:
    """Records the worker had to replay for their frames."""
    replayed: list[GameRecord] = []

    def counted(record: GameRecord) -> dict[str, Any]:
        replayed.append(record)
        return replay_frames(record)

    monkeypatch.setattr(worker, "replay_frames", counted)
    return replayed


def renamed(bot: Built, name: str) -> Built:
    """The same built bot under another name: a seat (and process) of its own."""
    return dataclasses.replace(bot, spec=bot.spec.model_copy(update={"name": name}))


def _play(
    bots: list[Built],
    variant: str,
    seed: int,
    tmp_path: Path,
    settings: PlaySettings | None = None,
) -> tuple[bytes | None, bytes]:
    names = tuple(b.spec.name for b in bots)
    game = ScheduledGame(seed, f"g{seed}", len(bots), variant, 0, seed, 0, names)
    state = WorkerState(worker_id=0)
    job = GameJob(game, tuple(bots), settings or PlaySettings(), True, tmp_path)
    try:
        result = run_job(state, job)
    finally:
        state.close()
    return result.replay_json, result.record_json


@pytest.mark.parametrize(("players", "variant"), [(2, "coloured"), (3, "gray"), (4, "coloured")])
def test_frames_seen_during_play_are_the_replayed_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, players: int, variant: str
) -> None:
    replayed = _replays(monkeypatch)
    kinds = [build_bot(load_bot(REPO / "bots" / k)) for k in ("python-greedy", "python-random")]
    bots = [renamed(kinds[i % 2], f"p{i}") for i in range(players)]
    drawn, record_json = _play(bots, variant, 7 + players, tmp_path)
    assert replayed == []  # no second run of the engine
    record = GameRecord.model_validate_json(record_json)
    assert drawn == orjson.dumps(replay_frames(record))


def test_a_forfeited_seat_s_game_is_replayed_for_its_frames(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The referee plays a forfeited seat's moves without asking it: those positions were
    not seen, so the record is replayed (and the frames are still the replayed ones)."""
    replayed = _replays(monkeypatch)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bot.toml").write_text('name = "broken"\ncommand = "/bin/false"\n')
    broken.chmod(0o755)
    tmp_path.chmod(0o755)
    bots = [build_bot(load_bot(broken)), build_bot(load_bot(REPO / "bots" / "python-random"))]
    drawn, record_json = _play(bots, "coloured", 3, tmp_path)
    record = GameRecord.model_validate_json(record_json)
    assert [f.forfeit for f in record.faults] == [True]
    assert len(replayed) == 1
    assert drawn == orjson.dumps(replay_frames(record))


def test_a_forgiven_fault_is_placed_among_the_frames_seen_during_play(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fault forgiven by strikes: the referee asked the seat (so the position was seen)
    and played a random move for it; the frames seen live place the fault on that decision,
    as replaying the record does."""
    replayed = _replays(monkeypatch)
    script = REPO / "tests" / "referee" / "fixtures" / "scripted_bot.py"
    folder = tmp_path / "illegal"
    folder.mkdir()
    (folder / "bot.py").write_text(script.read_text())
    (folder / "bot.toml").write_text(
        'name = "illegal"\ncommand = "/usr/bin/python3 bot.py illegal 4"\n'
    )
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    bots = [build_bot(load_bot(folder)), build_bot(load_bot(REPO / "bots" / "python-random"))]
    settings = PlaySettings.model_validate({"fault_policy": "strikes:2"})
    drawn, record_json = _play(bots, "coloured", 5, tmp_path, settings)
    record = GameRecord.model_validate_json(record_json)
    assert [(f.kind, f.forfeit) for f in record.faults] == [("illegal", False)]
    assert replayed == []  # seen live, not replayed
    assert drawn is not None
    steps = orjson.loads(drawn)["fault_steps"]
    assert steps == [6]  # the illegal bot's 4th decision, seat 0 moving first: the 7th (from 0: 6)
    assert drawn == orjson.dumps(replay_frames(record))


def test_a_result_compressed_by_the_worker_is_stored_byte_for_byte_as_before(
    tmp_path: Path,
) -> None:
    """A tournament's worker compresses the record and frames (off the parent's loop): the
    store keeps exactly the bytes it made itself from the uncompressed result."""
    from arena.store.tournament import Store

    bots = [build_bot(load_bot(REPO / "bots" / k)) for k in ("python-greedy", "python-random")]
    game = ScheduledGame(0, "g0", 2, "coloured", 0, 5, 0, tuple(b.spec.name for b in bots))
    state = WorkerState(worker_id=0)
    try:
        job = GameJob(game, tuple(bots), PlaySettings(), True, tmp_path, compress=True)
        compressed = run_job(state, job)
    finally:
        state.close()
    assert compressed.record_gz is not None and compressed.replay_gz is not None
    plain = dataclasses.replace(compressed, record_gz=None, replay_gz=None)
    stored = []
    for name, result in (("worker", compressed), ("store", plain)):
        with Store(tmp_path / f"{name}.sqlite") as store:
            store.schedule_games([game])
            assert store.add_result(result)
        with sqlite3.connect(tmp_path / f"{name}.sqlite") as db:
            blobs = "SELECT g.record, r.frames FROM games g JOIN replays r USING (game_index)"
            stored.append(db.execute(blobs).fetchall())
    assert stored[0] == stored[1] and len(stored[0]) == 1
    record, frames = stored[0][0]
    assert gzip.decompress(record) == compressed.record_json
    assert gzip.decompress(frames) == compressed.replay_json
