"""A small hand-computed tournament (figures worked out in ``test_tables.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.play.job import FaultRow

from .helpers import Game, Seat, game, make_store


def hand_games() -> list[Game]:
    """Three bots; five finished games (2p and 3p, both variants) and one unfinished."""
    return [
        game(
            0,
            Seat("alpha", 40, 1, decisions=10, think_mean_ms=2.0, think_p95_ms=4.0, think_max_ms=5),
            ("beta", 30, 2),
        ),
        game(
            1,
            ("beta", 45, 1),
            Seat(
                "alpha", 38, 2, decisions=30, think_mean_ms=6.0, think_p95_ms=8.0, think_max_ms=20
            ),
            rotation=1,
        ),
        game(2, ("alpha", 33, 1), ("beta", 33, 1), variant="gray"),
        game(
            3,
            ("gamma", 50, 1),
            ("alpha", 42, 2),
            ("beta", 10, 3),
            faults=(FaultRow(2, "beta", "illegal", 2, "not a legal move", False),),
        ),
        game(
            4,
            ("alpha", 60, 1),
            ("gamma", 20, 2),
            Seat("beta", 70, 3, forfeit=True, fault="malformed"),
            variant="gray",
            faults=(
                FaultRow(2, "beta", "malformed", 1, "not JSON", False),
                FaultRow(2, "beta", "timeout", 3, "no answer in time", True),
            ),
        ),
        game(5, ("gamma", 0, 1), ("alpha", 0, 2), finished=False),
    ]


@pytest.fixture
def hand_outdir(tmp_path: Path) -> Path:
    """The hand tournament, games finished out of schedule order."""
    return make_store(tmp_path / "t", hand_games(), finish_order=[3, 0, 4, 2, 1, 5])
