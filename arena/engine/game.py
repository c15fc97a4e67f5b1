"""The authoritative Azul rules engine (``RULES.md``), coloured and gray walls.

A :class:`Game` is a mutable position with a small API, in the spirit of
python-chess's ``Board``: :meth:`Game.legal_moves`, :meth:`Game.apply`,
:meth:`Game.copy`, :meth:`Game.observation`, :meth:`Game.record`. It does no
I/O and knows nothing of bots or processes.

>>> game = Game.new(players=2, seed=7)
>>> game.decision, game.current_player, game.round
(<Decision.DRAFT: 'draft'>, 0, 1)
>>> moves = game.legal_moves()
>>> len(moves) == len(set(moves))
True
>>> game.apply(moves[0])
>>> game.current_player
1
>>> import random
>>> rng = random.Random(1)
>>> while not game.is_over():
...     game.apply(rng.choice(game.legal_moves()))
>>> game.end_reason
<EndReason.NORMAL: 'normal'>
>>> sum(game.tile_counts().values())
100
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from arena.engine.shared import (
    Breakdown,
    Deal,
    IllegalDeal,
    IllegalMove,
    RoundLog,
    take_deal,
    unlisted_move,
)
from arena.engine.shared import from_observation as _from_observation
from arena.engine.tables import (
    BIT,
    BONUS_COLOUR,
    BONUS_COLUMN,
    BONUS_ROW,
    CENTRE,
    CENTRE_MOVES,
    CODE_COUNTS,
    CODE_REST,
    CODE_TILES,
    CODE_WIDE,
    COLOURED_ROWS,
    DEFAULT_ROUND_LIMIT,
    DRAFT_MOVES,
    FACTORIES_BY_PLAYERS,
    FACTORY_MOVES,
    FLOOR,
    FLOOR_PENALTY,
    FLOOR_SLOTS,
    FREE_COLOURS,
    FULL,
    LCG_ADD,
    LCG_MUL,
    MARKER,
    MASK64,
    MASK_COLOURS,
    MOVE_OF,
    N_COLOURS,
    NEXT_SEAT,
    NOT_BIT,
    PLACE_OPTIONS,
    PLACE_POINTS,
    PLACES,
    POW5,
    REPEAT,
    RUN,
    TILES_PER_COLOUR,
    TILES_PER_FACTORY,
    AnyMove,
    Decision,
    DraftMoves,
    EndReason,
    FactoryMoves,
    Place,
    Variant,
    seed_state,
)

# Final aliases of the tables the hot paths read (they were C statics for the former mypyc
# build; for the pure engine they are the same global look-ups).
_CODE_COUNTS: Final = CODE_COUNTS
_CODE_REST: Final = CODE_REST
_NOT_BIT: Final = NOT_BIT
_REPEAT: Final = REPEAT
_BIT: Final = BIT
_FREE_COLOURS: Final = FREE_COLOURS
_PLACE_POINTS: Final = PLACE_POINTS
_RUN: Final = RUN
_COLOURED_ROWS: Final = COLOURED_ROWS
_FLOOR_PENALTY: Final = FLOOR_PENALTY
_PLACE_OPTIONS: Final = PLACE_OPTIONS
_CODE_WIDE: Final = CODE_WIDE
_FACTORY_MOVES: Final = FACTORY_MOVES
_LCG_MUL: Final = LCG_MUL
_LCG_ADD: Final = LCG_ADD
_MASK64: Final = MASK64

if TYPE_CHECKING:
    from arena.engine.observation import Observation
    from arena.engine.record import GameRecord

__all__ = [
    "Board",
    "Breakdown",
    "Deal",
    "Game",
    "IllegalDeal",
    "IllegalMove",
    "RoundLog",
    "moves_json",
]

_DRAFT: Final = Decision.DRAFT
_PLACE: Final = Decision.PLACE
_OVER: Final = Decision.OVER
if (CENTRE, FLOOR, N_COLOURS, FLOOR_SLOTS, MARKER, TILES_PER_FACTORY) != (
    -1,
    -1,
    5,
    7,
    5,
    4,
):  # pragma: no cover
    raise ImportError("Game.apply spells these constants as literals: update it too")
_GRAY: Final = Variant.GRAY
_LOG_BIT: Final = 16
"""Bit of ``Game._owned`` for the current round's log (bits 0-3: the boards)."""
_ALL_OWNED: Final = 31


