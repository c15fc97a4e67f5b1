"""Run (or resume) an SPRT: play game pairs until the log-likelihood ratio crosses a bound.

Pairs are played in order (pair ``i`` uses deal ``i`` of the master seed, on the
variants in turn), in batches of one pair per worker; the test is checked after
every batch (with one worker: after every pair), so a decided test overshoots by
at most ``workers - 1`` pairs (they are stored and counted). Finished games are stored at once;
an interrupted test resumes where it stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.errors import ArenaError
from arena.play.build import build_bot
from arena.play.executors import worker_count
from arena.referee import BotSpec, ManifestError, load_bot
from arena.referee.manifest import Built
from arena.referee.settings import PlaySettings
from arena.sprt.play import GamePlayer, Leg, TournamentPlayer
from arena.sprt.stats import (
    EloEstimate,
    Pentanomial,
    SprtBounds,
    Verdict,
    elo_estimate,
    likelihood_of_superiority,
    llr_logistic,
)
from arena.store.sprt import STORE_NAME, SprtStore
from arena.tournament.schedule import deal_seed

NAME_LIMIT = 64


class SprtError(ArenaError):
    """A problem with the test's inputs or its ledger, explained for the user."""


@dataclass(frozen=True)
class SprtConfig:
    new: Path
    old: Path
    bounds: SprtBounds = field(default_factory=SprtBounds)
    variants: tuple[str, ...] = ("coloured", "gray")
    master_seed: int = 1
    max_pairs: int = 2000
    play: PlaySettings = field(default_factory=PlaySettings)
    """Clock, fault policy, round limit, sandbox level and toolchains (their one owner)."""
    persistent: bool = True
    workers: int = 0
    """Worker processes (0: one per core, :func:`arena.play.executors.worker_count`)."""
    output: Path = Path("results/sprt")

    def identity(self, new_name: str, old_name: str) -> dict[str, object]:
        """What defines the test: resuming with anything else here is refused.
        (Workers, sandbox, process mode, output and max_pairs may change.)"""
        tc = self.play.time
        return {
            "new": new_name,
            "old": old_name,
            "elo0": float(self.bounds.elo0),
            "elo1": float(self.bounds.elo1),
            "alpha": float(self.bounds.alpha),
            "beta": float(self.bounds.beta),
            "variants": list(self.variants),
            "master_seed": self.master_seed,
            "round_limit": self.play.round_limit,
            "time": tc.identity(),
            "fault_policy": self.play.fault_policy.model_dump(),
        }

    def leg(self, pair: int, leg: int) -> Leg:
        variant = self.variants[pair % len(self.variants)]
        return Leg(pair, leg, variant, deal_seed(self.master_seed, 2, variant, pair))


