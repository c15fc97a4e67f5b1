"""``[server] log_format = "json"``: one JSON object per line, bot text kept harmless."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from arena.competition.config import CompetitionConfigError, load_competition
from arena.server.logs import JsonFormatter

HOSTILE = "evil\x1b[2J\u202egnp.exe\nforged line"


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.getLogger("arena.server").makeRecord(
        "arena.server", logging.WARNING, __file__, 1, message, args, None, extra=extra
    )
    return record


def test_a_record_is_one_json_object_with_its_fields() -> None:
    line = JsonFormatter().format(_record("game %s voided", "abc123", game="abc123", seat=1))
    assert "\n" not in line
    data = json.loads(line)
    assert data["level"] == "warning"
    assert data["logger"] == "arena.server"
    assert data["message"] == "game abc123 voided"
    assert data["game"] == "abc123" and data["seat"] == 1
    assert data["time"].endswith("+00:00")
    assert not {"args", "msg", "levelno", "pathname"} & set(data)


def test_bot_text_stays_escaped_in_message_and_fields() -> None:
    line = JsonFormatter().format(_record("failed sign-in from %s", HOSTILE, bot=HOSTILE))
    assert line.isascii() and "\n" not in line and "\x1b" not in line
    data = json.loads(line)
    for shown in (data["message"], data["bot"]):
        # decoded, the text still shows escapes instead of obeying them
        assert "\x1b" not in shown and "\u202e" not in shown and "\n" not in shown
        assert "\\x1b" in shown and "\\u202e" in shown and "\\x0a" in shown


def test_a_traceback_goes_in_one_field() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    data = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in data["exception"]
    assert data["message"] == "failed"


def test_log_format_option(tmp_path: Path) -> None:
    toml = tmp_path / "competition.toml"
    toml.write_text('[server]\nlog_format = "json"\n')
    assert load_competition(toml).server.log_format == "json"
    toml.write_text('[server]\nlog_format = "xml"\n')
    try:
        load_competition(toml)
    except CompetitionConfigError as exc:
        assert "log_format" in str(exc)
    else:
        raise AssertionError("log_format = xml was accepted")
