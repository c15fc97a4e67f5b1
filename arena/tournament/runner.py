"""Run (or resume) a tournament: build, schedule lazily, execute, store, rate.

The loop: ask the scheduler for games and store them (with the scheduler's state) before
they are submitted; keep about two games per worker in flight; store each result as it
arrives and tell the scheduler. Games scheduled but unfinished when a run stopped are
played first on resume. Memory does not grow with the number of games: the schedule
lives in the store and is streamed, tallies are aggregated in SQL.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.play.bots import BotNotReady, ready_bots
from arena.play.executors import Executor, LocalPoolExecutor
from arena.play.job import GameJob, GameResult, ScheduledGame
from arena.referee import BotSpec, ManifestError, load_bot
from arena.referee.clock import ClockKind
from arena.referee.manifest import Built, unique_names
from arena.store.tournament import (
    EXPECTED_KEY,
    LEGACY_VERSION,
    Store,
    StoreError,
    Tally,
    remember_location,
    store_location,
)
from arena.tournament.config import ConfigError, TournamentConfig
from arena.tournament.schedule import (
    Entrant,
    Exhaustive,
    Finished,
    Sampled,
    Scheduler,
    all_combinations,
    enumerate_games,
    exhaustive_count,
    one_challenger,
)

__all__ = ["Progress", "Tally", "run_tournament", "store_path"]


@dataclass
class Progress:
    total: int
    done: int
    done_before: int
    """Games already stored when this run started (a resume)."""
    tallies: dict[str, Tally] = field(default_factory=dict)
    last: GameResult | None = None

    def leader(self) -> str | None:
        if not self.tallies:
            return None
        name, tally = max(
            self.tallies.items(), key=lambda kv: (kv[1].wins / max(kv[1].games, 1), kv[0])
        )
        return f"{name} ({tally.wins / max(tally.games, 1):.0%} wins)" if tally.games else None

    def add(self, bots: list[tuple[str, int]]) -> None:
        """(bot, rank) for each seat of one game; a shared first place is a win for each
        (as in the reports)."""
        for bot, rank in bots:
            tally = self.tallies.setdefault(bot, Tally())
            tally.games += 1
            tally.wins += rank == 1


def store_path(config: TournamentConfig) -> Path | str:
    """Where the tournament's games are: its folder's ``tournament.sqlite``, or the
    database of ``store`` (a URL) or of the folder's ``store.url``."""
    return store_location(config.output, config.store)


def load_bots(config: TournamentConfig) -> list[BotSpec]:
    try:
        specs = [load_bot(folder) for folder in config.bots]
        unique_names(specs)
    except ManifestError as exc:
        raise ConfigError(str(exc)) from None
    for spec in specs:
        refused = [
            f"{n}-player {wall}"
            for n in config.players
            for wall in config.variants
            if not spec.manifest.plays(n, wall)
        ]
        if refused:
            raise ConfigError(
                f"bot {spec.name} declares {spec.manifest.declared_limits()} in its bot.toml, "
                f"so it cannot be seated in this tournament's {', '.join(refused)} games; "
                "play only what it declares (--players/--variants) or leave it out"
            )
    return specs


_GAME_FIELDS = ("master_seed", "time", "fault_policy", "round_limit", "seating", "schedule")


def open_tournament(
    config: TournamentConfig, built: list[Built], extend: bool
) -> tuple[Store, TournamentConfig]:
    """Open/create the store (taking the writer's lock), check the definition and the
    bots' versions against it, record the definition. Returns the store and the config
    to play with: on resume, settings the user left unset are the stored ones
    (``resumed_config``)."""
    location = store_path(config)
    store = Store(location)
    try:
        if isinstance(location, str):
            remember_location(config.output, location)
        config = resumed_config(store, config)
        _check_definition(store, config, built, extend)
    except BaseException:
        store.close()
        raise
    return store, config


