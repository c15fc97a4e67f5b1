"""Typed faults and the policy that decides what a fault costs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from arena.engine.record import FaultKind

FAULT_KINDS: tuple[FaultKind, ...] = ("timeout", "crash", "malformed", "illegal", "init")


@dataclass(frozen=True)
class Fault:
    """Something a bot did wrong, in plain words, with evidence."""

    kind: FaultKind
    message: str
    last_message: str | None = None
    stderr_tail: str | None = None


@dataclass(frozen=True)
class FaultPolicy:
    """``forfeit`` (strikes=0): the first fault forfeits. ``strikes:N``: N faults are
    forgiven (a random legal move is played instead); the next one forfeits.

    >>> FaultPolicy.parse("strikes:2")
    FaultPolicy(strikes=2)
    >>> str(FaultPolicy.parse("forfeit"))
    'forfeit'
    """

    strikes: int = 0

    @classmethod
    def parse(cls, text: str) -> FaultPolicy:
        if text == "forfeit":
            return cls(0)
        match = re.fullmatch(r"strikes:(\d+)", text)
        if not match:
            raise ValueError(f"fault policy must be 'forfeit' or 'strikes:N', not {text!r}")
        return cls(int(match.group(1)))

    def __str__(self) -> str:
        return "forfeit" if self.strikes == 0 else f"strikes:{self.strikes}"

    def forfeits(self, kind: FaultKind, count: int) -> bool:
        """Does the ``count``-th fault of a seat (this one of ``kind``) forfeit the game?

        A crash or a failed handshake always does: there is no process left to play.
        """
        return kind in ("crash", "init") or count > self.strikes
