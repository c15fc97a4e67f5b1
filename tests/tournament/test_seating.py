"""Seat-balanced game sets: proofs of balance, and that rotations are not enough."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, permutations

import pytest

from arena.tournament.seating import (
    balanced,
    followers,
    is_follower_balanced,
    is_seat_balanced,
    rotations,
)


@pytest.mark.parametrize(("k", "size"), [(2, 2), (3, 6), (4, 12)])
def test_balanced_sets_are_balanced_and_as_small_as_possible(k: int, size: int) -> None:
    sets = balanced(k)
    assert len(sets) == size == len(set(sets))
    assert all(sorted(s) == list(range(k)) for s in sets)
    assert is_seat_balanced(sets, k)
    assert is_follower_balanced(sets, k)
    # every bot in every seat size/k times, every ordered pair follows size/(k-1) times
    seats = Counter((bot, seat) for s in sets for seat, bot in enumerate(s))
    assert set(seats.values()) == {size // k}
    assert set(followers(sets, k).values()) == {size // (k - 1)}


@pytest.mark.parametrize("k", [3, 4])
def test_no_smaller_set_is_balanced(k: int) -> None:
    """Seat balance needs a multiple of k seatings; each seating makes k (leader, follower)
    pairs over k(k-1) ordered pairs, so follower balance needs size * k to be a multiple
    of k(k-1). Below the chosen size no multiple of k passes both (checked exhaustively
    where that is cheap)."""
    orders = list(permutations(range(k)))
    for size in range(k, len(balanced(k)), k):
        assert (size * k) % (k * (k - 1)) != 0, size
        if size <= 4:
            assert not any(
                is_seat_balanced(c, k) and is_follower_balanced(c, k)
                for c in combinations(orders, size)
            ), size


@pytest.mark.parametrize("k", [3, 4])
def test_rotations_balance_seats_but_not_who_follows_whom(k: int) -> None:
    sets = rotations(k)
    assert is_seat_balanced(sets, k)
    assert not is_follower_balanced(sets, k)
    # in every rotation the same bot sits right after the same other bot
    assert set(followers(sets, k)) == {(i, (i + 1) % k) for i in range(k)}
