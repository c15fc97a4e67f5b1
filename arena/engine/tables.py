"""Constants and precomputed tables that keep the rules engine fast.

The engine never loops over tiles: factories are small integer codes, walls
are bitmasks, moves are interned tuples looked up from tables built once at
import time. Everything here is derived from the rules in ``RULES.md``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

COLOURS: tuple[str, ...] = ("blue", "yellow", "red", "black", "white")
"""Canonical colour order; a colour is its index in this tuple."""

LETTERS = "BYRKW"
"""One letter per colour, for compact text (records, terminal boards)."""

N_COLOURS = 5
TILES_PER_COLOUR = 20
TILES_PER_FACTORY = 4
FACTORIES_BY_PLAYERS: dict[int, int] = {2: 5, 3: 7, 4: 9}

CENTRE = -1
"""``Move.source`` value meaning the centre of the table."""

FLOOR = -1
"""``Move.line`` value meaning the floor line."""

MARKER = 5
"""Floor-line token for the first-player marker (not a colour)."""

FLOOR_SLOTS = 7
FLOOR_PENALTY = (0, 1, 2, 4, 6, 8, 11, 14)
"""Total penalty for a floor holding 0..7 items (slots -1 -1 -2 -2 -2 -3 -3)."""

BONUS_ROW, BONUS_COLUMN, BONUS_COLOUR = 2, 7, 10
DEFAULT_ROUND_LIMIT = 100


class Variant(StrEnum):
    """Which side of the player boards is used."""

    COLOURED = "coloured"
    GRAY = "gray"


class Decision(StrEnum):
    """What kind of choice the current player has to make."""

    DRAFT = "draft"
    """Take tiles of one colour from a source and put them on a line."""
    PLACE = "place"
    """Gray wall only: choose the column for a full pattern line's tile."""
    OVER = "over"
    """The game has ended; nobody is to move."""


class EndReason(StrEnum):
    """Why a game ended, as decided by the rules (the referee adds faults)."""

    NORMAL = "normal"
    ROUND_LIMIT = "round_limit"
    NO_TILES = "no_tiles"


class Move(NamedTuple):
    """A draft move: take all tiles of ``colour`` from ``source``, put them on ``line``.

    ``source`` is a factory index or ``CENTRE`` (-1); ``line`` is a pattern line
    0..4 or ``FLOOR`` (-1).

    >>> Move(2, 0, 1)
    Move(source=2, colour=0, line=1)
    >>> str(Move(CENTRE, 3, FLOOR))
    'C:K>F'
    """

    source: int
    colour: int
    line: int

    def __str__(self) -> str:
        src = "C" if self.source == CENTRE else str(self.source)
        dest = "F" if self.line == FLOOR else str(self.line)
        return f"{src}:{LETTERS[self.colour]}>{dest}"


class Place(NamedTuple):
    """A gray-wall decision: put the tile of the pending full line in ``column``.

    >>> str(Place(3))
    'col3'
    """

    column: int

    def __str__(self) -> str:
        return f"col{self.column}"


AnyMove = Move | Place

# --- factory codes -------------------------------------------------------------
# A factory (or any small multiset of colours) with counts c0..c4, each 0..4, is
# the integer sum(c_k * 5**k). Tables indexed by code answer every question the
# hot loop asks about a factory.


def factory_code(counts: tuple[int, ...] | list[int]) -> int:
    """Encode per-colour counts (each 0..4) as a factory code.

    >>> factory_code([1, 0, 3, 0, 0])
    76
    """
    code = 0
    for k in range(N_COLOURS - 1, -1, -1):
        code = code * 5 + counts[k]
    return code


