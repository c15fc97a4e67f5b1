"""The continuous ladder: keep ``games_in_flight`` games running, forever.

Each time a slot frees up the ladder starts the oldest scheduled game (a challenge, a
re-run, a game re-queued after a restart) or else picks a new ladder game with
:func:`choose_game`: a new version plays until it has ``new_version_games`` games,
otherwise the versions with the fewest games play (games per bot stay balanced), and
player counts and walls follow the configured shares. Games run on a process pool
(plain picklable jobs, :func:`play_job`); each result goes to the store, which keeps it
once (keyed by the game id) and rates it in the same transaction. The store is the
ledger: after a crash the running games are simply scheduled again.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from arena.play.job import GameResult, ScheduledGame
from arena.referee.manifest import BotManifest, BotSpec
from arena.referee.settings import PlaySettings
from arena.server.config import LadderSection
from arena.store.competition import (
    CompetitionStore,
    FinishedFault,
    FinishedSeat,
    GameOutcome,
    StoreError,
)
from arena.store.competition_models import GameRow, SeatRow
from arena.textsafe import visible

_log = logging.getLogger("arena.server.ladder")

BOTS_FOLDER = "bots"
"""``data_dir/bots/<version id>``: each accepted version's built bot, as the ladder runs it."""
COLLECT_EVERY_S = 60.0
"""How often the ladder deletes the build copies of versions that can no longer play."""
STDERR_READ_BYTES = 256 * 1024
ERROR_BACKOFF_S = (1.0, 60.0)
"""After a game the arena (not a bot) failed to play, wait this long before the next
start (doubling up to the maximum): a broken sandbox must not void games in a loop."""


# ---------------------------------------------------------------- choosing games


@dataclass(frozen=True)
class Choice:
    """A new ladder game: seated versions (in seat order), player count, wall, deal."""

    version_ids: tuple[int, ...]
    players: int
    variant: str
    seed: int


def _most_behind(
    shares: Mapping[Any, float], done: Mapping[Any, int], allowed: Sequence[Any]
) -> Any:
    """The key whose count is furthest below its share (ties: the configured order)."""
    total = sum(done.get(k, 0) for k in shares) + 1
    best = None
    best_gap = -float("inf")
    for key in allowed:
        gap = shares[key] * total - done.get(key, 0)
        if gap > best_gap + 1e-12:
            best, best_gap = key, gap
    return best


def choose_game(
    active: Sequence[int],
    load: Mapping[int, int],
    share: Mapping[int, float],
    pairs: Mapping[tuple[int, int], int],
    by_players: Mapping[int, int],
    by_variant: Mapping[str, int],
    ladder: LadderSection,
    rng: random.Random,
) -> Choice | None:
    """The next ladder game, or None when too few versions are active.

    ``active``: the versions on the ladder (oldest first); ``load``: ladder games per
    version (scheduled, running and finished); ``share``: the games each would have
    had since it became active with all seats shared equally (``fair_shares``): the
    versions furthest behind their share play; ``pairs``: games each pair shared;
    ``by_players``/``by_variant``: ladder games so far per player count and wall.
    """
    counts = [k for k in ladder.players if k <= len(active)]
    if not counts:
        return None
    players = int(_most_behind(ladder.players, by_players, counts))
    variant = str(_most_behind(ladder.variants, by_variant, list(ladder.variants)))
    newcomers = [v for v in active if load.get(v, 0) < ladder.new_version_games]
    chosen: list[int] = []
    if newcomers:
        # The newest version that still needs its first games always plays.
        chosen.append(min(newcomers, key=lambda v: (load.get(v, 0), -v)))
    while len(chosen) < players:
        rest = [v for v in active if v not in chosen]

        def key(v: int) -> tuple[float, int, float]:
            met = sum(pairs.get((min(v, c), max(v, c)), 0) for c in chosen)
            return (round(load.get(v, 0) - share.get(v, 0.0), 6), met, rng.random())

        chosen.append(min(rest, key=key))
    rng.shuffle(chosen)  # seats: no version keeps the first seat
    return Choice(tuple(chosen), players, variant, rng.randrange(2**62))


