"""`arena bench tournament`: the same small tournament with 1 worker and with all cores,
with persistent and with per-game bot processes; games/s and the speed-ups, and where
one game's time goes (:mod:`arena.bench.gamecost`)."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arena.bench.gamecost import PARTS, GameCost, measure_game_cost
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
    load_average: float
    """The machine's 1-minute load average as the run started: a speed-up is only as
    good as the cores the other processes left (2 cores here, shared)."""

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds


def bench_tournament(bots: list[Path], seeds: int = 30) -> tuple[list[TournamentBench], GameCost]:
    """Bots are built first, so every run measures play (plus pool and bot start-up);
    then one game's cost, part by part."""
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

            load = os.getloadavg()[0]
            start = time.perf_counter()
            progress = run_tournament(config, on_progress=stamp)
            seconds = time.perf_counter() - start
            first = min(workers, len(stamps) - 2)
            steady = (len(stamps) - 1 - first) / (stamps[-1] - stamps[first])
            out.append(
                TournamentBench(label, workers, persistent, progress.done, seconds, steady, load)
            )
    return out, measure_game_cost(bots, seeds)


def bench_tournament_json(runs: list[TournamentBench], cost: GameCost) -> dict[str, object]:
    one, many = runs[0], runs[1]
    return {
        "runs": [asdict(r) | {"games_per_s": r.games_per_s} for r in runs],
        "speedup_steady_persistent": many.steady_games_per_s / one.steady_games_per_s,
        "load_average": [r.load_average for r in runs],
        "game_cost": cost.as_json(),
    }


def print_game_cost(cost: GameCost, console: Console) -> None:
    """The parts of one game (1 worker, persistent bots, in this process, profiled)."""
    table = Table(
        title=f"one game's time by part ({cost.games} games inline under cProfile, "
        f"{cost.profiled_game_ms:.2f} ms a game; {cost.game_ms:.2f} ms unprofiled)"
    )
    for col, justify in (("part", "left"), ("ms/game", "right"), ("share", "right"), ("", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    rows = [*cost.parts_ms.items(), ("other", cost.other_ms)]
    for part, ms in rows:
        share = ms / cost.profiled_game_ms if cost.profiled_game_ms else 0.0
        table.add_row(part, f"{ms:.2f}", f"{share:.0%}", PARTS.get(part, "the referee's own loop"))
    console.print(table)


def print_bench_tournament(runs: list[TournamentBench], n_bots: int, console: Console) -> None:
    """The four runs' games/s and the speed-ups between them."""
    table = Table(title=f"{runs[0].games} games of {n_bots} bots, 2 players")
    # Short headers: the table fits an 80-column terminal (steady: after start-up).
    for col in ("run", "seconds", "games/s", "steady/s", "load"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            r.label,
            f"{r.seconds:.2f}",
            f"{r.games_per_s:.1f}",
            f"{r.steady_games_per_s:.1f}",
            f"{r.load_average:.1f}",
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
        f"{ratio(many_fresh.games_per_s, one_fresh.games_per_s)} (target ≥ 1.7x on 2 cores; "
        f"load average {one.load_average:.1f} and {many.load_average:.1f} before the two runs, "
        f"on {os.cpu_count() or 1} cores)"
    )
    console.print(
        "persistent vs per-game processes: "
        f"{ratio(one.steady_games_per_s, one_fresh.steady_games_per_s)} (1 worker), "
        f"{ratio(many.steady_games_per_s, many_fresh.steady_games_per_s)} "
        f"({many.workers} workers)"
    )
