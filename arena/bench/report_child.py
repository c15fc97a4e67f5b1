"""``python -m arena.bench.report_child [--old] report OUTDIR``: ``arena report`` as the
user runs it, plus the seconds spent rating (``compute_ratings``), printed on stderr as
``ratings_seconds=...``; ``--old`` swaps in the old ratings path
(``arena.ratings.reference``), the baseline of ``arena bench report``."""

from __future__ import annotations

import sys
import time
from typing import Any

import arena.report.build
from arena.cli import main
from arena.ratings import compute_ratings
from arena.ratings.reference import legacy_compute_ratings

MARK = "ratings_seconds="


def timed(compute: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return compute(*args, **kwargs)
        finally:
            print(f"{MARK}{time.perf_counter() - started:.6f}", file=sys.stderr)

    return run


if __name__ == "__main__":
    argv = sys.argv[1:]
    old = bool(argv) and argv[0] == "--old"
    compute = legacy_compute_ratings if old else compute_ratings
    setattr(arena.report.build, "compute_ratings", timed(compute))  # noqa: B010
    sys.exit(main(argv[1:] if old else argv))
