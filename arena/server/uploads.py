"""Unpack an uploaded bot archive (.zip or .tar.gz) from a stranger, safely.

An upload is the first thing the server touches that an untrusted author made.  The
archive is recognised by its content (never its name) and every member is checked
before anything is written: no path that leaves the folder (``..``, absolute paths,
drive letters, backslashes), no device, FIFO, socket, hard link or setuid bit, no
symlink that resolves outside (following the archive's other links), no duplicate
name, no name that is not UTF-8 or holds control characters, at most ``max_files``
entries.  Sizes are checked as declared *and* as actually written while streaming,
so a zip bomb stops at the cap, and an unusual compression ratio is refused on its
own.  Symlinks are created last, so no file is ever written through one.  Archives
inside the archive are kept as plain files, never expanded (the arena never unpacks
recursively, so 42.zip-style nesting costs only its own bytes; a build that expands it
is bounded by the build sandbox).  The bot folder is the archive's top level or its
single top-level folder, and must hold a valid ``bot.toml``.  The rules match the
staging rules of :mod:`arena.sandbox.stage`, which copies the result again before any
build.
"""

from __future__ import annotations

import gzip
import lzma
import os
import re
import secrets
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from arena.competition.config import UploadLimits
from arena.errors import ArenaError
from arena.play.build import tree_digest
from arena.referee.manifest import (
    MANIFEST_NAME,
    BotManifest,
    BotSpec,
    ManifestError,
    load_bot,
)
from arena.sandbox.stage import file_mode, remove_tree
from arena.textsafe import visible

MIB = 1 << 20
CHUNK = 1 << 16
RATIO_FLOOR_BYTES = 8 * MIB
"""The compression-ratio rule applies only past this many unpacked bytes (a small
table of zeros is not a bomb)."""
HEADER_BYTES_PER_ENTRY = 4096
HEADER_SLACK_BYTES = MIB
"""Tar headers, pax records and padding may take this much of the decompressed stream
beyond the files' bytes (a real header is 512 bytes, a long name's pax record a few
hundred more); a pax header claiming a gigabyte is refused at about 1 MiB."""
MAX_DEPTH = 64
MAX_NAME_BYTES = 1024
MAX_LINK_HOPS = 40
SKIPPED_TOP = frozenset({"__MACOSX"})
"""macOS Finder's resource-fork folder: never part of a bot, silently left out."""


