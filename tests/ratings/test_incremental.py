"""Stored incremental ratings equal a from-scratch rating; the compact game table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena.ratings import (
    DEFAULT_PARAMS,
    GameTable,
    IncrementalRatings,
    RatedGame,
    StateError,
    TrueSkillParams,
    compute_ratings,
    rate_games,
    seatings_to_games,
)
from arena.ratings.incremental import HISTORY_POINTS

from .helpers import synthetic_games

GAMES = synthetic_games(300, 9, seed=4)
TABLE = GameTable.from_games(GAMES)


def scratch(games: list[RatedGame] | GameTable) -> IncrementalRatings:
    state = IncrementalRatings()
    state.apply(games)
    return state


def test_incremental_equals_from_scratch_bit_for_bit() -> None:
    whole = scratch(TABLE)
    state = IncrementalRatings()
    for start in range(0, len(GAMES), 37):  # in batches, stored and restored in between
        state.apply(GAMES[start : start + 37])
        state = IncrementalRatings.from_json(state.to_json())
    assert state.mu == whole.mu and state.sigma == whole.sigma
    assert state.fingerprint == whole.fingerprint == TABLE.fingerprint()
    assert state.history == whole.history
    assert state.to_json() == whole.to_json()


def test_ratings_match_the_trueskill_library() -> None:
    want = rate_games(GAMES)
    state = scratch(GAMES)
    for bot, rating in want.items():
        assert state.mu[bot] == pytest.approx(rating.mu, abs=1e-6)
        assert state.sigma[bot] == pytest.approx(rating.sigma, abs=1e-6)


def test_sync_resumes_or_starts_again() -> None:
    state = IncrementalRatings()
    assert state.sync(TABLE, through=int(TABLE.index[99])) is False  # nothing stored yet
    assert state.applied == 100
    stored = state.to_json()
    resumed = IncrementalRatings.from_json(stored)
    assert resumed.sync(TABLE) is True
    assert resumed.to_json() == scratch(TABLE).to_json()
    # A game before the stored position changed its result: start again, same as scratch.
    changed = [*GAMES]
    g = changed[50]
    changed[50] = RatedGame(g.game_index, g.bots, tuple(reversed(g.ranks)))
    again = IncrementalRatings.from_json(stored)
    assert again.sync(GameTable.from_games(changed)) is False
    assert again.to_json() == scratch(changed).to_json()
    # A game that finished late (a gap before the stored position filled in): same.
    late = IncrementalRatings()
    late.sync(GameTable.from_games(GAMES[:40] + GAMES[41:100]))
    assert late.sync(TABLE) is False
    assert late.to_json() == scratch(TABLE).to_json()


def test_rated_copy_leaves_the_state_alone() -> None:
    state = IncrementalRatings()
    state.sync(TABLE, through=int(TABLE.index[9]))
    before = state.to_json()
    copy = state.rated(TABLE)
    assert state.to_json() == before
    assert copy.applied == len(GAMES)


def test_games_out_of_schedule_order_are_refused() -> None:
    state = scratch(GAMES[:10])
    with pytest.raises(ValueError, match="not after"):
        state.apply(GAMES[5:6])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"format": "something else", "version": 1}',
        json.dumps({"format": "azul-arena/ratings-state", "version": 99}),
        scratch(GAMES[:5]).to_json().replace('"applied":5', '"applied":"x"'),
        scratch(GAMES[:5]).to_json().replace("[", "[-1e999,", 1),
    ],
)
def test_damaged_state_is_refused(text: str) -> None:
    with pytest.raises(StateError):
        IncrementalRatings.from_json(text)


def test_history_is_thinned_and_ends_at_the_final_ratings() -> None:
    games = synthetic_games(3 * HISTORY_POINTS + 11, 6, seed=2)
    state = scratch(games)
    rows = state.history_rows()
    assert HISTORY_POINTS // 2 <= len(rows) <= HISTORY_POINTS + 1
    numbers = [n for n, _, _ in rows]
    assert numbers == sorted(numbers) and numbers[-1] == len(games)
    assert all(n % state.stride == 0 for n in numbers[:-1])
    assert rows[-1][2] == state.conservative()
    # A checkpoint holds the ratings after exactly that many games.
    n, index, after = rows[len(rows) // 2]
    assert index == games[n - 1].game_index
    assert after == scratch(games[:n]).conservative()


def test_compute_ratings_continues_a_stored_state() -> None:
    stored = IncrementalRatings()
    stored.sync(TABLE, through=int(TABLE.index[149]))
    fresh = compute_ratings(TABLE, resamples=0)
    continued = compute_ratings(TABLE, resamples=0, state=stored)
    assert fresh.table.equals(continued.table)
    assert fresh.history.equals(continued.history)
    assert stored.applied == 150
    other = compute_ratings(TABLE, resamples=0, params=TrueSkillParams(beta=3.0), state=stored)
    assert not other.table.equals(fresh.table)  # a state of other parameters is not used
    assert other.state is not None and other.state.params.beta == 3.0
    assert fresh.state is not None and fresh.state.params == DEFAULT_PARAMS


def test_game_table_from_seats_matches_the_python_grouping() -> None:
    rows = [
        (g.game_index, seat, bot, rank)
        for g in GAMES[:60]
        for seat, (bot, rank) in enumerate(zip(g.bots, g.ranks, strict=True))
    ]
    rows += [(999, 0, "solo", 1), (1000, 0, "x", 1), (1000, 1, "x", 2), (1000, 2, "y", 1)]
    rows += [(1001, 0, "only", 1), (1001, 1, "only", 2)]  # one distinct bot: skipped
    rows.reverse()
    gi, seat, bot, rank = zip(*rows, strict=True)
    table = GameTable.from_seats(np.array(gi), np.array(seat), list(bot), np.array(rank))
    expected = GameTable.from_games(seatings_to_games(rows))
    assert table.fingerprint() == expected.fingerprint()
    assert list(table.index) == [g.game_index for g in seatings_to_games(rows)]
    assert scratch(table).to_json() == scratch(seatings_to_games(rows)).to_json()
    # Self-play keeps the lowest seat; places in rank order, ties flagged.
    last = table.take(table.index == 1000)
    assert [table.names[b] for b in last.bots[0, : last.sizes[0]]] == ["x", "y"]
    assert bool(last.ties[0, 0])


def test_fingerprint_is_a_set_digest() -> None:
    halves = GameTable.from_games(GAMES[:120]), GameTable.from_games(GAMES[120:])
    from arena.ratings.games import fingerprint_add

    assert fingerprint_add(halves[0].fingerprint(), halves[1]) == TABLE.fingerprint()
    assert GameTable.from_games(GAMES[:-1]).fingerprint() != TABLE.fingerprint()


def test_pure_python_path_agrees_with_the_compiled_one() -> None:
    """Without numba the state is rated by ``kernel.update_one``: same numbers."""
    python = IncrementalRatings()
    python._apply_python(TABLE)
    compiled = scratch(TABLE)
    assert python.applied == compiled.applied
    for bot in compiled.mu:
        assert python.mu[bot] == pytest.approx(compiled.mu[bot], abs=1e-9)
        assert python.sigma[bot] == pytest.approx(compiled.sigma[bot], abs=1e-9)
    assert [n for n, _, _ in python.history] == [n for n, _, _ in compiled.history]