class Board:
    """One player's board. Bitmasks, so that legality and scoring are table look-ups.

    Read-only for users of :class:`Game`; the game mutates it. A :meth:`Game.copy`
    shares boards with its original until one of them changes a board (copy on
    write), so keep a reference to ``game.boards[seat]`` only while nothing is played.
    """

    __slots__ = (
        "accept",
        "col_rows",
        "colour_cols",
        "floor",
        "line_colour",
        "line_count",
        "row_cells",
        "row_colours",
        "score",
        "wall",
    )

    def __init__(self) -> None:
        self.line_colour = [-1, -1, -1, -1, -1]
        """Colour on each pattern line, -1 when empty."""
        self.line_count = [0, 0, 0, 0, 0]
        self.accept = [31, 31, 31, 31, 31]  # FULL per colour
        """Per colour, the mask of pattern lines that can still take it."""
        self.row_cells = [0, 0, 0, 0, 0]
        """Per wall row, the mask of filled columns."""
        self.row_colours = [0, 0, 0, 0, 0]
        """Per wall row, the mask of colours placed in it."""
        self.col_rows = [0, 0, 0, 0, 0]
        """Per wall column, the mask of filled rows."""
        self.colour_cols = [0, 0, 0, 0, 0]
        """Per colour, the mask of wall columns holding it (gray-wall choices; kept on the
        gray wall only, where the engine reads it: a coloured wall fixes each colour's column)."""
        self.wall = [-1] * 25
        """Colour of each wall cell (row * 5 + column), -1 when empty."""
        self.floor: list[int] = []
        """Floor items left to right: colours, and ``MARKER`` for the marker."""
        self.score = 0

    def copy(self) -> Board:
        b = _new_board(Board)
        b.line_colour = self.line_colour[:]
        b.line_count = self.line_count[:]
        b.accept = self.accept[:]
        b.row_cells = self.row_cells[:]
        b.row_colours = self.row_colours[:]
        b.col_rows = self.col_rows[:]
        b.colour_cols = self.colour_cols[:]
        b.wall = self.wall[:]
        b.floor = self.floor[:]
        b.score = self.score
        return b

    def refresh_accept(self) -> None:
        """Recompute which lines accept which colour (after tiling changed lines/wall)."""
        acc = [0] * N_COLOURS
        for line in range(5):
            colour = self.line_colour[line]
            if self.line_count[line] == line + 1:
                continue
            bit = _BIT[line]
            if colour >= 0:
                acc[colour] |= bit
            else:
                for c in _FREE_COLOURS[self.row_colours[line]]:
                    acc[c] |= bit
        self.accept = acc

    def full_rows(self) -> int:
        """Number of complete horizontal wall rows (the tie-break)."""
        return self.row_cells.count(FULL)

    def breakdown(self) -> Breakdown:
        """Final score with end-of-game bonuses (+2 row, +7 column, +10 colour)."""
        rows = self.full_rows()
        cols = self.col_rows.count(FULL)
        colours = sum(1 for c in range(N_COLOURS) if self.wall.count(c) == 5)
        bonus_rows, bonus_cols = rows * BONUS_ROW, cols * BONUS_COLUMN
        bonus_colours = colours * BONUS_COLOUR
        return Breakdown(
            rounds=self.score,
            rows=bonus_rows,
            columns=bonus_cols,
            colours=bonus_colours,
            total=self.score + bonus_rows + bonus_cols + bonus_colours,
        )

    def place(self, row: int, col: int, colour: int) -> int:
        """Put a tile on the wall and return the points it scores."""
        cells = self.row_cells[row] | _BIT[col]
        self.row_cells[row] = cells
        self.row_colours[row] |= _BIT[colour]
        rows = self.col_rows[col] | _BIT[row]
        self.col_rows[col] = rows
        self.colour_cols[colour] |= _BIT[col]
        self.wall[row * 5 + col] = colour
        return _PLACE_POINTS[_RUN[cells][col]][_RUN[rows][row]]

    def gray_columns(self, row: int, colour: int) -> list[int]:
        """Gray wall: the columns where ``colour`` may go in ``row``."""
        return list(MASK_COLOURS[FULL & ~(self.row_cells[row] | self.colour_cols[colour])])


_new_board: Callable[[type[Board]], Board] = getattr(Board, "__new__")  # noqa: B009
"""``Board`` without ``__init__``, for ``copy`` (spelled through ``getattr`` for the former
mypyc build, which could not compile ``Board.__new__`` spelled out)."""


