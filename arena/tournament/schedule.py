"""The round-robin schedule: deterministic, seat-balanced, with shared deals.

For each player count k, every combination of k bots plays every deal seed under
every seat rotation: each bot gets each seat equally often, with the same deals
(the deal is what an opening book is in chess). Deal seeds depend only on the
master seed, the player count, the variant and the seed index, so every
combination of a given size meets the same deals.

>>> games = build_schedule(["a", "b", "c"], players=[2], variants=["coloured"], seeds=1,
...                        master_seed=1)
>>> [g.bots for g in games]
[('a', 'b'), ('b', 'a'), ('a', 'c'), ('c', 'a'), ('b', 'c'), ('c', 'b')]
>>> len({g.deal_seed for g in games})
1
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import combinations

from arena.tournament.store import ScheduledGame


def deal_seed(master_seed: int, n_players: int, variant: str, seed_index: int) -> int:
    digest = hashlib.sha256(f"{master_seed}:{n_players}:{variant}:{seed_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def build_schedule(
    bots: Sequence[str],
    players: Sequence[int],
    variants: Sequence[str],
    seeds: int,
    master_seed: int,
) -> list[ScheduledGame]:
    """All games in schedule order: deal seeds outermost, so a partial run is balanced."""
    games: list[ScheduledGame] = []
    for seed_index in range(seeds):
        for k in sorted(players):
            for variant in variants:
                seed = deal_seed(master_seed, k, variant, seed_index)
                for combo in combinations(bots, k):
                    for rotation in range(k):
                        seating = tuple(combo[rotation:] + combo[:rotation])
                        game_id = f"{k}p-{variant}-d{seed_index}-{'+'.join(combo)}-r{rotation}"
                        games.append(
                            ScheduledGame(
                                len(games), game_id, k, variant, seed_index, seed, rotation, seating
                            )
                        )
    return games


def merge_schedule(
    stored: Sequence[ScheduledGame], wanted: Sequence[ScheduledGame]
) -> tuple[list[ScheduledGame], list[ScheduledGame]]:
    """Keep stored games (and their indices), append the wanted ones that are new.

    Returns (full schedule, new games). Stored games not in ``wanted`` are kept:
    results are never thrown away.
    """
    known = {g.game_id for g in stored}
    next_index = max((g.game_index for g in stored), default=-1) + 1
    new: list[ScheduledGame] = []
    for g in wanted:
        if g.game_id not in known:
            new.append(
                ScheduledGame(
                    next_index + len(new),
                    g.game_id,
                    g.n_players,
                    g.variant,
                    g.seed_index,
                    g.deal_seed,
                    g.rotation,
                    g.bots,
                )
            )
    return [*stored, *new], new
