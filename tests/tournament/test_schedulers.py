"""Schedulers: laziness, determinism under any completion order, resume, and for the
sampled schedule the three ladder pathologies (hogging, starving the leader, drifting
2p/4p shares)."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from arena.play.job import ScheduledGame
from arena.store.tournament import STORE_NAME, Store
from arena.tournament.runner import make_scheduler
from arena.tournament.schedule import Entrant, exhaustive_count
from arena.tournament.seating import is_follower_balanced, is_seat_balanced

from .simulate import by_strength, config, simulate

BOTS = [f"bot{i:02d}" for i in range(12)]
STRENGTH = {b: float(i) for i, b in enumerate(BOTS)}  # bot11 is the leader


def lineups(games: list[ScheduledGame]) -> list[tuple[int, str, tuple[str, ...], int]]:
    return [(g.game_index, g.game_id, g.bots, g.deal_seed) for g in games]


# ---------------------------------------------------------------- round-robin / gauntlet


@pytest.mark.parametrize("schedule", ["round-robin", "gauntlet"])
def test_exhaustive_schedules_resume_to_the_same_games(tmp_path: Path, schedule: str) -> None:
    bots = BOTS[:5]
    extra: dict[str, object] = {"players": [2, 3], "seeds": 2, "schedule": schedule}
    if schedule == "gauntlet":
        extra["challengers"] = [tmp_path / "a" / bots[0], tmp_path / "a" / bots[1]]
    whole = simulate(config(tmp_path / "a", bots, **extra), by_strength(STRENGTH), seed=1)
    if schedule == "gauntlet":
        extra["challengers"] = [tmp_path / "b" / bots[0], tmp_path / "b" / bots[1]]
    cut = config(tmp_path / "b", bots, **extra)
    simulate(cut, by_strength(STRENGTH), seed=2, stop_after=7)
    simulate(cut, by_strength(STRENGTH), seed=3, stop_after=20)
    resumed = simulate(cut, by_strength(STRENGTH), seed=4)
    assert lineups(resumed) == lineups(whole)
    challengers = 2 if schedule == "gauntlet" else 0
    assert len(whole) == exhaustive_count(5, [2, 3], 1, 2, "balanced", challengers)
    with Store(cut.output / STORE_NAME, readonly=True) as store:
        assert store.finished_count() == len(whole)
        assert store.integrity_problems() == []


def test_gauntlet_challengers_play_the_field_only(tmp_path: Path) -> None:
    bots = BOTS[:6]
    cfg = config(
        tmp_path,
        bots,
        players=[2, 3],
        schedule="gauntlet",
        challengers=[tmp_path / bots[0], tmp_path / bots[1]],
    )
    games = simulate(cfg, by_strength(STRENGTH))
    challengers = set(bots[:2])
    for g in games:
        assert len(challengers & set(g.bots)) == 1, g.bots
    met = {frozenset(g.bots) for g in games}
    field = bots[2:]
    for c in challengers:
        assert all(frozenset({c, f}) in met for f in field)


def test_round_robin_is_generated_lazily(tmp_path: Path) -> None:
    """100 bots, 4-player games, 1000 deals: ~47 billion games, first one at once."""
    names = [f"b{i:03d}" for i in range(100)]
    cfg = config(tmp_path, names, players=[4], seeds=1000)
    with Store(tmp_path / STORE_NAME) as store:
        started = time.process_time()
        scheduler = make_scheduler(cfg, store, [Entrant(n) for n in names])
        first = scheduler.next()
        assert time.process_time() - started < 5  # generous: it is microseconds
    assert scheduler.expected == 3_921_225 * 12 * 1000
    assert first[0].bots == ("b000", "b001", "b002", "b003")


def test_balanced_seatings_in_the_schedule(tmp_path: Path) -> None:
    games = simulate(config(tmp_path, BOTS[:4], players=[3, 4], seeds=1), by_strength(STRENGTH))
    sets: dict[tuple[int, str, int, frozenset[str]], list[tuple[str, ...]]] = defaultdict(list)
    for g in games:
        sets[(g.n_players, g.variant, g.seed_index, frozenset(g.bots))].append(g.bots)
    for (k, *_), lineups_ in sets.items():
        names = sorted(lineups_[0])
        as_positions = [tuple(names.index(b) for b in lineup) for lineup in lineups_]
        assert len(as_positions) == {3: 6, 4: 12}[k]
        assert is_seat_balanced(as_positions, k)
        assert is_follower_balanced(as_positions, k)
        assert len({g.deal_seed for g in games if frozenset(g.bots) == _[2]}) == 1


# ---------------------------------------------------------------- sampled


def sampled(tmp: Path, n_games: int, players: list[int], bots: list[str] = BOTS) -> object:
    return config(tmp, bots, schedule="sampled", games=n_games, players=players)


def counts_by_k(games: list[ScheduledGame]) -> dict[int, Counter[str]]:
    out: dict[int, Counter[str]] = defaultdict(Counter)
    for g in games:
        out[g.n_players].update(g.bots)
    return out


def test_sampled_is_deterministic_whatever_finishes_first(tmp_path: Path) -> None:
    one = simulate(sampled(tmp_path / "a", 300, [2, 4]), by_strength(STRENGTH), seed=1)
    two = simulate(sampled(tmp_path / "b", 300, [2, 4]), by_strength(STRENGTH), seed=99, window=3)
    assert lineups(one) == lineups(two)
    assert len(one) >= 300


def test_sampled_resumes_to_the_same_schedule(tmp_path: Path) -> None:
    whole = simulate(sampled(tmp_path / "a", 300, [2, 4]), by_strength(STRENGTH), seed=1)
    cut = sampled(tmp_path / "b", 300, [2, 4])
    simulate(cut, by_strength(STRENGTH), seed=5, stop_after=50)  # type: ignore[arg-type]
    simulate(cut, by_strength(STRENGTH), seed=6, stop_after=70)  # type: ignore[arg-type]
    resumed = simulate(cut, by_strength(STRENGTH), seed=7)  # type: ignore[arg-type]
    assert lineups(resumed) == lineups(whole)


def test_sampled_keeps_game_counts_even_crasher_and_leader_included(tmp_path: Path) -> None:
    """A crashing bot (always last, its rating stays uncertain longest) cannot hog the
    games, and the leader (no bot near its mu) is not starved: per player count, every
    bot's games are within one game set of every other's."""
    strength = dict(STRENGTH)
    strength["bot00"] = -100.0  # the crasher
    games = simulate(sampled(tmp_path, 600, [2, 4]), by_strength(strength))  # type: ignore[arg-type]
    set_size = {2: 2, 4: 12}
    for k, counts in counts_by_k(games).items():
        assert set(counts) == set(BOTS)
        assert max(counts.values()) - min(counts.values()) <= set_size[k], (k, counts)


def test_sampled_2p_and_4p_shares_do_not_drift(tmp_path: Path) -> None:
    games = simulate(sampled(tmp_path, 700, [2, 4]), by_strength(STRENGTH))  # type: ignore[arg-type]
    sets = Counter(g.n_players for g in games if g.rotation == 0)
    assert abs(sets[2] - sets[4]) <= 1
    # and for every bot: its share of 2p sets and of 4p sets is its fair share (within
    # one set), so no bot drifts towards one player count
    by_k = counts_by_k(games)
    for bot in BOTS:
        two, four = by_k[2][bot] / 2, by_k[4][bot] / 12  # game sets played
        assert abs(two - sets[2] * 2 / len(BOTS)) <= 1, (bot, two)
        assert abs(four - sets[4] * 4 / len(BOTS)) <= 1, (bot, four)


def test_sampled_spends_games_where_ratings_are_close(tmp_path: Path) -> None:
    """Once ratings separate, neighbours meet more often than the top and the bottom."""
    games = simulate(sampled(tmp_path, 1200, [2]), by_strength(STRENGTH))  # type: ignore[arg-type]
    late = [g for g in games if g.game_index >= 600]
    gap = Counter(abs(STRENGTH[g.bots[0]] - STRENGTH[g.bots[1]]) for g in late)
    near = sum(n for d, n in gap.items() if d <= 2)
    far = sum(n for d, n in gap.items() if d >= 9)
    assert near > 2 * far, gap


def test_sampled_rates_only_the_seated_bots_and_agrees_with_rating_every_game() -> None:
    """The sampled scheduler rates each set's games with only their bots in the rater
    (a pass over a 1,000-bot field per set was most of a set's cost): its ratings equal
    those of every finished game rated in schedule order, and unseated bots keep the
    prior exactly."""
    import random

    from arena.ratings import DEFAULT_PARAMS, RatedGame
    from arena.ratings.model import rate_in_given_order
    from arena.tournament.schedule import LAG, Finished, Sampled

    rng = random.Random(4)
    bots = [Entrant(f"b{i:02d}") for i in range(40)]
    sampled = Sampled(bots, [2, 4], ["coloured"], 400, 7, "rotations")
    played: list[RatedGame] = []
    while games := sampled.next():
        for game in games:
            ranks = list(range(1, game.n_players + 1))
            rng.shuffle(ranks)
            sampled.finished(Finished(game.game_index, game.bots, tuple(ranks)))
            played.append(RatedGame(game.game_index, game.bots, tuple(ranks)))
    rated = [g for g in played if g.game_index < sampled.prefix]
    assert sampled.prefix >= 400 - LAG - 4 and len(rated) == sampled.prefix
    expected = rate_in_given_order(rated)
    for bot in bots:
        skill = sampled.skills[bot.name]
        if bot.name in expected:
            assert skill.mu == pytest.approx(float(expected[bot.name].mu), abs=1e-9)
            assert skill.sigma == pytest.approx(float(expected[bot.name].sigma), abs=1e-9)
        else:
            assert (skill.mu, skill.sigma) == (DEFAULT_PARAMS.mu, DEFAULT_PARAMS.sigma)