class Game:
    """A game of Azul for 2-4 players: the full state and the rules.

    Create one with :meth:`new`. Randomness comes only from the seeded generator
    used to deal factories, or from injected ``deals`` (replays, cross-checks).
    """

    __slots__ = (
        "_deal_pos",
        "_deals",
        "_draft_moves",
        "_first_player",
        "_live",
        "_log",
        "_next_first",
        "_next_seat",
        "_owned",
        "_pairs",
        "_place_options",
        "_rng",
        "_table_tiles",
        "_tiling_line",
        "_tiling_player",
        "bag",
        "boards",
        "centre",
        "current_player",
        "decision",
        "end_reason",
        "factories",
        "lid",
        "marker_in_centre",
        "n_players",
        "round",
        "round_limit",
        "rounds",
        "seed",
        "variant",
    )

    n_players: int
    variant: Variant
    seed: int | None
    round_limit: int
    round: int
    """Current round, from 1."""
    current_player: int
    """Seat that must decide now (for ``Decision.PLACE``: whose wall)."""
    decision: Decision
    end_reason: EndReason | None
    factories: list[int]
    """Factory contents as codes (see ``tables.factory_code``); 0 when empty."""
    centre: list[int]
    """Tiles in the centre, per colour."""
    marker_in_centre: bool
    bag: list[int]
    lid: list[int]
    boards: list[Board]
    rounds: list[RoundLog]
    _rng: int
    """State of the dealing generator (see ``tables.seed_state``)."""
    _deals: list[Deal] | None
    _deal_pos: int
    _first_player: int
    _log: list[tuple[int, AnyMove]]
    """``rounds[-1].decisions`` (one look-up instead of three on every move)."""
    _live: list[FactoryMoves]
    """Per factory, its moves table (``FACTORY_MOVES[i][code]``), ``()`` once emptied."""
    _pairs: FactoryMoves
    """``_live`` flattened: (colour, moves by line mask) for every colour of every factory
    still full, in source order. :meth:`legal_moves` walks it in one loop (a quarter faster
    than a loop per factory); a move that empties a factory rebuilds it (``sum(_live, ())``,
    cheaper than ``tuple(chain(...))`` or deleting a slice found by ``index``)."""
    _next_first: int
    _next_seat: tuple[int, ...]
    """``NEXT_SEAT[n_players]``: who plays after each seat."""
    _draft_moves: DraftMoves
    """``DRAFT_MOVES[len(factories)]``: the well-formed draft moves of this game."""
    _owned: int
    """Copy on write: bit ``p`` set when ``boards[p]`` belongs to this game alone,
    ``_LOG_BIT`` when ``rounds[-1]`` does."""
    _place_options: tuple[Place, ...]
    _tiling_player: int
    _tiling_line: int
    _table_tiles: int

    @classmethod
    def new(
        cls,
        players: int = 2,
        variant: Variant | str = Variant.COLOURED,
        seed: int | None = None,
        round_limit: int = DEFAULT_ROUND_LIMIT,
        deals: Sequence[Deal] | None = None,
    ) -> Game:
        """Start a game: seat 0 is the first player of round 1.

        ``deals``, when given, replaces the RNG: round ``r`` uses ``deals[r-1]``,
        which must be drawable from the bag (and lid) at that moment.
        """
        self = cls._blank(players, variant, seed, round_limit)
        if deals is not None:
            self._deals = list(deals)
        self._start_round()
        return self

    @classmethod
    def _blank(
        cls, players: int, variant: Variant | str, seed: int | None, round_limit: int
    ) -> Game:
        """A game before its first deal: what :meth:`new` and ``from_observation`` fill in."""
        if players not in FACTORIES_BY_PLAYERS:
            raise ValueError(f"Azul is played by 2, 3 or 4 players, not {players}")
        if round_limit < 1:
            raise ValueError("round_limit must be at least 1")
        self = _new_game(cls)
        self.n_players = players
        self.variant = _VARIANTS.get(variant) or Variant(variant)
        self.seed = seed
        self.round_limit = round_limit
        self._rng = seed_state(seed)
        self._deals = None
        self._deal_pos = 0
        self._owned = _ALL_OWNED
        self.bag = [TILES_PER_COLOUR] * N_COLOURS
        self.lid = [0] * N_COLOURS
        self.boards = [Board() for _ in range(players)]
        self.factories = [0] * FACTORIES_BY_PLAYERS[players]
        self._draft_moves = DRAFT_MOVES[FACTORIES_BY_PLAYERS[players]]
        self._next_seat = NEXT_SEAT[players]
        self.centre = [0] * N_COLOURS
        self.marker_in_centre = True
        self.rounds = []
        self.round = 0
        self.end_reason = None
        self._first_player = 0
        self._next_first = 0
        self._place_options = ()
        self._tiling_player = 0
        self._tiling_line = 0
        self._table_tiles = 0
        self.current_player = 0
        self.decision = Decision.DRAFT
        return self

    # ------------------------------------------------------------------ queries

    def is_over(self) -> bool:
        return self.decision is _OVER

    @property
    def first_player(self) -> int:
        """First player of the current round."""
        return self._first_player

    @property
    def next_first_player(self) -> int:
        """Who starts the next round (the marker's holder, else the same first player)."""
        return self._next_first

    @property
    def pending_line(self) -> int | None:
        """Gray wall: the pattern line whose tile awaits a column, else None."""
        return self._tiling_line if self.decision is _PLACE else None

    def legal_moves(self) -> list[AnyMove]:
        """All legal decisions for :attr:`current_player`, deduplicated, in a fixed order.

        Draft moves are ordered by source (factories, then the centre), colour,
        then line (0..4, then the floor). Placements are ordered by column.
        """
        if self.decision is _DRAFT:
            acc = self.boards[self.current_player].accept
            out: list[AnyMove] = []
            for c, by_mask in self._pairs:
                out += by_mask[acc[c]]
            c0, c1, c2, c3, c4 = self.centre
            if c0:
                out += _CENTRE_0[acc[0]]
            if c1:
                out += _CENTRE_1[acc[1]]
            if c2:
                out += _CENTRE_2[acc[2]]
            if c3:
                out += _CENTRE_3[acc[3]]
            if c4:
                out += _CENTRE_4[acc[4]]
            return out
        if self.decision is _PLACE:
            return list(self._place_options)
        return []

    def is_legal(self, move: AnyMove) -> bool:
        return move in self.legal_moves()

    def scores(self) -> list[int]:
        """Current scores (final scores, with bonuses, once the game is over)."""
        if self.decision is _OVER:
            return [b.breakdown().total for b in self.boards]
        return [b.score for b in self.boards]

    def breakdowns(self) -> list[Breakdown]:
        """Per player, the score split into rounds and bonuses (as if the game ended now)."""
        return [b.breakdown() for b in self.boards]

    def ranks(self) -> list[int]:
        """Competition ranks (1 = best): score, then complete rows; equal = shared.

        Meaningful once the game is over (bonuses included).
        """
        keys = [(b.breakdown().total, b.full_rows()) for b in self.boards]
        return [1 + sum(1 for other in keys if other > key) for key in keys]

    def tile_counts(self) -> dict[str, int]:
        """Where the 100 tiles are (the conservation invariant checks this sums to 100)."""
        lines = sum(sum(b.line_count) for b in self.boards)
        walls = sum(25 - b.wall.count(-1) for b in self.boards)
        floors = sum(len(b.floor) - b.floor.count(MARKER) for b in self.boards)
        return {
            "bag": sum(self.bag),
            "lid": sum(self.lid),
            "factories": sum(CODE_TILES[code] for code in self.factories),
            "centre": sum(self.centre),
            "lines": lines,
            "walls": walls,
            "floors": floors,
        }

    def factory_counts(self) -> list[list[int]]:
        """Contents of each factory, per colour."""
        return [list(_CODE_COUNTS[code]) for code in self.factories]

    # ------------------------------------------------------------------ actions

    def apply(self, move: AnyMove | Sequence[int]) -> None:
        """Play ``move`` for :attr:`current_player`. Raises :class:`IllegalMove`.

        An illegal move leaves the game unchanged.
        """
        decision = self.decision
        if decision is not _DRAFT:
            if decision is _PLACE:
                self._place(move)
                return
            raise IllegalMove("the game is over")
        try:
            source, colour, line, move = self._draft_moves[move]
        except (KeyError, TypeError):
            source, colour, line, move = unlisted_move(self._draft_moves, move)
        # Literals below: -1 is CENTRE / FLOOR, 7 floor slots.
        player = self.current_player
        board = self.boards[player]
        acc = board.accept
        if line != -1 and not acc[colour] >> line & 1:
            raise IllegalMove(f"{move!r}: line {line} cannot take that colour")
        centre = self.centre
        if source == -1:
            n = centre[colour]
            if not n:
                raise IllegalMove(f"{move!r}: the centre has no such tile")
        else:
            factories = self.factories
            code = factories[source]
            n = _CODE_COUNTS[code][colour]
            if not n:
                raise IllegalMove(f"{move!r}: that factory has no such tile")
        # Legal: from here on the position changes.
        owned = self._owned
        if owned != _ALL_OWNED:
            if not owned >> player & 1:
                board = self._own_board(player)
                acc = board.accept
            if not owned & _LOG_BIT:
                self._own_log()
        self._log.append((player, move))
        if source == -1:
            centre[colour] = 0
            if self.marker_in_centre:
                self.marker_in_centre = False
                self._next_first = player
                if len(board.floor) < 7:
                    board.floor.append(MARKER)
        else:
            for k, count in _CODE_REST[code][colour]:
                centre[k] += count
            factories[source] = 0
            live = self._live
            live[source] = ()
            self._pairs = sum(live, ())
        table = self._table_tiles - n
        self._table_tiles = table
        if line != -1:
            counts = board.line_count
            count = counts[line]
            room = line + 1 - count
            if n >= room:  # the line fills up: no colour fits on it any more
                counts[line] = line + 1
                n -= room
                if count:
                    acc[colour] &= _NOT_BIT[line]
                else:
                    board.line_colour[line] = colour
                    clear = _NOT_BIT[line]
                    a0, a1, a2, a3, a4 = acc
                    board.accept = [a0 & clear, a1 & clear, a2 & clear, a3 & clear, a4 & clear]
            else:
                counts[line] = count + n
                n = 0
                if not count:  # a new colour on the line: only that colour fits on it now
                    board.line_colour[line] = colour
                    clear = _NOT_BIT[line]
                    keep = acc[colour]
                    a0, a1, a2, a3, a4 = acc
                    acc = board.accept = [
                        a0 & clear,
                        a1 & clear,
                        a2 & clear,
                        a3 & clear,
                        a4 & clear,
                    ]
                    acc[colour] = keep
        if n:
            floor = board.floor
            free = 7 - len(floor)
            if n > free:
                self.lid[colour] += n - free
                n = free
            if n:
                floor += _REPEAT[colour][n]
        if table:
            self.current_player = self._next_seat[player]
        else:
            self._tiling_player = 0
            self._tiling_line = 0
            self._continue_tiling()

    def _place(self, move: object) -> None:
        options = self._place_options
        if move not in options:
            raise IllegalMove(f"{move!r} is not a legal placement here")
        move = options[options.index(move)]  # the interned Place, as the log keeps it
        if not self._owned & _LOG_BIT:
            self._own_log()
        self._log.append((self.current_player, move))
        seat = self._tiling_player
        board = self.boards[seat]
        if not self._owned >> seat & 1:
            board = self._own_board(seat)
        line = self._tiling_line
        colours = board.line_colour
        colour = colours[line]
        # Board.place, inline (one call less per placement)
        col: int = move[0]  # one of _place_options: a Place
        col_bit = _BIT[col]
        row_cells = board.row_cells
        cells = row_cells[line] | col_bit
        row_cells[line] = cells
        row_colours = board.row_colours
        placed = row_colours[line] | _BIT[colour]
        row_colours[line] = placed
        col_rows = board.col_rows
        rows = col_rows[col] | _BIT[line]
        col_rows[col] = rows
        board.colour_cols[colour] |= col_bit
        board.wall[line * 5 + col] = colour
        board.score += _PLACE_POINTS[_RUN[cells][col]][_RUN[rows][line]]
        self.lid[colour] += line
        board.line_count[line] = 0
        colours[line] = -1
        bit = _BIT[line]
        acc = board.accept
        for c in _FREE_COLOURS[placed]:
            acc[c] |= bit
        self._tiling_line = line + 1
        self._continue_tiling()

    # ------------------------------------------------------------- copy on write

    def _own_board(self, seat: int) -> Board:
        """``boards[seat]``, copied first if it is still shared with another game."""
        board = self.boards[seat]
        if not self._owned >> seat & 1:
            board = self.boards[seat] = board.copy()
            self._owned |= _BIT[seat]
        return board

    def _own_log(self) -> None:
        log = self.rounds[-1] = self.rounds[-1].copy()
        self._log = log.decisions
        self._owned |= _LOG_BIT

    # --------------------------------------------------------------- wall tiling

    def _empty_line(self, board: Board, line: int) -> None:
        board.line_count[line] = 0
        board.line_colour[line] = -1
        bit = _BIT[line]
        acc = board.accept
        for c in _FREE_COLOURS[board.row_colours[line]]:
            acc[c] |= bit

    def _tile_coloured(self) -> None:
        """Wall tiling on the coloured wall: no choices, all seats in one pass."""
        lid = self.lid
        boards = self.boards
        for seat in range(self.n_players):
            board = boards[seat]
            if not self._owned >> seat & 1:
                board = self._own_board(seat)
            counts = board.line_count
            colours = board.line_colour
            row_cells = board.row_cells
            row_colours = board.row_colours
            col_rows = board.col_rows
            acc = board.accept
            score = board.score
            for line, columns in _COLOURED_ROWS:
                if counts[line] == line + 1:
                    colour = colours[line]
                    col = columns[colour]
                    col_bit = _BIT[col]
                    cells = row_cells[line] | col_bit
                    row_cells[line] = cells
                    placed = row_colours[line] | _BIT[colour]
                    row_colours[line] = placed
                    rows = col_rows[col] | _BIT[line]
                    col_rows[col] = rows
                    board.wall[line * 5 + col] = colour
                    score += _PLACE_POINTS[_RUN[cells][col]][_RUN[rows][line]]
                    lid[colour] += line
                    counts[line] = 0
                    colours[line] = -1
                    bit = _BIT[line]
                    for c in _FREE_COLOURS[placed]:
                        acc[c] |= bit
            floor = board.floor
            if floor:
                score -= _FLOOR_PENALTY[len(floor)]
                if score < 0:
                    score = 0
                for item in floor:
                    if item != 5:  # MARKER
                        lid[item] += 1
                board.floor = []
            board.score = score
        self._tiling_player = self.n_players
        self._tiling_line = 0
        self._end_round()

    def _continue_tiling(self) -> None:
        """Run wall tiling until a gray-wall choice is needed or the round is done."""
        if self.variant is not _GRAY:
            self._tile_coloured()
            return
        lid = self.lid
        n_players = self.n_players
        seat = self._tiling_player
        while seat < n_players:
            board = self.boards[seat]
            if not self._owned >> seat & 1:
                board = self._own_board(seat)
            counts = board.line_count
            colours = board.line_colour
            row_cells = board.row_cells
            colour_cols = board.colour_cols
            line = self._tiling_line
            while line < 5:
                if counts[line] == line + 1:
                    colour = colours[line]
                    options = _PLACE_OPTIONS[FULL & ~(row_cells[line] | colour_cols[colour])]
                    if len(options) == 1:  # no choice: Board.place, inline
                        col = options[0][0]
                        col_bit = _BIT[col]
                        cells = row_cells[line] | col_bit
                        row_cells[line] = cells
                        row_colours = board.row_colours
                        placed = row_colours[line] | _BIT[colour]
                        row_colours[line] = placed
                        col_rows = board.col_rows
                        rows = col_rows[col] | _BIT[line]
                        col_rows[col] = rows
                        colour_cols[colour] |= col_bit
                        board.wall[line * 5 + col] = colour
                        board.score += _PLACE_POINTS[_RUN[cells][col]][_RUN[rows][line]]
                        lid[colour] += line
                        counts[line] = 0
                        colours[line] = -1
                        bit = _BIT[line]
                        acc = board.accept
                        for c in _FREE_COLOURS[placed]:
                            acc[c] |= bit
                    elif not options:
                        self._line_to_floor(board, line, colour)
                    else:
                        self._tiling_player = seat
                        self._tiling_line = line
                        self._place_options = options
                        self.current_player = seat
                        self.decision = _PLACE
                        return
                line += 1
            floor = board.floor
            if floor:
                score = board.score - _FLOOR_PENALTY[len(floor)]
                board.score = score if score > 0 else 0
                for item in floor:
                    if item != 5:  # MARKER
                        lid[item] += 1
                board.floor = []
            seat += 1
            self._tiling_line = 0
        self._tiling_player = seat
        self._place_options = ()
        self._end_round()

    def _line_to_floor(self, board: Board, line: int, colour: int) -> None:
        n = line + 1
        free = FLOOR_SLOTS - len(board.floor)
        put = min(n, free)
        board.floor += [colour] * put
        self.lid[colour] += n - put
        self._empty_line(board, line)

    def _end_round(self) -> None:
        if not self._owned & _LOG_BIT:
            self._own_log()
        boards = self.boards
        self.rounds[-1].scores = [b.score for b in boards]
        complete = False
        for board in boards:
            if FULL in board.row_cells:
                complete = True
                break
        if complete:
            self._finish(EndReason.NORMAL)
        elif self.round >= self.round_limit:
            self._finish(EndReason.ROUND_LIMIT)
        elif not any(self.bag) and not any(self.lid):
            self._finish(EndReason.NO_TILES)
        else:
            self._start_round()

    def _finish(self, reason: EndReason) -> None:
        self.end_reason = reason
        self.decision = _OVER

    # ------------------------------------------------------------------ dealing

    def _start_round(self) -> None:
        n_factories = len(self.factories)
        if self._deals is None:
            codes, dealt = self._draw(n_factories)
        else:
            # Checked first: nothing moves if it raises.
            codes, dealt, bag, lid = take_deal(
                self._deals, self._deal_pos, self.round, n_factories, self.bag, self.lid
            )
            self.bag[:] = bag
            self.lid[:] = lid
            self._deal_pos += 1
        self.round += 1
        self._first_player = self._next_first
        self.current_player = self._next_first
        self.marker_in_centre = True
        self.decision = _DRAFT
        self.factories = codes[:]
        self._live = live = list(map(_moves_of, _FACTORY_MOVES, codes))
        self._pairs = sum(live, ())
        self._table_tiles = dealt
        log = RoundLog(self.round, self._first_player, codes)
        self._log = log.decisions
        self.rounds.append(log)
        self._owned |= _LOG_BIT

    def _draw(self, n_factories: int) -> tuple[list[int], int]:
        """Fill factories one by one with random tiles from the bag (lid poured when empty).

        Each tile is drawn uniformly from the tiles in the bag, laid out as a list so
        that a draw is one index and a swap-remove, not a scan of the counts. One
        generator step fills a factory: its top 48 bits, read as a fraction, pick one of
        the ``t(t-1)(t-2)(t-3)`` ordered draws from ``t`` tiles (below 2**27, so the bias is
        below one in a million), and that number's mixed-radix digits are the four
        indices. Only that pick is big-int arithmetic; the digits are small-int ``%``/``//``.
        The list holds each tile as its own factory code (``POW5[colour]``), so a factory's
        code is the sum of its tiles. Returns the factory codes and the number of tiles dealt.
        """
        bag, lid, state = self.bag, self.lid, self._rng
        tiles = _tile_list(bag)
        total = len(tiles)
        taken = 0
        """Tiles drawn from the current bag, per colour, 5 bits each (see ``CODE_WIDE``)."""
        codes: list[int] = []
        dealt = 0
        left = n_factories
        mul, add, mask, wide, orders = _LCG_MUL, _LCG_ADD, _MASK64, _CODE_WIDE, _ORDERED_DRAWS
        while left:
            # The factories the bag fills without running out: four digits of one draw each.
            fast = total >> 2  # TILES_PER_FACTORY
            if fast > left:
                fast = left
            left -= fast
            dealt += fast << 2
            for _ in range(fast):
                state = (state * mul + add) & mask
                r = (state >> 16) * orders[total] >> 48
                i = r % total
                r //= total
                total -= 1
                code = tiles[i]
                tiles[i] = tiles[total]
                i = r % total
                r //= total
                total -= 1
                code += tiles[i]
                tiles[i] = tiles[total]
                i = r % total
                r //= total
                total -= 1
                code += tiles[i]
                tiles[i] = tiles[total]
                total -= 1  # r < total: the last digit
                code += tiles[r]
                tiles[r] = tiles[total]
                taken += wide[code]
                codes.append(code)
            if not left:
                break
            # Fewer than four tiles in the bag: this factory is filled tile by tile.
            left -= 1
            code = 0
            for _ in range(TILES_PER_FACTORY):
                if not total:
                    # The bag is empty: the lid is poured in and becomes the bag.
                    bag[:] = lid
                    lid[:] = [0] * N_COLOURS
                    tiles = _tile_list(bag)
                    total = len(tiles)
                    taken = 0
                    if not total:
                        break
                state = (state * mul + add) & mask
                i = (state >> 16) * total >> 48
                total -= 1
                tile = tiles[i]
                tiles[i] = tiles[total]
                code += tile
                taken += wide[tile]
                dealt += 1
            codes.append(code)
        if taken:
            b0, b1, b2, b3, b4 = bag
            bag[:] = (
                b0 - (taken & 31),
                b1 - (taken >> 5 & 31),
                b2 - (taken >> 10 & 31),
                b3 - (taken >> 15 & 31),
                b4 - (taken >> 20),
            )
        self._rng = state
        return codes, dealt

    # ------------------------------------------------------------------ copies & views

    def copy(self, seed: int | None = None) -> Game:
        """An independent copy. With ``seed``, future deals use a fresh generator.

        Without it, the copy continues the same random sequence (and deals). Boards
        and the current round's log are shared until either game changes them.
        """
        g = _new_game(Game)
        g.n_players = self.n_players
        g.variant = self.variant
        g.seed = self.seed
        g.round_limit = self.round_limit
        g._rng = self._rng if seed is None else seed_state(seed)
        g._deals = self._deals
        g._deal_pos = self._deal_pos
        g._owned = self._owned = 0
        g.bag = self.bag[:]
        g.lid = self.lid[:]
        g.boards = self.boards[:]
        g.factories = self.factories[:]
        g._draft_moves = self._draft_moves
        g._next_seat = self._next_seat
        g._live = self._live[:]
        g._pairs = self._pairs
        g.centre = self.centre[:]
        g.marker_in_centre = self.marker_in_centre
        g.rounds = self.rounds[:]
        g._log = self._log
        g.round = self.round
        g.end_reason = self.end_reason
        g._first_player = self._first_player
        g._next_first = self._next_first
        g._place_options = self._place_options
        g._tiling_player = self._tiling_player
        g._tiling_line = self._tiling_line
        g._table_tiles = self._table_tiles
        g.current_player = self.current_player
        g.decision = self.decision
        return g

    @classmethod
    def from_observation(
        cls, view: Mapping[str, Any] | Observation, seed: int | None = None
    ) -> Game:
        """Rebuild a game from the public view a bot receives, to simulate from it.

        Azul hides nothing but the bag's order, so the position is exact; future deals
        come from ``seed``. The rebuilt game has no history (its record starts here).
        Works on the plain JSON dict without pydantic (bots run on a bare Python).
        """
        return _from_observation(cls, view, seed)

    def _sync_table(self) -> None:
        """Recompute the state derived from ``factories``, ``centre`` and ``rounds`` after
        they were assigned (``from_observation``, tests that edit positions)."""
        self._table_tiles = sum(CODE_TILES[code] for code in self.factories) + sum(self.centre)
        self._live = live = list(map(_moves_of, _FACTORY_MOVES, self.factories))
        self._pairs = sum(live, ())
        if self.rounds:
            self._log = self.rounds[-1].decisions

    def observation_dict(self) -> dict[str, Any]:
        """The public view as plain JSON-ready data (fast path of :meth:`observation`)."""
        from arena.engine.view import observation_dict

        return observation_dict(self)

    def observation_json(self) -> bytes:
        """The public view as compact JSON bytes (what a bot receives as its observation)."""
        from arena.engine.view import observation_json

        return observation_json(self)

    def observation(self) -> Observation:
        """The public view of the whole position (what bots receive)."""
        from arena.engine.observation import Observation

        return Observation.model_validate(self.observation_dict())

    def record(self, players: Sequence[str] | None = None) -> GameRecord:
        """The game record so far (complete once the game is over)."""
        from arena.engine.record import build_record

        return build_record(self, players)

    def render(self, names: Sequence[str] | None = None) -> str:
        """A compact text picture of the position, for terminals."""
        from arena.engine.render import render

        return render(self, list(names) if names is not None else None)

    def __repr__(self) -> str:
        return (
            f"<Game {self.n_players}p {self.variant.value} round {self.round} "
            f"{self.decision.value} seat {self.current_player} scores {self.scores()}>"
        )