class UploadRejected(ArenaError):
    """The upload cannot be a bot; ``reason`` says why, in words for its author."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def show(name: str) -> str:
    """An author-controlled name, quoted, with control characters made visible."""
    text = visible(name)
    if len(text) > 120:
        text = text[:120] + "…"
    return repr(text)


# ---------------------------------------------------------------- names and links

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\udc80-\udcff]")


def clean_name(raw: str) -> str | None:
    """The member's path relative to the folder (``a/b``), or None for the folder
    itself (``./``).  Raises :class:`UploadRejected` for a name that could leave the
    folder or is not plain UTF-8 text."""
    if _SURROGATE.search(raw):
        raise UploadRejected(f"{show(raw)}: the name is not UTF-8")
    if _CONTROL.search(raw):
        raise UploadRejected(f"{show(raw)}: the name holds control characters")
    if "\\" in raw:
        raise UploadRejected(
            f"{show(raw)}: backslash in a name (a Windows path?); archives use '/' between folders"
        )
    if raw.startswith("/"):
        raise UploadRejected(f"{show(raw)}: absolute path; names must be relative to the folder")
    if _DRIVE.match(raw):
        raise UploadRejected(f"{show(raw)}: a drive letter; names must be relative to the folder")
    if len(raw.encode("utf-8")) > MAX_NAME_BYTES:
        raise UploadRejected(f"{show(raw)}: name longer than {MAX_NAME_BYTES} bytes")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UploadRejected(f"{show(raw)}: '..' in a name would leave the folder (zip-slip)")
    if len(parts) > MAX_DEPTH:
        raise UploadRejected(f"{show(raw)}: folders nested deeper than {MAX_DEPTH}")
    if any(len(p.encode("utf-8")) > 255 for p in parts):
        raise UploadRejected(f"{show(raw)}: a path component longer than 255 bytes")
    return "/".join(parts) or None


def check_link_target(path: str, target: str) -> None:
    """A link target must be relative, non-empty, printable UTF-8 text."""
    if not target:
        raise UploadRejected(f"{show(path)}: a symlink with an empty target")
    if len(target.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise UploadRejected(f"{show(path)}: a symlink target longer than {MAX_NAME_BYTES} bytes")
    if _SURROGATE.search(target) or _CONTROL.search(target):
        raise UploadRejected(f"{show(path)}: a symlink whose target is not printable UTF-8")
    if target.startswith("/") or _DRIVE.match(target) or "\\" in target:
        raise UploadRejected(
            f"{show(path)} is a symlink to an absolute path ({show(target)}): it leaves the folder"
        )


def link_resolves_inside(path: str, links: dict[str, str]) -> bool:
    """Does the link at ``path`` resolve inside the folder, following the archive's
    own links on the way (``a -> b/..`` with ``b -> ..`` leaves it, though each link's
    text alone does not)?  Dangling links inside are allowed, as staging allows them."""
    hops = 0

    def walk(base: list[str], target: str) -> list[str] | None:
        nonlocal hops
        out = list(base)
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not out:
                    return None
                out.pop()
                continue
            out.append(part)
            here = "/".join(out)
            if here in links:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    return None
                resolved = walk(out[:-1], links[here])
                if resolved is None:
                    return None
                out = resolved
        return out

    parent = path.split("/")[:-1]
    return walk(parent, links[path]) is not None


# ---------------------------------------------------------------- the unpacker


class _Unpacker:
    """Writes checked members into ``dest`` (a fresh folder), keeping the budgets.

    ``dry``: the first pass, which checks every member (and reads no file data) before
    the second pass writes anything: a 100k-file archive is refused without creating
    10k files first."""

    def __init__(
        self, dest: Path, limits: UploadLimits, archive_bytes: int, *, dry: bool = False
    ) -> None:
        self.dest = dest
        self.dry = dry
        self.virtual_root = f"/nonexistent-{secrets.token_hex(8)}"
        self.limits = limits
        self.archive_bytes = max(archive_bytes, 1)
        self.kinds: dict[str, str] = {}
        self.explicit: set[str] = set()
        self.links: dict[str, str] = {}
        self.entries = 0
        self.written = 0
        self.skipped = 0
        """Bytes of members left out (``__MACOSX/``) that tarfile reads past."""

    # budgets
    def count_entry(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise UploadRejected(
                f"more than {self.limits.max_files} files, folders and links in the archive"
            )

    def check_expansion(self, total: int, what: str = "unpacks to") -> None:
        if total > self.limits.unpacked_bytes:
            raise UploadRejected(
                f"the archive {what} more than {self.limits.unpacked_mb} MiB "
                f"(the limit for a bot's source)"
            )
        if total > RATIO_FLOOR_BYTES and total > self.limits.max_ratio * self.archive_bytes:
            raise UploadRejected(
                f"the archive expands more than {self.limits.max_ratio} times "
                f"({self.archive_bytes} bytes to over {total // MIB} MiB): a zip bomb? "
                "Ship compressible data as a build step instead"
            )

    # the tree
    def claim(self, path: str, kind: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            have = self.kinds.get(parent)
            if have is None:
                self.kinds[parent] = "dir"
                self._mkdir(parent)
            elif have != "dir":
                raise UploadRejected(f"{show(parent)} is both a {have} and a folder")
        have = self.kinds.get(path)
        if have is not None and not (kind == "dir" and have == "dir" and path not in self.explicit):
            raise UploadRejected(f"{show(path)} appears twice in the archive")
        self.kinds[path] = kind
        self.explicit.add(path)

    def _mkdir(self, path: str) -> None:
        if self.dry:
            return
        try:
            os.mkdir(self.dest / path, 0o755)
            os.chmod(self.dest / path, 0o755)  # umask-proof
        except FileExistsError:
            pass
        except OSError as exc:
            raise ArenaError(f"cannot unpack an upload into {self.dest}: {exc.strerror}") from None

    def add_dir(self, path: str, mode: int) -> None:
        # A setgid folder (group-shared checkouts) is harmless: created 0755 anyway.
        self.claim(path, "dir")
        self._mkdir(path)

    def add_file(
        self, path: str, mode: int, declared: int, chunks: Callable[[], Iterator[bytes]]
    ) -> None:
        check_mode(path, mode)
        if declared < 0:
            raise UploadRejected(f"{show(path)}: a negative size")
        self.check_expansion(self.written + declared, "declares that it unpacks to")
        self.claim(path, "file")
        if self.dry:  # the data is not read (tarfile reads past it)
            self.written += declared
            return
        perm = file_mode(mode)
        try:
            fd = os.open(
                self.dest / path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                perm,
            )
        except OSError as exc:
            raise ArenaError(f"cannot unpack an upload into {self.dest}: {exc.strerror}") from None
        actual = 0
        try:
            for chunk in chunks():
                actual += len(chunk)
                self.written += len(chunk)
                if actual > declared:
                    raise UploadRejected(
                        f"{show(path)} holds more than the {declared} bytes it declares"
                    )
                self.check_expansion(self.written)
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    raise ArenaError(
                        f"cannot unpack an upload into {self.dest}: {exc.strerror}"
                    ) from None
        finally:
            os.close(fd)
        if actual != declared:
            raise UploadRejected(f"{show(path)} declares {declared} bytes but holds {actual}")
        os.chmod(self.dest / path, perm)  # umask-proof

    def add_link(self, path: str, target: str) -> None:
        check_link_target(path, target)
        self.claim(path, "link")
        self.links[path] = target

    def finish(self) -> Path:
        if not self.kinds:
            raise UploadRejected("the archive is empty")
        for path in sorted(self.links):
            if not link_resolves_inside(path, self.links):
                raise UploadRejected(
                    f"{show(path)} is a symlink that leaves the folder ({show(self.links[path])})"
                )
        for path, target in sorted(self.links.items()):
            if self.dry:
                break
            try:
                os.symlink(target, self.dest / path)
            except OSError as exc:
                raise ArenaError(
                    f"cannot unpack an upload into {self.dest}: {exc.strerror}"
                ) from None
        return self.bot_folder()

    def bot_folder(self) -> Path:
        if self.kinds.get(MANIFEST_NAME) == "file":
            return self.dest
        if MANIFEST_NAME in self.kinds:
            raise UploadRejected(f"{MANIFEST_NAME} must be a regular file")
        top = [p for p in self.kinds if "/" not in p]
        if len(top) == 1 and self.kinds[top[0]] == "dir":
            if self.kinds.get(f"{top[0]}/{MANIFEST_NAME}") == "file":
                return self.dest / top[0]
            raise UploadRejected(
                f"no {MANIFEST_NAME} in the archive's folder {show(top[0])} "
                "(a bot is a folder with a bot.toml; see bots/python-greedy)"
            )
        raise UploadRejected(
            f"no {MANIFEST_NAME} at the top of the archive (or in its single top-level "
            "folder); a bot is a folder with a bot.toml"
        )


def check_mode(path: str, mode: int) -> None:
    if mode & (stat.S_ISUID | stat.S_ISGID):
        raise UploadRejected(f"{show(path)} has the setuid or setgid bit; bots may not")


_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    for test, name in _SPECIAL:
        if test(mode):
            return name
    return None


# ---------------------------------------------------------------- zip


def zip_declared_entries(archive: Path) -> int | None:
    """The entry count the end-of-central-directory record declares (None when it
    cannot be found: zipfile then says why), read before zipfile parses every entry."""
    with archive.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        tail_len = min(size, 22 + 0xFFFF)
        handle.seek(size - tail_len)
        tail = handle.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return None
    (total,) = struct.unpack("<H", tail[at + 10 : at + 12])
    return int(total)


def _unpack_zip(archive: Path, out: _Unpacker) -> None:
    declared = zip_declared_entries(archive)
    if declared is not None and declared > out.limits.max_files:
        raise UploadRejected(
            f"the archive declares {declared}{'+' if declared == 0xFFFF else ''} entries; "
            f"at most {out.limits.max_files} files, folders and links"
        )
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > out.limits.max_files:
                raise UploadRejected(
                    f"{len(infos)} entries in the archive; at most {out.limits.max_files} "
                    "files, folders and links"
                )
            out.check_expansion(sum(i.file_size for i in infos), "declares that it unpacks to")
            for info in infos:
                _zip_member(zf, info, out)
    except UnicodeDecodeError as exc:  # a name flagged UTF-8 that is not: zipfile's own decode
        raw = exc.object if isinstance(exc.object, bytes) else b""
        raise UploadRejected(
            f"{show(raw.decode('utf-8', 'replace'))}: the name is not UTF-8"
        ) from None
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        NotImplementedError,
        zlib.error,
        lzma.LZMAError,
        struct.error,
        IndexError,  # zipfile's own parsing of malformed records
        KeyError,
        OverflowError,
    ) as exc:
        raise UploadRejected(f"a damaged or unsupported zip archive: {exc}") from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise UploadRejected(f"a damaged or unsupported zip archive: {exc}") from None


def _zip_name(info: zipfile.ZipInfo) -> str:
    name = info.filename
    if not info.flag_bits & 0x800 and not name.isascii():
        # No UTF-8 flag: zipfile decoded it as cp437.  Info-ZIP on Linux stores UTF-8
        # without the flag; anything else is a legacy code page we cannot trust.
        try:
            name = name.encode("cp437").decode("utf-8")
        except UnicodeError:
            raise UploadRejected(f"{show(name)}: the name is not UTF-8") from None
    return name


def _zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, out: _Unpacker) -> None:
    out.count_entry()
    if not info.filename:  # zipfile cuts a name at its first NUL
        raise UploadRejected("an entry without a name (or with a NUL byte in it)")
    raw = _zip_name(info)
    path = clean_name(raw)
    if info.flag_bits & 0x1:
        raise UploadRejected(f"{show(raw)} is encrypted; upload an unencrypted archive")
    mode = (info.external_attr >> 16) if info.create_system == 3 else 0
    fmt = stat.S_IFMT(mode)
    special = special_kind(mode)
    if special:
        raise UploadRejected(f"{show(raw)} is {special}: only files, folders and symlinks")
    if path is None:
        if not info.is_dir():
            raise UploadRejected(f"{show(raw)}: a file without a name")
        return
    if path.split("/")[0] in SKIPPED_TOP:
        return
    if stat.S_ISLNK(mode):
        if info.file_size > 4096:
            raise UploadRejected(f"{show(raw)}: a symlink with a target over 4096 bytes")
        with zf.open(info) as member:
            target = member.read(4097).decode("utf-8", "surrogateescape")
        out.add_link(path, target)
    elif info.is_dir() and fmt in (0, stat.S_IFDIR):
        out.add_dir(path, mode)
    elif info.is_dir() or fmt == stat.S_IFDIR:
        raise UploadRejected(f"{show(raw)}: a folder entry that is not a folder")
    else:
        out.add_file(path, mode, info.file_size, lambda: _zip_chunks(zf, info))


def _zip_chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    with zf.open(info) as member:
        yield from _chunks(member.read)


def _chunks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    while True:
        chunk = read(CHUNK)
        if not chunk:
            return
        yield chunk


# ---------------------------------------------------------------- tar.gz


class _BoundedStream:
    """The decompressed tar stream, refused once it passes the expansion budget (tar
    headers, pax records and padding count too), before a huge read is made."""

    def __init__(self, raw: IO[bytes], out: _Unpacker, cap: int) -> None:
        self.raw = raw
        self.out = out
        self.cap = cap
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        room = self.cap - self.total + 1
        if size < 0 or size > room:
            size = room
        data = self.raw.read(size)
        self.total += len(data)
        if self.total > self.cap:
            raise UploadRejected(
                f"the archive unpacks to more than {self.out.limits.unpacked_mb} MiB "
                "(the limit for a bot's source)"
            )
        self.out.check_expansion(self.total)
        overhead = self.total - self.out.written - self.out.skipped
        allowed = HEADER_SLACK_BYTES + HEADER_BYTES_PER_ENTRY * (self.out.entries + 1)
        if overhead > allowed:
            raise UploadRejected(
                f"the archive's tar headers take more than {allowed // 1024} KiB beyond its "
                "files (an oversized pax or long-name header: a bomb?)"
            )
        return data


def _unpack_tar_gz(archive: Path, out: _Unpacker) -> None:
    cap = out.limits.unpacked_bytes + 2048 * out.limits.max_files + MIB
    with archive.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
        stream = _BoundedStream(cast(IO[bytes], gz), out, cap)
        try:
            with tarfile.open(
                fileobj=cast(IO[bytes], stream),
                mode="r|",
                encoding="utf-8",
                errors="surrogateescape",
            ) as tf:
                for member in tf:
                    _tar_member(tf, member, out)
        except (
            tarfile.TarError,
            EOFError,
            gzip.BadGzipFile,
            zlib.error,
            struct.error,
            IndexError,  # tarfile's own parsing of malformed headers
            KeyError,
            OverflowError,
        ) as exc:
            raise UploadRejected(f"a damaged or unsupported .tar.gz archive: {exc}") from None
        except (ValueError, OSError) as exc:
            raise UploadRejected(f"a damaged or unsupported .tar.gz archive: {exc}") from None


_FILTER_REASONS = {
    "AbsolutePathError": "an absolute path",
    "OutsideDestinationError": "a path that leaves the folder",
    "SpecialFileError": "a special file",
    "AbsoluteLinkError": "a symlink that leaves the folder (absolute target)",
    "LinkOutsideDestinationError": "a symlink that leaves the folder",
}


def _tar_member(tf: tarfile.TarFile, member: tarfile.TarInfo, out: _Unpacker) -> None:
    out.count_entry()
    raw = member.name
    path = clean_name(raw)
    if member.islnk():
        raise UploadRejected(
            f"{show(raw)} is a hard link; pack the bot without hard links (tar --hard-dereference)"
        )
    if member.ischr() or member.isblk() or member.isfifo():
        kind = "a device" if member.isdev() and not member.isfifo() else "a FIFO"
        raise UploadRejected(f"{show(raw)} is {kind}: only files, folders and symlinks")
    if member.issparse():
        raise UploadRejected(f"{show(raw)} is a sparse file; pack it as a regular file")
    if not (member.isreg() or member.isdir() or member.issym()):
        raise UploadRejected(f"{show(raw)}: an unsupported tar entry (type {member.type!r})")
    if not member.isdir():
        check_mode(raw, member.mode)
    if path is None:
        if not member.isdir():
            raise UploadRejected(f"{show(raw)}: a file without a name")
        return
    if path.split("/")[0] in SKIPPED_TOP:
        out.skipped += member.size if member.isreg() else 0
        return
    if member.issym():
        check_link_target(raw, member.linkname)
    if out.dry:  # a second opinion: Python's own extraction filter for untrusted archives
        try:  # checked against a root that does not exist: textual, no lstat of dest
            tarfile.data_filter(member, out.virtual_root)
        except tarfile.FilterError as exc:
            why = _FILTER_REASONS.get(type(exc).__name__, type(exc).__name__)
            raise UploadRejected(f"{show(raw)}: {why} (tarfile's data filter)") from None
    if member.issym():
        out.add_link(path, member.linkname)
    elif member.isdir():
        out.add_dir(path, member.mode)
    else:
        out.add_file(path, member.mode, member.size, lambda: _tar_chunks(tf, member))


def _tar_chunks(tf: tarfile.TarFile, member: tarfile.TarInfo) -> Iterator[bytes]:
    data = tf.extractfile(member)
    if data is None:
        raise UploadRejected(f"{show(member.name)}: its data cannot be read")
    with data:
        yield from _chunks(data.read)


# ---------------------------------------------------------------- entry point


def archive_format(head: bytes) -> str:
    """'zip' or 'tar.gz' from the first bytes; UploadRejected for anything else."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        return "tar.gz"
    if not head:
        raise UploadRejected("the upload is empty (0 bytes), not an archive")
    if len(head) >= 262 and head[257:262] == b"ustar":
        raise UploadRejected("an uncompressed tar; upload a .tar.gz (tar czf) or a .zip")
    for magic, name in ((b"BZh", "bzip2"), (b"\xfd7zXZ", "xz"), (b"7z\xbc\xaf", "7-Zip")):
        if head.startswith(magic):
            raise UploadRejected(f"a {name} archive; upload a .tar.gz or a .zip")
    raise UploadRejected("not a .zip or .tar.gz archive")


