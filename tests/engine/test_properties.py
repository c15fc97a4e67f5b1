"""Property tests: random games, checked move by move against RULES.md.

Each game is played by a random policy (seeded) on top of the engine's seeded
deals, and every position is compared with an independent reference model
(``reference.py``) that re-derives legal moves, tile movements, scores, first
players, deals' drawability and the end of the game from RULES.md.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.engine import (
    FLOOR,
    MARKER,
    Board,
    Decision,
    Game,
    IllegalMove,
    Move,
    Place,
)
from arena.engine.tables import factory_code

from .helpers import (
    _sync_table,
    assert_conserved,
    floor_policy,
    play_out,
    random_policy,
    snapshot,
)
from .reference import RefBoard, RefGame, compare, from_position

FAST = settings(max_examples=100, deadline=None)
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
        move: Move | Place = rng.choice(legal)
        if floor_bias and floors and rng.random() < floor_bias:
            move = rng.choice(floors)
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


# =====================================================================  random positions


def random_position(rng: random.Random) -> dict[str, Any]:
    """A consistent mid-round position (100 tiles accounted for), built from RULES.md.

    Walls (no complete row; gray: each colour at most once per row and column),
    pattern lines compatible with their wall row, floors (possibly full), the
    marker in the centre, on a floor, or taken by a player whose floor was full,
    a table with at least one tile, and the rest split between bag and lid. Dense
    walls leave few tiles in circulation: partial fills and "no tiles" endings.
    """
    players = rng.choice([2, 3, 4])
    variant = rng.choice(["coloured", "gray"])
    pool = [20] * 5
    reserved = rng.randrange(5)  # one tile kept for the table
    pool[reserved] -= 1

    def take(colour: int) -> bool:
        if pool[colour]:
            pool[colour] -= 1
            return True
        return False

    density = rng.choice([0.0, 0.3, 0.6, 0.9, 1.0])
    boards = []
    for _ in range(players):
        wall: list[list[int | None]] = [[None] * 5 for _ in range(5)]
        for r in range(5):
            keep_empty = rng.randrange(5)
            for c in range(5):
                if c == keep_empty or rng.random() >= density:
                    continue
                if variant == "coloured":
                    colour = (c - r) % 5
                else:
                    allowed = [
                        k
                        for k in range(5)
                        if k not in wall[r] and all(wall[rr][c] != k for rr in range(5))
                    ]
                    if not allowed:
                        continue
                    colour = rng.choice(allowed)
                if take(colour):
                    wall[r][c] = colour
        line_colour: list[int | None] = [None] * 5
        line_count = [0] * 5
        for r in range(5):
            if variant == "coloured":
                ok = [k for k in range(5) if wall[r][(r + k) % 5] is None]
            else:
                ok = [k for k in range(5) if k not in wall[r]]
            ok = [k for k in ok if pool[k]]
            if not ok or rng.random() < 0.4:
                continue
            colour = rng.choice(ok)
            count = min(rng.randint(1, r + 1), pool[colour])
            pool[colour] -= count
            line_colour[r], line_count[r] = colour, count
        floor: list[int] = []
        for _ in range(rng.choice([0, 0, 1, 2, 4, 6, 7, 7])):
            colour = rng.randrange(5)
            if take(colour):
                floor.append(colour)
        boards.append(RefBoard(line_colour, line_count, wall, floor, rng.randint(0, 80)))
    n_factories = {2: 5, 3: 7, 4: 9}[players]
    factories = [[0] * 5 for _ in range(n_factories)]
    for f in factories:
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 4)):
                colour = rng.randrange(5)
                if take(colour):
                    f[colour] += 1
    centre = [0] * 5
    for _ in range(rng.randint(0, 10)):
        colour = rng.randrange(5)
        if take(colour):
            centre[colour] += 1
    if sum(centre) + sum(map(sum, factories)) == 0:
        factories[rng.randrange(n_factories)][reserved] = 1
    else:
        pool[reserved] += 1
    if rng.random() < 0.3:
        bag, lid = [0] * 5, list(pool)
    else:
        bag = [rng.randint(0, pool[c]) for c in range(5)]
        lid = [pool[c] - bag[c] for c in range(5)]
    first = rng.randrange(players)
    current = rng.randrange(players)
    marker = rng.choice(["centre", "floor", "gone"])
    holder: int | None = None
    if marker != "centre":
        holder = rng.randrange(players)
        fl = boards[holder].floor
        if marker == "gone":  # taken with a full floor: the floor must be full
            while len(fl) < 7 and any(lid):
                colour = rng.choice([k for k in range(5) if lid[k]])
                lid[colour] -= 1
                fl.append(colour)
        if len(fl) < 7 or marker == "floor":
            if len(fl) == 7:
                lid[fl.pop()] += 1
            fl.insert(rng.randint(0, len(fl)), MARKER)
    round_number = rng.randint(1, 3)
    round_limit = rng.choice([round_number, round_number + 1, round_number + 3, 100])
    return {
        "players": players,
        "variant": variant,
        "round_number": round_number,
        "round_limit": round_limit,
        "first": first,
        "current": current,
        "holder": holder,
        "marker_in_centre": marker == "centre",
        "factories": factories,
        "centre": centre,
        "bag": bag,
        "lid": lid,
        "boards": boards,
    }


def engine_from(spec: dict[str, Any], seed: int) -> Game:
    game = Game.new(
        players=spec["players"],
        variant=spec["variant"],
        seed=seed,
        round_limit=spec["round_limit"],
    )
    game.bag = list(spec["bag"])
    game.lid = list(spec["lid"])
    game.factories = [factory_code(f) for f in spec["factories"]]
    game.centre = list(spec["centre"])
    game.marker_in_centre = spec["marker_in_centre"]
    _sync_table(game)
    boards = game.boards  # whole attributes are assigned: the compiled engine's are snapshots
    for seat, rb in enumerate(spec["boards"]):
        board = Board()
        for r in range(5):
            for c in range(5):
                if rb.wall[r][c] is not None:
                    board.place(r, c, rb.wall[r][c])
        board.line_colour = [rb.line_colour[r] if rb.line_count[r] else -1 for r in range(5)]
        board.line_count = list(rb.line_count)
        board.floor = list(rb.floor)
        board.score = rb.score
        board.refresh_accept()
        boards[seat] = board
    game.boards = boards
    game.round = spec["round_number"]
    rounds = game.rounds
    rounds[0].number = spec["round_number"]
    rounds[0].first_player = spec["first"]
    rounds[0].factories = [list(f) for f in spec["factories"]]
    game.rounds = rounds
    game._first_player = spec["first"]
    holder = spec["holder"]
    game._next_first = holder if holder is not None else spec["first"]
    game.current_player = spec["current"]
    return game


@settings(max_examples=600, deadline=None)
@given(position_seed=seeds, seed=seeds, move_seed=seeds, floor_bias=st.sampled_from([0.0, 0.7]))
def test_random_positions_play_out_by_the_rules(
    position_seed: int, seed: int, move_seed: int, floor_bias: float
) -> None:
    """From a random consistent position, engine and reference agree until the end."""
    spec = random_position(random.Random(position_seed))
    game = engine_from(spec, seed)
    ref = from_position(**{**spec, "boards": copy.deepcopy(spec["boards"])})
    assert_conserved(game)
    compare(game, ref)
    rng = random.Random(move_seed)
    n = 0
    while not game.is_over():
        assert n < 3000
        legal = game.legal_moves()
        assert legal and len(legal) == len(set(legal))
        if game.decision is Decision.PLACE:
            assert legal == ref.legal_moves()
        else:
            assert set(legal) == set(ref.legal_moves())
        floors = [m for m in legal if isinstance(m, Move) and m.line == FLOOR]
        pick_floor = floors and rng.random() < floor_bias
        move = rng.choice(floors) if pick_floor else rng.choice(legal)
        round_before = game.round
        game.apply(move)
        ref.apply(move)
        n += 1
        if ref.phase == "deal":
            assert game.round == round_before + 1
            ref.deal([list(f) for f in game.rounds[-1].factories])
        compare(game, ref)
        assert_conserved(game)
    assert game.end_reason is not None and game.end_reason.value == ref.end_reason
    assert game.scores() == ref.final_scores()
    assert game.ranks() == ref.ranks()


@settings(max_examples=20, deadline=None)
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds)
def test_observation_validates_and_matches_the_position(
    players: int, variant: str, seed: int, move_seed: int
) -> None:
    game = Game.new(players=players, variant=variant, seed=seed)
    rng = random.Random(move_seed)
    while True:
        obs = game.observation()
        assert obs.model_dump() == {**game.observation_dict(), "colours": list(obs.colours)}
        assert obs.decision == game.decision.value
        assert obs.pending_line == game.pending_line
        assert [p.score for p in obs.players] == [b.score for b in game.boards]
        if game.is_over():
            break
        game.apply(rng.choice(game.legal_moves()))
