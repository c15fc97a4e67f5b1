"""The hostile-upload corpus: archives built on the fly with zipfile/tarfile (and, where
those refuse to write something hostile, by hand with struct).

Each builder writes one archive and returns its path; ``tests/server/test_uploads.py``
feeds them to ``unpack_upload``.  Generated, not stored: a 1 GiB zip bomb is about 1 MB
here and costs milliseconds to make.
"""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20

BOT_TOML = b'name = "up-bot"\nlanguage = "python"\ncommand = "python3 bot.py"\n'
BOT_PY = b"print('hello')\n"
GOOD_FILES = {"bot.toml": BOT_TOML, "bot.py": BOT_PY}


@dataclass(frozen=True)
class Member:
    """One archive entry: a file (data), a folder, a symlink/hard link (target) or a
    special file (kind 'chr', 'blk', 'fifo', 'sock')."""

    name: str
    data: bytes = b""
    kind: str = "file"
    mode: int = 0o644
    target: str = ""


def files(*extra: Member, top: str = "", manifest: bytes = BOT_TOML) -> list[Member]:
    """A good bot (bot.toml + bot.py), optionally under one folder, plus ``extra``."""
    prefix = f"{top}/" if top else ""
    base = [Member(f"{prefix}bot.toml", manifest), Member(f"{prefix}bot.py", BOT_PY)]
    return base + list(extra)


# ---------------------------------------------------------------- zip

_ZIP_TYPES = {
    "file": stat.S_IFREG,
    "dir": stat.S_IFDIR,
    "symlink": stat.S_IFLNK,
    "chr": stat.S_IFCHR,
    "blk": stat.S_IFBLK,
    "fifo": stat.S_IFIFO,
    "sock": stat.S_IFSOCK,
}


def make_zip(path: Path, members: list[Member]) -> Path:
    """A zip written by zipfile, with Unix modes (file type bits included)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for m in members:
            name = m.name + ("/" if m.kind == "dir" and not m.name.endswith("/") else "")
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = (_ZIP_TYPES[m.kind] | m.mode) << 16
            if m.kind == "dir":
                info.external_attr |= 0x10
            info.compress_type = zipfile.ZIP_DEFLATED
            data = m.target.encode() if m.kind == "symlink" else m.data
            zf.writestr(info, data)
    return path


@dataclass(frozen=True)
class RawEntry:
    """A zip entry written byte by byte: any name bytes, sizes, flags, already
    compressed data (method 8 = raw deflate, 0 = stored)."""

    name: bytes
    data: bytes
    size: int
    crc: int = 0
    method: int = 8
    flags: int = 0
    mode: int = stat.S_IFREG | 0o644


def make_raw_zip(path: Path, entries: list[RawEntry]) -> Path:
    out = io.BytesIO()
    central = io.BytesIO()
    for e in entries:
        offset = out.tell()
        out.write(
            struct.pack(
                "<4sHHHHHIIIHH",
                b"PK\x03\x04",
                20,
                e.flags,
                e.method,
                0,
                0x21,
                e.crc,
                len(e.data),
                e.size,
                len(e.name),
                0,
            )
        )
        out.write(e.name + e.data)
        central.write(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20 | (3 << 8),
                20,
                e.flags,
                e.method,
                0,
                0x21,
                e.crc,
                len(e.data),
                e.size,
                len(e.name),
                0,
                0,
                0,
                0,
                e.mode << 16,
                offset,
            )
            + e.name
        )
    cd_offset = out.tell()
    cd = central.getvalue()
    n = len(entries)
    out.write(cd + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(cd), cd_offset, 0))
    path.write_bytes(out.getvalue())
    return path


def stored(name: str, data: bytes, **kw: int) -> RawEntry:
    return RawEntry(name.encode(), data, len(data), zlib.crc32(data), method=0, **kw)


def zero_deflate(mib: int, prefix: bytes = b"") -> bytes:
    """A raw deflate stream of ``prefix`` then ``mib`` MiB of zeros, made by repeating
    one fully flushed block (about 1 KB per MiB): the classic bomb, built in
    milliseconds."""
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b"\0" * MIB) + c.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    return start + block * mib + end


def zip_bomb(path: Path, gib: int = 1) -> Path:
    """bot.toml and a file declaring (honestly) ``gib`` GiB of zeros, ~1 MB on disk."""
    return make_raw_zip(
        path,
        [
            stored("bot.toml", BOT_TOML),
            RawEntry(b"zeros.bin", zero_deflate(gib * 1024), gib << 30),
        ],
    )


# ---------------------------------------------------------------- tar.gz

_TAR_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
    "chr": tarfile.CHRTYPE,
    "blk": tarfile.BLKTYPE,
    "fifo": tarfile.FIFOTYPE,
}


def make_tgz(path: Path, members: list[Member]) -> Path:
    """A .tar.gz written by tarfile (PAX format, names may hold any text)."""
    with tarfile.open(
        path, "w:gz", format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tf:
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.type = _TAR_TYPES[m.kind]
            info.mode = m.mode
            info.mtime = 1_767_225_600
            if m.kind in ("symlink", "hardlink"):
                info.linkname = m.target
            if m.kind == "file":
                info.size = len(m.data)
                tf.addfile(info, io.BytesIO(m.data))
            else:
                tf.addfile(info)
    return path


def gzip_of_raw_deflate(deflate: bytes) -> bytes:
    """A gzip member around a raw deflate stream (the trailer is never reached by the
    tests that use it: the unpacker stops first; it is written zeroed)."""
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate + b"\0" * 8


def tar_header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    info.mode = 0o644
    return info.tobuf(format=tarfile.GNU_FORMAT)


def tgz_bomb(path: Path, gib: int = 1, kind: bytes = tarfile.REGTYPE) -> Path:
    """A .tar.gz whose one member (a file, or a pax header with kind XHDTYPE) declares
    ``gib`` GiB of zeros: about 1 MB on disk."""
    header = tar_header("zeros.bin" if kind == tarfile.REGTYPE else "pax", gib << 30, kind)
    path.write_bytes(gzip_of_raw_deflate(zero_deflate(gib * 1024, prefix=header)))
    return path


def tgz_bytes(members: list[Member]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tf:
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.size = len(m.data)
            tf.addfile(info, io.BytesIO(m.data))
    return buf.getvalue()


def many_files_tgz(path: Path, n: int) -> Path:
    """A .tar.gz of ``n`` empty files f0, f1, ... (headers made from one template: tarfile
    takes seconds for 100k members)."""
    template = bytearray(tar_header("x", 0))
    template[0:100] = b"\0" * 100
    template[148:156] = b" " * 8
    base = sum(template)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as gz:
        parts = []
        for i in range(n):
            name = f"f{i}".encode()
            chk = f"{base + sum(name):06o}\0 ".encode()
            parts.append(name.ljust(100, b"\0") + template[100:148] + chk + template[156:])
        gz.write(b"".join(parts) + b"\0" * 1024)
    path.write_bytes(out.getvalue())
    return path
