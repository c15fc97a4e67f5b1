"""Fixtures: bot folders made on the fly from ``scripted_bot.py``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.referee import BotSpec, load_bot

SCRIPT = Path(__file__).parent / "fixtures" / "scripted_bot.py"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scripted_bot(tmp_path: Path) -> Callable[..., BotSpec]:
    """``scripted_bot("timeout", 3)``: a bot folder whose 3rd decision times out."""
    tmp_path.chmod(0o755)  # readable by the per-bot uid

    def make(mode: str = "good", after: int = 1, name: str | None = None) -> BotSpec:
        folder = tmp_path / (name or f"{mode}-{after}")
        folder.mkdir()
        shutil.copy(SCRIPT, folder / "bot.py")
        (folder / "bot.toml").write_text(
            f'name = "{name or mode}"\ncommand = "/usr/bin/python3 bot.py {mode} {after}"\n'
        )
        folder.chmod(0o755)
        return load_bot(folder)

    return make


@pytest.fixture
def bundled() -> Callable[[str], BotSpec]:
    def get(name: str) -> BotSpec:
        return load_bot(REPO / "bots" / name)

    return get
