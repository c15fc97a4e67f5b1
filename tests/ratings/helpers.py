"""Synthetic finished games for the ratings tests."""

from __future__ import annotations

import random

from arena.ratings import RatedGame


def synthetic_games(n: int, n_bots: int, seed: int = 0, start: int = 0) -> list[RatedGame]:
    """2- and 4-player games (3-player every 7th) with skill-driven places and some ties,
    at schedule positions ``start``, ``start + 2``, ... (gaps, as in a real schedule)."""
    rng = random.Random(seed)
    bots = [f"bot{i:02d}" for i in range(n_bots)]
    skill = {b: rng.gauss(0, 1) for b in bots}
    out = []
    for i in range(n):
        k = 3 if i % 7 == 0 and n_bots >= 3 else rng.choice([2, 4] if n_bots >= 4 else [2])
        seated = rng.sample(bots, k)
        perf = {b: skill[b] + rng.gauss(0, 1.5) for b in seated}
        best = sorted(seated, key=lambda b: -perf[b])
        place = {b: best.index(b) + 1 for b in seated}
        if rng.random() < 0.08:  # a shared place
            place[best[1]] = place[best[0]]
        out.append(RatedGame(start + 2 * i, tuple(seated), tuple(place[b] for b in seated)))
    return out
