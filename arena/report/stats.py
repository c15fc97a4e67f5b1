"""Per-bot results tables: the non-rating half of the leaderboard and the splits.

Definitions (the report repeats them):

* a **win** is a first place; a shared first place is a win for each bot sharing it;
* **margin** = the winner's score minus the bot's score (0 when it won), averaged over
  games; the winner's score is the best score among first-placed seats, so a forfeited seat
  (which ranks last whatever its score) may have a negative margin;
* **faults** count every fault the referee recorded, forgiven strikes included;
* **think time**: the store keeps per-game summaries, not every decision, so the mean is
  exact (decision-weighted mean of per-game means) while the p95 is the decision-weighted
  mean of per-game p95s, an approximation of the true percentile; ``think_max_ms`` is exact.
  Think time is wall time (request written to reply read); ``cpu_mean_ms`` is the CPU time
  of the bot's process tree per decision, over the decisions where it was measured.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from arena.referee.faults import FAULT_KINDS

BOT_STAT_COLUMNS = [
    "games",
    "wins",
    "win_rate",
    "mean_score",
    "mean_margin",
    "forfeits",
    *(f"faults_{kind}" for kind in FAULT_KINDS),
    "decisions",
    "think_mean_ms",
    "think_p95_ms",
    "think_max_ms",
    "cpu_mean_ms",
]
SPLIT_COLUMNS = ["games", "wins", "win_rate", "mean_score"]


def with_margins(seats: pd.DataFrame) -> pd.DataFrame:
    """``seats`` plus ``win`` (rank 1) and ``margin`` (winner's score minus own score)."""
    out = seats.copy()
    out["win"] = out["rank"] == 1
    winners = out.loc[out["win"]].groupby("game_index")["score"].max()
    out["margin"] = out["game_index"].map(winners).astype("float64") - out["score"]
    return out


def bot_stats(seats: pd.DataFrame, faults: pd.DataFrame, bots: Sequence[str]) -> pd.DataFrame:
    """One row per bot (index ``bot``, every one of ``bots``; ``BOT_STAT_COLUMNS``)."""
    s = with_margins(seats)
    s["think_total"] = s["think_mean_ms"] * s["decisions"]
    s["think_p95_total"] = s["think_p95_ms"] * s["decisions"]
    measured = s["cpu_mean_ms"].notna()
    s["cpu_total"] = (s["cpu_mean_ms"] * s["decisions"]).where(measured, 0.0)
    s["cpu_decisions"] = s["decisions"].where(measured, 0)
    grouped = s.groupby("bot")
    out = pd.DataFrame(
        {
            "games": grouped.size(),
            "wins": grouped["win"].sum(),
            "mean_score": grouped["score"].mean(),
            "mean_margin": grouped["margin"].mean(),
            "forfeits": grouped["forfeit"].sum(),
            "decisions": grouped["decisions"].sum(),
            "think_total": grouped["think_total"].sum(),
            "think_p95_total": grouped["think_p95_total"].sum(),
            "think_max_ms": grouped["think_max_ms"].max(),
            "cpu_total": grouped["cpu_total"].sum(),
            "cpu_decisions": grouped["cpu_decisions"].sum(),
        }
    ).reindex(pd.Index(list(bots), name="bot"))
    for column in ("games", "wins", "forfeits", "decisions"):
        out[column] = out[column].fillna(0).astype("int64")
    out["win_rate"] = _ratio(out["wins"], out["games"])
    out["think_mean_ms"] = _ratio(out["think_total"], out["decisions"])
    out["think_p95_ms"] = _ratio(out["think_p95_total"], out["decisions"])
    out["cpu_mean_ms"] = _ratio(out["cpu_total"], out["cpu_decisions"].fillna(0))
    counts = fault_counts(faults, bots)
    out = out.join(counts)
    return out[[*BOT_STAT_COLUMNS, *(c for c in counts.columns if c not in BOT_STAT_COLUMNS)]]


def fault_counts(faults: pd.DataFrame, bots: Sequence[str]) -> pd.DataFrame:
    """Faults per bot and kind: ``faults_<kind>`` for the known kinds, plus any other
    kind found in the store (so nothing recorded is hidden)."""
    kinds = list(FAULT_KINDS) + sorted(set(faults["kind"]) - set(FAULT_KINDS))
    table = (
        faults.groupby(["bot", "kind"]).size().unstack("kind")
        if len(faults)
        else pd.DataFrame(index=pd.Index([], name="bot"))
    )
    table = table.reindex(index=pd.Index(list(bots), name="bot"), columns=kinds)
    table = table.fillna(0).astype("int64")
    table.columns = pd.Index([f"faults_{kind}" for kind in kinds])
    return table


def split_stats(seats: pd.DataFrame, by: str) -> pd.DataFrame:
    """Games, wins, win rate and mean score per (``by``, bot), e.g. by variant."""
    s = with_margins(seats)
    grouped = s.groupby([by, "bot"])
    out = pd.DataFrame(
        {
            "games": grouped.size(),
            "wins": grouped["win"].sum().astype("int64"),
            "mean_score": grouped["score"].mean(),
        }
    )
    out["win_rate"] = _ratio(out["wins"], out["games"])
    return out[SPLIT_COLUMNS].reset_index()


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    """numerator / denominator, missing where the denominator is 0."""
    return (numerator / denominator.where(denominator > 0)).astype("float64")
