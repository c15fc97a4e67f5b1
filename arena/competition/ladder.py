"""The continuous ladder: keep ``games_in_flight`` games running, forever.

Each time a slot frees up the ladder starts the oldest scheduled game (a challenge, a
re-run, a game of the finals or a round, a game re-queued after a restart) or else picks
a new ladder game with :func:`choose_game`: a new version plays until it has
``new_version_games`` games, otherwise the versions with the fewest games play (games
per bot stay balanced), and player counts and walls follow the configured shares. Games
run on the play layer's executor (a local pool or Ray batches, :mod:`arena.play`); each
result goes to the store, which keeps it once (keyed by the game id) and rates it in the
same transaction. The store is the ledger: after a crash the running games are simply
scheduled again.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arena.competition.config import LadderSection
from arena.play.bots import BotNotReady, stored_bot
from arena.play.executors import Executor, LocalPoolExecutor
from arena.play.job import GameJob, GameResult, ScheduledGame
from arena.play.worker import failed_game
from arena.referee.manifest import BotManifest
from arena.referee.settings import PlaySettings
from arena.sandbox import Level
from arena.store.competition import (
    CompetitionStore,
    FinishedFault,
    FinishedSeat,
    GameOutcome,
    StoreError,
)
from arena.textsafe import visible
from arena.tournament.schedule import Finished, Scheduler

_log = logging.getLogger("arena.competition.ladder")

BOTS_FOLDER = "bots"
"""``data_dir/bots/<version id>``: each accepted version's built bot, as the ladder runs it."""
COLLECT_EVERY_S = 60.0
"""How often the ladder deletes the build copies of versions that can no longer play."""
POLL_S = 0.2
"""While games run, how often the ladder looks for a wake-up (a new version, a challenge)."""
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


def _at_least(n: int, items: Iterator[int]) -> bool:
    """Whether ``items`` yields ``n`` or more (stops at the ``n``-th)."""
    return sum(1 for _ in itertools.islice(items, n)) >= n


def choose_game(
    active: Sequence[int],
    load: Mapping[int, int],
    share: Mapping[int, float],
    pairs: Mapping[tuple[int, int], int],
    by_players: Mapping[int, int],
    by_variant: Mapping[str, int],
    ladder: LadderSection,
    rng: random.Random,
    plays: Callable[[int, int, str], bool] | None = None,
) -> Choice | None:
    """The next ladder game, or None when too few versions are active.

    ``active``: the versions on the ladder (oldest first); ``load``: ladder games per
    version (scheduled, running and finished); ``share``: the games each would have
    had since it became active with all seats shared equally (``fair_shares``): the
    versions furthest behind their share play; ``pairs``: games each pair shared;
    ``by_players``/``by_variant``: ladder games so far per player count and wall.
    ``plays(version, players, wall)``: whether a version's bot.toml lets it be seated in
    such a game (default: every version plays every game).
    """
    can = plays or (lambda _v, _n, _w: True)
    games = {
        (n, w)
        for n in ladder.players
        for w in ladder.variants
        if n <= len(active) and _at_least(n, (v for v in active if can(v, n, w)))
    }
    counts = [k for k in ladder.players if any((k, w) in games for w in ladder.variants)]
    if not counts:
        return None
    players = int(_most_behind(ladder.players, by_players, counts))
    walls = [w for w in ladder.variants if (players, w) in games]
    variant = str(_most_behind(ladder.variants, by_variant, walls))
    active = [v for v in active if can(v, players, variant)]
    newcomers = [v for v in active if load.get(v, 0) < ladder.new_version_games]
    chosen: list[int] = []
    if newcomers:
        # The newest version that still needs its first games always plays.
        chosen.append(min(newcomers, key=lambda v: (load.get(v, 0), -v)))
    # Furthest behind its share first; among equals, the one that met the seated least,
    # then chance.
    behind = {v: round(load.get(v, 0) - share.get(v, 0.0), 6) for v in active}
    order = sorted(active, key=behind.__getitem__)
    while len(chosen) < players:
        rest = [v for v in order if v not in chosen]
        equals = [v for v in rest if behind[v] == behind[rest[0]]]

        def key(v: int) -> tuple[int, float]:
            met = sum(pairs.get((min(v, c), max(v, c)), 0) for c in chosen)
            return (met, rng.random())

        chosen.append(min(equals, key=key))
    rng.shuffle(chosen)  # seats: no version keeps the first seat
    return Choice(tuple(chosen), players, variant, rng.randrange(2**62))


