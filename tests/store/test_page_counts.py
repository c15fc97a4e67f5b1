"""The leaderboard's and head-to-head counts a long-running server keeps (brought up to
date from the games finished since) equal what a fresh server counts from nothing: after
new games, after a re-run voids one, and on a store filled by the bench's filler. And a
store of revision 0005 upgrades to the page indexes with its data (SQLite, PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("alembic", reason="the server extra is not installed")

import sqlalchemy as sa

from arena.bench.fill import fill_competition
from arena.errors import ArenaError
from arena.store.competition import CompetitionStore
from arena.store.migrations import alembic_config, current_revision, head_revision
from tests.server.web_helpers import activate, play


def _counts(store: CompetitionStore) -> tuple[Any, ...]:
    board = [(r.bot_name, r.games, r.win_rate, r.faults) for r in store.leaderboard()]
    return (board, store.head_to_head("alpha"), store.head_to_head("gamma"))


def _field(url: str) -> tuple[CompetitionStore, dict[str, int]]:
    store = CompetitionStore.open(url)
    versions = {}
    for author, bot in (("alice", "alpha"), ("bob", "beta"), ("carol", "gamma")):
        who, _ = store.create_author(author)
        versions[bot] = activate(store, who.id, bot)
    return store, versions


def test_kept_counts_equal_a_fresh_count(database_url: str) -> None:
    kept, v = _field(database_url)
    try:
        names = ("alpha", "beta", "gamma")
        games = []
        for seed, (a, b) in enumerate([(0, 1), (1, 2), (0, 2), (0, 1)]):
            games.append(play(kept, [v[names[a]], v[names[b]]], [names[a], names[b]], seed))
            fresh = CompetitionStore.open(database_url)
            try:
                assert _counts(kept) == _counts(fresh)
            finally:
                fresh.close()
        assert [h.games for h in kept.head_to_head("alpha")] == [2, 1]  # beta, gamma
        kept.rerun(games[0])  # voids a counted game
        fresh = CompetitionStore.open(database_url)
        try:
            assert _counts(kept) == _counts(fresh)
            assert [h.games for h in kept.head_to_head("alpha")] == [1, 1]
        finally:
            fresh.close()
    finally:
        kept.close()


def test_the_filler_writes_finished_games_the_pages_count(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store, v = _field(url)
    try:
        before = {r.bot_name: r.games for r in store.leaderboard()}
        assert fill_competition(url, 300) == 300
        after = {r.bot_name: r.games for r in store.leaderboard()}
        assert sum(after.values()) - sum(before.values()) == 600  # two seats a game
        assert sum(h.games for h in store.head_to_head("alpha")) == after["alpha"]
        assert len(store.games(bot="beta", limit=20)) == 20
        assert len(store.rating_history(v["gamma"], last=50)) == 50
        assert len(store.rating_history(v["gamma"])) == after["gamma"]
        assert store.faults_by_kind("alpha") or store.faults_by_kind("beta")
    finally:
        store.close()


def test_the_filler_needs_two_active_versions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    CompetitionStore.open(url).close()
    with pytest.raises(ArenaError, match="two active versions"):
        fill_competition(url, 10)


def test_a_0005_store_upgrades_to_the_page_indexes(database_url: str) -> None:
    from alembic import command

    engine = sa.create_engine(database_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0005")  # type: ignore[arg-type]
            conn.execute(sa.text("INSERT INTO settings (key, value) VALUES ('paused', '1')"))
            names = {i["name"] for i in sa.inspect(conn).get_indexes("games")}
            assert "games_finish_seq" not in names
    finally:
        engine.dispose()
    store = CompetitionStore.open(database_url)
    try:
        with store.engine.connect() as conn:
            assert current_revision(conn) == head_revision() == "0006"
            inspector = sa.inspect(conn)
            games = {i["name"] for i in inspector.get_indexes("games")}
            seats = {i["name"] for i in inspector.get_indexes("seats")}
            history = {i["name"] for i in inspector.get_indexes("rating_history")}
        assert {"games_finish_seq", "games_finished"} <= games
        assert "seats_version_game" in seats and "rating_history_version_id" in history
        assert store.paused()  # the data stayed
        assert store.leaderboard() == []
    finally:
        store.close()


def test_another_process_rerun_is_found_by_the_periodic_check(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arena.store.competition as competition

    kept, v = _field(database_url)
    other = CompetitionStore.open(database_url)  # another process: no generation shared
    try:
        game = play(kept, [v["alpha"], v["beta"]], ["alpha", "beta"], 1)
        play(kept, [v["alpha"], v["gamma"]], ["alpha", "gamma"], 2)
        assert [h.games for h in kept.head_to_head("alpha")] == [1, 1]
        other.rerun(game)
        monkeypatch.setattr(competition, "STATS_CHECK_S", 0.0)
        assert [h.games for h in kept.head_to_head("alpha")] == [1]
        assert _counts(kept) == _counts(other)
    finally:
        other.close()
        kept.close()
