"""One 1-worker tournament in a process of its own, for ``arena bench tournament``'s
machine ceiling: as many of these as the machine has cores play at once, nothing shared
(each worker claims a core of its own, :func:`arena.sandbox.affinity.claim_core`), and
together they play what this machine allows independent games, against which the
tournament's own 1 → N workers speed-up is read.

``python -m arena.bench.solo SEEDS OUTPUT BOT_DIR...``: says ``ready`` once its imports
are done, waits for a line on stdin (so that every copy starts playing together), then
plays, printing a line as it starts and as each game ends: the time (``time.monotonic``,
one clock for every process of the machine). The bench stops it with SIGINT once it has
counted enough games while all copies played.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from arena.tournament import Progress, TournamentConfig, run_tournament


def main(argv: list[str]) -> int:
    seeds, output, bots = int(argv[0]), Path(argv[1]), [Path(a) for a in argv[2:]]
    config = TournamentConfig(
        bots=bots,
        players=[2],
        variants=["coloured"],
        seeds=seeds,
        workers=1,
        persistent=True,
        output=output,
    )

    def stamp(_: Progress) -> None:
        sys.stdout.write(f"{time.monotonic()!r}\n")
        sys.stdout.flush()

    print("ready", flush=True)
    sys.stdin.readline()
    try:
        run_tournament(config, on_progress=stamp)
    except KeyboardInterrupt:  # the bench has what it needs
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
