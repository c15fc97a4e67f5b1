"""Engine rules tests: position helpers live in ``helpers.py``, the independent
reference model of RULES.md in ``reference.py``."""

from __future__ import annotations

import pytest

from arena.engine import Game

from .helpers import fresh


@pytest.fixture
def g2() -> Game:
    """A 2-player coloured-wall game in round 1 with an empty table."""
    return fresh(players=2)


@pytest.fixture
def gray2() -> Game:
    """A 2-player gray-wall game in round 1 with an empty table."""
    return fresh(players=2, variant="gray")
