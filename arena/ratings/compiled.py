"""The TrueSkill kernel compiled with numba: every game of every sequence in machine code.

Same messages and schedule as ``arena.ratings.kernel`` (and so as the ``trueskill``
library), written as scalar loops over preallocated arrays so numba compiles them
(``cache=True``: compiled once per install, ~5 s, then loaded in ~0.1 s). The
bootstrap's resamples run in parallel threads (``prange`` over groups of sequences), four
sequences side by side in each (``update_lanes``); each sequence is rated alone, so the
result depends on neither the thread count nor the grouping. Without numba (``AVAILABLE``
is False) callers fall back to the numpy path (``arena.ratings.batch``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from arena.ratings.kernel import _PDF_SCALE, _SQRT2, _W_MAX, _W_MIN, MAX_ITERATIONS, MIN_DELTA

numba: Any
try:  # pragma: no cover - exercised when numba is (not) installed
    import numba

    AVAILABLE = True
    prange: Any = numba.prange
except ImportError:  # pragma: no cover
    numba = None
    AVAILABLE = False
    prange = range


_PARALLEL = threading.Lock()


def thread_count(n: int | None) -> int:
    """The threads ``threads(n)`` runs on: ``n`` within numba's pool (None: all)."""
    if numba is None:  # pragma: no cover
        return 1
    most = int(numba.config.NUMBA_NUM_THREADS)
    return most if n is None else max(1, min(n, most))


class threads:
    """``with threads(n):`` run compiled parallel loops on ``n`` threads (None: all),
    one caller at a time (numba's default thread pool takes one parallel call at once)."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.previous = 0

    def __enter__(self) -> None:
        _PARALLEL.acquire()
        self.previous = numba.get_num_threads()
        numba.set_num_threads(thread_count(self.n))

    def __exit__(self, *exc: object) -> None:
        try:
            numba.set_num_threads(self.previous)
        finally:
            _PARALLEL.release()


FloatArray = npt.NDArray[np.float64]


def _jit(parallel: bool = False) -> Callable[[Any], Any]:
    def wrap(f: Any) -> Any:
        if numba is None:  # pragma: no cover
            return f
        # nogil: a bootstrap started early (``bootstrap.prefetch``) runs while the
        # caller's thread goes on reading the store.
        return numba.njit(cache=True, parallel=parallel, error_model="numpy", nogil=True)(f)

    return wrap


@_jit()
def _erfc(x: float) -> float:
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    poly = -0.82215223 + t * 0.17087277
    poly = 1.48851587 + t * poly
    poly = -1.13520398 + t * poly
    poly = 0.27886807 + t * poly
    poly = -0.18628806 + t * poly
    poly = 0.09678418 + t * poly
    poly = 0.37409196 + t * poly
    r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * poly))
    return 2.0 - r if x < 0 else r


@_jit()
def _cdf(x: float) -> float:
    e: float = _erfc(-x / _SQRT2)
    return 0.5 * e


@_jit()
def _pdf(x: float) -> float:
    return _PDF_SCALE * math.exp(-(x**2) / 2)


# Scratch rows of one game (columns: places in rank order).
_QP, _QT = 0, 1  # each team's performance message (from its prior)
_LP, _LT, _RP, _RT = 2, 3, 4, 5  # into team i from the difference on its left / right
_INV_L, _MU_L = 6, 7  # 1 / pi and mean of team i's performance + its left message
_TP, _TT = 8, 9  # the truncation message of difference x
_PI0, _TAU0 = 10, 11  # team i's prior with dynamics
_INV_R, _MU_R = 12, 13  # 1 / pi and mean of team i's performance + its right message
SCRATCH_ROWS = 14
LANES = 4
"""Games of different sequences rated side by side in one thread. One game's messages
are a chain of dependent divisions, square roots and exponentials, so a core runs one
game at a fraction of its speed; four independent chains interleaved keep it busy (a
4-player game 1.6x faster, measured in docs/benchmarks.md; more lanes gained nothing)."""


@_jit()
def _cache_left(s: FloatArray, lane: int, i: int) -> None:
    """Team i's performance with its left message, as the sums use it: 1 / pi and mean.
    Kept until that message changes (the library divides again at every use; the
    quotients are the same numbers, so caching them changes no bit)."""
    p = s[lane, _QP, i] + s[lane, _LP, i]
    s[lane, _INV_L, i] = 1.0 / p
    s[lane, _MU_L, i] = (s[lane, _QT, i] + s[lane, _LT, i]) / p


@_jit()
def _cache_right(s: FloatArray, lane: int, i: int) -> None:
    """``_cache_left`` for team i's right message."""
    p = s[lane, _QP, i] + s[lane, _RP, i]
    s[lane, _INV_R, i] = 1.0 / p
    s[lane, _MU_R, i] = (s[lane, _QT, i] + s[lane, _RT, i]) / p


