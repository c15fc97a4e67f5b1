"""Build bots once, before play and outside the clock."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from arena.referee.manifest import BotSpec
from arena.sandbox import Level, build


class BuildError(Exception):
    """A bot's build command failed; the message carries the end of its output."""


@dataclass(frozen=True)
class Built:
    """A bot ready to play: launch ``spec`` (its folder is what the bot runs from)."""

    spec: BotSpec
    seconds: float
    ran: bool
    version: str
    """Content hash of the bot's folder (manifest included): a changed bot is a new version."""


VERSION_LENGTH = 12


def content_hash(folder: Path) -> str:
    """A short, stable hash of every file's relative path, executable bit and bytes.

    Symlinks count by their target text; timestamps and owners do not count, so the
    same bot copied elsewhere has the same version.
    """
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder).encode("utf-8", "surrogateescape")
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                body = b"L" + os.readlink(path).encode("utf-8", "surrogateescape")
            elif stat.S_ISREG(st.st_mode):
                body = (b"X" if st.st_mode & 0o111 else b"F") + _file_digest(path)
            else:
                body = b"?"
            digest.update(len(rel).to_bytes(4, "big") + rel + body)
    return digest.hexdigest()[:VERSION_LENGTH]


def _file_digest(path: str) -> bytes:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


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


def build_bot(
    spec: BotSpec,
    level: Level = Level.AUTO,
    timeout_s: float = 300.0,
    toolchains: tuple[str, ...] = (),
) -> Built:
    command = spec.manifest.build
    if not command:
        return Built(spec, 0.0, ran=False, version=content_hash(spec.folder))
    key = (spec.folder, command)
    if _built.get(key) == _snapshot(spec.folder):
        return Built(spec, 0.0, ran=False, version=content_hash(spec.folder))
    result = build(command, spec.folder, timeout_s=timeout_s, level=level, ro_paths=toolchains)
    if not result.ok:
        tail = result.output.strip()[-2000:]
        raise BuildError(
            f"building {spec.name} failed ({command!r}, exit status {result.returncode}):\n{tail}"
        )
    _built[key] = _snapshot(spec.folder)
    return Built(spec, result.seconds, ran=True, version=content_hash(spec.folder))
