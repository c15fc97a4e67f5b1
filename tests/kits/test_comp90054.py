"""The COMP90054 adapter kit: a course's framework agents play unchanged, sandboxed, with
the framework and a virtualenv (numpy) declared as the organiser's python_env, against a
framework stand-in written for these tests (tests/kits/comp90054_standin.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.kits import new_bot
from arena.referee import load_bot
from arena.referee.manifest import ManifestError

from .comp90054_standin import write_agent, write_framework
from .conftest import REPO, require_strict_sandbox


def arena(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )


def numpy_venv() -> str:
    """A real virtualenv with numpy in it: the one running the tests."""
    if sys.prefix == sys.base_prefix or importlib.util.find_spec("numpy") is None:
        pytest.skip("the tests do not run in a virtualenv with numpy")
    return sys.prefix


def course_bot(tmp_path: Path, kind: str, api: str) -> tuple[Path, Path]:
    """A bot made with `arena new-bot --language comp90054` holding an agent of ``kind``,
    and the stand-in framework's folder (to declare as a python_env)."""
    tmp_path.chmod(0o755)  # the per-bot uid must read it
    framework = write_framework(tmp_path / f"framework-{api}", api)
    made = arena("new-bot", f"course-{kind}", "--language", "comp90054", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stdout + made.stderr
    # The next step is the course's, not a starter kit's "edit choose()".
    assert "put your agent in player.py" in made.stdout and "--python-env" in made.stdout
    folder = tmp_path / f"course-{kind}"
    if api == "2021":
        (folder / "player.py").unlink()
        (folder / "comp90054.toml").write_text('framework_api = "2021"\n')
    write_agent(folder, kind, api)
    return folder, framework


def adapter_lines(logs: Path) -> list[str]:
    return [
        line
        for log in sorted(logs.rglob("course-*stderr.log"))
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
    ]


@pytest.mark.parametrize("api", ["2020", "2021"])
def test_twenty_games_against_the_greedy_bots_without_a_fault(tmp_path: Path, api: str) -> None:
    require_strict_sandbox()
    folder, framework = course_bot(tmp_path, "greedy", api)
    out = tmp_path / "tournament"
    run = arena(
        "tournament",
        "--bots", str(folder), "bots/python-greedy", "bots/c-greedy",
        "--schedule", "gauntlet", "--challengers", str(folder),
        "--players", "2", "--variants", "coloured", "--seeds", "5",
        "--sandbox", "strict", "--python-env", str(framework), "--out", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads((out / "report" / "report.json").read_text())["summary"]
    assert summary["finished"] == 20 and summary["faults"] == 0
    lines = adapter_lines(out / "logs")
    # Every decision compared the framework's legal moves with the referee's options.
    games = [line for line in lines if "decisions mapped" in line]
    assert len(games) == 20, lines[-20:]
    assert all(line.endswith(", 0 mismatches") for line in games)
    assert not [line for line in lines if "MISMATCH" in line]
    assert sum(int(line.split(": ")[-1].split()[0]) for line in games) > 20 * 15
    assert any(line.startswith("StartRound") for line in lines) == (api == "2020")


@pytest.mark.parametrize("api", ["2020", "2021"])
def test_numpy_from_the_python_env_and_print_goes_to_stderr(tmp_path: Path, api: str) -> None:
    require_strict_sandbox()
    venv = numpy_venv()
    folder, framework = course_bot(tmp_path, "numpy-chatty", api)
    out = tmp_path / "match"
    run = arena(
        "match", str(folder), "bots/python-greedy", "--sandbox", "strict",
        "--python-env", str(framework), "--python-env", venv, "--transcript", "--out", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "record.json").read_text())
    assert record["faults"] == []
    log = (out / "seat0-course-numpy-chatty.stderr.log").read_text()
    assert '{"type":"move","id":1,"index":0}' in log and "thinking about" in log
    assert "0 mismatches" in log
    sent = [p for p in out.iterdir() if "transcript" in p.name and "course" in p.name]
    assert sent, sorted(p.name for p in out.iterdir())
    replies = [line for line in sent[0].read_text().splitlines() if line.startswith("<")]
    assert replies and not [r for r in replies if "thinking" in r]


def test_the_adapter_refuses_an_illegal_move(tmp_path: Path) -> None:
    require_strict_sandbox()
    folder, framework = course_bot(tmp_path, "illegal", "2020")
    out = tmp_path / "match"
    run = arena("match", str(folder), "bots/python-greedy", "--python-env", str(framework),
                "--out", str(out))  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "record.json").read_text())
    (fault,) = record["faults"]
    assert fault["seat"] == 0 and fault["kind"] == "crash"
    assert "is not one of the" in fault["stderr_tail"] and "refusing it" in fault["stderr_tail"]
    assert "factory 99" in fault["stderr_tail"]


