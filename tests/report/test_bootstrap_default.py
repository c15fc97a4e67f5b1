"""The default bootstrap: 100 resamples, fewer past 500,000 games (a budget of rated
games), said in the report; an explicit ``--bootstrap`` is honoured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from arena.ratings import bootstrap, bootstrap_ranks, default_resamples
from arena.report import build_report, load_results
from arena.report.command import report_command
from arena.report.sections import method_note

from .helpers import make_store
from .test_ratings import dominant_games

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_count_keeps_within_the_budget() -> None:
    assert default_resamples(1_000) == 100
    assert default_resamples(500_000) == 100
    assert default_resamples(1_000_000) == 50
    assert default_resamples(1_250_000) == 40
    assert default_resamples(10_000_000) == bootstrap.MIN_RESAMPLES


def test_fewer_resamples_are_the_first_of_the_full_count(tmp_path: Path) -> None:
    """Cut for size, the intervals come from the same draws: the first 45 of the 100."""
    table = load_results(make_store(tmp_path, dominant_games())).rated
    bots = sorted(table.names)
    full = bootstrap_ranks(table, bots, resamples=100, seed=3)
    np.testing.assert_array_equal(bootstrap_ranks(table, bots, resamples=45, seed=3), full[:45])


def test_a_large_store_is_told_how_many_resamples_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the budget at 45 resamples of this store, the default rates 45 (the console,
    report.json and the method note say so) and ``--bootstrap 100`` still rates 100."""
    outdir = make_store(tmp_path, dominant_games())
    games = len(load_results(outdir).rated)
    monkeypatch.setattr(bootstrap, "RESAMPLE_BUDGET", 45 * games)
    console = Console(record=True, width=200)
    assert report_command(outdir, console=console) == 0
    printed = console.export_text()
    assert f"rank intervals from 45 bootstrap resamples: the default for {games:,} games" in (
        printed
    )
    summary = json.loads((outdir / "report" / "report.json").read_text())["summary"]
    assert summary["bootstrap"]["resamples"] == 45
    assert summary["bootstrap"]["requested"] is None
    again = Console(record=True, width=200)  # nothing new: printed from report.json
    assert report_command(outdir, console=again) == 0
    assert "rank intervals from 45 bootstrap resamples" in again.export_text()
    report = build_report(load_results(outdir), bootstrap=None, cache=False)
    assert "45 bootstrap resamples" in method_note(report)
    assert "the default for" in method_note(report)
    explicit = build_report(load_results(outdir), bootstrap=100, cache=False)
    assert explicit.ratings.resamples == 100
    assert "the default for" not in method_note(explicit)


def test_a_small_store_gets_the_full_default_from_the_command(tmp_path: Path) -> None:
    """``arena report`` as a user runs it: 100 resamples, the same intervals as asking
    for 100, and no note about a cut."""
    outdir = make_store(tmp_path, dominant_games())
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "arena.cli", "report", str(outdir)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "the default for" not in run.stdout
    summary = json.loads((outdir / "report" / "report.json").read_text())["summary"]
    assert summary["bootstrap"]["resamples"] == 100
    assert summary["bootstrap"]["requested"] is None
    asked = build_report(load_results(outdir), bootstrap=100, cache=False)
    tables = json.loads((outdir / "report" / "report.json").read_text())["tables"]
    got = {row["bot"]: (row["rank_low"], row["rank_high"]) for row in tables["leaderboard"]}
    for row in asked.leaderboard.itertuples():
        assert got[row.bot] == (row.rank_low, row.rank_high)