def resumed_config(store: Store, config: TournamentConfig) -> TournamentConfig:
    """``config`` with the settings it leaves unset taken from the stored definition, where
    their default changed over time: the seating (schema-1 stores seated by rotations) and
    the clock (schema-2 stores ran on wall clocks). So the command that started a
    tournament resumes it after an upgrade; a setting the user does give is checked
    against the store as before."""
    text = store.get_meta("identity")
    try:
        stored = json.loads(text) if text else None
    except json.JSONDecodeError:
        stored = None
    if not isinstance(stored, dict):
        return config
    update: dict[str, object] = {}
    seating = stored.get("seating")
    if (
        "seating" not in config.model_fields_set
        and seating in ("balanced", "rotations")
        and seating != config.seating
    ):
        update["seating"] = seating
    clock = (
        (stored.get("time") or {}).get("clock") if isinstance(stored.get("time"), dict) else None
    )
    time_set = "time" in config.model_fields_set and "clock" in config.time.model_fields_set
    if not time_set and clock in ("cpu", "wall") and ClockKind(clock) != config.time.clock:
        update["time"] = config.time.model_copy(update={"clock": ClockKind(clock)})
    return config.model_copy(update=update) if update else config


def _identity(config: TournamentConfig, built: list[Built]) -> dict[str, object]:
    mine = config.identity()
    versions = {
        folder: (b.spec.name, b.version) for folder, b in zip(config.bots, built, strict=True)
    }
    mine["bots"] = [list(versions[f]) for f in config.bots]  # folders may move
    mine["challengers"] = [versions[f][0] for f in config.challengers]
    return mine


def _check_definition(
    store: Store, config: TournamentConfig, built: list[Built], extend: bool
) -> None:
    for b in built:
        known = store.versions(b.spec.name)
        if known == [LEGACY_VERSION]:
            continue  # a schema-1 store: its bots' versions were not recorded
        if known and b.version not in known:
            raise ConfigError(
                f"bot {b.spec.name} changed since its games in {config.output} were played "
                f"(version {known[-1]} there, {b.version} now). A changed bot is a new "
                "entrant: give it a new name in its bot.toml, or use another --out."
            )
    mine = _identity(config, built)
    stored_text = store.get_meta("identity")
    if stored_text is not None:
        stored = json.loads(stored_text)
        if stored.get("bots") and all(
            isinstance(b, list) and b[1] == LEGACY_VERSION for b in stored["bots"]
        ):
            stored["bots"] = [
                next((m for m in mine["bots"] if m[0] == b[0]), b)  # type: ignore[attr-defined]
                for b in stored["bots"]
            ]
            store.adopt_versions({b.spec.name: b.version for b in built})
        if stored != mine:
            if not extend:
                raise ConfigError(_difference(stored, mine, config))
            if any(stored.get(k) != mine.get(k) for k in _GAME_FIELDS):
                raise ConfigError(
                    "--extend only adds games (new bots, seeds, player counts, variants or "
                    "games); it cannot change the master seed, schedule, seating, time "
                    "control, fault policy or round limit of games already played"
                )
            store.put_meta(schedule_cursor="0")  # walk the new enumeration from the start
    store.put_meta(identity=json.dumps(mine, sort_keys=True), config=config.model_dump_json())


def _difference(old: dict[str, object], new: dict[str, object], config: TournamentConfig) -> str:
    changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    lines = [
        f"{config.output} already holds a tournament with a different definition "
        f"(changed: {', '.join(changed)}):"
    ]
    for key in changed:
        lines.append(f"  {key}: stored {old.get(key)!r}, now {new.get(key)!r}")
    lines.append(
        "Use another output folder (--out), restore the old settings to resume, or add "
        "--extend to add new games (e.g. a new bot) to this tournament."
    )
    return "\n".join(lines)


