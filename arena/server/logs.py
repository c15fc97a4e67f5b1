"""The server's log lines: readable text, or one JSON object per line for a collector.

``[server] log_format = "json"`` writes ``{"time", "level", "logger", "message", ...}``
with the event's extra fields (``_log.info(..., extra={"game": id})``) and any traceback
under ``exception``. Bot-controlled text arrives already passed through
:func:`arena.textsafe.visible` at the call sites; the formatter applies it again to the
message and every string field (idempotent), so neither a terminal nor a log viewer
showing decoded JSON ever obeys a control or bidi character, and JSON quoting keeps a
newline from forging a second line.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

from arena.textsafe import visible

TEXT_FORMAT = "%(asctime)s %(name)s: %(message)s"
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's copy of the message with terminal colours
}
"""Attributes every LogRecord has; the rest of a record's attributes are its extras."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": visible(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in line:
                line[key] = _field(value)
        if record.exc_info:
            line["exception"] = visible(self.formatException(record.exc_info), multiline=True)
        return json.dumps(line, ensure_ascii=True, default=str)


def _field(value: object) -> object:
    if isinstance(value, str):
        return visible(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return visible(str(value))


def configure_logging(log_format: Literal["text", "json"]) -> None:
    """Send the process's INFO logs to stderr in ``log_format`` (``arena serve``); like
    :func:`logging.basicConfig`, a no-op when the root logger has handlers already."""
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger("alembic").setLevel(logging.WARNING)
