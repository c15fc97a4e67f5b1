"""Head-to-head: how often one bot finished ahead of another in the games they shared.

"Ahead" means a strictly better rank. Ties are counted separately in the pairs table and
as half a point in the matrix: matrix[row, column] = (ahead + ties / 2) / shared games, so
matrix[a, b] + matrix[b, a] = 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from arena.report.data import Results

PAIR_COLUMNS = ["bot", "opponent", "games", "ahead", "behind", "ties", "score"]


def head_to_head_pairs(results: Results) -> pd.DataFrame:
    """One row per ordered pair of bots that shared a game (``PAIR_COLUMNS``)."""
    out = results.pair_totals.sort_values(["bot", "opponent"]).reset_index(drop=True)
    out = out.astype({"games": "int64", "ahead": "int64", "behind": "int64", "ties": "int64"})
    out["score"] = (out["ahead"] + 0.5 * out["ties"]) / out["games"]
    return out.reindex(columns=PAIR_COLUMNS)


def head_to_head_matrix(pairs: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    """Score of the row bot against the column bot (ties as half); missing if they never
    met. Rows and columns follow ``order`` (the leaderboard)."""
    index = pd.Index(list(order), name="bot")
    if pairs.empty:
        return pd.DataFrame(index=index, columns=index.rename("opponent"), dtype="float64")
    matrix = pairs.pivot(index="bot", columns="opponent", values="score")
    return matrix.reindex(index=index, columns=index.rename("opponent")).astype("float64")
