"""The public view of a position as plain JSON-ready data (no pydantic).

Azul hides nothing but the bag's order, so this is the whole position. It is the
referee's hot path; :class:`arena.engine.observation.Observation` is the typed
model of the same data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from arena.engine.tables import CODE_COUNTS, COLOURS

if TYPE_CHECKING:
    from arena.engine.game import Game


def observation_dict(game: Game) -> dict[str, Any]:
    """Build the :class:`Observation` data as plain dicts and lists (no validation)."""
    players = []
    for seat, board in enumerate(game.boards):
        wall = board.wall
        players.append(
            {
                "seat": seat,
                "score": board.score,
                "lines": [
                    {
                        "colour": board.line_colour[i] if board.line_count[i] else None,
                        "count": board.line_count[i],
                    }
                    for i in range(5)
                ],
                "wall": [
                    [None if wall[r * 5 + c] < 0 else wall[r * 5 + c] for c in range(5)]
                    for r in range(5)
                ],
                "floor": list(board.floor),
            }
        )
    return {
        "variant": game.variant.value,
        "n_players": game.n_players,
        "round": game.round,
        "round_limit": game.round_limit,
        "decision": game.decision.value,
        "current_player": game.current_player,
        "first_player": game.first_player,
        "next_first_player": game.next_first_player,
        "pending_line": game.pending_line,
        "factories": [list(CODE_COUNTS[code]) for code in game.factories],
        "centre": list(game.centre),
        "marker_in_centre": game.marker_in_centre,
        "bag": list(game.bag),
        "lid": list(game.lid),
        "players": players,
        "end_reason": game.end_reason.value if game.end_reason else None,
        "colours": list(COLOURS),
    }


def observation_json(game: Game) -> bytes:
    """:func:`observation_dict` as compact JSON, the bytes a bot receives as its observation
    (the compiled engine writes the same bytes in C)."""
    return json.dumps(observation_dict(game), separators=(",", ":")).encode()
