"""Launch untrusted bot programs sandboxed, and kill their whole process tree.

Layers (each detected at first use, see ``detect_layers``): bubblewrap namespaces and
mounts, a per-bot uid, rlimits, cgroups, and an own process group/session.  This
package knows nothing about Azul or the bot protocol: it only starts processes,
gives back their pipes, and cleans up after them.
"""

from arena.sandbox.bench import SpawnTiming, measure_spawn
from arena.sandbox.build import BuildLimits, BuildResult, build
from arena.sandbox.layers import check_level, detect_layers, sandbox_warning
from arena.sandbox.process import BotProcess, abort_all, spawn
from arena.sandbox.spec import (
    DEFAULT_LEVEL,
    LayerStatus,
    Level,
    Limits,
    SandboxBusy,
    SandboxError,
    SandboxUnavailable,
)
from arena.sandbox.stage import StagingError, TreeLimits, copy_checked
from arena.sandbox.stderr import StderrSink
from arena.sandbox.uids import UID_BASE

__all__ = [
    "DEFAULT_LEVEL",
    "UID_BASE",
    "BotProcess",
    "BuildLimits",
    "BuildResult",
    "LayerStatus",
    "Level",
    "Limits",
    "SandboxBusy",
    "SandboxError",
    "SandboxUnavailable",
    "SpawnTiming",
    "StagingError",
    "StderrSink",
    "TreeLimits",
    "abort_all",
    "build",
    "check_level",
    "copy_checked",
    "detect_layers",
    "measure_spawn",
    "sandbox_warning",
    "spawn",
]
