"""The starter kits: each builds and passes `arena check-bot --sandbox strict`, `arena
new-bot` copies them, and protocol/SPEC.md's language notes say what they do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena.engine import Variant
from arena.kits import BOTS_DIR, KITS, Kit, KitError, kit_for, new_bot
from arena.referee import load_bot
from arena.sandbox.runtime_env import runtime_env
from arena.sandbox.spec import Limits

from .comp90054_standin import write_framework
from .conftest import REPO, require_strict_sandbox, require_toolchain

SPEC = (REPO / "protocol" / "SPEC.md").read_text(encoding="utf-8")
SOURCES = (".py", ".js", ".ts", ".c", ".cpp", ".java", ".go", ".rs")


def kit_source(kit: Kit) -> str:
    folder = BOTS_DIR / kit.folder
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.suffix in SOURCES and p.is_file() and "build" not in p.parts
    )


def language_notes() -> str:
    """The SPEC's language-notes section (up to the next section)."""
    found = re.search(r"^## \d+\. Language notes\n(.*?)(?=^## |\Z)", SPEC, re.M | re.S)
    assert found, "protocol/SPEC.md has no 'Language notes' section"
    return found.group(1)


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.language)
def test_kit_is_what_the_table_says(kit: Kit) -> None:
    spec = load_bot(BOTS_DIR / kit.folder)
    assert spec.manifest.language == kit.language
    assert kit_for(kit.language) is kit
    assert all(kit_for(alias) is kit for alias in kit.aliases)
    # The kit really flushes and parses the way the SPEC and check-bot tell authors to.
    source = kit_source(kit)
    assert kit.flush_code in source
    assert kit.json_code in source


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.language)
def test_spec_language_notes_cover_the_kit(kit: Kit) -> None:
    notes = language_notes()
    row = next((line for line in notes.splitlines() if f"bots/{kit.folder}" in line), None)
    assert row is not None, f"no row for bots/{kit.folder} in the SPEC's language notes"
    assert kit.flush in row
    assert kit.json in row


def test_spec_language_notes_name_the_limit_variables_and_shells() -> None:
    notes = language_notes()
    for variable, value in runtime_env(Limits()).items():
        row = next((line for line in notes.splitlines() if f"| `{variable}` |" in line), "")
        assert f"`{value}`" in row, f"SPEC: {variable} should be documented as {value}"
    assert "/bin/sh -c" in notes and "prebuilt" in notes.lower()
    assert "shlex" in notes or "split like a shell" in notes


@pytest.mark.slow
@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.language)
def test_new_bot_from_kit_passes_check_bot_strict(kit: Kit, tmp_path: Path) -> None:
    require_toolchain(kit)
    require_strict_sandbox()
    tmp_path.chmod(0o755)  # the per-bot uid must read it
    name = f"my-{kit.language}"
    folder = new_bot(name, kit.language, tmp_path)
    manifest = load_bot(folder).manifest
    assert manifest.name == name
    extra: list[str] = []
    if kit.needs_python_env:  # the course's framework: the tests' stand-in
        extra += ["--python-env", str(write_framework(tmp_path / "framework"))]
    if manifest.players or manifest.walls:  # check what the kit declares it plays
        extra += ["--players", ",".join(map(str, manifest.players or (2, 3, 4)))]
        extra += ["--walls", ",".join(w.value for w in manifest.walls or Variant)]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena.cli",
            "check-bot",
            str(folder),
            "--sandbox",
            "strict",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "200"},
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "PASS" in out
    assert f"says: name {name}" in out  # the copy was renamed in its source too
    for players in (2, 3, 4):
        for wall in Variant:
            assert (f"{players}p {wall.value}" in out) == manifest.plays(players, wall)


def test_new_bot_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with pytest.raises(KitError, match="no starter kit for language 'cobol'"):
        new_bot("x", "cobol", tmp_path)
    with pytest.raises(KitError, match="bad bot name"):
        new_bot("Bad Name", "go", tmp_path)
    new_bot("twice", "python", tmp_path)
    with pytest.raises(KitError, match="already exists"):
        new_bot("twice", "py", tmp_path)


def test_new_bot_copies_no_build_artifacts(tmp_path: Path) -> None:
    kit_dir = tmp_path / "kits" / "go-greedy"
    kit_dir.mkdir(parents=True)
    (kit_dir / "bot.toml").write_text('name = "go-greedy"\nlanguage = "go"\ncommand = "./bot"\n')
    (kit_dir / "main.go").write_text('const name = "go-greedy"\n')
    (kit_dir / "bot").write_bytes(b"\x7fELF old binary")
    folder = new_bot("fresh", "golang", tmp_path, bots_dir=tmp_path / "kits")
    assert sorted(p.name for p in folder.iterdir()) == ["bot.toml", "main.go"]
    assert (folder / "main.go").read_text() == 'const name = "fresh"\n'


def test_cli_new_bot(tmp_path: Path) -> None:
    from arena.cli import main

    assert main(["new-bot", "cli-bot", "--language", "c", "--dir", str(tmp_path)]) == 0
    assert load_bot(tmp_path / "cli-bot").name == "cli-bot"
    assert main(["new-bot", "cli-bot", "--language", "c", "--dir", str(tmp_path)]) == 2


def test_demo_plays_only_kits_a_fresh_machine_can_build() -> None:
    from arena.kits import bundled_bots

    demo = {p.name for p in bundled_bots()}
    for kit in KITS:
        quickstart = set(kit.programs) <= {"python3", "node", "gcc"} and not kit.needs_python_env
        assert kit.in_demo == quickstart, kit.language
        assert (kit.folder in demo) == kit.in_demo
