"""The TrueSkill kernels agree with the ``trueskill`` library (the reference)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import trueskill

from arena.ratings import DEFAULT_PARAMS, compiled
from arena.ratings.kernel import update_batch, update_one

ENV = DEFAULT_PARAMS.env()
KENV = DEFAULT_PARAMS.kernel_env()


def random_games(n: int, seed: int) -> list[tuple[list[float], list[float], list[int]]]:
    """Random 2/3/4-player games: priors and competition ranks, a third with ties."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.choice([2, 3, 4])
        mus = [rng.uniform(5, 45) for _ in range(k)]
        sigmas = [rng.uniform(0.5, 8.4) for _ in range(k)]
        ranks = list(range(1, k + 1))
        rng.shuffle(ranks)
        if rng.random() < 0.35:
            a, b = rng.sample(range(k), 2)
            ranks[a] = ranks[b]
        out.append((mus, sigmas, ranks))
    return out


def library(mus: list[float], sigmas: list[float], ranks: list[int]) -> list[tuple[float, float]]:
    groups = [(ENV.create_rating(m, s),) for m, s in zip(mus, sigmas, strict=True)]
    return [(r.mu, r.sigma) for (r,) in ENV.rate(groups, ranks=ranks)]


def rank_order(ranks: list[int]) -> tuple[list[int], list[bool]]:
    order = sorted(range(len(ranks)), key=lambda i: ranks[i])  # stable, as the library
    ties = [ranks[order[x]] == ranks[order[x + 1]] for x in range(len(ranks) - 1)]
    return order, ties


def tolerance(ranks: list[int]) -> float:
    # A shared place divides by a small difference of two CDFs: rounding grows there.
    return 1e-7 if len(set(ranks)) < len(ranks) else 1e-10


CASES = [g for g in random_games(600, seed=11)]


def test_scalar_kernel_matches_trueskill() -> None:
    checked = 0
    for mus, sigmas, ranks in CASES:
        try:
            want = library(mus, sigmas, ranks)
        except FloatingPointError:
            continue
        order, ties = rank_order(ranks)
        mu, sigma = update_one([mus[i] for i in order], [sigmas[i] for i in order], ties, KENV)
        for place, i in enumerate(order):
            assert mu[place] == pytest.approx(want[i][0], abs=tolerance(ranks))
            assert sigma[place] == pytest.approx(want[i][1], abs=tolerance(ranks))
        checked += 1
    assert checked > 500


def test_compiled_kernel_matches_trueskill() -> None:
    for mus, sigmas, ranks in CASES:
        try:
            want = library(mus, sigmas, ranks)
        except FloatingPointError:
            continue
        order, ties = rank_order(ranks)
        mu = np.array([mus[i] for i in order])
        sigma = np.array([sigmas[i] for i in order])
        tie = np.array([*ties, False, False])
        compiled.update_game(mu, sigma, tie, len(order), KENV.tau, KENV.beta2, KENV.margin)
        for place, i in enumerate(order):
            assert mu[place] == pytest.approx(want[i][0], abs=tolerance(ranks))
            assert sigma[place] == pytest.approx(want[i][1], abs=tolerance(ranks))


def test_vectorised_kernel_matches_trueskill_also_padded() -> None:
    """All games in one call, smaller games padded to 4 seats."""
    cases = []
    for mus, sigmas, ranks in CASES:
        try:
            cases.append((library(mus, sigmas, ranks), mus, sigmas, ranks))
        except FloatingPointError:
            continue
    m = len(cases)
    mu = np.full((m, 4), 25.0)
    sigma = np.full((m, 4), 8.0)
    ties = np.zeros((m, 3), dtype=bool)
    sizes = np.zeros(m, dtype=np.int64)
    for row, (_, mus, sigmas, ranks) in enumerate(cases):
        order, tie = rank_order(ranks)
        k = len(order)
        mu[row, :k] = [mus[i] for i in order]
        sigma[row, :k] = [sigmas[i] for i in order]
        ties[row, : k - 1] = tie
        sizes[row] = k
    new_mu, new_sigma = update_batch(mu, sigma, ties, KENV, sizes)
    for row, (want, _, _, ranks) in enumerate(cases):
        order, _ = rank_order(ranks)
        for place, i in enumerate(order):
            assert new_mu[row, place] == pytest.approx(want[i][0], abs=tolerance(ranks))
            assert new_sigma[row, place] == pytest.approx(want[i][1], abs=tolerance(ranks))


