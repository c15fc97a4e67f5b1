"""Position-building helpers for the engine rules tests.

Everything here is written from ``/work/shared/RULES.md``, not from the engine:
the wall geometry, the per-colour conservation count, the floor penalties.
Helpers that edit a position always keep the 100 tiles accounted for (tiles
put somewhere are taken out of the bag, or the lid when the bag lacks them;
tiles removed are put back in the bag). They assign whole attributes (``game.bag = ...``,
``board.line_count = ...``) rather than edit lists in place: under the compiled engine those
lists are read-only snapshots, and assignment works on both engines.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from arena.engine import CENTRE, FLOOR, MARKER, Game, Move, Place
from arena.engine.tables import factory_code

N_COLOURS = 5
TILES_PER_COLOUR = 20
B, Y, R, K, W = range(5)
"""Colour indices in the canonical order of RULES.md: blue, yellow, red, black, white."""

FLOOR_SLOT_VALUES = (-1, -1, -2, -2, -2, -3, -3)
"""RULES.md, Phase 2.3: penalty per floor slot, left to right."""


def floor_penalty(items: int) -> int:
    """Total (positive) penalty for a floor holding ``items`` items (marker included)."""
    return -sum(FLOOR_SLOT_VALUES[:items])


# --------------------------------------------------------------- wall geometry


def wall_colour(row: int, col: int) -> int:
    """Coloured wall: cell (row, col) has colour COLOURS[(col - row) mod 5] (RULES.md)."""
    return (col - row) % 5


def wall_col(row: int, colour: int) -> int:
    """Coloured wall: the column of ``colour`` in ``row`` (searched, not computed)."""
    return next(col for col in range(5) if wall_colour(row, col) == colour)


# --------------------------------------------------------------- accounting


def colour_totals(game: Game) -> list[int]:
    """Per colour, the tiles found in bag + lid + factories + centre + lines + walls + floors."""
    totals = [0] * N_COLOURS
    for c in range(N_COLOURS):
        totals[c] += game.bag[c] + game.lid[c] + game.centre[c]
    for counts in game.factory_counts():
        for c in range(N_COLOURS):
            totals[c] += counts[c]
    for board in game.boards:
        for line in range(5):
            if board.line_count[line]:
                totals[board.line_colour[line]] += board.line_count[line]
        for colour in board.wall:
            if colour >= 0:
                totals[colour] += 1
        for item in board.floor:
            if item != MARKER:
                totals[item] += 1
    return totals


def assert_conserved(game: Game) -> None:
    """The conservation invariant, per colour (stronger than 100 in total)."""
    totals = colour_totals(game)
    assert totals == [TILES_PER_COLOUR] * N_COLOURS, (totals, game.render())
    assert sum(game.tile_counts().values()) == 100
    for counts in [game.bag, game.lid, game.centre, *game.factory_counts()]:
        assert all(k >= 0 for k in counts), game.render()
    markers = sum(b.floor.count(MARKER) for b in game.boards) + int(game.marker_in_centre)
    assert markers <= 1, game.render()


def table_tiles(game: Game) -> int:
    return sum(game.centre) + sum(sum(f) for f in game.factory_counts())


# --------------------------------------------------------------- editing positions


def _sync_table(game: Game) -> None:
    """The engine's derived table state after an edit of ``factories``/``centre``."""
    game._sync_table()
    assert game._table_tiles == table_tiles(game)


def _take(game: Game, colour: int, n: int) -> None:
    """Take ``n`` tiles of ``colour`` out of the bag (then the lid) to put them elsewhere."""
    bag, lid = game.bag, game.lid
    from_bag = min(n, bag[colour])
    bag[colour] -= from_bag
    rest = n - from_bag
    if rest > lid[colour]:
        raise AssertionError(f"test set-up: not enough {colour} tiles left in bag and lid")
    lid[colour] -= rest
    game.bag, game.lid = bag, lid


def _give_back(game: Game, colour: int, n: int) -> None:
    bag = game.bag
    bag[colour] += n
    game.bag = bag


def set_table(
    game: Game,
    factories: Sequence[Sequence[int]] | None = None,
    centre: Sequence[int] = (0, 0, 0, 0, 0),
    marker: bool = True,
) -> None:
    """Replace the factories and the centre (``factories=None``: all empty)."""
    for counts in game.factory_counts():
        for c in range(N_COLOURS):
            _give_back(game, c, counts[c])
    for c in range(N_COLOURS):
        _give_back(game, c, game.centre[c])
    n = len(game.factories)
    facs = [list(f) for f in factories] if factories is not None else []
    facs += [[0] * N_COLOURS] * (n - len(facs))
    assert len(facs) == n
    for counts in facs:
        for c in range(N_COLOURS):
            _take(game, c, counts[c])
    for c in range(N_COLOURS):
        _take(game, c, centre[c])
    game.factories = [factory_code(f) for f in facs]
    game.centre = list(centre)
    game.marker_in_centre = marker
    _sync_table(game)