def make_scheduler(config: TournamentConfig, store: Store, entrants: list[Entrant]) -> Scheduler:
    """The configured scheduler, positioned where the store's schedule ends."""
    if config.schedule == "sampled":
        assert config.games is not None
        state = {
            key: value
            for key in ("sampled_set", "sampled_prefix", "sampled_skills")
            if (value := store.get_meta(key)) is not None
        }
        counts: dict[tuple[str, int], int] = {}
        for k in config.players:
            for (name, _version), n in store.lineup_counts(k).items():
                counts[(name, k)] = counts.get((name, k), 0) + n
        prefix = int(state.get("sampled_prefix", 0))
        replay = [
            Finished(index, bots, ranks)
            for index, bots, ranks in store.rated_games(prefix, key="name")
        ]
        return Sampled(
            entrants,
            config.players,
            config.variants,
            config.games,
            config.master_seed,
            config.seating,
            next_index=store.next_index(),
            state=state,
            counts=counts,
            replay=replay,
        )
    challengers = []
    if config.schedule == "gauntlet":
        names = {f: e.name for f, e in zip(config.bots, entrants, strict=True)}
        challengers = [names[f] for f in config.challengers]
    pairings = one_challenger(challengers) if challengers else all_combinations
    games = enumerate_games(
        entrants,
        config.players,
        config.variants,
        config.seeds,
        config.master_seed,
        config.seating,
        pairings,
    )
    return Exhaustive(
        games,
        next_index=store.next_index(),
        cursor=int(store.get_meta("schedule_cursor") or 0),
        known=store.has_game_id,
        expected=exhaustive_count(
            len(entrants),
            config.players,
            len(config.variants),
            config.seeds,
            config.seating,
            len(challengers),
        ),
        batch=SCHEDULE_BATCH,
    )


SCHEDULE_BATCH = 16
"""Games of a round-robin or gauntlet scheduled (stored) in one transaction, ahead of play;
after a stop, those unfinished are played first on resume."""


