"""An event's results, from that event's games only: wins, ties, losses, points, the
FAILED column and the chosen ranking (the batch fit with its stability audit, TrueSkill
over the event's games in schedule order, or the points formula).

Computed once when the event finishes (the fit resamples: not for every page view) and
kept with the event as plain JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from arena.ratings.final import DEFAULT_FINAL_RESAMPLES, DEFAULT_FINAL_SEED, final_ranking
from arena.ratings.games import RatedGame
from arena.ratings.model import Rater
from arena.ratings.points import parse_formula
from arena.store.competition_models import GameRow, Version


def label(version: Version) -> str:
    """How a version is named in results: ``bot v3``."""
    return f"{version.bot_name} v{version.number}"


def _counts(games: Sequence[GameRow], entrants: Sequence[Version]) -> dict[int, dict[str, Any]]:
    """Per entrant version: games, outright wins, shared-first ties, losses, the sum of
    its scores (a formula's ``points``), faults and failed games (lost to a crash, a
    timeout or an illegal move: a forfeit), as :mod:`arena.ratings.points` names them."""
    out = {
        v.id: {"games": 0, "wins": 0, "ties": 0, "losses": 0, "points": 0, "faults": 0, "failed": 0}
        for v in entrants
    }
    for game in games:
        ranks = [s.rank for s in game.seats if s.rank is not None]
        if game.status != "finished" or not ranks:
            continue
        best = min(ranks)
        shared = ranks.count(best) > 1
        for seat in game.seats:
            row = out.get(seat.version_id)
            if row is None:
                continue
            row["games"] += 1
            row["points"] += seat.score or 0
            row["faults"] += len(seat.faults)
            row["failed"] += int(seat.forfeit)
            if seat.rank == best:
                row["ties" if shared else "wins"] += 1
            else:
                row["losses"] += 1
    return out


def event_results(
    games: Sequence[GameRow],
    entrants: Sequence[Version],
    settings: Mapping[str, Any],
    *,
    resamples: int = DEFAULT_FINAL_RESAMPLES,
    staff: frozenset[str] = frozenset(),
    staff_in_prizes: bool = False,
) -> dict[str, Any]:
    """The results table (best first) and how it was ranked: ``rows`` with each
    entrant's counts, its formula points, TrueSkill (mu, sigma over the event's games in
    schedule order) and the batch fit (strength, 95 % rank interval, share of resamples
    and leave-k-out refits where its rank held); ``stability``: those shares as sentences
    ("rank 1 (a v2) held in 97 % of 200 resamples"). Bots named in ``staff`` are
    baselines: flagged, and without a ``prize_rank`` unless ``staff_in_prizes``."""
    from arena.report.standings import stability_lines

    rank_by = str(settings.get("rank_by", "final"))
    formula = parse_formula(str(settings.get("points", "50*wins + 20*ties + points")))
    if not entrants:
        return {
            "rank_by": rank_by,
            "points_formula": formula.text,
            "games": 0,
            "void": sum(1 for g in games if g.status == "void"),
            "final": None,
            "stability": [],
            "rows": [],
        }
    names = {v.id: label(v) for v in entrants}
    finished = sorted((g for g in games if g.status == "finished"), key=lambda g: g.id)
    rated = [
        RatedGame(
            index,
            tuple(names[s.version_id] for s in g.seats),
            tuple(int(s.rank or 0) for s in g.seats),
        )
        for index, g in enumerate(finished)
        if all(s.version_id in names and s.rank is not None for s in g.seats)
    ]
    counts = _counts(finished, entrants)
    rater = Rater(bots=names.values())
    for game in rated:
        rater.rate(game)
    final = final_ranking(rated, names.values(), resamples=resamples, seed=DEFAULT_FINAL_SEED)
    fit = final.by_bot()
    rows = []
    for v in entrants:
        name = names[v.id]
        c = counts[v.id]
        value = formula.evaluate({**c, "points": float(c["points"])})
        rating = rater.ratings[name]
        s = fit[name]
        rows.append(
            {
                "version_id": v.id,
                "bot": v.bot_name,
                "staff": v.bot_name in staff,
                "version": v.number,
                "author": v.author_name,
                **c,
                "score": None if math.isnan(value) else value,
                "mu": float(rating.mu),
                "sigma": float(rating.sigma),
                "trueskill": float(rating.mu) - 3 * float(rating.sigma),
                "final_rank": s.rank,
                "strength": s.strength,
                "low": None if s.interval is None else s.interval.low,
                "high": None if s.interval is None else s.interval.high,
                "held": s.held,
                "held_leave_out": s.held_leave_out,
            }
        )
    _rank(rows, rank_by)
    place = 0
    for row in rows:
        if row["staff"] and not staff_in_prizes:
            row["prize_rank"] = None
        else:
            place += 1
            row["prize_rank"] = place
    return {
        "rank_by": rank_by,
        "points_formula": formula.text,
        "games": len(finished),
        "void": sum(1 for g in games if g.status == "void"),
        "final": {
            "model": "Bradley-Terry-Davidson over each game's pairs of places",
            "games": final.games,
            "resamples": final.resamples,
            "leave_out": final.leave_out,
            "seed": final.seed,
            "tie_parameter": final.tie_parameter,
        },
        "stability": stability_lines(final),
        "rows": rows,
    }


def _rank(rows: list[dict[str, Any]], rank_by: str) -> None:
    """Sort ``rows`` best first by the chosen ranking and number them (equal points or
    ratings share a rank; the fit's ranks are distinct)."""

    def key(row: dict[str, Any]) -> float:
        if rank_by == "final":
            return float(row["final_rank"])
        value = row["score"] if rank_by == "points" else row["trueskill"]
        return math.inf if value is None else -float(value)

    rows.sort(key=lambda r: (key(r), r["bot"], r["version"]))
    for i, row in enumerate(rows):
        same = i and key(rows[i - 1]) == key(row)
        row["rank"] = rows[i - 1]["rank"] if same else i + 1
