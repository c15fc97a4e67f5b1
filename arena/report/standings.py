"""What ranks the leaderboard: TrueSkill (default), the final batch fit, or a points formula.

The organiser chooses (``arena report --rank-by``). The chosen ranking's columns join the
leaderboard and its ``rank`` column follows it; TrueSkill's rating stays beside it.
Points formulas see each bot's outright wins (sole first place), ties (a shared first
place), losses (every other game), points (sum of final scores), faults (every fault
recorded), failed (games lost to crashes, timeouts or forfeits) and games played.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from arena.ratings.final import DEFAULT_FINAL_RESAMPLES, DEFAULT_FINAL_SEED, FinalRanking
from arena.ratings.points import Formula
from arena.report.data import Results
from arena.textsafe import visible

RANK_BY = ("trueskill", "final", "points")
OUTCOME_COLUMNS = ["outright_wins", "ties", "losses", "failed", "score_sum"]
"""Joined to the leaderboard with ``points`` (the formula's value) when a formula is given."""
FINAL_COLUMNS = [
    "final_strength",
    "final_rank",
    "final_low",
    "final_high",
    "final_held",
    "final_held_leave_out",
]
STABILITY_LINES = 10
"""Ranks the overview states the audit of ("rank 1 held in 97 % of resamples"); the
leaderboard's Held column has every bot's."""


@dataclass(frozen=True)
class RankingChoice:
    """How the leaderboard is ranked (``rank_by`` one of ``RANK_BY``) and with what."""

    rank_by: str = "trueskill"
    formula: Formula | None = None
    final_resamples: int = DEFAULT_FINAL_RESAMPLES
    seed: int = DEFAULT_FINAL_SEED


DEFAULT_RANKING = RankingChoice()


def outcome_counts(results: Results, bots: list[str]) -> pd.DataFrame:
    """Per bot (index ``bot``): outright wins, shared-first ties, losses, failed games
    (forfeits), the score sum (a formula's ``points``), faults and games."""
    table = results.rated
    n = len(table.names)
    outright = np.zeros(n, dtype=np.int64)
    shared = np.zeros(n, dtype=np.int64)
    if len(table):
        # Place p is in the first group when places 0..p all share a rank.
        in_first = np.ones(table.bots.shape, dtype=bool)
        in_first[:, 1:] = np.cumprod(table.ties, axis=1).astype(bool)
        in_first &= table.bots >= 0
        tie_game = table.ties[:, 0] & (table.sizes >= 2)
        firsts = table.bots[in_first]
        tied = np.broadcast_to(tie_game[:, None], table.bots.shape)[in_first]
        outright = np.bincount(firsts[~tied], minlength=n)
        shared = np.bincount(firsts[tied], minlength=n)
    by_name = pd.DataFrame({"outright_wins": outright, "ties": shared}, index=list(table.names))
    totals = results.bot_totals.reindex(pd.Index(bots, name="bot"))
    out = by_name.reindex(pd.Index(bots, name="bot")).fillna(0).astype("int64")
    games = totals["games"].fillna(0).astype("int64")
    out["losses"] = (games - out["outright_wins"] - out["ties"]).clip(lower=0)
    out["failed"] = totals["forfeits"].fillna(0).astype("int64")
    out["score_sum"] = totals["score_sum"].fillna(0).astype("float64")
    faults: dict[str, int] = {}
    for bot, count in zip(results.fault_totals["bot"], results.fault_totals["count"], strict=True):
        faults[str(bot)] = faults.get(str(bot), 0) + int(count)
    out["faults"] = [faults.get(bot, 0) for bot in bots]
    out["games"] = games
    return out


def formula_points(formula: Formula, counts: pd.DataFrame) -> pd.Series:
    """The formula's value per bot (NaN where it divides by zero)."""
    columns = {
        "wins": "outright_wins",
        "ties": "ties",
        "losses": "losses",
        "points": "score_sum",
        "faults": "faults",
        "failed": "failed",
        "games": "games",
    }
    records = counts[list(columns.values())].astype("float64").to_dict("records")
    values = [
        formula.evaluate({name: float(row[column]) for name, column in columns.items()})
        for row in records
    ]
    return pd.Series(values, index=counts.index, dtype="float64")


def final_columns(final: FinalRanking) -> pd.DataFrame:
    """The final ranking as leaderboard columns (index ``bot``)."""
    rows = [
        {
            "bot": s.bot,
            "final_strength": s.strength,
            "final_rank": s.rank,
            "final_low": None if s.interval is None else s.interval.low,
            "final_high": None if s.interval is None else s.interval.high,
            "final_held": s.held,
            "final_held_leave_out": s.held_leave_out,
        }
        for s in final.standings
    ]
    frame = pd.DataFrame(rows, columns=["bot", *FINAL_COLUMNS]).set_index("bot")
    return frame.astype(
        {
            "final_strength": "float64",
            "final_rank": "int64",
            "final_low": "Int64",
            "final_high": "Int64",
            "final_held": "float64",
            "final_held_leave_out": "float64",
        }
    )


def rerank(leaderboard: pd.DataFrame, choice: RankingChoice) -> pd.DataFrame:
    """The leaderboard in the chosen order; ``rank`` is that ranking's (equal points share
    a rank; the TrueSkill order breaks nothing else)."""
    if choice.rank_by == "final":
        out = leaderboard.sort_values("final_rank", kind="stable").reset_index(drop=True)
        out["rank"] = out["final_rank"].astype("int64")
        return out
    if choice.rank_by == "points":
        key = leaderboard["points"].fillna(-np.inf)
        out = leaderboard.assign(_key=-key).sort_values("_key", kind="stable")
        keys = out["_key"].to_numpy()
        out["rank"] = 1 + np.searchsorted(np.sort(keys), keys, side="left")
        return out.drop(columns="_key").reset_index(drop=True)
    return leaderboard


def stability_lines(final: FinalRanking | None) -> list[str]:
    """``"rank 1 (alpha) held in 97 % of 200 resamples, 99 % of leave-3-out refits"``."""
    if final is None or not final.resamples:
        return []
    lines = []
    for s in final.standings[:STABILITY_LINES]:
        if s.held is None:
            continue
        line = (
            f"rank {s.rank} ({visible(s.bot)}) held in {100 * s.held:.0f} % "
            f"of {final.resamples} resamples"
        )
        if s.held_leave_out is not None:
            line += f", {100 * s.held_leave_out:.0f} % of leave-{final.leave_out}-out refits"
        lines.append(line)
    return lines


def ranking_summary(choice: RankingChoice, final: FinalRanking | None) -> dict[str, Any]:
    """How the leaderboard was ranked, for ``report.json``'s summary."""
    out: dict[str, Any] = {
        "rank_by": choice.rank_by,
        "points_formula": None if choice.formula is None else choice.formula.text,
    }
    if final is not None:
        out["final"] = {
            "model": "Bradley-Terry-Davidson over each game's pairs of places",
            "games": final.games,
            "resamples": final.resamples,
            "leave_out": final.leave_out,
            "seed": final.seed,
            "tie_parameter": final.tie_parameter,
        }
    return out
