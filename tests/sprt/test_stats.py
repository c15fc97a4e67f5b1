"""The GSPRT math against closed forms and the reference formulas of fishtest."""

from __future__ import annotations

import math

import pytest

from arena.sprt.stats import (
    Pentanomial,
    SprtBounds,
    Verdict,
    elo_estimate,
    elo_of_score,
    likelihood_of_superiority,
    llr_approx,
    llr_logistic,
    llr_per_pair,
    mean_and_variance,
    mle_expected,
    results_to_pdf,
    score_of_elo,
)

REALISTIC = [
    Pentanomial(10, 80, 300, 90, 15),
    Pentanomial(40, 250, 900, 270, 45),
    Pentanomial(3, 21, 60, 25, 5),
]


def test_bounds_are_walds() -> None:
    b = SprtBounds(0, 10, alpha=0.05, beta=0.05)
    assert b.upper == pytest.approx(math.log(19))
    assert b.lower == pytest.approx(-math.log(19))
    b = SprtBounds(0, 5, alpha=0.05, beta=0.1)
    assert b.upper == pytest.approx(math.log(0.9 / 0.05))
    assert b.lower == pytest.approx(math.log(0.1 / 0.95))
    assert b.verdict(b.upper) is Verdict.H1
    assert b.verdict(b.lower) is Verdict.H0
    assert b.verdict(0.0) is Verdict.CONTINUE


@pytest.mark.parametrize(
    "kwargs", [{"elo0": 5, "elo1": 5}, {"alpha": 0.0}, {"beta": 0.7}, {"elo0": 3, "elo1": 1}]
)
def test_bad_bounds_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SprtBounds(**kwargs)


def test_logistic_elo_and_score() -> None:
    assert score_of_elo(0) == 0.5
    assert score_of_elo(400) == pytest.approx(10 / 11)
    for elo in (-350.0, -20.0, 3.0, 120.0):
        assert elo_of_score(score_of_elo(elo)) == pytest.approx(elo)


@pytest.mark.parametrize("s", [0.3, 0.5, 0.5143, 0.7])
@pytest.mark.parametrize("penta", REALISTIC)
def test_mle_is_a_distribution_with_the_wanted_mean(s: float, penta: Pentanomial) -> None:
    _, pdf = results_to_pdf(penta.counts)
    q = mle_expected(pdf, s)
    assert sum(p for _, p in q) == pytest.approx(1.0, abs=1e-9)
    assert sum(a * p for a, p in q) == pytest.approx(s, abs=1e-9)
    assert all(p > 0 for _, p in q)


@pytest.mark.parametrize("s", [0.45, 0.6])
def test_mle_maximises_the_likelihood(s: float) -> None:
    """Nudging the MLE along any direction that keeps sum and mean lowers the likelihood."""
    _, pdf = results_to_pdf(REALISTIC[0].counts)
    q = [p for _, p in mle_expected(pdf, s)]

    def loglik(dist: list[float]) -> float:
        return sum(p * math.log(d) for (_, p), d in zip(pdf, dist, strict=True))

    best = loglik(q)
    # directions orthogonal to (1,1,1,1,1) and to the values (0, .25, .5, .75, 1)
    for d in ([1, -2, 1, 0, 0], [0, 1, -2, 1, 0], [0, 0, 1, -2, 1], [1, -1, -1, 1, 0]):
        values = [a for a, _ in pdf]
        assert sum(d) == 0
        assert sum(x * v for x, v in zip(d, values, strict=True)) == pytest.approx(0)
        for eps in (1e-4, -1e-4):
            assert loglik([qi + eps * di for qi, di in zip(q, d, strict=True)]) < best


def test_two_outcomes_give_the_classical_sprt() -> None:
    """With only losses and wins the constrained MLE is (1 - s, s): Wald's binomial LLR."""
    wins, losses = 37, 23
    n = wins + losses
    pdf = [(0.0, losses / n), (1.0, wins / n)]
    s0, s1 = score_of_elo(0), score_of_elo(50)
    wald = wins * math.log(s1 / s0) + losses * math.log((1 - s1) / (1 - s0))
    assert n * llr_per_pair(pdf, s0, s1) == pytest.approx(wald, rel=1e-9)


