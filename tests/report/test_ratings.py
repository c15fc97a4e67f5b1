"""TrueSkill ratings: schedule order, reproducibility, ties, bootstrap intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import trueskill

from arena.ratings import (
    DEFAULT_PARAMS,
    RankInterval,
    RatedGame,
    bootstrap_ranks,
    compute_ratings,
    conservative,
    rank_intervals,
    rate_games,
    rate_in_given_order,
    separable,
)
from arena.report import build_report, load_results

from .conftest import hand_games
from .helpers import Game, game, make_store

BOTS = ["ace", "bob", "cat", "dan"]


def dominant_games(n: int = 36) -> list[Game]:
    """``ace`` wins every game; the others' order cycles. 2-, 3- and 4-player games."""
    out = []
    for i in range(n):
        size = 2 + i % 3
        others = [BOTS[1 + (i + k) % 3] for k in range(size - 1)]
        seated = ["ace", *others]
        seated = seated[i % size :] + seated[: i % size]  # ace in every seat
        places = {"ace": 1} | {bot: 2 + k for k, bot in enumerate(others)}
        out.append(game(i, *((bot, 50 - places[bot], places[bot]) for bot in seated)))
    return out


def rated(games: list[Game]) -> list[RatedGame]:
    return [
        RatedGame(g.index, tuple(s.bot for s in g.seats), tuple(s.rank for s in g.seats))
        for g in games
    ]


def test_same_games_give_identical_ratings(tmp_path: Path) -> None:
    outdir = make_store(tmp_path, hand_games())
    first = build_report(load_results(outdir), bootstrap=20)
    second = build_report(load_results(outdir), bootstrap=20)
    pd.testing.assert_frame_equal(first.leaderboard, second.leaderboard, check_exact=True)
    pd.testing.assert_frame_equal(first.ratings.history, second.ratings.history, check_exact=True)


def test_completion_order_does_not_matter(tmp_path: Path) -> None:
    games = hand_games()
    in_order = make_store(tmp_path / "a", games)
    shuffled = make_store(tmp_path / "b", games, finish_order=[4, 2, 5, 0, 3, 1])
    a = build_report(load_results(in_order), bootstrap=20)
    b = build_report(load_results(shuffled), bootstrap=20)
    pd.testing.assert_frame_equal(a.leaderboard, b.leaderboard, check_exact=True)
    pd.testing.assert_frame_equal(a.ratings.history, b.ratings.history, check_exact=True)


def test_schedule_order_matters_as_documented(tmp_path: Path) -> None:
    """The same two results rate differently when their schedule indices are swapped:
    TrueSkill is order-dependent and ratings follow the schedule, by design."""
    win = (("x", 40, 1), ("y", 30, 2))
    loss = (("y", 45, 1), ("x", 20, 2))
    first = make_store(tmp_path / "a", [game(0, *win), game(1, *loss)])
    swapped = make_store(tmp_path / "b", [game(0, *loss), game(1, *win)])
    a = build_report(load_results(first), bootstrap=0).leaderboard.set_index("bot")
    b = build_report(load_results(swapped), bootstrap=0).leaderboard.set_index("bot")
    mu_a, mu_b = a["mu"].to_dict()["x"], b["mu"].to_dict()["x"]
    # The later result weighs more: x lost last in the first store.
    assert mu_a < mu_b


def test_rate_games_sorts_by_schedule_index() -> None:
    games = rated(dominant_games(12))
    backwards = list(reversed(games))
    assert rate_games(backwards) == rate_games(games)
    in_given = rate_in_given_order(backwards)
    assert in_given["ace"].mu != rate_games(games)["ace"].mu


def test_ties_are_ties() -> None:
    tie = rate_games([RatedGame(0, ("p", "q"), (1, 1))])
    assert tie["p"].mu == pytest.approx(tie["q"].mu)
    assert tie["p"].sigma < DEFAULT_PARAMS.sigma
    win = rate_games([RatedGame(0, ("p", "q"), (1, 2))])
    assert win["p"].mu > win["q"].mu
    # Matches trueskill's own draw handling with the same environment.
    env = DEFAULT_PARAMS.env()
    (p,), (_,) = env.rate([(env.create_rating(),), (env.create_rating(),)], ranks=[0, 0])
    assert (tie["p"].mu, tie["p"].sigma) == (p.mu, p.sigma)
    # A 4-player game with a shared second place: the tied pair moves together.
    four = rate_games([RatedGame(0, ("a", "b", "c", "d"), (1, 2, 2, 4))])
    assert four["b"].mu == pytest.approx(four["c"].mu, abs=0.01)  # EP tolerance
    assert four["a"].mu > four["b"].mu > four["d"].mu


def test_global_trueskill_environment_is_not_used() -> None:
    trueskill.setup(mu=100.0, sigma=1.0)
    try:
        ratings = rate_games([RatedGame(0, ("p", "q"), (1, 2))])
    finally:
        trueskill.setup()
    assert 25 < ratings["p"].mu < 35


