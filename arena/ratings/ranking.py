"""The ratings as tables: point ratings, bootstrap rank intervals and the history."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from arena.ratings.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ranks,
    rank_intervals,
    separable,
)
from arena.ratings.games import RatedGame
from arena.ratings.model import (
    DEFAULT_PARAMS,
    TrueSkillParams,
    conservative,
    leaderboard_order,
    rating_history,
)

RATING_COLUMNS = ["rank", "bot", "rating", "mu", "sigma", "rank_low", "rank_high", "separable"]


@dataclass(frozen=True)
class Ratings:
    """TrueSkill ratings of one set of finished games.

    ``table``: one row per bot, best first (columns ``RATING_COLUMNS``; ``rating`` is the
    conservative mu - 3 sigma; ``rank_low``/``rank_high`` the bootstrap interval and
    ``separable`` whether it overlaps neither neighbour's, both missing without bootstrap).
    ``history``: one row per rated game in schedule order (``game`` = 1, 2, ...,
    ``game_index``) and one column per bot with its conservative rating after that game.
    """

    table: pd.DataFrame
    history: pd.DataFrame
    params: TrueSkillParams
    resamples: int
    seed: int
    games: int


def compute_ratings(
    games: Iterable[RatedGame],
    bots: Iterable[str] = (),
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
) -> Ratings:
    """Rate ``games`` in schedule order; ``bots`` lists entrants that may not have played."""
    resamples = max(0, resamples)
    played = sorted(games, key=lambda game: game.game_index)
    everyone = sorted(set(bots) | {bot for game in played for bot in game.bots})
    final, history = rating_history(played, params, everyone)
    order = leaderboard_order(final)
    samples = bootstrap_ranks(
        played, order, params=params, resamples=resamples, seed=seed, workers=workers
    )
    intervals = rank_intervals(samples, order)
    apart = separable(order, intervals) if intervals else {}
    rows = []
    for place, bot in enumerate(order, start=1):
        interval = intervals.get(bot)
        rows.append(
            {
                "rank": place,
                "bot": bot,
                "rating": conservative(final[bot]),
                "mu": float(final[bot].mu),
                "sigma": float(final[bot].sigma),
                "rank_low": None if interval is None else interval.low,
                "rank_high": None if interval is None else interval.high,
                "separable": apart.get(bot),
            }
        )
    table = pd.DataFrame(rows, columns=RATING_COLUMNS).astype(
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
        table=table,
        history=_history_frame(history, order, params),
        params=params,
        resamples=resamples if played else 0,
        seed=seed,
        games=len(played),
    )


def _history_frame(
    history: Sequence[tuple[int, dict[str, float]]],
    order: Sequence[str],
    params: TrueSkillParams,
) -> pd.DataFrame:
    prior = params.mu - 3 * params.sigma
    rows = [
        {"game": n, "game_index": index, **{bot: after.get(bot, prior) for bot in order}}
        for n, (index, after) in enumerate(history, start=1)
    ]
    frame = pd.DataFrame(rows, columns=["game", "game_index", *order])
    return frame.astype({"game": "int64", "game_index": "int64"} | dict.fromkeys(order, "float64"))
