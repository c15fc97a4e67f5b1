"""Bootstrap rank intervals: how sure are we of each bot's place on the leaderboard?

TrueSkill gives one answer for one game order, and its sigma says nothing about how the
ranking would move with other deals. So we resample the finished games with replacement
(as many as there are), keep the resampled games in schedule order (duplicates stay
adjacent), re-rate from the prior and record every bot's rank. A bot's rank interval is the
2.5th-97.5th percentile of its ranks over the resamples (taken outward: the lower rank
rounds down, the upper rounds up).

All resamples are rated together by ``arena.ratings.batch`` (the ``trueskill`` messages,
vectorised across resamples and across games that share no bot), which is ~100x faster
than re-running the library per resample (``arena bench report`` measures it against
``arena.ratings.reference``, the old path). The index sets come from one ``numpy``
generator seeded with ``seed``, drawn before any work is split, so the result is
identical serial or parallel. Large jobs are split by resample over one
``python -m arena.ratings.worker`` per CPU; results are cached on disk, keyed by the
games' content hash, the bots, the TrueSkill parameters, the resample count and the seed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from arena.ratings.batch import rate_rows
from arena.ratings.games import GameTable, RatedGame
from arena.ratings.model import DEFAULT_PARAMS, TrueSkillParams

DEFAULT_RESAMPLES = 100
DEFAULT_SEED = 20240607
# Below this many game ratings (games x resamples) starting processes costs more than it
# saves; above it, each worker still pays one numpy call per level, so splitting pays
# only when levels are wide (many bots): see ``worth_splitting``.
PARALLEL_MIN_WORK = 200_000
LOW_PERCENTILE = 2.5
HIGH_PERCENTILE = 97.5
CACHE_VERSION = 1
CACHE_KEEP = 16  # cached results kept per folder (the newest)

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RankInterval:
    """A bot's bootstrap rank interval (1 = best)."""

    low: int
    high: int

    def overlaps(self, other: RankInterval) -> bool:
        return self.low <= other.high and other.low <= self.high


def resample_indices(n_games: int, resamples: int, seed: int) -> IntArray:
    """For each resample (rows), sorted positions into the schedule-ordered games."""
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, n_games), dtype=np.int64)
    for row in range(resamples):
        out[row] = np.sort(rng.integers(0, n_games, size=n_games))
    return out


def _as_table(games: GameTable | Sequence[RatedGame]) -> GameTable:
    return games if isinstance(games, GameTable) else GameTable.from_games(games)


def ranks_of(
    table: GameTable, bots: Sequence[str], params: TrueSkillParams, index_sets: IntArray
) -> IntArray:
    """Ranks (1-based, rows = index sets, columns = ``bots``), in this process."""
    column = {bot: i for i, bot in enumerate(bots)}
    bot_columns = np.array([column[name] for name in table.names], dtype=np.int64)
    mu, sigma = rate_rows(
        table, index_sets, params.kernel_env(), params.mu, params.sigma, bot_columns, len(bots)
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


def default_workers() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def worth_splitting(table: GameTable, resamples: int) -> bool:
    """Whether worker processes pay: enough work, and games per level wide enough that
    element work (which splits) outweighs the per-level call cost (which does not)."""
    if len(table) * resamples < PARALLEL_MIN_WORK:
        return False
    seats_per_game = float(table.sizes.mean())
    return len(table.names) >= 3 * seats_per_game


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

    ``bots`` must include every bot of ``games``. ``workers=None`` splits big jobs over
    every CPU when that pays; ``workers=1`` never starts a process. With ``cache_dir``, a
    result computed before for the same inputs is read back instead.
    """
    table = _as_table(games)
    if resamples <= 0 or len(table) == 0:
        return np.zeros((0, len(bots)), dtype=np.int64)
    missing = set(table.names) - set(bots)
    if missing:
        raise ValueError(f"bots missing from the bot list: {sorted(missing)}")
    key = cache_key(table, bots, params, resamples, seed)
    cached = _read_cache(cache_dir, key, (resamples, len(bots)))
    if cached is not None:
        return cached
    index_sets = resample_indices(len(table), resamples, seed)
    n_workers = default_workers() if workers is None else max(1, workers)
    n_workers = min(n_workers, resamples)
    if workers is None and not worth_splitting(table, resamples):
        n_workers = 1
    if n_workers == 1:
        out = ranks_of(table, bots, params, index_sets)
    else:
        # Round-robin split (similar loads); rows are put back in order.
        chunks = [index_sets[i::n_workers] for i in range(n_workers)]
        with ThreadPoolExecutor(max_workers=n_workers) as threads:
            parts = list(
                threads.map(lambda chunk: _ranks_in_subprocess(table, bots, params, chunk), chunks)
            )
        out = np.zeros((resamples, len(bots)), dtype=np.int64)
        for i, part in enumerate(parts):
            out[i::n_workers] = part
    _write_cache(cache_dir, key, out)
    return out


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
    return data


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


def _ranks_in_subprocess(
    table: GameTable, bots: Sequence[str], params: TrueSkillParams, index_sets: IntArray
) -> IntArray:
    """``ranks_of`` in a fresh interpreter (``python -m arena.ratings.worker``).

    A subprocess rather than ``multiprocessing``: no fork of a threaded caller, and no
    re-import of the caller's ``__main__`` (which "spawn" does). If the worker cannot
    start or fails, the chunk is computed here instead: same numbers, only slower. A
    worker killed by a signal (the user pressed Ctrl-C) stops the bootstrap.
    """
    payload = encode_job(table, bots, params, index_sets)
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "arena.ratings.worker"],
            input=payload,
            capture_output=True,
            env=env,
            check=False,
        )
    except OSError:
        return ranks_of(table, bots, params, index_sets)
    if done.returncode < 0:  # killed by a signal (Ctrl-C reaches the workers too): stop
        raise RuntimeError(f"bootstrap worker killed by signal {-done.returncode}")
    try:
        if done.returncode != 0:
            raise ValueError(f"worker exit status {done.returncode}")
        ranks = np.load(io.BytesIO(done.stdout), allow_pickle=False)
        if ranks.shape != (len(index_sets), len(bots)):
            raise ValueError(f"worker answered shape {ranks.shape}")
        return ranks.astype(np.int64)
    except (ValueError, EOFError, OSError):
        return ranks_of(table, bots, params, index_sets)


def encode_job(
    table: GameTable, bots: Sequence[str], params: TrueSkillParams, index_sets: IntArray
) -> bytes:
    """The worker's stdin: an ``.npz`` of plain arrays (nothing executable, no pickle)."""
    meta = json.dumps({"params": asdict(params), "bots": list(bots), "names": table.names})
    buf = io.BytesIO()
    np.savez(
        buf,
        meta=np.frombuffer(meta.encode(), dtype=np.uint8),
        index=table.index,
        bots=table.bots,
        ties=table.ties,
        sizes=table.sizes,
        index_sets=index_sets,
    )
    return buf.getvalue()


def decode_job(data: bytes) -> tuple[GameTable, list[str], TrueSkillParams, IntArray]:
    """Inverse of ``encode_job``."""
    with np.load(io.BytesIO(data), allow_pickle=False) as job:
        meta = json.loads(job["meta"].tobytes().decode())
        table = GameTable(
            job["index"], job["bots"], job["ties"], job["sizes"], tuple(meta["names"])
        )
        index_sets = job["index_sets"]
    return table, list(meta["bots"]), TrueSkillParams(**meta["params"]), index_sets


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
