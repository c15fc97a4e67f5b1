"""Golden scenarios: one small position per rule and house rule (H) of RULES.md.

Every expected number below is derived by hand from RULES.md (the derivation
is in the test's comments), never read back from the engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from arena.engine import (
    CENTRE,
    FLOOR,
    MARKER,
    Decision,
    EndReason,
    Game,
    IllegalDeal,
    IllegalMove,
    Move,
    Place,
)

from .helpers import (
    B,
    K,
    R,
    W,
    Y,
    assert_conserved,
    first_policy,
    floor_penalty,
    floor_policy,
    fresh,
    keep_in_bag,
    play_out,
    play_round,
    set_floor,
    set_line,
    set_table,
    set_wall,
    set_wall_colours,
    snapshot,
    wall_col,
    wall_colour,
)


def one(colour: int, n: int = 1) -> list[int]:
    """Per-colour counts holding ``n`` tiles of ``colour``."""
    counts = [0] * 5
    counts[colour] = n
    return counts


def close_round(game: Game, seat: int = 1, colour: int = B, line: int = 4) -> None:
    """The round's last move: ``seat`` takes a lone tile from factory 0 to ``line``.

    Default: one blue tile on seat 1's line 4 (not full, so it scores nothing and
    costs nothing).
    """
    set_table(game, factories=[one(colour)], marker=game.marker_in_centre)
    game.current_player = seat
    game.apply(Move(0, colour, line))
    assert game.round == 2 or game.is_over() or game.decision is Decision.PLACE


def cell(game: Game, seat: int, row: int, col: int) -> int:
    return game.boards[seat].wall[row * 5 + col]


# =====================================================================  set-up


@pytest.mark.parametrize(("players", "factories"), [(2, 5), (3, 7), (4, 9)])
def test_setup(players: int, factories: int) -> None:
    game = Game.new(players=players, seed=3)
    assert game.round == 1
    assert game.first_player == 0 and game.current_player == 0  # (H) seat 0 starts
    assert game.decision is Decision.DRAFT
    assert game.scores() == [0] * players
    assert len(game.factories) == factories
    assert all(sum(f) == 4 for f in game.factory_counts())
    assert sum(game.bag) == 100 - 4 * factories
    assert game.lid == [0] * 5
    assert game.centre == [0] * 5
    assert game.marker_in_centre
    assert all(b.floor == [] for b in game.boards)
    assert_conserved(game)


def test_coloured_wall_pattern_matches_the_rules_text() -> None:
    # RULES.md: "Row 0 reads blue, yellow, red, black, white; row 1 reads white,
    # blue, yellow, red, black".
    assert [wall_colour(0, c) for c in range(5)] == [B, Y, R, K, W]
    assert [wall_colour(1, c) for c in range(5)] == [W, B, Y, R, K]


@pytest.mark.parametrize("row", range(5))
@pytest.mark.parametrize("colour", range(5))
def test_coloured_wall_places_each_colour_in_its_fixed_cell(row: int, colour: int) -> None:
    game = fresh()
    set_line(game, 0, row, colour, row + 1)
    close_round(game)
    col = wall_col(row, colour)
    board = game.boards[0]
    assert [(i // 5, i % 5) for i in range(25) if board.wall[i] >= 0] == [(row, col)]
    assert cell(game, 0, row, col) == colour
    assert board.score == 1  # an isolated tile
    assert board.line_count[row] == 0
    assert game.lid[colour] == row  # the line's other tiles go to the lid
    assert_conserved(game)


# =====================================================================  placement scoring

# (wall cells already filled, placed cell, points). Points derived from RULES.md
# Phase 2.2: h, v = unbroken runs through the new tile; 1 if both are 1, else
# (h if h > 1) + (v if v > 1).
SCORING_CASES = [
    pytest.param([], (2, 2), 1, id="isolated"),
    pytest.param([(2, 0), (2, 1), (2, 3), (3, 2), (4, 2)], (2, 2), 7, id="row4+col3=7"),
    pytest.param([(2, 1), (1, 2)], (2, 2), 4, id="h2+v2=4"),
    pytest.param([(2, 1), (2, 3)], (2, 2), 3, id="h3-only"),
    pytest.param([(1, 2), (3, 2)], (2, 2), 3, id="v3-only"),
    pytest.param([(1, 1), (1, 3), (3, 1), (3, 3)], (2, 2), 1, id="diagonals-never-count"),
    pytest.param([(2, 0), (2, 4), (0, 2), (4, 2)], (2, 2), 1, id="gaps-break-runs"),
    pytest.param([(2, 0), (2, 1), (2, 4), (0, 2)], (2, 2), 3, id="broken-row-h3"),
    pytest.param(
        [(2, 0), (2, 1), (2, 3), (2, 4), (0, 2), (1, 2), (3, 2), (4, 2)], (2, 2), 10, id="cross-10"
    ),
    pytest.param([(0, 1), (1, 0)], (0, 0), 4, id="corner-h2+v2"),
    pytest.param([(4, 3), (3, 4), (2, 4)], (4, 4), 5, id="corner-h2+v3"),
    pytest.param([(0, 0), (0, 1), (0, 2), (0, 3), (1, 4)], (0, 4), 7, id="row5+v2=7"),
    pytest.param([(3, 0), (1, 0), (0, 0)], (4, 0), 2, id="v2-gap-above"),
]


@pytest.mark.parametrize(("filled", "placed", "points"), SCORING_CASES)
def test_placement_score(
    filled: list[tuple[int, int]], placed: tuple[int, int], points: int
) -> None:
    game = fresh()
    set_wall(game, 0, filled)
    game.boards[0].score = 10
    row, col = placed
    set_line(game, 0, row, wall_colour(row, col), row + 1)
    close_round(game)
    assert cell(game, 0, row, col) == wall_colour(row, col)
    assert game.boards[0].score == 10 + points
    assert game.rounds[0].scores == [10 + points, 0]
    assert_conserved(game)


def test_lines_are_tiled_top_to_bottom() -> None:
    # Wall holds (0,1). Line 0 -> (0,0), line 1 -> (1,0).
    # Top to bottom: (0,0): h=2 (with (0,1)), v=1 -> 2; then (1,0): h=1, v=2 -> 2. Total 4.
    # (Bottom to top would give 1 + 4 = 5.)
    game = fresh()
    set_wall(game, 0, [(0, 1)])
    set_line(game, 0, 0, wall_colour(0, 0), 1)
    set_line(game, 0, 1, wall_colour(1, 0), 2)
    close_round(game)
    assert game.boards[0].score == 4
    assert cell(game, 0, 0, 0) == B and cell(game, 0, 1, 0) == W


def test_several_full_lines_each_score_and_partial_lines_stay() -> None:
    game = fresh()
    set_line(game, 0, 0, R, 1)  # -> (0,2), isolated: 1
    set_line(game, 0, 4, Y, 5)  # -> (4,0), isolated: 1
    set_line(game, 0, 3, K, 3)  # 3 of 4: stays
    set_line(game, 0, 2, W, 1)  # 1 of 3: stays
    close_round(game)
    board = game.boards[0]
    assert board.score == 2
    assert cell(game, 0, 0, wall_col(0, R)) == R and cell(game, 0, 4, wall_col(4, Y)) == Y
    assert (board.line_colour[3], board.line_count[3]) == (K, 3)
    assert (board.line_colour[2], board.line_count[2]) == (W, 1)
    assert (board.line_count[0], board.line_count[4]) == (0, 0)
    assert game.lid == [0, 4, 0, 0, 0]  # line 4 leaves 4 yellow in the lid
    # Next round: the carried-over lines still restrict the destinations.
    assert game.round == 2
    assert Move(CENTRE, W, 2) not in game.legal_moves()
    for move in game.legal_moves():
        assert isinstance(move, Move)
        if move.line == 3:
            assert move.colour == K
        if move.line == 2:
            assert move.colour == W
    assert_conserved(game)


# =====================================================================  floor


def test_floor_of_marker_and_four_tiles_costs_8() -> None:
    game = fresh()
    game.boards[0].score = 20
    set_table(game, factories=[one(Y)], centre=one(R, 4))
    game.apply(Move(CENTRE, R, FLOOR))
    # The marker goes first, then the tiles (RULES.md Phase 1.4).
    assert game.boards[0].floor == [MARKER, R, R, R, R]
    assert not game.marker_in_centre
    close_round(game, seat=1, colour=Y, line=4)
    # slots -1 -1 -2 -2 -2 -> 8
    assert game.boards[0].score == 20 - 8 == 20 - floor_penalty(5)
    assert game.boards[0].floor == []
    assert game.lid == one(R, 4)  # floor tiles go to the lid, the marker does not
    assert game.first_player == 0 and game.current_player == 0
    assert_conserved(game)


def test_full_floor_costs_14_and_overflow_goes_to_the_lid_by_colour() -> None:
    game = fresh()
    game.boards[0].score = 30
    set_floor(game, 0, [B, B, Y, Y, K])
    set_table(game, factories=[[0, 1, 3, 0, 0], one(W)])
    game.apply(Move(0, R, FLOOR))  # 3 red: 2 fill the floor, 1 goes to the lid at once
    assert game.boards[0].floor == [B, B, Y, Y, K, R, R]
    assert game.lid == one(R, 1)
    assert game.centre == one(Y)  # the rest of the factory went to the centre
    assert game.factories[0] == 0
    # Seat 1 takes the centre yellow (and the marker) to its line 1.
    game.apply(Move(CENTRE, Y, 1))
    assert game.boards[1].floor == [MARKER]
    game.apply(Move(1, W, FLOOR))  # seat 0 again: floor full, the white goes to the lid
    # Round over: seat 0 pays 14, seat 1 pays 1 (clamped at 0).
    assert game.round == 2
    assert game.boards[0].score == 30 - 14
    assert game.boards[1].score == 0
    # The lid now also holds the 7 floor tiles.
    assert game.lid == [2, 2, 3, 1, 1]
    assert game.first_player == 1
    assert_conserved(game)


@pytest.mark.parametrize(
    ("score", "items", "expected"),
    [(3, 3, 0), (4, 3, 0), (5, 3, 1), (0, 7, 0), (13, 7, 0), (15, 7, 1), (2, 1, 1), (1, 2, 0)],
)
def test_score_is_clamped_at_zero(score: int, items: int, expected: int) -> None:
    game = fresh()
    game.boards[0].score = score
    set_floor(game, 0, [K] * items)
    close_round(game)
    assert game.boards[0].score == expected == max(0, score - floor_penalty(items))


def test_marker_taken_with_a_full_floor_costs_nothing_extra_and_starts_next_round() -> None:
    # (H) RULES.md Phase 1.4.
    game = fresh()
    game.boards[1].score = 20
    set_floor(game, 1, [W] * 7)
    set_table(game, centre=one(K, 2))
    game.current_player = 1
    game.apply(Move(CENTRE, K, FLOOR))
    # Round over (the table is empty).
    assert game.round == 2
    assert game.boards[1].score == 20 - 14
    assert game.lid == [0, 0, 0, 2, 7]  # 2 black overflowed, then the 7 white of the floor
    assert game.first_player == 1 and game.current_player == 1
    assert game.rounds[1].first_player == 1
    assert game.marker_in_centre
    assert_conserved(game)


def test_marker_with_full_floor_observed_mid_round() -> None:
    game = fresh()
    set_floor(game, 1, [W] * 7)
    set_table(game, factories=[one(B)], centre=one(K, 2))
    game.current_player = 1
    game.apply(Move(CENTRE, K, 0))  # 1 black on line 0, 1 overflows: floor full -> lid
    assert game.boards[1].floor == [W] * 7
    assert MARKER not in game.boards[1].floor
    assert not game.marker_in_centre
    assert game.lid == one(K, 1)
    game.apply(Move(0, B, FLOOR))
    assert game.first_player == 1


def test_overflowing_pattern_line_goes_to_the_floor() -> None:
    game = fresh()
    set_table(game, factories=[one(Y, 4), one(B)])
    game.apply(Move(0, Y, 1))  # line 1 holds 2: 2 on the line, 2 on the floor
    board = game.boards[0]
    assert (board.line_colour[1], board.line_count[1]) == (Y, 2)
    assert board.floor == [Y, Y]
    assert game.current_player == 1


def test_marker_goes_to_the_leftmost_free_slot_then_overflow() -> None:
    game = fresh()
    set_floor(game, 0, [R, R])
    set_table(game, factories=[one(Y)], centre=one(B, 3))
    game.apply(Move(CENTRE, B, 0))  # 1 on line 0, 2 on the floor after the marker
    assert game.boards[0].floor == [R, R, MARKER, B, B]
    assert game.boards[0].line_count[0] == 1


def test_partial_line_is_topped_up() -> None:
    game = fresh()
    set_line(game, 0, 3, K, 1)
    set_table(game, factories=[[0, 0, 0, 2, 0], one(Y)])
    game.apply(Move(0, K, 3))
    board = game.boards[0]
    assert (board.line_colour[3], board.line_count[3]) == (K, 3)
    assert board.floor == []
    game.current_player = 0
    set_table(game, factories=[[0, 0, 0, 3, 0], one(Y)])
    game.apply(Move(0, K, 3))  # 1 fits, 2 overflow
    assert board.line_count[3] == 4
    assert board.floor == [K, K]
    game.current_player = 0
    set_table(game, factories=[one(K), one(Y)])
    assert Move(0, K, 3) not in game.legal_moves()  # a full line is never listed
    assert Move(0, K, FLOOR) in game.legal_moves()


# =====================================================================  legal moves


def test_legal_moves_of_a_position_are_exactly_the_rules_destinations() -> None:
    game = fresh()
    set_line(game, 0, 0, B, 1)  # full
    set_line(game, 0, 1, Y, 1)  # yellow, 1 of 2
    set_wall(game, 0, [(2, wall_col(2, R))])  # row 2 holds red
    set_wall(game, 0, [(3, wall_col(3, Y))])  # row 3 holds yellow
    set_line(game, 0, 4, K, 2)  # black, 2 of 5
    set_table(game, factories=[[1, 1, 1, 1, 0]], centre=one(R, 2))
    # Derived from RULES.md Phase 1.3 (line empty or same colour, not full, row
    # does not hold the colour), plus the floor, once per (source, colour).
    expected = {
        Move(0, B, 2), Move(0, B, 3), Move(0, B, FLOOR),
        Move(0, Y, 1), Move(0, Y, 2), Move(0, Y, FLOOR),
        Move(0, R, 3), Move(0, R, FLOOR),
        Move(0, K, 2), Move(0, K, 3), Move(0, K, 4), Move(0, K, FLOOR),
        Move(CENTRE, R, 3), Move(CENTRE, R, FLOOR),
    }  # fmt: skip
    legal = game.legal_moves()
    assert len(legal) == len(set(legal))
    assert set(legal) == expected


def test_gray_wall_row_colour_blocks_the_line_whatever_the_column() -> None:
    game = fresh(variant="gray")
    set_wall_colours(game, 0, [(2, 0, R), (3, 4, Y)])
    set_table(game, factories=[[0, 1, 1, 0, 0]])
    legal = set(game.legal_moves())
    assert Move(0, R, 2) not in legal and Move(0, R, 3) in legal
    assert Move(0, Y, 3) not in legal and Move(0, Y, 2) in legal
    # A line may take a colour even if no column could take it later.
    set_wall_colours(game, 1, [(0, 0, W), (1, 1, W), (2, 2, W), (4, 4, W), (3, 3, K)])
    set_table(game, factories=[one(W)])
    game.current_player = 1
    assert Move(0, W, 3) in game.legal_moves()


def test_no_duplicates_and_floor_always_listed_with_all_lines_blocked() -> None:
    game = fresh()
    for line in range(5):
        set_line(game, 0, line, line, line + 1)  # every line full (line i holds colour i)
    set_table(game, factories=[[2, 2, 0, 0, 0], [4, 0, 0, 0, 0]], centre=[1, 0, 0, 0, 3])
    legal = game.legal_moves()
    assert len(legal) == len(set(legal))
    assert set(legal) == {
        Move(0, B, FLOOR),
        Move(0, Y, FLOOR),
        Move(1, B, FLOOR),
        Move(CENTRE, B, FLOOR),
        Move(CENTRE, W, FLOOR),
    }


def test_taking_from_a_factory_sends_the_rest_to_the_centre() -> None:
    game = fresh()
    set_table(game, factories=[[1, 2, 0, 0, 1], one(K)], centre=one(W, 2))
    game.apply(Move(0, Y, 3))
    assert game.factories[0] == 0
    assert game.centre == [1, 0, 0, 0, 3]
    assert game.marker_in_centre  # taking from a factory never takes the marker
    assert (game.boards[0].line_colour[3], game.boards[0].line_count[3]) == (Y, 2)
    assert game.boards[0].floor == []


def test_first_from_centre_takes_the_marker_and_starts_next_round() -> None:
    game = fresh()
    game.boards[1].score = 10
    set_floor(game, 1, [Y, Y])
    set_table(game, factories=[one(B)], centre=[0, 0, 2, 1, 0])
    game.current_player = 1
    game.apply(Move(CENTRE, R, 1))
    assert game.boards[1].floor == [Y, Y, MARKER]
    assert not game.marker_in_centre
    game.apply(Move(CENTRE, K, 2))  # seat 0: centre again, no marker any more
    assert game.boards[0].floor == []
    assert game.current_player == 1
    game.apply(Move(0, B, 0))
    assert game.round == 2
    assert game.first_player == 1 and game.current_player == 1
    assert game.rounds[1].first_player == 1
    # seat 1: red line 1 -> (1,3) and blue line 0 -> (0,0), not adjacent: 1 + 1;
    # floor Y Y marker: -4. Seat 0: line 2 holds 1 of 3, nothing placed.
    assert game.boards[1].score == 10 + 2 - 4
    assert game.boards[0].score == 0
    assert_conserved(game)


def test_play_goes_in_seat_order_from_the_first_player() -> None:
    game = fresh(players=4)
    set_table(game, factories=[one(B)] * 6)
    game.current_player = 2
    seats = []
    for _ in range(5):
        seats.append(game.current_player)
        game.apply(game.legal_moves()[0])
    assert seats == [2, 3, 0, 1, 2]


def nobody_takes_marker_deals() -> list[list[list[int]]]:
    d1 = [
        [2, 2, 0, 0, 0],
        [0, 0, 2, 2, 0],
        [0, 0, 0, 2, 2],
        [2, 0, 0, 0, 2],
        [0, 2, 2, 0, 0],
        [1, 1, 1, 1, 0],
        [0, 1, 1, 1, 1],
    ]
    d2 = [one(B, 4), one(Y, 4), one(R, 4), one(K, 4), one(W, 4), one(B, 4), one(Y, 4)]
    bag = [20 - sum(f[c] for f in d1 + d2) for c in range(5)]
    d3 = []
    for _ in range(7):  # any drawable deal: greedily from what is left in the bag
        f = [0] * 5
        for _ in range(4):
            c = max(range(5), key=lambda k: bag[k])
            f[c] += 1
            bag[c] -= 1
        d3.append(f)
    return [d1, d2, d3]


def test_marker_not_taken_same_first_player_next_round() -> None:
    # (H) RULES.md Phase 3.3, 3 players.
    game = Game.new(players=3, seed=0, deals=nobody_takes_marker_deals())
    game.apply(Move(0, B, FLOOR))  # seat 0: yellow to the centre
    game.apply(Move(1, R, FLOOR))  # seat 1: black to the centre
    game.apply(Move(CENTRE, Y, FLOOR))  # seat 2: first from the centre: the marker
    assert game.boards[2].floor[0] == MARKER
    play_round(game, first_policy)
    assert game.round == 2
    assert game.first_player == 2 and game.current_player == 2
    # Round 2: monochrome factories, the centre never holds a tile.
    while game.round == 2:
        assert all(isinstance(m, Move) and m.source != CENTRE for m in game.legal_moves())
        assert game.marker_in_centre and game.centre == [0] * 5
        game.apply(game.legal_moves()[0])
    assert game.round == 3
    assert game.first_player == 2 and game.current_player == 2
    assert [log.first_player for log in game.rounds] == [0, 2, 2]
    assert_conserved(game)


# =====================================================================  round end & carry-over


def test_full_lines_are_emptied_to_the_lid_and_partial_lines_carry_over() -> None:
    game = fresh()
    set_line(game, 0, 4, R, 5)
    set_line(game, 0, 3, W, 2)
    set_line(game, 1, 2, Y, 3)
    set_line(game, 1, 1, B, 1)
    close_round(game, seat=1, colour=K, line=4)
    b0, b1 = game.boards
    assert b0.line_count == [0, 0, 0, 2, 0] and b0.line_colour[3] == W
    assert b1.line_count == [0, 1, 0, 0, 1] and (b1.line_colour[1], b1.line_colour[4]) == (B, K)
    assert game.lid == [0, 2, 4, 0, 0]  # red line 4: 4 to the lid; yellow line 2: 2
    assert game.round == 2
    assert sum(game.bag) + sum(sum(f) for f in game.factory_counts()) + sum(game.lid) == (
        100 - 2 - 2 - 1 - 1  # carried-over lines + 2 placed tiles
    )
    assert_conserved(game)


def test_next_round_is_dealt_from_the_bag() -> None:
    game = fresh()
    bag_before = list(game.bag)
    close_round(game)
    assert game.round == 2
    dealt = [sum(f[c] for f in game.factory_counts()) for c in range(5)]
    assert sum(dealt) == 20
    assert all(sum(f) == 4 for f in game.factory_counts())
    expected_bag = [bag_before[c] - (1 if c == B else 0) - dealt[c] for c in range(5)]
    assert game.bag == expected_bag
    assert game.marker_in_centre and game.centre == [0] * 5
    assert game.decision is Decision.DRAFT


# =====================================================================  dealing: bag, lid


@pytest.mark.parametrize("seed", range(25))
def test_leftover_bag_tiles_are_drawn_before_the_lid_rng(seed: int) -> None:
    game = fresh(seed=seed)
    keep_in_bag(game, [1, 0, 2, 0, 0])  # 3 tiles left in the bag, 97 in the lid
    bag_before = list(game.bag)
    set_table(game, factories=[one(W)])  # no white in the bag: this one comes from the lid
    assert game.bag == bag_before
    lid_before = list(game.lid)
    game.current_player = 1
    game.apply(Move(0, W, 4))
    assert game.round == 2
    deal = game.rounds[1].factories
    # Factory 0 is filled first: it holds the 3 bag tiles plus one from the poured lid.
    assert all(deal[0][c] >= bag_before[c] for c in range(5)), (bag_before, deal[0])
    assert sum(sum(f) for f in deal) == 20
    dealt = [sum(f[c] for f in deal) for c in range(5)]
    # The whole lid was poured into the bag.
    assert game.lid == [0] * 5
    assert [game.bag[c] + dealt[c] for c in range(5)] == [
        bag_before[c] + lid_before[c] for c in range(5)
    ]
    assert_conserved(game)


def test_lid_is_not_poured_while_the_bag_has_enough() -> None:
    game = fresh(seed=4)
    keep_in_bag(game, [5, 5, 5, 5, 5])
    set_table(game, factories=[one(B)])
    bag_before, lid_before = list(game.bag), list(game.lid)
    assert sum(bag_before) == 24
    game.current_player = 1
    game.apply(Move(0, B, 4))
    assert game.round == 2
    assert game.lid == lid_before
    assert sum(game.bag) == 4
    dealt = [sum(f[c] for f in game.factory_counts()) for c in range(5)]
    assert [dealt[c] + game.bag[c] for c in range(5)] == bag_before


def injected_game(round2: list[list[int]]) -> Game:
    d1 = [[1, 1, 1, 1, 0]] * 5
    game = fresh(players=2, deals=[d1, round2])
    keep_in_bag(game, [1, 0, 2, 0, 0])
    set_table(game, factories=[one(W)])
    return game


GOOD_ROUND2 = [[1, 0, 2, 0, 1], [0, 4, 0, 0, 0], [0, 0, 0, 4, 0], [4, 0, 0, 0, 0], [0, 0, 0, 0, 4]]


def test_injected_deal_drawing_the_bag_first_is_accepted() -> None:
    game = injected_game(GOOD_ROUND2)
    assert game.bag == [1, 0, 2, 0, 0]
    lid_before = list(game.lid)
    game.current_player = 1
    game.apply(Move(0, W, 4))
    assert game.round == 2
    assert game.factory_counts() == GOOD_ROUND2
    assert game.lid == [0] * 5
    assert game.bag == [lid_before[c] + [1, 0, 2, 0, 0][c] - [5, 4, 2, 4, 5][c] for c in range(5)]
    assert_conserved(game)


@pytest.mark.parametrize(
    "round2",
    [
        # skips the 3 bag tiles entirely
        pytest.param([[0, 0, 0, 0, 4], *GOOD_ROUND2[1:]], id="skips-bag"),
        # bag tiles dealt to factory 1, factory 0 from the lid
        pytest.param([[0, 4, 0, 0, 0], [1, 0, 2, 0, 1], *GOOD_ROUND2[2:]], id="bag-in-factory-1"),
        # one red of the bag left behind when the lid had to be poured
        pytest.param(
            [[1, 0, 1, 0, 2], [0, 3, 1, 0, 0], *GOOD_ROUND2[2:]], id="one-bag-tile-left"
        ),
        pytest.param([[1, 0, 2, 0, 1], [0, 4, 0, 0, 0], [0, 0, 0, 4, 0], [4, 0, 0, 0, 0]],
                     id="four-factories"),
        pytest.param([[1, 0, 2, 0, 1], *GOOD_ROUND2[1:4], [0, 0, 0, 0, 3]], id="partial-fill"),
        pytest.param([[1, 0, 2, 0, 2], *GOOD_ROUND2[1:]], id="five-tiles"),
    ],
)  # fmt: skip
def test_injected_deal_that_breaks_the_draw_order_is_rejected(round2: list[list[int]]) -> None:
    game = injected_game(round2)
    game.current_player = 1
    with pytest.raises(IllegalDeal):
        game.apply(Move(0, W, 4))


def test_injected_first_deal_must_be_drawable() -> None:
    Game.new(players=2, deals=[[one(B, 4)] * 5])  # all 20 blue: drawable
    with pytest.raises(IllegalDeal):
        Game.new(players=2, deals=[[one(B, 4)] * 4 + [[1, 0, 0, 0, 4]]])  # 5 tiles
    with pytest.raises(IllegalDeal):
        Game.new(players=2, deals=[[one(B, 4)] * 4 + [[-1, 1, 1, 1, 2]]])  # malformed
    with pytest.raises(IllegalDeal):
        Game.new(players=2, deals=[[one(B, 4)] * 6])  # 6 factories for 2 players
    with pytest.raises(IllegalDeal):
        Game.new(players=2, deals=[[one(B, 4)] * 4 + [one(B, 3)]])  # partial fill, full bag


# ---- partial fills with 4 players (bag + lid < 36)


def stash_walls(game: Game, seats: list[int]) -> None:
    """Fill 4 cells of every row (columns 0-3) of these seats' walls: 20 tiles, no full row."""
    for seat in seats:
        set_wall(game, seat, [(r, c) for r in range(5) for c in range(4)])


