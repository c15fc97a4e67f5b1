"""The report's one scan of every seat gives what the store's own queries give."""

from __future__ import annotations

import random
from pathlib import Path

from arena.bench.realgames import play_pool
from arena.bench.report import GrowingStore
from arena.report import load_results
from arena.report.data import LOSSES_KEPT
from arena.store.tournament import STORE_NAME, Store
from tests.report.helpers import game, make_store


def _rated_the_old_way(store: Store, labels: dict[int, str]) -> str:
    from arena.ratings import GameTable

    rows = [(i, s, b, r) for i, s, b, r, _ in (row for c in store.outcome_seats() for row in c)]
    gi, seat, bot, rank = zip(*rows, strict=True)
    return GameTable.from_seats(gi, seat, [labels[b] for b in bot], rank).digest()


def test_worst_losses_and_ratings_input_equal_the_store_s_queries(tmp_path: Path) -> None:
    """Ties of margin everywhere (scores 0-20), self-play, 2 and 4 players."""
    rng = random.Random(3)
    bots = ["a", "b", "c", "d", "e", "f"]
    games = []
    for index in range(600):
        players = rng.sample(bots, rng.choice((2, 4)))
        if index % 50 == 0:
            players[1] = players[0]  # a bot in two seats
        totals = [rng.randrange(0, 20) for _ in players]
        ranks = [1 + sum(o > t for o in totals) for t in totals]
        games.append(game(index, *zip(players, totals, ranks, strict=True)))
    make_store(tmp_path, games)
    results = load_results(tmp_path)
    with Store(tmp_path / STORE_NAME, readonly=True) as store:
        assert results.worst_losses == store.worst_losses(keep=LOSSES_KEPT)
        labels = {b.bot_id: b.label for b in store.bots()}
        assert results.rated.digest() == _rated_the_old_way(store, labels)
        assert sorted(results.pair_totals.itertuples(index=False, name=None)) == sorted(
            store.pair_totals()
        )
        for bot in bots:
            assert results.score_counts[bot].tolist() == [
                list(row) for row in store.score_counts(bot)
            ]
    assert len(results.worst_losses) == LOSSES_KEPT * len(bots)


def test_worst_losses_of_a_bench_store_equal_the_store_s_query(tmp_path: Path) -> None:
    GrowingStore(tmp_path, play_pool(30), 8, frames=True, base=100).grow(250)
    results = load_results(tmp_path)
    with Store(tmp_path / STORE_NAME, readonly=True) as store:
        assert results.worst_losses == store.worst_losses(keep=LOSSES_KEPT)
        assert results.worst_losses
        assert sorted(results.pair_totals.itertuples(index=False, name=None)) == sorted(
            store.pair_totals()
        )