_new_game: Callable[[type[Game]], Game] = getattr(Game, "__new__")  # noqa: B009
_CENTRE_0: Final = CENTRE_MOVES[0]
_CENTRE_1: Final = CENTRE_MOVES[1]
_CENTRE_2: Final = CENTRE_MOVES[2]
_CENTRE_3: Final = CENTRE_MOVES[3]
_CENTRE_4: Final = CENTRE_MOVES[4]
"""Per colour, the centre's moves by line mask (one look-up less per colour in the centre)."""
_moves_of = tuple.__getitem__
"""``_moves_of(FACTORY_MOVES[i], code)``: factory ``i``'s moves table for its contents."""
_VARIANTS: dict[Variant | str, Variant] = {v.value: v for v in Variant}
_ORDERED_DRAWS = tuple(t * (t - 1) * (t - 2) * (t - 3) for t in range(5 * TILES_PER_COLOUR + 1))
"""``_ORDERED_DRAWS[t]``: ordered ways to draw 4 tiles from ``t`` (below 2**27)."""


_RUNS = tuple(tuple((w,) * n for n in range(TILES_PER_COLOUR + 1)) for w in POW5)
"""``_RUNS[c][n]``: ``n`` tiles of colour ``c``, each as its factory code ``POW5[c]`` (a bag
holds at most 20 of a colour)."""