def partial_fill_game(deals: list[list[list[int]]] | None = None, seed: int = 0) -> Game:
    """4 players, 30 tiles left for round 2: 7 full factories, one with 2, one empty."""
    game = fresh(players=4, seed=seed, deals=deals)
    stash_walls(game, [0, 1, 2])  # 60 tiles, 12 of each colour
    set_line(game, 3, 4, B, 4)
    set_line(game, 3, 3, Y, 3)
    set_line(game, 3, 2, K, 2)
    set_table(game, factories=[one(R)])
    game.current_player = 3
    return game


def test_partial_fill_with_four_players_rng() -> None:
    for seed in range(10):
        game = partial_fill_game(seed=seed)
        left = [game.bag[c] + game.lid[c] for c in range(5)]
        assert sum(left) == 30
        game.apply(Move(0, R, 1))
        assert game.round == 2
        assert [sum(f) for f in game.factory_counts()] == [4] * 7 + [2, 0]
        dealt = [sum(f[c] for f in game.factory_counts()) for c in range(5)]
        assert dealt == left
        assert game.bag == [0] * 5 and game.lid == [0] * 5
        assert_conserved(game)
        # The round is played with what is there.
        play_round(game, floor_policy)
        assert game.round == 3 or game.is_over()


PARTIAL_ROUND2 = [
    one(B, 4), one(Y, 4), [0, 1, 3, 0, 0], one(R, 4), one(K, 4), [0, 0, 0, 2, 2],
    one(W, 4), one(W, 2), [0] * 5,
]  # fmt: skip
D1_4P = [[1, 1, 1, 1, 0]] * 9


