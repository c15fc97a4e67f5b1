"""Bot manifests: the ``bot.toml`` that says how to build and run a bot."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.errors import ArenaError

MANIFEST_NAME = "bot.toml"


class ManifestError(ArenaError):
    """A bot folder that cannot be used, with a message for the user."""


class BotManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    command: str = Field(min_length=1, description="Run from the bot folder; split like a shell.")
    build: str | None = Field(default=None, description="Run once before play, outside the clock.")
    language: str | None = None
    description: str | None = None
    author: str | None = None

    @field_validator("command")
    @classmethod
    def _splittable(cls, value: str) -> str:
        try:
            if not shlex.split(value):
                raise ValueError("command is empty")
        except ValueError as exc:
            raise ValueError(f"cannot split command: {exc}") from None
        return value

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)


class BotSpec(BaseModel):
    """A bot folder and its manifest: everything needed to start it."""

    model_config = ConfigDict(frozen=True)

    folder: Path
    manifest: BotManifest

    @property
    def name(self) -> str:
        return self.manifest.name


def load_bot(folder: Path | str) -> BotSpec:
    """Read ``folder/bot.toml``; raise :class:`ManifestError` with a clear message."""
    path = Path(folder)
    if not path.is_dir():
        raise ManifestError(f"{path}: not a folder (a bot is a folder with a {MANIFEST_NAME})")
    manifest_path = path / MANIFEST_NAME
    try:
        data = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: no {MANIFEST_NAME} (see bots/python-random)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{manifest_path}: not valid TOML ({exc})") from None
    try:
        manifest = BotManifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'manifest'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ManifestError(f"{manifest_path}: {problems}") from None
    return BotSpec(folder=path.resolve(), manifest=manifest)


def unique_names(specs: list[BotSpec]) -> None:
    """Two bots with the same name would be indistinguishable in results."""
    seen: dict[str, Path] = {}
    for spec in specs:
        if spec.name in seen and seen[spec.name] != spec.folder:
            raise ManifestError(
                f"two different bots are named {spec.name!r}: {seen[spec.name]} and {spec.folder}"
            )
        seen[spec.name] = spec.folder