def _tile_list(counts: list[int]) -> list[int]:
    """The tiles of a bag (or lid) given as counts per colour, as a list of tile codes
    (``POW5[colour]``: a factory's code is the sum of its tiles)."""
    c0, c1, c2, c3, c4 = counts
    r = _RUNS
    return [*r[0][c0], *r[1][c1], *r[2][c2], *r[3][c3], *r[4][c4]]


_MOVE_JSON: dict[object, bytes] = {
    **{m: b'{"source":%d,"colour":%d,"line":%d}' % m for m in MOVE_OF.values()},
    **{p: b'{"column":%d}' % p for p in PLACES},
}
"""Each move as a JSON object of its fields (by move: equal tuples find the same text)."""


def moves_json(moves: Sequence[AnyMove]) -> bytes:
    """Moves as a JSON array of objects (``{"source", "colour", "line"}`` for a draft move,
    ``{"column"}`` for a placement): the options a bot receives with each decision.
    Raises ``ValueError`` for anything that is not a move."""
    try:
        return b"[" + b",".join(map(_MOVE_JSON.__getitem__, moves)) + b"]"
    except (KeyError, TypeError):
        bad = next(m for m in moves if not _is_move(m))
        raise ValueError(f"not a move: {bad!r}") from None


def _is_move(item: object) -> bool:
    try:
        return item in _MOVE_JSON
    except TypeError:  # unhashable
        return False
