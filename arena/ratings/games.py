"""The input of the rating model: finished games as ordered (bot, rank) seatings.

Kept free of pandas and SQLite so the bootstrap workers import little and the model can
be fed from anything (the store, a test, a notebook). ``RatedGame`` is one game as Python
values; ``GameTable`` is many games as compact ``numpy`` columns (what the fast paths use).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


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


@dataclass(frozen=True, eq=False)
class GameTable:
    """Finished games as compact ``numpy`` columns, in schedule order (~40 bytes a game).

    ``index``: schedule positions, strictly increasing. ``bots``: bot ids (into ``names``)
    per place in *rank order* (a stable sort of the seats by rank), ``-1`` padding after
    the ``sizes[g]`` real places. ``ties[g, x]``: places ``x`` and ``x + 1`` share a rank.
    """

    index: IntArray
    bots: npt.NDArray[np.int32]
    ties: npt.NDArray[np.bool_]
    sizes: npt.NDArray[np.int64]
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.index)

    @property
    def width(self) -> int:
        return int(self.bots.shape[1])

    @classmethod
    def empty(cls, names: Iterable[str] = ()) -> GameTable:
        return cls(
            np.zeros(0, dtype=np.int64),
            np.zeros((0, 2), dtype=np.int32),
            np.zeros((0, 1), dtype=np.bool_),
            np.zeros(0, dtype=np.int64),
            tuple(names),
        )

    @classmethod
    def from_seats(
        cls,
        game_index: npt.ArrayLike,
        seat: npt.ArrayLike,
        bot: Sequence[str] | npt.ArrayLike,
        rank: npt.ArrayLike,
    ) -> GameTable:
        """From one row per seat (any order), vectorised; same rules as
        ``seatings_to_games``: a bot seated twice keeps its lowest seat, games with fewer
        than two distinct bots are skipped."""
        gi = np.asarray(game_index, dtype=np.int64)
        st = np.asarray(seat, dtype=np.int64)
        rk = np.asarray(rank, dtype=np.int64)
        names_arr, bot_ids = np.unique(
            np.asarray(bot, dtype=object).astype(str), return_inverse=True
        )
        if len(gi) == 0:
            return cls.empty()
        names = tuple(str(n) for n in names_arr)
        return cls._from_columns(gi, st, bot_ids.astype(np.int64).reshape(-1), rk, names)

    @classmethod
    def from_seat_ids(
        cls,
        game_index: npt.ArrayLike,
        seat: npt.ArrayLike,
        bot_id: npt.ArrayLike,
        rank: npt.ArrayLike,
        labels: dict[int, str],
    ) -> GameTable:
        """Like ``from_seats``, with bots as integer ids named by ``labels`` (distinct
        names): no string per seat is ever made (the report's path from the store)."""
        ids = np.asarray(bot_id, dtype=np.int64)
        if len(ids) == 0:
            return cls.empty()
        present = np.unique(ids)
        names = sorted(labels[int(i)] for i in present)
        position = {name: p for p, name in enumerate(names)}
        lookup = np.full(int(present.max()) + 1, -1, dtype=np.int64)
        lookup[present] = [position[labels[int(i)]] for i in present]
        return cls._from_columns(
            np.asarray(game_index, dtype=np.int64),
            np.asarray(seat, dtype=np.int64),
            lookup[ids],
            np.asarray(rank, dtype=np.int64),
            tuple(names),
        )

    @classmethod
    def _from_columns(
        cls,
        gi: IntArray,
        st: IntArray,
        bot_ids: IntArray,
        rk: IntArray,
        names: tuple[str, ...],
    ) -> GameTable:
        # Self-play: keep the lowest seat of each (game, bot).
        order = np.lexsort((st, bot_ids, gi))
        gi, st, rk, bot_ids = gi[order], st[order], rk[order], bot_ids[order]
        first = np.ones(len(gi), dtype=bool)
        first[1:] = (gi[1:] != gi[:-1]) | (bot_ids[1:] != bot_ids[:-1])
        gi, st, rk, bot_ids = gi[first], st[first], rk[first], bot_ids[first]
        # Rank order within each game: by rank, then seat (trueskill's stable sort).
        order = np.lexsort((st, rk, gi))
        gi, rk, bot_ids = gi[order], rk[order], bot_ids[order]
        games, starts, sizes = np.unique(gi, return_index=True, return_counts=True)
        place = np.arange(len(gi)) - np.repeat(starts, sizes)
        width = max(2, int(sizes.max()))
        bots = np.full((len(games), width), -1, dtype=np.int32)
        ranks = np.full((len(games), width), -1, dtype=np.int64)
        row = np.repeat(np.arange(len(games)), sizes)
        bots[row, place] = bot_ids
        ranks[row, place] = rk
        ties = (ranks[:, 1:] == ranks[:, :-1]) & (bots[:, 1:] >= 0)
        keep = sizes >= 2
        return cls(
            games[keep],
            bots[keep],
            ties[keep],
            sizes[keep].astype(np.int64),
            names,
        )

    @classmethod
    def from_games(cls, games: Iterable[RatedGame]) -> GameTable:
        rows = [
            (g.game_index, seat, bot, rank)
            for g in games
            for seat, (bot, rank) in enumerate(zip(g.bots, g.ranks, strict=True))
        ]
        if not rows:
            return cls.empty()
        gi, st, bt, rk = zip(*rows, strict=True)
        return cls.from_seats(gi, st, list(bt), rk)

    def games(self) -> list[RatedGame]:
        """The games as ``RatedGame`` values (bots in rank order, competition ranks)."""
        out = []
        for index, row, ties, size in zip(
            self.index.tolist(),
            self.bots.tolist(),
            self.ties.tolist(),
            self.sizes.tolist(),
            strict=True,
        ):
            ranks = [1]
            for place in range(1, size):
                ranks.append(ranks[-1] if ties[place - 1] else place + 1)
            bots = tuple(self.names[b] for b in row[:size])
            out.append(RatedGame(index, bots, tuple(ranks)))
        return out

    def take(self, rows: npt.NDArray[np.int64] | npt.NDArray[np.bool_] | slice) -> GameTable:
        """A subset of the games (rows in schedule order), same ``names``."""
        return GameTable(
            self.index[rows], self.bots[rows], self.ties[rows], self.sizes[rows], self.names
        )

    def digest(self) -> str:
        """A content hash of the games (positions, bots by name, places, ties): the same
        games give the same digest whatever ids their bots got."""
        h = hashlib.sha256()
        name_ids = np.array(
            [int.from_bytes(hashlib.sha256(n.encode()).digest()[:8], "little") for n in self.names]
            + [0],
            dtype=np.uint64,
        )
        h.update(self.index.astype("<i8").tobytes())
        h.update(name_ids[self.bots].astype("<u8").tobytes())
        h.update(self.ties.astype(np.uint8).tobytes())
        h.update(str(self.width).encode())
        return h.hexdigest()

    def game_hashes(self) -> npt.NDArray[np.uint64]:
        """Two 64-bit hashes per game (position, bots by name, places, ties), vectorised."""
        name_ids = np.array(
            [np.frombuffer(hashlib.sha256(n.encode()).digest()[:16], "<u8") for n in self.names]
            + [np.zeros(2, dtype=np.uint64)],
            dtype=np.uint64,
        )
        out = np.empty((len(self), 2), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for lane in range(2):
                h = self.index.astype(np.uint64) * _MULT[lane] + np.uint64(lane + 1)
                for place in range(self.width):  # padding places leave h alone
                    seated = place < self.sizes
                    h = np.where(seated, _mix(h ^ name_ids[self.bots[:, place], lane]), h)
                    if place < self.ties.shape[1]:
                        tie = self.ties[:, place].astype(np.uint64)
                        h = np.where(place + 1 < self.sizes, _mix(h ^ tie), h)
                out[:, lane] = _mix(h ^ self.sizes.astype(np.uint64))
        return out

    def fingerprint(self) -> str:
        """Order-free digest of the set of games: the sum of ``game_hashes`` (mod 2**64 per
        lane) and the count. Adding games adds their hashes, so a stored state can check
        "these are exactly the games I applied" without hashing them in its batches."""
        return fingerprint_add("", self)


_MULT = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def fingerprint_add(fingerprint: str, games: GameTable) -> str:
    """``fingerprint`` (of some games; "" for none) plus ``games``."""
    count, a, b = (0, 0, 0) if not fingerprint else (int(x, 16) for x in fingerprint.split(":"))
    if len(games):
        with np.errstate(over="ignore"):
            sums = games.game_hashes().sum(axis=0, dtype=np.uint64)  # wraps mod 2**64
        a = (a + int(sums[0])) % 2**64
        b = (b + int(sums[1])) % 2**64
    return f"{count + len(games):x}:{a:016x}:{b:016x}"
