"""A misspelt setting is named with the closest known one, in the arena's words (not
pydantic's "Extra inputs are not permitted"), as a one-line error and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.competition.config import CompetitionConfigError, load_competition
from arena.validation import known_keys, unknown_key

ROOT = Path(__file__).resolve().parents[2]


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_a_tournament_file_with_misspelt_keys_says_did_you_mean(tmp_path: Path) -> None:
    bots = [str(ROOT / "bots" / "c-greedy"), str(ROOT / "bots" / "python-random")]
    (tmp_path / "cup.toml").write_text(
        f"bots = {bots!r}\nvarients = ['gray']\nzzqqx = 1\n[time]\nbnak_ms = 3000\n".replace(
            "'", '"'
        )
    )
    result = arena("tournament", "cup.toml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert "cup.toml: varients: unknown setting; did you mean `variants`?" in err
    assert "cup.toml: time.bnak_ms: unknown setting; did you mean `bank_ms`?" in err
    assert "cup.toml: zzqqx: unknown setting; known here: bots, " in err
    assert "Extra inputs" not in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()  # refused before anything ran


def test_a_competition_file_with_a_misspelt_key_says_did_you_mean(tmp_path: Path) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text("[ladder]\nplayrs = {2 = 1.0}\n")
    with pytest.raises(
        CompetitionConfigError,
        match=r"ladder\.playrs: unknown setting; did you "
        r"mean `players`\?",
    ):
        load_competition(toml)


def test_known_keys_follow_nested_and_optional_tables() -> None:
    from arena.tournament.config import TournamentConfig

    assert "bank_ms" in known_keys(TournamentConfig, ("time",))
    assert known_keys(TournamentConfig, ("bots", 0)) == []  # not a table
    assert unknown_key("seed", ["seeds", "master_seed"]) == (
        "unknown setting; did you mean `seeds`?"
    )
