"""TrueSkill over free-for-all games, rated strictly in schedule order.

Parameters (``TrueSkillParams``) are the usual TrueSkill defaults for a 0-50 scale:

* ``mu = 25``, ``sigma = 25/3``: the prior of a new bot (its conservative rating is 0);
* ``beta = 25/6``: the skill gap that gives the stronger bot ~76% to finish ahead;
* ``tau = 25/300``: dynamics noise added before every game, so sigma never collapses to 0
  (bots do not change during a tournament, but a tiny tau keeps late games informative);
* ``draw_probability = 0.02``: Azul score ties are broken by complete rows, so shared
  places are rare; the value only sets the draw margin used when a tie does happen.

Each seat is a team of one and tied seats are passed as ties (equal ``ranks``). TrueSkill
updates depend on game order, so games are always rated sorted by schedule index, never in
completion order: the same finished games give bit-identical ratings.

Every call builds its own ``trueskill.TrueSkill`` environment (the module-global one is
never touched), so callers cannot influence each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import trueskill

from arena.ratings.games import RatedGame
from arena.ratings.kernel import KernelEnv

Rating = Any  # trueskill.Rating (the package ships no type information)


@dataclass(frozen=True)
class TrueSkillParams:
    """The TrueSkill environment used for every rating in the arena."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float = 0.02

    def env(self) -> Any:
        """A fresh private environment (pure-Python backend: identical floats everywhere)."""
        return trueskill.TrueSkill(
            mu=self.mu,
            sigma=self.sigma,
            beta=self.beta,
            tau=self.tau,
            draw_probability=self.draw_probability,
            backend=None,
        )

    def kernel_env(self) -> KernelEnv:
        """The constants of the vectorised kernel (``arena.ratings.kernel``)."""
        return KernelEnv.of(self.mu, self.sigma, self.beta, self.tau, self.draw_probability)


DEFAULT_PARAMS = TrueSkillParams()


def conservative(rating: Rating) -> float:
    """mu - 3 sigma: a skill the bot exceeds with ~99.9% confidence; the leaderboard key."""
    return float(rating.mu) - 3.0 * float(rating.sigma)


def order_key(bot: str, rating: Rating) -> tuple[float, float, str]:
    """Leaderboard order: conservative rating, then mu, then name (so ties are stable)."""
    return (-conservative(rating), -float(rating.mu), bot)


def leaderboard_order(ratings: Mapping[str, Rating]) -> list[str]:
    """Bots best first."""
    return sorted(ratings, key=lambda bot: order_key(bot, ratings[bot]))


class Rater:
    """Holds one environment and the current rating of every bot seen so far."""

    def __init__(self, params: TrueSkillParams = DEFAULT_PARAMS, bots: Iterable[str] = ()):
        self.env = params.env()
        self.ratings: dict[str, Rating] = {bot: self.env.create_rating() for bot in bots}

    def rate(self, game: RatedGame) -> None:
        """Update the ratings of the bots of one game (free-for-all, ties as ties)."""
        for bot in game.bots:
            if bot not in self.ratings:
                self.ratings[bot] = self.env.create_rating()
        groups = [(self.ratings[bot],) for bot in game.bots]
        # trueskill wants 0-based "lower is better" ranks; competition ranks already are.
        new = self.env.rate(groups, ranks=list(game.ranks))
        for bot, (rating,) in zip(game.bots, new, strict=True):
            self.ratings[bot] = rating


def schedule_ordered(games: Iterable[RatedGame]) -> list[RatedGame]:
    """The games sorted by schedule index (the only order ratings are computed in)."""
    return sorted(games, key=lambda game: game.game_index)


def rate_games(
    games: Iterable[RatedGame],
    params: TrueSkillParams = DEFAULT_PARAMS,
    bots: Iterable[str] = (),
) -> dict[str, Rating]:
    """Final ratings after all ``games`` in schedule order; ``bots`` adds unplayed entrants."""
    rater = Rater(params, bots)
    for game in schedule_ordered(games):
        rater.rate(game)
    return rater.ratings


def rate_in_given_order(
    games: Sequence[RatedGame],
    params: TrueSkillParams = DEFAULT_PARAMS,
    bots: Iterable[str] = (),
) -> dict[str, Rating]:
    """Ratings after ``games`` in exactly the order given (for the bootstrap and for tests
    that show order matters); everything user-facing goes through ``rate_games``."""
    rater = Rater(params, bots)
    for game in games:
        rater.rate(game)
    return rater.ratings


def rating_history(
    games: Iterable[RatedGame],
    params: TrueSkillParams = DEFAULT_PARAMS,
    bots: Iterable[str] = (),
) -> tuple[dict[str, Rating], list[tuple[int, dict[str, float]]]]:
    """Final ratings plus, after each game in schedule order, every bot's conservative
    rating (bots not yet seated keep the prior's)."""
    rater = Rater(params, bots)
    history = []
    for game in schedule_ordered(games):
        rater.rate(game)
        history.append(
            (game.game_index, {bot: conservative(r) for bot, r in rater.ratings.items()})
        )
    return rater.ratings, history
