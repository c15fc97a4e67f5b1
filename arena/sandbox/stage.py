"""Checked copies of untrusted folders: what a bot runs from is never the folder it came in.

A submission (and whatever its build leaves behind) may hold anything a hostile author
can make: FIFOs that block a reader forever, device nodes, symlinks to ``/etc/shadow``
or ``/dev/zero``, setuid programs, world-writable folders, gigabytes of data.  The arena
copies it, without following a link or blocking on a file, into a fresh folder holding
only regular files, folders and symlinks that stay inside, with plain permission bits,
within a size budget; anything else is refused with a message naming the file.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox.spec import MIB, SandboxError

_CHUNK = 1 << 20


class StagingError(SandboxError):
    """A folder breaks the staging rules (special file, outside link, too big...)."""


@dataclass(frozen=True)
class TreeLimits:
    """How much a bot folder (source or built) may hold."""

    max_bytes: int = 256 * MIB
    max_entries: int = 50_000
    max_depth: int = 64

    def describe(self) -> str:
        return f"{self.max_bytes // MIB} MiB, {self.max_entries} files"


@dataclass
class _Budget:
    limits: TreeLimits
    bytes: int = 0
    entries: int = 0

    def count(self, rel: str, size: int = 0) -> None:
        self.entries += 1
        self.bytes += size
        if self.entries > self.limits.max_entries:
            raise StagingError(f"more than {self.limits.max_entries} files and folders")
        if self.bytes > self.limits.max_bytes:
            raise StagingError(
                f"larger than the size limit of {self.limits.max_bytes // MIB} MiB (at {rel!r})"
            )


def link_stays_inside(rel: str, target: str) -> bool:
    """Does a symlink at ``rel`` (relative to the folder) with this target resolve
    inside the folder?  Checked on the text: the link is never followed."""
    if not target or target.startswith("/") or "\0" in target:
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return resolved != ".." and not resolved.startswith("../")


def file_mode(mode: int) -> int:
    """Plain permissions for a staged file: readable, executable if any x bit was set,
    never setuid/setgid/sticky, never writable by group or others."""
    return 0o755 if mode & 0o111 else 0o644


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def copy_checked(src: Path, dest: Path, limits: TreeLimits | None = None) -> int:
    """Copy the folder ``src`` to the new folder ``dest`` under the staging rules.

    Returns the bytes copied.  Raises :class:`StagingError` naming the first offending
    entry; ``dest`` is then removed.  Never follows a symlink inside ``src`` (``src``
    itself is the folder the user named) and never blocks on a FIFO.
    """
    budget = _Budget(limits or TreeLimits())
    try:
        root_fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise StagingError(f"cannot open {src}: {exc.strerror}") from None
    try:
        os.mkdir(dest, 0o755)
        _copy_dir(root_fd, dest, "", budget, 0)
    except BaseException:
        remove_tree(dest)
        raise
    finally:
        os.close(root_fd)
    return budget.bytes


def _copy_dir(dir_fd: int, dest: Path, rel: str, budget: _Budget, depth: int) -> None:
    if depth > budget.limits.max_depth:
        raise StagingError(f"{rel!r}: folders nested deeper than {budget.limits.max_depth}")
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError as exc:
        raise StagingError(f"cannot list {rel or '.'!r}: {exc.strerror}") from None
    for name in names:
        path = f"{rel}{name}"
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise StagingError(f"{path!r}: {exc.strerror}") from None
        mode = st.st_mode
        target = dest / name
        if stat.S_ISLNK(mode):
            link = os.readlink(name, dir_fd=dir_fd)
            if not link_stays_inside(path, link):
                raise StagingError(f"{path!r} is a symlink that leaves the folder ({link!r})")
            budget.count(path, len(link))
            os.symlink(link, target)
        elif stat.S_ISDIR(mode):
            budget.count(path)
            child = _open_checked(dir_fd, name, path, os.O_DIRECTORY, stat.S_ISDIR)
            try:
                os.mkdir(target, 0o755)
                _copy_dir(child, target, path + "/", budget, depth + 1)
            finally:
                os.close(child)
        elif stat.S_ISREG(mode):
            fd = _open_checked(dir_fd, name, path, os.O_NONBLOCK, stat.S_ISREG)
            try:
                _copy_file(fd, target, path, file_mode(os.fstat(fd).st_mode), budget)
            finally:
                os.close(fd)
        else:
            raise StagingError(f"{path!r} is {_kind(mode)}: only files, folders and links")


def _open_checked(dir_fd: int, name: str, path: str, flags: int, ok: object) -> int:
    """Open without following links or blocking, and check what was opened (it may
    have been swapped since the stat)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=dir_fd)
    except OSError as exc:
        raise StagingError(f"{path!r}: cannot open ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not ok(mode):  # type: ignore[operator]
        os.close(fd)
        raise StagingError(f"{path!r} is {_kind(mode)}: only files, folders and links")
    return fd


def _copy_file(fd: int, target: Path, path: str, mode: int, budget: _Budget) -> None:
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            budget.bytes += len(chunk)
            if budget.bytes > budget.limits.max_bytes:
                raise StagingError(
                    f"larger than the size limit of {budget.limits.max_bytes // MIB} MiB "
                    f"(at {path!r})"
                )
            os.write(out, chunk)
        budget.count(path)
    finally:
        os.close(out)
    os.chmod(target, mode)  # umask-proof


def make_read_only(folder: Path) -> None:
    """Files 0444 (0555 if executable), folders 0555: nobody writes a staged bot."""
    for root, dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                os.chmod(path, 0o555 if st.st_mode & 0o111 else 0o444)
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o555)
    os.chmod(folder, 0o555)


def remove_tree(path: Path) -> None:
    """Remove a folder even if it was made read-only (best effort, never follows links)."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(OSError):
            path.unlink()
        return
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                p = os.path.join(root, name)
                if not os.path.islink(p):
                    with contextlib.suppress(OSError):
                        os.chmod(p, 0o700)
    shutil.rmtree(path, ignore_errors=True)
