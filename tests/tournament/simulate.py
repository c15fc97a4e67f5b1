"""Drive a scheduler against a real store without bots: results come from fixed
strengths, in a shuffled (but seeded) completion order, like parallel workers."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from arena.play.job import GameResult, ScheduledGame, SeatRow
from arena.store.tournament import Store
from arena.tournament.config import TournamentConfig
from arena.tournament.runner import make_scheduler, store_path
from arena.tournament.schedule import Entrant, Finished

Outcome = Callable[[ScheduledGame], tuple[int, ...]]
"""Ranks by seat for a scheduled game."""


def by_strength(strength: dict[str, float]) -> Outcome:
    def ranks(game: ScheduledGame) -> tuple[int, ...]:
        order = sorted(game.bots, key=lambda b: -strength[b])
        return tuple(order.index(b) + 1 for b in game.bots)

    return ranks


def result(game: ScheduledGame, ranks: tuple[int, ...]) -> GameResult:
    seats = tuple(
        SeatRow(i, bot, 50 - 10 * r, 50 - 10 * r, 0, 0, 0, r, 0, False, None, 5, 1.0, 1.0, 1.0)
        for i, (bot, r) in enumerate(zip(game.bots, ranks, strict=True))
    )
    return GameResult(game.game_index, 1.0, "normal", 5, "sim", b"{}", seats, ())


def config(tmp: Path, bots: list[str], **kw: object) -> TournamentConfig:
    return TournamentConfig(bots=[tmp / b for b in bots], output=tmp / "out", **kw)  # type: ignore[arg-type]


def simulate(
    cfg: TournamentConfig,
    outcome: Outcome,
    *,
    seed: int = 0,
    window: int = 6,
    stop_after: int | None = None,
) -> list[ScheduledGame]:
    """Run (or resume) the tournament of ``cfg`` in its output folder; stop (abandoning
    the games in flight) after ``stop_after`` results. Returns the stored schedule."""
    entrants = [Entrant(p.name, "v1") for p in cfg.bots]
    rng = random.Random(seed)
    with Store(store_path(cfg)) as store:
        scheduler = make_scheduler(cfg, store, entrants)
        leftover = list(store.unfinished())
        flight: list[ScheduledGame] = []
        results = 0
        while True:
            while len(flight) < window:
                if leftover:
                    flight.append(leftover.pop(0))
                    continue
                games = scheduler.next()
                if not games:
                    break
                store.schedule_games(games, scheduler.state())
                flight += games  # a set is submitted whole (the window may overshoot)
            if not flight:
                break
            if stop_after is not None and results >= stop_after:
                break
            game = flight.pop(rng.randrange(len(flight)))
            ranks = outcome(game)
            assert store.add_result(result(game, ranks))
            scheduler.finished(Finished(game.game_index, game.bots, ranks))
            results += 1
        return list(store.schedule())
