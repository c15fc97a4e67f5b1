"""Time control: how long a bot may think, and the per-game bank."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from arena.protocol.messages import Limits


class TimeControl(BaseModel):
    """How long a bot may think: the one definition of these settings and their defaults
    (CLI flags, tournament files, workers and the referee all use this model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    init_ms: int = Field(default=5000, gt=0, description="Start-up and handshake time.")
    """Handshake: process start to ``ready``."""
    move_ms: int = Field(default=1000, gt=0, description="Time per decision.")
    """Per decision (the cap when a bank is used too)."""
    bank_ms: int | None = Field(default=None, gt=0, description="Optional per-game bank.")
    """Optional per-game bank; each decision may use what is left of it."""
    increment_ms: int = Field(default=0, ge=0, description="Added to the bank per decision.")
    grace_ms: int = Field(default=50, ge=0, exclude=True)
    """Not announced to bots: absorbs pipe and scheduling jitter so a bot answering
    within its announced time is never timed out by a loaded machine."""

    def limits(self, max_line: int) -> Limits:
        return Limits(
            init_ms=self.init_ms,
            move_ms=self.move_ms,
            time_bank_ms=self.bank_ms,
            increment_ms=self.increment_ms,
            max_line_bytes=max_line,
        )


class Clock:
    """One seat's clock for one game."""

    def __init__(self, control: TimeControl) -> None:
        self.control = control
        self.bank_ms = float(control.bank_ms) if control.bank_ms is not None else None

    def allowance_ms(self) -> int:
        """Time announced for the next decision."""
        if self.bank_ms is None:
            return self.control.move_ms
        return max(0, int(min(self.bank_ms, self.control.move_ms)))

    def charge(self, think_ms: float) -> None:
        if self.bank_ms is not None:
            self.bank_ms = max(0.0, self.bank_ms - think_ms) + self.control.increment_ms