def test_iterations_stop_where_the_library_stops() -> None:
    """A looser ``min_delta`` in the library gives a different answer: the kernel's
    agreement is not an accident of full convergence."""
    mus, sigmas, ranks = [30.0, 20.0, 25.0, 22.0], [3.0, 6.0, 8.0, 2.0], [4, 1, 2, 3]
    want = library(mus, sigmas, ranks)
    groups = [(ENV.create_rating(m, s),) for m, s in zip(mus, sigmas, strict=True)]
    loose = ENV.rate(groups, ranks=ranks, min_delta=0.5)
    order, ties = rank_order(ranks)
    mu, _ = update_one([mus[i] for i in order], [sigmas[i] for i in order], ties, KENV)
    got = {i: mu[place] for place, i in enumerate(order)}
    assert got[0] == pytest.approx(want[0][0], abs=1e-10)
    assert abs(loose[0][0].mu - want[0][0]) > 1e-6


def test_trueskill_global_environment_is_not_used() -> None:
    trueskill.setup(mu=100.0, sigma=1.0, beta=1.0)
    try:
        mu, _ = update_one([25.0, 25.0], [25 / 3, 25 / 3], [False], DEFAULT_PARAMS.kernel_env())
    finally:
        trueskill.setup()
    assert 25 < mu[0] < 35


def test_games_side_by_side_are_each_rated_alone_bit_for_bit() -> None:
    """``update_lanes`` rates a 2-, 3- and two 4-player games together (they stop
    iterating at different passes): each exactly as alone, and as the scalar kernel."""
    picked = {2: [], 3: [], 4: []}  # type: dict[int, list[tuple[list[float], list[float], list[int]]]]
    for case in CASES:
        picked[len(case[0])].append(case)
    for start in range(0, 40, 4):
        games = [picked[2][start], picked[3][start], picked[4][start], picked[4][start + 1]]
        lanes = len(games)
        mu = np.zeros((lanes, 4))
        sigma = np.zeros((lanes, 4))
        ties = np.zeros((lanes, 4), dtype=bool)
        ks = np.array([len(g[0]) for g in games], dtype=np.int64)
        alone = []
        for lane, (mus, sigmas, ranks) in enumerate(games):
            order, tie = rank_order(ranks)
            mu[lane, : len(order)] = [mus[i] for i in order]
            sigma[lane, : len(order)] = [sigmas[i] for i in order]
            ties[lane, : len(tie)] = tie
            one_mu, one_sigma = mu[lane].copy(), sigma[lane].copy()
            compiled.update_game(
                one_mu, one_sigma, ties[lane], len(order), KENV.tau, KENV.beta2, KENV.margin
            )
            scalar = update_one(
                list(mu[lane, : len(order)]), list(sigma[lane, : len(order)]), tie, KENV
            )
            assert list(one_mu[: len(order)]) == scalar[0]
            assert list(one_sigma[: len(order)]) == scalar[1]
            alone.append((one_mu, one_sigma))
        scratch = np.zeros((lanes, compiled.SCRATCH_ROWS, 4))
        compiled.update_lanes(
            mu,
            sigma,
            ties,
            ks,
            lanes,
            KENV.tau,
            KENV.beta2,
            KENV.margin,
            scratch,
            np.zeros(lanes, dtype=bool),
            np.zeros(lanes),
        )
        for lane, (one_mu, one_sigma) in enumerate(alone):
            k = ks[lane]
            np.testing.assert_array_equal(mu[lane, :k], one_mu[:k])
            np.testing.assert_array_equal(sigma[lane, :k], one_sigma[:k])
