"""Receive an uploaded bot archive: the multipart body streamed to a file in
``data_dir/uploads/``, refused (413) as soon as it passes the size limit, never held in
memory nor written beyond the limit; then the bot's name read from its ``bot.toml``.

Starlette's own form parser spools a whole file before the handler sees it, so the
stream is parsed here with python-multipart's push parser (the one Starlette uses).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import secrets
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from fastapi import Request
from pydantic import ValidationError
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from arena.referee.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES, BotManifest

FIELD_BYTES = 4096
"""Largest plain (non-file) form field."""
MAX_PARTS = 8
MULTIPART_OVERHEAD = 64 * 1024
"""Headers, boundaries and small fields a body may add to the archive's own size."""
ARCHIVE_FIELD = "archive"
ZIP_MAGIC = b"PK\x03\x04"
GZIP_MAGIC = b"\x1f\x8b"
MAX_MEMBERS_SCANNED = 10_000


class UploadError(Exception):
    """The upload is refused: ``status`` (400 or 413) and a readable reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Received:
    fields: dict[str, str] = field(default_factory=dict)
    archive: Path | None = None
    size: int = 0
    sha256: str = ""
    suffix: str = ""
    """``.zip`` or ``.tar.gz``, from the file's first bytes (never from its name)."""


def too_large(max_bytes: int) -> UploadError:
    return UploadError(413, f"the archive is larger than the limit of {max_bytes // 2**20} MiB")


