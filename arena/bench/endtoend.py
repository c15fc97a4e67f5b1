"""`arena bench tournament --end-to-end`: a 300-game tournament as a user runs it.

Each run is a fresh ``arena tournament`` process on fresh copies of the bots (so builds
are cold), then the same command again with nothing to play (the fixed cost of every
later call). With ``baseline`` (another arena executable, e.g. an older install) both are
measured in the same run, alternately, and the ratios printed.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EndToEnd:
    label: str
    games: int
    first_s: float
    """Build, play every game, final report."""
    again_s: float
    """The same command again: nothing to play."""
    stale_again_s: float | None
    """Again, with the report files removed (a report must be produced)."""
    peak_mb: float
    """Largest resident set of any process of the run (the arena, a worker or a bot)."""


def _run(command: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed:\n{done.stderr[-2000:]}")
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return seconds, peak / 1024


def end_to_end(bots: list[Path], seeds: int = 25, baseline: str | None = None) -> list[EndToEnd]:
    """``seeds`` deals per pair of the 2-player round-robin (4 bots, 25 deals: 300 games)."""
    arenas = [("this arena", [sys.executable, "-m", "arena.cli"])]
    if baseline:
        arenas.insert(0, ("baseline", [baseline]))
    pairs = len(bots) * (len(bots) - 1) // 2
    out = []
    with tempfile.TemporaryDirectory(prefix="arena-e2e-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        for i, (label, arena) in enumerate(arenas):
            copies = []
            for folder in bots:
                dest = root / f"bots{i}" / folder.name
                shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("bot", "__pycache__"))
                copies.append(str(dest))
            outdir = root / f"out{i}"
            command = [*arena, "tournament", "--quiet", "--bots", *copies]
            command += ["--players", "2", "--seeds", str(seeds), "--out", str(outdir)]
            if label == "this arena":
                command += ["--seating", "rotations"]  # the same 300 games as before
            first, peak = _run(command, root)
            again, _ = _run(command, root)
            shutil.rmtree(outdir / "report", ignore_errors=True)
            stale, _ = _run(command, root)
            out.append(EndToEnd(label, pairs * 2 * seeds, first, again, stale, peak))
    return out


def print_end_to_end(
    bots: list[Path], seeds: int | None, baseline: str | None, console: object, as_json: bool
) -> int:
    """Run and print (a table, or JSON); returns the exit status."""
    import json
    from dataclasses import asdict

    from rich.console import Console
    from rich.table import Table

    assert isinstance(console, Console)
    with console.status("a tournament end to end, as a user runs it…"):
        runs = end_to_end(bots, seeds=seeds or 25, baseline=baseline)
    if as_json:
        print(json.dumps([asdict(r) for r in runs]))
        return 0
    table = Table(title=f"{runs[0].games}-game tournament end to end ({len(bots)} bots)")
    for col in ("arena", "first run s", "again s", "again, report stale s", "peak MB"):
        table.add_column(col, justify="right")
    for r in runs:
        stale = "-" if r.stale_again_s is None else f"{r.stale_again_s:.2f}"
        table.add_row(r.label, f"{r.first_s:.2f}", f"{r.again_s:.2f}", stale, f"{r.peak_mb:.0f}")
    console.print(table)
    now = runs[-1]
    if len(runs) == 2:
        before = runs[0]
        console.print(
            f"before/after: first run {before.first_s / now.first_s:.2f}x, "
            f"again {before.again_s / now.again_s:.2f}x faster"
        )
    elif now.stale_again_s:
        console.print(
            f"again with a current report vs producing it: "
            f"{now.stale_again_s / now.again_s:.2f}x faster"
        )
    return 0