def test_dominant_bot_is_first_and_separable(tmp_path: Path) -> None:
    outdir = make_store(tmp_path, dominant_games())
    report = build_report(load_results(outdir), bootstrap=30)
    top = report.leaderboard.iloc[0]
    assert top["bot"] == "ace"
    assert (top["rank_low"], top["rank_high"]) == (1, 1)
    assert bool(top["separable"])
    assert top["win_rate"] == 1.0
    # The other three are interchangeable (cycled places): not separable.
    assert not report.leaderboard["separable"].iloc[1:].any()


def test_history_ends_at_the_final_ratings() -> None:
    games = rated(dominant_games(9))
    ratings = compute_ratings(games, resamples=0)
    history = ratings.history
    assert list(history["game"]) == list(range(1, 10))
    assert list(history["game_index"]) == [g.game_index for g in games]
    last = history.iloc[-1]
    for _, r in ratings.table.iterrows():
        assert last[r["bot"]] == r["rating"]
    assert history.iloc[0]["dan"] == 0.0  # not seated yet: the prior's mu - 3 sigma


def test_unplayed_entrants_get_the_prior() -> None:
    ratings = compute_ratings(rated(dominant_games(3)), ["zed"], resamples=0)
    zed = ratings.table.set_index("bot").loc["zed"]
    assert zed["mu"] == DEFAULT_PARAMS.mu and zed["rating"] == pytest.approx(0.0)
    assert pd.isna(zed["rank_low"]) and pd.isna(zed["separable"])


def test_bootstrap_is_seeded_and_keeps_schedule_order() -> None:
    games = rated(dominant_games(15))
    a = bootstrap_ranks(games, BOTS, resamples=12, seed=7)
    b = bootstrap_ranks(list(reversed(games)), BOTS, resamples=12, seed=7)
    assert a.shape == (12, 4)
    np.testing.assert_array_equal(a, b)
    assert sorted(a[0]) == [1, 2, 3, 4]


def test_parallel_bootstrap_equals_serial() -> None:
    games = rated(dominant_games(15))
    serial = bootstrap_ranks(games, BOTS, resamples=6, seed=3, workers=1)
    parallel = bootstrap_ranks(games, BOTS, resamples=6, seed=3, workers=2)
    np.testing.assert_array_equal(serial, parallel)


def test_rank_intervals_and_separability() -> None:
    # 40 resamples; bot "a" always 1st; "b" and "c" swap 2nd/3rd half the time.
    samples = np.array([[1, 2, 3]] * 20 + [[1, 3, 2]] * 20, dtype=np.int64)
    intervals = rank_intervals(samples, ["a", "b", "c"])
    assert intervals == {
        "a": RankInterval(1, 1),
        "b": RankInterval(2, 3),
        "c": RankInterval(2, 3),
    }
    assert separable(["a", "b", "c"], intervals) == {"a": True, "b": False, "c": False}
    assert rank_intervals(np.zeros((0, 3), dtype=np.int64), ["a", "b", "c"]) == {}


def test_rank_interval_uses_the_outer_percentiles() -> None:
    # 1 of 40 resamples (2.5%) has "a" 2nd: the interval reaches out to include it.
    samples = np.array([[2, 1]] + [[1, 2]] * 39, dtype=np.int64)
    intervals = rank_intervals(samples, ["a", "b"])
    assert intervals == {"a": RankInterval(1, 2), "b": RankInterval(1, 2)}


def test_prior_conservative_rating_is_zero() -> None:
    assert conservative(DEFAULT_PARAMS.env().create_rating()) == pytest.approx(0.0)


def test_report_keeps_the_ratings_state_and_continues_it(tmp_path: Path) -> None:
    """Stored, not recomputed: the report stores the state up to the first game still to
    play, continues it next time, and always equals a from-scratch rating."""
    from dataclasses import replace

    from arena.ratings import IncrementalRatings
    from arena.report.build import RATINGS_CACHE, RATINGS_STATE
    from arena.store.tournament import STORE_NAME, Store

    from .helpers import result

    games = dominant_games(30)
    pending = {12, 20}  # still running when the first report is taken
    outdir = make_store(tmp_path, [replace(g, finished=g.index not in pending) for g in games])
    first = build_report(load_results(outdir), bootstrap=5)
    fresh = build_report(load_results(outdir), bootstrap=5, cache=False)
    pd.testing.assert_frame_equal(first.leaderboard, fresh.leaderboard, check_exact=True)
    state_file = outdir / RATINGS_CACHE / RATINGS_STATE
    stored = IncrementalRatings.from_json(state_file.read_text())
    assert (stored.applied, stored.last_index) == (12, 11)  # up to the first open game
    with Store(outdir / STORE_NAME) as store:
        for g in games:
            if g.index in pending:
                store.add_result(result(g))
    second = build_report(load_results(outdir), bootstrap=5)
    fresh = build_report(load_results(outdir), bootstrap=5, cache=False)
    pd.testing.assert_frame_equal(second.leaderboard, fresh.leaderboard, check_exact=True)
    pd.testing.assert_frame_equal(second.ratings.history, fresh.ratings.history, check_exact=True)
    stored = IncrementalRatings.from_json(state_file.read_text())
    assert stored.applied == 30
    # A damaged state is only a lost cache.
    state_file.write_text("{not json")
    third = build_report(load_results(outdir), bootstrap=5)
    pd.testing.assert_frame_equal(third.leaderboard, fresh.leaderboard, check_exact=True)
