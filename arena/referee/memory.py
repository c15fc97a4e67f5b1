"""Recognise a bot that died of its memory limit, so the fault says so.

A runtime that runs out of memory dies in its own way: the JVM prints "There is
insufficient memory for the Java Runtime Environment" (on stdout) or an
OutOfMemoryError, Python a MemoryError, C++ std::bad_alloc, Rust "memory allocation of
N bytes failed", Go "runtime: out of memory", Node "JavaScript heap out of memory"; or
the kernel's OOM killer kills it inside its memory cgroup.  Any of those is a crash
caused by the memory limit, whatever line happened to reach stdout first.
"""

from __future__ import annotations

import re
from pathlib import Path

from arena.sandbox import BotProcess, Limits
from arena.sandbox.spec import MIB

_SIGNS = re.compile(
    r"OutOfMemoryError|insufficient memory|out of memory|MemoryError|bad_alloc"
    r"|memory allocation of \d+ bytes failed|Cannot allocate memory|heap out of memory"
    r"|Could not reserve enough space|failed to (?:map|allocate|reserve) \d+ bytes"
    r"|os::commit_memory|errno=12\b",
    re.IGNORECASE,
)
# The JVM echoes JAVA_TOOL_OPTIONS (which names -XX:+ExitOnOutOfMemoryError) on stderr.
_ECHOED_OPTIONS = re.compile(r"^Picked up [A-Z_]+: .*$", re.MULTILINE)


def mentions_memory(*texts: str | bytes | None) -> bool:
    """Whether any text carries a runtime's out-of-memory message."""
    for text in texts:
        if not text:
            continue
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if _SIGNS.search(_ECHOED_OPTIONS.sub("", text)):
            return True
    return False


def oom_killed(proc: BotProcess | None) -> bool:
    """The kernel OOM-killed a task in the bot's memory cgroup (``oom_kill`` in cgroup
    v2's memory.events, or v1's memory.oom_control)."""
    if proc is None:
        return False
    for directory in proc.cgroup_dirs:
        for name in ("memory.events", "memory.oom_control"):
            try:
                events = (Path(directory) / name).read_text()
            except OSError:
                continue
            for line in events.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                    return True
    return False


def memory_message(limits: Limits) -> str:
    """The plain-words cause, naming the limit and how the bot could have known it."""
    mb = limits.memory_bytes // MIB
    return (
        f"the bot ran out of memory (its limit is {mb} MiB, announced in ARENA_MEMORY_MB; "
        "see protocol/SPEC.md, section 'Language notes')"
    )
