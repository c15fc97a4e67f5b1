"""The ratings as tables: point ratings, bootstrap rank intervals and the history."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arena.ratings.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ranks,
    rank_intervals,
    separable,
)
from arena.ratings.games import GameTable, RatedGame
from arena.ratings.incremental import IncrementalRatings
from arena.ratings.model import DEFAULT_PARAMS, TrueSkillParams

RATING_COLUMNS = ["rank", "bot", "rating", "mu", "sigma", "rank_low", "rank_high", "separable"]


@dataclass(frozen=True)
class Ratings:
    """TrueSkill ratings of one set of finished games.

    ``table``: one row per bot, best first (columns ``RATING_COLUMNS``; ``rating`` is the
    conservative mu - 3 sigma; ``rank_low``/``rank_high`` the bootstrap interval and
    ``separable`` whether it overlaps neither neighbour's, both missing without bootstrap).
    ``history``: rows in schedule order (``game`` = number of games rated, ``game_index``
    the schedule position of the last of them) and one column per bot with its
    conservative rating then: every game up to ``HISTORY_POINTS`` games, evenly thinned
    checkpoints beyond, always ending with the final ratings.
    ``state``: the incremental state after all the games (what a store keeps).
    """

    table: pd.DataFrame
    history: pd.DataFrame
    params: TrueSkillParams
    resamples: int
    seed: int
    games: int
    state: IncrementalRatings | None = None


def compute_ratings(
    games: GameTable | Iterable[RatedGame],
    bots: Iterable[str] = (),
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    state: IncrementalRatings | None = None,
    cache_dir: Path | None = None,
) -> Ratings:
    """Rate ``games`` in schedule order; ``bots`` lists entrants that may not have played.

    ``state`` (a stored ``IncrementalRatings``) is continued rather than recomputed when it
    still matches the games (it is not modified); ``cache_dir`` caches the bootstrap.
    """
    resamples = max(0, resamples)
    table = games if isinstance(games, GameTable) else GameTable.from_games(games)
    usable = state is not None and state.params == params
    current = state.rated(table) if usable and state is not None else IncrementalRatings(params)
    if not usable:
        current.apply(table)
    everyone = sorted(set(bots) | set(table.names))
    ratings = {bot: current.rating(bot) for bot in everyone}
    order = sorted(
        everyone,
        key=lambda b: (-(ratings[b][0] - 3.0 * ratings[b][1]), -ratings[b][0], b),
    )
    samples = bootstrap_ranks(
        table,
        order,
        params=params,
        resamples=resamples,
        seed=seed,
        workers=workers,
        cache_dir=cache_dir,
    )
    intervals = rank_intervals(samples, order)
    apart = separable(order, intervals) if intervals else {}
    rows = []
    for place, bot in enumerate(order, start=1):
        interval = intervals.get(bot)
        mu, sigma = ratings[bot]
        rows.append(
            {
                "rank": place,
                "bot": bot,
                "rating": mu - 3.0 * sigma,
                "mu": mu,
                "sigma": sigma,
                "rank_low": None if interval is None else interval.low,
                "rank_high": None if interval is None else interval.high,
                "separable": apart.get(bot),
            }
        )
    frame = pd.DataFrame(rows, columns=RATING_COLUMNS).astype(
        {
            "rank": "int64",
            "bot": "str",
            "rating": "float64",
            "mu": "float64",
            "sigma": "float64",
            "rank_low": "Int64",
            "rank_high": "Int64",
            "separable": "boolean",
        }
    )
    return Ratings(
        table=frame,
        history=_history_frame(current, order, params),
        params=params,
        resamples=resamples if len(table) else 0,
        seed=seed,
        games=len(table),
        state=current,
    )


def _history_frame(
    state: IncrementalRatings, order: list[str], params: TrueSkillParams
) -> pd.DataFrame:
    prior = params.mu - 3 * params.sigma
    rows = [
        {"game": n, "game_index": index, **{bot: after.get(bot, prior) for bot in order}}
        for n, index, after in state.history_rows()
    ]
    frame = pd.DataFrame(rows, columns=["game", "game_index", *order])
    return frame.astype({"game": "int64", "game_index": "int64"} | dict.fromkeys(order, "float64"))