async def receive_upload(request: Request, folder: Path, max_bytes: int) -> Received:
    """Stream the request's multipart body; the ``archive`` file part goes to a new file in
    ``folder``. Raises :class:`UploadError`; leaves no partial file behind."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise UploadError(400, "bad Content-Length") from None
        if length > max_bytes + MULTIPART_OVERHEAD:
            raise too_large(max_bytes)
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UploadError(400, "send multipart/form-data with the archive in the field 'archive'")
    folder.mkdir(parents=True, exist_ok=True)
    sink = _Sink(folder, max_bytes)
    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": sink.on_part_begin,
            "on_header_field": sink.on_header_field,
            "on_header_value": sink.on_header_value,
            "on_header_end": sink.on_header_end,
            "on_headers_finished": sink.on_headers_finished,
            "on_part_data": sink.on_part_data,
            "on_part_end": sink.on_part_end,
        },
    )
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except UploadError:
        sink.discard()
        raise
    except (FormParserError, ValueError):
        sink.discard()
        raise UploadError(400, "the multipart body is damaged") from None
    except BaseException:
        sink.discard()
        raise
    return sink.result()


class _Sink:
    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.received = Received()
        self.parts = 0
        self.header_name = b""
        self.header_value = b""
        self.disposition = b""
        self.name = ""
        self.text: bytearray | None = None
        self.file: IO[bytes] | None = None
        self.path: Path | None = None
        self.digest = hashlib.sha256()
        self.head = b""

    def on_part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise UploadError(400, "too many form fields")
        self.disposition = b""
        self.text = None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]
        if len(self.header_value) > FIELD_BYTES:
            raise UploadError(400, "a form header is too long")

    def on_header_end(self) -> None:
        if self.header_name.lower() == b"content-disposition":
            self.disposition = self.header_value
        self.header_name = self.header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.disposition)
        self.name = options.get(b"name", b"").decode("utf-8", "replace")
        if self.name == ARCHIVE_FIELD and b"filename" in options:
            if self.path is not None:
                raise UploadError(400, "send one archive per submission")
            self.path = self.folder / f"incoming-{secrets.token_hex(8)}.part"
            self.file = self.path.open("xb")
        else:
            self.text = bytearray()

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self.text is not None:
            if len(self.text) + len(chunk) > FIELD_BYTES:
                raise UploadError(400, f"the form field {self.name!r} is too long")
            self.text += chunk
            return
        assert self.file is not None
        self.received.size += len(chunk)
        if self.received.size > self.max_bytes:
            raise too_large(self.max_bytes)
        if len(self.head) < 8:
            self.head += chunk[: 8 - len(self.head)]
        self.digest.update(chunk)
        self.file.write(chunk)

    def on_part_end(self) -> None:
        if self.text is not None:
            self.received.fields[self.name] = self.text.decode("utf-8", "replace")
            self.text = None
        elif self.file is not None:
            self.file.close()
            self.file = None

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

    def result(self) -> Received:
        if self.file is not None:  # the body ended inside the file part
            self.discard()
            raise UploadError(400, "the upload was cut short")
        if self.path is None or self.received.size == 0:
            self.discard()
            raise UploadError(400, "no archive: send the bot as a .zip or .tar.gz in 'archive'")
        if self.head.startswith(ZIP_MAGIC):
            self.received.suffix = ".zip"
        elif self.head.startswith(GZIP_MAGIC):
            self.received.suffix = ".tar.gz"
        else:
            self.discard()
            raise UploadError(400, "the archive is neither a .zip nor a .tar.gz")
        self.received.archive = self.path
        self.received.sha256 = self.digest.hexdigest()
        return self.received


# ------------------------------------------------------------------ the bot's name


def manifest_name(archive: Path, suffix: str, max_unpacked: int) -> str:
    """The ``name`` in the archive's ``bot.toml`` (at the top, or in its single top-level
    folder). Reads that one member only, bounded; the real unpacking and the build come
    later, in the sandbox. Raises :class:`UploadError` (400) with the reason."""
    try:
        raw = _zip_manifest(archive) if suffix == ".zip" else _tar_manifest(archive, max_unpacked)
    except UploadError:
        raise
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, gzip.BadGzipFile):
        raise UploadError(400, "the archive is damaged or not a .zip/.tar.gz") from None
    if raw is None:
        raise UploadError(400, f"no {MANIFEST_NAME} at the top of the archive")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        return BotManifest.model_validate(data).name
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UploadError(400, f"{MANIFEST_NAME} is not valid TOML ({exc})") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'manifest'}: {err['msg']}"
            for err in exc.errors()
        )
        raise UploadError(400, f"{MANIFEST_NAME}: {problems}") from None


def _is_manifest(name: str) -> bool:
    parts = PurePosixPath(name.replace("\\", "/").lstrip("./")).parts
    return (len(parts) == 1 or len(parts) == 2) and parts[-1] == MANIFEST_NAME


def _zip_manifest(archive: Path) -> bytes | None:
    with zipfile.ZipFile(archive) as zf:
        candidates = [i for i in zf.infolist() if _is_manifest(i.filename) and not i.is_dir()]
        if not candidates:
            return None
        info = min(candidates, key=lambda i: len(i.filename))
        if info.file_size > MAX_MANIFEST_BYTES:
            raise UploadError(400, f"{MANIFEST_NAME} is longer than {MAX_MANIFEST_BYTES} bytes")
        with zf.open(info) as member:
            data = member.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise UploadError(400, f"{MANIFEST_NAME} is longer than {MAX_MANIFEST_BYTES} bytes")
        return data


class _Capped(io.RawIOBase):
    """A reader that fails once more than ``limit`` bytes were read (a gzip bomb)."""

    def __init__(self, inner: gzip.GzipFile, limit: int) -> None:
        self.inner = inner
        self.left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(min(len(buffer), self.left + 1))
        self.left -= len(data)
        if self.left < 0:
            raise UploadError(400, "the archive unpacks to more than the limit")
        buffer[: len(data)] = data
        return len(data)


def _tar_manifest(archive: Path, max_unpacked: int) -> bytes | None:
    with gzip.open(archive, "rb") as unzipped:
        capped = io.BufferedReader(_Capped(unzipped, max_unpacked))
        with tarfile.open(fileobj=capped, mode="r|") as tar:
            for count, member in enumerate(tar):
                if count > MAX_MEMBERS_SCANNED:
                    return None
                if not _is_manifest(member.name):
                    continue
                if not member.isreg():
                    raise UploadError(400, f"{MANIFEST_NAME} is not a regular file")
                if member.size > MAX_MANIFEST_BYTES:
                    raise UploadError(
                        400, f"{MANIFEST_NAME} is longer than {MAX_MANIFEST_BYTES} bytes"
                    )
                extracted = tar.extractfile(member)
                return None if extracted is None else extracted.read()
    return None
