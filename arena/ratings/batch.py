"""Rate many game sequences at once with numpy (the bootstrap without numba).

Each row of ``positions`` is one sequence of games (positions into a ``GameTable``, in
the order to rate them; duplicates allowed). A game only reads and writes its own bots'
ratings, so two games with no bot in common commute bit for bit. We give every game of
a row its *level*, 1 + the highest level of an earlier game of that row sharing a bot,
and rate level by level: one ``update_batch`` call rates every game of that level in
every row. Each bot still sees its games in the row's order, so the result is the
sequential one, while the number of numpy calls drops from games x rows to the number of
levels (about games x players / bots for a large field; every game for 4 bots that all
play every 4-player game).
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from arena.ratings.games import GameTable
from arena.ratings.kernel import KernelEnv, update_batch

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def levels(
    table: GameTable, positions: IntArray | npt.NDArray[np.int32], n_bots: int
) -> npt.NDArray[np.int32]:
    """The level (1-based) of every entry of ``positions`` (rows, games)."""
    rows, length = positions.shape
    last = np.zeros((rows, n_bots + 1), dtype=np.int32)  # column n_bots: the padding
    out = np.empty((rows, length), dtype=np.int32)
    row = np.arange(rows)[:, None]
    bots = np.where(table.bots < 0, n_bots, table.bots)
    for t in range(length):
        seated = bots[positions[:, t]]
        level = last[row, seated].max(axis=1) + 1
        out[:, t] = level
        last[row, seated] = level[:, None]
        last[:, n_bots] = 0
    return out


def rate_rows(
    table: GameTable,
    positions: IntArray | npt.NDArray[np.int32],
    env: KernelEnv,
    mu0: float,
    sigma0: float,
    bot_columns: IntArray | None = None,
    n_columns: int | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Final (mu, sigma) of every bot (columns) after each row's games, from the prior.

    ``bot_columns`` maps the table's bot ids to output columns (default: the same);
    ``n_columns`` is the number of output columns (bots that never play keep the prior).
    """
    rows, length = positions.shape
    columns = np.arange(len(table.names)) if bot_columns is None else bot_columns
    width = len(table.names) if n_columns is None else n_columns
    mu = np.full((rows, width + 1), mu0)
    sigma = np.full((rows, width + 1), sigma0)
    if rows == 0 or length == 0:
        return mu[:, :width], sigma[:, :width]
    seat_cols = np.where(table.bots < 0, width, columns[np.maximum(table.bots, 0)])
    level = levels(table, positions, len(table.names)).ravel()
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(1, int(level.max()) + 2))
    flat_pos = positions.ravel()
    for lo, hi in itertools.pairwise(bounds):
        if lo == hi:
            continue
        entries = order[lo:hi]
        row = entries // length
        games = flat_pos[entries]
        sizes = table.sizes[games]
        k = int(sizes.max())
        cols = seat_cols[games, :k]
        cell = row[:, None] * (width + 1) + cols
        new_mu, new_sigma = update_batch(
            mu.ravel()[cell],
            sigma.ravel()[cell],
            table.ties[games, : k - 1],
            env,
            None if int(sizes.min()) == k else sizes,
        )
        mu.ravel()[cell] = new_mu
        sigma.ravel()[cell] = new_sigma
        mu[:, width] = mu0  # the padding column stays finite
        sigma[:, width] = sigma0
    return mu[:, :width], sigma[:, :width]
