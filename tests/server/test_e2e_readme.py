"""The README's hosting section stays true: its example competition.toml loads, and the
commands it tells organisers and authors to run exist with the options it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _hosting_section() -> str:
    text = README.read_text()
    start = text.index("## Hosting a competition")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_readme_example_competition_loads(tmp_path: Path) -> None:
    from arena.server.config import load_competition

    blocks = re.findall(r"```toml\n(.*?)```", _hosting_section(), re.S)
    assert len(blocks) == 1
    path = tmp_path / "competition.toml"
    path.write_text(blocks[0])
    config = load_competition(path)
    assert config.competition.name == "Spring Azul Cup"
    assert config.server.host == "127.0.0.1"
    assert config.ladder.players == {2: 0.5, 4: 0.5}
    assert config.play.sandbox.value == "strict"
    assert config.limits.upload_mb == 10
    assert config.challenges.per_hour == 6


def test_the_readme_commands_parse() -> None:
    parser = build_parser()
    section = _hosting_section()
    commands = re.findall(r"^(arena (?:serve|token|submit) [^#\n]*?)\s*(?:#.*)?$", section, re.M)
    assert len(commands) >= 4, commands
    for line in commands:
        argv = line.split()[1:]
        args = parser.parse_args([a.strip('"') for a in argv])
        assert callable(args.run), line
