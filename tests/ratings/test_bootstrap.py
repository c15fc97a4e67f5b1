"""The fast bootstrap equals the old one (the library per resample), is cached, and is
the same for any thread count and on the numpy fallback."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from arena.ratings import DEFAULT_PARAMS, GameTable, bootstrap_ranks, compiled, reference
from arena.ratings import bootstrap as fast
from arena.ratings.batch import rate_rows as numpy_rate_rows

from .helpers import synthetic_games

GAMES = synthetic_games(120, 7, seed=9)
TABLE = GameTable.from_games(GAMES)
BOTS = sorted(TABLE.names)


def test_fast_bootstrap_equals_the_library_per_resample() -> None:
    old = reference.bootstrap_ranks(GAMES, BOTS, resamples=12, seed=5, workers=1)
    new = bootstrap_ranks(TABLE, BOTS, resamples=12, seed=5)
    np.testing.assert_array_equal(old, new)


def test_same_for_any_thread_count_and_seeded() -> None:
    one = bootstrap_ranks(TABLE, BOTS, resamples=30, seed=1, workers=1)
    two = bootstrap_ranks(GAMES, BOTS, resamples=30, seed=1, workers=2)
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, bootstrap_ranks(TABLE, BOTS, resamples=30, seed=2))


def test_numpy_path_equals_the_compiled_path() -> None:
    """The fallback without numba rates the same sequences to the same numbers."""
    index_sets = fast.resample_indices(len(TABLE), 8, seed=3)
    env = DEFAULT_PARAMS.kernel_env()
    mu_np, sigma_np = numpy_rate_rows(TABLE, index_sets, env, 25.0, 25 / 3)
    mu = np.full((8, len(TABLE.names)), 25.0)
    sigma = np.full((8, len(TABLE.names)), 25 / 3)
    cols = np.maximum(TABLE.bots, 0).astype(np.int64)
    compiled.rate_rows(
        cols, TABLE.ties, TABLE.sizes, index_sets, mu, sigma, env.tau, env.beta2, env.margin
    )
    np.testing.assert_allclose(mu_np, mu, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sigma_np, sigma, rtol=0, atol=1e-9)


def test_result_is_cached_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = bootstrap_ranks(TABLE, BOTS, resamples=10, seed=4, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("bootstrap-*.npy"))) == 1

    def fail(*_: object, **__: object) -> None:
        raise AssertionError("recomputed")

    monkeypatch.setattr(fast, "ranks_of", fail)
    again = bootstrap_ranks(GAMES, BOTS, resamples=10, seed=4, cache_dir=tmp_path)
    np.testing.assert_array_equal(first, again)
    with pytest.raises(AssertionError, match="recomputed"):  # other games: not cached
        bootstrap_ranks(GAMES[:-1], BOTS, resamples=10, seed=4, cache_dir=tmp_path)


def test_damaged_or_unwritable_cache_only_costs_time(tmp_path: Path) -> None:
    want = bootstrap_ranks(TABLE, BOTS, resamples=6, seed=4)
    bootstrap_ranks(TABLE, BOTS, resamples=6, seed=4, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("bootstrap-*.npy")
    cached.write_bytes(b"\x93NUMPY garbage")
    np.testing.assert_array_equal(
        want, bootstrap_ranks(TABLE, BOTS, resamples=6, seed=4, cache_dir=tmp_path)
    )
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    np.testing.assert_array_equal(
        want, bootstrap_ranks(TABLE, BOTS, resamples=6, seed=4, cache_dir=blocked / "sub")
    )
    if os.geteuid() != 0:  # root writes anywhere
        readonly = tmp_path / "ro"
        readonly.mkdir(mode=0o500)
        np.testing.assert_array_equal(
            want, bootstrap_ranks(TABLE, BOTS, resamples=6, seed=4, cache_dir=readonly)
        )


def test_bots_missing_from_the_list_are_an_error() -> None:
    with pytest.raises(ValueError, match="missing"):
        bootstrap_ranks(TABLE, BOTS[1:], resamples=3, seed=1)


def test_without_numba_the_same_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    want = bootstrap_ranks(TABLE, BOTS, resamples=10, seed=8)
    monkeypatch.setattr(compiled, "AVAILABLE", False)
    np.testing.assert_array_equal(want, bootstrap_ranks(TABLE, BOTS, resamples=10, seed=8))


def test_concurrent_callers_get_their_own_answers() -> None:
    """Two threads (a server answering two reports) share the compiled thread pool."""
    from concurrent.futures import ThreadPoolExecutor

    seeds = [1, 2, 3, 4]
    want = [bootstrap_ranks(TABLE, BOTS, resamples=8, seed=s, workers=1) for s in seeds]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda s: bootstrap_ranks(TABLE, BOTS, resamples=8, seed=s), seeds))
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_prefetched_bootstrap_is_the_same_and_used_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Started early in a thread (as a report does while it reads the store), then asked
    for with the bots in leaderboard order: the same ranks, rated once."""
    order = [*BOTS[::-1], "no-games"]
    calls = []
    rate = fast.ranks_of
    monkeypatch.setattr(fast, "ranks_of", lambda *a, **k: calls.append(1) or rate(*a, **k))
    direct = bootstrap_ranks(TABLE, order, resamples=10, seed=4)
    once = len(calls)  # one call per block of resamples
    fast.prefetch(TABLE, order, resamples=10, seed=4)
    np.testing.assert_array_equal(bootstrap_ranks(TABLE, order, resamples=10, seed=4), direct)
    assert len(calls) == 2 * once  # the prefetched result, not a second rating
    assert not fast._PREFETCHED
    bootstrap_ranks(TABLE, order, resamples=10, seed=4)
    assert len(calls) == 3 * once  # taken once: a later call rates (or reads its cache) again