def unpack_upload(archive: Path, dest: Path, limits: UploadLimits | None = None) -> Path:
    """Unpack ``archive`` into the new folder ``dest`` and return the bot folder in it
    (``dest`` or its single top-level folder), with a valid ``bot.toml``.

    Raises :class:`UploadRejected` (reason for the author) and leaves nothing behind;
    :class:`ArenaError` for an arena-side problem (``dest`` not writable, disk full)."""
    limits = limits or UploadLimits()
    try:
        size = archive.stat().st_size
        with archive.open("rb") as handle:
            head = handle.read(512)
    except OSError as exc:
        raise ArenaError(f"cannot read the upload {archive}: {exc.strerror}") from None
    if size > limits.upload_bytes:
        raise UploadRejected(
            f"the archive is {size / MIB:.1f} MiB; this competition accepts at most "
            f"{limits.upload_mb} MiB"
        )
    kind = archive_format(head)
    try:
        os.mkdir(dest, 0o755)
    except OSError as exc:
        raise ArenaError(f"cannot unpack an upload into {dest}: {exc.strerror}") from None
    unpack = _unpack_zip if kind == "zip" else _unpack_tar_gz
    try:
        for dry in (True, False):  # check every member, then write
            out = _Unpacker(dest.resolve(), limits, size, dry=dry)
            unpack(archive, out)
            folder = out.finish()
        validate_manifest(folder, dest.resolve())
    except BaseException:
        remove_tree(dest)
        raise
    return folder


