"""The competition store, on SQLite and on a real PostgreSQL (parametrised fixture)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")

import sqlalchemy as sa

from arena.store.competition import (
    CompetitionStore,
    Conflict,
    FinishedFault,
    FinishedSeat,
    GameOutcome,
    Invalid,
    NotFound,
    StoreError,
    hash_token,
    metadata,
)


def _active(store: CompetitionStore, author_id: int, name: str, language: str = "python") -> int:
    """Submit and accept a version of ``name``; its version id."""
    store.add_submission(author_id, name, f"/uploads/{name}.zip", "0" * 64)
    claimed = store.claim_queued_version()
    assert claimed is not None and claimed.bot_name == name
    done = store.finish_build(
        claimed.id,
        True,
        "accepted",
        "build ok\ncheck-bot ok",
        f"/built/{name}",
        "c" * 12,
        {"language": language, "manifest": {"name": name, "command": "python3 bot.py"}},
    )
    assert done.status == "active"
    return done.id


def _outcome(ranks: list[int], faults: tuple[FinishedFault, ...] = ()) -> GameOutcome:
    return GameOutcome(
        end_reason="normal",
        rounds=5,
        duration_s=0.5,
        worker="test",
        record_json=json.dumps({"ranks": ranks}).encode(),
        seats=tuple(FinishedSeat(i, 50 - 10 * r, r, False) for i, r in enumerate(ranks)),
        faults=faults,
        stderr=((0, "seat zero says hi\n"),),
    )


def _play(store: CompetitionStore, version_ids: list[int], ranks: list[int]) -> str:
    game = store.schedule_game(
        kind="ladder",
        players=len(version_ids),
        variant="coloured",
        seed=7,
        version_ids=version_ids,
        rated=True,
    )
    claimed = store.claim_scheduled_game()
    assert claimed is not None and claimed.id == game.id and claimed.status == "running"
    assert store.finish_game(game.id, _outcome(ranks))
    return game.id


def test_tokens_are_hashed_and_checked(store: CompetitionStore) -> None:
    author, token = store.create_author("alice", organiser=True)
    assert author.organiser and len(token) >= 40
    assert store.author_by_token(token) == author
    assert store.author_by_token(token + "x") is None
    assert store.author_by_token("") is None
    with store.engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_hash FROM authors")).scalar_one()
    assert stored == hash_token(token) and token not in stored
    with pytest.raises(Conflict):
        store.create_author("alice")
    fresh = store.new_token("alice")
    assert store.author_by_token(token) is None
    assert store.author_by_token(fresh) == author


def test_submissions_versions_and_ownership(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    bob, _ = store.create_author("bob")
    first = _active(store, alice.id, "greedy")
    with pytest.raises(Conflict, match="another author"):
        store.add_submission(bob.id, "greedy", "/x.zip", "0" * 64)
    second = store.add_submission(alice.id, "greedy", "/y.zip", "1" * 64)
    assert (second.number, second.status) == (2, "queued")
    assert store.claim_queued_version() is not None
    assert store.claim_queued_version() is None  # nothing else queued
    store.finish_build(second.id, True, "accepted", "log", "/built/2", "d" * 12, {})
    statuses = {v.number: v.status for v in store.versions_of("greedy")}
    assert statuses == {1: "retired", 2: "active"}
    assert [v.id for v in store.active_versions()] == [second.id]
    # a rejected build keeps the active version, and its log is readable
    third = store.add_submission(alice.id, "greedy", "/z.zip", "2" * 64)
    store.claim_queued_version()
    rejected = store.finish_build(
        third.id, False, "build failed: exit 1", "make: *** error", None, None, {}
    )
    assert rejected.status == "rejected" and rejected.build_log_available
    assert store.submission_log(third.id) == "make: *** error"
    assert store.version(first) is not None and store.version(first).status == "retired"  # type: ignore[union-attr]
    bot = store.bot("greedy")
    assert bot is not None and bot.author_name == "alice" and bot.language == "python"
    assert [v.id for v in store.submissions_of(alice.id)] == [third.id, second.id, first]


def test_result_stored_once_and_rated(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    a = _active(store, alice.id, "a")
    b = _active(store, alice.id, "b")
    game = store.schedule_game(
        kind="ladder", players=2, variant="gray", seed=3, version_ids=[a, b], rated=True
    )
    store.claim_scheduled_game()
    fault = FinishedFault(1, "timeout", 2, "no answer in 1000 ms", False)
    assert store.finish_game(game.id, _outcome([1, 2], (fault,))) is True
    assert store.finish_game(game.id, _outcome([2, 1])) is False  # delivered twice: ignored
    assert store.games_finished() == 1
    board = store.leaderboard()
    assert [r.bot_name for r in board] == ["a", "b"]
    assert board[0].mu > 25 > board[1].mu and board[0].games == 1 and board[0].win_rate == 1.0
    assert (board[0].faults, board[1].faults) == (0, 1)
    assert board[0].low < board[0].mu < board[0].high
    history = store.rating_history(a)
    assert [(p.game_id, p.mu) for p in history] == [(game.id, board[0].mu)]
    stored = store.game(game.id)
    assert stored is not None and stored.status == "finished"
    assert [(s.bot_name, s.rank, s.faults) for s in stored.seats] == [
        ("a", 1, []),
        ("b", 2, ["timeout"]),
    ]
    assert store.record(game.id) == {"ranks": [1, 2]}
    assert store.seat_stderr(game.id, 0) == "seat zero says hi\n"
    assert store.seat_stderr(game.id, 1) is None
    assert store.faults_by_kind("b")[0].kind == "timeout"
    h2h = store.head_to_head("a")
    assert [(h.opponent, h.games, h.wins, h.losses) for h in h2h] == [("b", 1, 1, 0)]


def test_ratings_follow_finish_order_and_rerun_undoes(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    a, b, c = (_active(store, alice.id, n) for n in "abc")
    g1 = _play(store, [a, b], [1, 2])
    g2 = _play(store, [b, c], [1, 2])
    _play(store, [a, b, c], [2, 1, 1])  # a tie between b and c
    assert len(store.rating_history(b)) == 3
    before = {r.bot_name: r.mu for r in store.leaderboard()}
    rerun = store.rerun(g1)
    assert rerun.rerun_of == g1 and rerun.status == "scheduled" and rerun.seed == 7
    old = store.game(g1)
    assert old is not None and old.status == "void"
    after = {r.bot_name: r.mu for r in store.leaderboard()}
    assert after != before
    assert store.rating_history(b)[0].game_id == g2  # g1 left the history
    with pytest.raises(Conflict):
        store.rerun(rerun.id)  # not finished yet
    with pytest.raises(NotFound):
        store.rerun("nope")


def test_restart_requeues_running_games(store_url: str) -> None:
    store = CompetitionStore.open(store_url)
    alice, token = store.create_author("alice")
    a = _active(store, alice.id, "a")
    b = _active(store, alice.id, "b")
    done = _play(store, [a, b], [1, 2])
    for _ in range(2):
        store.schedule_game(
            kind="ladder", players=2, variant="coloured", seed=1, version_ids=[a, b], rated=True
        )
    running = store.claim_scheduled_game()
    assert running is not None
    store.add_submission(alice.id, "c", "/c.zip", "0" * 64)
    assert store.claim_queued_version() is not None
    store.close()
    reopened = CompetitionStore.open(store_url)  # migrations are a no-op the second time
    assert reopened.requeue_running() == 1
    assert reopened.requeue_builds() == 1
    assert reopened.game_counts() == {"finished": 1, "scheduled": 2}
    assert reopened.author_by_token(token) == alice
    assert reopened.record(done) == {"ranks": [1, 2]}
    reopened.close()


def test_paging_filters_and_challenges(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    bob, _ = store.create_author("bob")
    a = _active(store, alice.id, "a")
    b = _active(store, bob.id, "b")
    ids = [_play(store, [a, b], [1, 2]) for _ in range(5)]
    page = store.games(limit=2)
    assert [g.id for g in page] == ids[:-3:-1]
    older = store.games(limit=10, before=page[-1].id)
    assert [g.id for g in older] == ids[-3::-1]
    assert store.games(bot="nobody") == []
    challenge = store.add_challenge(bob.id, ["a"], 2, "gray")
    assert not challenge.rated and challenge.kind == "challenge"
    assert [s.bot_name for s in challenge.seats] == ["b", "a"]
    assert store.games(kind="challenge")[0].id == challenge.id
    since = datetime.now(UTC) - timedelta(hours=1)
    assert store.challenges_since(bob.id, since) == 1
    assert store.challenges_since(alice.id, since) == 0
    with pytest.raises(Invalid):
        store.add_challenge(bob.id, ["a", "a"], 3, "coloured")
    with pytest.raises(NotFound):
        store.add_challenge(bob.id, ["ghost"], 2, "coloured")
    # an unrated challenge never moves ratings
    board = store.leaderboard()
    store.claim_scheduled_game()
    store.finish_game(challenge.id, _outcome([1, 2]))
    assert store.leaderboard() == board


def test_organiser_switches(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    a = _active(store, alice.id, "a")
    b = _active(store, alice.id, "b")
    _play(store, [a, b], [1, 2])
    pending = store.schedule_game(
        kind="ladder", players=2, variant="coloured", seed=2, version_ids=[a, b], rated=True
    )
    assert not store.paused()
    store.set_paused(True)
    assert store.paused()
    store.set_paused(False)
    frozen = store.freeze()
    assert store.paused()
    again = store.frozen()
    assert again is not None and again.rows == frozen.rows and again.rows[0].bot_name == "a"
    bot = store.disqualify("b")
    assert bot.disqualified
    assert [r.bot_name for r in store.leaderboard()] == ["a"]
    voided = store.game(pending.id)
    assert voided is not None and voided.status == "void"
    with pytest.raises(Conflict, match="disqualified"):
        store.add_submission(alice.id, "b", "/b2.zip", "0" * 64)
    with pytest.raises(NotFound):
        store.disqualify("ghost")


def test_migrated_schema_matches_the_tables(store: CompetitionStore) -> None:
    """The alembic migrations create exactly the tables store.py queries."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_newer_schema_is_refused(store_url: str) -> None:
    CompetitionStore.open(store_url).close()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreError, match="newer arena"):
        CompetitionStore.open(store_url)


