"""``python -m arena.bench.report_old report OUTDIR``: ``arena report`` with the old
ratings path (``arena.ratings.reference``), the baseline of ``arena bench report``."""

from __future__ import annotations

import sys

import arena.report.build
from arena.cli import main
from arena.ratings.reference import legacy_compute_ratings

if __name__ == "__main__":
    setattr(arena.report.build, "compute_ratings", legacy_compute_ratings)  # noqa: B010
    sys.exit(main(sys.argv[1:]))
