"""Receive an uploaded bot archive: the multipart body streamed to a file in
``data_dir/uploads/``, refused (413) as soon as it passes the size limit, never held in
memory nor written beyond the limit; then checked in full (unpacked to a scratch folder
with every rule of :mod:`arena.server.uploads`) before it is stored, so a hostile
archive is refused at once with its reason.

Starlette's own form parser spools a whole file before the handler sees it, so the
stream is parsed here with python-multipart's push parser (the one Starlette uses).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from arena.competition.config import UploadLimits
from arena.errors import ArenaError
from arena.server.uploads import CheckedUpload, UploadRejected, archive_format, check_upload

_log = logging.getLogger("arena.server")

FIELD_BYTES = 4096
"""Largest plain (non-file) form field."""
MAX_PARTS = 8
MULTIPART_OVERHEAD = 64 * 1024
"""Headers, boundaries and small fields a body may add to the archive's own size."""
ARCHIVE_FIELD = "archive"
HEAD_BYTES = 512
"""The archive's first bytes, kept to recognise its format (a tar's magic is at 257)."""


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
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[: HEAD_BYTES - len(self.head)]
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
        try:
            kind = archive_format(self.head)  # a plain tar, bzip2, xz or 7-Zip is named
        except UploadRejected as exc:
            self.discard()
            raise UploadError(400, exc.reason) from None
        self.received.suffix = ".zip" if kind == "zip" else ".tar.gz"
        self.received.archive = self.path
        self.received.sha256 = self.digest.hexdigest()
        return self.received


# ------------------------------------------------------------------ the full check

UPLOAD_CHECKS = threading.BoundedSemaphore(2)
"""Uploads unpacked for checking at once (each may write up to the unpacked limit to
disk): more wait their turn."""


def check_received(archive: Path, scratch: Path, limits: UploadLimits) -> CheckedUpload:
    """The bot's manifest and source digest, once the archive passed every check the
    build worker's unpacking makes (:func:`arena.server.uploads.check_upload`: paths,
    links, special files, sizes, entry count, ratio, damage, manifest). Raises
    :class:`UploadError`: 400 with the reason for the author, 503 when the server cannot
    unpack (disk full: logged, and never a server path in the answer). Leaves
    ``scratch`` removed."""
    with UPLOAD_CHECKS:
        try:
            return check_upload(archive, scratch, limits)
        except UploadRejected as exc:
            raise UploadError(400, exc.reason) from None
        except ArenaError as exc:
            _log.error("cannot check an upload: %s", exc)
            raise UploadError(
                503, "the server cannot unpack uploads right now; try again later"
            ) from None
