"""A tournament's finished games, read from its store as the report needs them (read-only).

Memory is bounded in the number of games: the store aggregates every table in SQL (one
row per bot, pair of bots, seat or split), and the only per-game data kept are the compact
columns the ratings need (``GameTable``: a few bytes per seat) and the finished games'
indices. No seat row of every game is ever held as Python or pandas values.

Everything is read inside one SQLite read transaction, so a report taken while the
tournament runs sees one consistent snapshot (a game is either wholly there or absent).
Only finished games count: a scheduled game without a ``games`` row is still to play.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from arena.ratings.games import GameTable
from arena.store.tournament import STORE_NAME, Store, StoreError, store_location

BOT_TOTAL_COLUMNS = [
    "games",
    "wins",
    "score_sum",
    "margin_sum",
    "margins",
    "forfeits",
    "decisions",
    "think_total",
    "think_p95_total",
    "think_max_ms",
    "cpu_total",
    "cpu_decisions",
]
PAIR_TOTAL_COLUMNS = ["bot", "opponent", "games", "ahead", "behind", "ties"]
SEAT_TOTAL_COLUMNS = ["n_players", "seat", "games", "wins", "score_sum"]
SPLIT_TOTAL_COLUMNS = ["games", "wins", "score_sum"]
FAULT_LOG_COLUMNS = ["game_index", "game_id", "bot", "seat", "kind", "round", "forfeit", "message"]
FLAGGED_COLUMNS = ["game_index", "game_id", "decisions", "think_mean_ms", "cpu_mean_ms", "seats"]
SPLITS = ("variant", "n_players")
LOSSES_KEPT = 8
"""Each bot's widest losses a snapshot keeps (the site's bot pages show them)."""


@dataclass(frozen=True)
class Results:
    """A snapshot of a tournament's results, aggregated by the store.

    ``rated``: every finished game's seating and places, compact (the ratings' input).
    ``bot_totals``: per bot (index ``bot``), sums over its seats (``BOT_TOTAL_COLUMNS``).
    ``pair_totals``: per ordered pair of bots that met. ``seat_totals``: per (player
    count, seat). ``split_totals[by]``: per (``by``, bot). ``faults``: every fault of a
    finished game with its game id. ``flagged``: games whose wall time far exceeded
    their CPU time (thresholds of ``arena.report.hostload``).
    """

    outdir: Path
    scheduled: int
    finished: int
    bots: list[str]
    """Every entrant: scheduled or seated, sorted by label."""
    rated: GameTable
    frontier: int | None
    """The highest schedule position up to which every scheduled game has finished."""
    bot_totals: pd.DataFrame
    fault_totals: pd.DataFrame
    pair_totals: pd.DataFrame
    seat_totals: pd.DataFrame
    split_totals: dict[str, pd.DataFrame]
    faults: pd.DataFrame
    flagged: pd.DataFrame
    game_counts: dict[str, dict[str, int]]
    """Finished games by ``n_players``, ``variant`` and ``end_reason`` (keys as text)."""
    mean_duration_s: float | None
    first_finished_at: float | None
    last_finished_at: float | None
    config: dict[str, Any] | None
    fingerprint: str = ""
    """The store's state this snapshot was taken at (see ``Store.fingerprint``)."""
    versions: dict[str, str] | None = None
    """Each bot's version by label."""
    ratings_state: str | None = None
    """The stored incremental ratings (JSON) the report continues from."""
    finished_index: npt.NDArray[np.int64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )
    """Schedule positions of the finished games, ascending (8 bytes a game)."""
    score_counts: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    """Per bot label: rows (n_players, score, games) over its seats, sorted."""
    worst_losses: list[tuple[str, int, int, int]] = field(default_factory=list)
    """Each bot's ``LOSSES_KEPT`` finished games lost by the widest margin to the
    winner's score, widest first (ties by game id): (label, game_index, seat, margin),
    bots in the store's order; equal to ``Store.worst_losses``."""

    @property
    def complete(self) -> bool:
        return self.scheduled > 0 and self.finished >= self.scheduled

    @property
    def store_path(self) -> Path | str:
        """The store file, or the URL of the database holding the games."""
        return store_location(self.outdir)

    def game_ids(self) -> dict[int, str]:
        """Game id of every finished game of the snapshot, by schedule position."""
        with Store(self.store_path, readonly=True) as store:
            return {
                int(index): str(game_id)
                for index, game_id in store.game_ids()
                if _contains(self.finished_index, index)
            }

    def bot_scores(self, bot: str) -> pd.DataFrame:
        """One bot's final scores (``score``, ``n_players``; one row per game it played),
        from the snapshot's ``score_counts`` (as ``Store.score_counts`` counts them)."""
        counts = self.score_counts.get(bot, np.zeros((0, 3), dtype=np.int64))
        n, score, games = counts[:, 0], counts[:, 1], counts[:, 2]
        return pd.DataFrame({"score": np.repeat(score, games), "n_players": np.repeat(n, games)})


