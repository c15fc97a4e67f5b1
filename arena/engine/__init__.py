"""The Azul rules engine: positions, legal moves, scoring, records. No I/O.

Bot authors can use it to simulate::

    from arena.engine import Game, Move
    game = Game.new(players=2, variant="gray", seed=1)
    for move in game.legal_moves():
        child = game.copy()
        child.apply(move)
        print(move, child.scores())

The core (``Game``, moves, tables) needs only the standard library, so it can be
copied into a bot folder and run on a bare ``/usr/bin/python3``; the pydantic models
(observation, record, replay) are imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from arena.engine.game import Board, Breakdown, Deal, Game, IllegalDeal, IllegalMove
from arena.engine.tables import (
    CENTRE,
    COLOURS,
    FLOOR,
    LETTERS,
    MARKER,
    AnyMove,
    Decision,
    EndReason,
    Move,
    Place,
    Variant,
)

if TYPE_CHECKING:
    from arena.engine.observation import Observation, PlayerView
    from arena.engine.record import GameRecord, parse_move
    from arena.engine.verify import Divergence, ReplayError, replay

_LAZY = {
    "Observation": "arena.engine.observation",
    "PlayerView": "arena.engine.observation",
    "GameRecord": "arena.engine.record",
    "parse_move": "arena.engine.record",
    "Divergence": "arena.engine.verify",
    "ReplayError": "arena.engine.verify",
    "replay": "arena.engine.verify",
}


def __getattr__(name: str) -> Any:
    """Import the pydantic-based parts only when asked for."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'arena.engine' has no attribute {name!r}")


__all__ = [
    "CENTRE",
    "COLOURS",
    "FLOOR",
    "LETTERS",
    "MARKER",
    "AnyMove",
    "Board",
    "Breakdown",
    "Deal",
    "Decision",
    "Divergence",
    "EndReason",
    "Game",
    "GameRecord",
    "IllegalDeal",
    "IllegalMove",
    "Move",
    "Observation",
    "Place",
    "PlayerView",
    "ReplayError",
    "Variant",
    "parse_move",
    "replay",
]