def test_partial_fill_with_four_players_injected() -> None:
    game = partial_fill_game([D1_4P, PARTIAL_ROUND2])
    left = [game.bag[c] + game.lid[c] for c in range(5)]
    assert left == [4, 5, 7, 6, 8]
    game.apply(Move(0, R, 1))
    assert game.factory_counts() == PARTIAL_ROUND2
    assert game.bag == [0] * 5 and game.lid == [0] * 5


@pytest.mark.parametrize(
    "round2",
    [
        pytest.param([*PARTIAL_ROUND2[:6], one(W, 2), one(W, 4), [0] * 5], id="partial-too-early"),
        pytest.param([*PARTIAL_ROUND2[:7], one(W, 1), [0] * 5], id="tile-left-undealt"),
        pytest.param([*PARTIAL_ROUND2[:7], one(W, 1), one(W, 1)], id="partial-split-in-two"),
    ],
)
def test_bad_partial_fills_are_rejected(round2: list[list[int]]) -> None:
    game = partial_fill_game([D1_4P, round2])
    with pytest.raises(IllegalDeal):
        game.apply(Move(0, R, 1))


# =====================================================================  end of game


def test_game_ends_after_the_round_that_completes_a_row() -> None:
    game = fresh()
    game.boards[0].score = 10
    game.boards[1].score = 10
    set_wall(game, 0, [(0, 0), (0, 1), (0, 2), (0, 3)])
    set_line(game, 1, 2, R, 3)  # seat 1 has a full line too: it must still be tiled
    set_floor(game, 1, [K, K])  # and its floor penalised
    set_table(game, factories=[one(W), one(B)])
    game.apply(Move(0, W, 0))  # seat 0 fills line 0 with the white of row 0
    assert not game.is_over() and game.current_player == 1
    game.apply(Move(1, B, 4))
    assert game.is_over()
    assert game.end_reason is EndReason.NORMAL
    assert game.decision is Decision.OVER
    assert game.round == 1 and len(game.rounds) == 1  # no next round dealt
    # seat 0: white at (0,4) closes row 0: h=5, v=1 -> 5; +2 row bonus.
    # seat 1: red at (2,4): isolated, +1; floor of 2: -2.
    assert game.rounds[0].scores == [15, 9]
    assert game.scores() == [17, 9]
    assert game.legal_moves() == []
    with pytest.raises(IllegalMove):
        game.apply(Move(0, B, FLOOR))
    assert_conserved(game)