def _contains(sorted_values: npt.NDArray[np.int64], value: int) -> bool:
    at = int(np.searchsorted(sorted_values, value))
    return at < len(sorted_values) and int(sorted_values[at]) == value


def store_path(outdir: Path) -> Path | str:
    """The store of a tournament folder: its file (or the file itself if given one), or
    the URL of the database its ``store.url`` names."""
    return store_location(outdir)


RatedHook = Callable[[GameTable, list[str]], None]
"""Called with the ratings' input and the entrants as soon as they are read, before the
store's other tables (a report starts its bootstrap there)."""


def load_results(outdir: Path, on_rated: RatedHook | None = None) -> Results:
    """Read a tournament folder's store. Raises ``StoreError`` (message for the user)."""
    outdir = Path(outdir)
    if not outdir.exists():
        raise StoreError(f"{outdir}: no such folder")
    path = store_path(outdir)
    if isinstance(path, Path) and not path.is_file():
        raise StoreError(f"{outdir}: no tournament store here ({STORE_NAME} is missing)")
    with Store(path, readonly=True) as store:  # its errors are StoreErrors
        return _snapshot(store, outdir if outdir.is_dir() else outdir.parent, on_rated)


def _snapshot(store: Store, outdir: Path, on_rated: RatedHook | None = None) -> Results:
    with store.snapshot():  # one read transaction = one consistent snapshot (WAL)
        config_text = store.get_meta("config")
        fingerprint = store.fingerprint()
        versions = {b.label: b.version for b in store.bots()}
        ratings_state = store.ratings_state()
        scheduled = store.expected_count()  # the whole schedule, not those handed out yet
        finished_index = _int_column(store.finished_index_chunks())
        rated, worst_losses, score_counts, pairs = _seat_outcomes(store)
        entrants = store.entrant_labels()
        if on_rated is not None:
            on_rated(rated, entrants)
        mean_duration, first_at, last_at = store.game_times()
        bot_totals = pd.DataFrame(
            store.bot_totals(), columns=["bot", *BOT_TOTAL_COLUMNS]
        ).set_index("bot")
        results = Results(
            outdir=outdir,
            scheduled=scheduled,
            finished=len(finished_index),
            bots=entrants,
            rated=rated,
            frontier=store.finished_frontier(),
            bot_totals=bot_totals.astype(
                {c: "float64" for c in BOT_TOTAL_COLUMNS} | _ints("games", "wins", "forfeits")
            ),
            fault_totals=pd.DataFrame(store.fault_totals(), columns=["bot", "kind", "count"]),
            pair_totals=pd.DataFrame(
                store.pair_totals() if pairs is None else pairs, columns=PAIR_TOTAL_COLUMNS
            ),
            seat_totals=pd.DataFrame(store.seat_totals(), columns=SEAT_TOTAL_COLUMNS),
            split_totals={
                by: pd.DataFrame(store.split_totals(by), columns=[by, "bot", *SPLIT_TOTAL_COLUMNS])
                for by in SPLITS
            },
            faults=pd.DataFrame(list(store.fault_log_rows()), columns=FAULT_LOG_COLUMNS).astype(
                {"forfeit": "bool"}
            ),
            flagged=_flagged(store),
            game_counts={
                column: {str(k): n for k, n in store.game_counts(column)}
                for column in ("n_players", "variant", "end_reason")
            },
            mean_duration_s=mean_duration,
            first_finished_at=first_at,
            last_finished_at=last_at,
            config=_config(config_text),
            fingerprint=fingerprint,
            versions=versions,
            ratings_state=ratings_state,
            finished_index=finished_index,
            worst_losses=worst_losses,
            score_counts=score_counts,
        )
    return results


