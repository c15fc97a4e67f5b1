"""Property tests on random small tournaments, through a real store (tables aggregated in SQL)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ratings import RatedGame, rate_games
from arena.report.data import Results, load_results
from arena.report.headtohead import head_to_head_matrix, head_to_head_pairs
from arena.report.seating import seat_advantage
from arena.report.stats import bot_stats

from .helpers import Seat, game, make_store

NAMES = ["a", "b", "c", "d", "e"]


def competition_ranks(scores: list[int]) -> list[int]:
    return [1 + sum(other > s for other in scores) for s in scores]


@st.composite
def tournaments(draw: st.DrawFn) -> list[tuple[list[str], list[int]]]:
    """Games as (bots by seat, scores by seat); few distinct scores, so ties happen."""
    games = []
    for _ in range(draw(st.integers(1, 12))):
        n = draw(st.sampled_from([2, 3, 4]))
        bots = draw(st.permutations(NAMES))[:n]
        scores = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        games.append((list(bots), scores))
    return games


def results_of(games: list[tuple[list[str], list[int]]]) -> Results:
    """The games through a real store (the report aggregates them in SQL)."""
    with tempfile.TemporaryDirectory() as tmp:
        built = [
            game(
                i,
                *(
                    Seat(b, sc, r)
                    for b, sc, r in zip(bots, scores, competition_ranks(scores), strict=True)
                ),
            )
            for i, (bots, scores) in enumerate(games)
        ]
        return load_results(make_store(Path(tmp), built))


@settings(max_examples=40, deadline=None)
@given(tournaments())
def test_head_to_head_is_complementary(games: list[tuple[list[str], list[int]]]) -> None:
    pairs = head_to_head_pairs(results_of(games))
    by_pair = {(r["bot"], r["opponent"]): r for r in pairs.to_dict("records")}
    expected: dict[tuple[str, str], list[int]] = {}
    for bots, scores in games:
        ranks = competition_ranks(scores)
        for i, bot in enumerate(bots):
            for j, other in enumerate(bots):
                if i != j:
                    tally = expected.setdefault((bot, other), [0, 0, 0, 0])
                    tally[0] += 1
                    tally[1 + (0 if ranks[i] < ranks[j] else 1 if ranks[i] > ranks[j] else 2)] += 1
    assert {k: [r["games"], r["ahead"], r["behind"], r["ties"]] for k, r in by_pair.items()} == (
        expected
    )
    for (bot, opponent), row in by_pair.items():
        back = by_pair[(opponent, bot)]
        assert row["ahead"] == back["behind"] and row["ties"] == back["ties"]
        assert row["ahead"] + row["behind"] + row["ties"] == row["games"]
        assert row["score"] + back["score"] == 1.0
    matrix = head_to_head_matrix(pairs, NAMES)
    assert matrix.shape == (5, 5)


@settings(max_examples=40, deadline=None)
@given(tournaments())
def test_wins_add_up(games: list[tuple[list[str], list[int]]]) -> None:
    results = results_of(games)
    first_places = sum(competition_ranks(scores).count(1) for _, scores in games)
    stats = bot_stats(results, NAMES)
    assert stats["wins"].sum() == first_places
    assert stats["games"].sum() == sum(len(bots) for bots, _ in games)
    assert seat_advantage(results)["wins"].sum() == first_places
    assert (stats["mean_margin"].dropna() >= 0).all()  # no forfeits here
    for bot in NAMES:  # the SQL aggregates equal the plain definitions
        mine = [(scores[b.index(bot)], max(scores)) for b, scores in games if bot in b]
        assert stats.loc[bot, "games"] == len(mine)
        if mine:
            assert stats.loc[bot, "mean_score"] == sum(s for s, _ in mine) / len(mine)
            assert stats.loc[bot, "mean_margin"] == sum(t - s for s, t in mine) / len(mine)


@settings(max_examples=30, deadline=None)
@given(tournaments(), st.randoms(use_true_random=False))
def test_ratings_ignore_input_order(
    games: list[tuple[list[str], list[int]]], rnd: random.Random
) -> None:
    rated = [
        RatedGame(i, tuple(bots), tuple(competition_ranks(scores)))
        for i, (bots, scores) in enumerate(games)
    ]
    shuffled = list(rated)
    rnd.shuffle(shuffled)
    assert rate_games(shuffled) == rate_games(rated)
