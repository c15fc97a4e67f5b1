"""TrueSkill for free-for-all games of single-bot teams, without the factor-graph objects.

The ``trueskill`` library rates one game at a time through Python objects (~0.1 ms for a
2-player game, ~0.4 ms for 4 players). This module sends the same messages in the same
schedule as ``trueskill.TrueSkill.rate`` (prior with dynamics, performance likelihood,
team-difference sums, truncation with the library's own ``erfc`` approximation, the
forward/backward passes over the difference chain repeated until the largest change is at
most ``MIN_DELTA``, at most ``MAX_ITERATIONS`` times), in two forms:

* ``update_batch``: many games at once, as ``numpy`` columns (the bootstrap's fallback
  without numba, ``arena.ratings.batch``); each game stops iterating exactly when the
  library would;
* ``update_one``: one game with plain floats (incremental ratings without numba).

``arena.ratings.compiled`` is the third form, the one normally used: the same scalar
steps compiled by numba.

Both agree with ``trueskill`` to ~1e-12 (tests compare them on random 2/3/4-player games
with ties). Inputs are in *rank order* (the library's stable sort of seats by rank);
``ties[x]`` says whether places ``x`` and ``x + 1`` share a rank. The one deliberate
difference: where the library raises ``FloatingPointError`` (a result so surprising that
its truncation variance underflows), the kernel clamps it and carries on, because a
report must not die on one freak game.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import trueskill

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MIN_DELTA = 1e-4  # trueskill.DELTA
MAX_ITERATIONS = 10  # trueskill's run_schedule loop
_W_MIN = 1e-300
_W_MAX = 1.0 - 1e-16
_NO_PI = 1e-300
_SQRT2 = math.sqrt(2)
_PDF_SCALE = 1 / math.sqrt(2 * math.pi)


@dataclass(frozen=True)
class KernelEnv:
    """The constants one rating update needs (from ``TrueSkillParams``)."""

    tau: float  # dynamics noise
    beta2: float  # performance variance
    margin: float  # draw margin of a two-player difference

    @classmethod
    def of(cls, mu: float, sigma: float, beta: float, tau: float, draw: float) -> KernelEnv:
        env = trueskill.TrueSkill(
            mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw, backend=None
        )
        return cls(tau=tau, beta2=beta**2, margin=trueskill.calc_draw_margin(draw, 2, env))


# ------------------------------------------------------------------ numpy (many games)


def _erfc(x: FloatArray) -> FloatArray:
    """trueskill's pure-Python ``erfc`` (Numerical Recipes' Chebyshev fit), vectorised."""
    z = np.abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    poly = -0.82215223 + t * 0.17087277
    for c in (1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196):
        poly = c + t * poly
    r = t * np.exp(-z * z - 1.26551223 + t * (1.00002368 + t * poly))
    return np.where(x < 0, 2.0 - r, r)


def _cdf(x: FloatArray) -> FloatArray:
    return 0.5 * _erfc(-x / _SQRT2)


def _pdf(x: FloatArray) -> FloatArray:
    return _PDF_SCALE * np.exp(-(x**2) / 2)


def _v_w(diff: FloatArray, margin: FloatArray, tie: BoolArray | None) -> tuple[FloatArray, ...]:
    """trueskill's v/w truncation functions (win, or draw where ``tie``)."""
    x = diff - margin
    denom = _cdf(x)
    v = np.where(denom != 0, _pdf(x) / np.where(denom != 0, denom, 1.0), -x)
    w = v * (v + x)
    if tie is not None:
        d, m = diff[tie], margin[tie]
        a, b = m - np.abs(d), -m - np.abs(d)
        den = _cdf(a) - _cdf(b)
        safe = np.where(den != 0, den, 1.0)
        pa, pb = _pdf(a), _pdf(b)
        vd = np.where(den != 0, (pb - pa) / safe, a)
        v[tie] = np.where(d < 0, -vd, vd)
        w[tie] = vd**2 + (a * pa - b * pb) / safe
    return v, np.clip(w, _W_MIN, _W_MAX)


