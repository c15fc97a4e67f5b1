"""Loss triage on the author's own page: their bots' lost or faulted games, timeouts,
crashes and forfeits first, then the largest margin behind the winner; each row links
the replay and the author's own stderr, and only the author's own seats are listed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from arena.store.competition import (
    CompetitionStore,
    FinishedFault,
    FinishedSeat,
    GameOutcome,
)

from .web_helpers import EVIL_BOT, XSS, Site, make_site, real_record


def finish(
    store: CompetitionStore,
    version_ids: list[int],
    scores: list[int],
    fault: tuple[int, str] | None = None,
    stderr: dict[int, str] | None = None,
) -> str:
    """A finished 2-seat game with these scores (rank by score) and an optional fault."""
    game = store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=5, version_ids=version_ids, rated=True
    )
    assert store.claim_scheduled_game() is not None
    ranks = [1 + sum(other > mine for other in scores) for mine in scores]
    faults = ()
    if fault is not None:
        faults = (FinishedFault(fault[0], fault[1], 1, f"{fault[1]} {XSS}", fault[1] == "forfeit"),)
    outcome = GameOutcome(
        end_reason="complete",
        rounds=5,
        duration_s=0.1,
        worker="test",
        record_json=json.dumps(real_record(["a", "b"], 5, {})).encode(),
        seats=tuple(
            FinishedSeat(i, s, r, fault == (i, "forfeit"))
            for i, (s, r) in enumerate(zip(scores, ranks, strict=True))
        ),
        faults=faults,
        stderr=tuple((stderr or {}).items()),
    )
    assert store.finish_game(game.id, outcome)
    return game.id


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


def _ids(site: Site) -> tuple[int, int]:
    alpha = site.store.versions_of("alpha")[0].id
    beta = site.store.versions_of("beta")[0].id
    return alpha, beta


def test_faults_first_then_the_largest_margin(site: Site) -> None:
    alpha, beta = _ids(site)
    big = finish(site.store, [alpha, beta], [10, 50], stderr={0: "mine"})
    small = finish(site.store, [alpha, beta], [30, 35])
    won = finish(site.store, [alpha, beta], [60, 20])
    timeout = finish(site.store, [alpha, beta], [40, 41], fault=(0, "timeout"))
    crash_won = finish(site.store, [alpha, beta], [70, 10], fault=(0, "crash"))
    forfeit = finish(site.store, [beta, alpha], [20, 0], fault=(1, "forfeit"))
    theirs = finish(site.store, [alpha, beta], [80, 1], fault=(1, "timeout"))  # bob's fault

    rows = site.client.get("/api/me", headers=site.auth("alice")).json()["losses"]
    mine = [r["game"] for r in rows if r["game"] not in site.games]
    assert mine == [forfeit, timeout, crash_won, big, small]
    assert won not in mine and theirs not in mine
    assert {r["bot"] for r in rows} == {"alpha"}
    first = rows[0]
    assert first["faults"] == ["forfeit"] and first["seat"] == 1 and first["margin"] == 20
    by_game = {r["game"]: r for r in rows}
    assert by_game[big]["margin"] == 40 and by_game[big]["replay"] == f"/games/{big}"
    assert by_game[big]["stderr"] == f"/games/{big}/stderr/0.txt"
    assert by_game[small]["stderr"] is None  # nothing written: no dead link
    for row in rows:  # the older games of the site: lost or faulted, never a clean win
        assert row["faults"] or row["rank"] > 1


def test_the_page_links_replay_and_own_stderr(site: Site) -> None:
    alpha, beta = _ids(site)
    game = finish(site.store, [alpha, beta], [5, 60], fault=(0, "timeout"), stderr={0: "x"})
    site.sign_in("alice")
    page = site.client.get("/me").text
    triage = page[page.index('id="losses"') : page.index("recent games and stderr")]
    assert f'href="/games/{game}"' in triage
    assert f'href="/games/{game}/stderr/0.txt"' in triage
    assert "timeout" in triage
    assert triage.index(game) < min(
        (triage.index(g) for g in site.games if g in triage), default=len(triage)
    )
    assert site.client.get(f"/games/{game}/stderr/0.txt").text == "x"


def test_another_author_sees_only_their_own_losses(site: Site) -> None:
    alpha, beta = _ids(site)
    game = finish(site.store, [alpha, beta], [5, 60], fault=(0, "timeout"), stderr={0: "x"})
    rows = site.client.get("/api/me", headers=site.auth("bob")).json()["losses"]
    assert game not in {r["game"] for r in rows}
    assert {r["bot"] for r in rows} <= {"beta"}
    assert all(r["seat"] == 1 for r in rows)
    site.sign_in("bob")
    page = site.client.get("/me").text
    assert f"/games/{game}/stderr/0.txt" not in page


def test_signed_out_there_is_no_triage(site: Site) -> None:
    response = site.client.get("/me", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login"
    assert site.client.get("/api/me").status_code == 401


def test_a_hostile_bot_name_in_the_triage_is_inert(tmp_path: Path) -> None:
    site = make_site(tmp_path, hostile=True)
    evil = site.store.versions_of(EVIL_BOT)[0].id
    beta = site.store.versions_of("beta")[0].id
    finish(site.store, [evil, beta], [0, 90], fault=(0, "crash"))
    site.sign_in("alice")
    page = site.client.get("/me").text
    triage = page[page.index('id="losses"') : page.index("recent games and stderr")]
    assert "evil&lt;script&gt;" in triage
    assert "<script>" not in triage and "\x1b" not in triage
    assert re.search(r"<strong>crash</strong>", triage)


def test_the_triage_query_on_each_database(store: CompetitionStore) -> None:
    from .web_helpers import activate

    alice, _ = store.create_author("alice")
    bob, _ = store.create_author("bob")
    a = activate(store, alice.id, "alpha")
    b = activate(store, bob.id, "beta")
    lost = finish(store, [a, b], [10, 50], stderr={0: "e"})
    beaten = finish(store, [a, b], [60, 20])
    faulted = finish(store, [b, a], [30, 31], fault=(1, "timeout"))
    rows = store.losses_of(alice.id)
    assert [(r.game.id, r.seat, r.faults, r.margin, r.has_stderr) for r in rows] == [
        (faulted, 1, ["timeout"], 0, False),
        (lost, 0, [], 40, True),
    ]
    assert [(r.game.id, r.margin) for r in store.losses_of(bob.id)] == [(beaten, 40), (faulted, 1)]
