"""Bootstrap rank intervals: how sure are we of each bot's place on the leaderboard?

TrueSkill gives one answer for one game order, and its sigma says nothing about how the
ranking would move with other deals. So we resample the finished games with replacement
(as many as there are), keep the resampled games in schedule order (duplicates stay
adjacent), re-rate from the prior and record every bot's rank. A bot's rank interval is the
2.5th-97.5th percentile of its ranks over the resamples (taken outward: the lower rank
rounds down, the upper rounds up).

The resampled index sets all come from one ``numpy`` generator seeded with ``seed``, drawn
in the parent before any work is split, so the result is identical whether the resamples
run serially or in worker processes.

Cost: one resample re-rates every game (~0.1 ms for a 2-player game and ~0.4 ms for a
4-player one in pure-Python trueskill), so large jobs are spread over worker processes
(one ``python -m arena.ratings.worker`` per CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from arena.ratings.games import RatedGame
from arena.ratings.model import (
    DEFAULT_PARAMS,
    TrueSkillParams,
    leaderboard_order,
    rate_in_given_order,
    schedule_ordered,
)

# Measured on a 2-CPU box, 200 resamples of 600 games (300 2p + 300 4p, 8 bots) took
# 36-42 s in one process and 16.5 s on two workers; a real 608-game demo store (456 2p +
# 152 4p) 22.7 s and 12.8 s. So the default is 100 (~8-10 s on two CPUs): pass 200 or
# more for a final report.
DEFAULT_RESAMPLES = 100
DEFAULT_SEED = 20240607
# Below this many game ratings (games x resamples, ~1-2 s of work) starting processes
# costs more than it saves.
PARALLEL_MIN_WORK = 20_000
LOW_PERCENTILE = 2.5
HIGH_PERCENTILE = 97.5

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RankInterval:
    """A bot's bootstrap rank interval (1 = best)."""

    low: int
    high: int

    def overlaps(self, other: RankInterval) -> bool:
        return self.low <= other.high and other.low <= self.high


def resample_indices(n_games: int, resamples: int, seed: int) -> list[IntArray]:
    """For each resample, sorted positions into the schedule-ordered games."""
    rng = np.random.default_rng(seed)
    return [np.sort(rng.integers(0, n_games, size=n_games)) for _ in range(resamples)]


def ranks_for(
    games: Sequence[RatedGame],
    bots: Sequence[str],
    params: TrueSkillParams,
    index_sets: Sequence[IntArray],
) -> IntArray:
    """Ranks (1-based, rows = resamples, columns = ``bots``) for some index sets."""
    column = {bot: i for i, bot in enumerate(bots)}
    out = np.zeros((len(index_sets), len(bots)), dtype=np.int64)
    for row, indices in enumerate(index_sets):
        ratings = rate_in_given_order([games[i] for i in indices], params, bots)
        for place, bot in enumerate(leaderboard_order(ratings), start=1):
            out[row, column[bot]] = place
    return out


def default_workers() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def bootstrap_ranks(
    games: Sequence[RatedGame],
    bots: Sequence[str],
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
) -> IntArray:
    """Rank of each of ``bots`` (columns) in each resample (rows).

    ``bots`` must include every bot of ``games``. ``workers=None`` uses every CPU for big
    jobs and runs small ones in-process; ``workers=1`` never starts a process.
    """
    ordered = schedule_ordered(games)
    if resamples <= 0 or not ordered:
        return np.zeros((0, len(bots)), dtype=np.int64)
    missing = {bot for game in ordered for bot in game.bots} - set(bots)
    if missing:
        raise ValueError(f"bots missing from the bot list: {sorted(missing)}")
    index_sets = resample_indices(len(ordered), resamples, seed)
    n_workers = default_workers() if workers is None else max(1, workers)
    n_workers = min(n_workers, resamples)
    if workers is None and len(ordered) * resamples < PARALLEL_MIN_WORK:
        n_workers = 1
    if n_workers == 1:
        return ranks_for(ordered, bots, params, index_sets)
    # Round-robin split (every worker gets a similar load); rows are put back in order.
    chunks = [index_sets[i::n_workers] for i in range(n_workers)]
    with ThreadPoolExecutor(max_workers=n_workers) as threads:
        parts = list(
            threads.map(lambda chunk: _ranks_in_subprocess(ordered, bots, params, chunk), chunks)
        )
    out = np.zeros((resamples, len(bots)), dtype=np.int64)
    for i, part in enumerate(parts):
        out[i::n_workers] = part
    return out


def _ranks_in_subprocess(
    games: Sequence[RatedGame],
    bots: Sequence[str],
    params: TrueSkillParams,
    index_sets: Sequence[IntArray],
) -> IntArray:
    """``ranks_for`` in a fresh interpreter (``python -m arena.ratings.worker``).

    A subprocess rather than ``multiprocessing``: no fork of a threaded caller, and no
    re-import of the caller's ``__main__`` (which "spawn" does). If the worker cannot
    start or fails, the chunk is computed here instead: same numbers, only slower. A
    worker killed by a signal (the user pressed Ctrl-C) stops the bootstrap.
    """
    payload = encode_job(games, bots, params, index_sets)
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
        return ranks_for(games, bots, params, index_sets)
    if done.returncode < 0:  # killed by a signal (Ctrl-C reaches the workers too): stop
        raise RuntimeError(f"bootstrap worker killed by signal {-done.returncode}")
    try:
        if done.returncode != 0:
            raise ValueError(f"worker exit status {done.returncode}")
        ranks = np.array(json.loads(done.stdout), dtype=np.int64)
        if ranks.shape != (len(index_sets), len(bots)):
            raise ValueError(f"worker answered shape {ranks.shape}")
        return ranks
    except ValueError:
        return ranks_for(games, bots, params, index_sets)


def encode_job(
    games: Sequence[RatedGame],
    bots: Sequence[str],
    params: TrueSkillParams,
    index_sets: Sequence[IntArray],
) -> bytes:
    """The worker's stdin: JSON (plain data, nothing executable)."""
    return json.dumps(
        {
            "params": asdict(params),
            "bots": list(bots),
            "games": [[g.game_index, list(g.bots), list(g.ranks)] for g in games],
            "index_sets": [indices.tolist() for indices in index_sets],
        }
    ).encode()


def decode_job(
    data: bytes,
) -> tuple[list[RatedGame], list[str], TrueSkillParams, list[IntArray]]:
    """Inverse of ``encode_job``."""
    job = json.loads(data)
    games = [RatedGame(int(i), tuple(bots), tuple(ranks)) for i, bots, ranks in job["games"]]
    index_sets = [np.array(indices, dtype=np.int64) for indices in job["index_sets"]]
    return games, list(job["bots"]), TrueSkillParams(**job["params"]), index_sets


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