def _sum2(
    p1: FloatArray, t1: FloatArray, c2: float, p2: FloatArray, t2: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """SumFactor message from two terms ``1 * x1 + c2 * x2`` (given as precision/tau)."""
    mu = t1 / p1 + c2 * (t2 / p2)
    pi = 1.0 / (1.0 / p1 + 1.0 / p2)
    return pi, pi * mu


def update_batch(
    mu: FloatArray,
    sigma: FloatArray,
    ties: BoolArray,
    env: KernelEnv,
    sizes: npt.NDArray[np.int64] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """New (mu, sigma) of ``m`` games of up to ``k`` bots: arrays of shape (m, k) in rank
    order, ``ties`` of shape (m, k - 1).

    ``sizes`` (m,) lets smaller games ride along padded to ``k`` seats: the padding seats
    (any finite mu/sigma; their results are garbage) sit after the real ones, and their
    differences send no message, so a padded game gets exactly its own update.
    """
    m, k = mu.shape
    real = None if sizes is None else (np.arange(k - 1)[None, :] < (sizes[:, None] - 1))
    phantom = [False] * (k - 1) if real is None else [not bool(c.all()) for c in real.T]
    with np.errstate(all="ignore"):
        sig = np.sqrt(sigma**2 + env.tau**2)
        pi0 = sig**-2.0
        tau0 = pi0 * mu
        a = 1.0 / (1.0 + env.beta2 * pi0)
        perf_pi, perf_tau = a * pi0, a * tau0
        q_pi = 1.0 / (1.0 / perf_pi)  # the one-bot team's performance
        q_tau = q_pi * (perf_tau / perf_pi)
        q_p = [q_pi[:, i] for i in range(k)]
        q_t = [q_tau[:, i] for i in range(k)]
        zero = np.zeros(m)
        # Messages into team i from the difference on its left (L) and right (R).
        lp, lt = [zero] * k, [zero] * k
        rp, rt = [zero] * k, [zero] * k
        # Difference x: message from its sum factor (D) and from its truncation (T).
        dp, dt = [zero] * (k - 1), [zero] * (k - 1)
        tp, tt = [zero] * (k - 1), [zero] * (k - 1)
        margin = np.full(m, env.margin)
        tie_cols = [ties[:, x] if ties[:, x].any() else None for x in range(k - 1)]

        def down_trunc(x: int) -> FloatArray:
            """Difference x down, then its truncation up; returns the change."""
            dp[x], dt[x] = _sum2(
                q_p[x] + lp[x], q_t[x] + lt[x], -1.0, q_p[x + 1] + rp[x + 1], q_t[x + 1] + rt[x + 1]
            )
            old_p, old_t = dp[x] + tp[x], dt[x] + tt[x]
            sqrt_pi = np.sqrt(dp[x])
            v, w = _v_w(dt[x] / sqrt_pi, margin * sqrt_pi, tie_cols[x])
            new_p = dp[x] / (1.0 - w)
            new_t = (dt[x] + sqrt_pi * v) / (1.0 - w)
            tp[x], tt[x] = new_p - dp[x], new_t - dt[x]
            pi_delta = np.abs(old_p - new_p)
            change = np.maximum(np.abs(old_t - new_t), np.sqrt(pi_delta))
            change = np.where(np.isinf(pi_delta), 0.0, change)
            if phantom[x] and real is not None:
                # No message from a padding difference: precision ~0 (exactly 0 would
                # make the library's ``pi and tau / pi`` special case necessary).
                tp[x] = np.where(real[:, x], tp[x], _NO_PI)
                tt[x] = np.where(real[:, x], tt[x], 0.0)
                change = np.where(real[:, x], change, 0.0)
            return change

        def up_right(x: int) -> None:  # difference x to team x + 1
            lp[x + 1], lt[x + 1] = _sum2(q_p[x] + lp[x], q_t[x] + lt[x], -1.0, tp[x], tt[x])

        def up_left(x: int) -> None:  # difference x to team x
            rp[x], rt[x] = _sum2(tp[x], tt[x], 1.0, q_p[x + 1] + rp[x + 1], q_t[x + 1] + rt[x + 1])

        if k == 2:
            down_trunc(0)
        else:
            done = np.zeros(m, dtype=bool)
            final = [lp[:], lt[:], rp[:], rt[:], tp[:], tt[:]]
            for _ in range(MAX_ITERATIONS):
                delta = zero
                for x in range(k - 2):
                    delta = np.maximum(delta, down_trunc(x))
                    up_right(x)
                for x in range(k - 2, 0, -1):
                    delta = np.maximum(delta, down_trunc(x))
                    up_left(x)
                newly = (delta <= MIN_DELTA) & ~done
                if newly.any():
                    for kept, now in zip(final, (lp, lt, rp, rt, tp, tt), strict=True):
                        for i in range(len(kept)):
                            kept[i] = np.where(newly, now[i], kept[i])
                    done |= newly
                if done.all():
                    break
            else:  # games still moving after the last iteration keep where they are
                for kept, now in zip(final, (lp, lt, rp, rt, tp, tt), strict=True):
                    for i in range(len(kept)):
                        kept[i] = np.where(done, kept[i], now[i])
            lp, lt, rp, rt, tp, tt = final
        up_left(0)
        up_right(k - 2)
        new_mu = np.empty((m, k))
        new_sigma = np.empty((m, k))
        for i in range(k):
            mp, mt = lp[i] + rp[i], lt[i] + rt[i]
            msg_pi = 1.0 / (1.0 / mp)
            msg_tau = msg_pi * (mt / mp)
            a = 1.0 / (1.0 + env.beta2 * msg_pi)
            pi = pi0[:, i] + a * msg_pi
            new_mu[:, i] = (tau0[:, i] + a * msg_tau) / pi
            new_sigma[:, i] = np.sqrt(1.0 / pi)
    return new_mu, new_sigma


# ------------------------------------------------------------------ plain floats (one game)


def _erfc1(x: float) -> float:
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    poly = -0.82215223 + t * 0.17087277
    for c in (1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196):
        poly = c + t * poly
    r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * poly))
    return 2.0 - r if x < 0 else r