def _ints(*columns: str) -> dict[str, str]:
    return dict.fromkeys(columns, "int64")


def _int_column(chunks: Any) -> npt.NDArray[np.int64]:
    parts = [np.array(chunk, dtype=np.int64).reshape(-1) for chunk in chunks]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


PairRows = list[tuple[str, str, int, int, int, int]]


def _seat_outcomes(
    store: Store,
) -> tuple[
    GameTable,
    list[tuple[str, int, int, int]],
    dict[str, npt.NDArray[np.int64]],
    PairRows | None,
]:
    """The ratings' compact input, each bot's worst losses, score counts and pair totals
    (None: too many bots to count them here), from one scan of every seat, read chunk by
    chunk into integer columns (no Python value kept per seat)."""
    parts = [np.array(chunk, dtype=np.int64).reshape(-1, 5) for chunk in store.outcome_seats()]
    if not parts:
        return GameTable.empty(), [], {}, []
    seats = np.concatenate(parts)
    del parts
    labels = {b.bot_id: b.label for b in store.bots()}
    game, seat, bot, rank, score = (np.ascontiguousarray(seats[:, i]) for i in range(5))
    del seats
    table = GameTable.from_seat_ids(game, seat, bot, rank, labels)
    losses = worst_losses(store, game, seat, bot, rank, score, labels, LOSSES_KEPT)
    counts = score_counts(game, bot, score, labels)
    return table, losses, counts, pair_totals(game, bot, rank, labels)


PAIR_BINS = 1 << 22
"""Most (bot, opponent) cells counted in arrays (about 2,000 bots); beyond, the store's
query counts the pairs."""


