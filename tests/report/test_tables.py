"""Report tables against figures computed by hand from ``conftest.hand_games``.

alpha: G0 win 40, G1 2nd 38 (beta 45), G2 shared win 33, G3 2nd 42 (gamma 50), G4 win 60
beta:  G0 2nd 30, G1 win 45, G2 shared win 33, G3 3rd 10, G4 forfeit 70 (alpha won 60)
gamma: G3 win 50, G4 2nd 20
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from arena.report import build_report, load_results
from arena.report.build import Report


@pytest.fixture
def report(hand_outdir: Path) -> Report:
    return build_report(load_results(hand_outdir), bootstrap=0)


def row(frame: pd.DataFrame, **where: object) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    assert mask.sum() == 1, where
    return frame.loc[mask].iloc[0]


def test_wins_scores_and_margins(report: Report) -> None:
    lb = report.leaderboard
    alpha, beta, gamma = (row(lb, bot=b) for b in ("alpha", "beta", "gamma"))
    assert (alpha["games"], alpha["wins"]) == (5, 3)  # the shared first place counts
    assert alpha["win_rate"] == pytest.approx(0.6)
    assert alpha["mean_score"] == pytest.approx(213 / 5)
    assert alpha["mean_margin"] == pytest.approx((0 + 7 + 0 + 8 + 0) / 5)
    assert (beta["games"], beta["wins"]) == (5, 2)
    assert beta["mean_score"] == pytest.approx(188 / 5)
    # The forfeited seat scored more than the winner: a negative margin in G4.
    assert beta["mean_margin"] == pytest.approx((10 + 0 + 0 + 40 - 10) / 5)
    assert (gamma["games"], gamma["wins"], gamma["win_rate"]) == (2, 1, 0.5)
    assert gamma["mean_margin"] == pytest.approx(20.0)


def test_faults_by_kind(report: Report) -> None:
    lb = report.leaderboard.set_index("bot")
    assert lb.loc["beta", "forfeits"] == 1
    assert lb.loc["beta", "faults_illegal"] == 1  # forgiven, still counted
    assert lb.loc["beta", "faults_malformed"] == 1
    assert lb.loc["beta", "faults_timeout"] == 1
    assert list(lb.loc["beta", ["faults_crash", "faults_init"]]) == [0, 0]
    fault_columns = [c for c in lb.columns if str(c).startswith("faults_")]
    assert lb.loc[["alpha", "gamma"], fault_columns].to_numpy().sum() == 0
    assert report.summary["faults"] == 3


def test_think_time(report: Report) -> None:
    alpha = report.leaderboard.set_index("bot").loc["alpha"]
    # decisions: G0 10 (mean 2, p95 4), G1 30 (mean 6, p95 8), three more games of 10 (1, 2)
    assert alpha["decisions"] == 70
    assert alpha["think_mean_ms"] == pytest.approx((10 * 2 + 30 * 6 + 30 * 1) / 70)
    assert alpha["think_p95_ms"] == pytest.approx((10 * 4 + 30 * 8 + 30 * 2) / 70)
    assert alpha["think_max_ms"] == 20


def test_head_to_head(report: Report) -> None:
    pairs = report.head_to_head_pairs
    ab = row(pairs, bot="alpha", opponent="beta")
    assert (ab["games"], ab["ahead"], ab["behind"], ab["ties"]) == (5, 3, 1, 1)
    assert ab["score"] == pytest.approx(0.7)
    ag = row(pairs, bot="alpha", opponent="gamma")
    assert (ag["games"], ag["ahead"], ag["behind"], ag["ties"]) == (2, 1, 1, 0)
    bg = row(pairs, bot="beta", opponent="gamma")
    assert (bg["ahead"], bg["behind"]) == (0, 2)
    matrix = report.head_to_head
    assert matrix.loc["alpha", "beta"] == pytest.approx(0.7)
    assert matrix.loc["beta", "alpha"] == pytest.approx(0.3)
    assert matrix.loc["beta", "gamma"] == 0.0
    assert matrix.isna().at["alpha", "alpha"]
    assert list(matrix.index) == list(report.leaderboard["bot"])  # leaderboard order


def test_seat_advantage(report: Report) -> None:
    seats = report.seat_advantage
    s20, s21 = row(seats, n_players=2, seat=0), row(seats, n_players=2, seat=1)
    assert (s20["games"], s20["wins"], s20["win_rate"]) == (3, 3, 1.0)
    assert (s21["games"], s21["wins"]) == (3, 1)
    assert s21["win_rate"] == pytest.approx(1 / 3)
    assert s20["mean_score"] == pytest.approx((40 + 45 + 33) / 3)
    assert s20["fair_share"] == 0.5
    assert row(seats, n_players=3, seat=0)["win_rate"] == 1.0
    assert row(seats, n_players=3, seat=2)["wins"] == 0
    assert row(seats, n_players=3, seat=1)["fair_share"] == pytest.approx(1 / 3)


def test_splits(report: Report) -> None:
    coloured = row(report.by_variant, variant="coloured", bot="alpha")
    assert (coloured["games"], coloured["wins"]) == (3, 1)
    assert coloured["mean_score"] == pytest.approx(40.0)
    gray = row(report.by_variant, variant="gray", bot="alpha")
    assert (gray["games"], gray["wins"], gray["win_rate"]) == (2, 2, 1.0)
    assert gray["mean_score"] == pytest.approx(46.5)
    two = row(report.by_players, n_players=2, bot="alpha")
    assert (two["games"], two["wins"], two["mean_score"]) == (3, 2, 37.0)
    three = row(report.by_players, n_players=3, bot="alpha")
    assert (three["games"], three["wins"], three["mean_score"]) == (2, 1, 51.0)
    assert len(report.by_players.query("n_players == 2 and bot == 'gamma'")) == 0


def test_summary_counts_only_finished_games(report: Report) -> None:
    s = report.summary
    assert (s["finished"], s["scheduled"], s["complete"]) == (5, 6, False)
    assert s["games_by_players"] == {"2": 3, "3": 2}
    assert s["games_by_variant"] == {"coloured": 3, "gray": 2}
    assert s["bots"] == 3
