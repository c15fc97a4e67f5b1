"""Typed faults and the policy that decides what a fault costs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from arena.engine.record import FaultKind


@dataclass(frozen=True)
class Fault:
    """Something a bot did wrong, in plain words, with evidence."""

    kind: FaultKind
    message: str
    last_message: str | None = None
    stderr_tail: str | None = None


class FaultPolicy(BaseModel):
    """``forfeit`` (strikes=0): the first fault forfeits. ``strikes:N``: N faults are
    forgiven (a random legal move is played instead); the next one forfeits.

    Written as text in files and flags (``"forfeit"``, ``"strikes:2"``), validated once.

    >>> FaultPolicy.parse("strikes:2")
    FaultPolicy(strikes=2)
    >>> str(FaultPolicy.parse("forfeit"))
    'forfeit'
    """

    model_config = ConfigDict(frozen=True)

    strikes: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"strikes": cls._strikes(value)}
        return value

    @model_serializer
    def _as_text(self) -> str:
        return str(self)

    @staticmethod
    def _strikes(text: str) -> int:
        if text == "forfeit":
            return 0
        match = re.fullmatch(r"strikes:(\d+)", text)
        if not match:
            raise ValueError(f"fault policy must be 'forfeit' or 'strikes:N', not {text!r}")
        return int(match.group(1))

    @classmethod
    def parse(cls, text: str) -> FaultPolicy:
        return cls(strikes=cls._strikes(text))

    def __str__(self) -> str:
        return "forfeit" if self.strikes == 0 else f"strikes:{self.strikes}"

    def forfeits(self, kind: FaultKind, count: int) -> bool:
        """Does the ``count``-th fault of a seat (this one of ``kind``) forfeit the game?

        A crash or a failed handshake always does: there is no process left to play.
        """
        return kind in ("crash", "init") or count > self.strikes