class LadderTally:
    """What :func:`choose_game` weighs (loads, fair shares, pairs, the mix), read from the
    store once and then kept up to date with each game the ladder itself schedules: with
    1,000 versions and many games, reading every seat row for every choice (what the
    store's queries do) would make each choice cost as much as the whole history.

    Read again when the active versions change (a disqualification voids games too),
    when the ladder voids a game, and at least every ``REFRESH_S`` (or 50 times the last
    read's duration, so reading stays a small part of the time). An organiser's re-run
    voids a game and schedules its twin with the same seats: the counts stay right."""

    REFRESH_S = 60.0

    def __init__(
        self,
        active: list[int],
        load: dict[int, int],
        filled: dict[int, float],
        pairs: dict[tuple[int, int], int],
        by_players: dict[int, int],
        by_variant: dict[str, int],
        fresh_for: float,
    ) -> None:
        self.active = active
        self.load = load
        self.filled = filled
        """Per version: seats filled on the ladder since it became active."""
        self.pairs = pairs
        self.by_players = by_players
        self.by_variant = by_variant
        self._until = time.monotonic() + fresh_for

    @classmethod
    def read(cls, store: CompetitionStore, active: list[int]) -> LadderTally:
        started = time.monotonic()
        load = {v: sum(per.values()) for v, per in store.ladder_load().items()}
        filled = {v: s * len(active) for v, s in store.fair_shares(active).items()}
        by_players, by_variant = store.ladder_mix()
        pairs = store.pair_counts(active)
        took = time.monotonic() - started
        return cls(
            active, load, filled, pairs, by_players, by_variant, max(cls.REFRESH_S, 50 * took)
        )

    def stale(self, active: list[int]) -> bool:
        return active != self.active or time.monotonic() >= self._until

    def shares(self) -> dict[int, float]:
        """``CompetitionStore.fair_shares`` of the active versions."""
        n = len(self.active) or 1
        return {v: self.filled.get(v, 0.0) / n for v in self.active}

    def add(self, choice: Choice) -> None:
        """Count a game the ladder has just chosen (it is scheduled next)."""
        seated = sorted(choice.version_ids)
        for i, a in enumerate(seated):
            self.load[a] = self.load.get(a, 0) + 1
            for b in seated[i + 1 :]:
                self.pairs[(a, b)] = self.pairs.get((a, b), 0) + 1
        for v in self.active:
            self.filled[v] = self.filled.get(v, 0.0) + choice.players
        self.by_players[choice.players] = self.by_players.get(choice.players, 0) + 1
        self.by_variant[choice.variant] = self.by_variant.get(choice.variant, 0) + 1


