"""What the pure-Python engine (``game.py``) and its compiled build (``_game.c``) share.

The exceptions, the plain-data classes of records and scores, and the cold rules that both
engines call rather than spell twice: the checks of an injected deal, the slow path of
``Game.apply`` for a move that is not one of the interned tuples, and ``Game.from_observation``.
Keeping one owner of each means the two engines cannot drift apart on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from arena.engine.tables import (
    CODE_COUNTS,
    FLOOR,
    N_COLOURS,
    PLACES,
    TILES_PER_FACTORY,
    AnyMove,
    Decision,
    EndReason,
    Move,
    factory_code,
)

if TYPE_CHECKING:
    from arena.engine.game import Game
    from arena.engine.observation import Observation

Deal = list[list[int]]
"""The tiles dealt at the start of a round: per factory, counts per colour."""

G = TypeVar("G", bound="Game")


class IllegalMove(ValueError):
    """Raised by :meth:`Game.apply` for a move that is not legal here."""


class IllegalDeal(ValueError):
    """Raised when an injected deal could not have been drawn from the bag/lid."""


@dataclass(frozen=True)
class Breakdown:
    """A player's final score, split into its parts."""

    rounds: int
    """Score at the end of the last round (placements minus floor penalties)."""
    rows: int
    columns: int
    colours: int
    total: int


class RoundLog:
    """What happened in one round, for the game record. Plain data, no validation."""

    __slots__ = ("codes", "decisions", "first_player", "number", "scores")

    def __init__(self, number: int, first_player: int, codes: list[int]) -> None:
        self.number = number
        self.first_player = first_player
        self.codes = codes
        """The factories dealt, as factory codes."""
        self.decisions: list[tuple[int, AnyMove]] = []
        """(seat, move) in the order played."""
        self.scores: list[int] = []

    @property
    def factories(self) -> Deal:
        """The tiles dealt: per factory, counts per colour."""
        return [list(CODE_COUNTS[code]) for code in self.codes]

    @factories.setter
    def factories(self, deal: Deal) -> None:
        self.codes = [factory_code(counts) for counts in deal]

    def copy(self) -> RoundLog:
        log = RoundLog(self.number, self.first_player, self.codes)
        log.decisions = self.decisions[:]
        log.scores = self.scores[:]
        return log


def unlisted_move(
    draft_moves: Mapping[object, tuple[int, int, int, Move]], move: Any
) -> tuple[int, int, int, Move]:
    """``Game.apply``'s slow path: ``(source, colour, line, interned move)`` for a move that is
    not an interned tuple (a list, a tuple of other numbers), or :class:`IllegalMove`."""
    try:
        return draft_moves[move]
    except (KeyError, TypeError):
        pass
    try:
        source, colour, line = move
    except (TypeError, ValueError):
        raise IllegalMove(f"{move!r} is not a draft move") from None
    try:
        return draft_moves[(source, colour, line)]
    except (KeyError, TypeError):
        pass
    if not (isinstance(colour, int) and 0 <= colour < N_COLOURS):
        raise IllegalMove(f"{move!r}: no colour {colour}")
    if not (isinstance(line, int) and FLOOR <= line < 5):
        raise IllegalMove(f"{move!r}: line {line} cannot take that colour")
    raise IllegalMove(f"{move!r}: no factory {source}")


