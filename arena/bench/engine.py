"""`arena bench engine`: random playouts through the public ``Game`` API.

Each playout lists every legal move, picks one uniformly with a seeded RNG and
applies it until the game ends: the same object interface that bots use.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass

from arena.engine import Game, Variant


@dataclass(frozen=True)
class PlayoutResult:
    players: int
    variant: Variant
    games_per_s: float
    moves_per_s: float
    moves_per_game: float


def playouts(players: int, variant: Variant, games: int, seed: int) -> tuple[float, int]:
    """Play ``games`` random games; return (seconds, total moves)."""
    rng = random.Random(seed)
    choice = rng.choice
    moves = 0
    start = time.perf_counter()
    for i in range(games):
        game = Game.new(players=players, variant=variant, seed=seed * 1_000_003 + i)
        legal_moves, apply, is_over = game.legal_moves, game.apply, game.is_over
        while not is_over():
            apply(choice(legal_moves()))
            moves += 1
    return time.perf_counter() - start, moves


def bench_engine(games: int = 1000, repeats: int = 5, seed: int = 0) -> list[PlayoutResult]:
    """Median-of-``repeats`` playout speed for 2-4 players and both variants."""
    results = []
    for variant in Variant:
        for players in (2, 3, 4):
            runs = [playouts(players, variant, games, seed + r) for r in range(repeats)]
            secs = statistics.median(s for s, _ in runs)
            moves = statistics.median(m for _, m in runs)
            results.append(
                PlayoutResult(
                    players=players,
                    variant=variant,
                    games_per_s=games / secs,
                    moves_per_s=moves / secs,
                    moves_per_game=moves / games,
                )
            )
    return results
