"""A newcomer's first hour, scripted on a fresh clone: ``make setup``, a first match, the
replays of two matches, a bot of one's own and its warm rebuild, a person (scripted)
against ``bots/c-greedy`` in the terminal, and a read-only ``--out`` refused before play.

Every step runs as a newcomer runs it: a subprocess of the clone's own ``.venv/bin/arena``
(``make setup`` is the real one: about a minute on the 2-core machine with pip's cache),
its output checked, and never a traceback.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP_TIMEOUT_S = 900
STEP_TIMEOUT_S = 300

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The working tree at HEAD, cloned, with ``make setup`` run in it."""
    if shutil.which("make") is None or not (ROOT / ".git").exists():
        pytest.skip("needs make and a git checkout to clone")
    where = tmp_path_factory.mktemp("newcomer") / "azul-arena"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where)], check=True)
    result = subprocess.run(
        ["make", "setup"],
        cwd=where,
        env=newcomer_env(where),
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (where / ".venv" / "bin" / "arena").exists()
    yield where


def newcomer_env(clone: Path) -> dict[str, str]:
    """The environment after ``. .venv/bin/activate``: the clone's arena first on PATH,
    nothing of this checkout's (no PYTHONPATH, no other venv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{clone / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    env["VIRTUAL_ENV"] = str(clone / ".venv")
    env["COLUMNS"] = "100"
    return env


def arena(clone: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``arena ARGS`` in the clone; (exit status, stdout + stderr), never a traceback."""
    result = subprocess.run(
        ["arena", *args],
        cwd=clone,
        env=env or newcomer_env(clone),
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text
    return result.returncode, text


def test_a_first_match_and_its_replay(clone: Path, tmp_path: Path) -> None:
    status, out = arena(
        clone, "match", "bots/c-greedy", "bots/js-random", "--out", "results/first-match"
    )
    assert status == 0, out
    assert "c-greedy" in out and "js-random" in out
    assert "sandbox " in out  # the layers in force, named before the game
    record = clone / "results" / "first-match" / "record.json"
    assert record.exists()
    status, out = arena(clone, "replay", str(record))
    assert status == 0, out


def test_two_matches_then_one_view_of_both(clone: Path, tmp_path: Path) -> None:
    """``arena view results/matches/*/record.json --open``: a replay and a tab each."""
    for _ in range(2):
        status, out = arena(clone, "match", "bots/python-greedy", "bots/python-random")
        assert status == 0, out
    records = sorted((clone / "results" / "matches").glob("*/record.json"))
    assert len(records) == 2
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    env = {**newcomer_env(clone), "BROWSER": str(browser)}
    status, out = arena(clone, "view", *map(str, records), "--open", env=env)
    assert status == 0, out
    for record in records:
        assert record.with_suffix(".html").exists()
    assert len(opened.read_text().split()) == 2


def test_a_new_bot_is_rebuilt_when_changed_and_reused_when_not(clone: Path) -> None:
    status, out = arena(clone, "new-bot", "my-bot", "--language", "c")
    assert status == 0, out
    assert (clone / "bots" / "my-bot" / "bot.toml").exists()
    status, first = arena(clone, "check-bot", "bots/my-bot")
    assert status == 0 and "PASS" in first, first
    source = clone / "bots" / "my-bot" / "bot.c"
    change = f"/* my first change, {time.time_ns()} */"  # never built before, anywhere
    source.write_text(source.read_text() + "\n" + change + "\n")
    status, changed = arena(clone, "check-bot", "bots/my-bot")
    assert status == 0 and "PASS" in changed, changed
    assert "build          ok" in changed  # the change was compiled
    status, warm = arena(clone, "check-bot", "bots/my-bot")
    assert status == 0 and "PASS" in warm, warm
    assert "build " not in warm  # the warm rebuild: nothing changed, the build is reused


def test_a_person_plays_c_greedy_in_the_terminal(clone: Path) -> None:
    """Scripted: the first listed move at every prompt. Stable facts only (another
    screen layout must not break it): the game ends, its record verifies, the bot made
    its own moves and neither seat faulted."""
    out_dir = clone / "results" / "person"
    transcript = play_through_pty(
        clone, ["arena", "play", "bots/c-greedy", "--human", "--out", str(out_dir)]
    )
    assert "Traceback" not in transcript, transcript[-2000:]
    record_path = out_dir / "record.json"
    assert record_path.exists(), transcript[-2000:]
    record = json.loads(record_path.read_text())
    assert record["faults"] == []
    decisions = [d for r in record["rounds"] for d in r["decisions"]]
    bot_moves = [d for d in decisions if d["seat"] == 1]
    assert bot_moves and not any(d.get("auto") for d in bot_moves)
    assert len(record["final"]) == 2
    status, out = arena(clone, "replay", str(record_path))
    assert status == 0, out


def answer(screen: str) -> str:
    """What the newcomer types at the latest prompt: the example move it offers (any
    legal move will do), or the wall column it suggests on the gray wall."""
    prompt = re.sub(r"\x1b\[[0-9;]*m", "", screen[screen.rfind("Your ") :])
    example = re.search(r"e\.g\. (\S+) =", prompt) or re.search(r"\(col(\d)", prompt)
    return example.group(1) if example else "1"


def play_through_pty(clone: Path, argv: list[str], limit_s: float = 600) -> str:
    """Run ``argv`` on a pseudo-terminal, answering every prompt (see :func:`answer`);
    the whole output once the process has exited."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the newcomer's shell
        os.chdir(clone)
        os.execvpe(argv[0], argv, newcomer_env(clone))
    chunks: list[bytes] = []
    answered = 0
    deadline = time.monotonic() + limit_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # the child closed the terminal: it exited
                    break
                if not data:
                    break
                chunks.append(data)
            text = b"".join(chunks).decode(errors="replace")
            prompts = text.count("s left:")
            if prompts > answered:
                os.write(fd, (answer(text) + "\n").encode())
                answered = prompts
        else:
            os.kill(pid, 9)
            pytest.fail("arena play did not finish:\n" + b"".join(chunks).decode()[-2000:])
    finally:
        _, wait_status = os.waitpid(pid, 0)
        os.close(fd)
    text = b"".join(chunks).decode(errors="replace")
    assert os.waitstatus_to_exitcode(wait_status) == 0, text[-2000:]
    assert answered > 0, text[-2000:]
    return text


def test_a_read_only_out_is_refused_before_play(clone: Path, tmp_path: Path) -> None:
    """Refused with exit 2 and one line, before any bot is built or game played."""
    target = tmp_path / "read-only"
    target.mkdir()
    argv = ["arena", "match", "bots/c-greedy", "bots/js-random", "--out", str(target / "m")]
    if os.geteuid() == 0:  # root writes through permissions: a read-only mount, private
        if shutil.which("unshare") is None:
            pytest.skip("needs unshare(1) to make a read-only folder as root")
        script = f"mount -t tmpfs -o ro tmpfs {target} && exec {' '.join(argv)}"
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
    else:
        target.chmod(0o555)
    result = subprocess.run(
        argv,
        cwd=clone,
        env=newcomer_env(clone),
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )
    text = result.stdout + result.stderr
    assert result.returncode == 2, text
    assert "Traceback" not in text
    assert f"cannot write to {target / 'm'}" in text
    assert "Round" not in text and "final" not in text  # no game was played
