"""Property tests: random games, checked move by move against RULES.md.

Each game is played by a random policy (seeded) on top of the engine's seeded
deals, and every position is compared with an independent reference model
(``reference.py``) that re-derives legal moves, tile movements, scores, first
players, deals' drawability and the end of the game from RULES.md.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.engine import (
    FLOOR,
    Decision,
    Game,
    IllegalMove,
    Move,
    Place,
)

from .helpers import assert_conserved, floor_policy, play_out, random_policy, snapshot
from .reference import RefGame, compare

FAST = settings(max_examples=60, deadline=None)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
players_st = st.sampled_from([2, 3, 4])
variants = st.sampled_from(["coloured", "gray"])


def differential(
    players: int,
    variant: str,
    seed: int,
    move_seed: int,
    round_limit: int = 100,
    floor_bias: float = 0.0,
) -> tuple[Game, RefGame, int]:
    """Play one random game on engine and reference side by side; return both and the length."""
    rng = random.Random(move_seed)
    game = Game.new(players=players, variant=variant, seed=seed, round_limit=round_limit)
    ref = RefGame(players, variant, round_limit)
    ref.deal([list(f) for f in game.rounds[0].factories])
    compare(game, ref)
    assert_conserved(game)
    n = 0
    while not game.is_over():
        assert n < 3000, "game did not end"
        legal = game.legal_moves()
        assert legal, "no legal move while the game lasts"
        assert len(legal) == len(set(legal)), f"duplicate moves: {legal}"
        expected = ref.legal_moves()
        if game.decision is Decision.PLACE:
            assert legal == expected, "gray-wall columns (in column order)"
        else:
            assert set(legal) == set(expected)
            assert any(isinstance(m, Move) and m.line == FLOOR for m in legal)
        floors = [m for m in legal if isinstance(m, Move) and m.line == FLOOR]
        if floor_bias and floors and rng.random() < floor_bias:
            move = rng.choice(floors)
        else:
            move = rng.choice(legal)
        round_before = game.round
        game.apply(move)
        ref.apply(move)
        n += 1
        if ref.phase == "deal":
            assert game.round == round_before + 1, "the engine did not start the next round"
            ref.deal([list(f) for f in game.rounds[-1].factories])
        compare(game, ref)
        assert_conserved(game)
        assert all(s >= 0 for s in game.scores())
    assert game.end_reason is not None
    assert game.end_reason.value == ref.end_reason
    assert game.scores() == ref.final_scores()
    assert game.ranks() == ref.ranks()
    assert [log.scores for log in game.rounds] == ref.round_scores
    assert [log.first_player for log in game.rounds] == ref.round_firsts
    bd = game.breakdowns()
    for b, rb in zip(bd, ref.boards, strict=True):
        assert (b.rounds, b.rows, b.columns, b.colours) == (rb.score, *rb.bonus())
        assert b.total == b.rounds + b.rows + b.columns + b.colours
    assert game.legal_moves() == []
    return game, ref, n


@FAST
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds)
def test_random_games_follow_the_rules(
    players: int, variant: str, seed: int, move_seed: int
) -> None:
    differential(players, variant, seed, move_seed)


@settings(max_examples=30, deadline=None)
@given(
    players=players_st,
    variant=variants,
    seed=seeds,
    move_seed=seeds,
    round_limit=st.integers(min_value=1, max_value=6),
    floor_bias=st.sampled_from([0.0, 0.5, 0.9, 1.0]),
)
def test_floor_heavy_games_and_round_limits(
    players: int, variant: str, seed: int, move_seed: int, round_limit: int, floor_bias: float
) -> None:
    """Floor-heavy play stresses floor overflow, the lid and refills; short limits end games."""
    game, _, _ = differential(players, variant, seed, move_seed, round_limit, floor_bias)
    assert game.round <= round_limit
    if game.end_reason is not None and game.end_reason.value == "round_limit":
        assert game.round == round_limit
        assert not any(b.full_rows() for b in game.boards)


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_only_floor_dumping_hits_the_round_limit(players: int, variant: str) -> None:
    """RULES.md H5: bots that only dump tiles on the floor never end by a row."""
    game = Game.new(players=players, variant=variant, seed=players, round_limit=12)
    play_out(game, floor_policy)
    assert game.end_reason is not None and game.end_reason.value == "round_limit"
    assert game.round == 12
    assert game.scores() == [0] * players
    assert_conserved(game)


@FAST
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds, data=st.data())
def test_illegal_moves_leave_the_game_unchanged(
    players: int, variant: str, seed: int, move_seed: int, data: st.DataObject
) -> None:
    game = Game.new(players=players, variant=variant, seed=seed)
    rng = random.Random(move_seed)
    steps = data.draw(st.integers(min_value=0, max_value=60))
    for _ in range(steps):
        if game.is_over():
            break
        game.apply(rng.choice(game.legal_moves()))
    legal = set(game.legal_moves())
    candidates: list[Move | Place] = [
        Move(s, c, line) for s in [*range(-2, 10)] for c in range(-1, 6) for line in range(-2, 6)
    ] + [Place(col) for col in range(-1, 6)]
    illegal = [m for m in candidates if m not in legal]
    picks = data.draw(st.lists(st.sampled_from(illegal), min_size=1, max_size=8))
    before = snapshot(game)
    for move in picks:
        with pytest.raises(IllegalMove):
            game.apply(move)
        assert snapshot(game) == before


@FAST
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds)
def test_copy_is_independent_and_continues_the_same_deals(
    players: int, variant: str, seed: int, move_seed: int
) -> None:
    game = Game.new(players=players, variant=variant, seed=seed)
    rng = random.Random(move_seed)
    for _ in range(rng.randrange(0, 40)):
        if game.is_over():
            break
        game.apply(rng.choice(game.legal_moves()))
    twin = game.copy()
    before = snapshot(game)
    assert snapshot(twin) == before
    moves_rng = random.Random(move_seed + 1)
    n = 0
    while not twin.is_over() and n < 40:
        twin.apply(moves_rng.choice(twin.legal_moves()))
        n += 1
    assert snapshot(game) == before, "playing on a copy changed the original"
    # Same moves on the original: same deals (the copy continues the same RNG).
    moves_rng = random.Random(move_seed + 1)
    for _ in range(n):
        game.apply(moves_rng.choice(game.legal_moves()))
    assert snapshot(game) == snapshot(twin)


def test_two_player_random_games_last_about_70_moves() -> None:
    """RULES.md: a uniformly random 2-player game lasts about 70 moves; <= 20 tiles per round."""
    lengths = []
    for seed in range(200):
        game = Game.new(players=2, seed=seed)
        lengths.append(play_out(game, random_policy(random.Random(10_000 + seed))))
        for log in game.rounds:
            assert len(log.factories) == 5
            dealt = sum(sum(f) for f in log.factories)
            # Partial fills never happen with 2 players: every round deals exactly 20.
            assert dealt == 20
            assert all(sum(f) == 4 for f in log.factories)
    mean = sum(lengths) / len(lengths)
    assert 60 <= mean <= 80, mean


def test_random_rounds_deal_from_the_bag_before_the_lid() -> None:
    """Across many RNG deals, the lid is poured only when the bag is empty."""
    seen_pour = Counter[str]()
    for seed in range(60):
        game = Game.new(players=4, seed=seed)
        rng = random.Random(seed)
        while not game.is_over():
            bag, rnd = list(game.bag), game.round
            game.apply(rng.choice(game.legal_moves()))
            if game.round != rnd and not game.is_over():
                deal = game.rounds[-1].factories
                dealt = [sum(f[c] for f in deal) for c in range(5)]
                # lid at deal time = lid before + discards of the tiling; unknown here,
                # but the bag before dealing is unchanged by the round's play.
                if sum(bag) >= sum(dealt):
                    assert all(dealt[c] <= bag[c] for c in range(5)), (bag, dealt)
                    seen_pour["no pour"] += 1
                else:
                    assert all(dealt[c] >= bag[c] for c in range(5)), (bag, dealt)
                    assert sum(game.lid) == 0, "the lid was poured but not emptied"
                    seen_pour["pour"] += 1
    assert seen_pour["pour"] > 0 and seen_pour["no pour"] > 0
