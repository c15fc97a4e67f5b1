"""Per-process resource limits, applied in the child before the bot's program runs.

We prefer util-linux ``prlimit`` as a tiny exec'd wrapper: it keeps us off
``preexec_fn`` (unsafe with threads, and it forces a slow fork instead of vfork).
The Python fallback is only used when ``prlimit`` is missing.
"""

from __future__ import annotations

import resource
import shutil
from collections.abc import Callable

from arena.sandbox.spec import Limits

PRLIMIT = "/usr/bin/prlimit"


def table(limits: Limits, *, nproc: bool) -> list[tuple[str, int, int, int]]:
    """(prlimit name, resource id, soft, hard) for every limit we set.

    RLIMIT_DATA, not RLIMIT_AS: address-space limits break the JVM, Go and Node, which
    reserve far more virtual memory than they use.  RLIMIT_NPROC counts every process of
    the real uid system-wide, so it is only meaningful (and only safe) with a per-bot uid.
    """
    rows: list[tuple[str, int, int, int]] = [
        ("data", resource.RLIMIT_DATA, limits.memory_bytes, limits.memory_bytes),
        ("nofile", resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        ("fsize", resource.RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes),
        ("core", resource.RLIMIT_CORE, 0, 0),
    ]
    if limits.cpu_seconds is not None:
        # Soft limit sends SIGXCPU (catchable, so a bot can flush); hard limit is SIGKILL.
        rows.append(("cpu", resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1))
    if nproc:
        rows.append(("nproc", resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes))
    return rows


def prlimit_path() -> str | None:
    """Absolute path of prlimit if installed."""
    return shutil.which("prlimit", path="/usr/bin:/bin")


def prlimit_argv(limits: Limits, *, nproc: bool, prlimit: str = PRLIMIT) -> list[str]:
    """Command prefix that sets the limits on itself and execs the rest of the argv."""
    return [
        prlimit,
        *(f"--{n}={soft}:{hard}" for n, _, soft, hard in table(limits, nproc=nproc)),
        "--",
    ]


def preexec(limits: Limits, *, nproc: bool) -> Callable[[], None]:
    """Fallback: a ``preexec_fn`` that calls setrlimit (only async-signal-safe syscalls)."""
    rows = [(rid, soft, hard) for _, rid, soft, hard in table(limits, nproc=nproc)]

    def apply() -> None:
        for rid, soft, hard in rows:
            resource.setrlimit(rid, (soft, hard))

    return apply
