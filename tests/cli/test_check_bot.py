"""``arena check-bot`` as a user runs it, on small bots written here: the clock its timing
lines speak, the early did-you-flush answer, and a short check of a bot that sleeps."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BOT = """\
import json, sys, time
for raw in sys.stdin:
    msg = json.loads(raw)
    if msg["type"] == "hello":
        sys.stdout.write(json.dumps({"type": "ready", "protocol": 1, "name": "t"}) + "\\n")
        {flush}
    elif msg["type"] == "decide":
        time.sleep({sleep})
        print(json.dumps({{"type": "move", "id": msg["id"], "index": 0}}), flush=True)
    elif msg["type"] == "quit":
        break
"""


def bot(tmp_path: Path, name: str, *, flush: bool = True, sleep: float = 0.0) -> Path:
    tmp_path.chmod(0o755)
    folder = tmp_path / name
    folder.mkdir()
    source = BOT.replace("{flush}", "sys.stdout.flush()" if flush else "pass")
    source = source.replace("{sleep}", repr(sleep)).replace("{{", "{").replace("}}", "}")
    (folder / "bot.py").write_text(source)
    (folder / "bot.toml").write_text(f'name = "{name}"\ncommand = "/usr/bin/python3 bot.py"\n')
    folder.chmod(0o755)
    return folder


def check_bot(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "check-bot", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def test_a_ready_line_left_unflushed_is_named_once_the_bot_is_idle(tmp_path: Path) -> None:
    """The bot wrote its ready line into its buffer and waits for input: check-bot says so
    as soon as it is idle, not after the whole start-up allowance (25 s of wall time on
    the default CPU clock with 5 s of init time)."""
    result = check_bot(str(bot(tmp_path, "noflush", flush=False)))
    assert result.returncode == 1, result.stdout + result.stderr
    out = " ".join(result.stdout.split())
    found = re.search(r"no `ready` line within (\d+) ms — did you flush stdout\?", out)
    assert found, out
    assert int(found.group(1)) < 5000  # well before the 25 s ceiling
    assert "Traceback" not in result.stderr + result.stdout
    assert "sys.stdout.flush()" in out  # the language's flush idiom


def test_a_sleeping_bot_passes_is_charged_cpu_time_and_is_checked_briefly(
    tmp_path: Path,
) -> None:
    """0.3 s of sleep per decision with 400 ms per decision on the CPU clock: not charged,
    so no "more than half of their time" warning; the wall time is shown as not charged;
    and the games stop at the --budget (the first one is always played)."""
    folder = bot(tmp_path, "sleeper", sleep=0.3)
    result = check_bot(str(folder), "--time-per-move", "400", "--budget", "1")
    out = " ".join(result.stdout.split())
    assert result.returncode == 0, out + result.stderr
    assert "PASS" in out
    assert re.search(r"charged time median [\d.]+ ms, .* per decision on the cpu clock", out)
    assert "(not charged on the cpu clock)" in out
    assert "charged more than half" not in out and "more than half of their time" not in out
    assert re.search(r"games 1 of 6 vs random", out), out
    assert "check-bot starts no game after 1 s of games" in out
    assert re.search(r"waits \(sleeps or blocks\) about \d+ ms per decision", out)
    assert re.search(r"sandbox (auto|strict|off)", result.stderr)


def test_a_prompt_bot_plays_every_game(tmp_path: Path) -> None:
    result = check_bot(str(bot(tmp_path, "quick")), "--time-per-move", "400")
    out = " ".join(result.stdout.split())
    assert result.returncode == 0, out + result.stderr
    assert "games 6 vs random" in out and "waits (sleeps" not in out