def test_bonuses_with_breakdown() -> None:
    game = fresh()
    game.boards[0].score = 10
    # Row 0 complete once (0,4) lands, column 0 complete, all five blues (the diagonal).
    cells = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0), (4, 0)]
    cells += [(1, 1), (2, 2), (3, 3), (4, 4)]
    set_wall(game, 0, cells)
    set_line(game, 0, 0, W, 1)
    close_round(game)
    assert game.is_over() and game.end_reason is EndReason.NORMAL
    b0, b1 = game.breakdowns()
    # (0,4): h=5 (row), v=1 -> 5 points.
    assert (b0.rounds, b0.rows, b0.columns, b0.colours, b0.total) == (15, 2, 7, 10, 34)
    assert (b1.rounds, b1.rows, b1.columns, b1.colours, b1.total) == (0, 0, 0, 0, 0)
    assert game.scores() == [34, 0]
    assert game.ranks() == [1, 2]


def test_full_wall_bonuses() -> None:
    game = fresh()
    cells = [(r, c) for r in range(5) for c in range(5) if (r, c) != (4, 4)]
    set_wall(game, 0, cells)
    set_line(game, 0, 4, wall_colour(4, 4), 5)
    close_round(game)
    b0 = game.breakdowns()[0]
    # (4,4) closes row 4 and column 4: 5 + 5 = 10. 5 rows, 5 columns, 5 colours.
    assert (b0.rounds, b0.rows, b0.columns, b0.colours) == (10, 10, 35, 50)
    assert game.scores()[0] == 105


