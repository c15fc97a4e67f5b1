"""The command line stays a thin registry: each command a small module, every ``--help``
working, one translation of the game flags, and user errors as one line (status 2)."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from arena import cli
from arena.cli import build_parser, main
from arena.commands.options import play_settings
from arena.commands.tournament import tournament_config

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "arena" / "cli.py"
COMMANDS = REPO / "arena" / "commands"


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_cli_py_is_a_small_registry() -> None:
    assert len(CLI.read_text(encoding="utf-8").splitlines()) < 120
    long = [(name, n) for name, n in _functions(CLI) if n > 40]
    assert not long, long


def test_every_command_module_registers_and_runs_briefly() -> None:
    """A command's ``run`` is a call into its package, not the package's work."""
    modules = {m.__name__.rsplit(".", 1)[1] for m in cli.COMMANDS}
    on_disk = {p.stem for p in COMMANDS.glob("*.py")} - {"__init__", "options", "output"}
    assert modules == on_disk  # no command module left out of the registry
    for module in cli.COMMANDS:
        assert callable(module.register) and callable(module.run), module.__name__
        path = Path(module.__file__ or "")
        long = [(n, k) for n, k in _functions(path) if n.startswith("run") and k > 40]
        assert not long, (path.name, long)


def _help_argvs() -> list[list[str]]:
    argvs = []
    for name, parser in _choices(build_parser()).items():
        argvs.append([name])
        if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            argvs += [[name, sub] for sub in _choices(parser)]
    return argvs


def test_the_registry_lists_every_command_once() -> None:
    names = [argv[0] for argv in _help_argvs() if len(argv) == 1]
    assert len(names) == len(set(names)) == len(cli.COMMANDS)
    assert {"match", "check-bot", "tournament", "serve", "token", "bench"} <= set(names)
    assert ["bench", "engine"] in _help_argvs()


@pytest.mark.parametrize("argv", _help_argvs(), ids=" ".join)
def test_help_of_every_command_works(argv: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "arena.cli", *argv, "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: arena {' '.join(argv)} "), run.stdout
    assert run.stderr == ""


def test_no_command_prints_the_help_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_a_user_error_is_one_line_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["match", str(REPO / "bots" / "python-random")]) == 2
    err = capsys.readouterr().err
    assert err == "error: a game needs 2, 3 or 4 bots, not 1\n"


def test_an_error_raised_in_a_package_is_one_line_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new-bot", "x", "--language", "cobol", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no starter kit for language 'cobol'") and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_the_game_flags_mean_the_same_for_a_match_and_a_tournament(tmp_path: Path) -> None:
    """One translation of the flags: a match and a tournament given the same flags play
    under the same settings."""
    flags = [
        "--time-per-move", "250", "--init-time", "3000", "--time-bank", "4000",
        "--increment", "10", "--clock", "wall", "--fault-policy", "strikes:2",
        "--round-limit", "30", "--sandbox", "off",
    ]  # fmt: skip
    bots = [str(REPO / "bots" / "python-random"), str(REPO / "bots" / "python-greedy")]
    parser = build_parser()
    play = play_settings(parser.parse_args(["match", *bots, *flags]))
    args = parser.parse_args(["tournament", "--bots", *bots, "--out", str(tmp_path), *flags])
    config = tournament_config(args)
    for field in ("time", "fault_policy", "sandbox", "round_limit", "toolchains"):
        assert getattr(config, field) == getattr(play, field), field
    assert play.time.move_ms == 250 and play.time.clock.value == "wall"
    assert str(play.fault_policy) == "strikes:2" and play.round_limit == 30


def test_an_absent_flag_keeps_the_tournament_files_value(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text('bots = ["a", "b"]\nround_limit = 7\n[time]\nmove_ms = 123\n')
    args = build_parser().parse_args(["tournament", str(toml), "--init-time", "2500"])
    config = tournament_config(args)
    assert (config.round_limit, config.time.move_ms, config.time.init_ms) == (7, 123, 2500)


def test_a_bad_flag_value_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    bots = [str(REPO / "bots" / "python-random")] * 2
    assert main(["match", *bots, "--fault-policy", "sometimes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "fault_policy" in err and "Traceback" not in err


def test_match_output_fits_80_columns_when_piped(tmp_path: Path) -> None:
    """COLUMNS=80 is honoured when output is piped (it was forced to 160), and the score
    table fits it with every bot's name whole."""
    import os
    import subprocess
    import sys

    bots = [str(REPO / "bots" / b) for b in ("python-greedy", "python-random", "js-random")]
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "match", *bots, "--out", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    boxed = [line for line in lines if line[:1] in "┏┃┡│└"]  # paths may run longer: whole
    assert len(boxed) == 7 and max(len(line) for line in boxed) <= 80
    table = [line for line in lines if line.startswith("│")]
    assert len(table) == 3
    assert {
        name
        for line in table
        for name in ("python-greedy", "python-random", "js-random")
        if f" {name} " in line
    } == {"python-greedy", "python-random", "js-random"}
