"""Build bots once, before play and outside the clock."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from arena.referee.manifest import BotSpec
from arena.sandbox import Level, build


class BuildError(Exception):
    """A bot's build command failed; the message carries the end of its output."""


@dataclass(frozen=True)
class Built:
    spec: BotSpec
    seconds: float
    ran: bool


_built: dict[tuple[Path, str], frozenset[tuple[str, int, int]]] = {}
"""Per (folder, command): the folder's files as they were after the last good build in
this process, so repeated runs (benchmarks, tests) do not rebuild an unchanged bot."""


def _snapshot(folder: Path) -> frozenset[tuple[str, int, int]]:
    files = []
    for root, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((os.path.relpath(path, folder), st.st_mtime_ns, st.st_size))
    return frozenset(files)


def build_bot(spec: BotSpec, level: Level = Level.AUTO, timeout_s: float = 300.0) -> Built:
    command = spec.manifest.build
    if not command:
        return Built(spec, 0.0, ran=False)
    key = (spec.folder, command)
    if _built.get(key) == _snapshot(spec.folder):
        return Built(spec, 0.0, ran=False)
    result = build(command, spec.folder, timeout_s=timeout_s, level=level)
    if not result.ok:
        tail = result.output.strip()[-2000:]
        raise BuildError(
            f"building {spec.name} failed ({command!r}, exit status {result.returncode}):\n{tail}"
        )
    _built[key] = _snapshot(spec.folder)
    return Built(spec, result.seconds, ran=True)