def finish_with_walls(players: int, walls: list[list[tuple[int, int]]], scores: list[int]) -> Game:
    """Set walls and scores, then end the round (some wall has a full row) with a neutral move."""
    game = fresh(players=players)
    for seat in range(players):
        set_wall(game, seat, walls[seat])
        game.boards[seat].score = scores[seat]
    close_round(game, seat=players - 1, colour=Y, line=4)
    assert game.is_over() and game.end_reason is EndReason.NORMAL
    return game


ROW0 = [(0, c) for c in range(5)]
ROW1 = [(1, c) for c in range(5)]


def test_ranking_higher_score_first() -> None:
    game = finish_with_walls(3, [ROW0, [], []], [1, 9, 5])
    assert game.scores() == [3, 9, 5]
    assert game.ranks() == [3, 1, 2]


def test_ranking_tie_broken_by_complete_rows() -> None:
    # seat 0: 10 + 2 (one row) = 12; seat 1: 8 + 4 (two rows) = 12; seat 2: 12, no row.
    game = finish_with_walls(3, [ROW0, ROW0 + ROW1, []], [10, 8, 12])
    assert game.scores() == [12, 12, 12]
    assert game.ranks() == [2, 1, 3]
    record = game.record(["a", "b", "c"])
    assert [f.rank for f in record.final] == [2, 1, 3]


