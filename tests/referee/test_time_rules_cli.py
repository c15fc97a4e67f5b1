"""The course's time rules end to end: ``arena match`` as a user runs it, sandbox on, a
real Python bot that spends chosen amounts of CPU time (a busy loop, not a sleep) on
chosen decisions. The rules are on the CPU clock, so how busy the host is changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]

BOT = """\
import json, sys, time

burn_ms = dict(tuple(map(int, part.split(":"))) for part in sys.argv[1].split(","))
count = 0
for raw in sys.stdin:
    msg = json.loads(raw)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "protocol": 1, "name": "slowbot"}), flush=True)
    elif msg["type"] == "decide":
        count += 1
        print(f"allowance {msg['time_left_ms']}", file=sys.stderr, flush=True)
        until = time.process_time() + burn_ms.get(count, 0) / 1000
        while time.process_time() < until:
            pass
        print(json.dumps({"type": "move", "id": msg["id"], "index": 0}), flush=True)
    elif msg["type"] == "quit":
        break
"""


def slow_bot(tmp_path: Path, burns: str) -> Path:
    """A bot folder that burns ``burns`` ("2:400,4:5000": decision 2 uses 400 ms of CPU
    time, decision 4 five seconds) and writes each decision's allowance to stderr."""
    folder = tmp_path / "slowbot"
    folder.mkdir()
    (folder / "bot.py").write_text(BOT)
    (folder / "bot.toml").write_text(
        f'name = "slowbot"\ncommand = "/usr/bin/python3 bot.py {burns}"\n'
    )
    for path in (tmp_path, folder, folder / "bot.py", folder / "bot.toml"):
        path.chmod(0o755)  # readable by the sandbox's per-bot uid
    return folder


def match(tmp_path: Path, bot: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "arena.cli", "match", str(bot), str(REPO / "bots/python-random")]
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    run = subprocess.run(
        [*cmd, *flags, "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run, orjson.loads((out / "record.json").read_bytes())


def seat0_decisions(record: Any) -> list[dict[str, Any]]:
    return [d for rnd in record["rounds"] for d in rnd["decisions"] if d["seat"] == 0]


def test_a_slow_move_earns_a_warning_then_one_over_the_hard_limit_forfeits(
    tmp_path: Path,
) -> None:
    bot = slow_bot(tmp_path, "2:400,4:5000")
    run, record = match(
        tmp_path, bot, "--time-per-move", "150", "--hard-time", "800", "--warnings", "3"
    )
    assert "bubblewrap" in run.stdout + run.stderr  # the sandbox was on
    assert [(w["seat"], w["round"]) for w in record["warnings"]] == [(0, 1)]
    assert "over its 150 ms (within the hard limit of 800 ms)" in record["warnings"][0]["message"]
    [fault] = record["faults"]
    assert (fault["seat"], fault["kind"], fault["forfeit"]) == (0, "timeout", True)
    assert fault["message"].startswith("over the hard limit: used ")
    mine = seat0_decisions(record)
    assert [d["auto"] for d in mine[:4]] == [False, False, False, True]  # the 2nd counted
    assert mine[1]["cpu_ms"] > 300  # the warned move's CPU time is in the record
    assert "warning seat 0 (slowbot): round 1: used" in run.stdout
    assert "over the hard limit" in run.stdout


def test_the_limit_th_warning_forfeits_and_round_starts_get_their_own_time(
    tmp_path: Path,
) -> None:
    bot = slow_bot(tmp_path, "2:400,3:400")
    _, record = match(
        tmp_path,
        bot,
        "--time-preset",
        "comp90054",
        "--time-per-move",
        "150",
        "--hard-time",
        "2000",
        "--warnings",
        "2",
        "--round-start-time",
        "1000",
    )
    assert [w["seat"] for w in record["warnings"]] == [0, 0]
    [fault] = record["faults"]
    assert fault["forfeit"] and fault["message"].startswith("warning 2 of 2, which forfeits")
    mine = seat0_decisions(record)
    assert [d["auto"] for d in mine[:4]] == [False, False, False, True]  # the 3rd counted
    said = [d["stderr"].strip() for d in mine[:3]]
    assert said == ["allowance 1000", "allowance 150", "allowance 150"]  # round 1's first


def test_check_bot_states_the_rules_and_the_warnings(tmp_path: Path) -> None:
    bot = slow_bot(tmp_path, "2:300")
    cmd = [sys.executable, "-m", "arena.cli", "check-bot", str(bot), "--games", "1"]
    run = subprocess.run(
        [*cmd, "--time-per-move", "150", "--hard-time", "800", "--warnings", "3"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    text = " ".join(run.stdout.split())
    assert "150 ms per decision (over it: a warning; over 800 ms forfeits, as does warning 3)" in (
        text
    )
    assert "1 decision(s) went over the soft time limit and earned a warning" in text