def pair_totals(
    game: npt.NDArray[np.int64],
    bot: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    labels: dict[int, str],
) -> PairRows | None:
    """``Store.pair_totals`` from seat columns sorted by game: every ordered pair of
    seats of a game held by different bots, counted per (bot, opponent) with bincounts,
    one pass per pair of seat positions; None when the bots are too many for that."""
    ids, dense = np.unique(bot, return_inverse=True)
    dense = dense.reshape(-1)
    n = len(ids)
    if n * n > PAIR_BINS:
        return None
    starts = np.flatnonzero(np.r_[True, game[1:] != game[:-1]])
    sizes = np.diff(np.r_[starts, len(game)])
    totals = np.zeros((4, n * n), dtype=np.int64)  # games, ahead, behind, ties
    for size in np.unique(sizes).tolist():
        first = starts[sizes == size]
        for i in range(size):
            for j in range(size):
                if i == j:
                    continue
                a, b = dense[first + i], dense[first + j]
                ra, rb = rank[first + i], rank[first + j]
                other = a != b
                cell = (a * n + b)[other]
                ra, rb = ra[other], rb[other]
                totals[0] += np.bincount(cell, minlength=n * n)
                totals[1] += np.bincount(cell, weights=ra < rb, minlength=n * n).astype(np.int64)
                totals[2] += np.bincount(cell, weights=ra > rb, minlength=n * n).astype(np.int64)
                totals[3] += np.bincount(cell, weights=ra == rb, minlength=n * n).astype(np.int64)
    rows: PairRows = []
    for c in np.flatnonzero(totals[0]).tolist():
        games, ahead, behind, ties = (int(v) for v in totals[:, c])
        rows.append((labels[int(ids[c // n])], labels[int(ids[c % n])], games, ahead, behind, ties))
    return rows


def score_counts(
    game: npt.NDArray[np.int64],
    bot: npt.NDArray[np.int64],
    score: npt.NDArray[np.int64],
    labels: dict[int, str],
) -> dict[str, npt.NDArray[np.int64]]:
    """``Store.score_counts`` of every bot at once, from seat columns sorted by game
    (a finished game's player count is its number of seats)."""
    starts = np.flatnonzero(np.r_[True, game[1:] != game[:-1]])
    sizes = np.diff(np.r_[starts, len(game)])
    players = np.repeat(sizes, sizes)
    by_label = np.array(sorted(set(labels.values())), dtype=object)
    label_of = np.zeros(int(bot.max()) + 1, dtype=np.int64)
    position = {name: i for i, name in enumerate(by_label)}
    for bot_id, name in labels.items():
        if bot_id < len(label_of):
            label_of[bot_id] = position[name]
    low = int(score.min())
    span = int(score.max()) - low + 1
    key = (label_of[bot] * (int(players.max()) + 1) + players) * span + (score - low)
    keys, games = np.unique(key, return_counts=True)
    score_of = keys % span + low
    players_of = (keys // span) % (int(players.max()) + 1)
    label_at = keys // span // (int(players.max()) + 1)
    bounds = np.flatnonzero(np.r_[True, label_at[1:] != label_at[:-1], True])
    return {
        str(by_label[label_at[a]]): np.stack(
            [players_of[a:b], score_of[a:b], games[a:b]], axis=1
        ).astype(np.int64)
        for a, b in itertools.pairwise(bounds.tolist())
    }


def worst_losses(
    store: Store,
    game: npt.NDArray[np.int64],
    seat: npt.NDArray[np.int64],
    bot: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    score: npt.NDArray[np.int64],
    labels: dict[int, str],
    keep: int,
) -> list[tuple[str, int, int, int]]:
    """``Store.worst_losses(keep)`` from seat columns sorted by game: the margins and a
    cut per bot vectorised, so only the few losses at or above a bot's cut (its
    ``keep``-th widest margin) are looked up by game id and sorted in Python."""
    if keep <= 0 or len(game) == 0:
        return []
    starts = np.flatnonzero(np.r_[True, game[1:] != game[:-1]])
    top = np.repeat(np.maximum.reduceat(score, starts), np.diff(np.r_[starts, len(game)]))
    lost = np.flatnonzero(rank != 1)
    if len(lost) == 0:
        return []
    margin = (top - score)[lost]
    loser = bot[lost]
    order = np.lexsort((-margin, loser))  # by bot, widest first
    by_bot, widest = loser[order], margin[order]
    first = np.flatnonzero(np.r_[True, by_bot[1:] != by_bot[:-1]])
    counts = np.diff(np.r_[first, len(by_bot)])
    cut = np.zeros(int(bot.max()) + 1, dtype=np.int64)
    cut[by_bot[first]] = widest[first + np.minimum(counts, keep) - 1]
    chosen = lost[margin >= cut[loser]]
    ids = store.game_ids_at(game[chosen].tolist())
    ranked = sorted(
        (int(bot[c]), -int(top[c] - score[c]), ids[int(game[c])], int(game[c]), int(seat[c]))
        for c in chosen
    )
    out: list[tuple[str, int, int, int]] = []
    taken: dict[int, int] = {}
    for bot_id, negative, _, index, position in ranked:
        if taken.get(bot_id, 0) < keep:
            taken[bot_id] = taken.get(bot_id, 0) + 1
            out.append((labels[bot_id], index, position, -negative))
    return out


def _flagged(store: Store) -> pd.DataFrame:
    from arena.report.hostload import LOAD_RATIO, MIN_EXCESS_MS

    rows = store.load_flagged_games(LOAD_RATIO, MIN_EXCESS_MS)
    return pd.DataFrame(rows, columns=FLAGGED_COLUMNS)


def _config(text: str | None) -> dict[str, Any] | None:
    """The tournament config, if stored and readable (it is informative only)."""
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        return None
    return config if isinstance(config, dict) else None