@_jit()
def _down_trunc(s: FloatArray, lane: int, x: int, tie: bool, margin: float) -> float:
    """Difference x down, its truncation up; returns the change (the library's delta)."""
    mu = s[lane, _MU_L, x] - s[lane, _MU_R, x + 1]
    dp = 1.0 / (s[lane, _INV_L, x] + s[lane, _INV_R, x + 1])
    dt = dp * mu
    old_p = dp + s[lane, _TP, x]
    old_t = dt + s[lane, _TT, x]
    sqrt_pi = math.sqrt(dp)
    diff = dt / sqrt_pi
    m = margin * sqrt_pi
    if not tie:
        xx = diff - m
        denom = _cdf(xx)
        v = _pdf(xx) / denom if denom != 0.0 else -xx
        w = v * (v + xx)
    else:
        a = m - abs(diff)
        b = -m - abs(diff)
        den = _cdf(a) - _cdf(b)
        pa = _pdf(a)
        pb = _pdf(b)
        vd = (pb - pa) / den if den != 0.0 else a
        v = -vd if diff < 0 else vd
        w = vd**2 + (a * pa - b * pb) / den if den != 0.0 else 0.0
    w = min(max(w, _W_MIN), _W_MAX)
    new_p = dp / (1.0 - w)
    new_t = (dt + sqrt_pi * v) / (1.0 - w)
    s[lane, _TP, x] = new_p - dp
    s[lane, _TT, x] = new_t - dt
    pi_delta = abs(old_p - new_p)
    if math.isinf(pi_delta):
        return 0.0
    change: float = max(abs(old_t - new_t), math.sqrt(pi_delta))
    return change


@_jit()
def _up_right(s: FloatArray, lane: int, x: int) -> None:
    """Difference x to team x + 1 (the library's ``up(1)``)."""
    p2 = s[lane, _TP, x]
    mu = s[lane, _MU_L, x] - s[lane, _TT, x] / p2
    pi = 1.0 / (s[lane, _INV_L, x] + 1.0 / p2)
    s[lane, _LP, x + 1] = pi
    s[lane, _LT, x + 1] = pi * mu


@_jit()
def _up_left(s: FloatArray, lane: int, x: int) -> None:
    """Difference x to team x (the library's ``up(0)``)."""
    p1 = s[lane, _TP, x]
    mu = s[lane, _TT, x] / p1 + s[lane, _MU_R, x + 1]
    pi = 1.0 / (1.0 / p1 + s[lane, _INV_R, x + 1])
    s[lane, _RP, x] = pi
    s[lane, _RT, x] = pi * mu


@_jit()
def update_lanes(
    mu: FloatArray,
    sigma: FloatArray,
    ties: npt.NDArray[np.bool_],
    ks: npt.NDArray[np.int64],
    lanes: int,
    tau: float,
    beta2: float,
    margin: float,
    s: FloatArray,
    done: npt.NDArray[np.bool_],
    delta: FloatArray,
) -> None:
    """Rate ``lanes`` independent games at once, game ``l`` of ``ks[l]`` bots in rank
    order in row ``l`` of ``mu``/``sigma``/``ties`` (updated in place). Each game gets
    exactly its own schedule: it stops iterating when its own change is small enough (the
    library's test), the others go on. ``s``: scratch of shape (>= lanes,
    ``SCRATCH_ROWS``, >= max k); ``done``, ``delta``: scratch of >= lanes."""
    widest = 2
    for lane in range(lanes):
        k = ks[lane]
        widest = max(widest, k)
        for i in range(k):
            sig = math.sqrt(sigma[lane, i] ** 2 + tau**2)
            pi0 = sig**-2.0
            tau0 = pi0 * mu[lane, i]
            a = 1.0 / (1.0 + beta2 * pi0)
            pp = a * pi0
            pt = a * tau0
            qp = 1.0 / (1.0 / pp)
            s[lane, _QP, i] = qp
            s[lane, _QT, i] = qp * (pt / pp)
            s[lane, _PI0, i] = pi0
            s[lane, _TAU0, i] = tau0
            s[lane, _LP, i] = 0.0
            s[lane, _LT, i] = 0.0
            s[lane, _RP, i] = 0.0
            s[lane, _RT, i] = 0.0
            s[lane, _TP, i] = 0.0
            s[lane, _TT, i] = 0.0
        for i in range(k - 1):
            _cache_left(s, lane, i)
            _cache_right(s, lane, i + 1)
        # Two bots: one difference, whose message does not depend on its own truncation
        # (the library's second pass changes nothing and stops).
        done[lane] = k == 2
        if k == 2:
            _down_trunc(s, lane, 0, ties[lane, 0], margin)
    if widest > 2:
        # Step by step across the lanes (not game after game): the steps of different
        # lanes are independent, so the core overlaps them.
        for _ in range(MAX_ITERATIONS):
            for lane in range(lanes):
                delta[lane] = 0.0
            for x in range(widest - 2):
                for lane in range(lanes):
                    if not done[lane] and x < ks[lane] - 2:
                        change = _down_trunc(s, lane, x, ties[lane, x], margin)
                        delta[lane] = max(delta[lane], change)
                        _up_right(s, lane, x)
                        _cache_left(s, lane, x + 1)
            for x in range(widest - 2, 0, -1):
                for lane in range(lanes):
                    if not done[lane] and x <= ks[lane] - 2:
                        change = _down_trunc(s, lane, x, ties[lane, x], margin)
                        delta[lane] = max(delta[lane], change)
                        _up_left(s, lane, x)
                        _cache_right(s, lane, x)
            moving = 0
            for lane in range(lanes):
                if not done[lane]:
                    if delta[lane] <= MIN_DELTA:
                        done[lane] = True
                    else:
                        moving += 1
            if moving == 0:
                break
    for lane in range(lanes):
        k = ks[lane]
        _up_left(s, lane, 0)
        _up_right(s, lane, k - 2)
        for i in range(k):
            mp = s[lane, _LP, i] + s[lane, _RP, i]
            mt = s[lane, _LT, i] + s[lane, _RT, i]
            msg_pi = 1.0 / (1.0 / mp)
            msg_tau = msg_pi * (mt / mp)
            a = 1.0 / (1.0 + beta2 * msg_pi)
            pi = s[lane, _PI0, i] + a * msg_pi
            mu[lane, i] = (s[lane, _TAU0, i] + a * msg_tau) / pi
            sigma[lane, i] = math.sqrt(1.0 / pi)