@dataclass
class SprtStatus:
    """The test's state after the games stored so far."""

    bounds: SprtBounds
    new: str
    old: str
    penta: Pentanomial = field(default_factory=Pentanomial)
    wins: int = 0
    draws: int = 0
    losses: int = 0
    games: int = 0
    games_before: int = 0
    """Games already stored when this run started (a resume)."""
    llr: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)
    stopped: str = ""
    """Why the run stopped without a verdict ("max_pairs"), or "" ."""
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        return self.bounds.verdict(self.llr)

    @property
    def elo(self) -> EloEstimate:
        return elo_estimate(self.penta)

    @property
    def los(self) -> float:
        """Likelihood of superiority of NEW over OLD (see :func:`likelihood_of_superiority`)."""
        return likelihood_of_superiority(self.penta)

    @property
    def draw_ratio(self) -> float:
        """Share of single games drawn (0 before any game)."""
        return self.draws / self.games if self.games else 0.0

    def update(self, legs: dict[tuple[int, int], float]) -> None:
        pairs = sorted({p for p, _ in legs})
        points = [legs[p, 0] + legs[p, 1] for p in pairs if (p, 0) in legs and (p, 1) in legs]
        self.penta = Pentanomial.of_pair_points(points)
        values = list(legs.values())
        self.games = len(values)
        self.wins = sum(v == 1.0 for v in values)
        self.draws = sum(v == 0.5 for v in values)
        self.losses = sum(v == 0.0 for v in values)
        self.llr = llr_logistic(self.bounds.elo0, self.bounds.elo1, self.penta)

    def to_json(self) -> dict[str, object]:
        elo = self.elo
        return {
            "new": self.new,
            "old": self.old,
            "elo0": self.bounds.elo0,
            "elo1": self.bounds.elo1,
            "alpha": self.bounds.alpha,
            "beta": self.bounds.beta,
            "model": "pentanomial GSPRT, logistic Elo (fishtest LLR_logistic)",
            "pairs": self.penta.pairs,
            "games": self.games,
            "pentanomial": list(self.penta.counts),
            "wdl": [self.wins, self.draws, self.losses],
            "llr": self.llr,
            "lower_bound": self.bounds.lower,
            "upper_bound": self.bounds.upper,
            "verdict": self.verdict.value,
            "stopped": self.stopped or None,
            "elo": elo.elo,
            "elo_95": [elo.low, elo.high],
            "los": self.los,
            "draw_ratio": self.draw_ratio,
            "faults": self.faults,
        }


def load_specs(config: SprtConfig) -> tuple[BotSpec, BotSpec]:
    """NEW and OLD; when both have the same name (a copied folder, or the same folder
    twice) they are told apart as ``NAME.new`` and ``NAME.old``."""
    try:
        new, old = load_bot(config.new), load_bot(config.old)
    except ManifestError as exc:
        raise SprtError(str(exc)) from None
    if new.name == old.name:
        new, old = (
            spec.model_copy(
                update={
                    "manifest": spec.manifest.model_copy(
                        update={"name": f"{spec.name[: NAME_LIMIT - 4]}.{tag}"}
                    )
                }
            )
            for spec, tag in ((new, "new"), (old, "old"))
        )
    return new, old


DEFAULT_ROOT = Path("results/sprt")
"""Where each A/B test gets its own default folder, ``NEW-vs-OLD`` (``-2``, ``-3``...)."""


def default_output(config: SprtConfig, root: Path = DEFAULT_ROOT) -> Path:
    """The test's own folder under ``root``: ``NEW-vs-OLD`` when it is new or holds this
    very test (a rerun resumes), else the first ``NEW-vs-OLD-N`` that does, so a second
    A/B test of the same bots with other settings never needs ``--out``."""
    new, old = load_specs(config)
    mine = config.identity(new.name, old.name)
    base = f"{new.name}-vs-{old.name}"  # manifest names: [A-Za-z0-9._-] only
    n = 1
    while True:
        folder = (root / (base if n == 1 else f"{base}-{n}")).resolve()
        if not (folder / STORE_NAME).exists():
            return folder
        store = SprtStore(folder / STORE_NAME)
        try:
            stored = store.get_meta("identity")
        finally:
            store.close()
        if stored is None or json.loads(stored) == mine:
            return folder
        n += 1


def open_store(config: SprtConfig, new: str, old: str) -> SprtStore:
    store = SprtStore(config.output / STORE_NAME)
    mine = config.identity(new, old)
    stored = store.get_meta("identity")
    if stored is not None and json.loads(stored) != mine:
        before = json.loads(stored)
        changed = [k for k in mine if before.get(k) != mine[k]]
        store.close()
        lines = [f"{config.output} already holds another SPRT (changed: {', '.join(changed)}):"]
        lines += [f"  {k}: stored {before.get(k)!r}, now {mine[k]!r}" for k in changed]
        lines.append(
            "Use another output folder (--out), or restore the old settings to resume that test."
        )
        raise SprtError("\n".join(lines))
    store.set_meta("identity", json.dumps(mine, sort_keys=True))
    return store


