"""The public view of a position as typed models: what every bot receives.

Azul has no hidden information except the order of the bag, so the view is
the whole position. :func:`arena.engine.view.observation_dict` builds it as plain
data on the referee's hot path; :class:`Observation` is the typed model that
defines (and generates the JSON Schema of) the same data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.engine.tables import COLOURS
from arena.engine.view import observation_dict

__all__ = ["Observation", "PatternLine", "PlayerView", "observation_dict"]


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PatternLine(_View):
    """Pattern line ``i`` (0-based) holds up to ``i + 1`` tiles of one colour."""

    colour: int | None = Field(description="Colour index 0..4, null when the line is empty.")
    count: int = Field(ge=0, le=5, description="Tiles on the line.")


class PlayerView(_View):
    seat: int = Field(ge=0, le=3)
    score: int = Field(ge=0, description="Score so far (bonuses are added only at the end).")
    lines: list[PatternLine] = Field(min_length=5, max_length=5)
    wall: list[list[int | None]] = Field(
        description="5 rows of 5 cells: the colour placed there, or null when empty.",
    )
    floor: list[int] = Field(
        max_length=7,
        description="Floor items left to right: colour indices, and 5 for the first-player marker.",
    )


class Observation(_View):
    """The full public state of a game at one decision."""

    variant: Literal["coloured", "gray"]
    n_players: int = Field(ge=2, le=4)
    round: int = Field(ge=1, description="Current round, from 1.")
    round_limit: int = Field(ge=1)
    decision: Literal["draft", "place", "over"] = Field(
        description="What the current player decides: a draft move, or (gray wall) a column."
    )
    current_player: int = Field(ge=0, le=3, description="Seat to decide now.")
    first_player: int = Field(ge=0, le=3, description="Seat that started this round.")
    next_first_player: int = Field(
        ge=0,
        le=3,
        description="Seat that starts the next round: the marker's holder, or this round's "
        "first player while the marker is still in the centre.",
    )
    pending_line: int | None = Field(
        description="For decision 'place': the full pattern line whose tile needs a column."
    )
    factories: list[list[int]] = Field(description="Per factory, tile counts per colour.")
    centre: list[int] = Field(min_length=5, max_length=5, description="Centre tiles per colour.")
    marker_in_centre: bool = Field(description="The first-player marker is still in the centre.")
    bag: list[int] = Field(min_length=5, max_length=5, description="Tiles in the bag per colour.")
    lid: list[int] = Field(
        min_length=5, max_length=5, description="Tiles in the box lid (discards) per colour."
    )
    players: list[PlayerView]
    end_reason: Literal["normal", "round_limit", "no_tiles"] | None = None
    colours: list[str] = Field(
        default=list(COLOURS), description="Colour names by index, for convenience."
    )
