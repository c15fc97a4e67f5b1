"""The continuous ladder: its choice of games, and its loop over a real store."""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")

from arena.competition.config import LadderSection
from arena.competition.ladder import Ladder, choose_game
from arena.play.executors import LocalPoolExecutor
from arena.play.job import FaultRow, GameJob, GameResult, SeatRow
from arena.play.worker import tag_failure
from arena.referee.settings import PlaySettings
from arena.sandbox import SandboxUnavailable
from arena.store.competition import CompetitionStore


class Simulation:
    """The ladder's bookkeeping (what the store computes) over choose_game alone."""

    def __init__(self, ladder: LadderSection, versions: int, seed: int = 3) -> None:
        self.ladder = ladder
        self.rng = random.Random(seed)
        self.active = list(range(1, versions + 1))
        self.since = dict.fromkeys(self.active, 0)
        self.seats_at: list[int] = [0]  # seats filled before game i
        self.load: Counter[int] = Counter()
        self.pairs: Counter[tuple[int, int]] = Counter()
        self.by_players: Counter[int] = Counter()
        self.by_variant: Counter[str] = Counter()
        self.chosen: list[tuple[int, ...]] = []

    def add_version(self) -> int:
        new = max(self.active) + 1
        self.active.append(new)
        self.since[new] = len(self.chosen)
        return new

    def share(self) -> dict[int, float]:
        total = self.seats_at[-1]
        return {v: (total - self.seats_at[self.since[v]]) / len(self.active) for v in self.active}

    def play(self, games: int) -> None:
        for _ in range(games):
            choice = choose_game(
                self.active,
                self.load,
                self.share(),
                self.pairs,
                self.by_players,
                self.by_variant,
                self.ladder,
                self.rng,
            )
            assert choice is not None
            assert len(set(choice.version_ids)) == choice.players
            self.chosen.append(choice.version_ids)
            self.seats_at.append(self.seats_at[-1] + choice.players)
            self.by_players[choice.players] += 1
            self.by_variant[choice.variant] += 1
            for i, a in enumerate(choice.version_ids):
                self.load[a] += 1
                for b in choice.version_ids[i + 1 :]:
                    self.pairs[(min(a, b), max(a, b))] += 1


def test_shares_and_balance_over_many_games() -> None:
    ladder = LadderSection(players={2: 0.5, 4: 0.5}, variants={"coloured": 0.8, "gray": 0.2})
    sim = Simulation(ladder, versions=7)
    sim.play(400)
    assert sim.by_players == {2: 200, 4: 200}
    assert sim.by_variant == {"coloured": 320, "gray": 80}
    assert max(sim.load.values()) - min(sim.load.values()) <= 2  # games per bot balanced
    met = [sim.pairs[(a, b)] for a in range(1, 8) for b in range(a + 1, 8)]
    assert max(met) - min(met) <= 0.25 * max(met)  # every pair meets about as often


def test_new_version_plays_first_games_quickly_then_its_share() -> None:
    ladder = LadderSection(players={2: 1.0}, new_version_games=5)
    sim = Simulation(ladder, versions=3)
    sim.play(60)  # 40 games each
    new = sim.add_version()
    sim.play(5)
    assert all(new in game for game in sim.chosen[-5:])  # its first 5 games come at once
    opponents = Counter(v for game in sim.chosen[-5:] for v in game if v != new)
    assert max(opponents.values()) <= 2  # against different opponents
    sim.play(95)
    # then its fair share of the 95 later games (2 seats each, 4 versions: ~47), not a
    # catch-up burst to the others' 40 earlier games
    assert 5 + 40 <= sim.load[new] <= 5 + 55
    assert max(sim.load[v] for v in (1, 2, 3)) - min(sim.load[v] for v in (1, 2, 3)) <= 2


