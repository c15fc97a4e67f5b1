"""A bot's version is the content of its folder, not where it lives or when it was touched."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from arena.play.build import content_hash


def _bot(folder: Path) -> Path:
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "b"\ncommand = "./bot"\n')
    (folder / "bot").write_text("#!/bin/sh\n")
    (folder / "bot").chmod(0o755)
    (folder / "lib").mkdir()
    (folder / "lib" / "data.txt").write_text("x")
    return folder


def test_same_content_elsewhere_is_the_same_version(tmp_path: Path) -> None:
    a = _bot(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    os.utime(b / "bot", (1, 1))
    assert content_hash(a) == content_hash(b)
    assert len(content_hash(a)) == 12


def test_any_change_is_a_new_version(tmp_path: Path) -> None:
    a = _bot(tmp_path / "a")
    before = content_hash(a)
    (a / "lib" / "data.txt").write_text("y")
    changed = content_hash(a)
    assert changed != before
    (a / "bot").chmod(0o644)
    assert content_hash(a) != changed
    (a / "bot").chmod(0o755)
    (a / "lib" / "data.txt").write_text("x")
    assert content_hash(a) == before
    (a / "lib" / "data.txt").rename(a / "lib" / "other.txt")
    assert content_hash(a) != before