def test_rows_side_by_side_and_threaded_equal_one_row_at_a_time() -> None:
    """Groups of resamples in lanes on every thread give the same bits as one resample
    at a time in this thread (so any CPU count gives the same report)."""
    index_sets = fast.resample_indices(len(TABLE), 11, seed=8)
    env = DEFAULT_PARAMS.kernel_env()
    cols = np.maximum(TABLE.bots, 0).astype(np.int64)
    results = []
    for rate, group, threads in (
        (compiled.rate_rows_serial, 1, 1),
        (compiled.rate_rows, compiled.LANES, 2),
        (compiled.rate_rows, 3, 2),
    ):
        mu = np.full((11, len(TABLE.names)), 25.0)
        sigma = np.full((11, len(TABLE.names)), 25 / 3)
        with compiled.threads(threads):
            rate(
                cols,
                TABLE.ties,
                TABLE.sizes,
                index_sets,
                mu,
                sigma,
                env.tau,
                env.beta2,
                env.margin,
                group,
            )
        results.append((mu, sigma))
    for mu, sigma in results[1:]:
        np.testing.assert_array_equal(mu, results[0][0])
        np.testing.assert_array_equal(sigma, results[0][1])


def test_index_blocks_stay_bounded_on_many_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lanes x threads resamples at once, but never more than ``BLOCK_BYTES`` of index
    sets (64 threads at 2**20 games: 32 resamples, 128 MiB); any block size gives the
    same ranks."""
    assert fast.block_rows(2, 1_000_000) == 2 * compiled.LANES
    monkeypatch.setattr(compiled, "thread_count", lambda n: 64)
    assert fast.block_rows(None, 1_000) == 64 * compiled.LANES
    assert fast.block_rows(None, 2**20) == 32
    monkeypatch.undo()
    want = bootstrap_ranks(TABLE, BOTS, resamples=9, seed=6)
    monkeypatch.setattr(fast, "BLOCK_BYTES", 4 * len(TABLE) * 3)  # blocks of 3
    np.testing.assert_array_equal(bootstrap_ranks(TABLE, BOTS, resamples=9, seed=6), want)
