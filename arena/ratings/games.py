"""The input of the rating model: finished games as ordered (bot, rank) seatings.

Kept free of pandas and SQLite so the bootstrap workers import little and the model can
be fed from anything (the store, a test, a notebook).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RatedGame:
    """One finished game as TrueSkill sees it.

    ``ranks`` are competition ranks (1 = best, equal ranks are a tie), aligned with ``bots``.
    ``game_index`` is the schedule position: games are always rated in that order.
    """

    game_index: int
    bots: tuple[str, ...]
    ranks: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.bots) != len(self.ranks):
            raise ValueError(
                f"game {self.game_index}: {len(self.bots)} bots, {len(self.ranks)} ranks"
            )
        if len(set(self.bots)) != len(self.bots):
            raise ValueError(f"game {self.game_index}: a bot holds two seats: {self.bots}")


def seatings_to_games(rows: Iterable[tuple[int, int, str, int]]) -> list[RatedGame]:
    """Group ``(game_index, seat, bot, rank)`` rows into games sorted by schedule order.

    A bot seated more than once in the same game (self-play) keeps only its lowest seat:
    TrueSkill cannot update one player from two results at once, and the other seats
    still rate against it. Games left with fewer than two distinct bots are skipped.

    >>> rows = [(7, 1, "b", 2), (3, 0, "a", 1), (7, 0, "a", 1), (3, 1, "b", 1)]
    >>> for game in seatings_to_games(rows):
    ...     print(game)
    RatedGame(game_index=3, bots=('a', 'b'), ranks=(1, 1))
    RatedGame(game_index=7, bots=('a', 'b'), ranks=(1, 2))
    """
    by_game: dict[int, dict[str, tuple[int, int]]] = {}
    for game_index, seat, bot, rank in rows:
        seats = by_game.setdefault(int(game_index), {})
        if bot not in seats or seat < seats[bot][0]:
            seats[str(bot)] = (int(seat), int(rank))
    games = []
    for game_index in sorted(by_game):
        ordered = sorted(by_game[game_index].items(), key=lambda item: item[1][0])
        if len(ordered) < 2:
            continue
        games.append(
            RatedGame(
                game_index,
                tuple(bot for bot, _ in ordered),
                tuple(rank for _, (_, rank) in ordered),
            )
        )
    return games
