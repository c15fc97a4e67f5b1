"""``arena sprt`` end to end: real refereed games between bots of known strength.

Deterministic: c-greedy is deterministic, python-random is seeded from the game id,
and every deal comes from the master seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.cli import main
from arena.sprt import SprtBounds, SprtConfig, Verdict, run_sprt

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "bots" / "c-greedy"
RANDOM = ROOT / "bots" / "python-random"


def test_strong_against_random_accepts_h1_fast(tmp_path: Path) -> None:
    status = run_sprt(
        SprtConfig(new=GREEDY, old=RANDOM, bounds=SprtBounds(0, 200), output=tmp_path)
    )
    assert status.verdict is Verdict.H1
    assert status.penta.pairs <= 8
    assert status.wins == status.games  # greedy wins every game against random
    assert status.faults == {}


def test_a_bot_against_itself_does_not_accept_h1(tmp_path: Path) -> None:
    status = run_sprt(
        SprtConfig(new=GREEDY, old=GREEDY, bounds=SprtBounds(0, 200), max_pairs=10, output=tmp_path)
    )
    assert status.verdict is not Verdict.H1
    assert status.verdict is Verdict.H0  # the same policy on the same deal: every pair splits
    assert status.penta.pairs == status.penta.wl_dd
    assert (status.new, status.old) == ("c-greedy.new", "c-greedy.old")


def test_weak_against_strong_accepts_h0(tmp_path: Path) -> None:
    status = run_sprt(
        SprtConfig(new=RANDOM, old=GREEDY, bounds=SprtBounds(0, 200), output=tmp_path)
    )
    assert status.verdict is Verdict.H0
    assert status.penta.pairs <= 6


def test_cli_prints_the_verdict_interval_and_next_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sprt"
    argv = ["sprt", str(GREEDY), str(RANDOM), "--elo1", "200", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "H1 accepted" in text and "Next:" in text and "Elo" in text
    summary = json.loads((out / "sprt.json").read_text())
    assert summary["verdict"] == "H1" and summary["pentanomial"][4] == summary["pairs"]
    # run again: the stored test is shown, no game is played
    assert main(argv) == 0
    assert "H1 accepted" in capsys.readouterr().out


def test_cli_refuses_more_than_two_players(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sprt", str(GREEDY), str(RANDOM), "--players", "4"]) == 2
    err = capsys.readouterr().err
    assert "2-player games only" in err and "arena tournament" in err


def test_cli_explains_bad_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sprt", str(GREEDY), str(RANDOM), "--elo0", "5", "--elo1", "5"]) == 2
    assert "must be below elo1" in capsys.readouterr().err