def test_ranking_shared_rank_is_competition_ranking() -> None:
    game = finish_with_walls(3, [ROW0, ROW1, []], [10, 10, 4])
    assert game.scores() == [12, 12, 4]
    assert game.ranks() == [1, 1, 3]
    game = finish_with_walls(4, [ROW0, ROW1, ROW1, []], [20, 10, 10, 0])
    assert game.ranks() == [1, 2, 2, 4]
    game = finish_with_walls(4, [[], ROW1, [], []], [5, 0, 5, 5])
    assert game.scores() == [5, 2, 5, 5]
    assert game.ranks() == [1, 4, 1, 1]


def test_round_limit_ends_with_final_scoring() -> None:
    game = fresh(round_limit=1)
    set_wall(game, 1, [(r, 0) for r in range(5)])  # a complete column, no complete row
    game.boards[1].score = 3
    close_round(game, seat=0, colour=Y, line=4)
    assert game.is_over()
    assert game.end_reason is EndReason.ROUND_LIMIT
    assert game.round == 1
    assert game.scores() == [0, 3 + 7]
    assert game.breakdowns()[1].columns == 7


def test_round_limit_two_plays_two_rounds() -> None:
    game = Game.new(players=2, seed=11, round_limit=2)
    play_round(game, floor_policy)
    assert not game.is_over() and game.round == 2
    play_round(game, floor_policy)
    assert game.is_over() and game.end_reason is EndReason.ROUND_LIMIT
    assert len(game.rounds) == 2


