"""The Azul rules engine: positions, legal moves, scoring, records. No I/O.

Bot authors can use it to simulate::

    from arena.engine import Game, Move
    game = Game.new(players=2, variant="gray", seed=1)
    for move in game.legal_moves():
        child = game.copy()
        child.apply(move)
        print(move, child.scores())
"""

from arena.engine.game import Board, Breakdown, Deal, Game, IllegalDeal, IllegalMove
from arena.engine.observation import Observation, PlayerView
from arena.engine.record import GameRecord, parse_move
from arena.engine.replay import Divergence, ReplayError, replay
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