def take_deal(
    deals: Sequence[Deal],
    position: int,
    round_number: int,
    n_factories: int,
    bag: Sequence[int],
    lid: Sequence[int],
) -> tuple[list[int], int, list[int], list[int]]:
    """The injected deal for the round after ``round_number``, checked that it was drawable:
    ``(factory codes, tiles dealt, bag after, lid after)``. Raises :class:`IllegalDeal` (the
    caller's bag and lid are not touched)."""
    number = round_number + 1
    if position >= len(deals):
        raise IllegalDeal(f"no deal given for round {number}")
    deal = [list(f) for f in deals[position]]
    if len(deal) != n_factories:
        raise IllegalDeal(f"round {number}: {len(deal)} factories dealt, not {n_factories}")
    bag, lid = list(bag), list(lid)
    exhausted = False
    for i, counts in enumerate(deal):
        if len(counts) != N_COLOURS or any(not 0 <= k <= 4 for k in counts):
            raise IllegalDeal(f"round {number}: factory {i} is malformed: {counts}")
        need = sum(counts)
        if need and exhausted:
            raise IllegalDeal(f"round {number}: factory {i} dealt after bag and lid ran out")
        if need > TILES_PER_FACTORY:
            raise IllegalDeal(f"round {number}: factory {i} holds {need} tiles")
        rest = list(counts)
        if sum(bag) < need:
            # The whole bag goes in first, then the lid is poured in.
            if any(bag[k] > rest[k] for k in range(N_COLOURS)):
                raise IllegalDeal(
                    f"round {number}: factory {i} {counts} skips tiles still in the "
                    f"bag {bag} (the bag is emptied before the lid is poured in)"
                )
            rest = [rest[k] - bag[k] for k in range(N_COLOURS)]
            bag[:] = lid
            lid[:] = [0] * N_COLOURS
        if any(rest[k] > bag[k] for k in range(N_COLOURS)):
            raise IllegalDeal(
                f"round {number}: factory {i} {counts} is not drawable from bag {bag}"
            )
        for k in range(N_COLOURS):
            bag[k] -= rest[k]
        if need < TILES_PER_FACTORY:
            if any(bag) or any(lid):
                raise IllegalDeal(
                    f"round {number}: factory {i} holds {need} tiles while tiles remain to draw"
                )
            exhausted = True
    codes = [factory_code(counts) for counts in deal]
    return codes, sum(map(sum, deal)), bag, lid


def from_observation(
    cls: type[G], view: Mapping[str, Any] | Observation, seed: int | None = None
) -> G:
    """``Game.from_observation`` for either engine: a game before its first deal
    (``cls._blank``), filled in through whole-attribute assignments that both engines take."""
    obs: Mapping[str, Any] = view.model_dump() if hasattr(view, "model_dump") else view
    g = cast(G, cls._blank(obs["n_players"], obs["variant"], seed, obs["round_limit"]))
    g.bag = list(obs["bag"])
    g.lid = list(obs["lid"])
    g.factories = [factory_code(counts) for counts in obs["factories"]]
    g.centre = list(obs["centre"])
    g.marker_in_centre = obs["marker_in_centre"]
    g.round = obs["round"]
    g.end_reason = EndReason(obs["end_reason"]) if obs.get("end_reason") else None
    g._first_player = obs["first_player"]
    g._next_first = obs.get("next_first_player", obs["first_player"])
    g.current_player = obs["current_player"]
    g.decision = Decision(obs["decision"])
    board_type = type(g.boards[0])
    boards = []
    for view_of in obs["players"]:
        board = board_type()
        lines = view_of["lines"]
        board.line_count = [pattern["count"] for pattern in lines]
        board.line_colour = [
            p["colour"] if p["colour"] is not None and p["count"] else -1 for p in lines
        ]
        for row, cells in enumerate(view_of["wall"]):
            for col, colour in enumerate(cells):
                if colour is not None:
                    board.place(row, col, colour)
        board.floor = list(view_of["floor"])
        board.score = view_of["score"]
        board.refresh_accept()
        boards.append(board)
    g.boards = boards
    codes = [factory_code(counts) for counts in obs["factories"]]
    g.rounds = [RoundLog(obs["round"], obs["first_player"], codes)]
    pending = obs.get("pending_line")
    g._tiling_player = g.current_player
    g._tiling_line = pending or 0
    g._place_options = ()
    if g.decision is Decision.PLACE and pending is not None:
        board = g.boards[g.current_player]
        colour = board.line_colour[pending]
        g._place_options = tuple(PLACES[c] for c in board.gray_columns(pending, colour))
    g._sync_table()
    return g
