"""Revision 0004 (the phase log) upgrades a store written at 0002 in place: its data
stays, the new table is there and empty, and the phases work on it (SQLite, PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("alembic", reason="the server extra is not installed")

import sqlalchemy as sa

from arena.store.competition import CompetitionStore, hash_token
from arena.store.migrations import alembic_config, current_revision, head_revision


def _store_at_0002_with_data(url: str) -> None:
    """A store as an arena of revision 0002 left it: an author, the ladder paused."""
    from alembic import command

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0002")  # type: ignore[arg-type]
            assert current_revision(conn) == "0002"
            conn.execute(
                sa.text(
                    "INSERT INTO authors (name, organiser, token_hash, created) "
                    "VALUES ('alice', :org, :hash, :at)"
                ),
                {"org": False, "hash": hash_token("t" * 43), "at": datetime.now(UTC)},
            )
            conn.execute(sa.text("INSERT INTO settings (key, value) VALUES ('paused', '1')"))
            tables = sa.inspect(conn).get_table_names()
            assert "phase_log" not in tables
    finally:
        engine.dispose()


def test_a_0002_store_upgrades_and_keeps_its_data(database_url: str) -> None:
    _store_at_0002_with_data(database_url)
    store = CompetitionStore.open(database_url)
    try:
        with store.engine.connect() as conn:
            assert current_revision(conn) == head_revision()
        alice = store.author_by_token("t" * 43)
        assert alice is not None and alice.name == "alice"
        assert store.paused()
        assert store.phase_log() == []
        logged = store.change_phase(
            "phases",
            None,
            "{}",
            action="extend",
            phase_from="closed",
            phase_to="open",
            actor="alice",
            detail={"deadline": "2026-12-22T00:00:00+00:00"},
            at=datetime(2026, 12, 21, tzinfo=UTC),
        )
        assert logged is not None
        [row] = store.phase_log()
        assert (row.actor, row.action, row.at) == (
            "alice",
            "extend",
            datetime(2026, 12, 21, tzinfo=UTC),
        )
        again = store.change_phase(
            "phases",
            None,
            "{}",
            action="extend",
            phase_from="closed",
            phase_to="open",
            actor="bob",
            detail={},
            at=datetime(2026, 12, 21, tzinfo=UTC),
        )
        assert again is None, "a stale compare-and-set changes nothing"
        assert len(store.phase_log()) == 1
    finally:
        store.close()
