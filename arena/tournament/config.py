"""Tournament definition: a TOML file and/or CLI flags, validated with clear messages."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from arena.errors import ArenaError
from arena.play.executors import WORKERS_HELP, worker_count
from arena.referee.settings import PlaySettings
from arena.tournament.seating import SeatingMode
from arena.validation import explain_validation

ScheduleKind = Literal["round-robin", "gauntlet", "sampled"]


class ConfigError(ArenaError):
    """An invalid tournament definition; the message names the field."""


class TournamentConfig(PlaySettings):
    """Everything that defines a tournament: which games (bots, schedule) and how they are
    played (the inherited ``PlaySettings``). Paths are resolved to absolute paths."""

    bots: list[Path] = Field(min_length=2, description="Bot folders (each with a bot.toml).")
    players: list[Literal[2, 3, 4]] = Field(default=[2], min_length=1)
    variants: list[Literal["coloured", "gray"]] = Field(default=["coloured"], min_length=1)
    schedule: ScheduleKind = Field(
        default="round-robin",
        description="round-robin: every combination; gauntlet: the challengers against the "
        "field; sampled: --games games chosen where ratings are least certain.",
    )
    challengers: list[Path] = Field(
        default=[], description="gauntlet: the bots (among bots) that play the field."
    )
    games: int | None = Field(
        default=None, ge=1, le=10_000_000, description="sampled: how many games to play."
    )
    seating: SeatingMode = Field(
        default="balanced",
        description="balanced: every bot in every seat and after every other bot equally "
        "often (3p: 6, 4p: 12 seatings per deal); rotations: k seatings (seats only).",
    )
    seeds: int = Field(default=4, ge=1, le=100_000, description="Deals per pairing.")
    master_seed: int = Field(default=1, ge=0)
    workers: int = Field(default=0, ge=0, le=60, description=WORKERS_HELP)
    persistent: bool = Field(default=True, description="Reuse bot processes across games.")
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="local: a process pool on this machine; ray: a Ray cluster "
        "(pip install 'azul-arena[ray]').",
    )
    ray_address: str | None = Field(
        default=None,
        description="ray: 'auto' joins the running cluster, 'ray://host:10001' a remote one; "
        "unset starts a local one.",
    )
    output: Path = Path("results/tournament")
    store: str | None = Field(
        default=None,
        exclude=True,  # never copied into the store or a report: the URL may hold a password
        description="Where the games are stored: a database URL "
        "(postgresql+psycopg://user@host/db); unset: tournament.sqlite in the output folder.",
    )

    @field_validator("players", "variants")
    @classmethod
    def _no_duplicates(cls, value: list[Any]) -> list[Any]:
        if len(set(value)) != len(value):
            raise ValueError("duplicate entries")
        return sorted(value)

    @field_validator("store")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql", "sqlite:")):
            raise ValueError(
                "not a database URL: use postgresql+psycopg://user@host/db "
                "(or leave it unset for tournament.sqlite in the output folder)"
            )
        return value

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
        if self.schedule == "gauntlet":
            if not self.challengers:
                raise ValueError("challengers: a gauntlet needs at least one challenger")
            unknown = [str(c) for c in self.challengers if c not in self.bots]
            if unknown:
                raise ValueError(f"challengers: not among the bots: {', '.join(unknown)}")
            field = len(self.bots) - len(self.challengers)
            short = [k for k in self.players if k - 1 > field]
            if short:
                raise ValueError(
                    f"challengers: {short[0]}-player games need {short[0] - 1} field bots "
                    f"(bots that are not challengers), {field} given"
                )
        elif self.challengers:
            raise ValueError("challengers: only for schedule = 'gauntlet'")
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("ray_address: only with executor = 'ray' (--executor ray)")
        if self.schedule == "sampled" and self.games is None:
            raise ValueError("games: a sampled schedule needs the number of games (--games N)")
        if self.schedule != "sampled" and self.games is not None:
            raise ValueError("games: only for schedule = 'sampled'")
        return self

    @property
    def worker_count(self) -> int:
        return worker_count(self.workers)

    def identity(self) -> dict[str, Any]:
        """What defines the games: a change here means a different tournament.

        Workers, sandbox level, toolchains, Python environments, process mode and the output
        folder may change on resume.
        """
        data = self.model_dump(mode="json")
        for key in (
            "workers",
            "sandbox",
            "toolchains",
            "python_env",
            "persistent",
            "output",
            "executor",
            "ray_address",
        ):
            data.pop(key)
        return data

    @property
    def play(self) -> PlaySettings:
        """Just the play settings (what a worker needs)."""
        return PlaySettings(
            time=self.time,
            fault_policy=self.fault_policy,
            sandbox=self.sandbox,
            round_limit=self.round_limit,
            toolchains=self.toolchains,
            python_env=self.python_env,
        )


def explain(exc: ValidationError, source: str) -> str:
    """A tournament's settings errors, one line each (with "did you mean")."""
    return explain_validation(exc, source, TournamentConfig)


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
        for key in ("bots", "challengers"):
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
    for key in ("bots", "challengers"):
        if key in data and isinstance(data[key], list):
            data[key] = [Path(p).resolve() for p in data[key]]
    if "output" in data:
        data["output"] = Path(data["output"]).resolve()
    else:
        data["output"] = (Path.cwd() / "results" / "tournament").resolve()
    if "bots" not in data:
        raise ConfigError(f"{source}: bots: no bot folders given (a config file or --bots)")
    try:
        return TournamentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(explain(exc, source)) from None
