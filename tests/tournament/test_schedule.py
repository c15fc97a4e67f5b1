"""Schedule fairness: every combination, every seat equally often, shared deals, determinism."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.tournament.schedule import build_schedule

bot_lists = st.integers(min_value=2, max_value=6).map(lambda n: [f"bot{i}" for i in range(n)])


@settings(max_examples=40, deadline=None)
@given(
    bots=bot_lists,
    players=st.sets(st.sampled_from([2, 3, 4]), min_size=1),
    variants=st.sets(st.sampled_from(["coloured", "gray"]), min_size=1),
    seeds=st.integers(1, 3),
    master=st.integers(0, 2**32),
)
def test_schedule_is_fair_and_deterministic(
    bots: list[str], players: set[int], variants: set[str], seeds: int, master: int
) -> None:
    ks = [k for k in players if k <= len(bots)]
    games = build_schedule(bots, ks, sorted(variants), seeds, master, "rotations")
    assert games == build_schedule(bots, ks, sorted(variants), seeds, master, "rotations")
    assert [g.game_index for g in games] == list(range(len(games)))
    assert len({g.game_id for g in games}) == len(games)
    for k in ks:
        of_k = [g for g in games if g.n_players == k]
        combos = Counter(frozenset(g.bots) for g in of_k)
        # Every combination of k bots, each playing k rotations of every seed and variant.
        assert set(combos) == {frozenset(c) for c in combinations(bots, k)}
        assert set(combos.values()) == {k * seeds * len(variants)}
        # Every bot sits in every seat equally often.
        seat_counts = Counter((bot, seat) for g in of_k for seat, bot in enumerate(g.bots))
        assert len(set(seat_counts.values())) == 1
        assert len(seat_counts) == len(bots) * k
        # All rotations and all combinations of one (variant, seed) share one deal.
        for variant in variants:
            for s in range(seeds):
                deals = {g.deal_seed for g in of_k if g.variant == variant and g.seed_index == s}
                assert len(deals) == 1
    # Different deals for different seed indices.
    assert len({g.deal_seed for g in games}) == len(ks) * len(variants) * seeds


def test_master_seed_changes_every_deal() -> None:
    a = build_schedule(["a", "b"], [2], ["coloured"], 3, master_seed=1)
    b = build_schedule(["a", "b"], [2], ["coloured"], 3, master_seed=2)
    assert not {g.deal_seed for g in a} & {g.deal_seed for g in b}
