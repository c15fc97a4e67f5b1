"""Play settings: time control, fault policy, sandbox level, toolchains and round limit,
defined once.

``PlaySettings`` is the single owner of these defaults. ``arena match``/``check-bot`` flags,
the tournament file (``TournamentConfig`` extends it), the worker's jobs and the referee's
``GameSettings`` all come from it; nothing re-parses a setting per game.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arena.engine.tables import DEFAULT_ROUND_LIMIT, Variant
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.faults import FaultPolicy
from arena.referee.referee import GameSettings
from arena.referee.toolchains import validate_python_envs, validate_toolchains
from arena.sandbox import DEFAULT_LEVEL, Level


class PlaySettings(BaseModel):
    """How games are played (not which games): shared by one match and a tournament."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time: TimeControl = Field(default_factory=TimeControl)
    fault_policy: FaultPolicy = Field(
        default_factory=FaultPolicy, description="'forfeit' or 'strikes:N'."
    )
    sandbox: Level = Field(default=DEFAULT_LEVEL, description="auto, strict or off.")
    round_limit: int = Field(default=DEFAULT_ROUND_LIMIT, ge=1)
    toolchains: tuple[str, ...] = Field(
        default=(),
        description="Organiser-declared toolchain folders (e.g. /opt/rust), shown read-only "
        "inside the sandbox with their bin/ on PATH.",
    )
    python_env: tuple[str, ...] = Field(
        default=(),
        description="Organiser-declared Python environments: a virtualenv (its site-packages) "
        "or a folder of modules (e.g. a course's game framework), shown read-only inside the "
        "sandbox and put on every bot's PYTHONPATH, in order. A string or a list.",
    )

    one_core: bool = Field(
        default=True,
        description="On the CPU clock, run each game's referee and bots on one core (a game "
        "is turn-based, so nothing waits for it, and hand-overs stay on the core: about half "
        "the referee's CPU per decision on a VM). false: let the OS place them. The wall "
        "clock never pins (an opponent's CPU use between its turns would slow the bot "
        "thinking on its core).",
    )

    @property
    def pins_core(self) -> bool:
        """Whether a game's referee and bots share one core (see ``one_core``)."""
        return self.one_core and self.time.clock is ClockKind.CPU

    @field_validator("toolchains")
    @classmethod
    def _toolchains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return validate_toolchains(value)

    @field_validator("python_env", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("python_env")
    @classmethod
    def _python_env(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return validate_python_envs(value)

    def game(self, variant: Variant | str, seed: int) -> GameSettings:
        """The referee's settings for one game."""
        return GameSettings(
            variant=Variant(variant),
            seed=seed,
            round_limit=self.round_limit,
            time_control=self.time,
            fault_policy=self.fault_policy,
        )


DEFAULTS = PlaySettings()
"""The defaults, for help texts."""