@_jit()
def update_game(
    mu: FloatArray,
    sigma: FloatArray,
    ties: npt.NDArray[np.bool_],
    k: int,
    tau: float,
    beta2: float,
    margin: float,
) -> None:
    """Rate one game of ``k`` bots in rank order: ``mu``/``sigma`` updated in place."""
    width = max(k, 2)
    gm = np.empty((1, width))
    gs = np.empty((1, width))
    gt = np.zeros((1, width), dtype=np.bool_)
    gm[0, :k] = mu[:k]
    gs[0, :k] = sigma[:k]
    gt[0, : k - 1] = ties[: k - 1]
    ks = np.full(1, k, dtype=np.int64)
    update_lanes(
        gm,
        gs,
        gt,
        ks,
        1,
        tau,
        beta2,
        margin,
        np.zeros((1, SCRATCH_ROWS, width)),
        np.zeros(1, dtype=np.bool_),
        np.zeros(1),
    )
    mu[:k] = gm[0, :k]
    sigma[:k] = gs[0, :k]


def _rate_rows(
    cols: npt.NDArray[np.int64],
    ties: npt.NDArray[np.bool_],
    sizes: npt.NDArray[np.int64],
    positions: npt.NDArray[np.int32] | npt.NDArray[np.int64],
    mu: FloatArray,
    sigma: FloatArray,
    tau: float,
    beta2: float,
    margin: float,
    group: int = LANES,
) -> None:
    """Rate row r's games ``positions[r]`` in order into ``mu[r]``/``sigma[r]`` (in place).
    ``cols[g]``: the columns of game g's bots in rank order. Rows go in groups of
    ``group`` (at most ``LANES``), a group to a thread, its rows' games side by side in
    ``update_lanes``; every row is rated alone, so neither groups nor threads change a
    number."""
    rows, length = positions.shape
    width = cols.shape[1]
    per_group = min(LANES, max(1, group))
    for number in prange((rows + per_group - 1) // per_group):
        first = number * per_group
        lanes = min(per_group, rows - first)
        s = np.zeros((LANES, SCRATCH_ROWS, width))
        gm = np.empty((LANES, width))
        gs = np.empty((LANES, width))
        gt = np.zeros((LANES, width), dtype=np.bool_)
        ks = np.empty(LANES, dtype=np.int64)
        done = np.zeros(LANES, dtype=np.bool_)
        delta = np.zeros(LANES)
        for t in range(length):
            for lane in range(lanes):
                r = first + lane
                g = positions[r, t]
                k = sizes[g]
                ks[lane] = k
                for i in range(k):
                    gm[lane, i] = mu[r, cols[g, i]]
                    gs[lane, i] = sigma[r, cols[g, i]]
                for i in range(k - 1):
                    gt[lane, i] = ties[g, i]
            update_lanes(gm, gs, gt, ks, lanes, tau, beta2, margin, s, done, delta)
            for lane in range(lanes):
                r = first + lane
                g = positions[r, t]
                for i in range(ks[lane]):
                    mu[r, cols[g, i]] = gm[lane, i]
                    sigma[r, cols[g, i]] = gs[lane, i]


rate_rows = _jit(parallel=True)(_rate_rows)
rate_rows_serial = _jit()(_rate_rows)
"""``rate_rows`` in the calling thread (for one sequence: no thread pool wake-ups)."""
