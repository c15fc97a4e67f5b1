"""Tiny synthetic tournament stores for the report and ratings tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.play.job import FaultRow, GameResult, ScheduledGame, SeatRow
from arena.store.tournament import STORE_NAME, Store


@dataclass(frozen=True)
class Seat:
    """One seat of a synthetic game (seat number = position in the game's list)."""

    bot: str
    score: int
    rank: int
    forfeit: bool = False
    fault: str | None = None
    decisions: int = 10
    think_mean_ms: float = 1.0
    think_p95_ms: float = 2.0
    think_max_ms: float = 3.0
    full_rows: int = 0
    cpu_mean_ms: float | None = None


@dataclass(frozen=True)
class Game:
    """A synthetic game: its schedule slot and (if ``finished``) its result."""

    index: int
    seats: tuple[Seat, ...]
    variant: str = "coloured"
    rotation: int = 0
    seed_index: int = 0
    faults: tuple[FaultRow, ...] = field(default=())
    finished: bool = True
    duration_s: float = 1.5
    rounds: int = 5


def game(index: int, *seats: tuple[str, int, int] | Seat, **kw: object) -> Game:
    """``game(0, ("a", 40, 1), ("b", 30, 2))``: bot, score, rank per seat."""
    built = tuple(s if isinstance(s, Seat) else Seat(*s) for s in seats)
    return Game(index, built, **kw)  # type: ignore[arg-type]


def scheduled(g: Game) -> ScheduledGame:
    return ScheduledGame(
        game_index=g.index,
        game_id=f"g{g.index:05d}",
        n_players=len(g.seats),
        variant=g.variant,
        seed_index=g.seed_index,
        deal_seed=1000 + g.index,
        rotation=g.rotation,
        bots=tuple(s.bot for s in g.seats),
    )


def result(g: Game) -> GameResult:
    return GameResult(
        game_index=g.index,
        duration_s=g.duration_s,
        end_reason="normal",
        rounds=g.rounds,
        worker="w0",
        record_json=b"{}",
        seats=tuple(
            SeatRow(
                seat=i,
                bot=s.bot,
                score=s.score,
                round_score=s.score,
                bonus_rows=0,
                bonus_columns=0,
                bonus_colours=0,
                rank=s.rank,
                full_rows=s.full_rows,
                forfeit=s.forfeit,
                fault=s.fault,
                decisions=s.decisions,
                think_mean_ms=s.think_mean_ms,
                think_p95_ms=s.think_p95_ms,
                think_max_ms=s.think_max_ms,
                cpu_mean_ms=s.cpu_mean_ms,
                cpu_max_ms=s.cpu_mean_ms,
            )
            for i, s in enumerate(g.seats)
        ),
        faults=g.faults,
    )


def make_store(
    outdir: Path,
    games: Sequence[Game],
    *,
    finish_order: Iterable[int] | None = None,
    config: dict[str, object] | None = None,
) -> Path:
    """Write a store into ``outdir``: the whole schedule, then the finished games in
    ``finish_order`` (game indices; default: schedule order)."""
    by_index = {g.index: g for g in games}
    with Store(outdir / STORE_NAME) as store:
        store.save_schedule([scheduled(g) for g in sorted(games, key=lambda g: g.index)])
        if config is not None:
            store.put_meta(config=json.dumps(config))
        order = list(finish_order) if finish_order is not None else sorted(by_index)
        for index in order:
            if by_index[index].finished:
                store.add_result(result(by_index[index]))
    return outdir
