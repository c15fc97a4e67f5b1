"""Fixtures of the server tests: a competition store on SQLite, and on a real PostgreSQL
(``postgres_url``, from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")


from arena.store.competition import CompetitionStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty competition store, on each supported database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'competition.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[CompetitionStore]:
    opened = CompetitionStore.open(store_url)
    try:
        yield opened
    finally:
        opened.close()
