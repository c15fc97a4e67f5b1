"""Property tests on random small tournaments (tables only; no store, so they are quick)."""

from __future__ import annotations

import random

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ratings import RatedGame, rate_games
from arena.report.data import FAULT_COLUMNS, SEAT_COLUMNS
from arena.report.headtohead import head_to_head_matrix, head_to_head_pairs
from arena.report.seating import seat_advantage
from arena.report.stats import bot_stats

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


def seats_frame(games: list[tuple[list[str], list[int]]]) -> pd.DataFrame:
    rows = []
    for index, (bots, scores) in enumerate(games):
        for seat, (bot, score, rank) in enumerate(
            zip(bots, scores, competition_ranks(scores), strict=True)
        ):
            row: dict[str, object] = dict.fromkeys(SEAT_COLUMNS, 0)
            row |= {"forfeit": False, "fault": None}
            row |= {"game_index": index, "seat": seat, "bot": bot, "score": score}
            row |= {"rank": rank, "n_players": len(bots), "variant": "coloured"}
            rows.append(row)
    return pd.DataFrame(rows, columns=list(SEAT_COLUMNS))


@settings(max_examples=60, deadline=None)
@given(tournaments())
def test_head_to_head_is_complementary(games: list[tuple[list[str], list[int]]]) -> None:
    pairs = head_to_head_pairs(seats_frame(games))
    by_pair = {(r["bot"], r["opponent"]): r for r in pairs.to_dict("records")}
    for (bot, opponent), row in by_pair.items():
        back = by_pair[(opponent, bot)]
        assert row["ahead"] == back["behind"] and row["ties"] == back["ties"]
        assert row["ahead"] + row["behind"] + row["ties"] == row["games"]
        assert row["score"] + back["score"] == 1.0
    matrix = head_to_head_matrix(pairs, NAMES)
    assert matrix.shape == (5, 5)


@settings(max_examples=60, deadline=None)
@given(tournaments())
def test_wins_add_up(games: list[tuple[list[str], list[int]]]) -> None:
    seats = seats_frame(games)
    first_places = int((seats["rank"] == 1).sum())
    stats = bot_stats(seats, pd.DataFrame(columns=list(FAULT_COLUMNS)), NAMES)
    assert stats["wins"].sum() == first_places
    assert stats["games"].sum() == len(seats)
    assert seat_advantage(seats)["wins"].sum() == first_places
    assert (stats["mean_margin"].dropna() >= 0).all()  # no forfeits here


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