def test_player_counts_need_enough_versions() -> None:
    ladder = LadderSection(players={2: 0.5, 4: 0.5})
    rng = random.Random(1)
    assert choose_game([1], {}, {}, {}, {}, {}, ladder, rng) is None
    for _ in range(10):
        choice = choose_game([1, 2, 3], {}, {}, {}, {}, {}, ladder, rng)
        assert choice is not None and choice.players == 2
    only4 = LadderSection(players={4: 1.0})
    assert choose_game([1, 2, 3], {}, {}, {}, {}, {}, only4, rng) is None


def test_a_version_is_seated_only_in_games_its_bot_toml_declares() -> None:
    """Version 1 declares players = [2], walls = ["coloured"] (a course's adapter bot)."""
    ladder = LadderSection(players={2: 0.5, 4: 0.5}, variants={"coloured": 0.5, "gray": 0.5})
    rng = random.Random(2)

    def plays(version: int, players: int, wall: str) -> bool:
        return version != 1 or (players == 2 and wall == "coloured")

    by_players: Counter[int] = Counter()
    by_variant: Counter[str] = Counter()
    seated = Counter[tuple[int, str]]()
    for _ in range(200):
        choice = choose_game(
            [1, 2, 3, 4, 5], {}, {}, {}, by_players, by_variant, ladder, rng, plays
        )
        assert choice is not None
        by_players[choice.players] += 1
        by_variant[choice.variant] += 1
        if 1 in choice.version_ids:
            seated[(choice.players, choice.variant)] += 1
    assert set(seated) == {(2, "coloured")}
    assert by_players[4] > 50 and by_variant["gray"] > 50  # the others still play them all
    # Too few versions can play 4-player games: the ladder plays 2-player ones instead.
    assert all(
        choose_game([1, 2, 3, 4], {}, {}, {}, {}, {}, LadderSection(players={2: 0.1, 4: 0.9}),
                    rng, lambda v, n, w: n == 2 or v != 1).players == 2  # type: ignore[union-attr]
        for _ in range(5)
    )  # fmt: skip


# ---------------------------------------------------------------- the loop, with fake games


def _fake_result(job: GameJob, rng: random.Random) -> GameResult:
    game = job.game
    ranks = list(range(1, game.n_players + 1))
    rng.shuffle(ranks)
    seats = tuple(
        SeatRow(i, name, 40 - r, 0, 0, 0, 0, r, 0, False, None, 10, 1.0, 2.0, 3.0)
        for i, (name, r) in enumerate(zip(game.bots, ranks, strict=True))
    )
    faults = (FaultRow(0, game.bots[0], "timeout", 1, "slow", False),) if rng.random() < 0.1 else ()
    record = json.dumps({"game_id": game.game_id, "seed": game.deal_seed}).encode()
    stderr = ((0, f"stderr of {game.game_id}"),) if job.collect_stderr else ()
    return GameResult(
        game.game_index, 0.01, "normal", 5, "fake", record, seats, faults, stderr=stderr
    )


class ThreadedGames:
    """An executor (the play layer's interface) that plays jobs on threads with a given
    function: scripted games for the ladder, as a test transport scripts a bot."""

    def __init__(self, workers: int, play: Callable[[GameJob], GameResult]) -> None:
        self.workers = workers
        self._play = play
        self._pool = ThreadPoolExecutor(workers)
        self._done: queue.SimpleQueue[GameResult | BaseException] = queue.SimpleQueue()

    def submit(self, job: GameJob) -> None:
        def run() -> None:
            try:
                self._done.put(self._play(job))
            except Exception as exc:
                self._done.put(tag_failure(exc, job))

        self._pool.submit(run)

    def poll(self, timeout: float) -> GameResult | None:
        try:
            item = self._done.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def next_result(self) -> GameResult:
        raise AssertionError("the ladder polls")

    def close(self, abort: bool = False) -> None:
        self._pool.shutdown(wait=not abort, cancel_futures=True)


class FakeGames:
    """Plays a game instantly with random ranks; counts the most games at once."""

    def __init__(self) -> None:
        self.rng = random.Random(5)
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.played: list[str] = []

    def __call__(self, job: GameJob) -> GameResult:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.played.append(job.game.game_id)
            done = _fake_result(job, self.rng)
        time.sleep(0.005)
        with self.lock:
            self.now -= 1
        return done


