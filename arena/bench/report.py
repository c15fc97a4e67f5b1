"""`arena bench report`: how `arena report` grows with the number of finished games.

Builds synthetic tournament stores (through the store's own write methods: schedule, then
one result per game, then the stored ratings a tournament keeps) of 1k to 100k games,
then times ``arena report OUTDIR`` on each in a fresh process, exactly as a user runs it
(start-up, imports, load, ratings with the default bootstrap, every table, the files and
the site; the synthetic records are placeholders, so no replay page is drawn), with that
process's peak memory. The same run times the old ratings path (the ``trueskill``
library once per resample) on the baseline size, and with ``--before SRC`` another
arena source tree's report on every size, so speed-ups are ratios measured on this
machine, now.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arena.tournament.store import STORE_NAME, GameResult, ScheduledGame, SeatRow, Store

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
DEFAULT_BOTS = 16
DEFAULT_BASELINE_GAMES = 1_000
RATINGS_CACHE = ".ratings-cache"  # arena.report.build.RATINGS_CACHE (not imported: pandas)


@dataclass(frozen=True)
class ReportRun:
    """One timed ``arena report`` run."""

    games: int
    seconds: float
    peak_mb: float
    path: str  # "new", "new, cached" (bootstrap read back), "old" (library per resample)
    # or "before" (the --before source tree)
    cpu_seconds: float = 0.0  # user + system CPU of the report process (and its workers)
    ratings_seconds: float = 0.0  # of which rating (point ratings, history, bootstrap)

    def as_json(self) -> dict[str, object]:
        return {
            "games": self.games,
            "seconds": round(self.seconds, 3),
            "peak_mb": round(self.peak_mb, 1),
            "path": self.path,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "ratings_seconds": round(self.ratings_seconds, 3),
        }


def synthetic_store(
    outdir: Path, games: int, bots: int, seed: int = 1, *, stored_ratings: bool = True
) -> None:
    """A finished tournament of ``games`` 2- and 4-player games among ``bots`` bots, with
    skill-driven places (a few shared) and faults-free seats; with ``stored_ratings``, the
    ratings a tournament stores as its games finish (the report continues from them)."""
    rng = random.Random(seed)
    names = [f"bot-{i:03d}" for i in range(bots)]
    skill = {name: rng.gauss(0, 1) for name in names}
    schedule = []
    results = []
    for index in range(games):
        k = 4 if index % 2 and bots >= 4 else 2
        seated = tuple(rng.sample(names, k))
        score = {b: max(0, int(40 + 12 * skill[b] + rng.gauss(0, 15))) for b in seated}
        best = sorted(seated, key=lambda b: -score[b])
        rank = {b: 1 + sum(score[o] > score[b] for o in seated) for b in best}
        schedule.append(
            ScheduledGame(
                game_index=index,
                game_id=f"bench-{index:06d}",
                n_players=k,
                variant="coloured",
                seed_index=index // 8,
                deal_seed=rng.randrange(2**31),
                rotation=index % k,
                bots=seated,
            )
        )
        results.append(
            GameResult(
                game_index=index,
                duration_s=0.5,
                end_reason="normal",
                rounds=6,
                worker="bench",
                record_json=b"{}",
                seats=tuple(
                    SeatRow(
                        seat=seat,
                        bot=bot,
                        score=score[bot],
                        round_score=score[bot],
                        bonus_rows=0,
                        bonus_columns=0,
                        bonus_colours=0,
                        rank=rank[bot],
                        full_rows=1 if rank[bot] == 1 else 0,
                        forfeit=False,
                        fault=None,
                        decisions=40,
                        think_mean_ms=1.0,
                        think_p95_ms=2.0,
                        think_max_ms=3.0,
                    )
                    for seat, bot in enumerate(seated)
                ),
                faults=(),
            )
        )
    with Store(outdir / STORE_NAME) as store:
        store.save_schedule(schedule)
        for result in results:
            store.add_result(result)
        if stored_ratings:  # as a tournament leaves its store: ratings kept as games finish
            from arena.tournament.ledger import RatingLedger

            RatingLedger(store).advance()


def time_report(
    outdir: Path, *, old: bool = False, keep_cache: bool = False, source: Path | None = None
) -> ReportRun:
    """Wall time and peak memory of one ``arena report OUTDIR`` in a fresh process
    (``source``: run another arena source tree's report instead, path "before")."""
    if not keep_cache:
        shutil.rmtree(outdir / RATINGS_CACHE, ignore_errors=True)
    shutil.rmtree(outdir / "report", ignore_errors=True)  # every run writes the site afresh
    env = dict(os.environ)
    root = str(source.resolve() if source else Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena.bench.report_child",
            *(["--old"] if old else []),
            "report",
            str(outdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=root,  # ``-m`` puts the working folder first on the path: the tree measured
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"arena report {outdir} failed ({proc.returncode}): {err[-2000:]}")
    games = sum(1 for _ in _finished(outdir))
    path = "before" if source else "old" if old else ("new, cached" if keep_cache else "new")
    cpu = usage.ru_utime + usage.ru_stime
    rating = sum(
        float(line.split("=", 1)[1])
        for line in err.splitlines()
        if line.startswith("ratings_seconds=")
    )
    return ReportRun(games, seconds, usage.ru_maxrss / 1024, path, cpu, rating)


def _finished(outdir: Path) -> Iterable[int]:
    with Store(outdir / STORE_NAME, readonly=True) as store:
        yield from store.finished_indices()


def bench_report(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    bots: int = DEFAULT_BOTS,
    baseline_games: int = DEFAULT_BASELINE_GAMES,
    on_step: Callable[[str], None] = lambda _: None,
    before: Path | None = None,
) -> list[ReportRun]:
    """Every size with the new path (cold cache), the largest also re-reported with the
    cache, the old path on ``baseline_games`` (0: skip), and with ``before`` that source
    tree's report on every size, right after this one's on the same store."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-report-") as tmp:
        for games in sorted(set(sizes) | ({baseline_games} if baseline_games else set())):
            outdir = Path(tmp) / f"g{games}"
            on_step(f"building a store of {games:,} games")
            synthetic_store(outdir, games, bots)
            if games in sizes:
                on_step(f"arena report on {games:,} games")
                runs.append(time_report(outdir))
                if before is not None:
                    on_step(f"arena report on {games:,} games, {before}")
                    runs.append(time_report(outdir, source=before))
            if games == baseline_games:
                if games not in sizes:
                    runs.append(time_report(outdir))
                on_step(f"arena report on {games:,} games, old ratings path")
                runs.append(time_report(outdir, old=True))
            if games == max(sizes):
                on_step(f"arena report on {games:,} games again (bootstrap cached)")
                runs.append(time_report(outdir, keep_cache=True))
            shutil.rmtree(outdir, ignore_errors=True)
    return runs


def to_json(runs: Sequence[ReportRun]) -> str:
    return json.dumps([r.as_json() for r in runs], indent=2)


TARGET_GAMES, TARGET_SECONDS = 5_000, 5.0
BIG_GAMES, BIG_SECONDS = 100_000, 60.0


def run_bench_report(
    sizes: Sequence[int],
    bots: int,
    baseline_games: int,
    as_json: bool,
    console: Console,
    before: Path | None = None,
) -> int:
    """The ``arena bench report`` command: runs, then a table (or ``--json``)."""
    from rich.table import Table

    if any(n < 1 for n in sizes) or bots < 2 or baseline_games < 0:
        console.print("[red]error:[/red] sizes must be positive, --bots at least 2")
        return 2
    if before is not None and not (before / "arena" / "bench" / "report_child.py").is_file():
        console.print(f"[red]error:[/red] --before {before}: not an arena source tree")
        return 2
    if as_json:
        runs = bench_report(sizes, bots=bots, baseline_games=baseline_games, before=before)
        print(to_json(runs))
        return 0
    with console.status("…") as status:
        runs = bench_report(
            sizes,
            bots=bots,
            baseline_games=baseline_games,
            on_step=status.update,
            before=before,
        )
    table = Table(
        title=f"arena report (100 bootstrap resamples), {bots} bots, 2p and 4p games; "
        "seconds = wall time of the whole command; CPU s = its user + system time"
    )
    for col in ("games", "path", "seconds", "of which rating", "CPU s", "peak MB"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            f"{r.games:,}",
            r.path,
            f"{r.seconds:.2f}",
            f"{r.ratings_seconds:.2f}",
            f"{r.cpu_seconds:.2f}",
            f"{r.peak_mb:.0f}",
        )
    console.print(table)
    new = {r.games: r for r in runs if r.path == "new"}
    old = {r.games: r for r in runs if r.path == "old"}
    small, large = min(new), max(new)
    if large > small:
        growth = new[large].seconds / new[small].seconds
        shape = "no worse than" if growth <= large / small else "WORSE than"
        console.print(
            f"growth {small:,} -> {large:,} games: {growth:.1f}x time for "
            f"{large / small:.0f}x games ({shape} linear)"
        )
    for games, limit in ((TARGET_GAMES, TARGET_SECONDS), (BIG_GAMES, BIG_SECONDS)):
        if games in new:
            took = new[games].seconds
            verdict = "meets" if took <= limit else "MISSES"
            console.print(
                f"{games:,} games: {took:.2f} s, peak {new[games].peak_mb:.0f} MB "
                f"({verdict} the {limit:.0f} s target)"
            )
    for games, then in ((r.games, r) for r in runs if r.path == "before"):
        now = new[games]
        console.print(
            f"before -> now on {games:,} games: {then.seconds:.2f} s -> {now.seconds:.2f} s "
            f"({then.seconds / now.seconds:.2f}x), CPU {then.cpu_seconds:.2f} -> "
            f"{now.cpu_seconds:.2f} s, peak {then.peak_mb:.0f} -> {now.peak_mb:.0f} MB"
        )
    for games, baseline in old.items():
        now = new[games]
        note = " (measured on fewer games: the old path takes minutes at 5,000)"
        console.print(
            f"old path on {games:,} games: arena report {baseline.seconds:.1f} s -> "
            f"{now.seconds:.2f} s ({baseline.seconds / now.seconds:.0f}x faster); rating alone "
            f"{baseline.ratings_seconds:.1f} s -> {now.ratings_seconds:.2f} s "
            f"({baseline.ratings_seconds / max(now.ratings_seconds, 1e-9):.0f}x faster)"
            + (note if games < TARGET_GAMES else "")
        )
    return 0
