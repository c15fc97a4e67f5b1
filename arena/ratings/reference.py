"""The old bootstrap: re-rate every resample with the ``trueskill`` library itself.

Kept as the reference the fast path is tested against and as the baseline of
``arena bench report``: each resample re-rates every game through the library's factor
graph (~0.1 ms for a 2-player game, ~0.4 ms for 4 players), spread over one
``python -m arena.ratings.reference_worker`` per CPU. Not used by reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np
import numpy.typing as npt

from arena.ratings.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    rank_intervals,
    separable,
)
from arena.ratings.games import GameTable, RatedGame
from arena.ratings.model import (
    DEFAULT_PARAMS,
    TrueSkillParams,
    conservative,
    leaderboard_order,
    rate_in_given_order,
    rating_history,
    schedule_ordered,
)
from arena.ratings.ranking import RATING_COLUMNS, Ratings

# Below this many game ratings (games x resamples, ~1-2 s of work) starting processes
# costs more than it saves.
PARALLEL_MIN_WORK = 20_000

IntArray = npt.NDArray[np.int64]


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
    """``ranks_for`` in a fresh interpreter (``python -m arena.ratings.reference_worker``).

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
            [sys.executable, "-m", "arena.ratings.reference_worker"],
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


def legacy_compute_ratings(
    games: GameTable | Iterable[RatedGame],
    bots: Iterable[str] = (),
    *,
    params: TrueSkillParams = DEFAULT_PARAMS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    **_: object,
) -> Ratings:
    """``compute_ratings`` as it was: the library for the point ratings and the history
    of every game, then the library once per resample (the benchmark's baseline)."""
    import pandas as pd

    played = games.games() if isinstance(games, GameTable) else schedule_ordered(games)
    everyone = sorted(set(bots) | {bot for game in played for bot in game.bots})
    final, history = rating_history(played, params, everyone)
    order = leaderboard_order(final)
    samples = bootstrap_ranks(
        played, order, params=params, resamples=resamples, seed=seed, workers=workers
    )
    intervals = rank_intervals(samples, order)
    apart = separable(order, intervals) if intervals else {}
    rows = []
    for place, bot in enumerate(order, start=1):
        interval = intervals.get(bot)
        rows.append(
            {
                "rank": place,
                "bot": bot,
                "rating": conservative(final[bot]),
                "mu": float(final[bot].mu),
                "sigma": float(final[bot].sigma),
                "rank_low": None if interval is None else interval.low,
                "rank_high": None if interval is None else interval.high,
                "separable": apart.get(bot),
            }
        )
    table = pd.DataFrame(rows, columns=RATING_COLUMNS).astype(
        {
            "rank": "int64",
            "bot": "str",
            "rating": "float64",
            "mu": "float64",
            "sigma": "float64",
            "rank_low": "Int64",
            "rank_high": "Int64",
            "separable": "boolean",
        }
    )
    prior = params.mu - 3 * params.sigma
    history_rows = [
        {"game": n, "game_index": index, **{bot: after.get(bot, prior) for bot in order}}
        for n, (index, after) in enumerate(history, start=1)
    ]
    frame = pd.DataFrame(history_rows, columns=["game", "game_index", *order])
    return Ratings(
        table=table,
        history=frame,
        params=params,
        resamples=resamples if played else 0,
        seed=seed,
        games=len(played),
    )
