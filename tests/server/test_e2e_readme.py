"""The hosting manual (docs/hosting.md) stays true: its example competition.toml loads, and
the commands it tells organisers and authors to run exist with the options it shows.

(tests/docs/ parses every ``arena`` command and loads every TOML example of the README and
docs/ as well; this file checks the competition example's values in detail.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.cli import build_parser

HOSTING = Path(__file__).resolve().parents[2] / "docs" / "hosting.md"


def _hosting_doc() -> str:
    return HOSTING.read_text()


def test_the_documented_example_competition_loads(tmp_path: Path) -> None:
    from arena.competition.config import load_competition

    blocks = re.findall(r"```toml\n(.*?)```", _hosting_doc(), re.S)
    assert blocks  # the whole competition first; other sections show their own tables
    path = tmp_path / "competition.toml"
    path.write_text(blocks[0])
    config = load_competition(path)
    assert config.competition.name == "Spring Azul Cup"
    assert config.server.host == "127.0.0.1"
    assert config.ladder.players == {2: 0.5, 4: 0.5}
    assert config.play.sandbox.value == "strict"
    assert config.limits.upload_mb == 10
    assert config.challenges.per_hour == 6
    path.write_text(next(b for b in blocks if "[phases]" in b))
    phases = load_competition(path).phases
    assert phases is not None and phases.finals == "at-deadline"


def test_the_documented_commands_parse() -> None:
    parser = build_parser()
    commands = re.findall(
        r"^(arena (?:serve|token|submit) [^#\n]*?)\s*(?:#.*)?$", _hosting_doc(), re.M
    )
    assert len(commands) >= 5, commands
    for line in commands:
        args = parser.parse_args(shlex.split(line)[1:])
        assert callable(args.run), line
