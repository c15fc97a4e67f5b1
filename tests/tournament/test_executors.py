"""Executors are interchangeable: the same schedule gives the same results whoever runs it."""

from __future__ import annotations

from pathlib import Path

from arena.tournament import STORE_NAME, Store, TournamentConfig, run_tournament
from arena.tournament.executors import InlineExecutor, LocalPoolExecutor

REPO = Path(__file__).resolve().parents[2]


def results(out: Path) -> list[tuple[object, ...]]:
    with Store(out / STORE_NAME, readonly=True) as store:
        return [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]


def test_inline_and_pool_executors_store_identical_results(tmp_path: Path) -> None:
    bots = [REPO / "bots" / name for name in ("python-greedy", "python-random", "js-random")]
    outs = []
    for name, executor in (("inline", InlineExecutor()), ("pool", LocalPoolExecutor(2))):
        config = TournamentConfig(
            bots=bots, players=[2, 3], variants=["gray"], seeds=2, output=tmp_path / name
        )
        progress = run_tournament(config, executor=executor)
        assert progress.done == progress.total == 3 * 2 * 2 + 6 * 2  # 3p: 6 seatings
        outs.append(results(config.output))
    assert outs[0] == outs[1]
    assert len({row[0] for row in outs[0]}) == 24
