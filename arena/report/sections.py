"""The report's sections in order: title, a short explanation, the display table.

Shared by the Markdown and HTML renderers so both say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from arena.ratings import bootstrap
from arena.report.build import Report
from arena.report.format import (
    NOT_SEPARABLE,
    fault_groups_display,
    host_load_display,
    leaderboard_display,
    matrix_display,
    pairs_display,
    seat_display,
    split_display,
)
from arena.report.hostload import LOAD_RATIO, MIN_EXCESS_MS
from arena.report.standings import stability_lines
from arena.report.terminal import progress_text


@dataclass(frozen=True)
class Section:
    key: str  # also the CSV file name of the raw table
    title: str
    note: str
    table: pd.DataFrame


def status_line(report: Report) -> str:
    """``"120/120 games finished (complete)"`` or ``"37/120 ... (incomplete)"``."""
    s = report.summary
    state = "complete" if s["complete"] else "incomplete: still running or interrupted"
    return f"{progress_text(s['finished'], s['scheduled'])} ({state})"


def overview_lines(report: Report) -> list[str]:
    s = report.summary
    lines = [status_line(report), f"{s['bots']:,} bots"]
    if s["games_by_players"]:
        lines.append(
            "games by player count: "
            + ", ".join(f"{n}p {c:,}" for n, c in s["games_by_players"].items())
        )
        lines.append(
            "games by variant: " + ", ".join(f"{v} {c:,}" for v, c in s["games_by_variant"].items())
        )
        lines.append("end reasons: " + ", ".join(f"{r} {c:,}" for r, c in s["end_reasons"].items()))
    if s["faults"]:
        lines.append(f"faults recorded: {s['faults']:,}")
    if s["host_load_games"]:
        lines.append(
            f"games where wall time far exceeded CPU time: {s['host_load_games']} (see Host load)"
        )
    lines += ranking_lines(report)
    return lines


def ranking_lines(report: Report) -> list[str]:
    """What ranks the leaderboard when the organiser chose, and the final ranking's
    stability audit (one line per rank)."""
    ranking = report.summary.get("ranking") or {}
    lines = []
    if ranking.get("rank_by") == "points":
        lines.append(f"ranked by points = {ranking['points_formula']}")
    elif ranking.get("rank_by") == "final":
        lines.append("ranked by the final ranking (a batch fit of every game, in any order)")
    if ranking.get("points_formula") and ranking.get("rank_by") != "points":
        lines.append(f"points = {ranking['points_formula']}")
    return lines + stability_lines(report.final) + bootstrap_lines(report.summary)


def bootstrap_lines(summary: dict[str, Any]) -> list[str]:
    """Says so when the default bootstrap ran fewer resamples than 100 (a large store)."""
    text = reduced_bootstrap(summary)
    return [text] if text else []


def reduced_bootstrap(summary: dict[str, Any]) -> str:
    """``"rank intervals from 50 resamples, ..."`` when the default count was cut for the
    store's size (``default_resamples``), else ``""``."""
    boot = summary["bootstrap"]
    resamples = boot["resamples"]
    full = bootstrap.DEFAULT_RESAMPLES
    if boot.get("requested", 0) is not None or not 0 < resamples < full:
        return ""
    return (
        f"rank intervals from {resamples} bootstrap resamples: the default for "
        f"{boot.get('games', 0):,} games (at most {bootstrap.RESAMPLE_BUDGET:,} rated "
        f"games; --bootstrap {full} for the full count)"
    )


def method_note(report: Report) -> str:
    ts = report.summary["trueskill"]
    boot = report.summary["bootstrap"]
    if boot["resamples"]:
        interval = (
            f"Rank 95% is the {boot['percentiles'][0]}th–{boot['percentiles'][1]}th "
            f"percentile of the bot's rank over {boot['resamples']} bootstrap resamples of "
            f"the finished games (drawn with replacement, re-rated in schedule order, seed "
            f"{boot['seed']}); {NOT_SEPARABLE} marks a bot whose interval overlaps a "
            "neighbour's, i.e. their order is not established."
        )
        reduced = reduced_bootstrap(report.summary)
        if reduced:
            interval += f" {reduced[0].upper()}{reduced[1:]}."
    else:
        interval = "No bootstrap was run, so there are no rank intervals."
    return (
        ranking_note(report)
        + f"TrueSkill (mu {ts['mu']:g}, sigma {ts['sigma']:.3f}, beta {ts['beta']:.3f}, "
        f"tau {ts['tau']:.4f}, draw probability {ts['draw_probability']:g}), free-for-all "
        "(each seat a team of one, shared places as ties), over the finished games in "
        "schedule order. Sorted by the conservative rating μ − 3σ. " + interval
    )


