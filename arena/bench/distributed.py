"""`arena bench tournament --executor ray`: the same tournament on the local pool and on
Ray (same games, same machine, one run); games/s and the per-game overhead of Ray."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arena.tournament import Progress, TournamentConfig, run_tournament
from arena.tournament.runner import build_bots


@dataclass(frozen=True)
class ExecutorBench:
    executor: str
    games: int
    seconds: float
    """Wall time of the whole run (Ray: connecting or starting the cluster included)."""
    steady_seconds: float
    """From the first result to the last: play without start-up and shutdown."""

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds

    @property
    def steady_ms_per_game(self) -> float:
        return 1000 * self.steady_seconds / max(1, self.games - 1)


def bench_ray(bots: list[Path], seeds: int, address: str | None) -> list[ExecutorBench]:
    workers = os.cpu_count() or 1
    out = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-ray-") as tmp:
        for executor in ("local", "ray"):
            config = TournamentConfig(
                bots=bots,
                players=[2],
                variants=["coloured"],
                seeds=seeds,
                workers=workers,
                executor=executor,
                ray_address=address,
                output=Path(tmp) / executor,
            )
            build_bots(config)  # builds are cached: both runs measure play
            stamps: list[float] = []

            def stamp(_: Progress, stamps: list[float] = stamps) -> None:
                stamps.append(time.perf_counter())

            start = time.perf_counter()
            progress = run_tournament(config, on_progress=stamp)
            seconds = time.perf_counter() - start
            steady = stamps[-1] - stamps[1] if len(stamps) > 2 else seconds
            out.append(
                ExecutorBench(executor, progress.done - progress.done_before, seconds, steady)
            )
    return out


def print_ray_bench(
    bots: list[Path], seeds: int, address: str | None, console: Any, as_json: bool
) -> int:
    local, ray = bench_ray(bots, seeds, address)
    overhead_ms = ray.steady_ms_per_game - local.steady_ms_per_game
    ratio = ray.steady_ms_per_game / local.steady_ms_per_game
    if as_json:
        print(
            json.dumps(
                {
                    "runs": [
                        {
                            **asdict(r),
                            "games_per_s": r.games_per_s,
                            "steady_ms_per_game": r.steady_ms_per_game,
                        }
                        for r in (local, ray)
                    ],
                    "overhead_ms_per_game": overhead_ms,
                    "steady_ratio_ray_over_local": ratio,
                }
            )
        )
        return 0
    for r in (local, ray):
        console.print(
            f"{r.executor:>5}: {r.games} games in {r.seconds:.1f} s = {r.games_per_s:.1f} games/s "
            f"overall; steady {r.steady_ms_per_game:.1f} ms/game"
        )
    console.print(
        f"Ray / local pool, steady time per game: {ratio:.2f}x "
        f"({overhead_ms:+.1f} ms per game); overall: "
        f"{ray.seconds / local.seconds:.2f}x (Ray start-up and bundle builds included)"
    )
    return 0
