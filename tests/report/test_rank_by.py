"""``arena report --rank-by final|points --points FORMULA``, as an organiser runs it."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.ratings.points import parse_formula
from arena.report.build import build_report
from arena.report.data import load_results
from arena.report.standings import RankingChoice

from .conftest import hand_games
from .helpers import Game, game, make_store

REPO = Path(__file__).resolve().parents[2]
BOTS = REPO / "bots"


def arena(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="160")
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real round-robin of three bundled Python bots (2 and 3 players, 2 deals)."""
    root = tmp_path_factory.mktemp("rank-by")
    twin = root / "python-random-2"
    shutil.copytree(BOTS / "python-random", twin)
    manifest = twin / "bot.toml"
    manifest.write_text(manifest.read_text().replace('"python-random"', '"python-random-2"'))
    out = root / "out"
    run = arena(
        "tournament",
        "--bots",
        str(BOTS / "python-greedy"),
        str(BOTS / "python-random"),
        str(twin),
        "--players",
        "2",
        "3",
        "--seeds",
        "2",
        "--workers",
        "2",
        "--sandbox",
        "off",
        "--bootstrap",
        "0",
        "--quiet",
        "--out",
        str(out),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def leaderboard_csv(out: Path) -> list[dict[str, str]]:
    with open(out / "report" / "leaderboard.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_rank_by_final_states_the_stability_audit_everywhere(tournament: Path) -> None:
    run = arena("report", str(tournament), "--rank-by", "final", "--bootstrap", "10")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "Strength" in run.stdout and "Held" in run.stdout
    assert "rank 1 (python-greedy) held in 100 % of 200 resamples" in run.stdout
    rows = leaderboard_csv(tournament)
    assert rows[0]["bot"] == "python-greedy"
    assert [int(r["rank"]) for r in rows] == [int(r["final_rank"]) for r in rows] == [1, 2, 3]
    assert float(rows[0]["final_held"]) == 1.0
    assert (rows[0]["final_low"], rows[0]["final_high"]) == ("1", "1")
    strengths = [float(r["final_strength"]) for r in rows]
    assert strengths == sorted(strengths, reverse=True)
    summary = json.loads((tournament / "report" / "report.json").read_text())["summary"]
    assert summary["ranking"]["rank_by"] == "final"
    assert summary["ranking"]["final"]["resamples"] == 200
    for page in ("report.md", "report.html", "index.html"):
        text = (tournament / "report" / page).read_text(encoding="utf-8")
        assert "rank 1 (python-greedy) held in 100 % of 200 resamples" in text, page
    assert "Bradley-Terry-Davidson" in (tournament / "report" / "report.md").read_text()


def test_rank_by_points_adds_points_and_failed_and_ranks_by_them(tournament: Path) -> None:
    formula = "50*wins + 20*ties + points - 100*failed"
    run = arena("report", str(tournament), "--rank-by", "points", "--points", formula)
    assert run.returncode == 0, run.stderr
    assert "Points" in run.stdout and "Failed" in run.stdout
    assert f"ranked by points = {formula}" in run.stdout
    rows = leaderboard_csv(tournament)
    for r in rows:
        expected = (
            50 * int(r["outright_wins"])
            + 20 * int(r["ties"])
            + float(r["score_sum"])
            - 100 * int(r["failed"])
        )
        assert float(r["points"]) == pytest.approx(expected)
        assert int(r["outright_wins"]) + int(r["ties"]) + int(r["losses"]) == int(r["games"])
    points = [float(r["points"]) for r in rows]
    assert points == sorted(points, reverse=True)
    assert rows[0]["bot"] == "python-greedy" and rows[0]["rank"] == "1"
    markdown = (tournament / "report" / "report.md").read_text(encoding="utf-8")
    assert "| Failed |" in markdown and "| Points |" in markdown


def test_the_default_stays_trueskill_without_the_new_columns(tournament: Path) -> None:
    run = arena("report", str(tournament), "--bootstrap", "0")
    assert run.returncode == 0, run.stderr
    rows = leaderboard_csv(tournament)
    assert not {"points", "failed", "final_rank"} & set(rows[0])
    assert "Held" not in run.stdout and "Points" not in run.stdout
    summary = json.loads((tournament / "report" / "report.json").read_text())["summary"]
    assert summary["ranking"] == {"rank_by": "trueskill", "points_formula": None}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--points", "__import__('os').system('touch pwned')"], "may not use"),
        (["--points", "wins ** 99"], "'**'"),
        (["--points", "bonus + wins"], "'bonus'"),
        (["--rank-by", "points"], "needs a formula"),
    ],
)
def test_bad_formulas_are_one_line_errors(
    tournament: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    run = arena("report", str(tournament), *args, cwd=tmp_path)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr + run.stdout
    assert message in run.stderr + run.stdout
    assert len((run.stderr + run.stdout).strip().splitlines()) == 1
    assert not (tmp_path / "pwned").exists()


def test_outcomes_of_the_hand_tournament(hand_outdir: Path) -> None:
    """Hand-counted: alpha won games 0 and 4 alone and shared game 2; beta won game 1,
    shared game 2 and forfeited game 4; gamma won game 3."""
    choice = RankingChoice("points", parse_formula("3*wins + ties - failed"))
    report = build_report(load_results(hand_outdir), bootstrap=0, cache=False, ranking=choice)
    lb = report.leaderboard.set_index("bot")
    assert lb.loc["alpha", ["outright_wins", "ties", "losses", "failed"]].tolist() == [2, 1, 2, 0]
    assert lb.loc["beta", ["outright_wins", "ties", "losses", "failed"]].tolist() == [1, 1, 3, 1]
    assert lb.loc["gamma", ["outright_wins", "ties", "losses", "failed"]].tolist() == [1, 0, 1, 0]
    assert lb["points"].to_dict() == {"alpha": 7.0, "beta": 3.0, "gamma": 3.0}
    # Equal points share a rank.
    assert lb["rank"].to_dict() == {"alpha": 1, "beta": 2, "gamma": 2}


def test_final_ranking_of_a_store_ignores_the_schedule_order(tmp_path: Path) -> None:
    games = [g for g in hand_games() if g.finished]
    reordered: list[Game] = [
        game(len(games) - 1 - g.index, *g.seats, variant=g.variant, faults=g.faults) for g in games
    ]
    choice = RankingChoice("final")
    first = build_report(
        load_results(make_store(tmp_path / "a", games)), bootstrap=0, cache=False, ranking=choice
    )
    second = build_report(
        load_results(make_store(tmp_path / "b", reordered)),
        bootstrap=0,
        cache=False,
        ranking=choice,
    )
    assert first.final == second.final
    columns = ["bot", "rank", "final_strength", "final_low", "final_high", "final_held"]
    assert first.leaderboard[columns].equals(second.leaderboard[columns])


def test_hostile_bot_names_in_the_stability_audit_are_shown_inert(tmp_path: Path) -> None:
    hostile = "[red]evil\x1b[2J</p><script>x</script>"
    games = [game(i, (hostile, 50, 1), ("meek", 10, 2)) for i in range(6)]
    out = make_store(tmp_path / "t", games)
    run = arena("report", str(out), "--rank-by", "final", "--bootstrap", "0")
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout
    assert "rank 1 ([red]evil" in run.stdout  # not read as rich markup
    pages = {
        name: (out / "report" / name).read_text(encoding="utf-8")
        for name in ("index.html", "report.html", "report.md")
    }
    for name, text in pages.items():
        audit = [line for line in text.splitlines() if "held in" in line]
        assert any("rank 1 ([red]evil\\x1b[2J" in line for line in audit), name
        assert all("\x1b" not in line for line in audit), name
        if name.endswith(".html"):
            assert all("<script>" not in line for line in audit), name
