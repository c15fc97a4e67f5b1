"""Tournament definition: a TOML file and/or CLI flags, validated with clear messages."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from arena.referee.clock import DEFAULT_CLOCK, WALL_CEILING, ClockKind, TimeControl
from arena.referee.faults import FaultPolicy


class ConfigError(Exception):
    """An invalid tournament definition; the message names the field."""


class TimeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    move_ms: int = Field(default=1000, gt=0, description="Time per decision.")
    init_ms: int = Field(default=5000, gt=0, description="Start-up and handshake time.")
    bank_ms: int | None = Field(default=None, gt=0, description="Optional per-game bank.")
    increment_ms: int = Field(default=0, ge=0)
    clock: Literal["cpu", "wall"] = Field(
        default=DEFAULT_CLOCK.value,
        description="cpu: charge the CPU time of the bot's process tree; wall: elapsed time.",
    )
    wall_ceiling: float = Field(
        default=WALL_CEILING, ge=1, description="CPU clocks: wall-time cap, x the allowance."
    )

    def control(self) -> TimeControl:
        return TimeControl(
            init_ms=self.init_ms,
            move_ms=self.move_ms,
            bank_ms=self.bank_ms,
            increment_ms=self.increment_ms,
            clock=ClockKind(self.clock),
            wall_ceiling=self.wall_ceiling,
        )


class TournamentConfig(BaseModel):
    """Everything that defines a tournament. Paths are resolved to absolute paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bots: list[Path] = Field(min_length=2, description="Bot folders (each with a bot.toml).")
    players: list[Literal[2, 3, 4]] = Field(default=[2], min_length=1)
    variants: list[Literal["coloured", "gray"]] = Field(default=["coloured"], min_length=1)
    seeds: int = Field(default=4, ge=1, le=100_000, description="Deals per pairing.")
    master_seed: int = Field(default=1, ge=0)
    round_limit: int = Field(default=100, ge=1)
    time: TimeConfig = Field(default_factory=TimeConfig)
    fault_policy: str = "forfeit"
    sandbox: Literal["auto", "strict", "off"] = "auto"
    workers: int = Field(default=0, ge=0, le=60, description="0 = one per core.")
    persistent: bool = Field(default=True, description="Reuse bot processes across games.")
    output: Path = Path("results/tournament")

    @field_validator("fault_policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        FaultPolicy.parse(value)
        return value

    @field_validator("players", "variants")
    @classmethod
    def _no_duplicates(cls, value: list[Any]) -> list[Any]:
        if len(set(value)) != len(value):
            raise ValueError("duplicate entries")
        return sorted(value)

    @model_validator(mode="after")
    def _enough_bots(self) -> TournamentConfig:
        if len(set(self.bots)) != len(self.bots):
            raise ValueError("bots: the same folder is listed twice")
        too_many = [k for k in self.players if k > len(self.bots)]
        if too_many:
            raise ValueError(
                f"players: {too_many[0]}-player games need at least {too_many[0]} bots, "
                f"{len(self.bots)} given"
            )
        return self

    @property
    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1

    def identity(self) -> dict[str, Any]:
        """What defines the games: a change here means a different tournament.

        Workers, sandbox level, process mode and the output folder may change on resume.
        """
        data = self.model_dump(mode="json")
        for key in ("workers", "sandbox", "persistent", "output"):
            data.pop(key)
        return data


def _explain(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "config"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {field}: {msg}")
    return "\n".join(lines)


def load_config(path: Path | None, overrides: dict[str, Any]) -> TournamentConfig:
    """Read the TOML file (if any) and apply CLI overrides (None values are ignored).

    Relative bot and output paths in the file are relative to the file's folder.
    """
    data: dict[str, Any] = {}
    base = Path.cwd()
    source = "command line"
    if path is not None:
        source = str(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such file") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        base = path.resolve().parent
        for key in ("bots",):
            if isinstance(data.get(key), list):
                data[key] = [base / str(p) for p in data[key]]
        if isinstance(data.get("output"), str):
            data["output"] = base / data["output"]
    time_overrides = overrides.pop("time", None) or {}
    for key, value in overrides.items():
        if value is not None:
            data[key] = value
    if time_overrides:
        merged = dict(data.get("time") or {})
        merged.update({k: v for k, v in time_overrides.items() if v is not None})
        data["time"] = merged
    if "bots" in data and isinstance(data["bots"], list):
        data["bots"] = [Path(p).resolve() for p in data["bots"]]
    if "output" in data:
        data["output"] = Path(data["output"]).resolve()
    else:
        data["output"] = (Path.cwd() / "results" / "tournament").resolve()
    if "bots" not in data:
        raise ConfigError(f"{source}: bots: no bot folders given (a config file or --bots)")
    try:
        return TournamentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, source)) from None