class _Ledger:
    """The stored ratings, loaded (with the rating libraries) only once there is
    something to rate: a run with nothing new to play imports none of them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._ledger: Any = None

    def _get(self) -> Any:
        if self._ledger is None:
            from arena.tournament.ledger import RatingLedger

            self._ledger = RatingLedger(self.store)
        return self._ledger

    def prepare(self) -> None:
        self._get()

    def catch_up(self) -> None:
        prefix = self.store.ratings_prefix()
        if self.store.first_unfinished(prefix) > prefix:
            self._get().advance()

    def tick(self) -> None:
        self._get().tick()

    def advance(self) -> None:
        if self._ledger is not None:
            self._ledger.advance()


def make_executor(
    config: TournamentConfig, workers: int | None = None, built: list[Built] | None = None
) -> Executor:
    if config.executor == "ray":
        from arena.play.ray_executor import make_ray_executor

        return make_ray_executor(
            built or [], config.sandbox, config.ray_address, workers or config.workers or None
        )
    return LocalPoolExecutor(workers or config.worker_count, one_core=config.pins_core)


def build_bots(
    config: TournamentConfig, on_built: Callable[[BotSpec, float], None] | None = None
) -> list[Built]:
    specs = load_bots(config)
    try:
        return ready_bots(
            specs,
            config.sandbox,
            toolchains=config.toolchains,
            on_built=(lambda b: on_built(b.spec, b.seconds)) if on_built else None,
        )
    except BotNotReady as exc:
        raise ConfigError(str(exc)) from None


def run_tournament(
    config: TournamentConfig,
    *,
    extend: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
    on_built: Callable[[BotSpec, float], None] | None = None,
) -> Progress:
    """Play every game the scheduler hands out that is not yet stored.

    KeyboardInterrupt propagates after the workers (and all their bots) are stopped;
    finished games are already stored. A store that cannot be written (full disk,
    read-only folder) raises ``StoreError`` once the workers are stopped.
    """
    built = build_bots(config, on_built)
    store, config = open_tournament(config, built, extend)
    try:
        entrants = [Entrant(b.spec.name, b.version) for b in built]
        scheduler = make_scheduler(config, store, entrants)
        if scheduler.expected is not None:  # a report of a stopped run shows the whole total
            store.set_meta(EXPECTED_KEY, str(scheduler.expected))
        totals = store.totals()
        total = max(totals.scheduled, scheduler.expected or 0)
        progress = Progress(
            total=total,
            done=totals.finished,
            done_before=totals.finished,
            tallies=totals.tallies,
        )
        ledger = _Ledger(store)
        ledger.catch_up()
        if on_progress:
            on_progress(progress)
        launch = {(b.spec.name, b.version): b for b in built}  # the built copies
        log_dir = config.output / "logs"
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{log_dir}: cannot create the log folder ({exc})") from None
        play = config.play

        def job(game: ScheduledGame) -> GameJob | None:
            bots = [launch.get((n, v)) for n, v in zip(game.bots, game.versions, strict=True)]
            if any(b is None for b in bots):
                return None  # a bot no longer in the tournament (kept, never played)
            return GameJob(
                game=game,
                bots=tuple(b for b in bots if b is not None),
                settings=play,
                persistent=config.persistent,
                log_dir=log_dir,
                compress=True,
            )

        leftover = deque(j for g in store.unfinished() if (j := job(g)) is not None)
        """Games stored but unfinished when a run stopped: played first."""
        fresh: deque[GameJob] = deque()

        def pull() -> GameJob | None:
            """The next job: a leftover, else one the scheduler hands out (its games are
            stored, with its state, before they are submitted)."""
            while not leftover and not fresh:
                games = scheduler.next()
                if not games:
                    return None
                store.schedule_games(games, scheduler.state())
                progress.total = max(progress.total, store.expected_count())
                fresh.extend(j for g in games if (j := job(g)) is not None)
            return (leftover or fresh).popleft()

        first = pull()
        if first is None:
            progress.total = _all_handed_out(store, progress.done)
            return progress  # nothing to play: no pool started
        ledger.prepare()  # load the rating libraries before play, not between results
        executor = executor or make_executor(config, built=built)
        aborted = True
        try:
            executor.submit(first)
            in_flight = 1
            while True:
                while in_flight < max(2, 2 * executor.workers):  # may grow (ray batches)
                    item = pull()
                    if item is None:
                        break  # all handed out, or the scheduler waits for results
                    executor.submit(item)
                    in_flight += 1
                if in_flight == 0:
                    break
                result = executor.next_result()
                in_flight -= 1
                if not store.add_result(result):
                    continue  # delivered twice: stored once
                _save_stderr(log_dir, result)
                ledger.tick()
                names = [s.bot for s in result.seats]
                scheduler.finished(
                    Finished(result.game_index, tuple(names), tuple(s.rank for s in result.seats))
                )
                progress.done += 1
                progress.last = result
                progress.add([(s.bot, s.rank) for s in result.seats])
                if on_progress:
                    on_progress(progress)
            aborted = False
        finally:
            executor.close(abort=aborted)
        ledger.advance()  # the ratings of every game stored (after a stop: on resume)
        progress.total = _all_handed_out(store, progress.done)
        return progress
    finally:
        store.close()


def _save_stderr(log_dir: Path, result: GameResult) -> None:
    """Stderr a remote executor sent back with a game: appended to the bot's log for the
    host that played it (a local worker writes its logs here itself, and sends none)."""
    host = result.worker.split(":")[0] or "node"
    for seat, text in result.stderr:
        bot = result.seats[seat].bot
        # A full disk loses a log, never the game (it is stored).
        path = log_dir / f"{bot}.{host}.stderr.log"
        with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as log:
            log.write(text)


def _all_handed_out(store: Store, done: int) -> int:
    """The scheduler has handed out its last game: the tournament's total is what it
    handed out (an adaptive scheduler may stop short of what it expected)."""
    scheduled = store.scheduled_count()
    store.set_meta(EXPECTED_KEY, str(scheduled))
    return max(done, scheduled)
