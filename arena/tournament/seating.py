"""Seatings of one game set: the same deal played under several seat orders.

In Azul the next player takes what you leave, so who sits right after whom matters, not
only who moves first. A set of seatings is *balanced* when every bot occupies every seat
equally often and follows every other bot equally often (turn order is cyclic: seat
``s + 1 mod k`` plays after seat ``s``).

* 2 players: both orders (2 seatings).
* 3 players: all 6 orders (2 cyclic orders x 3 rotations). 6 is the minimum: seat balance
  needs a multiple of 3, and each ordered pair follows in only one of the two cyclic orders.
* 4 players: 12 of the 24 orders - each of the 6 cyclic orders under 2 of its 4 rotations,
  chosen so every bot sits in every seat 3 times. Every ordered pair (a, b) is "b right
  after a" in exactly 2 cyclic orders, so it occurs 4 times. 12 is the minimum: seat
  balance needs a multiple of 4 and follower balance a multiple of 3.

``rotations`` (the cheaper option, k seatings) gives seat balance only: in every set the
same bot always sits right after the same other bot.
"""

from __future__ import annotations

import functools
from collections import Counter
from itertools import combinations, permutations, product
from typing import Literal

Seating = tuple[int, ...]
"""Positions in the bot combination, by seat: ``(2, 0, 1)`` seats the third bot first."""

SeatingMode = Literal["balanced", "rotations"]


def rotations(k: int) -> tuple[Seating, ...]:
    base = tuple(range(k))
    return tuple(base[r:] + base[:r] for r in range(k))


def _cyclic_orders(k: int) -> list[Seating]:
    return [(0, *rest) for rest in permutations(range(1, k))]


@functools.cache
def balanced(k: int) -> tuple[Seating, ...]:
    """The smallest balanced seating set for ``k`` players (rotations of the identity
    first, so a partial set still starts seat-balanced)."""
    if k <= 2:
        return rotations(k)
    per_order = 2 if k == 4 else k  # 3 players: every rotation of both cyclic orders
    orders = _cyclic_orders(k)
    choices = list(combinations(range(k), per_order))
    for choice in product(choices, repeat=len(orders)):
        seatings = [
            order[r:] + order[:r]
            for order, picked in zip(orders, choice, strict=True)
            for r in picked
        ]
        if is_seat_balanced(seatings, k) and is_follower_balanced(seatings, k):
            return tuple(seatings)
    raise AssertionError(f"no balanced seating set for {k} players")  # pragma: no cover


def seatings(k: int, mode: SeatingMode) -> tuple[Seating, ...]:
    return balanced(k) if mode == "balanced" else rotations(k)


def is_seat_balanced(seatings: list[Seating] | tuple[Seating, ...], k: int) -> bool:
    """Every position occupies every seat equally often."""
    counts = Counter((bot, seat) for seating in seatings for seat, bot in enumerate(seating))
    return len(counts) == k * k and len(set(counts.values())) == 1


def followers(seatings: list[Seating] | tuple[Seating, ...], k: int) -> Counter[tuple[int, int]]:
    """How often position ``b`` plays right after position ``a`` (cyclic turn order)."""
    return Counter((seating[s], seating[(s + 1) % k]) for seating in seatings for s in range(k))


def is_follower_balanced(seatings: list[Seating] | tuple[Seating, ...], k: int) -> bool:
    counts = followers(seatings, k)
    return len(counts) == k * (k - 1) and len(set(counts.values())) == 1
