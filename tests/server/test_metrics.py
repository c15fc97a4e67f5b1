"""``GET /metrics``: Prometheus text whose numbers are the store's, for the organiser only."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("prometheus_client", reason="the server extra is not installed")

from prometheus_client.parser import text_string_to_metric_families

from arena.store.competition import CompetitionStore, StoreError

from .web_helpers import Site, activate, make_site, play


def _scrape(site: Site) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = site.client.get("/metrics", headers=site.auth("org"))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_match_the_store_after_games(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    store = site.store
    before = _scrape(site)
    assert before[("arena_store_up", ())] == 1
    assert before[("arena_games_finished_total", ())] == 2

    alice = store.author_by_name("alice")
    bob = store.author_by_name("bob")
    assert alice is not None and bob is not None
    gamma = activate(store, alice.id, "gamma")
    delta = activate(store, bob.id, "delta")
    play(store, [gamma, delta], ["gamma", "delta"], 7)
    store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=8, version_ids=[gamma, delta], rated=True
    )
    store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=9, version_ids=[gamma, delta], rated=True
    )
    assert store.claim_scheduled_game() is not None
    store.add_submission(alice.id, "epsilon", "/uploads/epsilon.zip", "2" * 64)

    after = _scrape(site)
    counts = store.game_counts()
    assert after[("arena_games_finished_total", ())] == counts["finished"] == 3
    assert after[("arena_games_in_flight", ())] == counts["running"] == 1
    assert after[("arena_games_scheduled", ())] == counts["scheduled"] == 1
    assert after[("arena_games_void_total", ())] == 0
    assert after[("arena_builds_queued", ())] == 1
    assert after[("arena_versions", (("status", "active"),))] == len(store.active_versions())
    assert after[("arena_faults_total", (("kind", "timeout"),))] == 3  # one per played game
    assert after[("arena_game_seconds_total", ())] == pytest.approx(1.5)
    with store.engine.connect() as conn:
        built = conn.exec_driver_sql(
            "SELECT count(*) FROM versions WHERE build_seconds IS NOT NULL"
        ).scalar_one()
    assert after[("arena_build_seconds_count", ())] == built == 4
    # requests: the first scrape (and the helper's none) counted as GET 200
    assert after[("arena_http_requests_total", (("method", "GET"), ("status", "200")))] >= 1


def test_build_seconds_histogram_counts_each_build(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    store = site.store
    alice = store.author_by_name("alice")
    assert alice is not None
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE versions SET build_seconds = NULL")
    for name, seconds in (("quick", 2.0), ("slow", 100.0)):
        store.add_submission(alice.id, name, f"/uploads/{name}.zip", "3" * 64)
        claimed = store.claim_queued_version()
        assert claimed is not None
        store.finish_build(claimed.id, True, "ok", "log", f"/built/{name}", "d" * 12, {})
        with store.engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE versions SET build_seconds = ? WHERE id = ?", (seconds, claimed.id)
            )
    after = _scrape(site)
    assert after[("arena_build_seconds_count", ())] == 2
    assert after[("arena_build_seconds_sum", ())] == pytest.approx(102.0)
    assert after[("arena_build_seconds_bucket", (("le", "5.0"),))] == 1
    assert after[("arena_build_seconds_bucket", (("le", "120.0"),))] == 2


def test_metrics_need_the_organiser(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    assert site.client.get("/metrics").status_code == 401
    assert site.client.get("/metrics", headers=site.auth("alice")).status_code == 403


def test_two_apps_keep_their_own_request_counts(tmp_path: Path) -> None:
    first = make_site(tmp_path / "a")
    second = make_site(tmp_path / "b")
    for _ in range(3):
        first.client.get("/")
    key = ("arena_http_requests_total", (("method", "GET"), ("status", "200")))
    assert _scrape(first)[key] >= 3
    assert _scrape(second).get(key, 0) == 0


def test_a_store_that_does_not_answer_is_store_up_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = make_site(tmp_path)
    before = _scrape(site)

    def down() -> None:
        raise StoreError("cannot open the store: connection refused")

    monkeypatch.setattr(site.store, "operations", down)
    after = _scrape(site)
    assert before[("arena_store_up", ())] == 1
    assert after[("arena_store_up", ())] == 0
    assert ("arena_games_finished_total", ()) not in after


def test_the_store_counts_on_each_database(store: CompetitionStore) -> None:
    """The scrape's queries on SQLite and PostgreSQL alike."""
    empty = store.operations()
    assert empty.games == {"scheduled": 0, "running": 0, "finished": 0, "void": 0}
    assert empty.build_seconds == () and empty.faults == {} and empty.game_seconds == 0
    alice, _ = store.create_author("alice")
    bob, _ = store.create_author("bob")
    a = activate(store, alice.id, "alpha")
    b = activate(store, bob.id, "beta")
    play(store, [a, b], ["alpha", "beta"], 1)
    game = store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=2, version_ids=[a, b], rated=True
    )
    assert store.claim_scheduled_game() is not None
    store.void_game(game.id, "the arena failed")
    snap = store.operations()
    assert snap.games == {"scheduled": 0, "running": 0, "finished": 1, "void": 1}
    assert snap.versions["active"] == 2 and snap.versions["queued"] == 0
    assert snap.faults == {"timeout": 1}
    assert snap.game_seconds == pytest.approx(0.5)
    assert len(snap.build_seconds) == 2
