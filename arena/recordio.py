"""Reading and writing game-record files (plain ``.json`` or gzip ``.json.gz``)."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path

from pydantic import ValidationError

from arena.engine.record import GameRecord
from arena.errors import ArenaError


class RecordFileError(ArenaError):
    """A record file that cannot be used, with a message for the user."""


def load_record(path: Path) -> GameRecord:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise RecordFileError(f"{path}: cannot read ({exc.strerror})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError as exc:
            raise RecordFileError(f"{path}: broken gzip data ({exc})") from None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != "azul-arena/game-record":
        raise RecordFileError(f"{path}: not an Azul Arena game record (no 'format' field)")
    try:
        return GameRecord.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise RecordFileError(f"{path}: invalid game record: {problems}") from None


def record_bytes(record: GameRecord, compress: bool = False) -> bytes:
    data = record.model_dump_json(indent=None if compress else 1).encode()
    return gzip.compress(data, mtime=0) if compress else data


def save_record(record: GameRecord, path: Path) -> None:
    """Write atomically (temp file + rename), gzip when the name ends in ``.gz``. A failed
    write (full disk, folder gone read-only) is one :class:`RecordFileError`, no partial file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(record_bytes(record, compress=path.suffix == ".gz"))
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        reason = exc.strerror or exc
        raise RecordFileError(f"cannot write the game record {path}: {reason}") from None