def _add_bots(store: CompetitionStore, names: list[str], folder: Path) -> list[int]:
    author, _ = store.create_author("alice")
    ids = []
    for name in names:
        store.add_submission(author.id, name, "/x.zip", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        built = folder / name
        built.mkdir(parents=True, exist_ok=True)
        manifest = {"name": name, "command": "python3 bot.py"}
        done = store.finish_build(
            version.id, True, "ok", "log", str(built), "h", {"manifest": manifest}
        )
        ids.append(done.id)
    return ids


def _run_until(ladder: Ladder, store: CompetitionStore, finished: int) -> None:
    thread = threading.Thread(target=ladder.run)
    thread.start()
    deadline = time.monotonic() + 120
    try:
        while store.games_finished() < finished:
            assert time.monotonic() < deadline, "the ladder stalled"
            time.sleep(0.05)
    finally:
        ladder.shutdown(abort=False)
        thread.join(30)


def test_ladder_keeps_games_in_flight_and_stores_each_once(
    store: CompetitionStore, tmp_path: Path
) -> None:
    versions = _add_bots(store, ["a", "b", "c", "d", "e"], tmp_path / "built")
    fake = FakeGames()
    config = LadderSection(games_in_flight=3, players={2: 0.5, 4: 0.5})
    ladder = Ladder(store, config, PlaySettings(), tmp_path, ThreadedGames(4, fake))
    _run_until(ladder, store, 60)
    finished = store.games(status="finished", limit=500)
    assert len(finished) >= 60
    assert fake.most <= 3
    assert len(fake.played) == len(set(fake.played))  # every game played once
    assert store.game_counts().get("running", 0) == 0  # shutdown re-queued nothing running
    board = store.leaderboard()
    assert {r.bot_name for r in board} == set("abcde")
    games_per_bot = [r.games for r in board]
    assert max(games_per_bot) - min(games_per_bot) <= 3
    assert sum(len(store.rating_history(v)) for v in versions) == sum(g.players for g in finished)
    one = finished[0]
    assert store.record(one.id) == {"game_id": one.id, "seed": one.seed}
    assert store.seat_stderr(one.id, 0) == f"stderr of {one.id}"


def test_pause_and_challenges_first(store: CompetitionStore, tmp_path: Path) -> None:
    _add_bots(store, ["a", "b"], tmp_path / "built")
    author = store.author_by_name("alice")
    assert author is not None
    store.set_paused(True)
    challenge = store.add_challenge(author.id, ["a", "b"], 2, "gray")
    fake = FakeGames()
    ladder = Ladder(store, LadderSection(), PlaySettings(), tmp_path, ThreadedGames(2, fake))
    thread = threading.Thread(target=ladder.run)
    thread.start()
    try:
        time.sleep(1.0)
        assert fake.played == []  # paused: nothing starts
        store.set_paused(False)
        ladder.wake()
        deadline = time.monotonic() + 60
        while store.games_finished() < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        ladder.shutdown(abort=False)
        thread.join(30)
    assert fake.played[0] == challenge.id
    done = store.game(challenge.id)
    assert done is not None and done.status == "finished" and not done.rated


def test_a_game_the_arena_cannot_play_is_voided(
    store: CompetitionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arena.competition.ladder

    monkeypatch.setattr(arena.competition.ladder, "ERROR_BACKOFF_S", (30.0, 60.0))
    _add_bots(store, ["a", "b"], tmp_path / "built")
    calls = []

    def broken(job: GameJob) -> GameResult:
        calls.append(job.game.game_id)
        raise SandboxUnavailable("no bubblewrap")

    ladder = Ladder(
        store, LadderSection(games_in_flight=1), PlaySettings(), tmp_path, ThreadedGames(1, broken)
    )
    thread = threading.Thread(target=ladder.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not calls:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.5)
    finally:
        ladder.shutdown(abort=False)
        thread.join(30)
    assert len(calls) == 1  # backed off: no loop of voided games
    voided = store.game(calls[0])
    assert voided is not None and voided.status == "void"
    assert store.leaderboard()[0].games == 0


# ---------------------------------------------------------------- real games


def _real_bots(store: CompetitionStore, root: Path, names: list[str]) -> None:
    """Built bots on the ladder (as the build worker leaves them), sources under root."""
    import shutil

    from arena.play.build import build_bot
    from arena.referee.manifest import load_bot

    repo = Path(__file__).resolve().parents[2]
    author, _ = store.create_author("alice")
    for name in names:
        source = root / "src" / name
        shutil.copytree(repo / "bots" / name, source, ignore=shutil.ignore_patterns("bot"))
        built = build_bot(load_bot(source), cache=root / "cache")
        store.add_submission(author.id, name, "/dev/null", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        meta = {"manifest": built.spec.manifest.model_dump(mode="json"), "source": str(source)}
        store.finish_build(version.id, True, "ok", "", str(built.spec.folder), built.version, meta)
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)  # the per-bot uid reads the built bots


def _check_real_games(store: CompetitionStore, at_least: int) -> None:
    games = store.games(status="finished", limit=500)
    assert len(games) >= at_least
    for game in games:
        record = store.record(game.id)
        assert record is not None and record["end_reason"] == game.end_reason
        assert list(record["players"]) == [s.bot_name for s in game.seats]
        assert sorted(s.rank or 0 for s in game.seats)[0] == 1
    assert store.game_counts().get("void", 0) == 0


@pytest.mark.slow
def test_real_games_on_the_local_pool(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    store = CompetitionStore.open(f"sqlite:///{tmp_path / 'c.sqlite'}")
    try:
        _real_bots(store, tmp_path, ["python-greedy", "python-random", "js-random"])
        config = LadderSection(players={2: 0.5, 3: 0.5}, games_in_flight=2)
        ladder = Ladder(store, config, PlaySettings(), tmp_path / "data", LocalPoolExecutor(2))
        _run_until(ladder, store, 6)
        _check_real_games(store, 6)
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray cluster at a time (tests/conftest.py)
def test_real_games_on_ray(tmp_path: Path) -> None:
    """The ladder's games on a one-host Ray, in batches of several games per task."""
    import os

    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("ARENA_REQUIRE_RAY") == "1":
            pytest.fail("ARENA_REQUIRE_RAY=1 but ray is not installed")
        pytest.skip("ray is not installed: pip install -e '.[ray]'")
    from arena.play.ray_executor import RayExecutor

    tmp_path.chmod(0o755)
    store = CompetitionStore.open(f"sqlite:///{tmp_path / 'c.sqlite'}")
    saved = {k: os.environ.get(k) for k in ("ARENA_BUILD_CACHE", "ARENA_BUNDLE_CACHE")}
    os.environ["ARENA_BUILD_CACHE"] = str(tmp_path / "node-cache")
    os.environ["ARENA_BUNDLE_CACHE"] = str(tmp_path / "bundles")
    try:
        _real_bots(store, tmp_path, ["python-greedy", "python-random"])
        config = LadderSection(players={2: 1.0}, games_in_flight=2)
        # Batches sized to 6 s of games (10 tasks, 155-170 games here): several games a
        # batch even on a busy machine (the default 3 s gave 14 tasks for 36 games there).
        executor = RayExecutor(num_cpus=2, batch_seconds=6.0)
        ladder = Ladder(store, config, PlaySettings(), tmp_path / "data", executor)
        _run_until(ladder, store, 24)
        _check_real_games(store, 24)
        # Batches, not a Ray task per game (the ladder starts one game per result).
        games = store.games_finished()
        assert executor.tasks * 3 <= games, (executor.tasks, games)
    finally:
        store.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_organiser_actions_while_the_ladder_runs(store: CompetitionStore, tmp_path: Path) -> None:
    from arena.store.competition import Conflict

    _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    fake = FakeGames()
    config = LadderSection(games_in_flight=2, players={2: 1.0})
    ladder = Ladder(store, config, PlaySettings(), tmp_path, ThreadedGames(2, fake))
    thread = threading.Thread(target=ladder.run)
    thread.start()

    def wait(n: int) -> None:
        deadline = time.monotonic() + 60
        while store.games_finished() < n:
            assert time.monotonic() < deadline, "the ladder stalled"
            time.sleep(0.02)

    try:
        wait(6)
        with_c = next(
            g for g in store.games(status="finished") if "c" in {s.bot_name for s in g.seats}
        )
        without_c = next(
            g for g in store.games(status="finished") if "c" not in {s.bot_name for s in g.seats}
        )
        store.disqualify("c")
        ladder.wake()
        played_before = len(fake.played)
        with pytest.raises(Conflict, match="disqualified"):
            store.rerun(with_c.id)
        again = store.rerun(without_c.id)
        ladder.wake()
        wait(store.games_finished() + 6)
        rerun = store.game(again.id)
        assert rerun is not None and rerun.status == "finished" and rerun.rerun_of == without_c.id
        later = fake.played[played_before + 2 :]  # after the games already running
        for game_id in later:
            game = store.game(game_id)
            assert game is not None and "c" not in {s.bot_name for s in game.seats}
        assert {r.bot_name for r in store.leaderboard()} == {"a", "b"}
        store.freeze()  # pauses: nothing new starts once the ladder has seen it
        passes = ladder.passes
        ladder.wake()
        deadline = time.monotonic() + 60
        while ladder.in_flight or ladder.passes < passes + 2:
            ladder.wake()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        settled = len(fake.played)
        time.sleep(1.0)
        assert len(fake.played) == settled
    finally:
        ladder.shutdown(abort=False)
        thread.join(30)


def test_results_wait_out_a_database_outage(
    store: CompetitionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.store.competition import StoreError

    _add_bots(store, ["a", "b"], tmp_path / "built")
    real_finish = store.finish_game
    failures = {"left": 3}

    def flaky_finish(game_id: str, outcome: object) -> bool:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise StoreError("cannot write the store: connection refused")
        return real_finish(game_id, outcome)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "finish_game", flaky_finish)
    fake = FakeGames()
    ladder = Ladder(
        store, LadderSection(games_in_flight=1), PlaySettings(), tmp_path, ThreadedGames(1, fake)
    )
    _run_until(ladder, store, 4)
    assert failures["left"] == 0
    finished = {g.id for g in store.games(status="finished", limit=100)}
    assert set(fake.played) - finished <= {fake.played[-1]}  # only the last may be in flight
    assert store.game_counts().get("running", 0) == 0


def test_a_result_that_cannot_be_stored_voids_its_game_and_the_ladder_goes_on(
    store: CompetitionStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not the database away (that result is kept and stored later) but a fault of the
    arena's: the game is voided with why, not left 'running' until a restart."""
    _add_bots(store, ["a", "b"], tmp_path / "built")
    real_finish = store.finish_game
    broken: list[str] = []

    def finish_once_broken(game_id: str, outcome: object) -> bool:
        if not broken:
            broken.append(game_id)
            raise ValueError("a record the store refuses")
        return real_finish(game_id, outcome)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "finish_game", finish_once_broken)
    monkeypatch.setattr("arena.competition.ladder.ERROR_BACKOFF_S", (0.01, 0.02))
    ladder = Ladder(
        store,
        LadderSection(games_in_flight=1),
        PlaySettings(),
        tmp_path,
        ThreadedGames(1, FakeGames()),
    )
    with caplog.at_level(logging.ERROR, logger="arena.competition.ladder"):
        _run_until(ladder, store, 3)
    game = store.game(broken[0])
    assert game is not None and game.status == "void" and game.end_reason == "arena error"
    assert ladder.voided == 1 and store.game_counts().get("running", 0) == 0
    assert "its result cannot be stored: ValueError: a record the store refuses" in caplog.text


# ---------------------------------------------------------------- a build copy gone missing


def test_a_version_whose_build_is_missing_leaves_the_ladder_after_one_void(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """Its build copy deleted under the ladder: one game is voided, the version goes back
    to the build queue with a reason the organiser and its author see, and the ladder
    plays on with the others (no loop of voided games)."""
    import shutil

    versions = _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    shutil.rmtree(tmp_path / "built" / "c")  # c: the newest, its first games come first
    fake = FakeGames()
    ladder = Ladder(
        store, LadderSection(games_in_flight=2), PlaySettings(), tmp_path, ThreadedGames(2, fake)
    )
    woken = []
    ladder.wake_builder = lambda: woken.append(1)
    _run_until(ladder, store, 20)
    void = store.games(status="void", limit=50)
    assert len(void) == 1 and ladder.voided == 1
    assert void[0].end_reason == "bot build missing"
    assert "c" in {s.bot_name for s in void[0].seats}
    c = store.version(versions[2])
    assert c is not None and c.status == "queued"
    assert c.verdict is not None and "build was missing" in c.verdict and void[0].id in c.verdict
    assert woken == [1]
    played = store.games(status="finished", limit=500)
    assert all("c" not in {s.bot_name for s in g.seats} for g in played)
    assert {r.bot_name for r in store.leaderboard()} == {"a", "b"}
    # the build worker rebuilds it: back on the ladder as the bot's active version
    claimed = store.claim_queued_version()
    assert claimed is not None and claimed.id == versions[2]
    (tmp_path / "built" / "c").mkdir()
    manifest = {"name": "c", "command": "python3 bot.py"}
    again = store.finish_build(
        claimed.id, True, "ok", "log", str(tmp_path / "built" / "c"), "h", {"manifest": manifest}
    )
    assert again.status == "active"


def test_a_rebuilt_version_never_displaces_a_newer_one(
    store: CompetitionStore, tmp_path: Path
) -> None:
    (old,) = _add_bots(store, ["a"], tmp_path / "built")
    author = store.author_by_name("alice")
    assert author is not None
    store.add_submission(author.id, "a", "/x.zip", "1" * 64)
    newer = store.claim_queued_version()
    assert newer is not None and newer.id != old
    assert store.rebuild_version(old, "build missing") is not None
    assert store.rebuild_version(old, "twice") is None  # no longer active: nothing to do
    assert store.claim_queued_version() is None  # one build per author at a time
    manifest = {"manifest": {"name": "a", "command": "python3 bot.py"}}
    assert store.finish_build(newer.id, True, "ok", "", "/b/2", "h2", manifest).status == "active"
    rebuilding = store.claim_queued_version()
    assert rebuilding is not None and rebuilding.id == old
    late = store.finish_build(old, True, "ok", "", "/b/1", "h1", manifest)
    assert late.status == "retired"
    assert [v.id for v in store.active_versions()] == [newer.id]


def test_build_copies_of_versions_that_can_no_longer_play_are_deleted(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """Replaced (with no game of theirs in flight) or disqualified: their copy in
    data_dir/bots goes; active versions, busy ones and folders elsewhere stay."""
    from arena.store.competition import Conflict

    author, _ = store.create_author("alice")
    home = tmp_path / "bots"

    def accept(name: str, where: Path | None = None) -> int:
        store.add_submission(author.id, name, "/x.zip", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        built = where or home / str(version.id)
        built.mkdir(parents=True)
        (built / "bot.py").write_text("pass\n")
        built.chmod(0o555)  # kept read-only, as keep_build leaves it
        meta = {"manifest": {"name": name, "command": "python3 bot.py"}}
        return store.finish_build(version.id, True, "ok", "", str(built), "h", meta).id

    a1 = accept("a")
    b1 = accept("b")
    c1 = accept("c")
    elsewhere = accept("d", tmp_path / "elsewhere")
    old_game = store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=1, version_ids=[a1, b1], rated=True
    )
    assert store.claim_scheduled_game() is not None
    store.void_game(old_game.id, "arena error")
    busy = store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=2, version_ids=[b1, c1], rated=True
    )
    a2 = accept("a")  # a1 retired, no game in flight: collected
    b2 = accept("b")  # b1 retired, seated in a scheduled game with c1...
    store.disqualify("c")  # ...which this voids: b1 and c1 are free
    accept("d")  # d1 retired, but its folder is not in data_dir/bots: never touched
    ladder = Ladder(store, LadderSection(), PlaySettings(), tmp_path, ThreadedGames(1, FakeGames()))
    assert store.game(busy.id).status == "void"  # type: ignore[union-attr]
    assert ladder.collect_builds() == 3  # a1, b1 (its game voided by the disqualification), c1
    assert not (home / str(a1)).exists() and not (home / str(c1)).exists()
    assert not (home / str(b1)).exists()
    assert (home / str(a2)).is_dir() and (home / str(b2)).is_dir()
    assert (tmp_path / "elsewhere").is_dir() and store.launch_info(elsewhere) is not None
    assert store.launch_info(a1) is None and store.launch_info(a2) is not None
    assert ladder.collect_builds() == 0
    with pytest.raises(Conflict, match="no longer kept"):
        store.rerun(old_game.id)


def test_a_replaced_version_keeps_its_copy_while_a_game_of_it_is_in_flight(
    store: CompetitionStore, tmp_path: Path
) -> None:
    author, _ = store.create_author("alice")
    home = tmp_path / "bots"
    ids = []
    for name in ("a", "b", "a"):
        store.add_submission(author.id, name, "/x.zip", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        (home / str(version.id)).mkdir(parents=True)
        meta = {"manifest": {"name": name, "command": "python3 bot.py"}}
        store.finish_build(version.id, True, "ok", "", str(home / str(version.id)), "h", meta)
        ids.append(version.id)
        if len(ids) == 2:  # a game of a1 and b1 starts before a2 arrives
            store.schedule_game(
                kind="ladder", players=2, variant="gray", seed=3, version_ids=ids, rated=True
            )
            running = store.claim_scheduled_game()
            assert running is not None
    ladder = Ladder(store, LadderSection(), PlaySettings(), tmp_path, ThreadedGames(1, FakeGames()))
    assert ladder.collect_builds() == 0  # a1 is playing
    assert (home / str(ids[0])).is_dir()
    store.void_game(running.id, "arena error")
    assert ladder.collect_builds() == 1
    assert not (home / str(ids[0])).exists() and (home / str(ids[2])).is_dir()


def test_the_ladder_is_a_scheduler_handing_out_challenges_first(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """The tournament's scheduler seam, open-ended: a challenge before ladder games, each
    claimed in the store and seated by version id."""
    from arena.competition.ladder import LadderScheduler

    versions = _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    author = store.author_by_name("alice")
    assert author is not None
    challenge = store.add_challenge(author.id, ["c", "a"], 2, "gray")
    scheduler = LadderScheduler(store, LadderSection(players={2: 1.0}))
    assert scheduler.expected is None
    (first,) = scheduler.next()
    assert first.game_id == challenge.id and first.bots == ("c", "a")
    assert first.versions == (str(versions[2]), str(versions[0]))
    assert store.game(challenge.id).status == "running"  # type: ignore[union-attr]
    (second,) = scheduler.next()
    assert second.game_index == first.game_index + 1 and second.n_players == 2
    assert {int(v) for v in second.versions} <= set(versions)
    store.freeze()  # a frozen ranking: scheduled games still play, no new ladder game
    assert scheduler.next() == []


def _play_ladder(ladder: Ladder, games: int) -> None:
    """Start and store ``games`` ladder games on the calling thread (an inline executor)."""
    for _ in range(games):
        ladder._start_games()
        while ladder._collect(0):
            pass


def _inline_ladder(store: CompetitionStore, tmp_path: Path, **config: int) -> Ladder:
    from arena.play.executors import InlineExecutor

    rng = random.Random(2)
    ladder_config = LadderSection(players={2: 0.5, 4: 0.5}, games_in_flight=1, **config)
    executor = InlineExecutor(play=lambda job: _fake_result(job, rng))
    return Ladder(store, ladder_config, PlaySettings(), tmp_path, executor)


def test_ladder_reads_full_counts_once_not_for_every_game(
    store: CompetitionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 1,000 versions the store's count queries read every ladder seat: the ladder
    reads them once and keeps its own counts, equal to the store's after every game."""
    _add_bots(store, [f"b{i}" for i in range(12)], tmp_path / "built")
    reads = Counter[str]()
    for name in ("pair_counts", "fair_shares", "ladder_load"):
        real = getattr(store, name)

        def counted(
            *args: object, _real: Callable[..., object] = real, _name: str = name
        ) -> object:
            reads[_name] += 1
            return _real(*args)

        monkeypatch.setattr(store, name, counted)
    ladder = _inline_ladder(store, tmp_path)
    _play_ladder(ladder, 40)
    assert store.games_finished() == 40
    assert reads["pair_counts"] == 1 and reads["fair_shares"] == 1
    tally = ladder._choices._tally
    assert tally is not None
    active = store.active_version_ids()
    assert tally.load == {v: sum(p.values()) for v, p in store.ladder_load().items()}
    assert tally.pairs == store.pair_counts(active)
    assert tally.shares() == pytest.approx(store.fair_shares(active))
    assert (tally.by_players, tally.by_variant) == store.ladder_mix()


def test_ladder_keeps_games_per_version_even_and_seats_a_newcomer_at_once(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """A deterministic field of 16 versions: after 20 games each the most played has at
    most 1.2 times the least; a version added then plays the very next ladder game."""
    _add_bots(store, [f"b{i:02d}" for i in range(16)], tmp_path / "built")
    ladder = _inline_ladder(store, tmp_path, new_version_games=5)
    while True:
        loads = [sum(p.values()) for p in store.ladder_load().values()]
        if len(loads) == 16 and min(loads) >= 20:
            break
        _play_ladder(ladder, 10)
    assert max(loads) <= 1.2 * min(loads), loads
    author = store.author_by_name("alice")
    assert author is not None
    store.add_submission(author.id, "newcomer", "/x.zip", "0" * 64)
    version = store.claim_queued_version()
    assert version is not None
    (tmp_path / "built" / "newcomer").mkdir()
    manifest = {"name": "newcomer", "command": "python3 bot.py"}
    store.finish_build(
        version.id,
        True,
        "ok",
        "log",
        str(tmp_path / "built" / "newcomer"),
        "h",
        {"manifest": manifest},
    )
    for _ in range(5):  # its first five games: one after the other, none in between
        _play_ladder(ladder, 1)
        latest = store.games(status="finished", limit=1)[0]
        assert "newcomer" in {s.bot_name for s in latest.seats}


@pytest.mark.parametrize(
    ("in_flight", "workers", "handed"),
    [(2, 2, 4), (3, 2, 5), (1, 2, 1), (3, 4, 3)],
)
def test_a_full_local_pool_gets_one_game_queued_ahead_per_worker(
    store: CompetitionStore, tmp_path: Path, in_flight: int, workers: int, handed: int
) -> None:
    """With every worker of a local pool busy, each has its next game waiting in the
    pool's queue (it does not idle while the ladder stores a result and picks the next
    game); fewer games than workers stay a cap. An executor that plays on the ladder's
    own thread, or in threads of its own, gets ``games_in_flight``."""
    config = LadderSection(games_in_flight=in_flight, players={2: 1.0})
    pool = LocalPoolExecutor(workers)
    try:
        assert Ladder(store, config, PlaySettings(), tmp_path, pool).wanted_in_flight() == handed
    finally:
        pool.close()
    threaded = Ladder(store, config, PlaySettings(), tmp_path, ThreadedGames(workers, FakeGames()))
    assert threaded.wanted_in_flight() == in_flight