@pytest.mark.parametrize("penta", REALISTIC)
@pytest.mark.parametrize(("elo0", "elo1"), [(0, 5), (-3, 1), (0, 10)])
def test_exact_llr_agrees_with_fishtest_approximations(
    penta: Pentanomial, elo0: float, elo1: float
) -> None:
    """fishtest's LLR_alt (0.5 N log(r0/r1)) and LLR_alt2 (fastchess's closed form) are
    second-order approximations of the GSPRT: close for small Elo differences."""
    total, pdf = results_to_pdf(penta.counts)
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    r0, r1 = (sum(p * (a - s) ** 2 for a, p in pdf) for s in (s0, s1))
    alt = total * 0.5 * math.log(r0 / r1)
    mean, var = mean_and_variance(pdf)
    alt2 = total * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)
    exact = llr_logistic(elo0, elo1, penta)
    assert exact == pytest.approx(alt, rel=0.02, abs=0.02)
    assert exact == pytest.approx(alt2, rel=0.02, abs=0.02)
    assert llr_approx(elo0, elo1, penta) == pytest.approx(alt2)


@pytest.mark.parametrize("penta", REALISTIC)
def test_mirrored_results_mirror_the_llr(penta: Pentanomial) -> None:
    mirrored = Pentanomial(*reversed(penta.counts))
    assert llr_logistic(-10, 0, mirrored) == pytest.approx(-llr_logistic(0, 10, penta))


def test_llr_grows_with_evidence_and_sign_follows_the_score() -> None:
    stronger = [
        llr_logistic(0, 10, Pentanomial(1 * k, 8 * k, 30 * k, 11 * k, 3 * k)) for k in (1, 4)
    ]
    assert 0 < stronger[0] < stronger[1]
    equal = llr_logistic(0, 10, Pentanomial(0, 10, 30, 10, 0))
    assert equal < 0
    assert llr_logistic(0, 10, Pentanomial()) == 0.0


def test_all_wins_need_about_log19_over_log_s1_s0_pairs() -> None:
    """A sweep cannot prove more than 'mean >= s1' per pair: LLR/pair -> log(s1/s0)."""
    s1 = score_of_elo(100)
    per_pair = llr_logistic(0, 100, Pentanomial(ww=50)) / 50
    assert per_pair == pytest.approx(math.log(s1 / 0.5), rel=0.02)


def test_elo_estimate_and_interval() -> None:
    penta = Pentanomial(10, 80, 300, 90, 15)
    est = elo_estimate(penta)
    points = 80 * 0.25 + 300 * 0.5 + 90 * 0.75 + 15 * 1.0
    assert est.score == pytest.approx(points / penta.pairs)
    assert est.elo == pytest.approx(elo_of_score(est.score))
    assert est.low < est.elo < est.high
    wider = elo_estimate(Pentanomial(1, 8, 30, 9, 2))
    assert wider.high - wider.low > est.high - est.low


@pytest.mark.parametrize("penta", [*REALISTIC, Pentanomial(0, 1, 3, 4, 1)])
def test_los_is_the_normal_cdf_of_the_mean_pair_score(penta: Pentanomial) -> None:
    """fishtest's pentanomial LOS, recomputed from the expanded pair scores."""
    from statistics import NormalDist, fmean, pvariance

    scores = [a / 4 for a, c in enumerate(penta.counts) for _ in range(c)]
    z = (fmean(scores) - 0.5) / math.sqrt(pvariance(scores) / len(scores))
    assert likelihood_of_superiority(penta) == pytest.approx(NormalDist().cdf(z), abs=1e-12)
    mirrored = Pentanomial(*reversed(penta.counts))
    assert likelihood_of_superiority(penta) + likelihood_of_superiority(mirrored) == (
        pytest.approx(1.0)
    )


def test_los_near_an_even_score_matches_the_single_game_formula() -> None:
    """Only LL and WW pairs are single games counted twice: CPW's trinomial LOS."""
    wins, losses = 52, 48
    penta = Pentanomial(losses, 0, 0, 0, wins)
    cpw = 0.5 * (1 + math.erf((wins - losses) / math.sqrt(2 * (wins + losses))))
    assert likelihood_of_superiority(penta) == pytest.approx(cpw, abs=2e-3)


def test_los_without_spread_or_games_is_certain_or_even() -> None:
    assert likelihood_of_superiority(Pentanomial()) == 0.5
    assert likelihood_of_superiority(Pentanomial(0, 0, 5, 0, 0)) == 0.5
    assert likelihood_of_superiority(Pentanomial(0, 0, 0, 0, 5)) == 1.0
    assert likelihood_of_superiority(Pentanomial(5, 0, 0, 0, 0)) == 0.0