@dataclass(frozen=True)
class CheckedUpload:
    """An upload that passed every check: its manifest and the digest of the bot folder
    it unpacks to (:func:`arena.play.build.tree_digest`: the same files give the same
    digest whatever the archive format, order or timestamps)."""

    manifest: BotManifest
    source_digest: str


def check_upload(archive: Path, scratch: Path, limits: UploadLimits) -> CheckedUpload:
    """Every check :func:`unpack_upload` makes, at upload time: unpack ``archive`` into
    ``scratch`` (a new folder), read its manifest and remove the folder again, so a
    hostile archive is refused before it is stored or queued.  Raises
    :class:`UploadRejected` (reason for the author) or :class:`ArenaError`."""
    try:
        folder = unpack_upload(archive, scratch, limits)
        manifest = validate_manifest(folder, scratch.resolve()).manifest
        try:
            digest = tree_digest(folder)
        except OSError as exc:
            raise ArenaError(f"cannot read the unpacked upload: {exc.strerror}") from None
        return CheckedUpload(manifest, digest)
    finally:
        remove_tree(scratch)


def validate_manifest(folder: Path, root: Path) -> BotSpec:
    """The bot's manifest, or UploadRejected with the reason (server paths left out)."""
    try:
        return load_bot(folder)
    except ManifestError as exc:
        text = str(exc)
        for prefix in (str(folder.resolve()), str(folder), str(root)):
            text = text.replace(prefix + "/", "").replace(prefix, "the bot folder")
        raise UploadRejected(text) from None


def describe_rules(limits: UploadLimits) -> str:
    """One paragraph for the upload page and the README."""
    return (
        f"A .zip or .tar.gz of at most {limits.upload_mb} MiB, unpacking to at most "
        f"{limits.unpacked_mb} MiB and {limits.max_files} entries, with bot.toml at its top "
        "or in its single top-level folder. Regular files, folders and symlinks that stay "
        "inside only; no hard links, devices, setuid bits or '..' paths."
    )
