"""Bot protocol v1: JSON Lines over stdin/stdout. These models are the single source
of the JSON Schemas in the top-level ``protocol/`` folder."""

from arena.protocol.messages import (
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    BotMessage,
    Decide,
    DraftOption,
    GameEnd,
    GameStart,
    Hello,
    Limits,
    MoveReply,
    PlaceOption,
    Quit,
    Ready,
    RefereeMessage,
)

__all__ = [
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "BotMessage",
    "Decide",
    "DraftOption",
    "GameEnd",
    "GameStart",
    "Hello",
    "Limits",
    "MoveReply",
    "PlaceOption",
    "Quit",
    "Ready",
    "RefereeMessage",
]
