"""Schedulers: the runner asks "what next?" and says what finished.

Every scheduler is deterministic given the master seed, generates games lazily (a schedule
is never materialised in full: the store holds the games handed out so far, and the
scheduler's position is a few numbers saved with them), and resumes from the store.

* ``RoundRobin`` (the default): for each player count k, every combination of k bots plays
  every deal seed under every seating of the set (balanced or rotations, see
  ``seating.py``). Deal seeds depend only on the master seed, the player count, the variant
  and the seed index, so every combination meets the same deals.
* ``Gauntlet``: the same, restricted to games of exactly one challenger and k-1 field bots
  (challengers play the field only).
* ``Sampled``: ``games`` games in sets of one deal and its seatings. Sets cycle through
  (player count, variant) in a fixed order, so the 2p/4p shares never drift; each set is
  anchored on a bot with the fewest games of that player count (so no bot - a crashing
  one with its large sigma, or the leader without near opponents - can hog or be starved
  of games) and fills its other seats by TrueSkill match quality with the anchor, sampled
  (never "nearest mu only"). The ratings it uses are those after every game with an index
  below ``set start - LAG``: the choice never depends on which games happened to finish
  first, so parallel runs and resumes make the same schedule.

>>> games = build_schedule(["a", "b", "c"], players=[2], variants=["coloured"], seeds=1,
...                        master_seed=1)
>>> [g.bots for g in games]
[('a', 'b'), ('b', 'a'), ('a', 'c'), ('c', 'a'), ('b', 'c'), ('c', 'b')]
>>> len({g.deal_seed for g in games})
1
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, islice
from typing import Protocol

from arena.play.job import ScheduledGame
from arena.tournament.seating import SeatingMode, seatings

LAG = 64
"""Sampled: the ratings that choose a set are those of every game ``LAG`` or more places
before the set's first game (a fixed part of the schedule's definition)."""


def deal_seed(master_seed: int, n_players: int, variant: str, seed_index: int) -> int:
    digest = hashlib.sha256(f"{master_seed}:{n_players}:{variant}:{seed_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class Entrant:
    """A bot as the scheduler knows it: name and version."""

    name: str
    version: str = ""


@dataclass(frozen=True)
class Finished:
    """What the scheduler learns of a finished game: its index, names by seat, ranks."""

    game_index: int
    bots: tuple[str, ...]
    ranks: tuple[int, ...]


class Scheduler(Protocol):
    """The seam between the runner and the choice of games."""

    def next(self) -> list[ScheduledGame]:
        """The next games to play (one game or a whole game set, stored together with
        ``state()``), or none: nothing to hand out now (all done, or the scheduler waits
        for results; with no game in flight, none means all done)."""
        ...

    def finished(self, game: Finished) -> None:
        """A game handed out (in this run or before) has finished."""
        ...

    def state(self) -> dict[str, str]:
        """What to save with the games handed out so far (store meta keys)."""
        ...

    @property
    def expected(self) -> int | None:
        """How many games this scheduler will hand out in all, if known."""
        ...


# ---------------------------------------------------------------------- round-robin


Pairings = Callable[[Sequence[Entrant], int], Iterator[tuple[Entrant, ...]]]


def all_combinations(bots: Sequence[Entrant], k: int) -> Iterator[tuple[Entrant, ...]]:
    return combinations(bots, k)


def one_challenger(challengers: Sequence[str]) -> Pairings:
    """Combinations of exactly one challenger and k-1 field bots."""
    chosen = set(challengers)

    def pairings(bots: Sequence[Entrant], k: int) -> Iterator[tuple[Entrant, ...]]:
        field = [b for b in bots if b.name not in chosen]
        for challenger in (b for b in bots if b.name in chosen):
            for others in combinations(field, k - 1):
                yield (challenger, *others)

    return pairings


def enumerate_games(
    bots: Sequence[Entrant],
    players: Sequence[int],
    variants: Sequence[str],
    seeds: int,
    master_seed: int,
    seating: SeatingMode = "rotations",
    pairings: Pairings = all_combinations,
) -> Iterator[ScheduledGame]:
    """The exhaustive schedule, lazily, deal seeds outermost (a partial run is balanced).
    ``game_index`` counts positions in this enumeration."""
    position = 0
    for seed_index in range(seeds):
        for k in sorted(players):
            orders = seatings(k, seating)
            for variant in variants:
                seed = deal_seed(master_seed, k, variant, seed_index)
                for combo in pairings(bots, k):
                    names = "+".join(b.name for b in combo)
                    for number, order in enumerate(orders):
                        lineup = tuple(combo[i] for i in order)
                        yield ScheduledGame(
                            position,
                            f"{k}p-{variant}-d{seed_index}-{names}-r{number}",
                            k,
                            variant,
                            seed_index,
                            seed,
                            number,
                            tuple(b.name for b in lineup),
                            tuple(b.version for b in lineup),
                        )
                        position += 1


def build_schedule(
    bots: Sequence[str],
    players: Sequence[int],
    variants: Sequence[str],
    seeds: int,
    master_seed: int,
    seating: SeatingMode = "balanced",
) -> list[ScheduledGame]:
    """The whole round-robin as a list (small schedules, tests, docs)."""
    entrants = [Entrant(b) for b in bots]
    return [
        ScheduledGame(
            g.game_index,
            g.game_id,
            g.n_players,
            g.variant,
            g.seed_index,
            g.deal_seed,
            g.rotation,
            g.bots,
        )
        for g in enumerate_games(entrants, players, variants, seeds, master_seed, seating)
    ]


class Exhaustive:
    """Round-robin and gauntlet: walk the enumeration lazily.

    ``cursor`` (saved) is how many enumeration positions were handed out or skipped;
    ``known`` says whether a game id is already scheduled (after ``--extend`` the
    enumeration is walked again from the start and known games are skipped).
    """

    def __init__(
        self,
        games: Iterator[ScheduledGame],
        *,
        next_index: int,
        cursor: int,
        known: Callable[[str], bool],
        expected: int | None,
        batch: int = 1,
    ) -> None:
        self._games = islice(games, cursor, None)
        self._cursor = cursor
        self._next_index = next_index
        self._known = known
        self._expected = expected
        self._batch = batch
        """Games handed out at a time: a tournament stores each batch in one transaction
        (a per-game transaction cost its parent more than a game's result row)."""

    @property
    def expected(self) -> int | None:
        return self._expected

    def next(self) -> list[ScheduledGame]:
        out: list[ScheduledGame] = []
        for game in self._games:
            self._cursor += 1
            if self._known(game.game_id):
                continue
            index = self._next_index
            self._next_index += 1
            out.append(
                ScheduledGame(
                    index,
                    game.game_id,
                    game.n_players,
                    game.variant,
                    game.seed_index,
                    game.deal_seed,
                    game.rotation,
                    game.bots,
                    game.versions,
                )
            )
            if len(out) >= self._batch:
                break
        return out

    def finished(self, game: Finished) -> None:
        pass

    def state(self) -> dict[str, str]:
        return {"schedule_cursor": str(self._cursor)}


def exhaustive_count(
    n_bots: int,
    players: Sequence[int],
    variants: int,
    seeds: int,
    seating: SeatingMode,
    challengers: int = 0,
) -> int:
    """How many games ``enumerate_games`` yields (without enumerating)."""
    total = 0
    for k in players:
        if challengers:
            combos = challengers * math.comb(n_bots - challengers, k - 1)
        else:
            combos = math.comb(n_bots, k)
        total += combos * len(seatings(k, seating))
    return total * variants * seeds


# ---------------------------------------------------------------------- sampled


@dataclass
class _Skill:
    mu: float
    sigma: float


class Sampled:
    """Sets of one deal and its seatings, chosen to reduce rating uncertainty where it
    matters while keeping each bot's game count (per player count) even."""

    def __init__(
        self,
        bots: Sequence[Entrant],
        players: Sequence[int],
        variants: Sequence[str],
        games: int,
        master_seed: int,
        seating: SeatingMode,
        *,
        next_index: int = 0,
        state: dict[str, str] | None = None,
        counts: dict[tuple[str, int], int] | None = None,
        replay: Sequence[Finished] = (),
    ) -> None:
        from arena.ratings import DEFAULT_PARAMS

        self.bots = list(bots)
        self.players = sorted(players)
        self.variants = list(variants)
        self.games = games
        self.master_seed = master_seed
        self.seating: SeatingMode = seating
        self.params = DEFAULT_PARAMS
        state = state or {}
        self.set_index = int(state.get("sampled_set", 0))
        self.prefix = int(state.get("sampled_prefix", 0))
        """The scheduler's ratings cover every game with an index below this."""
        skills = json.loads(state.get("sampled_skills", "{}"))
        self.skills = {
            b.name: _Skill(*skills.get(b.name, (self.params.mu, self.params.sigma)))
            for b in self.bots
        }
        self.counts = dict(counts or {})
        """Games handed out per (bot name, player count)."""
        self.next_index = next_index
        self._results: dict[int, Finished] = {}
        for game in replay:
            self.finished(game)

    @property
    def expected(self) -> int | None:
        return self.games

    # ------------------------------------------------------------ results

    def finished(self, game: Finished) -> None:
        if game.game_index >= self.prefix:
            self._results[game.game_index] = game

    def _advance_to(self, target: int) -> bool:
        """Rate games up to ``target`` (exclusive) in schedule order; False if one of
        them has not finished yet."""
        from arena.ratings import RatedGame
        from arena.ratings.model import Rater

        if self.prefix >= target:
            return True
        # Only the bots of the games rated now go through the rater (a pass over the
        # whole field for every set would make a 1,000-bot schedule's sets slow).
        rater = Rater(self.params)
        try:
            while self.prefix < target:
                game = self._results.pop(self.prefix, None)
                if game is None:
                    return False
                seats = [
                    (bot, rank)
                    for bot, rank in zip(game.bots, game.ranks, strict=True)
                    if bot in self.skills
                ]
                for bot, _ in seats:
                    if bot not in rater.ratings:
                        skill = self.skills[bot]
                        rater.ratings[bot] = rater.env.create_rating(skill.mu, skill.sigma)
                if len(seats) >= 2:
                    rater.rate(
                        RatedGame(
                            game.game_index,
                            tuple(bot for bot, _ in seats),
                            tuple(rank for _, rank in seats),
                        )
                    )
                self.prefix += 1
            return True
        finally:
            for name, rating in rater.ratings.items():
                self.skills[name] = _Skill(float(rating.mu), float(rating.sigma))

    # ------------------------------------------------------------ choosing

    def next(self) -> list[ScheduledGame]:
        if self.next_index >= self.games:
            return []
        if not self._advance_to(max(0, self.next_index - LAG)):
            return []  # wait for earlier games to finish
        return self._make_set()

    def plan(self, per_bot: int) -> list[ScheduledGame]:
        """Sets until every bot has played ``per_bot`` games, all at once and chosen with
        no results (the prior ratings: game counts stay even, opponents are drawn at
        random): a schedule fixed in advance, as a competition's finals need so that a
        re-run plays the same games."""
        out: list[ScheduledGame] = []

        def fewest() -> int:
            return min(
                sum(self.counts.get((b.name, k), 0) for k in self.players) for b in self.bots
            )

        while fewest() < per_bot:
            out.extend(self._make_set())
        return out

    def state(self) -> dict[str, str]:
        return {
            "sampled_set": str(self.set_index),
            "sampled_prefix": str(self.prefix),
            "sampled_skills": json.dumps(
                {n: [s.mu, s.sigma] for n, s in sorted(self.skills.items())}
            ),
        }

    def _make_set(self) -> list[ScheduledGame]:
        s = self.set_index
        k = self.players[s % len(self.players)]
        variant = self.variants[(s // len(self.players)) % len(self.variants)]
        rng = random.Random(f"{self.master_seed}:sampled:{s}")
        combo = self.choose(k, rng)
        seed = deal_seed(self.master_seed, k, variant, s)
        names = "+".join(b.name for b in combo)
        games = []
        for number, order in enumerate(seatings(k, self.seating)):
            lineup = tuple(combo[i] for i in order)
            games.append(
                ScheduledGame(
                    self.next_index,
                    f"{k}p-{variant}-s{s}-{names}-r{number}",
                    k,
                    variant,
                    s,
                    seed,
                    number,
                    tuple(b.name for b in lineup),
                    tuple(b.version for b in lineup),
                )
            )
            self.next_index += 1
        for bot in combo:
            self.counts[(bot.name, k)] = self.counts.get((bot.name, k), 0) + len(games)
        self.set_index += 1
        return games

    def choose(self, k: int, rng: random.Random) -> tuple[Entrant, ...]:
        """The set's bots: an anchor among the least played (largest sigma first, then
        chance), then k-1 others among the least played, drawn by match quality."""
        count = {b.name: self.counts.get((b.name, k), 0) for b in self.bots}
        low = min(count.values())
        least = [b for b in self.bots if count[b.name] == low]
        top_sigma = max(self.skills[b.name].sigma for b in least)
        anchor = rng.choice([b for b in least if self.skills[b.name].sigma >= top_sigma - 1e-9])
        chosen = [anchor]
        slack = 0
        while len(chosen) < k:
            taken = {b.name for b in chosen}
            pool = [b for b in self.bots if b.name not in taken and count[b.name] <= low + slack]
            if len(pool) < k - len(chosen):
                slack += 1
                continue
            weights = [self._quality(anchor, b) for b in pool]
            chosen.append(rng.choices(pool, weights=weights)[0])
        return tuple(sorted(chosen, key=lambda b: b.name))

    def _quality(self, a: Entrant, b: Entrant) -> float:
        """TrueSkill's 1-vs-1 match quality, floored so every pairing stays possible."""
        x, y = self.skills[a.name], self.skills[b.name]
        beta2 = 2 * self.params.beta**2
        spread = beta2 + x.sigma**2 + y.sigma**2
        quality = math.sqrt(beta2 / spread) * math.exp(-((x.mu - y.mu) ** 2) / (2 * spread))
        return max(quality, 0.05)
