"""The TrueSkill kernel compiled with numba: every game of every sequence in machine code.

Same messages and schedule as ``arena.ratings.kernel`` (and so as the ``trueskill``
library), written as scalar loops over preallocated arrays so numba compiles them
(``cache=True``: compiled once per install, then loaded in ~0.1 s). The bootstrap's
resamples run in parallel threads (``prange`` over sequences; each sequence is rated
alone, so the result does not depend on the thread count). Without numba (``AVAILABLE``
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


class threads:
    """``with threads(n):`` run compiled parallel loops on ``n`` threads (None: all),
    one caller at a time (numba's default thread pool takes one parallel call at once)."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.previous = 0

    def __enter__(self) -> None:
        _PARALLEL.acquire()
        most = int(numba.config.NUMBA_NUM_THREADS)
        self.previous = numba.get_num_threads()
        numba.set_num_threads(most if self.n is None else max(1, min(self.n, most)))

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


@_jit()
def _down_trunc(x: int, s: FloatArray, tie: bool, margin: float) -> float:
    """Difference x down, its truncation up; s rows: q_p q_t l_p l_t r_p r_t d_p d_t t_p t_t."""
    p1 = s[0, x] + s[2, x]
    t1 = s[1, x] + s[3, x]
    p2 = s[0, x + 1] + s[4, x + 1]
    t2 = s[1, x + 1] + s[5, x + 1]
    mu = t1 / p1 - t2 / p2
    dp = 1.0 / (1.0 / p1 + 1.0 / p2)
    dt = dp * mu
    s[6, x] = dp
    s[7, x] = dt
    old_p = dp + s[8, x]
    old_t = dt + s[9, x]
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
    s[8, x] = new_p - dp
    s[9, x] = new_t - dt
    pi_delta = abs(old_p - new_p)
    if math.isinf(pi_delta):
        return 0.0
    change: float = max(abs(old_t - new_t), math.sqrt(pi_delta))
    return change


@_jit()
def _up_right(x: int, s: FloatArray) -> None:
    """Difference x to team x + 1 (the library's ``up(1)``)."""
    p1 = s[0, x] + s[2, x]
    t1 = s[1, x] + s[3, x]
    p2 = s[8, x]
    t2 = s[9, x]
    mu = t1 / p1 - t2 / p2
    pi = 1.0 / (1.0 / p1 + 1.0 / p2)
    s[2, x + 1] = pi
    s[3, x + 1] = pi * mu


@_jit()
def _up_left(x: int, s: FloatArray) -> None:
    """Difference x to team x (the library's ``up(0)``)."""
    p1 = s[8, x]
    t1 = s[9, x]
    p2 = s[0, x + 1] + s[4, x + 1]
    t2 = s[1, x + 1] + s[5, x + 1]
    mu = t1 / p1 + t2 / p2
    pi = 1.0 / (1.0 / p1 + 1.0 / p2)
    s[4, x] = pi
    s[5, x] = pi * mu


@_jit()
def update_game(
    mu: FloatArray,
    sigma: FloatArray,
    ties: npt.NDArray[np.bool_],
    k: int,
    tau: float,
    beta2: float,
    margin: float,
    s: FloatArray,
) -> None:
    """Rate one game of ``k`` bots in rank order: ``mu``/``sigma`` updated in place.
    ``s``: scratch of shape (12, >= k)."""
    for i in range(k):
        sig = math.sqrt(sigma[i] ** 2 + tau**2)
        pi0 = sig**-2.0
        tau0 = pi0 * mu[i]
        a = 1.0 / (1.0 + beta2 * pi0)
        pp = a * pi0
        pt = a * tau0
        qp = 1.0 / (1.0 / pp)
        s[0, i] = qp
        s[1, i] = qp * (pt / pp)
        s[10, i] = pi0
        s[11, i] = tau0
        for row in range(2, 10):
            s[row, i] = 0.0
    if k == 2:
        _down_trunc(0, s, ties[0], margin)
    else:
        for _ in range(MAX_ITERATIONS):
            delta = 0.0
            for x in range(k - 2):
                delta = max(delta, _down_trunc(x, s, ties[x], margin))
                _up_right(x, s)
            for x in range(k - 2, 0, -1):
                delta = max(delta, _down_trunc(x, s, ties[x], margin))
                _up_left(x, s)
            if delta <= MIN_DELTA:
                break
    _up_left(0, s)
    _up_right(k - 2, s)
    for i in range(k):
        mp = s[2, i] + s[4, i]
        mt = s[3, i] + s[5, i]
        msg_pi = 1.0 / (1.0 / mp)
        msg_tau = msg_pi * (mt / mp)
        a = 1.0 / (1.0 + beta2 * msg_pi)
        pi = s[10, i] + a * msg_pi
        mu[i] = (s[11, i] + a * msg_tau) / pi
        sigma[i] = math.sqrt(1.0 / pi)


def _rate_rows(
    cols: npt.NDArray[np.int64],
    ties: npt.NDArray[np.bool_],
    sizes: npt.NDArray[np.int64],
    positions: npt.NDArray[np.int64],
    mu: FloatArray,
    sigma: FloatArray,
    tau: float,
    beta2: float,
    margin: float,
) -> None:
    """Rate row r's games ``positions[r]`` in order into ``mu[r]``/``sigma[r]`` (in place).
    ``cols[g]``: the columns of game g's bots in rank order."""
    rows, length = positions.shape
    width = cols.shape[1]
    for r in prange(rows):
        s = np.zeros((12, width))
        gm = np.empty(width)
        gs = np.empty(width)
        for t in range(length):
            g = positions[r, t]
            k = sizes[g]
            for i in range(k):
                gm[i] = mu[r, cols[g, i]]
                gs[i] = sigma[r, cols[g, i]]
            update_game(gm, gs, ties[g], k, tau, beta2, margin, s)
            for i in range(k):
                mu[r, cols[g, i]] = gm[i]
                sigma[r, cols[g, i]] = gs[i]


rate_rows = _jit(parallel=True)(_rate_rows)
rate_rows_serial = _jit()(_rate_rows)
"""``rate_rows`` in the calling thread (for one sequence: no thread pool wake-ups)."""
