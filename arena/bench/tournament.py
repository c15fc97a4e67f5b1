"""`arena bench tournament`: the same small tournament with 1 worker and with all cores,
with persistent and with per-game bot processes; games/s and the speed-ups."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arena.play.build import build_bot
from arena.referee import load_bot
from arena.tournament import Progress, TournamentConfig, run_tournament


@dataclass(frozen=True)
class TournamentBench:
    label: str
    workers: int
    persistent: bool
    games: int
    seconds: float
    steady_games_per_s: float
    """Between the workers' first results and the last one: play without start-up
    (pool, bot processes) and shutdown."""

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds


def bench_tournament(bots: list[Path], seeds: int = 30) -> list[TournamentBench]:
    """Bots are built first, so every run measures play (plus pool and bot start-up)."""
    for folder in bots:
        build_bot(load_bot(folder))
    cores = os.cpu_count() or 1
    runs = [
        ("1 worker, persistent", 1, True),
        (f"{cores} workers, persistent", cores, True),
        ("1 worker, per-game processes", 1, False),
        (f"{cores} workers, per-game processes", cores, False),
    ]
    out = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        for i, (label, workers, persistent) in enumerate(runs):
            config = TournamentConfig(
                bots=bots,
                players=[2],
                variants=["coloured"],
                seeds=seeds,
                workers=workers,
                persistent=persistent,
                output=Path(tmp) / f"run{i}",
            )
            stamps: list[float] = []

            def stamp(_: Progress, stamps: list[float] = stamps) -> None:
                stamps.append(time.perf_counter())

            start = time.perf_counter()
            progress = run_tournament(config, on_progress=stamp)
            seconds = time.perf_counter() - start
            first = min(workers, len(stamps) - 2)
            steady = (len(stamps) - 1 - first) / (stamps[-1] - stamps[first])
            out.append(TournamentBench(label, workers, persistent, progress.done, seconds, steady))
    return out


def print_bench_tournament(runs: list[TournamentBench], n_bots: int, console: Console) -> None:
    """The four runs' games/s and the speed-ups between them."""
    table = Table(title=f"{runs[0].games} games of {n_bots} bots, 2 players")
    for col in ("run", "seconds", "games/s overall", "games/s steady"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            r.label, f"{r.seconds:.2f}", f"{r.games_per_s:.1f}", f"{r.steady_games_per_s:.1f}"
        )
    console.print(table)
    one, many, one_fresh, many_fresh = runs

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x"

    console.print(
        f"speed-up 1 -> {many.workers} workers, steady play: "
        f"{ratio(many.steady_games_per_s, one.steady_games_per_s)} persistent, "
        f"{ratio(many_fresh.steady_games_per_s, one_fresh.steady_games_per_s)} per-game; "
        f"overall: {ratio(many.games_per_s, one.games_per_s)} / "
        f"{ratio(many_fresh.games_per_s, one_fresh.games_per_s)} (target ≥ 1.7x on 2 cores)"
    )
    console.print(
        "persistent vs per-game processes: "
        f"{ratio(one.steady_games_per_s, one_fresh.steady_games_per_s)} (1 worker), "
        f"{ratio(many.steady_games_per_s, many_fresh.steady_games_per_s)} "
        f"({many.workers} workers)"
    )
