"""Plain value types shared by every sandbox module (no behaviour, no imports of siblings)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from arena.errors import ArenaError

MIB = 1024 * 1024
GIB = 1024 * MIB


class Level(enum.Enum):
    """How hard the sandbox insists on its layers."""

    AUTO = "auto"
    """Use every layer that works on this machine; run anyway."""
    STRICT = "strict"
    """Refuse to start unless every layer is on."""
    OFF = "off"
    """Only a process group/session and rlimits: for debugging one's own bots."""


DEFAULT_LEVEL = Level.AUTO
"""The level used when none is asked for: the one owner of that default (play settings,
seats, builds and the benchmarks name it)."""


@dataclass(frozen=True)
class Limits:
    """Resource ceilings for one bot process tree.

    ``cpu_seconds`` is total CPU time per process (RLIMIT_CPU); ``None`` disables it.
    ``memory_bytes`` caps the heap via RLIMIT_DATA (not RLIMIT_AS, which breaks the JVM,
    Go and Node) and, with slack for /tmp and page cache, the memory cgroup.
    ``max_processes`` counts tasks (threads included) for RLIMIT_NPROC and pids.max.
    ``cpu_quota`` is a fraction of one core for the CFS quota.
    """

    cpu_seconds: int | None = 600
    memory_bytes: int = GIB
    max_processes: int = 64
    open_files: int = 256
    file_size_bytes: int = 64 * MIB
    tmp_bytes: int = 64 * MIB
    cpu_quota: float = 1.0

    def __post_init__(self) -> None:
        if self.cpu_seconds is not None and self.cpu_seconds <= 0:
            raise ValueError("cpu_seconds must be positive or None")
        for name in ("memory_bytes", "max_processes", "open_files", "tmp_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.file_size_bytes < 0:
            raise ValueError("file_size_bytes must be >= 0")
        if not 0.01 <= self.cpu_quota <= 64:
            raise ValueError("cpu_quota must be between 0.01 and 64 cores")


@dataclass(frozen=True)
class LayerStatus:
    """One isolation layer as detected on this machine, for `arena doctor`."""

    name: str
    on: bool
    reason: str


class SandboxError(ArenaError, RuntimeError):
    """A bot could not be launched (bad command, unreadable folder, ...). An ``ArenaError``
    so that, where the referee does not turn it into the bot's fault, the user gets a
    message, never a traceback."""


class SandboxUnavailable(SandboxError):
    """Strict level was asked for but some layer is missing; the message says how to fix it."""


class SandboxBusy(SandboxError):
    """An arena-side resource (the per-bot uid pool) is exhausted: never a bot's fault.

    The game in progress cannot be refereed fairly; the run stops, and resuming replays it.
    """

    resumable = True
