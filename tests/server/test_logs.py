"""``[server] log_format = "json"``: one JSON object per line, bot text kept harmless."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

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


def test_the_build_workers_lines_carry_the_bot_and_version(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from arena.competition.config import CompetitionConfig
    from arena.server.service import BuildVerdict, BuildWorker
    from arena.store.competition import CompetitionStore, sqlite_url

    config = CompetitionConfig.model_validate({"competition": {"data_dir": tmp_path / "data"}})

    def build(version: object, archive: Path, config: CompetitionConfig) -> BuildVerdict:
        return BuildVerdict(True, "accepted", "build ok", str(tmp_path), "abc123", {})

    with CompetitionStore.open(sqlite_url(tmp_path / "store.db")) as store:
        author, _ = store.create_author("alice")
        store.add_submission(author.id, "logged", "/uploads/logged.zip", "0" * 64)
        claimed = store.claim_queued_version()
        assert claimed is not None
        with caplog.at_level(logging.INFO, logger="arena.server"):
            BuildWorker(store, config, lambda: None, build).build_one(claimed)
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    done = [line for line in lines if line.get("status") == "active"]
    assert done and done[0]["bot"] == "logged" and done[0]["version"] == 1
    assert done[0]["submission"] == claimed.id