def _cdf1(x: float) -> float:
    return 0.5 * _erfc1(-x / _SQRT2)


def _pdf1(x: float) -> float:
    return _PDF_SCALE * math.exp(-(x**2) / 2)


def _v_w1(diff: float, margin: float, tie: bool) -> tuple[float, float]:
    if not tie:
        x = diff - margin
        denom = _cdf1(x)
        v = _pdf1(x) / denom if denom else -x
        w = v * (v + x)
    else:
        a, b = margin - abs(diff), -margin - abs(diff)
        den = _cdf1(a) - _cdf1(b)
        pa, pb = _pdf1(a), _pdf1(b)
        vd = (pb - pa) / den if den else a
        v = -vd if diff < 0 else vd
        w = vd**2 + (a * pa - b * pb) / den if den else 0.0
    return v, min(max(w, _W_MIN), _W_MAX)


def _sum2_1(p1: float, t1: float, c2: float, p2: float, t2: float) -> tuple[float, float]:
    mu = t1 / p1 + c2 * (t2 / p2)
    pi = 1.0 / (1.0 / p1 + 1.0 / p2)
    return pi, pi * mu


def update_one(
    mu: Sequence[float], sigma: Sequence[float], ties: Sequence[bool], env: KernelEnv
) -> tuple[list[float], list[float]]:
    """``update_batch`` for one game, in plain floats (no numpy call overhead)."""
    k = len(mu)
    pi0 = [(math.sqrt(s**2 + env.tau**2)) ** -2.0 for s in sigma]
    tau0 = [p * m for p, m in zip(pi0, mu, strict=True)]
    q_p, q_t = [], []
    for p, t in zip(pi0, tau0, strict=True):
        a = 1.0 / (1.0 + env.beta2 * p)
        qp = 1.0 / (1.0 / (a * p))
        q_p.append(qp)
        q_t.append(qp * ((a * t) / (a * p)))
    lp, lt, rp, rt = [0.0] * k, [0.0] * k, [0.0] * k, [0.0] * k
    dp, dt, tp, tt = [0.0] * (k - 1), [0.0] * (k - 1), [0.0] * (k - 1), [0.0] * (k - 1)

    def down_trunc(x: int) -> float:
        dp[x], dt[x] = _sum2_1(
            q_p[x] + lp[x], q_t[x] + lt[x], -1.0, q_p[x + 1] + rp[x + 1], q_t[x + 1] + rt[x + 1]
        )
        old_p, old_t = dp[x] + tp[x], dt[x] + tt[x]
        sqrt_pi = math.sqrt(dp[x])
        v, w = _v_w1(dt[x] / sqrt_pi, env.margin * sqrt_pi, ties[x])
        new_p = dp[x] / (1.0 - w)
        new_t = (dt[x] + sqrt_pi * v) / (1.0 - w)
        tp[x], tt[x] = new_p - dp[x], new_t - dt[x]
        pi_delta = abs(old_p - new_p)
        return 0.0 if math.isinf(pi_delta) else max(abs(old_t - new_t), math.sqrt(pi_delta))

    def up_right(x: int) -> None:
        lp[x + 1], lt[x + 1] = _sum2_1(q_p[x] + lp[x], q_t[x] + lt[x], -1.0, tp[x], tt[x])

    def up_left(x: int) -> None:
        rp[x], rt[x] = _sum2_1(tp[x], tt[x], 1.0, q_p[x + 1] + rp[x + 1], q_t[x + 1] + rt[x + 1])

    if k == 2:
        down_trunc(0)
    else:
        for _ in range(MAX_ITERATIONS):
            delta = 0.0
            for x in range(k - 2):
                delta = max(delta, down_trunc(x))
                up_right(x)
            for x in range(k - 2, 0, -1):
                delta = max(delta, down_trunc(x))
                up_left(x)
            if delta <= MIN_DELTA:
                break
    up_left(0)
    up_right(k - 2)
    new_mu, new_sigma = [], []
    for i in range(k):
        mp, mt = lp[i] + rp[i], lt[i] + rt[i]
        msg_pi = 1.0 / (1.0 / mp)
        msg_tau = msg_pi * (mt / mp)
        a = 1.0 / (1.0 + env.beta2 * msg_pi)
        pi = pi0[i] + a * msg_pi
        new_mu.append((tau0[i] + a * msg_tau) / pi)
        new_sigma.append(math.sqrt(1.0 / pi))
    return new_mu, new_sigma