class LadderScheduler:
    """The ladder as a scheduler (the tournament's ``Scheduler`` seam, open-ended): each
    :meth:`next` is the oldest game scheduled in the competition store (a challenge, a
    re-run, a game re-queued after a restart) or else a new ladder game chosen by
    :func:`choose_game` and scheduled there, claimed (running) before it is handed out.
    The store is the ledger: what finished is read from it, so :meth:`finished` and
    :meth:`state` keep nothing."""

    expected: int | None = None
    """Never known: the ladder runs until the organiser stops it."""

    def __init__(
        self,
        store: CompetitionStore,
        config: LadderSection,
        new_games_allowed: Callable[[], bool] = lambda: True,
        in_flight: Callable[[], Collection[str]] = tuple,
    ) -> None:
        self.store = store
        self.config = config
        self.new_games_allowed = new_games_allowed
        """Whether new ladder games may be chosen now (the phases' ``ladder`` rule);
        games already scheduled (challenges, re-runs, finals) play either way."""
        self.in_flight = in_flight
        """The ids of the games handed out and not finished yet (the ladder's)."""
        self._event_games: set[str] = set()
        """Games of an event handed out (those still in flight, once pruned)."""
        self._rng = random.Random(config.master_seed)
        self._index = 0
        self._declared: dict[int, BotManifest | None] = {}
        self._tally: LadderTally | None = None

    def next(self) -> list[ScheduledGame]:
        """The next game, or none. Paused: only the games of an event (finals, a round:
        the organiser's own tournaments) start; frozen: scheduled games (challenges,
        events) still play but no new ladder game is chosen; too few versions: none.

        An event has the machine: while its games are scheduled or running, no other game
        starts, and its first game waits until the games in flight that are not its own
        have finished. On Ray a batch plays its games in order on one node: an event's
        games queued behind (or batched with) ladder games would wait for them and crowd
        onto one node, where alone they are shared out over every node. A free worker
        idles through an event's last games instead."""
        events_only = self.store.paused()
        if self.store.event_game_open():
            in_flight = set(self.in_flight())
            self._event_games &= in_flight
            if in_flight - self._event_games:
                return []  # others still in flight: the event starts when they finish
            events_only = True
        game = self.store.claim_scheduled_game(events_only=events_only)
        if game is not None and game.event_id is not None:
            self._event_games.add(game.id)
        if game is None:
            if events_only or self.store.frozen() is not None or not self.new_games_allowed():
                return []
            choice = self._choose()
            if choice is None:
                return []
            made = self.store.schedule_game(
                kind="ladder",
                players=choice.players,
                variant=choice.variant,
                seed=choice.seed,
                version_ids=choice.version_ids,
                rated=True,
            )
            # This game, not the oldest scheduled: finals started in between would have
            # their first game claimed here as a ladder game (not counted as the event's,
            # so the event waited for it to finish) and this one left scheduled for good.
            game = self.store.claim_scheduled_game(game_id=made.id)
            if game is None:  # pragma: no cover - only this thread claims games
                return []
        self._index += 1
        return [
            ScheduledGame(
                game_index=self._index,
                game_id=game.id,
                n_players=game.players,
                variant=game.variant,
                seed_index=0,
                deal_seed=game.seed,
                rotation=0,
                bots=tuple(s.bot_name for s in game.seats),
                versions=tuple(str(s.version_id) for s in game.seats),
            )
        ]

    def finished(self, game: Finished) -> None:
        """Nothing to remember: the next choice reads the loads from the store."""

    def state(self) -> dict[str, str]:
        return {}

    def _choose(self) -> Choice | None:
        tally = self._tally
        active = self.store.active_version_ids()
        if tally is None or tally.stale(active):
            tally = self._tally = LadderTally.read(self.store, active)
        choice = choose_game(
            tally.active,
            tally.load,
            tally.shares(),
            tally.pairs,
            tally.by_players,
            tally.by_variant,
            self.config,
            self._rng,
            self._plays,
        )
        if choice is not None:
            tally.add(choice)
        return choice

    def recount(self) -> None:
        """Read the counts from the store again at the next choice (a game was voided)."""
        self._tally = None

    def _plays(self, version_id: int, players: int, variant: str) -> bool:
        """What the version's bot.toml declares it can play (players, walls)."""
        if version_id not in self._declared:
            info = self.store.launch_info(version_id)
            self._declared[version_id] = _declared(info.manifest if info is not None else None)
        manifest = self._declared[version_id]
        return manifest is None or manifest.plays(players, variant)


def _declared(manifest: dict[str, Any] | None) -> BotManifest | None:
    """A stored version's manifest as declared limits (a manifest stored before limits
    existed, or one that does not validate today, declares none: it plays every game)."""
    if not manifest:
        return None
    try:
        return BotManifest(**manifest)
    except ValidationError:
        return None


# ---------------------------------------------------------------- running games


def outcome_of(result: GameResult) -> GameOutcome:
    """A played game's result as the competition store keeps it."""
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
        stderr=result.stderr,
    )


def make_executor(
    executor: str, workers: int, *, one_core: bool, ray_address: str | None, level: Level
) -> Executor:
    """The play layer's executor for the ladder: a local pool, or a Ray cluster (batched,
    bots sent as bundles and built on each node)."""
    if executor == "ray":
        from arena.play.ray_executor import RayExecutor

        return RayExecutor(address=ray_address, level=level, num_cpus=workers)
    return LocalPoolExecutor(workers, one_core=one_core)


