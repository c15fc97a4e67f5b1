"""Bots as content-addressed bundles: packed once by the parent, built once per node.

A bundle is a deterministic tar (sorted names, zeroed times and owners) of a bot's
submitted folder; its SHA-256 names it. A node unpacks it under its own cache folder
and builds it with :func:`arena.play.bots.ready_bot` (sandboxed, cached by content
hash), so a node never needs the parent's paths.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arena.errors import ArenaError

if TYPE_CHECKING:
    from arena.referee.manifest import Built
    from arena.referee.settings import PlaySettings


class BundleError(ArenaError):
    """A bundle could not be packed or unpacked."""


@dataclass(frozen=True)
class Bundle:
    name: str
    digest: str
    """SHA-256 of ``data``: the bundle's identity on every node."""
    data: bytes


def pack(name: str, folder: Path) -> Bundle:
    """Pack ``folder`` (regular files and folders only; links are refused) reproducibly."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                raise BundleError(f"{folder}: {rel} is a symbolic link or special file")
            info = tar.gettarinfo(str(path), arcname=rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644
            if path.is_file():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    data = buf.getvalue()
    return Bundle(name, hashlib.sha256(data).hexdigest(), data)


def node_cache() -> Path:
    root = os.environ.get("ARENA_BUNDLE_CACHE")
    return Path(root) if root else Path(tempfile.gettempdir()) / "azul-arena-bundles"


def unpack(bundle: Bundle, cache: Path | None = None) -> Path:
    """The bundle's folder on this node (unpacked once; an interrupted unpack is redone)."""
    if hashlib.sha256(bundle.data).hexdigest() != bundle.digest:
        raise BundleError(f"bundle {bundle.name}: damaged in transit (hash mismatch)")
    root = (cache or node_cache()) / bundle.digest
    folder = root / bundle.name
    if (root / ".complete").exists():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=root, prefix=".unpack-"))
    with tarfile.open(fileobj=io.BytesIO(bundle.data)) as tar:
        tar.extractall(work / bundle.name, filter="data")
    with contextlib.suppress(OSError):  # another worker here won the race: same content
        (work / bundle.name).rename(folder)
    (root / ".complete").touch()
    return folder


def build_on_node(bundle: Bundle, settings: PlaySettings) -> Built:
    """Unpack and build ``bundle`` here, in this node's sandbox with the run's declared
    toolchains; return the bot to launch (its read-only built copy)."""
    from arena.play.bots import ready_bot

    return ready_bot(unpack(bundle), settings.sandbox, toolchains=settings.toolchains)