# ---------------------------------------------------------------- running games


@dataclass(frozen=True)
class LadderJob:
    """One game for a worker: picklable, self-contained."""

    game_id: str
    players: int
    variant: str
    seed: int
    specs: tuple[BotSpec, ...]
    settings: PlaySettings
    log_dir: Path
    sources: tuple[Path, ...] = ()
    """By seat: the submitted folders (what a Ray node builds from)."""


@dataclass(frozen=True)
class JobDone:
    """What a worker hands back: the result, or why the arena could not play the game."""

    game_id: str
    result: GameResult | None
    stderr: tuple[tuple[int, str], ...] = ()
    error: str | None = None


def play_job(job: LadderJob, worker_id: int | None = None) -> JobDone:
    """Play one game in a pool worker with fresh bot processes whose stderr goes to a
    folder of this game only (so each seat's stderr is that game's), then clean up."""
    from arena.play import worker
    from arena.play.job import GameJob
    from arena.play.worker import WorkerState, run_job

    if worker_id is None:
        worker_id = worker._STATE.worker_id if worker._STATE is not None else 0
    state = WorkerState(worker_id)
    game = ScheduledGame(
        game_index=0,
        game_id=job.game_id,
        n_players=job.players,
        variant=job.variant,
        seed_index=0,
        deal_seed=job.seed,
        rotation=0,
        bots=tuple(s.name for s in job.specs),
    )
    try:
        job.log_dir.mkdir(parents=True, exist_ok=True)
        job.log_dir.chmod(0o755)
        try:
            result = run_job(
                state,
                GameJob(
                    game,
                    job.specs,
                    job.settings,
                    persistent=False,
                    log_dir=job.log_dir,
                    replay_frames=False,
                ),
            )
        finally:
            state.close()
        stderr = []
        for seat, spec in enumerate(job.specs):
            path = job.log_dir / f"{spec.name}.w{worker_id}.stderr.log"
            text = _tail(path)
            if text:
                stderr.append((seat, text))
        return JobDone(job.game_id, result, tuple(stderr))
    except Exception as exc:  # the arena's problem (sandbox, disk): the game is voided
        return JobDone(job.game_id, None, error=f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(job.log_dir, ignore_errors=True)


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - STDERR_READ_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def outcome_of(done: JobDone) -> GameOutcome:
    """A worker's result as the store keeps it."""
    result = done.result
    assert result is not None
    return GameOutcome(
        end_reason=result.end_reason,
        rounds=result.rounds,
        duration_s=result.duration_s,
        worker=result.worker,
        record_json=result.record_json,
        seats=tuple(FinishedSeat(s.seat, s.score, s.rank, s.forfeit) for s in result.seats),
        faults=tuple(
            FinishedFault(f.seat, f.kind, f.round, f.message, f.forfeit) for f in result.faults
        ),
        stderr=done.stderr,
    )


class Pool(Protocol):
    """Where jobs run (a process pool; tests pass an in-thread one)."""

    def submit(self, job: LadderJob, done: Callable[[JobDone], None]) -> None: ...

    def close(self, abort: bool) -> None: ...


class ProcessPool:
    """A ``multiprocess`` pool whose workers own bot processes and die with us (also on
    kill -9: the parent-death signal)."""

    def __init__(self, workers: int, one_core: bool = False) -> None:
        import multiprocess

        from arena.play.worker import init_pool_worker

        self._pool: Any = multiprocess.Pool(
            workers, initializer=init_pool_worker, initargs=(None, one_core)
        )

    def submit(self, job: LadderJob, done: Callable[[JobDone], None]) -> None:
        def failed(exc: BaseException) -> None:
            done(JobDone(job.game_id, None, error=f"{type(exc).__name__}: {exc}"))

        self._pool.apply_async(play_job, (job,), callback=done, error_callback=failed)

    def close(self, abort: bool) -> None:
        if abort:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()


class ThreadPool:
    """Runs jobs on threads of this process (tests and debugging)."""

    def __init__(self, workers: int, run: Callable[[LadderJob], JobDone] = play_job) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._run = run
        self._pool = ThreadPoolExecutor(workers)

    def submit(self, job: LadderJob, done: Callable[[JobDone], None]) -> None:
        self._pool.submit(lambda: done(self._run(job)))

    def close(self, abort: bool) -> None:
        self._pool.shutdown(wait=not abort, cancel_futures=True)


_NODE_BUILT: dict[str, BotSpec] = {}
"""On a Ray worker process: bundles built so far, by digest."""


def play_on_node(job: LadderJob, *bundles: Any) -> JobDone:
    """A Ray task: check this node's sandbox, build the seats' bundles (once per worker
    process), play the game with per-game stderr, as :func:`play_job` does locally."""
    import dataclasses
    import os
    import tempfile

    from arena.play.bundles import build_on_node
    from arena.play.ray_executor import node_check

    try:
        node_check(job.settings.sandbox)
        specs = []
        for bundle in bundles:
            if bundle.digest not in _NODE_BUILT:
                _NODE_BUILT[bundle.digest] = build_on_node(bundle, job.settings.sandbox)
            specs.append(_NODE_BUILT[bundle.digest])
    except Exception as exc:
        return JobDone(job.game_id, None, error=f"{type(exc).__name__}: {exc}")
    log_dir = Path(tempfile.gettempdir()) / "azul-arena-node-logs" / job.game_id
    here = dataclasses.replace(job, specs=tuple(specs), log_dir=log_dir)
    return play_job(here, worker_id=os.getpid() % 97)


class RayPool:
    """Games on a Ray cluster, one task per game. Bots travel as content-addressed
    bundles of their submitted folders (packed once per version, built once per node
    worker); results, records and stderr come back to this process, the only store
    writer: the nodes need no shared folder and no database access."""

    def __init__(self, address: str | None, workers: int) -> None:
        from arena.play.ray_executor import RayUnavailable, _ray

        ray = _ray()
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            try:
                ray.init(
                    address=address,
                    num_cpus=workers if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = address or "(a new local instance)"
                raise RayUnavailable(
                    f"cannot start or join the Ray cluster {where}: {exc}"
                ) from None
        self._remote = ray.remote(num_cpus=1, max_retries=1)(play_on_node)
        self._bundles: dict[Path, Any] = {}
        self._pending: dict[Any, tuple[LadderJob, Callable[[JobDone], None]]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._collect, name="ray-results", daemon=True)
        self._thread.start()

    def _bundle(self, source: Path, name: str) -> Any:
        from arena.play.bundles import pack

        ref = self._bundles.get(source)
        if ref is None:
            ref = self._bundles[source] = self._ray.put(pack(name, source))
        return ref

    def submit(self, job: LadderJob, done: Callable[[JobDone], None]) -> None:
        sources = job.sources or tuple(s.folder for s in job.specs)
        refs = [self._bundle(src, s.name) for src, s in zip(sources, job.specs, strict=True)]
        task = self._remote.remote(job, *refs)
        with self._lock:
            self._pending[task] = (job, done)

    def _collect(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                waiting = list(self._pending)
            if not waiting:
                self._closed.wait(0.1)
                continue
            ready, _ = self._ray.wait(waiting, num_returns=1, timeout=0.5)
            for task in ready:
                with self._lock:
                    job, done = self._pending.pop(task)
                try:
                    result: JobDone = self._ray.get(task)
                except Exception as exc:  # the node or its worker died: the arena's problem
                    result = JobDone(job.game_id, None, error=f"{type(exc).__name__}: {exc}")
                done(result)

    def close(self, abort: bool) -> None:
        if not abort:
            while True:
                with self._lock:
                    if not self._pending:
                        break
                time.sleep(0.1)
        self._closed.set()
        self._thread.join(10)
        with self._lock:
            for task in self._pending:
                with contextlib.suppress(Exception):
                    self._ray.cancel(task, force=True)
            self._pending.clear()
        if self._started:
            self._ray.shutdown()


class Ladder:
    """Keeps the configured number of games in flight; one thread (:meth:`run`)."""

    def __init__(
        self,
        store: CompetitionStore,
        ladder: LadderSection,
        play: PlaySettings,
        data_dir: Path,
        pool: Pool,
    ) -> None:
        self.store = store
        self.config = ladder
        self.play = play
        self.log_root = data_dir / "game-logs"
        self.bots_home = data_dir / BOTS_FOLDER
        self._next_collect = 0.0
        self.pool = pool
        self._inbox: queue.Queue[JobDone | None] = queue.Queue()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._running: set[str] = set()
        self._unsaved: list[JobDone] = []
        self._rng = random.Random(ladder.master_seed)
        self._backoff = 0.0
        self._not_before = 0.0
        self.wake_builder: Callable[[], None] = lambda: None
        """Called when a version goes back to the build queue (set by the service)."""
        self.finished = 0
        self.voided = 0
        self.passes = 0
        """Scheduling passes completed (tests wait on it)."""

    # ------------------------------------------------------------ control

    def wake(self) -> None:
        """Something changed (a new version, a challenge, resume): look again now."""
        self._inbox.put(None)

    def stop(self) -> None:
        self._stop.set()
        self._inbox.put(None)

    @property
    def in_flight(self) -> int:
        return len(self._running)

    def run(self) -> None:
        """Until :meth:`stop`: start games, store results. Survives store hiccups."""
        self._idle.clear()
        try:
            self._loop()
        finally:
            self._idle.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._fill()
            except StoreError as exc:  # the database is away: try again shortly
                _log.error("ladder: %s", exc)
                self._stop.wait(2.0)
            except Exception:  # a bug must not stop the ladder while the web server runs
                _log.exception("ladder: cannot start games")
                self._stop.wait(5.0)
            try:
                item = self._inbox.get(timeout=1.0)
            except queue.Empty:
                continue
            while item is not None or not self._inbox.empty():
                if item is not None:
                    self._handle_safely(item)
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break

    def _handle_safely(self, done: JobDone) -> None:
        try:
            self._handle(done)
        except Exception:  # the game stays 'running' in the store: played again on restart
            _log.exception("ladder: cannot store the result of game %s", done.game_id)

    def shutdown(self, abort: bool = True) -> int:
        """Stop: abandon running games (their bots are killed) and schedule them again;
        how many were re-queued."""
        self.stop()
        self._idle.wait(60)  # the loop starts no game after this
        self.pool.close(abort=abort)
        # Results that arrived while stopping are kept.
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._handle_safely(item)
        self._retry_unsaved()
        requeued = self.store.requeue_running()
        self._running.clear()
        return requeued

    # ------------------------------------------------------------ the loop

    def _fill(self) -> None:
        try:
            self._retry_unsaved()
            self._start_games()
            if time.monotonic() >= self._next_collect:
                self._next_collect = time.monotonic() + COLLECT_EVERY_S
                self.collect_builds()
        finally:
            self.passes += 1

    def collect_builds(self) -> int:
        """Delete the build copies of versions that can no longer play (replaced by a
        newer version or disqualified, with no game of theirs scheduled or running); how
        many. Runs on the ladder's thread, the only one that starts games, so no game
        starts from a copy being deleted. Only folders ``data_dir/bots/<version id>`` are
        ever deleted; the uploaded archive stays (what the author submitted)."""
        from arena.sandbox.stage import remove_tree

        home = self.bots_home.resolve()
        removed = 0
        for version_id, path in self.store.unused_builds():
            folder = Path(path)
            if folder.resolve() != home / str(version_id):
                continue  # not a copy this server made: never deleted
            if self.store.forget_build(version_id):
                remove_tree(folder)
                removed += 1
        if removed:
            _log.info("deleted the build copies of %d version(s) that can no longer play", removed)
        return removed

    def _start_games(self) -> None:
        if self.store.paused() or time.monotonic() < self._not_before:
            return
        while len(self._running) < self.config.games_in_flight and not self._stop.is_set():
            game = self.store.claim_scheduled_game()
            if game is None:
                if self.store.frozen() is not None:
                    return
                choice = self._choose()
                if choice is None:
                    return
                self.store.schedule_game(
                    kind="ladder",
                    players=choice.players,
                    variant=choice.variant,
                    seed=choice.seed,
                    version_ids=choice.version_ids,
                    rated=True,
                )
                game = self.store.claim_scheduled_game()
                if game is None:  # pragma: no cover - only this thread claims games
                    return
            if not self._start(game):
                return  # a game was voided: look again at the next pass, never in a loop

    def _choose(self) -> Choice | None:
        active = [v.id for v in self.store.active_versions()]
        load = {v: sum(per.values()) for v, per in self.store.ladder_load().items()}
        share = self.store.fair_shares(active)
        by_players, by_variant = self.store.ladder_mix()
        pairs = self.store.pair_counts(active)
        return choose_game(
            active, load, share, pairs, by_players, by_variant, self.config, self._rng
        )

    def _start(self, game: GameRow) -> bool:
        """Hand ``game`` to the pool; False when it was voided instead (a build missing)."""
        specs, sources = [], []
        for seat in game.seats:
            info = self.store.launch_info(seat.version_id)
            if info is None or not Path(info.built_path).is_dir():
                self._build_missing(game, seat)
                return False
            specs.append(
                BotSpec(folder=Path(info.built_path), manifest=BotManifest(**info.manifest))
            )
            sources.append(Path(info.source or info.built_path))
        job = LadderJob(
            game_id=game.id,
            players=game.players,
            variant=game.variant,
            seed=game.seed,
            specs=tuple(specs),
            settings=self.play,
            log_dir=self.log_root / game.id,
            sources=tuple(sources),
        )
        self._running.add(game.id)
        self.pool.submit(job, self._inbox.put)
        return True

    def _build_missing(self, game: GameRow, seat: SeatRow) -> None:
        """A seat's build copy (``data_dir/bots/<version>``) is gone: void the game once
        and, if the version is on the ladder, take it off until the build worker has
        rebuilt it from its archive (so no further game is voided for it)."""
        self.store.void_game(game.id, "bot build missing")
        self.voided += 1
        reason = (
            f"taken off the ladder: its build was missing when game {game.id} was due; "
            "rebuilding it from the uploaded archive"
        )
        requeued = self.store.rebuild_version(seat.version_id, reason)
        _log.error(
            "game %s voided: the build of %s v%d is missing%s",
            game.id,
            visible(seat.bot_name),
            seat.version_number,
            "; the version is off the ladder and queued for a rebuild" if requeued else "",
        )
        if requeued:
            self.wake_builder()

    def _handle(self, done: JobDone) -> None:
        self._running.discard(done.game_id)
        if done.result is None:
            self.store.void_game(done.game_id, "arena error")
            self.voided += 1
            self._backoff = min(ERROR_BACKOFF_S[1], max(ERROR_BACKOFF_S[0], self._backoff * 2))
            self._not_before = time.monotonic() + self._backoff
            _log.error(
                "game %s voided (the arena failed to play it): %s",
                done.game_id,
                visible(done.error or ""),
            )
            return
        self._backoff = 0.0
        self._store_result(done)

    def _store_result(self, done: JobDone) -> bool:
        try:
            if self.store.finish_game(done.game_id, outcome_of(done)):
                self.finished += 1
        except StoreError as exc:
            # Not stored (the database is away): kept here and offered again on every
            # pass; the store has nothing half-written, and after a restart the game,
            # still 'running' there, is played again.
            _log.error("game %s: result not stored yet: %s", done.game_id, exc)
            if done not in self._unsaved:
                self._unsaved.append(done)
            return False
        return True

    def _retry_unsaved(self) -> None:
        for done in list(self._unsaved):
            self._unsaved.remove(done)
            if not self._store_result(done):
                return
