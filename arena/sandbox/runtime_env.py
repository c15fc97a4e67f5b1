"""Tell language runtimes the sandbox's limits through their standard variables.

Inside bubblewrap there is no /sys, so runtimes that size themselves from the host
(the JVM's heap and CPU count, Go's GOMAXPROCS, Node's heap) see the whole machine:
a JVM in a 1 GiB sandbox on a 24 GiB host picks a 6 GiB heap and dies of the memory
limit instead of collecting its garbage.  These variables reach every bot and build;
protocol/SPEC.md documents them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from arena.sandbox.spec import MIB, Limits


def runtime_env(limits: Limits) -> dict[str, str]:
    """Environment variables derived from ``limits`` (the bot's or the build's)."""
    memory_mb = max(1, limits.memory_bytes // MIB)
    cpus = max(1, math.ceil(limits.cpu_quota))
    return {
        "ARENA_MEMORY_MB": str(memory_mb),
        "ARENA_CPUS": str(cpus),
        # JVM: heap at most half the limit (the rest: metaspace, code, threads, GC); one
        # GC/JIT thread per allowed CPU; an OutOfMemoryError ends the process at once.
        "JAVA_TOOL_OPTIONS": (
            f"-XX:MaxRAM={memory_mb}m -XX:MaxRAMPercentage=50 "
            f"-XX:ActiveProcessorCount={cpus} -XX:+ExitOnOutOfMemoryError"
        ),
        "GOMAXPROCS": str(cpus),
        "GOMEMLIMIT": f"{memory_mb * 3 // 4}MiB",
        "NODE_OPTIONS": f"--max-old-space-size={max(16, memory_mb // 2)}",
        "OMP_NUM_THREADS": str(cpus),
    }


def toolchain_path(ro_paths: Sequence[str], base: str) -> dict[str, str]:
    """PATH ``base`` followed by the ``bin`` folder of every declared toolchain."""
    bins = [os.path.join(p, "bin") for p in ro_paths if os.path.isdir(os.path.join(p, "bin"))]
    return {"PATH": ":".join([base, *bins])} if bins else {}
