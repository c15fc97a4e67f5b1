"""The bot's folder as a tar archive, unpacked into a tmpfs inside the sandbox.

A bind mount shows its source in ``/proc/self/mountinfo``: a bot mounted from the build
cache read the cache's host path there.  So the folder is not mounted: the arena packs
it (regular files, folders and inside symlinks; plain modes; no owners, no times) and
the sandbox unpacks it into its own tmpfs at ``/bot`` before the bot starts, so no host
path shows anywhere (mount table, ``/proc/self/*``, environment, error messages).  The
copy costs a tar per spawn (cached per folder while it is unchanged) and counts
towards the bot's memory, like its ``/tmp``.
"""

from __future__ import annotations

import functools
import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

PAGE = 4096
CACHE_BYTES = 64 * 1024 * 1024
"""Bundles larger than this are built per spawn instead of cached."""


@dataclass(frozen=True)
class Bundle:
    """A folder's tar archive and the tmpfs size its unpacked copy needs."""

    data: bytes
    tmpfs_bytes: int
    """Room for the archive and its unpacked files (whole pages), plus a margin."""


def _entries(folder: Path) -> list[tuple[str, os.stat_result]]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            found.append((os.path.relpath(path, folder), os.lstat(path)))
    return found


def _signature(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    return tuple(
        (rel, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino) for rel, st in _entries(folder)
    )


def _pack(folder: Path, read_only: bool) -> Bundle:
    buffer = io.BytesIO()
    used = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for rel, st in _entries(folder):
            info = tarfile.TarInfo(rel)
            info.uid = info.gid = 0
            info.mtime = int(st.st_mtime)
            used += PAGE
            executable = st.st_mode & 0o111
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = 0o555 if read_only else 0o755
                archive.addfile(info)
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(folder / rel)
                info.mode = 0o777
                archive.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                info.mode = (0o555 if executable else 0o444) | (0 if read_only else 0o200)
                with open(folder / rel, "rb") as fh:
                    archive.addfile(info, fh)
                used += -(-st.st_size // PAGE) * PAGE
            # Anything else (a FIFO, a device) is left out: staging refuses them anyway.
    data = buffer.getvalue()
    return Bundle(data, len(data) + used + 1024 * 1024)


@functools.lru_cache(maxsize=16)
def _cached(folder: Path, read_only: bool, signature: object) -> Bundle:
    return _pack(folder, read_only)


def pack(folder: Path, *, read_only: bool = True) -> Bundle:
    """The archive of ``folder``: files 0444/0555 and folders 0555 when ``read_only``
    (a bot), else owner-writable (a build works on its source)."""
    bundle = _cached(folder, read_only, _signature(folder))
    if len(bundle.data) > CACHE_BYTES:
        _cached.cache_clear()  # do not keep a large bot in memory for the next spawn
    return bundle
