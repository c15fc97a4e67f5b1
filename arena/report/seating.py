"""Seat advantage: win rate by seat for each player count (the first-player effect).

Rotations give every bot every seat equally often, so with fair seats the win rate of each
seat would be about ``1 / n_players`` (a little more when first places are shared).
"""

from __future__ import annotations

import pandas as pd

SEAT_COLUMNS = ["n_players", "seat", "games", "wins", "win_rate", "fair_share", "mean_score"]


def seat_advantage(seats: pd.DataFrame) -> pd.DataFrame:
    """One row per (player count, seat) (``SEAT_COLUMNS``; seat 0 moves first)."""
    s = seats.assign(win=seats["rank"] == 1)
    grouped = s.groupby(["n_players", "seat"])
    out = pd.DataFrame(
        {
            "games": grouped.size(),
            "wins": grouped["win"].sum(),
            "mean_score": grouped["score"].mean(),
        }
    ).reset_index()
    out = out.astype({"n_players": "int64", "seat": "int64", "games": "int64", "wins": "int64"})
    out["win_rate"] = out["wins"] / out["games"]
    out["fair_share"] = 1.0 / out["n_players"]
    return out.reindex(columns=SEAT_COLUMNS).astype({"mean_score": "float64"})