def test_completed_row_in_the_last_allowed_round_is_a_normal_end() -> None:
    game = fresh(round_limit=1)
    set_wall(game, 0, [(0, 0), (0, 1), (0, 2), (0, 3)])
    set_line(game, 0, 0, W, 1)
    close_round(game)
    assert game.end_reason is EndReason.NORMAL
    assert game.scores()[0] == 5 + 2


def test_no_tiles_to_deal_ends_the_game() -> None:
    # (H) RULES.md Phase 3.4. Four walls with one empty cell per row (80 tiles),
    # the 20 others on unfinished pattern lines of the missing colours, bag and lid empty.
    missing = [[1, 2, 3, 4, 0], [0, 4, 2, 3, 1], [0, 1, 3, 4, 2], [0, 1, 2, 4, 3]]
    lines = {0: [(4, B, 4), (3, W, 3)], 1: [(4, Y, 4), (1, W, 1)], 2: [(4, R, 4)], 3: [(4, K, 3)]}
    game = fresh(players=4)
    for seat in range(4):
        empty = {(r, wall_col(r, missing[seat][r])) for r in range(5)}
        set_wall(game, seat, [(r, c) for r in range(5) for c in range(5) if (r, c) not in empty])
        for line, colour, n in lines[seat]:
            set_line(game, seat, line, colour, n)
    set_table(game, factories=[one(K)])
    assert game.bag == [0] * 5 and game.lid == [0] * 5
    assert_conserved(game)
    game.current_player = 3
    game.apply(Move(0, K, 4))
    assert game.is_over()
    assert game.end_reason is EndReason.NO_TILES
    assert game.round == 1
    # Final scoring applies: full columns are those without an empty cell.
    # seat 0 empties columns {1,3,0,2,4}: none full; seats 1-3 have 2 full columns each.
    assert [b.columns for b in game.breakdowns()] == [0, 14, 14, 14]
    assert game.scores() == [0, 14, 14, 14]
    assert game.ranks() == [4, 1, 1, 1]
    assert_conserved(game)


# =====================================================================  gray wall


def gray_game() -> Game:
    return fresh(variant="gray")


def test_gray_two_or_more_columns_ask_the_player() -> None:
    game = gray_game()
    set_wall_colours(game, 0, [(0, 1, R), (2, 3, B)])
    set_line(game, 0, 2, R, 3)
    close_round(game)
    # Row 2: empty cells 0,1,2,4; column 1 already holds red -> [0, 2, 4].
    assert game.decision is Decision.PLACE
    assert game.current_player == 0 and game.pending_line == 2
    assert game.legal_moves() == [Place(0), Place(2), Place(4)]
    obs = game.observation()
    assert obs.decision == "place" and obs.pending_line == 2 and obs.current_player == 0
    before = snapshot(game)
    bad_moves: list[Move | Place] = [Place(1), Place(3), Place(5), Move(0, B, FLOOR)]
    for bad in bad_moves:
        with pytest.raises(IllegalMove):
            game.apply(bad)
        assert snapshot(game) == before
    game.apply(Place(2))
    assert cell(game, 0, 2, 2) == R
    assert game.boards[0].score == 2  # (2,2) next to (2,3): h=2, v=1
    assert game.lid[R] == 2
    assert game.round == 2
    assert game.observation().decision == "draft"
    assert game.rounds[0].decisions[-1] == (0, Place(2))
    assert_conserved(game)


def test_gray_exactly_one_column_places_automatically() -> None:
    game = gray_game()
    set_wall_colours(game, 0, [(0, 0, Y), (2, 2, Y), (3, 3, Y), (1, 4, K)])
    set_line(game, 0, 1, Y, 2)
    close_round(game)
    # Row 1 empty cells 0..3, yellow already in columns 0, 2, 3 -> only column 1.
    assert game.round == 2 and game.decision is Decision.DRAFT
    assert cell(game, 0, 1, 1) == Y
    assert game.boards[0].score == 1  # (1,1): no neighbour in row or column
    assert all(not isinstance(m, Place) for _, m in game.rounds[0].decisions)


def test_gray_no_column_sends_the_whole_line_to_the_floor() -> None:
    game = gray_game()
    set_wall_colours(game, 0, [(0, 0, W), (1, 1, W), (2, 2, W), (3, 3, B), (3, 4, K)])
    set_line(game, 0, 3, W, 4)
    set_floor(game, 0, [R] * 5)
    game.boards[0].score = 20
    lid_before = list(game.lid)
    wall_before = list(game.boards[0].wall)
    close_round(game)
    # Row 3 empty cells 0, 1, 2: all hold white already. 4 white to the floor:
    # 2 fit (7 slots), 2 go to the lid; then the full floor costs 14.
    assert game.round == 2
    assert game.boards[0].wall == wall_before
    assert game.boards[0].line_count[3] == 0
    assert game.boards[0].score == 20 - 14
    assert [game.lid[c] - lid_before[c] for c in range(5)] == [0, 0, 5, 0, 4]
    assert_conserved(game)


def test_gray_no_column_line_floor_scored_with_short_floor() -> None:
    game = gray_game()
    set_wall_colours(game, 0, [(1, 0, Y), (2, 1, Y), (3, 2, Y), (4, 3, Y), (0, 4, B)])
    set_line(game, 0, 0, Y, 1)
    game.boards[0].score = 5
    close_round(game)
    # Row 0: only cells 0..3 empty; columns 0..3 each hold yellow -> floor, -1.
    assert game.boards[0].score == 4
    assert game.lid[Y] == 1


