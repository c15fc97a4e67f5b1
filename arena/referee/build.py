"""Build bots once, before play and outside the clock."""

from __future__ import annotations

from dataclasses import dataclass

from arena.referee.manifest import BotSpec
from arena.sandbox import Level, build


class BuildError(Exception):
    """A bot's build command failed; the message carries the end of its output."""


@dataclass(frozen=True)
class Built:
    spec: BotSpec
    seconds: float
    ran: bool


def build_bot(spec: BotSpec, level: Level = Level.AUTO, timeout_s: float = 300.0) -> Built:
    command = spec.manifest.build
    if not command:
        return Built(spec, 0.0, ran=False)
    result = build(command, spec.folder, timeout_s=timeout_s, level=level)
    if not result.ok:
        tail = result.output.strip()[-2000:]
        raise BuildError(
            f"building {spec.name} failed ({command!r}, exit status {result.returncode}):\n{tail}"
        )
    return Built(spec, result.seconds, ran=True)
