"""Assemble every report table from one results snapshot (no I/O, no formatting)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from arena.ratings import (
    DEFAULT_PARAMS,
    DEFAULT_SEED,
    RATING_COLUMNS,
    IncrementalRatings,
    Ratings,
    TrueSkillParams,
    compute_ratings,
)
from arena.ratings.bootstrap import HIGH_PERCENTILE, LOW_PERCENTILE, resamples_for
from arena.ratings.final import FinalRanking, final_ranking
from arena.ratings.incremental import load_state, save_state
from arena.report.data import Results
from arena.report.headtohead import head_to_head_matrix, head_to_head_pairs
from arena.report.hostload import host_load
from arena.report.seating import seat_advantage
from arena.report.standings import (
    DEFAULT_RANKING,
    OUTCOME_COLUMNS,
    RankingChoice,
    final_columns,
    formula_points,
    outcome_counts,
    ranking_summary,
    rerank,
)
from arena.report.stats import bot_stats, split_stats

RATINGS_CACHE = ".ratings-cache"
REPORT_FORMAT = 2
"""What ``report.json``'s summary says the files were written as (2: the site's chosen
replays and paged games); a report of another format is written again, even if current."""
RATINGS_STATE = "ratings-state.json"


@dataclass(frozen=True)
class Report:
    """All report tables. ``tables()`` names them as the CSV/JSON outputs do."""

    results: Results
    ratings: Ratings
    summary: dict[str, Any]
    leaderboard: pd.DataFrame
    head_to_head: pd.DataFrame
    head_to_head_pairs: pd.DataFrame
    seat_advantage: pd.DataFrame
    by_variant: pd.DataFrame
    by_players: pd.DataFrame
    fault_log: pd.DataFrame
    """Every fault of every finished game, with its game id: the evidence trail."""
    host_load: pd.DataFrame
    """Games whose wall time far exceeded their CPU time (an overloaded host?)."""
    final: FinalRanking | None = None
    """The order-invariant final ranking, when it ranks the leaderboard."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table as a flat frame (the matrix with its ``bot`` row labels as a column)."""
        return {
            "leaderboard": self.leaderboard,
            "head_to_head": self.head_to_head.reset_index(),
            "head_to_head_pairs": self.head_to_head_pairs,
            "seat_advantage": self.seat_advantage,
            "by_variant": self.by_variant,
            "by_players": self.by_players,
            "faults": self.fault_log,
            "host_load": self.host_load,
            "rating_history": self.ratings.history,
        }


def build_report(
    results: Results,
    *,
    bootstrap: int | None = None,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    params: TrueSkillParams = DEFAULT_PARAMS,
    state: IncrementalRatings | None = None,
    cache: bool = True,
    ranking: RankingChoice = DEFAULT_RANKING,
) -> Report:
    """Ratings (``bootstrap`` resamples, 0 for none, None for the default: fewer past
    500,000 games, ``default_resamples``) and every results table.

    ``state``: stored incremental ratings to continue from (a store's); without one and
    with ``cache``, the state is kept in ``OUTDIR/.ratings-cache/`` (best effort), as
    are bootstrap results, so a report only rates the games finished since the last.
    ``ranking``: what orders the leaderboard (TrueSkill unless the organiser chose).
    """
    rated = results.rated
    cache_dir = Path(results.outdir) / RATINGS_CACHE if cache else None
    if state is None and cache_dir is not None:
        # Ratings stored, not recomputed: continue the stored state over the games
        # finished since, up to the first game still to play (later ones are rated on a
        # copy), and store it again.
        state = load_state(cache_dir / RATINGS_STATE, params)
        frontier = results.frontier
        state.sync(rated, through=-1 if frontier is None else frontier)
        save_state(cache_dir / RATINGS_STATE, state)
    ratings = compute_ratings(
        rated,
        results.bots,
        params=params,
        resamples=resamples_for(bootstrap, len(rated)),
        seed=seed,
        workers=workers,
        state=state,
        cache_dir=cache_dir,
    )
    order = list(ratings.table["bot"])
    stats = bot_stats(results, order)
    leaderboard = ratings.table.merge(stats, left_on="bot", right_index=True, how="left")
    leaderboard = leaderboard[[*RATING_COLUMNS, *stats.columns]].reset_index(drop=True)
    versions = results.versions or {}
    leaderboard.insert(2, "version", [versions.get(bot, "") for bot in leaderboard["bot"]])
    final = None
    if ranking.formula is not None:
        counts = outcome_counts(results, order)
        leaderboard = leaderboard.join(counts[OUTCOME_COLUMNS], on="bot")
        leaderboard["points"] = (
            formula_points(ranking.formula, counts).reindex(leaderboard["bot"]).to_numpy()
        )
    if ranking.rank_by == "final":
        final = final_ranking(
            rated, results.bots, resamples=ranking.final_resamples, seed=ranking.seed
        )
        leaderboard = leaderboard.join(final_columns(final), on="bot")
    leaderboard = rerank(leaderboard, ranking)
    order = list(leaderboard["bot"])
    pairs = head_to_head_pairs(results)
    return Report(
        results=results,
        ratings=ratings,
        summary=summarise(results, ratings, requested=bootstrap)
        | {"ranking": ranking_summary(ranking, final)},
        leaderboard=leaderboard,
        head_to_head=head_to_head_matrix(pairs, order),
        head_to_head_pairs=pairs,
        seat_advantage=seat_advantage(results),
        by_variant=split_stats(results, "variant"),
        by_players=split_stats(results, "n_players"),
        fault_log=fault_log(results),
        host_load=host_load(results),
        final=final,
    )


def fault_log(results: Results) -> pd.DataFrame:
    """Faults in schedule order, each with the game id that ``arena replay`` can check."""
    columns = ["game_index", "game_id", "bot", "seat", "kind", "round", "forfeit", "message"]
    if results.faults.empty:
        return pd.DataFrame(columns=columns)
    return results.faults[columns].reset_index(drop=True)


def summarise(
    results: Results, ratings: Ratings, *, requested: int | None = None
) -> dict[str, Any]:
    """Plain-data facts about the snapshot and how it was rated (JSON-ready)."""
    return {
        "outdir": str(results.outdir),
        "finished": results.finished,
        "scheduled": results.scheduled,
        "complete": results.complete,
        "bots": len(results.bots),
        "games_by_players": results.game_counts["n_players"],
        "games_by_variant": results.game_counts["variant"],
        "end_reasons": results.game_counts["end_reason"],
        "mean_duration_s": results.mean_duration_s,
        "faults": len(results.faults),
        "host_load_games": len(host_load(results)),
        "trueskill": asdict(ratings.params),
        "bootstrap": {
            "resamples": ratings.resamples,
            "requested": requested,  # None: the default for this many games
            "games": ratings.games,
            "seed": ratings.seed,
            "percentiles": [LOW_PERCENTILE, HIGH_PERCENTILE],
        },
        "config": results.config,
        "versions": results.versions or {},
        "store_fingerprint": results.fingerprint,
        "report_format": REPORT_FORMAT,
    }
