"""Stored ratings, kept up to date as games finish (the tournament's one use of ratings).

TrueSkill depends on game order, and games finish out of order: the ledger rates the
finished prefix of the schedule (every game below the first unfinished one), in schedule
order, and stores the ratings with that prefix. When every game is finished the stored
ratings equal a from-scratch rating of all games (the math is ``arena.ratings``').
"""

from __future__ import annotations

from arena.ratings import DEFAULT_PARAMS, RatedGame, TrueSkillParams
from arena.ratings.model import Rater
from arena.tournament.store import Store


class RatingLedger:
    """Advances the stored ratings over the finished prefix of the schedule."""

    def __init__(self, store: Store, params: TrueSkillParams = DEFAULT_PARAMS) -> None:
        self.store = store
        self.rater = Rater(params)
        self.games: dict[str, int] = {}
        self.prefix, stored = store.ratings()
        for r in stored:
            self.rater.ratings[r.bot] = self.rater.env.create_rating(r.mu, r.sigma)
            self.games[r.bot] = r.games

    def advance(self) -> int:
        """Rate newly completed prefix games and store the ratings; returns how many."""
        stop = self.store.first_unfinished(self.prefix)
        if stop <= self.prefix:
            return 0
        changed: set[str] = set()
        rated = 0
        for index, bots, ranks in self.store.rated_games(self.prefix, stop):
            if len(set(bots)) < len(bots) or len(bots) < 2:
                continue  # self-play: not rated (as ``seatings_to_games`` decides)
            self.rater.rate(RatedGame(index, bots, ranks))
            for bot in bots:
                self.games[bot] = self.games.get(bot, 0) + 1
            changed.update(bots)
            rated += 1
        self.prefix = stop
        self.store.save_ratings(
            stop,
            {
                bot: (
                    float(self.rater.ratings[bot].mu),
                    float(self.rater.ratings[bot].sigma),
                    self.games[bot],
                )
                for bot in changed
            },
        )
        return rated
