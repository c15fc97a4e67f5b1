"""The messages of protocol v1, referee to bot and bot to referee.

Every message is one JSON object on one line, with a ``type`` field. Bots must
ignore fields they do not know (new optional fields are not a version change);
the referee rejects a bot message that does not match these models.

Sequence: ``hello`` -> ``ready``; then per game ``game_start``, any number of
``decide`` -> ``move``, ``game_end``; finally ``quit``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.engine.observation import Observation
from arena.engine.record import FaultKind

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 65536
"""Longest line a bot may write (bytes, newline included); longer is a ``malformed`` fault."""


class _Referee(BaseModel):
    """Messages the referee sends. The models forbid extra fields, so what we write is
    exactly what they say; their published schemas allow extra fields
    (``additionalProperties: true``), since bots must ignore fields a later referee adds
    (SPEC §10): a bot that validates its input with our schemas keeps working."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"additionalProperties": True})


class _Bot(BaseModel):
    """Messages bots send: unknown extra fields are tolerated (forward compatibility);
    types are strict (``"3"``, ``3.0`` or ``true`` is not the integer 3)."""

    model_config = ConfigDict(extra="ignore", strict=True)


class Limits(_Referee):
    init_ms: int = Field(description="Time to answer `hello` with `ready`.")
    move_ms: int = Field(description="Time for one decision (before any time bank).")
    time_bank_ms: int | None = Field(
        default=None,
        description="Per-game time bank, if any: each decision may use what is left of it, "
        "up to move_ms.",
    )
    increment_ms: int = Field(default=0, description="Added to the bank after each decision.")
    max_line_bytes: int = Field(default=MAX_LINE_BYTES, description="Longest accepted bot line.")
    clock: Literal["cpu", "wall"] = Field(
        default="wall",
        description="What a decision is charged: 'cpu' = the CPU time of the bot's whole "
        "process tree while it thinks (a loaded host costs it nothing); 'wall' = elapsed "
        "time from request to reply. Absent (older referees) means 'wall'.",
    )
    wall_ceiling: float | None = Field(
        default=None,
        description="CPU clock only: a decision also ends once the bot has been idle "
        "(sleeping or blocked, not waiting for a CPU) for this many times its time, so a bot "
        "that sleeps or blocks still times out. Null on the wall clock.",
    )
    hard_move_ms: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # absent: move_ms is the only limit
        description="Hard limit of a decision, if any: a decision over it forfeits at once; "
        "one over its `time_left_ms` but within this is accepted and earns a warning. Absent: "
        "`time_left_ms` is the limit (a decision over it is a timeout).",
    )
    warnings: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With hard_move_ms: a seat's N-th warning of a game forfeits it (its "
        "move still counts). Absent: warnings never forfeit.",
    )
    round_start_ms: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Time for your first decision of each round (instead of move_ms), for "
        "per-round set-up; `decide.time_left_ms` says it. Absent: move_ms.",
    )


class Hello(_Referee):
    """First message of a session; the bot answers with `ready`."""

    type: Literal["hello"] = "hello"
    protocol: int = Field(default=PROTOCOL_VERSION, description="Protocol version spoken.")
    limits: Limits
    persistent: bool = Field(
        description="True: several games follow in this process; false: one game, then quit."
    )


class Ready(_Bot):
    """The bot's answer to `hello`."""

    type: Literal["ready"]
    protocol: int = Field(description="Protocol version the bot speaks; must equal hello's.")
    name: str = Field(min_length=1, max_length=64)
    author: str | None = Field(default=None, max_length=128)
    version: str | None = Field(default=None, max_length=64)


class GameStart(_Referee):
    type: Literal["game_start"] = "game_start"
    game_id: str
    seat: int = Field(ge=0, le=3, description="Your seat; seat 0 moves first in round 1.")
    n_players: int = Field(ge=2, le=4)
    variant: Literal["coloured", "gray"]
    players: list[str] = Field(description="Player names by seat.")
    round_limit: int


class DraftOption(_Referee):
    """Take all tiles of `colour` from `source`, put them on pattern `line`."""

    source: int = Field(ge=-1, le=8, description="Factory index, or -1 for the centre.")
    colour: int = Field(ge=0, le=4)
    line: int = Field(ge=-1, le=4, description="Pattern line 0..4, or -1 for the floor.")


class PlaceOption(_Referee):
    """Gray wall: put the pending line's tile in this column of its row."""

    column: int = Field(ge=0, le=4)


class Decide(_Referee):
    """A decision request. Answer with `move` echoing `id`."""

    type: Literal["decide"] = "decide"
    id: int = Field(
        description="Request number, increasing within a game (shared by all seats, so a bot "
        "sees gaps); the reply must echo it."
    )
    game_id: str
    seat: int = Field(ge=0, le=3)
    decision: Literal["draft", "place"]
    options: list[DraftOption] | list[PlaceOption] = Field(
        description="The legal options, deduplicated, in a fixed order."
    )
    time_left_ms: int = Field(
        description="Time you have for this decision: move_ms, round_start_ms for your first "
        "decision of a round, or what a bank leaves; with hard_move_ms, the soft limit (over "
        "it: a warning)."
    )
    observation: Observation


class DraftChoice(_Bot):
    source: int
    colour: int
    line: int


class PlaceChoice(_Bot):
    column: int


class MoveReply(_Bot):
    """The bot's decision: an option by `index` (0-based) or by value (`option`)."""

    type: Literal["move"]
    id: int = Field(description="The `id` of the `decide` being answered.")
    index: int | None = Field(default=None, description="Index into `options`.")
    option: DraftChoice | PlaceChoice | None = Field(
        default=None, description="The chosen option itself (used when `index` is absent)."
    )


class SeatResult(_Referee):
    seat: int
    player: str
    score: int
    rank: int
    fault: FaultKind | None = None


class GameEnd(_Referee):
    type: Literal["game_end"] = "game_end"
    game_id: str
    end_reason: Literal["normal", "round_limit", "no_tiles"]
    results: list[SeatResult]


class Quit(_Referee):
    """The session is over: exit promptly (the process tree is killed after a grace period)."""

    type: Literal["quit"] = "quit"


RefereeMessage = Annotated[Hello | GameStart | Decide | GameEnd | Quit, Field(discriminator="type")]
BotMessage = Annotated[Ready | MoveReply, Field(discriminator="type")]