N_CODES = 5**N_COLOURS
CODE_COUNTS: tuple[tuple[int, ...], ...] = tuple(
    tuple((code // 5**k) % 5 for k in range(N_COLOURS)) for code in range(N_CODES)
)
CODE_COLOURS: tuple[tuple[int, ...], ...] = tuple(
    tuple(k for k in range(N_COLOURS) if counts[k]) for counts in CODE_COUNTS
)
CODE_REST: tuple[tuple[tuple[tuple[int, int], ...], ...], ...] = tuple(
    tuple(
        tuple((k, counts[k]) for k in range(N_COLOURS) if k != c and counts[k])
        for c in range(N_COLOURS)
    )
    for counts in CODE_COUNTS
)
"""``CODE_REST[code][c]``: the (colour, count) pairs that go to the centre when
colour ``c`` is taken from a factory with that code."""

# --- moves ---------------------------------------------------------------------
MAX_FACTORIES = 9
CENTRE_INDEX = MAX_FACTORIES
"""Index of the centre in per-source tables (factories use 0..8)."""


def _line_moves(source: int, colour: int, mask: int) -> tuple[Move, ...]:
    lines = [line for line in range(5) if mask >> line & 1]
    return tuple(MOVE_OF[(source, colour, line)] for line in [*lines, FLOOR])


MOVE_OF: dict[tuple[int, int, int], Move] = {
    (s, c, line): Move(s, c, line)
    for s in [*range(MAX_FACTORIES), CENTRE]
    for c in range(N_COLOURS)
    for line in [*range(5), FLOOR]
}
"""Interned ``Move`` objects, so legal-move lists are built without allocation."""

MOVES_BY_SOURCE: tuple[tuple[tuple[tuple[Move, ...], ...], ...], ...] = tuple(
    tuple(tuple(_line_moves(s, c, mask) for mask in range(32)) for c in range(N_COLOURS))
    for s in [*range(MAX_FACTORIES), CENTRE]
)
"""``MOVES_BY_SOURCE[source_index][colour][line_mask]``: the legal moves taking
``colour`` from that source for a player whose pattern lines in ``line_mask``
can take it (the floor is always a destination)."""

PLACES: tuple[Place, ...] = tuple(Place(col) for col in range(5))

DraftMoves = dict[object, tuple[int, int, int, Move]]
DRAFT_MOVES: dict[int, DraftMoves] = {
    n: {move: (*move, move) for move in MOVE_OF.values() if move.source < n}
    for n in FACTORIES_BY_PLAYERS.values()
}
"""``DRAFT_MOVES[n_factories][move]``: ``(source, colour, line, interned move)`` for every draft
move that names a source, colour and line of a game with that many factories. One look-up
checks that a move is well formed (legality still depends on the position)."""
NEXT_SEAT: dict[int, tuple[int, ...]] = {
    n: tuple((seat + 1) % n for seat in range(n)) for n in FACTORIES_BY_PLAYERS
}
"""``NEXT_SEAT[n_players][seat]``: who plays after ``seat``."""

# --- walls ---------------------------------------------------------------------


def coloured_column(row: int, colour: int) -> int:
    """Column of ``colour`` in ``row`` on the coloured wall.

    >>> [coloured_column(1, c) for c in range(5)]
    [1, 2, 3, 4, 0]
    """
    return (row + colour) % 5


COLOURED_ROWS: tuple[tuple[int, tuple[int, ...]], ...] = tuple(
    (row, tuple(coloured_column(row, colour) for colour in range(N_COLOURS))) for row in range(5)
)
"""Per wall row: ``(row, column of each colour)`` on the coloured wall (the tiling loop)."""


def _run_through(mask: int, i: int) -> int:
    if not mask >> i & 1:
        return 0
    lo = i
    while lo > 0 and mask >> (lo - 1) & 1:
        lo -= 1
    hi = i
    while hi < 4 and mask >> (hi + 1) & 1:
        hi += 1
    return hi - lo + 1


RUN: tuple[tuple[int, ...], ...] = tuple(
    tuple(_run_through(mask, i) for i in range(5)) for mask in range(32)
)
"""``RUN[mask][i]``: length of the unbroken run of set bits through bit ``i``."""

BIT = (1, 2, 4, 8, 16)
FULL = 31
NOT_BIT = tuple(~b for b in BIT)
POW5 = (1, 5, 25, 125, 625)
"""``factory_code`` weight of each colour: adding ``POW5[c]`` adds one tile of colour ``c``."""
CODE_TILES: tuple[int, ...] = tuple(sum(counts) for counts in CODE_COUNTS)
CODE_WIDE: tuple[int, ...] = tuple(
    sum(counts[c] << (5 * c) for c in range(N_COLOURS)) for counts in CODE_COUNTS
)
"""A factory's counts with 5 bits per colour, so that the tiles drawn from one bag add up
in one small int without carries (a bag holds at most 20 tiles of a colour)."""
MASK_COLOURS: tuple[tuple[int, ...], ...] = tuple(
    tuple(c for c in range(N_COLOURS) if mask >> c & 1) for mask in range(32)
)
"""``MASK_COLOURS[mask]``: the colours whose bits are set in ``mask``."""
FREE_COLOURS: tuple[tuple[int, ...], ...] = tuple(MASK_COLOURS[FULL ^ mask] for mask in range(32))
"""``FREE_COLOURS[row_colours]``: the colours an emptied pattern line accepts again."""

# --- dealing randomness -----------------------------------------------------------
# A 64-bit linear congruential generator: its whole state is one int, so copying a
# game copies its future deals for free (``random.Random`` state costs ~25 µs to copy).
# Each tile uses the top 32 bits, which are well distributed for this purpose.

LCG_MUL = 6364136223846793005
LCG_ADD = 1442695040888963407
MASK64 = (1 << 64) - 1


def seed_state(seed: int | None) -> int:
    """The generator state for ``seed`` (any int; None = unpredictable), via SplitMix64."""
    if seed is None:
        import secrets

        z = secrets.randbits(64)
    elif seed.__class__ is int and 0 <= seed <= MASK64:
        z = seed * 0xBF58476D1CE4E5B9 & MASK64  # the loop below, in one step
    else:
        seed = int(seed)
        z = 0 if seed >= 0 else 0xD1B54A32D192ED03  # -n and n give different games
        seed = abs(seed)
        while True:  # fold arbitrarily large seeds 64 bits at a time
            z = (z ^ (seed & MASK64)) * 0xBF58476D1CE4E5B9 & MASK64
            seed >>= 64
            if not seed:
                break
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


PLACE_POINTS: tuple[tuple[int, ...], ...] = tuple(
    tuple(1 if h <= 1 and v <= 1 else (h if h > 1 else 0) + (v if v > 1 else 0) for v in range(6))
    for h in range(6)
)
"""``PLACE_POINTS[h][v]``: points for a tile whose row run is ``h`` and column run ``v``."""

REPEAT: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple((c,) * n for n in range(FLOOR_SLOTS + 1)) for c in range(N_COLOURS + 1)
)
"""``REPEAT[c][n]``: ``n`` floor items of colour ``c`` (appended without building a list)."""

PLACE_OPTIONS: tuple[tuple[Place, ...], ...] = tuple(
    tuple(PLACES[col] for col in MASK_COLOURS[mask]) for mask in range(32)
)
"""``PLACE_OPTIONS[mask]``: the gray-wall placements for the free columns in ``mask``."""

FactoryMoves = tuple[tuple[int, tuple[tuple[Move, ...], ...]], ...]
_FACTORY_CODES = [code for code in range(N_CODES) if CODE_TILES[code] <= TILES_PER_FACTORY]


def _factory_moves(i: int) -> tuple[FactoryMoves, ...]:
    parts: list[FactoryMoves] = [()] * N_CODES
    for code in _FACTORY_CODES:
        parts[code] = tuple((c, MOVES_BY_SOURCE[i][c]) for c in CODE_COLOURS[code])
    return tuple(parts)


FACTORY_MOVES: tuple[tuple[FactoryMoves, ...], ...] = tuple(
    _factory_moves(i) for i in range(MAX_FACTORIES)
)
"""``FACTORY_MOVES[factory][code]``: per colour in the factory, its moves by line mask
(``MOVES_BY_SOURCE`` pre-indexed, so that listing moves does one look-up less per colour)."""
CENTRE_MOVES = MOVES_BY_SOURCE[CENTRE_INDEX]
