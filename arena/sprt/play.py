"""The one place the SPRT touches the tournament machinery: play legs, get results.

:class:`TournamentPlayer` turns legs into the tournament's :class:`GameJob` and runs
them on its executors (the same worker processes, persistent bots, sandbox and
referee as ``arena tournament``). Tests substitute any object with the same two
methods (:class:`GamePlayer`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from arena.play.executors import Executor, InlineExecutor, LocalPoolExecutor
from arena.play.job import GameJob, GameResult, ScheduledGame
from arena.referee.manifest import Built
from arena.referee.settings import PlaySettings
from arena.store.sprt import LegResult


@dataclass(frozen=True)
class Leg:
    """One game of a pair: leg 0 seats NEW first, leg 1 seats OLD first, same deal."""

    pair: int
    leg: int
    variant: str
    deal_seed: int

    @property
    def game_id(self) -> str:
        return f"sprt-p{self.pair}-{'ab'[self.leg]}"


class GamePlayer(Protocol):
    def play(self, legs: Sequence[Leg]) -> Iterator[LegResult]:
        """Yield each leg's result as soon as it is finished, in any order."""
        ...

    def close(self, abort: bool = False) -> None: ...


def new_points(result: GameResult, new_name: str) -> float:
    """1 for a NEW win, 0.5 for a shared first place, 0 for a loss (forfeits rank last)."""
    mine = next(s for s in result.seats if s.bot == new_name)
    others = [s for s in result.seats if s.bot != new_name]
    best_other = min(s.rank for s in others)
    if mine.rank < best_other:
        return 1.0
    return 0.5 if mine.rank == best_other else 0.0


def leg_result(leg: Leg, result: GameResult, new_name: str) -> LegResult:
    by_bot = {s.bot: s for s in result.seats}
    old = next(s for s in result.seats if s.bot != new_name)
    faults = ",".join(
        sorted({f"{'new' if f.bot == new_name else 'old'}:{f.kind}" for f in result.faults})
    )
    return LegResult(
        pair=leg.pair,
        leg=leg.leg,
        game_id=leg.game_id,
        variant=leg.variant,
        deal_seed=leg.deal_seed,
        new_points=new_points(result, new_name),
        new_score=by_bot[new_name].score,
        old_score=old.score,
        end_reason=result.end_reason,
        faults=faults,
        record_json=result.record_json,
    )


class TournamentPlayer:
    """Plays legs with the tournament's workers (a process pool, or inline for one)."""

    def __init__(
        self,
        new: Built,
        old: Built,
        *,
        settings: PlaySettings,
        persistent: bool,
        workers: int,
        log_dir: Path,
    ) -> None:
        self.new, self.old = new, old
        self.new_name = new.spec.name
        self.settings = settings
        self.persistent = persistent
        self.log_dir = log_dir
        self.executor: Executor = (
            InlineExecutor()
            if workers <= 1
            else LocalPoolExecutor(workers, one_core=settings.pins_core)
        )

    def job(self, leg: Leg) -> GameJob:
        seats = (self.new, self.old) if leg.leg == 0 else (self.old, self.new)
        game = ScheduledGame(
            game_index=2 * leg.pair + leg.leg,
            game_id=leg.game_id,
            n_players=2,
            variant=leg.variant,
            seed_index=leg.pair,
            deal_seed=leg.deal_seed,
            rotation=leg.leg,
            bots=tuple(s.spec.name for s in seats),
        )
        return GameJob(
            game=game,
            bots=seats,
            settings=self.settings,
            persistent=self.persistent,
            log_dir=self.log_dir,
            replay_frames=False,  # the SPRT ledger keeps records, no replay pages
        )

    def play(self, legs: Sequence[Leg]) -> Iterator[LegResult]:
        by_index = {2 * leg.pair + leg.leg: leg for leg in legs}
        for leg in legs:
            self.executor.submit(self.job(leg))
        for _ in legs:
            result = self.executor.next_result()
            yield leg_result(by_index[result.game_index], result, self.new_name)

    def close(self, abort: bool = False) -> None:
        self.executor.close(abort=abort)