def test_bad_urls_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a database URL"):
        CompetitionStore.open("not a url")
    with pytest.raises(StoreError, match="unsupported"):
        CompetitionStore.open("mysql://x/y")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        CompetitionStore.open(f"sqlite:///{garbage}")
    unreachable = "postgresql+psycopg://nobody:pw@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(StoreError, match="cannot open") as info:
        CompetitionStore.open(unreachable)
    assert "pw" not in str(info.value)


def test_concurrent_writers_do_not_lose_results(store: CompetitionStore) -> None:
    """Threads of one server (web, ladder, builder) write at once: nothing lost."""
    alice, _ = store.create_author("alice")
    a = _active(store, alice.id, "a")
    b = _active(store, alice.id, "b")
    games = [
        store.schedule_game(
            kind="ladder", players=2, variant="coloured", seed=i, version_ids=[a, b], rated=True
        )
        for i in range(12)
    ]
    errors: list[BaseException] = []

    def finish(chunk: list[str]) -> None:
        try:
            for gid in chunk:
                store.finish_game(gid, _outcome([1, 2]))
                store.finish_game(gid, _outcome([1, 2]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ids = [g.id for g in games]
    threads = [threading.Thread(target=finish, args=(ids[i::3],)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.games_finished() == 12
    assert len(store.rating_history(a)) == 12
    assert store.leaderboard()[0].games == 12


def test_ladder_bookkeeping(store: CompetitionStore) -> None:
    alice, _ = store.create_author("alice")
    a = _active(store, alice.id, "a")
    b = _active(store, alice.id, "b")
    for _ in range(4):
        _play(store, [a, b], [1, 2])
    c = _active(store, alice.id, "c")
    assert store.fair_shares([a, b, c]) == {a: 8 / 3, b: 8 / 3, c: 0.0}
    _play(store, [a, c], [1, 2])
    _play(store, [b, c, a], [1, 2, 3])
    shares = store.fair_shares([a, b, c])
    assert shares[c] == pytest.approx(5 / 3) and shares[a] == pytest.approx(13 / 3)
    assert store.pair_counts([a, b, c]) == {(a, b): 5, (a, c): 2, (b, c): 1}
    assert store.pair_counts([c]) == {}
    assert store.ladder_load() == {a: {2: 5, 3: 1}, b: {2: 4, 3: 1}, c: {2: 1, 3: 1}}
    assert store.ladder_mix() == ({2: 5, 3: 1}, {"coloured": 6})
    balance = store.ladder_balance()
    assert [(r["bot"], r["games"]) for r in balance["versions"]] == [("a", 6), ("b", 5), ("c", 2)]
    assert balance["players"] == {"2": 5, "3": 1} and balance["variants"] == {"coloured": 6}
    assert balance["spread"] == pytest.approx((6 - 13 / 3) - (2 - 5 / 3), abs=0.1)


def test_a_token_never_starts_like_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """`arena submit --token T` must accept every token issued (one in 64 random tokens
    started with '-', which argparse reads as an option: a flaky submit test found it)."""
    import arena.store.competition as competition

    draws = iter(["-starts-like-an-option", "-again", "fine-token"])
    monkeypatch.setattr(competition.secrets, "token_urlsafe", lambda n: next(draws))
    assert competition.new_token_text() == "fine-token"
