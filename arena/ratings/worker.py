"""Bootstrap worker: ``python -m arena.ratings.worker`` < job ``.npz`` > ranks ``.npy``.

Started by ``arena.ratings.bootstrap`` to use more CPUs; not a user command.
"""

from __future__ import annotations

import io
import sys

import numpy as np

from arena.ratings.bootstrap import decode_job, ranks_of


def main() -> int:
    table, bots, params, index_sets = decode_job(sys.stdin.buffer.read())
    ranks = ranks_of(table, bots, params, index_sets)
    buf = io.BytesIO()
    np.save(buf, ranks, allow_pickle=False)
    sys.stdout.buffer.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
