"""The final ranking: one batch fit over every finished game, whatever order they came in.

Online TrueSkill moves with the order games are fed; a final ranking must not. This fits a
Bradley-Terry-Davidson model (pairwise comparisons with ties) to the pairs every game
implies: in a game of 2-4 players each pair of seats is one comparison, the better place
winning it and a shared place a tie. With log-strengths ``theta`` and a tie parameter
``nu``, for bots ``i`` and ``j`` (``d = theta_i - theta_j``)::

    P(i ahead) = e^(d/2) / Z,  P(j ahead) = e^(-d/2) / Z,  P(tie) = nu / Z,
    Z = e^(d/2) + e^(-d/2) + nu

The fit reads only the counts of each pair's outcomes, so it cannot depend on the order
of the games. It is a penalised maximum likelihood (a tiny ridge on ``theta``: undefeated
bots stay finite, and the strengths are centred), found by damped Newton steps, many
resamples at once with ``numpy``. The pairs of one game are not independent, so the
uncertainty comes from resampling whole games:

* **bootstrap**: ``resamples`` draws of as many games as there are, with replacement;
  each bot's 95 % rank interval is the 2.5th-97.5th percentile of its refitted ranks,
  and ``held`` the share of draws where its rank was the same as in the full fit;
* **leave-k-out**: as many refits, each without ``leave_out`` games drawn at random
  (default a tenth): ``held_leave_out`` is the share where its rank held.

The games are put in a canonical order (by content) before anything is drawn, so the
same games give the same output, bit for bit, in any order and for any schedule
positions. Deterministic given ``seed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from arena.ratings.bootstrap import HIGH_PERCENTILE, LOW_PERCENTILE, RankInterval
from arena.ratings.games import GameTable, RatedGame

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DEFAULT_FINAL_RESAMPLES = 200
DEFAULT_FINAL_SEED = 20240607
RIDGE = 0.01
"""Penalty ``RIDGE/2 * sum(theta^2)``: a prior of standard deviation 10 on log-strength."""
TIE_PRIOR = (np.log(0.1), 1.0)
"""log(nu) is held near log(0.1) by a penalty of this weight (fields without ties)."""
MAX_STEP = 2.0
NEWTON_ITERATIONS = 100
TOLERANCE = 1e-10
CHUNK = 25
"""Resamples fitted together: bounds the memory (games x CHUNK weights)."""


@dataclass(frozen=True)
class FinalStanding:
    """One bot in the final ranking.

    ``strength``: fitted log-strength (centred; a difference of 1 means e:1 odds of
    finishing ahead, ties aside). ``interval``: bootstrap 95 % rank interval (None without
    resamples). ``held`` / ``held_leave_out``: share of bootstrap / leave-k-out refits in
    which the bot got exactly this ``rank`` (None without them).
    """

    bot: str
    rank: int
    strength: float
    interval: RankInterval | None
    held: float | None
    held_leave_out: float | None


@dataclass(frozen=True)
class FinalRanking:
    """The final ranking, best first, and how it was made."""

    standings: tuple[FinalStanding, ...]
    tie_parameter: float
    games: int
    resamples: int
    leave_out: int
    seed: int

    def by_bot(self) -> dict[str, FinalStanding]:
        return {s.bot: s for s in self.standings}


@dataclass(frozen=True)
class _Pairs:
    """Each game's comparisons: bots ``a`` and ``b`` (ids), ``a`` ahead or ``tie``."""

    game: IntArray
    a: IntArray
    b: IntArray
    tie: npt.NDArray[np.bool_]


