"""``arena match`` never overwrites an earlier record."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.cli import main
from arena.play.match import new_match_folder


def test_same_second_matches_get_distinct_folders(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        folders = list(pool.map(lambda _: new_match_folder(tmp_path, "20260101-120000"), range(20)))
    assert len(set(folders)) == 20
    assert sorted(p.name for p in folders)[:3] == [
        "20260101-120000",
        "20260101-120000-10",
        "20260101-120000-11",
    ]
    assert all(p.is_dir() and not any(p.iterdir()) for p in folders)


def test_an_out_folder_with_a_record_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "record.json").write_text("{}")
    repo = Path(__file__).resolve().parents[2]
    bots = [str(repo / "bots" / "python-random"), str(repo / "bots" / "python-greedy")]
    assert main(["match", *bots, "--out", str(tmp_path)]) == 2
    assert "already holds a game record" in capsys.readouterr().err
    assert (tmp_path / "record.json").read_text() == "{}"


REPO = Path(__file__).resolve().parents[2]


def _arena(
    *argv: str, wrap: Sequence[str] = (), stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in a subprocess from the repository."""
    return subprocess.run(
        [*wrap, sys.executable, "-m", "arena.cli", *argv],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=REPO,
        timeout=300,
    )


def _unbuildable_bot(tmp_path: Path) -> Path:
    """A bot whose build fails: a refusal that names the output folder came before any build."""
    bot = tmp_path / "unbuildable"
    shutil.copytree(REPO / "bots" / "python-random", bot)
    toml = bot / "bot.toml"
    toml.write_text(
        toml.read_text().replace('name = "python-random"', 'name = "unbuildable"')
        + 'build = "false"\n'
    )
    return bot


COMMANDS = {
    "match": lambda bot: ["match", str(REPO / "bots" / "python-random"), str(bot)],
    "play": lambda bot: ["play", str(bot), "--human"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_read_only_out_is_refused_before_building_or_playing(
    tmp_path: Path, command: str
) -> None:
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    # root ignores permission bits: then make the folder a read-only mount, as a user's would be
    wrap = (
        ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(out), str(out)]
        if os.geteuid() == 0
        else []
    )
    run = _arena(*COMMANDS[command](_unbuildable_bot(tmp_path)), "--out", str(out), wrap=wrap)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"error: cannot write to {out}: "), run.stderr
    assert len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr
    assert run.stdout == ""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_out_that_cannot_be_created_is_refused(tmp_path: Path, command: str) -> None:
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "games"
    run = _arena(*COMMANDS[command](_unbuildable_bot(tmp_path)), "--out", str(out))
    assert run.returncode == 2, run.stderr
    assert run.stderr == f"error: cannot write to {out}: Not a directory\n"


@pytest.mark.parametrize("command", ["match", "play"])
def test_a_full_disk_while_writing_the_record_is_one_line(tmp_path: Path, command: str) -> None:
    """The record's temporary file is ``/dev/full``: its write fails with ENOSPC, a full disk.
    (The person in ``play`` has no input: they forfeit, and the game plays to its end.)"""
    out = tmp_path / "full"
    out.mkdir()
    (out / "record.json.tmp").symlink_to("/dev/full")
    bot = str(REPO / "bots" / "python-random")
    argv = ["match", bot, bot] if command == "match" else ["play", bot, "--human"]
    run = _arena(*argv, "--out", str(out))
    assert run.returncode == 2, run.stderr
    # the game was played: the sandbox line came first, then the error alone on its line
    first, error = run.stderr.splitlines()
    assert first.startswith("sandbox ")
    record = out / "record.json"
    assert error == f"error: cannot write the game record {record}: No space left on device"
    assert not (out / "record.json").exists() and not (out / "record.json.tmp").exists()
