"""Seat advantage: win rate by seat for each player count (the first-player effect).

Rotations give every bot every seat equally often, so with fair seats the win rate of each
seat would be about ``1 / n_players`` (a little more when first places are shared).
"""

from __future__ import annotations

import pandas as pd

from arena.report.data import Results

SEAT_COLUMNS = ["n_players", "seat", "games", "wins", "win_rate", "fair_share", "mean_score"]


def seat_advantage(results: Results) -> pd.DataFrame:
    """One row per (player count, seat) (``SEAT_COLUMNS``; seat 0 moves first)."""
    out = results.seat_totals.astype(
        {"n_players": "int64", "seat": "int64", "games": "int64", "wins": "int64"}
    )
    out["mean_score"] = out["score_sum"] / out["games"]
    out["win_rate"] = out["wins"] / out["games"]
    out["fair_share"] = 1.0 / out["n_players"]
    return out.reindex(columns=SEAT_COLUMNS).astype({"mean_score": "float64"})