def ranking_note(report: Report) -> str:
    """The chosen ranking's method, before TrueSkill's ("" when TrueSkill ranks)."""
    ranking = report.summary.get("ranking") or {}
    note = ""
    if ranking.get("rank_by") == "final" and "final" in ranking:
        final = ranking["final"]
        note = (
            "Ranked (#) by the final ranking: a Bradley-Terry-Davidson fit of every finished "
            "game at once (each pair of places one comparison, a shared place a tie), so it "
            "does not depend on the order games were played. Strength is the fitted "
            "log-strength; Final 95% the 2.5th-97.5th percentile of the bot's rank over "
            f"{final['resamples']} bootstrap resamples of whole games (seed {final['seed']}); "
            "Held the share of resamples in which the bot kept its rank, Held (leave-out) the "
            f"share of refits without {final['leave_out']} random games in which it did. "
        )
    elif ranking.get("rank_by") == "points":
        note = f"Ranked (#) by Points = {ranking['points_formula']} (equal points share a rank). "
    if ranking.get("points_formula"):
        note += (
            "In the formula, wins are sole first places, ties shared first places, losses "
            "the other games, points the sum of final scores; Failed counts games lost to "
            "crashes, timeouts or forfeits. "
        )
    return note + ("Also: " if note else "")


def seating_note(report: Report) -> str:
    """How the games were seated: what the seat-advantage table can be trusted for."""
    seating = (report.results.config or {}).get("seating")
    if seating == "balanced":
        return (
            "Seating: balanced - each deal was played with every bot in every seat and right "
            "after every other bot equally often, so these rates measure the seats alone, "
            "not who happened to sit before whom."
        )
    if seating == "rotations" or report.results.config is not None:
        return (
            "Seating: rotations - every bot sat in every seat equally often, but in each "
            "game set the same bot always sat right after the same other bot (the next "
            "player takes what you leave): seat rates and ratings can carry that bias. "
            'Use seating = "balanced" to remove it.'
        )
    return ""


def sections(report: Report) -> list[Section]:
    return [
        Section(
            "leaderboard",
            "Leaderboard",
            method_note(report)
            + " A win is a first place (shared first places count for each bot). Margin = "
            "winner's score minus the bot's, averaged over games. Fault columns count every "
            "fault, forgiven strikes included. Think ms (wall time, request to reply): "
            "decision-weighted mean; p95 is the decision-weighted mean of the per-game 95th "
            "percentiles (approximate). CPU ms: CPU time of the bot's process tree per "
            "decision, where measured.",
            leaderboard_display(report.leaderboard),
        ),
        Section(
            "head_to_head",
            "Head-to-head",
            "How often the row bot finished ahead of the column bot (strictly better rank) "
            "in the games they shared; ties count as half. Empty: they never met.",
            matrix_display(report.head_to_head),
        ),
        Section(
            "head_to_head_pairs",
            "Head-to-head counts",
            "Games shared, finished ahead, behind and tied, per ordered pair.",
            pairs_display(report.head_to_head_pairs),
        ),
        Section(
            "seat_advantage",
            "Seat advantage",
            "Win rate by seat for each player count (seat 0 starts round 1). With fair "
            "seats each would be close to the fair share 1/players. " + seating_note(report),
            seat_display(report.seat_advantage),
        ),
        Section(
            "by_variant",
            "By variant",
            "Per wall variant.",
            split_display(report.by_variant, "variant", "Variant"),
        ),
        Section(
            "by_players",
            "By player count",
            "Per number of players.",
            split_display(report.by_players, "n_players", "Players"),
        ),
        Section(
            "faults",
            "Faults by bot and kind",
            "One row per bot and kind of fault: how many, how many forfeited the game, and "
            "the first one as an example (faults.csv lists every fault). The game's record "
            "also holds the bot's last line and the tail of its stderr: see the bot's page in "
            "the report site, or arena replay OUTDIR --game ID."
            if len(report.fault_log)
            else "No bot faulted.",
            fault_groups_display(report.fault_log),
        ),
        Section(
            "host_load",
            "Host load",
            f"Games whose bots spent at least {LOAD_RATIO:g}x as much wall time as CPU time "
            f"per decision (and {MIN_EXCESS_MS:g} ms more): the host was overloaded if every "
            "bot of the game shows it, a bot slept or blocked if only its seat does. "
            f"This tournament ran on {_clock(report)} clocks"
            + (
                ": decisions were charged CPU time, so these games stayed fair."
                if _clock(report) == "cpu"
                else ": decisions were charged wall time, so in these games the machine "
                "may have cost bots time (consider --clock cpu, or fewer workers)."
            )
            if len(report.host_load)
            else "No game's wall time far exceeded its CPU time (or CPU time was not measured).",
            host_load_display(report.host_load),
        ),
    ]


def _clock(report: Report) -> str:
    """The clock the tournament's config names (stores from before clocks: wall)."""
    config = report.summary.get("config") or {}
    time = config.get("time") if isinstance(config, dict) else None
    clock = time.get("clock") if isinstance(time, dict) else None
    return str(clock) if clock in ("cpu", "wall") else "wall"
