"""Bootstrap rank intervals: how sure are we of each bot's place on the leaderboard?

TrueSkill gives one answer for one game order, and its sigma says nothing about how the
ranking would move with other deals. So we resample the finished games with replacement
(as many as there are), keep the resampled games in schedule order (duplicates stay
adjacent), re-rate from the prior and record every bot's rank. A bot's rank interval is the
2.5th-97.5th percentile of its ranks over the resamples (taken outward: the lower rank
rounds down, the upper rounds up).

The resamples are rated by the compiled kernel (``arena.ratings.compiled``: the
``trueskill`` library's messages in machine code, resamples in parallel threads), ~100x
faster than re-running the library per resample (``arena bench report`` measures it
against ``arena.ratings.reference``, the old path); without numba, by the numpy path
(``arena.ratings.batch``: vectorised across resamples and across games that share no
bot). The index sets come from one ``numpy`` generator seeded with ``seed``, drawn
before any work is split, so the result is identical for any thread count, and fewer
resamples are the first ones of more. A report's default count is cut past 500,000
games (``default_resamples``: at most ``RESAMPLE_BUDGET`` rated games). Results are
cached on disk, keyed by the games' content hash, the bots, the TrueSkill parameters, the
resample count and the seed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from arena.ratings.batch import rate_rows
from arena.ratings.games import GameTable, RatedGame
from arena.ratings.model import DEFAULT_PARAMS, TrueSkillParams

DEFAULT_RESAMPLES = 100
RESAMPLE_BUDGET = 50_000_000
"""Rated games the default bootstrap spends at most: 100 resamples up to 500,000 games,
fewer past that (``default_resamples``); an explicit count is always honoured."""
MIN_RESAMPLES = 40
DEFAULT_SEED = 20240607
LOW_PERCENTILE = 2.5
HIGH_PERCENTILE = 97.5
CACHE_VERSION = 2  # 2: columns by bot name
CACHE_KEEP = 16  # cached results kept per folder (the newest)
IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.int32]  # positions into the games (4 bytes a game a resample)


@dataclass(frozen=True)
class RankInterval:
    """A bot's bootstrap rank interval (1 = best)."""

    low: int
    high: int

    def overlaps(self, other: RankInterval) -> bool:
        return self.low <= other.high and other.low <= self.high