def test_check_bot_checks_what_the_kit_declares(tmp_path: Path) -> None:
    require_strict_sandbox()
    folder, framework = course_bot(tmp_path, "random", "2020")
    limited = arena("check-bot", str(folder), "--players", "2", "--walls", "coloured",
                    "--sandbox", "strict", "--python-env", str(framework))  # fmt: skip
    assert limited.returncode == 0, limited.stdout + limited.stderr
    assert "PASS" in limited.stdout and "2p coloured" in limited.stdout
    full = arena("check-bot", str(folder), "--python-env", str(framework))
    assert full.returncode == 1
    assert "declares players = [2], walls = ['coloured']" in full.stdout
    assert "--players 2 --walls coloured" in full.stdout and "Traceback" not in full.stderr


def test_without_the_framework_the_adapter_says_what_to_declare(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    folder = new_bot("no-framework", "comp90054", tmp_path)
    run = arena("check-bot", str(folder), "--players", "2", "--walls", "coloured")
    assert run.returncode == 1
    assert "cannot import the COMP90054 framework" in run.stdout
    assert "--python-env" in run.stdout


def test_a_python_env_must_exist(tmp_path: Path) -> None:
    run = arena("check-bot", "bots/python-greedy", "--python-env", str(tmp_path / "nowhere"))
    assert run.returncode == 2
    assert "python_env path" in run.stderr and "not an existing folder" in run.stderr
    assert "Traceback" not in run.stderr


def test_bot_toml_limits_are_checked(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('name = "x"\ncommand = "./x"\nplayers = [5]\n')
    with pytest.raises(ManifestError, match="players"):
        load_bot(tmp_path)
    (tmp_path / "bot.toml").write_text('name = "x"\ncommand = "./x"\nwalls = ["grey"]\n')
    with pytest.raises(ManifestError, match="walls"):
        load_bot(tmp_path)
    kit = load_bot(REPO / "bots" / "comp90054-adapter").manifest
    assert kit.plays(2, "coloured") and not kit.plays(3, "coloured")
    assert not kit.plays(2, "gray")


def test_a_tournament_refuses_to_seat_a_bot_where_it_declared_it_cannot_play() -> None:
    run = arena(
        "tournament", "--bots", "bots/comp90054-adapter", "bots/python-greedy", "bots/c-greedy",
        "--players", "3", "--out", "/nonexistent/never-written",
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert "bot comp90054-adapter declares players = [2]" in run.stderr
    assert "3-player coloured" in run.stderr and "Traceback" not in run.stderr


def test_python_env_puts_site_packages_and_folders_on_the_path(tmp_path: Path) -> None:
    from arena.referee.settings import PlaySettings
    from arena.referee.toolchains import python_path, sandbox_mounts

    venv = tmp_path / "venv"
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("version = 3.11\n")
    framework = tmp_path / "framework"
    framework.mkdir()
    play = PlaySettings.model_validate({"python_env": str(venv)})  # one string, or a list
    assert play.python_env == (str(venv),)
    play = PlaySettings(python_env=(str(framework), str(venv), "/usr/lib/python3/dist-packages"))
    assert python_path(play.python_env)["PYTHONPATH"].split(":") == [
        str(framework),
        str(venv / "lib" / "python3.11" / "site-packages"),
        "/usr/lib/python3/dist-packages",
    ]
    # /usr is in the sandbox already: only the others are bound.
    assert sandbox_mounts((), play.python_env) == (str(framework), str(venv))
    (venv / "lib" / "python3.11" / "site-packages").rmdir()
    with pytest.raises(ValueError, match="virtualenv without lib/python3"):
        PlaySettings(python_env=(str(venv),))
    with pytest.raises(ValueError, match="python_env path 'relative' must be absolute"):
        PlaySettings(python_env=("relative",))


def test_a_random_agent_replays_the_same_games(tmp_path: Path) -> None:
    """The adapter seeds the agent's randomness from the game: the same tournament (its
    game ids and deals) played again is the same games."""
    require_strict_sandbox()
    folder, framework = course_bot(tmp_path, "random", "2020")
    played = []
    for run in ("first", "again"):
        out = tmp_path / run
        ran = arena(
            "tournament", "--bots", str(folder), "bots/python-random", "--seeds", "3",
            "--python-env", str(framework), "--out", str(out), "--quiet",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        exported = arena("export", str(out), "--format", "jsonl", "--to", str(out / "x"))
        assert exported.returncode == 0, exported.stderr
        games = [json.loads(line) for line in (out / "x" / "games.jsonl").read_text().splitlines()]
        played.append(sorted((g["game_id"], g["rounds"], json.dumps(g["seats"])) for g in games))
    assert played[0] == played[1] and len(played[0]) == 6
    assert len({seats for _, _, seats in played[0]}) > 1  # really random games, not one game


def test_a_match_refuses_a_game_the_bot_declared_it_cannot_play() -> None:
    run = arena("match", "bots/comp90054-adapter", "bots/python-greedy", "--variant", "gray")
    assert run.returncode == 2
    assert "bot comp90054-adapter declares players = [2], walls = ['coloured']" in run.stderr
    assert "2-player gray game" in run.stderr and "Traceback" not in run.stderr
