"""The old bootstrap's worker (the benchmark baseline).

``python -m arena.ratings.reference_worker`` < job JSON > ranks JSON.

Started by ``arena.ratings.reference`` to use more CPUs; not a user command.
"""

from __future__ import annotations

import json
import sys

from arena.ratings.reference import decode_job, ranks_for


def main() -> int:
    games, bots, params, index_sets = decode_job(sys.stdin.buffer.read())
    ranks = ranks_for(games, bots, params, index_sets)
    sys.stdout.write(json.dumps(ranks.tolist()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
