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

from arena.engine.record import FAULT_KINDS
from arena.report.data import Results

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


def bot_stats(results: Results, bots: Sequence[str]) -> pd.DataFrame:
    """One row per bot (index ``bot``, every one of ``bots``; ``BOT_STAT_COLUMNS``), from
    the store's per-bot sums."""
    totals = results.bot_totals.reindex(pd.Index(list(bots), name="bot"))
    out = pd.DataFrame(index=totals.index)
    for column in ("games", "wins", "forfeits", "decisions"):
        out[column] = totals[column].fillna(0).astype("int64")
    out["mean_score"] = _ratio(totals["score_sum"], totals["games"].fillna(0))
    out["mean_margin"] = _ratio(totals["margin_sum"], totals["margins"].fillna(0))
    out["think_max_ms"] = totals["think_max_ms"].astype("float64")
    out["win_rate"] = _ratio(out["wins"], out["games"])
    out["think_mean_ms"] = _ratio(totals["think_total"], out["decisions"])
    out["think_p95_ms"] = _ratio(totals["think_p95_total"], out["decisions"])
    out["cpu_mean_ms"] = _ratio(totals["cpu_total"], totals["cpu_decisions"].fillna(0))
    counts = fault_counts(results.fault_totals, bots)
    out = out.join(counts)
    return out[[*BOT_STAT_COLUMNS, *(c for c in counts.columns if c not in BOT_STAT_COLUMNS)]]


def fault_counts(totals: pd.DataFrame, bots: Sequence[str]) -> pd.DataFrame:
    """Faults per bot and kind (``totals``: bot, kind, count): ``faults_<kind>`` for the
    known kinds, plus any other kind found in the store (so nothing recorded is hidden)."""
    kinds = list(FAULT_KINDS) + sorted(set(totals["kind"]) - set(FAULT_KINDS))
    table = (
        totals.pivot(index="bot", columns="kind", values="count")
        if len(totals)
        else pd.DataFrame(index=pd.Index([], name="bot"))
    )
    table = table.reindex(index=pd.Index(list(bots), name="bot"), columns=kinds)
    table = table.fillna(0).astype("int64")
    table.columns = pd.Index([f"faults_{kind}" for kind in kinds])
    return table


def split_stats(results: Results, by: str) -> pd.DataFrame:
    """Games, wins, win rate and mean score per (``by``, bot), e.g. by variant."""
    out = results.split_totals[by].sort_values([by, "bot"]).reset_index(drop=True)
    out = out.astype({"games": "int64", "wins": "int64"})
    out["win_rate"] = _ratio(out["wins"], out["games"])
    out["mean_score"] = _ratio(out["score_sum"], out["games"])
    return out[[by, "bot", *SPLIT_COLUMNS]]


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    """numerator / denominator, missing where the denominator is 0."""
    return (numerator / denominator.where(denominator > 0)).astype("float64")
