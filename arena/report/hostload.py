"""Games whose bots' wall time far exceeded their CPU time: harness trouble to look at.

A bot that computes spends about as much wall time as CPU time on a decision. When the
wall time is several times the CPU time, either the host was overloaded (too many
workers for its cores, another job on the machine) - every bot of the game shows it -
or one bot sleeps or blocks while thinking - only its seat shows it. CPU clocks keep
such games fair; on wall clocks their timeouts and think times measured the machine.
"""

from __future__ import annotations

import pandas as pd

from arena.report.data import Results

LOAD_RATIO = 2.0
"""Flag a game when its bots' wall time per decision is at least this many x their CPU time..."""
MIN_EXCESS_MS = 10.0
"""...and exceeds it by at least this much (pipe latency dwarfs the CPU of a 1 ms bot)."""
HOST_LOAD_COLUMNS = [
    "game_index",
    "game_id",
    "decisions",
    "think_mean_ms",
    "cpu_mean_ms",
    "wall_per_cpu",
    "seats",
]


def host_load(results: Results) -> pd.DataFrame:
    """One row per flagged game, in schedule order; ``seats`` gives each bot's ratio. The
    store flags the games (``LOAD_RATIO``, ``MIN_EXCESS_MS``) when the snapshot is taken."""
    flagged = results.flagged
    if flagged.empty:
        return pd.DataFrame(columns=HOST_LOAD_COLUMNS)
    out = flagged.copy()
    out["wall_per_cpu"] = out["think_mean_ms"] / out["cpu_mean_ms"].where(out["cpu_mean_ms"] > 0)
    out["seats"] = [
        ", ".join(f"{bot} {_ratio_text(wall, cpu)}" for bot, wall, cpu in seats)
        for seats in flagged["seats"]
    ]
    return out[HOST_LOAD_COLUMNS].reset_index(drop=True)


def _ratio_text(wall: float, cpu: float) -> str:
    return f"{wall / cpu:.1f}x" if cpu > 0 else "no CPU"