def build_both(new: BotSpec, old: BotSpec, config: SprtConfig) -> tuple[Built, Built]:
    """Build NEW and OLD (the referee's build: a read-only built copy of each, which is
    what plays). The built copies keep NEW's and OLD's names."""
    level, toolchains = config.play.sandbox, config.play.toolchains
    return (
        build_bot(new, level, toolchains=toolchains),
        build_bot(old, level, toolchains=toolchains),
    )


def check_versions(store: SprtStore, versions: dict[str, str]) -> list[str]:
    """Warn (not refuse: a rebuild may change a binary) when a bot's files changed since
    the stored games were played; remember the versions now playing."""
    stored = store.get_meta("versions")
    warnings = []
    if stored is not None:
        before = json.loads(stored)
        for role in ("new", "old"):
            if before.get(role) != versions[role]:
                warnings.append(
                    f"{role.upper()}'s files changed since the stored games were played "
                    f"(version {before.get(role)} -> {versions[role]}): this test now mixes "
                    "two versions; to test the changed bot on its own, use a new --out."
                )
    store.set_meta("versions", json.dumps(versions, sort_keys=True))
    return warnings


def next_legs(
    legs: dict[tuple[int, int], float], max_pairs: int, batch_pairs: int
) -> list[tuple[int, int]]:
    """The missing (pair, leg)s of the first ``batch_pairs`` unfinished pairs."""
    wanted: list[tuple[int, int]] = []
    pairs = 0
    for pair in range(max_pairs):
        missing = [(pair, g) for g in (0, 1) if (pair, g) not in legs]
        if missing:
            wanted.extend(missing)
            pairs += 1
            if pairs == batch_pairs:
                break
    return wanted


def run_sprt(
    config: SprtConfig,
    *,
    player: GamePlayer | None = None,
    on_progress: Callable[[SprtStatus], None] | None = None,
    on_start: Callable[[BotSpec, BotSpec], None] | None = None,
) -> SprtStatus:
    """Play pairs until a bound is crossed or ``max_pairs`` pairs are done.

    ``player`` is the seam for tests; by default the tournament's workers play.
    KeyboardInterrupt propagates after the workers are stopped; finished games are
    already stored.
    """
    new, old = load_specs(config)
    store = open_store(config, new.name, old.name)
    aborted = False
    try:
        legs = store.legs()
        status = SprtStatus(config.bounds, new.name, old.name)
        status.update(legs)
        status.faults = store.fault_counts()
        status.games_before = status.games
        if on_progress:
            on_progress(status)
        batch = worker_count(config.workers)
        prepared = False
        while status.verdict is Verdict.CONTINUE:
            todo = next_legs(legs, config.max_pairs, batch)
            if not todo:
                status.stopped = "max_pairs"
                break
            if not prepared:
                if on_start:
                    on_start(new, old)
                built_new, built_old = build_both(new, old, config)
                versions = {"new": built_new.version, "old": built_old.version}
                status.warnings += check_versions(store, versions)
                prepared = True
            if player is None:
                try:
                    config.output.joinpath("logs").mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise SprtError(f"{config.output}: cannot write the logs ({exc})") from None
                player = TournamentPlayer(
                    built_new,
                    built_old,
                    settings=config.play,
                    persistent=config.persistent,
                    workers=worker_count(config.workers),
                    log_dir=config.output / "logs",
                )
            aborted = True
            for result in player.play([config.leg(p, g) for p, g in todo]):
                store.add(result)
                legs[result.pair, result.leg] = result.new_points
                for item in filter(None, result.faults.split(",")):
                    status.faults[item] = status.faults.get(item, 0) + 1
                status.update(legs)
                if on_progress:
                    on_progress(status)
            aborted = False
        return status
    finally:
        try:
            if player is not None:
                player.close(abort=aborted)
        finally:
            store.close()