def test_gray_later_rows_see_earlier_choices_and_seats_in_order() -> None:
    game = gray_game()
    set_line(game, 0, 0, B, 1)
    set_line(game, 0, 1, B, 2)
    set_line(game, 1, 2, K, 3)
    close_round(game, seat=1, colour=Y, line=4)
    assert game.decision is Decision.PLACE and game.current_player == 0
    assert game.pending_line == 0
    assert game.legal_moves() == [Place(c) for c in range(5)]
    game.apply(Place(3))
    assert game.decision is Decision.PLACE and game.current_player == 0
    assert game.pending_line == 1
    assert game.legal_moves() == [Place(0), Place(1), Place(2), Place(4)]  # blue in column 3
    game.apply(Place(4))
    assert game.decision is Decision.PLACE and game.current_player == 1
    assert game.pending_line == 2
    assert game.legal_moves() == [Place(c) for c in range(5)]
    game.apply(Place(0))
    assert game.round == 2
    assert cell(game, 0, 0, 3) == B and cell(game, 0, 1, 4) == B and cell(game, 1, 2, 0) == K
    assert game.boards[0].score == 2  # two diagonal neighbours: 1 + 1
    assert game.boards[1].score == 1
    assert game.first_player == 0 and game.current_player == 0
    assert_conserved(game)


def test_gray_last_round_choice_then_game_over() -> None:
    game = gray_game()
    set_wall_colours(game, 0, [(0, 0, B), (0, 1, Y), (0, 2, R)])
    set_line(game, 0, 0, K, 1)
    close_round(game)
    # Row 0 empty cells 3, 4; black in neither column -> ask.
    assert game.legal_moves() == [Place(3), Place(4)]
    game.apply(Place(4))  # row not complete: (0,3) still empty
    assert not game.is_over()
    assert game.boards[0].score == 1
    game = gray_game()
    set_wall_colours(game, 0, [(0, 0, B), (0, 1, Y), (0, 2, R), (0, 3, W)])
    set_line(game, 0, 0, K, 1)
    close_round(game)
    assert game.is_over() and game.end_reason is EndReason.NORMAL
    assert game.scores()[0] == 5 + 2


# =====================================================================  illegal moves


def test_illegal_draft_moves_leave_the_game_unchanged() -> None:
    game = fresh()
    set_line(game, 0, 0, B, 1)  # full
    set_line(game, 0, 1, Y, 1)
    set_wall(game, 0, [(2, wall_col(2, R))])
    set_table(game, factories=[[1, 1, 1, 0, 0], [0, 0, 0, 4, 0]], centre=one(W, 2))
    before = snapshot(game)
    illegal: list[Move | Place] = [
        Move(0, K, FLOOR),  # colour not in that factory
        Move(2, B, FLOOR),  # empty factory
        Move(5, B, FLOOR),  # no factory 5 with 2 players
        Move(-2, B, FLOOR),
        Move(CENTRE, B, FLOOR),  # colour not in the centre
        Move(0, B, 0),  # full line
        Move(0, R, 1),  # line holds another colour
        Move(0, R, 2),  # row already holds red
        Move(0, B, 5),
        Move(0, B, -2),
        Move(0, 5, FLOOR),
        Move(0, -1, FLOOR),
        Place(0),  # not a placement decision
    ]
    for move in illegal:
        assert move not in game.legal_moves()
        with pytest.raises(IllegalMove):
            game.apply(move)
        assert snapshot(game) == before, move
    assert_conserved(game)


def test_malformed_draft_moves_are_illegal_and_plain_sequences_play() -> None:
    game = fresh()
    set_table(game, factories=[[1, 1, 1, 0, 0]])
    before = snapshot(game)
    malformed: list[Any] = [
        (0, 1.5, FLOOR),  # a colour that is no colour index
        (0, B, 2.5),
        ("0", B, FLOOR),
        (0, B),
        [0, B, FLOOR, 1],
        None,
        [[0], B, FLOOR],  # unhashable parts
    ]
    for move in malformed:
        with pytest.raises(IllegalMove):
            game.apply(move)
        assert snapshot(game) == before, move
    game.apply([0, B, 1])  # type: ignore[arg-type]  # a list, as parsed JSON gives it
    seat, logged = game.rounds[-1].decisions[-1]
    assert (seat, logged) == (0, Move(0, B, 1)) and type(logged) is Move
    assert game.boards[0].line_count[1] == 1


def test_no_move_after_the_game_is_over() -> None:
    game = Game.new(players=2, seed=2)
    play_out(game, first_policy)
    before = snapshot(game)
    assert game.legal_moves() == []
    moves: list[Move | Place] = [Move(0, 0, FLOOR), Move(CENTRE, 0, FLOOR), Place(0)]
    for move in moves:
        with pytest.raises(IllegalMove):
            game.apply(move)
    assert snapshot(game) == before


def test_bonuses_only_count_once_the_game_is_over() -> None:
    game = fresh()
    set_wall(game, 0, [(r, 0) for r in range(5)])  # a complete column, no complete row
    game.boards[0].score = 4
    close_round(game)
    assert not game.is_over()
    assert game.scores() == [4, 0]  # no bonus during the game
    assert game.breakdowns()[0].columns == 7  # "as if the game ended now"
    assert game.breakdowns()[0].total == 11


def test_rejected_injected_deal_does_not_lose_tiles() -> None:
    """RULES.md Conservation: "At every moment the 100 tiles are exactly accounted for".

    Round 1 deals all 20 blue; the round-2 deal's factory 0 (4 yellow) is drawable,
    factory 1 (4 blue) is not. The round's last move raises IllegalDeal; the game
    must not be left with tiles that are nowhere (factory 0's yellow drawn from the
    bag but never put on the table).
    """
    d1 = [one(B, 4)] * 5
    d2 = [one(Y, 4), one(B, 4), one(Y, 4), one(Y, 4), one(Y, 4)]
    game = Game.new(players=2, seed=0, deals=[d1, d2])
    with pytest.raises(IllegalDeal):
        play_round(game, floor_policy)
    assert sum(game.tile_counts().values()) == 100, game.tile_counts()
    assert_conserved(game)