class Ladder:
    """Keeps the configured number of games in flight; one thread (:meth:`run`) starts
    games and stores their results, the play layer's executor plays them."""

    def __init__(
        self,
        store: CompetitionStore,
        ladder: LadderSection,
        play: PlaySettings,
        data_dir: Path,
        executor: Executor,
        new_games_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.config = ladder
        self.play = play
        self.log_root = data_dir / "game-logs"
        self.bots_home = data_dir / BOTS_FOLDER
        self._next_collect = 0.0
        self.executor = executor
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._choices = LadderScheduler(
            store, ladder, new_games_allowed, in_flight=lambda: self._running.values()
        )
        self.scheduler: Scheduler = self._choices
        self._running: dict[int, str] = {}
        """Games handed to the executor: its game index → the game id."""
        self._unsaved: list[tuple[str, GameResult]] = []
        self._backoff = 0.0
        self._not_before = 0.0
        self._executor_failed = False
        self.wake_builder: Callable[[], None] = lambda: None
        """Called when a version goes back to the build queue (set by the service)."""
        self.finished = 0
        self.voided = 0
        self.passes = 0
        """Scheduling passes completed (tests wait on it)."""

    # ------------------------------------------------------------ control

    def wake(self) -> None:
        """Something changed (a new version, a challenge, resume): look again now."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    @property
    def in_flight(self) -> int:
        return len(self._running)

    def wanted_in_flight(self) -> int:
        """Games handed to the executor at once. On Ray, enough for a batch per CPU twice
        over (as a tournament keeps; read again each time: the batch size grows as
        durations are learned): a few games in flight would make every batch a single
        game. On a local pool with ``games_in_flight`` filling its workers, one more game
        per worker waits in the pool's queue: a worker that finishes a game starts the
        next at once instead of idling while this thread stores the result and chooses
        the next game (slow when the web server holds the interpreter, see
        docs/benchmarks.md). No more games play at once: a pool plays one per worker."""
        from arena.play.ray_executor import RayExecutor

        wanted, workers = self.config.games_in_flight, self.executor.workers
        if isinstance(self.executor, RayExecutor):
            return max(wanted, 2 * workers)
        if isinstance(self.executor, LocalPoolExecutor) and wanted >= workers:
            return wanted + workers
        return wanted

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
            if not self._running:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            deadline = time.monotonic() + POLL_S
            while self._collect(max(0.0, deadline - time.monotonic())):
                if self._wake.is_set() or time.monotonic() >= deadline:
                    break  # start the next games now
            self._wake.clear()

    def _collect(self, timeout: float) -> bool:
        """Store the next finished game if one is ready within ``timeout`` (False: none).
        A game the arena failed to play (the executor says which) is voided."""
        if not self._running:
            return False
        try:
            result = self.executor.poll(timeout)
        except Exception as exc:
            index = failed_game(exc)
            game_id = self._running.pop(index, None) if index is not None else None
            if game_id is None:  # not one game's failure: the executor itself is unwell
                _log.error("ladder: the executor failed: %s", visible(str(exc)))
                self._back_off()
                self._executor_failed = True
                return False
            try:
                self._void(game_id, f"{type(exc).__name__}: {exc}")
            except Exception:  # the game stays 'running' in the store: played again later
                _log.exception("ladder: cannot void game %s", game_id)
            return True
        if result is None:
            return False
        game_id = self._running.pop(result.game_index, None)
        if game_id is None:
            return True  # delivered twice (a retried batch): stored once already
        self._backoff = 0.0
        try:
            self._store_result(game_id, result)
        except Exception as exc:  # not the database away (kept and retried): a fault of ours
            _log.exception("ladder: cannot store the result of game %s", game_id)
            try:  # void, not left 'running' on every page until a restart plays it again
                self._void(game_id, f"its result cannot be stored: {type(exc).__name__}: {exc}")
            except Exception:  # the game stays 'running' in the store: played again on restart
                _log.exception("ladder: cannot void game %s", game_id)
        return True

    def shutdown(self, abort: bool = True) -> int:
        """Stop: abandon running games (their bots are killed; with ``abort=False`` they
        finish first and are stored) and schedule them again; how many were re-queued."""
        self.stop()
        self._idle.wait(60)  # the loop starts no game after this
        if not abort:  # let the running games finish (a broken executor: not for long)
            deadline = time.monotonic() + 600
            self._executor_failed = False
            while self._running and time.monotonic() < deadline:
                self._collect(POLL_S)
                if self._executor_failed:
                    break
        self.executor.close(abort=abort)
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
        if time.monotonic() < self._not_before:
            return  # paused: the scheduler hands out only event games
        while len(self._running) < self.wanted_in_flight() and not self._stop.is_set():
            games = self.scheduler.next()
            if not games:
                return
            for game in games:
                if not self._start(game):
                    return  # a game was voided: look again at the next pass, never in a loop

    def _start(self, game: ScheduledGame) -> bool:
        """Hand ``game`` to the executor; False when it was voided instead (a build missing)."""
        bots = []
        for version in game.versions:
            version_id = int(version)
            info = self.store.launch_info(version_id)
            try:
                if info is None:
                    raise BotNotReady(f"version {version_id} has no build")
                bots.append(
                    stored_bot(
                        Path(info.built_path),
                        BotManifest(**info.manifest),
                        version=f"v{info.version_id}",
                        source=Path(info.source) if info.source else None,
                    )
                )
            except BotNotReady:
                self._build_missing(game.game_id, version_id)
                return False
        job = GameJob(
            game,
            tuple(bots),
            self.play,
            persistent=False,
            log_dir=self.log_root,
            replay_frames=False,
            collect_stderr=True,
        )
        self._running[game.game_index] = game.game_id
        self.executor.submit(job)
        return True

    def _build_missing(self, game_id: str, version_id: int) -> None:
        """A seat's build copy (``data_dir/bots/<version>``) is gone: void the game once
        and, if the version is on the ladder, take it off until the build worker has
        rebuilt it from its archive (so no further game is voided for it)."""
        self.store.void_game(game_id, "bot build missing")
        self._choices.recount()
        self.voided += 1
        reason = (
            f"taken off the ladder: its build was missing when game {game_id} was due; "
            "rebuilding it from the uploaded archive"
        )
        requeued = self.store.rebuild_version(version_id, reason)
        version = self.store.version(version_id)
        _log.error(
            "game %s voided: the build of %s v%s is missing%s",
            game_id,
            visible(version.bot_name) if version else f"version {version_id}",
            version.number if version else "?",
            "; the version is off the ladder and queued for a rebuild" if requeued else "",
        )
        if requeued:
            self.wake_builder()

    def _void(self, game_id: str, error: str) -> None:
        """The arena (not a bot) failed to play ``game_id``: void it and back off."""
        self.store.void_game(game_id, "arena error")
        self._choices.recount()
        self.voided += 1
        self._back_off()
        _log.error("game %s voided (the arena failed to play it): %s", game_id, visible(error))

    def _back_off(self) -> None:
        """Start no game for a while (doubling): a broken sandbox must not void games in a
        loop."""
        self._backoff = min(ERROR_BACKOFF_S[1], max(ERROR_BACKOFF_S[0], self._backoff * 2))
        self._not_before = time.monotonic() + self._backoff

    def _store_result(self, game_id: str, result: GameResult) -> bool:
        try:
            if self.store.finish_game(game_id, outcome_of(result)):
                self.finished += 1
        except StoreError as exc:
            # Not stored (the database is away): kept here and offered again on every
            # pass; the store has nothing half-written, and after a restart the game,
            # still 'running' there, is played again.
            _log.error("game %s: result not stored yet: %s", game_id, exc)
            if (game_id, result) not in self._unsaved:
                self._unsaved.append((game_id, result))
            return False
        return True

    def _retry_unsaved(self) -> None:
        for game_id, result in list(self._unsaved):
            self._unsaved.remove((game_id, result))
            if not self._store_result(game_id, result):
                return
