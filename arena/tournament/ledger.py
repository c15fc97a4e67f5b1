"""Stored ratings, kept up to date as games finish (the tournament's one use of ratings).

TrueSkill depends on game order, and games finish out of order: the ledger rates the
finished prefix of the schedule (every game below the first unfinished one), in schedule
order, with ``arena.ratings.IncrementalRatings`` (the math is the ratings package's), and
stores its state and per-bot ratings with that prefix in one transaction. A report
continues from the stored state instead of re-rating every game; when every game is
finished the stored ratings equal a from-scratch rating of all games.
"""

from __future__ import annotations

import time

from arena.ratings import RatedGame
from arena.ratings.incremental import IncrementalRatings, StateError
from arena.store.tournament import Store


class RatingLedger:
    """Advances the stored ratings over the finished prefix of the schedule."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.prefix, stored = store.ratings()
        self.games = {r.bot: r.games for r in stored}
        self._pending, self._last = 0, time.monotonic()
        text = store.ratings_state()
        try:
            self.state = IncrementalRatings.from_json(text) if text else IncrementalRatings()
        except StateError:
            self.state, self.prefix, self.games = IncrementalRatings(), 0, {}
        # A few games per update: the Python kernel (~20-130 us a game) keeps numba out of
        # the tournament's parent process (its import costs ~1.7 s and ~140 MB).
        self.state.compiled = False

    def tick(self, every_games: int = 50, every_s: float = 2.0) -> None:
        """After each stored game: advance now and then (a rating update costs far less
        in batches), so stored ratings trail the games by at most a moment."""
        self._pending += 1
        now = time.monotonic()
        if self._pending >= every_games or now - self._last >= every_s:
            self.advance()

    def advance(self) -> int:
        """Rate newly completed prefix games and store the ratings; returns how many."""
        self._pending, self._last = 0, time.monotonic()
        stop = self.store.first_unfinished(self.prefix)
        if stop <= self.prefix:
            return 0
        games = [
            RatedGame(index, bots, ranks)
            for index, bots, ranks in self.store.rated_games(self.prefix, stop)
            if len(bots) >= 2 and len(set(bots)) == len(bots)  # self-play is not rated
        ]
        self.state.apply(games)
        changed = {bot for game in games for bot in game.bots}
        for game in games:
            for bot in game.bots:
                self.games[bot] = self.games.get(bot, 0) + 1
        self.prefix = stop
        self.store.save_ratings(
            stop,
            {bot: (*self.state.rating(bot), self.games[bot]) for bot in changed},
            state=self.state.to_json(),
        )
        return len(games)