def default_resamples(n_games: int) -> int:
    """The default resample count for ``n_games`` games: ``DEFAULT_RESAMPLES`` within the
    ``RESAMPLE_BUDGET`` of rated games, never fewer than ``MIN_RESAMPLES``.

    The draws are made in order from one seeded generator, so fewer resamples are the
    first ones of the full count (the same 50 of the 100), and the work per report stays
    flat past 500,000 games while each resample's intervals get narrower with games.
    """
    if n_games <= 0:
        return DEFAULT_RESAMPLES
    return max(MIN_RESAMPLES, min(DEFAULT_RESAMPLES, RESAMPLE_BUDGET // n_games))


def resamples_for(requested: int | None, n_games: int) -> int:
    """The resamples a report rates: ``requested`` (0 or more), or None for the default."""
    return default_resamples(n_games) if requested is None else max(0, requested)


def resample_indices(n_games: int, resamples: int, seed: int) -> IndexArray:
    """For each resample (rows), sorted positions into the schedule-ordered games."""
    parts = list(resample_chunks(n_games, resamples, seed, max(1, resamples)))
    return np.concatenate(parts) if parts else np.zeros((0, n_games), dtype=np.int32)


def resample_chunks(n_games: int, resamples: int, seed: int, rows: int) -> Iterator[IndexArray]:
    """``resample_indices`` in blocks of ``rows`` resamples (same draws, less memory).
    Drawn as 64-bit integers (the generator's stream) and kept as 32-bit ones."""
    if n_games > np.iinfo(np.int32).max:
        raise ValueError(f"{n_games} games: more than a bootstrap can index")
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, rows):
        out = np.empty((min(rows, resamples - start), n_games), dtype=np.int32)
        for row in range(len(out)):
            out[row] = np.sort(rng.integers(0, n_games, size=n_games))
        yield out


BLOCK_BYTES = 128 * 2**20  # index sets held at once, at most (a many-core machine)


def block_rows(threads: int | None, n_games: int) -> int:
    """Resamples rated per compiled call: a group of lanes for every thread (8 on two
    cores: 32 MB of index sets at a million games, held while the report loads), fewer
    where that would pass ``BLOCK_BYTES`` (the groups then narrow to keep threads busy)."""
    from arena.ratings import compiled

    wanted = compiled.LANES * compiled.thread_count(threads)
    return max(1, min(wanted, BLOCK_BYTES // (4 * max(1, n_games))))


def _as_table(games: GameTable | Sequence[RatedGame]) -> GameTable:
    return games if isinstance(games, GameTable) else GameTable.from_games(games)


def ranks_of(
    table: GameTable,
    bots: Sequence[str],
    params: TrueSkillParams,
    index_sets: IndexArray,
    threads: int | None = None,
) -> IntArray:
    """Ranks (1-based, rows = index sets, columns = ``bots``).

    Compiled (numba), the index sets are spread over ``threads`` threads (default: every
    CPU); each is rated alone, so the thread count never changes the result. Without
    numba, the numpy path runs in this thread.
    """
    from arena.ratings import compiled

    column = {bot: i for i, bot in enumerate(bots)}
    bot_columns = np.array([column[name] for name in table.names], dtype=np.int64)
    env = params.kernel_env()
    if not compiled.AVAILABLE:  # pragma: no cover - without numba
        mu, sigma = rate_rows(
            table, index_sets, env, params.mu, params.sigma, bot_columns, len(bots)
        )
        return leaderboard_ranks(mu, sigma, bots)
    with compiled.threads(threads):
        mu = np.full((len(index_sets), len(bots)), params.mu)
        sigma = np.full((len(index_sets), len(bots)), params.sigma)
        cols = bot_columns[np.maximum(table.bots, 0)]
        compiled.rate_rows(
            cols,
            table.ties,
            table.sizes,
            np.ascontiguousarray(index_sets),
            mu,
            sigma,
            env.tau,
            env.beta2,
            env.margin,
            # A block smaller than threads x lanes (the last): narrower groups, so
            # every thread has one.
            min(compiled.LANES, -(-len(index_sets) // compiled.thread_count(threads))),
        )
    return leaderboard_ranks(mu, sigma, bots)


def leaderboard_ranks(
    mu: npt.NDArray[np.float64], sigma: npt.NDArray[np.float64], bots: Sequence[str]
) -> IntArray:
    """Each row's leaderboard places: conservative rating, then mu, then name."""
    by_name = np.empty(len(bots), dtype=np.int64)
    by_name[np.argsort(np.array(bots, dtype=object).astype(str), kind="stable")] = np.arange(
        len(bots)
    )
    names = np.broadcast_to(by_name, mu.shape)
    order = np.lexsort((names, -mu, -(mu - 3.0 * sigma)), axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, len(bots) + 1)[None, :], axis=-1)
    return ranks.astype(np.int64)


def bootstrap_ranks(
    games: GameTable | Sequence[RatedGame],
    bots: Sequence[str],
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    cache_dir: Path | None = None,
) -> IntArray:
    """Rank of each of ``bots`` (columns) in each resample (rows).

    ``bots`` must include every bot of ``games``. ``workers``: threads (default: every
    CPU; the result is the same for any number). With ``cache_dir``, a result computed
    before for the same inputs is read back instead.
    """
    table = _as_table(games)
    if resamples <= 0 or len(table) == 0:
        return np.zeros((0, len(bots)), dtype=np.int64)
    missing = set(table.names) - set(bots)
    if missing:
        raise ValueError(f"bots missing from the bot list: {sorted(missing)}")
    canonical = sorted(set(bots))
    started = _take_prefetched(cache_key(table, canonical, params, resamples, seed))
    if started is not None:
        ranks = started.result()
    else:
        ranks = _sorted_ranks(table, canonical, params, resamples, seed, workers, cache_dir)
    # A bot's ranks do not depend on the order of the columns (ties go by name).
    column = {bot: i for i, bot in enumerate(canonical)}
    return ranks[:, [column[bot] for bot in bots]]


_KERNEL_LOCK = threading.Lock()


def _sorted_ranks(
    table: GameTable,
    bots: list[str],
    params: TrueSkillParams,
    resamples: int,
    seed: int,
    workers: int | None,
    cache_dir: Path | None,
) -> IntArray:
    """``bootstrap_ranks`` with ``bots`` sorted (the columns cached on disk)."""
    key = cache_key(table, bots, params, resamples, seed)
    cached = _read_cache(cache_dir, key, (resamples, len(bots)))
    if cached is not None:
        return cached
    # Blocks of resamples keep the index sets small (4 bytes x games x block). One
    # bootstrap at a time: numba's workqueue pool (its fallback without OpenMP or TBB)
    # aborts the process when two threads launch parallel kernels at once (a prefetch
    # and a caller's bootstrap of other games).
    with _KERNEL_LOCK:
        out = np.concatenate(
            [
                ranks_of(table, bots, params, index_sets, threads=workers)
                for index_sets in resample_chunks(
                    len(table), resamples, seed, block_rows(workers, len(table))
                )
            ]
        )
    _write_cache(cache_dir, key, out)
    return out


_PREFETCHED: dict[str, Future[IntArray]] = {}
_PREFETCH_LOCK = threading.Lock()


def prefetch(
    games: GameTable,
    bots: Sequence[str],
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    cache_dir: Path | None = None,
) -> None:
    """Start ``bootstrap_ranks`` of ``games`` in a background thread, so the resamples
    are rated while the caller goes on (a report reads its store's other tables
    meanwhile: SQLite and the compiled kernel both let go of the GIL). A later
    ``bootstrap_ranks`` of the same games and parameters, with the same bots in any
    order, waits for this result instead of starting over; the result is the same."""
    if resamples <= 0 or len(games) == 0 or not set(games.names) <= set(bots):
        return
    canonical = sorted(set(bots))
    key = cache_key(games, canonical, params, resamples, seed)
    future: Future[IntArray] = Future()
    with _PREFETCH_LOCK:
        if key in _PREFETCHED:
            return
        _PREFETCHED[key] = future

    def run() -> None:
        try:
            future.set_result(
                _sorted_ranks(games, canonical, params, resamples, seed, None, cache_dir)
            )
        except BaseException as exc:  # handed to the caller that waits for it
            future.set_exception(exc)

    threading.Thread(target=run, name="bootstrap-prefetch", daemon=True).start()


def _take_prefetched(key: str) -> Future[IntArray] | None:
    with _PREFETCH_LOCK:
        return _PREFETCHED.pop(key, None)


def cache_key(
    table: GameTable, bots: Sequence[str], params: TrueSkillParams, resamples: int, seed: int
) -> str:
    """What a bootstrap result depends on, hashed."""
    text = json.dumps([CACHE_VERSION, table.digest(), list(bots), asdict(params), resamples, seed])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read_cache(cache_dir: Path | None, key: str, shape: tuple[int, int]) -> IntArray | None:
    """A cached result, or None (missing, unreadable or damaged: recompute)."""
    if cache_dir is None:
        return None
    try:
        with open(Path(cache_dir) / f"bootstrap-{key}.npy", "rb") as f:
            data = np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if data.shape != shape or data.dtype != np.int64:
        return None
    ranks: IntArray = data
    return ranks


def _write_cache(cache_dir: Path | None, key: str, ranks: IntArray) -> None:
    """Best effort: a read-only or full disk only costs the next report the work."""
    if cache_dir is None:
        return
    folder = Path(cache_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as f:
            np.save(f, ranks, allow_pickle=False)
        os.replace(f.name, folder / f"bootstrap-{key}.npy")
        old = sorted(folder.glob("bootstrap-*.npy"), key=lambda p: p.stat().st_mtime)
        for stale in old[:-CACHE_KEEP]:
            stale.unlink(missing_ok=True)
    except OSError:
        return


def rank_intervals(samples: IntArray, bots: Sequence[str]) -> dict[str, RankInterval]:
    """Percentile interval of each bot's bootstrap ranks (empty when there are no samples)."""
    if samples.shape[0] == 0:
        return {}
    low = np.percentile(samples, LOW_PERCENTILE, axis=0, method="lower")
    high = np.percentile(samples, HIGH_PERCENTILE, axis=0, method="higher")
    return {bot: RankInterval(int(low[i]), int(high[i])) for i, bot in enumerate(bots)}


def separable(order: Sequence[str], intervals: dict[str, RankInterval]) -> dict[str, bool]:
    """A bot is separable when its interval overlaps neither leaderboard neighbour's."""
    out = {}
    for i, bot in enumerate(order):
        neighbours = [order[j] for j in (i - 1, i + 1) if 0 <= j < len(order)]
        out[bot] = not any(intervals[bot].overlaps(intervals[n]) for n in neighbours)
    return out
