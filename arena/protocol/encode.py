"""Fast encoding of the referee's hot-path message, ``decide``.

``decide`` is sent for every decision, so it is assembled from precomputed
JSON fragments for the options and ``json.dumps`` of the observation dict,
instead of building and serialising pydantic models (which the tests use to
check that both produce the same document).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from arena.engine import Game
from arena.engine.tables import MOVE_OF, PLACES, AnyMove

_dumps = json.JSONEncoder(separators=(",", ":")).encode

_OPTION_JSON: dict[AnyMove, str] = {
    move: _dumps({"source": move.source, "colour": move.colour, "line": move.line})
    for move in MOVE_OF.values()
}
_OPTION_JSON.update({place: _dumps({"column": place.column}) for place in PLACES})


def encode_decide(
    req_id: int,
    game_id: str,
    seat: int,
    game: Game,
    options: Sequence[AnyMove],
    time_left_ms: int,
) -> bytes:
    """One ``decide`` line (newline included)."""
    head = _dumps(
        {
            "type": "decide",
            "id": req_id,
            "game_id": game_id,
            "seat": seat,
            "decision": game.decision.value,
            "time_left_ms": time_left_ms,
        }
    )
    body = (
        head[:-1]
        + ',"options":['
        + ",".join([_OPTION_JSON[m] for m in options])
        + '],"observation":'
        + _dumps(game.observation_dict())
        + "}\n"
    )
    return body.encode()


def encode(message: object) -> bytes:
    """Any protocol model as one line (newline included)."""
    dump = getattr(message, "model_dump_json", None)
    if dump is None:
        raise TypeError(f"not a protocol message: {message!r}")
    text: str = dump(exclude_none=False)
    return (text + "\n").encode()
