"""The pentanomial GSPRT of fishtest and fastchess, in logistic Elo.

A *pair* is two games on the same deal with the seats swapped. NEW's pair score is
0, 0.5, 1, 1.5 or 2 (loss 0, draw 0.5, win 1 per game); the five counts of those
outcomes are the pentanomial ``LL, LD, WL+DD, WD, WW``. Pairing cancels most of the
luck of the deal, so the pairs' variance is smaller than that of single games and
the test needs fewer games.

The log-likelihood ratio is the generalized (GSPRT) one of fishtest's
``LLRcalc.LLR_logistic``: for each hypothesis the maximum-likelihood distribution of
the five outcomes whose expected score is that hypothesis's score, compared on the
observed counts (empty cells regularized with 1e-3, as fishtest does). Elo is
logistic Elo: ``score = 1 / (1 + 10 ** (-elo / 400))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The five pair outcomes as a per-game score (pair points / 2)."""
REGULARIZE = 1e-3
"""Stand-in count for an empty cell (fishtest's ``results_to_pdf``)."""
Z95 = 1.959963984540054


def score_of_elo(elo: float) -> float:
    """Expected score of a player ``elo`` logistic Elo stronger."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def elo_of_score(score: float) -> float:
    """Logistic Elo difference of an expected score (infinite at 0 and 1)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class Pentanomial:
    """Counts of NEW's pair outcomes: 0, 0.5, 1, 1.5 and 2 points out of 2."""

    ll: int = 0
    ld: int = 0
    wl_dd: int = 0
    wd: int = 0
    ww: int = 0

    @classmethod
    def of_pair_points(cls, points: Sequence[float]) -> Pentanomial:
        counts = [0] * 5
        for p in points:
            counts[round(p * 2)] += 1
        return cls(*counts)

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        return (self.ll, self.ld, self.wl_dd, self.wd, self.ww)

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    def __str__(self) -> str:
        return "[" + ", ".join(str(c) for c in self.counts) + "]"


Pdf = list[tuple[float, float]]
"""A discrete distribution: (value, probability) pairs, values ascending."""


def results_to_pdf(counts: Sequence[int | float]) -> tuple[float, Pdf]:
    """Total (regularized) count and the empirical distribution over PAIR_SCORES."""
    regular = [max(REGULARIZE, float(c)) for c in counts]
    total = sum(regular)
    last = len(regular) - 1
    return total, [(i / last, c / total) for i, c in enumerate(regular)]


def mean_and_variance(pdf: Pdf) -> tuple[float, float]:
    mean = sum(p * a for a, p in pdf)
    return mean, sum(p * (a - mean) ** 2 for a, p in pdf)


def mle_expected(pdf: Pdf, s: float) -> Pdf:
    """Maximum-likelihood distribution on pdf's values with expected value ``s``.

    The constrained maximum is ``p_i / (1 + x (a_i - s))`` where ``x`` solves
    ``sum p_i (a_i - s) / (1 + x (a_i - s)) = 0`` (van den Bergh, "support_MLE_multinomial").
    The left side decreases in ``x`` on the interval where every weight stays
    positive, so bisection finds the root.
    """
    low_value, high_value = pdf[0][0], pdf[-1][0]
    if not low_value < s < high_value:
        raise ValueError(f"expected score {s} outside ({low_value}, {high_value})")

    def f(x: float) -> float:
        return sum(p * (a - s) / (1.0 + x * (a - s)) for a, p in pdf)

    lo, hi = -1.0 / (high_value - s), 1.0 / (s - low_value)
    span = hi - lo
    lo, hi = lo + 1e-12 * span, hi - 1e-12 * span
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    x = (lo + hi) / 2.0
    return [(a, p / (1.0 + x * (a - s))) for a, p in pdf]


def llr_per_pair(pdf: Pdf, s0: float, s1: float) -> float:
    """Generalized log-likelihood ratio per observation, H1 (mean s1) over H0 (mean s0)."""
    q0, q1 = mle_expected(pdf, s0), mle_expected(pdf, s1)
    return sum(
        p * (math.log(b) - math.log(a)) for (_, p), (_, a), (_, b) in zip(pdf, q0, q1, strict=True)
    )


def llr_logistic(elo0: float, elo1: float, penta: Pentanomial) -> float:
    """fishtest's ``LLR_logistic`` for a pentanomial: the GSPRT statistic after these pairs."""
    if penta.pairs == 0:
        return 0.0
    total, pdf = results_to_pdf(penta.counts)
    return total * llr_per_pair(pdf, score_of_elo(elo0), score_of_elo(elo1))


def llr_approx(elo0: float, elo1: float, penta: Pentanomial) -> float:
    """The closed-form approximation ``N (s1-s0)(2 m - s0 - s1) / (2 var)`` (fishtest's
    ``LLR_alt2``, fastchess's formula): close to :func:`llr_logistic` for small Elo."""
    total, pdf = results_to_pdf(penta.counts)
    mean, var = mean_and_variance(pdf)
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    return total * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


class Verdict(StrEnum):
    H1 = "H1"
    """Accept H1: NEW is at least elo1 stronger (within the error rates)."""
    H0 = "H0"
    """Accept H0: NEW is at most elo0 stronger."""
    CONTINUE = "continue"


@dataclass(frozen=True)
class SprtBounds:
    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 ({self.elo0}) must be below elo1 ({self.elo1})")
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < value < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5, got {value}")

    @property
    def lower(self) -> float:
        """Accept H0 at or below this LLR: ``log(beta / (1 - alpha))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """Accept H1 at or above this LLR: ``log((1 - beta) / alpha)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def verdict(self, llr: float) -> Verdict:
        if llr >= self.upper:
            return Verdict.H1
        if llr <= self.lower:
            return Verdict.H0
        return Verdict.CONTINUE


@dataclass(frozen=True)
class EloEstimate:
    elo: float
    low: float
    high: float
    """95% confidence interval from the pairs' variance (normal approximation)."""
    score: float


def likelihood_of_superiority(penta: Pentanomial) -> float:
    """LOS: the probability that NEW is really stronger than OLD, ``Phi((m - 0.5) / se)``
    with ``m`` the mean pair score and ``se`` its standard error (fishtest's
    ``stat_util.get_elo`` for pentanomial results; near an even score it agrees with the
    chessprogramming wiki's single-game ``0.5 (1 + erf((W - L) / sqrt(2 (W + L))))``)."""
    if penta.pairs == 0:
        return 0.5
    score = sum(c * a for c, a in zip(penta.counts, PAIR_SCORES, strict=True)) / penta.pairs
    var = (
        sum(c * (a - score) ** 2 for c, a in zip(penta.counts, PAIR_SCORES, strict=True))
        / penta.pairs
    )
    if var == 0.0:
        return 1.0 if score > 0.5 else 0.0 if score < 0.5 else 0.5
    z = (score - 0.5) / math.sqrt(var / penta.pairs)
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def elo_estimate(penta: Pentanomial) -> EloEstimate:
    """NEW's Elo over OLD with a 95% interval, from the pairs (not the single games)."""
    if penta.pairs == 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5)
    points = sum(c * a for c, a in zip(penta.counts, PAIR_SCORES, strict=True))
    score = points / penta.pairs
    var = (
        sum(c * (a - score) ** 2 for c, a in zip(penta.counts, PAIR_SCORES, strict=True))
        / penta.pairs
    )
    half = Z95 * math.sqrt(var / penta.pairs)
    return EloEstimate(
        elo_of_score(score), elo_of_score(score - half), elo_of_score(score + half), score
    )