def set_line(game: Game, seat: int, line: int, colour: int, count: int) -> None:
    board = game.boards[seat]
    if board.line_count[line]:
        _give_back(game, board.line_colour[line], board.line_count[line])
    _take(game, colour, count)
    colours, counts = board.line_colour, board.line_count
    colours[line] = colour if count else -1
    counts[line] = count
    board.line_colour, board.line_count = colours, counts
    board.refresh_accept()


def set_wall(game: Game, seat: int, cells: Iterable[tuple[int, int]]) -> None:
    """Coloured wall: fill cells (row, col) with their fixed colour. The score is kept."""
    set_wall_colours(game, seat, [(r, c, wall_colour(r, c)) for r, c in cells])


def set_wall_colours(game: Game, seat: int, cells: Iterable[tuple[int, int, int]]) -> None:
    """Fill wall cells (row, col, colour) (any variant). The score is kept."""
    board = game.boards[seat]
    score = board.score
    for row, col, colour in cells:
        assert board.wall[row * 5 + col] < 0, "test set-up: cell already filled"
        _take(game, colour, 1)
        board.place(row, col, colour)
    board.score = score
    board.refresh_accept()


def set_floor(game: Game, seat: int, items: Sequence[int]) -> None:
    board = game.boards[seat]
    for item in board.floor:
        if item != MARKER:
            _give_back(game, item, 1)
    for item in items:
        if item != MARKER:
            _take(game, item, 1)
    board.floor = list(items)


def keep_in_bag(game: Game, bag: Sequence[int]) -> None:
    """Make the bag hold exactly ``bag``; the other bag/lid tiles go to the lid."""
    new_bag, new_lid = game.bag, game.lid
    for c in range(N_COLOURS):
        total = new_bag[c] + new_lid[c]
        assert bag[c] <= total, "test set-up: not enough tiles for that bag"
        new_bag[c] = bag[c]
        new_lid[c] = total - bag[c]
    game.bag, game.lid = new_bag, new_lid


def fresh(players: int = 2, variant: str = "coloured", seed: int = 0, **kw: Any) -> Game:
    """A new game whose table is emptied (all 100 tiles back in the bag)."""
    game = Game.new(players=players, variant=variant, seed=seed, **kw)
    set_table(game)
    assert_conserved(game)
    return game


# --------------------------------------------------------------- driving games

Policy = Callable[[Game], Move | Place]


def random_policy(rng: random.Random) -> Policy:
    def choose(game: Game) -> Move | Place:
        return rng.choice(game.legal_moves())

    return choose


def first_policy(game: Game) -> Move | Place:
    return game.legal_moves()[0]


def floor_policy(game: Game) -> Move | Place:
    """Always dump on the floor (and take the first column on a gray wall)."""
    moves = game.legal_moves()
    for move in moves:
        if isinstance(move, Move) and move.line == FLOOR:
            return move
    return moves[0]


def play_round(game: Game, policy: Policy = first_policy, limit: int = 1000) -> None:
    """Play until the current round ends (or the game does)."""
    start = game.round
    for _ in range(limit):
        if game.is_over() or game.round != start:
            return
        game.apply(policy(game))
    raise AssertionError("round did not end")


def play_out(game: Game, policy: Policy, limit: int = 5000) -> int:
    """Play to the end; return the number of decisions made."""
    n = 0
    while not game.is_over():
        assert n < limit, "game did not end"
        game.apply(policy(game))
        n += 1
    return n


def centre_move(colour: int, line: int) -> Move:
    return Move(CENTRE, colour, line)


# --------------------------------------------------------------- snapshots


def snapshot(game: Game) -> dict[str, Any]:
    """Everything in a position, public and private, for "unchanged" checks."""
    data = game.observation_dict()
    data["rounds"] = [
        (
            log.number,
            log.first_player,
            [list(f) for f in log.factories],
            list(log.decisions),
            list(log.scores),
        )
        for log in game.rounds
    ]
    data["accept"] = [list(b.accept) for b in game.boards]
    data["masks"] = [
        (list(b.row_cells), list(b.row_colours), list(b.col_rows), list(b.colour_cols))
        for b in game.boards
    ]
    data["private"] = {
        name: getattr(game, name)
        for name in (
            "_deal_pos",
            "_first_player",
            "_next_first",
            "_table_tiles",
            "_tiling_line",
            "_tiling_player",
        )
    }
    data["place_options"] = list(game._place_options)
    data["rng"] = game._rng
    data["legal"] = list(game.legal_moves())
    return data
