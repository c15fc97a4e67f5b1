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
    """One row per flagged game, in schedule order; ``seats`` gives each bot's ratio."""
    s = results.seats
    s = s[s["cpu_mean_ms"].notna() & (s["decisions"] > 0)].copy()
    if s.empty:
        return pd.DataFrame(columns=HOST_LOAD_COLUMNS)
    s["wall_total"] = s["think_mean_ms"] * s["decisions"]
    s["cpu_total"] = s["cpu_mean_ms"] * s["decisions"]
    s["ratio_text"] = [
        f"{bot} {_ratio_text(wall, cpu)}"
        for bot, wall, cpu in zip(s["bot"], s["think_mean_ms"], s["cpu_mean_ms"], strict=True)
    ]
    grouped = s.groupby("game_index")
    games = pd.DataFrame(
        {
            "decisions": grouped["decisions"].sum(),
            "wall_total": grouped["wall_total"].sum(),
            "cpu_total": grouped["cpu_total"].sum(),
            "seats": grouped["ratio_text"].agg(", ".join),
        }
    )
    games["think_mean_ms"] = games["wall_total"] / games["decisions"]
    games["cpu_mean_ms"] = games["cpu_total"] / games["decisions"]
    excess = games["think_mean_ms"] - games["cpu_mean_ms"]
    flagged = games[
        (games["think_mean_ms"] >= LOAD_RATIO * games["cpu_mean_ms"]) & (excess >= MIN_EXCESS_MS)
    ].copy()
    flagged["wall_per_cpu"] = flagged["think_mean_ms"] / flagged["cpu_mean_ms"].where(
        flagged["cpu_mean_ms"] > 0
    )
    ids = results.games.set_index("game_index")["game_id"]
    flagged = flagged.reset_index()
    flagged["game_id"] = flagged["game_index"].map(ids)
    return flagged[HOST_LOAD_COLUMNS].reset_index(drop=True)


def _ratio_text(wall: float, cpu: float) -> str:
    return f"{wall / cpu:.1f}x" if cpu > 0 else "no CPU"
