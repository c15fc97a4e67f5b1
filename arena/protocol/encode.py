"""Fast encoding of the referee's hot-path message, ``decide``.

``decide`` is sent for every decision, so it is assembled from precomputed
JSON fragments for the options and ``orjson`` of the observation dict, instead
of building and serialising pydantic models (the tests check that both give the
same document).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from arena.engine import Game
from arena.engine.tables import MOVE_OF, PLACES, AnyMove

_OPTION_JSON: dict[AnyMove, bytes] = {
    move: orjson.dumps({"source": move.source, "colour": move.colour, "line": move.line})
    for move in MOVE_OF.values()
}
_OPTION_JSON.update({place: orjson.dumps({"column": place.column}) for place in PLACES})


def encode_decide(
    req_id: int,
    game_id: str,
    seat: int,
    game: Game,
    options: Sequence[AnyMove],
    time_left_ms: int,
) -> bytes:
    """One ``decide`` line (newline included)."""
    head = orjson.dumps(
        {
            "type": "decide",
            "id": req_id,
            "game_id": game_id,
            "seat": seat,
            "decision": game.decision.value,
            "time_left_ms": time_left_ms,
        }
    )
    return b"".join(
        (
            head[:-1],
            b',"options":[',
            b",".join([_OPTION_JSON[m] for m in options]),
            b'],"observation":',
            orjson.dumps(game.observation_dict()),
            b"}\n",
        )
    )


def encode(message: object) -> bytes:
    """Any protocol model as one line (newline included)."""
    dump = getattr(message, "model_dump_json", None)
    if dump is None:
        raise TypeError(f"not a protocol message: {message!r}")
    text: str = dump(exclude_none=False)
    return (text + "\n").encode()
