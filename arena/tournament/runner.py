"""Run (or resume) a tournament: schedule, build, execute, store. Knows no ratings."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.referee import BotSpec, ManifestError, load_bot
from arena.referee.build import build_bot
from arena.referee.clock import WALL_CEILING
from arena.referee.manifest import unique_names
from arena.sandbox import Level
from arena.tournament.config import ConfigError, TournamentConfig
from arena.tournament.executors import Executor, LocalPoolExecutor
from arena.tournament.schedule import build_schedule, merge_schedule
from arena.tournament.store import STORE_NAME, GameResult, ScheduledGame, Store
from arena.tournament.worker import GameJob


@dataclass
class Tally:
    """Per-bot running totals for the progress display (not ratings)."""

    games: int = 0
    wins: int = 0


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


def store_path(config: TournamentConfig) -> Path:
    return config.output / STORE_NAME


def load_bots(config: TournamentConfig) -> list[BotSpec]:
    try:
        specs = [load_bot(folder) for folder in config.bots]
        unique_names(specs)
    except ManifestError as exc:
        raise ConfigError(str(exc)) from None
    return specs


def open_tournament(
    config: TournamentConfig, specs: list[BotSpec], extend: bool
) -> tuple[Store, list[ScheduledGame]]:
    """Open/create the store, check the config against it, store the schedule."""
    store = Store(store_path(config))
    mine = config.identity()
    mine["bots"] = [s.name for s in specs]  # folders may move; names identify bots
    identity = json.dumps(mine, sort_keys=True)
    stored_identity = _upgrade_identity(store.get_meta("identity"))
    wanted = build_schedule(
        [s.name for s in specs], config.players, config.variants, config.seeds, config.master_seed
    )
    stored = store.schedule()
    if stored_identity is not None and stored_identity != identity:
        if not extend:
            store.close()
            raise ConfigError(_difference(json.loads(stored_identity), mine, config))
        old = {g.game_id: g for g in stored}
        changed = [
            g.game_id
            for g in wanted
            if g.game_id in old
            and (old[g.game_id].deal_seed, old[g.game_id].bots) != (g.deal_seed, g.bots)
        ]
        if changed or _settings_changed(json.loads(stored_identity), mine):
            store.close()
            raise ConfigError(
                "--extend only adds games (new bots, seeds, player counts or variants); "
                "it cannot change the master seed, time control, fault policy or round limit "
                "of games already played"
            )
    schedule, new = merge_schedule(stored, wanted)
    store.save_schedule(new)
    with store.db:
        store.set_meta("identity", identity)
        store.set_meta("config", config.model_dump_json())
    return store, schedule


_GAME_FIELDS = ("master_seed", "time", "fault_policy", "round_limit")


def _upgrade_identity(text: str | None) -> str | None:
    """Stores written before clocks were selectable were played on wall clocks."""
    if text is None:
        return None
    try:
        old = json.loads(text)
    except json.JSONDecodeError:
        return text
    time = old.get("time") if isinstance(old, dict) else None
    if not isinstance(time, dict) or "clock" in time:
        return text
    time.update(clock="wall", wall_ceiling=WALL_CEILING)
    return json.dumps(old, sort_keys=True)


def _settings_changed(old: dict[str, object], new: dict[str, object]) -> bool:
    return any(old.get(k) != new.get(k) for k in _GAME_FIELDS)


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


def make_executor(config: TournamentConfig, workers: int | None = None) -> Executor:
    return LocalPoolExecutor(workers or config.worker_count)


def run_tournament(
    config: TournamentConfig,
    *,
    extend: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
    on_built: Callable[[BotSpec, float], None] | None = None,
) -> Progress:
    """Play every scheduled game not yet stored. KeyboardInterrupt propagates after the
    workers (and all their bots) are stopped; finished games are already stored."""
    specs = load_bots(config)
    store, schedule = open_tournament(config, specs, extend)
    try:
        finished = store.finished_indices()
        progress = Progress(total=len(schedule), done=len(finished), done_before=len(finished))
        for (game_index,) in store.db.execute("SELECT game_index FROM games ORDER BY game_index"):
            rows = store.db.execute(
                "SELECT bot, rank FROM seats WHERE game_index = ?", (game_index,)
            ).fetchall()
            progress.add([(str(b), int(r)) for b, r in rows])
        if on_progress:
            on_progress(progress)
        pending = [g for g in schedule if g.game_index not in finished]
        if not pending:
            return progress
        level = Level(config.sandbox)
        for i, spec in enumerate(specs):
            built = build_bot(spec, level)
            specs[i] = built.spec  # bots run from their read-only built copy
            if on_built and built.ran:
                on_built(spec, built.seconds)
        by_name = {s.name: (i, s) for i, s in enumerate(specs)}
        log_dir = config.output / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        jobs = [
            GameJob(
                game=g,
                specs=tuple(by_name[b][1] for b in g.bots),
                bot_index=tuple(by_name[b][0] for b in g.bots),
                round_limit=config.round_limit,
                time_control=config.time.control(),
                fault_policy=config.fault_policy,
                sandbox=config.sandbox,
                persistent=config.persistent,
                log_dir=log_dir,
            )
            for g in pending
            if all(b in by_name for b in g.bots)
        ]
        progress.total = progress.done + len(jobs)
        executor = executor or make_executor(config)
        aborted = True
        try:
            for result in executor.run(jobs):
                store.add_result(result)
                progress.done += 1
                progress.last = result
                progress.add([(s.bot, s.rank) for s in result.seats])
                if on_progress:
                    on_progress(progress)
            aborted = False
        finally:
            executor.close(abort=aborted)
        return progress
    finally:
        store.close()