def final_ranking(
    games: GameTable | Iterable[RatedGame],
    bots: Iterable[str] = (),
    *,
    resamples: int = DEFAULT_FINAL_RESAMPLES,
    leave_out: int | None = None,
    seed: int = DEFAULT_FINAL_SEED,
) -> FinalRanking:
    """Fit every finished game at once; ``bots`` lists entrants that may not have played
    (they get strength 0 from the prior). ``leave_out``: games left out per leave-k-out
    refit (default ``max(1, games // 10)``; 0 for none)."""
    table = games if isinstance(games, GameTable) else GameTable.from_games(games)
    names = sorted(set(bots) | set(table.names))
    column = {name: i for i, name in enumerate(names)}
    ids = np.array([column[n] for n in table.names] + [-1], dtype=np.int64)
    canonical = _canonical(table, ids)
    pairs = _pairs(canonical)
    n_games = len(canonical.sizes)
    resamples = max(0, resamples) if n_games else 0
    k = max(1, n_games // 10) if leave_out is None else max(0, leave_out)
    k = min(k, n_games - 1) if n_games > 1 else 0
    full = fit_strengths(pairs, np.ones((1, n_games)), len(names))
    theta = full[0][0]
    order = _order(theta, names)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(1, len(names) + 1)
    rng = np.random.default_rng(seed)
    boot = leave = None
    if resamples:
        boot = np.concatenate(
            [
                _ranks(fit_strengths(pairs, weights, len(names))[0], names)
                for weights in _bootstrap_weights(rng, n_games, resamples)
            ]
        )
        if k:
            leave = np.concatenate(
                [
                    _ranks(fit_strengths(pairs, weights, len(names))[0], names)
                    for weights in _leave_out_weights(rng, n_games, resamples, k)
                ]
            )
    standings = []
    for i in order:
        interval = held = held_leave = None
        if boot is not None:
            low = np.percentile(boot[:, i], LOW_PERCENTILE, method="lower")
            high = np.percentile(boot[:, i], HIGH_PERCENTILE, method="higher")
            interval = RankInterval(int(low), int(high))
            held = float(np.mean(boot[:, i] == rank[i]))
        if leave is not None:
            held_leave = float(np.mean(leave[:, i] == rank[i]))
        standings.append(
            FinalStanding(names[i], int(rank[i]), float(theta[i]), interval, held, held_leave)
        )
    return FinalRanking(
        standings=tuple(standings),
        tie_parameter=float(np.exp(full[1][0])),
        games=n_games,
        resamples=resamples,
        leave_out=k if resamples else 0,
        seed=seed,
    )


def _bootstrap_weights(
    rng: np.random.Generator, n_games: int, resamples: int
) -> Iterator[FloatArray]:
    """Each resample's multiplicity of every game, ``CHUNK`` resamples at a time."""
    for start in range(0, resamples, CHUNK):
        draws = rng.integers(0, n_games, size=(min(CHUNK, resamples - start), n_games))
        yield np.stack([np.bincount(row, minlength=n_games) for row in draws]).astype(np.float64)


def _leave_out_weights(
    rng: np.random.Generator, n_games: int, refits: int, k: int
) -> Iterator[FloatArray]:
    """Each refit's games (1) and the ``k`` left out (0), ``CHUNK`` refits at a time."""
    for start in range(0, refits, CHUNK):
        kept = np.ones((min(CHUNK, refits - start), n_games))
        for row in kept:
            row[rng.choice(n_games, size=k, replace=False)] = 0.0
        yield kept


def _canonical(table: GameTable, ids: IntArray) -> GameTable:
    """The games as bot columns of ``names``, sorted by content (not by schedule)."""
    bots = ids[np.where(table.bots >= 0, table.bots, len(ids) - 1)]
    keys = np.concatenate([bots, table.ties.astype(np.int64)], axis=1)
    order = np.lexsort(keys.T[::-1]) if len(keys) else np.zeros(0, dtype=np.int64)
    return GameTable(
        np.arange(len(order), dtype=np.int64),
        bots[order].astype(np.int32),
        table.ties[order],
        table.sizes[order],
        (),
    )


def _pairs(table: GameTable) -> _Pairs:
    """Every pair of places of every game (``a`` the better place, ``tie`` if shared)."""
    games, a, b, tie = [], [], [], []
    # A place's rank group: places x and x + 1 share one when ties[:, x].
    group = np.zeros(table.bots.shape, dtype=np.int64)
    if table.width > 1:
        group[:, 1:] = np.cumsum(~table.ties, axis=1)
    for x in range(table.width):
        for y in range(x + 1, table.width):
            seated = y < table.sizes
            games.append(np.nonzero(seated)[0])
            a.append(table.bots[seated, x].astype(np.int64))
            b.append(table.bots[seated, y].astype(np.int64))
            tie.append(group[seated, x] == group[seated, y])
    if not games:
        empty = np.zeros(0, dtype=np.int64)
        return _Pairs(empty, empty, empty, np.zeros(0, dtype=np.bool_))
    return _Pairs(np.concatenate(games), np.concatenate(a), np.concatenate(b), np.concatenate(tie))


def fit_strengths(pairs: _Pairs, weights: FloatArray, n_bots: int) -> tuple[FloatArray, FloatArray]:
    """Penalised Davidson fit for each row of game ``weights`` (games x multiplicity):
    log-strengths (rows x bots, centred) and log tie parameters (rows)."""
    rows = len(weights)
    n = n_bots
    # Outcome counts per ordered pair (a ahead of b) and per unordered pair (ties).
    lo, hi = np.minimum(pairs.a, pairs.b), np.maximum(pairs.a, pairs.b)
    key = np.where(pairs.tie, n * n + lo * n + hi, pairs.a * n + pairs.b)
    counts = np.stack(
        [np.bincount(key, weights=row[pairs.game], minlength=2 * n * n) for row in weights]
    )
    ahead = counts[:, : n * n].reshape(rows, n, n)
    ties = counts[:, n * n :].reshape(rows, n, n)
    ties = ties + ties.transpose(0, 2, 1)
    total = ahead + ahead.transpose(0, 2, 1) + ties  # comparisons of i and j, symmetric
    net = (ahead - ahead.transpose(0, 2, 1)) / 2.0  # (i ahead) - (j ahead), halved
    tie_count = ties.sum(axis=(1, 2)) / 2.0
    theta = np.zeros((rows, n))
    delta = np.full(rows, TIE_PRIOR[0])
    eye = np.eye(n + 1)
    for _ in range(NEWTON_ITERATIONS):
        d = theta[:, :, None] - theta[:, None, :]
        nu = np.exp(delta)[:, None, None]
        sinh, cosh = np.sinh(d / 2.0), np.cosh(d / 2.0)
        z = 2.0 * cosh + nu
        grad = np.empty((rows, n + 1))
        grad[:, :n] = (net - total * sinh / z).sum(axis=2) - RIDGE * theta
        grad[:, n] = (
            tie_count
            - (total * nu[:, :, :] / z).sum(axis=(1, 2)) / 2.0
            - TIE_PRIOR[1] * (delta - TIE_PRIOR[0])
        )
        # Hessian of the negated log-likelihood (positive definite with the penalties).
        h_dd = total * (cosh * z / 2.0 - sinh**2) / z**2  # per pair, d2/dd2
        h_dn = -total * sinh * nu / z**2  # d2/(dd ddelta), antisymmetric in i, j
        h_nn = (total * (nu * z - nu**2) / z**2).sum(axis=(1, 2)) / 2.0
        hess = np.zeros((rows, n + 1, n + 1))
        hess[:, :n, :n] = -h_dd
        diag = np.arange(n)
        hess[:, diag, diag] = h_dd.sum(axis=2) + RIDGE
        hess[:, :n, n] = h_dn.sum(axis=2)
        hess[:, n, :n] = hess[:, :n, n]
        hess[:, n, n] = h_nn + TIE_PRIOR[1]
        step = np.linalg.solve(hess + 1e-12 * eye, grad[:, :, None])[:, :, 0]
        biggest = np.abs(step).max(axis=1, keepdims=True)
        step = step * np.minimum(1.0, MAX_STEP / np.maximum(biggest, 1e-300))
        theta = theta + step[:, :n]
        delta = delta + step[:, n]
        if float(biggest.max()) < TOLERANCE:
            break
    return theta - theta.mean(axis=1, keepdims=True), delta


def _order(theta: FloatArray, names: Sequence[str]) -> IntArray:
    """Bots best first: strength (rounded, so refits of equal records agree), then name."""
    rounded = np.round(theta, 9)
    by_name = np.arange(len(names))  # names are sorted
    return np.lexsort((by_name, -rounded)).astype(np.int64)


def _ranks(theta: FloatArray, names: Sequence[str]) -> IntArray:
    """Each row's ranks (1 = best), columns as ``names``."""
    out = np.empty(theta.shape, dtype=np.int64)
    for row in range(len(theta)):
        out[row, _order(theta[row], names)] = np.arange(1, len(names) + 1)
    return out
