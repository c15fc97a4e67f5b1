"""TrueSkill ratings of finished games, in schedule order, with bootstrap rank intervals.

Reads nothing and writes nothing: callers pass games and keep the state. The API the
store and the report use:

* ``GameTable.from_seats(game_index, seat, bot, rank)``: finished games as compact
  ``numpy`` columns (one row per seat in, ~40 bytes per game kept), schedule-ordered;
  ``GameTable.from_games`` takes ``RatedGame`` values instead.
* ``IncrementalRatings``: every bot's (mu, sigma) after the games applied so far.
  ``sync(finished, through=i)`` advances it over the finished games up to schedule
  position ``i`` (resuming when the stored games still match, else from the prior);
  ``to_json()``/``from_json()`` store and restore it; ``rated(finished)`` is a copy
  brought to every finished game. Equal, bit for bit, to rating from scratch.
* ``bootstrap_ranks(games, bots, resamples=, seed=, workers=, cache_dir=)``: every bot's
  rank in each resample, all resamples rated at once (``arena.ratings.batch``), split
  over CPUs when that pays, cached on disk by the games' content; ``rank_intervals``
  and ``separable`` turn them into the leaderboard's intervals.
* ``compute_ratings(games, bots, state=, cache_dir=, ...)``: all of it as tables.
* ``final_ranking(games, bots, resamples=, leave_out=, seed=)``: the order-invariant final
  ranking (one Bradley-Terry-Davidson fit of every game) with bootstrap rank intervals and
  its stability audit (``arena.ratings.final``).
* ``parse_formula(text)``: a custom points formula, checked against a small grammar and
  evaluated without ``eval`` (``arena.ratings.points``).

``arena.ratings.kernel`` is the TrueSkill update itself (the ``trueskill`` library's
messages without its objects); ``arena.ratings.model`` and ``arena.ratings.reference``
keep the library path, the reference the kernel is tested against.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.ratings.bootstrap import (
        DEFAULT_RESAMPLES,
        DEFAULT_SEED,
        RankInterval,
        bootstrap_ranks,
        default_resamples,
        rank_intervals,
        resample_indices,
        separable,
    )
    from arena.ratings.final import FinalRanking, FinalStanding, final_ranking
    from arena.ratings.games import GameTable, RatedGame, seatings_to_games
    from arena.ratings.incremental import IncrementalRatings, StateError
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
    from arena.ratings.points import Formula, FormulaError, parse_formula
    from arena.ratings.ranking import RATING_COLUMNS, Ratings, compute_ratings

# Each name is imported from its module on first use: a tournament's parent process (which
# keeps the stored ratings) imports neither pandas (``ranking``) nor numba (``compiled``).
_HOME = {
    "DEFAULT_RESAMPLES": "bootstrap",
    "DEFAULT_SEED": "bootstrap",
    "RankInterval": "bootstrap",
    "bootstrap_ranks": "bootstrap",
    "default_resamples": "bootstrap",
    "rank_intervals": "bootstrap",
    "resample_indices": "bootstrap",
    "separable": "bootstrap",
    "FinalRanking": "final",
    "FinalStanding": "final",
    "final_ranking": "final",
    "Formula": "points",
    "FormulaError": "points",
    "parse_formula": "points",
    "GameTable": "games",
    "RatedGame": "games",
    "seatings_to_games": "games",
    "IncrementalRatings": "incremental",
    "StateError": "incremental",
    "DEFAULT_PARAMS": "model",
    "Rater": "model",
    "TrueSkillParams": "model",
    "conservative": "model",
    "leaderboard_order": "model",
    "rate_games": "model",
    "rate_in_given_order": "model",
    "rating_history": "model",
    "RATING_COLUMNS": "ranking",
    "Ratings": "ranking",
    "compute_ratings": "ranking",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'arena.ratings' has no attribute {name!r}")
    return getattr(importlib.import_module(f"arena.ratings.{_HOME[name]}"), name)


__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "RATING_COLUMNS",
    "FinalRanking",
    "FinalStanding",
    "Formula",
    "FormulaError",
    "GameTable",
    "IncrementalRatings",
    "RankInterval",
    "RatedGame",
    "Rater",
    "Ratings",
    "StateError",
    "TrueSkillParams",
    "bootstrap_ranks",
    "compute_ratings",
    "conservative",
    "default_resamples",
    "final_ranking",
    "leaderboard_order",
    "parse_formula",
    "rank_intervals",
    "rate_games",
    "rate_in_given_order",
    "rating_history",
    "resample_indices",
    "seatings_to_games",
    "separable",
]
