"""TrueSkill ratings of finished games, in schedule order, with bootstrap rank intervals.

Reads nothing and writes nothing: callers pass ``RatedGame`` lists (see
``arena.report.data`` for the store side).
"""

from arena.ratings.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    RankInterval,
    bootstrap_ranks,
    rank_intervals,
    resample_indices,
    separable,
)
from arena.ratings.games import RatedGame, seatings_to_games
from arena.ratings.model import (
    DEFAULT_PARAMS,
    Rater,
    TrueSkillParams,
    conservative,
    leaderboard_order,
    rate_games,
    rate_in_given_order,
    rating_history,
)
from arena.ratings.ranking import RATING_COLUMNS, Ratings, compute_ratings

__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "RATING_COLUMNS",
    "RankInterval",
    "RatedGame",
    "Rater",
    "Ratings",
    "TrueSkillParams",
    "bootstrap_ranks",
    "compute_ratings",
    "conservative",
    "leaderboard_order",
    "rank_intervals",
    "rate_games",
    "rate_in_given_order",
    "rating_history",
    "resample_indices",
    "seatings_to_games",
    "separable",
]
