"""Processes of a server under test, read from ``/proc`` (Linux)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: it has exited, unreaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def children_with(parent: int, marker: bytes) -> list[int]:
    """The children of ``parent`` whose command line holds ``marker``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and marker in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
    return found
