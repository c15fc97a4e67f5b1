"""Bot manifests: the ``bot.toml`` that says how to build and run a bot.

The manifest is read once, before any build, from the submitted folder: as a regular
file of bounded size, opened without following a symlink and without blocking (a FIFO
or a link to ``/dev/zero`` is refused, never waited on).  Builds work on a copy, so
nothing a build does changes what the arena reads.
"""

from __future__ import annotations

import os
import shlex
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.engine.tables import Variant
from arena.errors import ArenaError

MANIFEST_NAME = "bot.toml"
MAX_MANIFEST_BYTES = 64 * 1024


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
    build_timeout: float | None = Field(
        default=None, gt=0, description="Seconds the build may take (at most the host's limit)."
    )
    size_limit_mb: int | None = Field(
        default=None,
        gt=0,
        description="MiB the built bot may occupy (at most the host's limit).",
    )
    players: tuple[int, ...] | None = Field(
        default=None,
        description="Player counts the bot can play (e.g. [2]); absent: all of 2, 3 and 4.",
    )
    walls: tuple[Variant, ...] | None = Field(
        default=None,
        description='Walls the bot can play (e.g. ["coloured"]); absent: both.',
    )

    @field_validator("players")
    @classmethod
    def _player_counts(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is not None and (not value or not set(value) <= {2, 3, 4}):
            raise ValueError("players: a non-empty list of 2, 3 and 4")
        return None if value is None else tuple(sorted(set(value)))

    @field_validator("walls")
    @classmethod
    def _walls(cls, value: tuple[Variant, ...] | None) -> tuple[Variant, ...] | None:
        if value is not None and not value:
            raise ValueError('walls: a non-empty list of "coloured" and "gray"')
        return None if value is None else tuple(v for v in Variant if v in value)

    def plays(self, n_players: int, variant: Variant | str) -> bool:
        """Whether the bot declares it can play this game (no declaration: every game)."""
        return (self.players is None or n_players in self.players) and (
            self.walls is None or Variant(variant) in self.walls
        )

    def declared_limits(self) -> str | None:
        """The bot's declared limits in words ("players = [2], walls = ['coloured']"), or
        None when it declares none."""
        parts = []
        if self.players is not None:
            parts.append(f"players = {list(self.players)}")
        if self.walls is not None:
            parts.append(f"walls = {[v.value for v in self.walls]}")
        return ", ".join(parts) or None

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


@dataclass(frozen=True)
class Built:
    """A bot ready to play: launch ``spec``, whose folder is the read-only built copy.

    What a :class:`~arena.referee.seats.BotSeat` launches, and only made by the play
    layer's build (:mod:`arena.play.bots`)."""

    spec: BotSpec
    seconds: float
    ran: bool
    """The build command ran now (False: no build, or the cache had it)."""
    version: str
    """Content hash of the built copy (manifest included): a changed bot is a new version."""
    source: Path
    """The submitted folder (never run from, never written)."""


def read_manifest_bytes(folder: Path) -> bytes:
    """The bytes of ``folder/bot.toml``: a regular file, no symlink, bounded, never blocking."""
    manifest_path = folder / MANIFEST_NAME
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ManifestError(f"{folder}: cannot open the folder ({exc.strerror})") from None
    try:
        fd = os.open(
            MANIFEST_NAME,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            dir_fd=dir_fd,
        )
    except FileNotFoundError:
        raise ManifestError(f"{folder}: no {MANIFEST_NAME} (see bots/python-random)") from None
    except OSError as exc:
        what = "a symlink" if os.path.islink(manifest_path) else exc.strerror
        raise ManifestError(
            f"{manifest_path}: cannot be read ({what}); it must be a regular file"
        ) from None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ManifestError(f"{manifest_path}: not a regular file; it must be one")
        if st.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(
                f"{manifest_path}: {st.st_size} bytes; a manifest may have at most "
                f"{MAX_MANIFEST_BYTES}"
            )
        data = os.read(fd, MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{manifest_path}: longer than {MAX_MANIFEST_BYTES} bytes")
        return data
    except OSError as exc:
        raise ManifestError(f"{manifest_path}: cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def load_bot(folder: Path | str) -> BotSpec:
    """Read ``folder/bot.toml``; raise :class:`ManifestError` with a clear message."""
    path = Path(folder)
    if not path.is_dir():
        raise ManifestError(f"{path}: not a folder (a bot is a folder with a {MANIFEST_NAME})")
    manifest_path = path / MANIFEST_NAME
    raw = read_manifest_bytes(path)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
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
