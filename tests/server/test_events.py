"""Finals and scheduled rounds: tournaments over a snapshot of versions, played by the
ladder loop through the store, with their results computed once."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from arena.competition.config import CompetitionConfig, FinalsSection, LadderSection, RoundsSection
from arena.competition.events import Events, plan_games
from arena.competition.ladder import Ladder
from arena.referee.settings import PlaySettings
from arena.store.competition import CompetitionStore, Conflict
from arena.store.competition_events import event, event_games, list_events
from tests.server.test_ladder import FakeGames, ThreadedGames, _add_bots

T0 = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)


class FakeClock:
    """The events' clock, moved by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _config(**sections: object) -> CompetitionConfig:
    return CompetitionConfig.model_validate(sections)


def _play_out(store: CompetitionStore, events: Events, tmp_path: Path, event_id: int) -> None:
    """Run the ladder loop (paused: only event games) until the event finished."""
    ladder = Ladder(
        store,
        LadderSection(games_in_flight=2),
        PlaySettings(),
        tmp_path,
        ThreadedGames(2, FakeGames()),
    )
    thread = threading.Thread(target=ladder.run)
    thread.start()
    deadline = time.monotonic() + 60
    try:
        while True:
            events.tick()
            shown = event(store, event_id)
            assert shown is not None
            if shown.status == "finished":
                return
            assert time.monotonic() < deadline, "the event stalled"
            time.sleep(0.05)
    finally:
        ladder.shutdown(abort=False)
        thread.join(30)


def test_finals_take_the_versions_as_of_the_cutoff_and_leave_ratings_alone(
    store: CompetitionStore, tmp_path: Path
) -> None:
    _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    cutoff = datetime.now(UTC)
    time.sleep(0.01)
    late = _add_bots_for(store, "b", tmp_path / "built")  # b v2, after the cutoff
    store.set_paused(True)  # the ladder is off: event games still play
    events = Events(store, _config(finals={"players": [2], "deals": 2}))
    made = events.start_finals("organiser", cutoff=cutoff)
    assert made.status == "running"
    assert events.next_round() is None  # no [rounds]
    versions = {store.version(v).bot_name: store.version(v).number for v in made.entrants}  # type: ignore[union-attr]
    assert versions == {"a": 1, "b": 1, "c": 1}
    assert late not in made.entrants
    assert made.total_games == 3 * 2 * 2  # 3 pairs x 2 deals x 2 seatings
    before = {r.bot_name: (r.mu, r.sigma, r.games) for r in store.leaderboard()}
    _play_out(store, events, tmp_path, made.id)
    after = {r.bot_name: (r.mu, r.sigma, r.games) for r in store.leaderboard()}
    assert after == before  # unrated: TrueSkill of the ladder untouched
    done = event(store, made.id)
    assert done is not None and done.results is not None
    rows = done.results["rows"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert sum(r["games"] for r in rows) == 2 * 12
    assert done.results["stability"][0].startswith("rank 1 (")
    assert all(not g.rated and g.kind == "finals" for g in event_games(store, made.id))
    with pytest.raises(Conflict):
        events.start_finals("organiser")


def test_the_finals_games_are_claimed_before_ladder_games_scheduled_earlier(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """After a restart the ladder games that were running are scheduled again (dozens on
    a cluster); finals started then play first, the ladder games after them."""
    versions = _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    ladder = [
        store.schedule_game(
            kind="ladder",
            players=2,
            variant="coloured",
            seed=seed,
            version_ids=versions[:2],
            rated=True,
        ).id
        for seed in range(3)
    ]
    made = Events(store, _config(finals={"players": [2], "deals": 1})).start_finals("organiser")
    finals = {g.id for g in event_games(store, made.id)}
    assert len(finals) == made.total_games == 3 * 2
    claimed = []
    while (game := store.claim_scheduled_game()) is not None:
        claimed.append(game.id)
    assert set(claimed[: len(finals)]) == finals
    assert claimed[len(finals) :] == ladder  # then the others, oldest first


def test_an_event_has_the_machine_once_the_games_in_flight_finish(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """Finals started while ladder games are in flight: no event game starts until those
    have finished (a Ray batch plays in order on one node: the finals would queue behind
    them there), then only the event's games start, and the ladder goes on once the last
    of them finished."""
    from arena.competition.ladder import LadderScheduler

    _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    in_flight: set[str] = set()
    scheduler = LadderScheduler(store, LadderSection(players={2: 1.0}), in_flight=lambda: in_flight)
    ladder_games = {g.game_id for _ in range(3) for g in scheduler.next()}
    assert len(ladder_games) == 3
    in_flight |= ladder_games
    made = Events(store, _config(finals={"players": [2], "deals": 1})).start_finals("organiser")
    finals = {g.id for g in event_games(store, made.id)}
    assert scheduler.next() == [] and scheduler.next() == []  # the ladder's games play on
    for game_id in sorted(ladder_games)[:2]:
        in_flight.discard(game_id)
    assert scheduler.next() == []  # one is still in flight
    in_flight.clear()
    started = []
    for _ in range(len(finals)):
        (game,) = scheduler.next()
        started.append(game.game_id)
        in_flight.add(game.game_id)
    assert set(started) == finals
    assert scheduler.next() == []  # the event's games run: no ladder game beside them
    for game_id in started:
        store.void_game(game_id, "test: ended")  # ended either way
        in_flight.discard(game_id)
    (after,) = scheduler.next()  # the event is over: the ladder again
    assert after.game_id not in finals | ladder_games


def test_finals_started_while_the_ladder_schedules_a_game_keep_their_games_together(
    store: CompetitionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server starts the finals between the ladder scheduling its next game and
    claiming it (a race seen on a cluster): the ladder claims its own game, not the
    finals' first one, so the finals' games all count as the event's and start together
    once that game has finished (the first finals game used to be claimed as a ladder
    game: the event waited for it alone, and the ladder's game stayed scheduled)."""
    from arena.competition.ladder import LadderScheduler

    _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    in_flight: set[str] = set()
    scheduler = LadderScheduler(store, LadderSection(players={2: 1.0}), in_flight=lambda: in_flight)
    schedule = store.schedule_game
    made: list[int] = []

    def schedule_then_finals(**game: Any) -> Any:
        row = schedule(**game)
        if not made:  # the organiser's click lands now
            finals = Events(store, _config(finals={"players": [2], "deals": 1}))
            made.append(finals.start_finals("organiser").id)
        return row

    monkeypatch.setattr(store, "schedule_game", schedule_then_finals)
    (ladder_game,) = scheduler.next()
    finals = {g.id for g in event_games(store, made[0])}
    assert ladder_game.game_id not in finals
    assert store.game(ladder_game.game_id).status == "running"  # type: ignore[union-attr]
    in_flight.add(ladder_game.game_id)
    assert scheduler.next() == []  # the ladder's game plays on first
    in_flight.clear()
    started = set()
    for _ in range(len(finals)):
        (game,) = scheduler.next()
        started.add(game.game_id)
        in_flight.add(game.game_id)
    assert started == finals  # every finals game at once, none held back behind another


def _add_bots_for(store: CompetitionStore, name: str, folder: Path) -> int:
    author = store.author_by_name("alice")
    assert author is not None
    store.add_submission(author.id, name, "/x.zip", "1" * 64)
    version = store.claim_queued_version()
    assert version is not None
    built = folder / f"{name}-2"
    built.mkdir(parents=True, exist_ok=True)
    manifest = {"name": name, "command": "python3 bot.py"}
    return store.finish_build(
        version.id, True, "ok", "log", str(built), "h2", {"manifest": manifest}
    ).id


def test_a_version_still_building_at_the_cutoff_holds_the_event_back(
    store: CompetitionStore, tmp_path: Path
) -> None:
    _add_bots(store, ["a", "b"], tmp_path / "built")
    author = store.author_by_name("alice")
    assert author is not None
    store.add_submission(author.id, "c", "/x.zip", "2" * 64)  # queued, not built yet
    events = Events(store, _config())
    made = events.start_finals("organiser")
    assert made.status == "scheduled" and made.total_games == 0
    version = store.claim_queued_version()
    assert version is not None
    built = tmp_path / "built" / "c"
    built.mkdir(parents=True)
    store.finish_build(
        version.id, True, "ok", "", str(built), "h", {"manifest": {"name": "c", "command": "x"}}
    )
    events.tick()
    started = event(store, made.id)
    assert started is not None and started.status == "running"
    assert len(started.entrants) == 3


def test_the_round_timer_starts_one_round_per_slot_across_a_restart(
    store: CompetitionStore, tmp_path: Path
) -> None:
    _add_bots(store, ["a", "b"], tmp_path / "built")
    config = _config(rounds={"schedule": "daily 02:00"})
    clock = FakeClock(T0)
    first = Events(store, config, clock=clock)
    assert first.tick().created == []  # the timer's first look: no slot is owed yet
    clock.now = T0 + timedelta(minutes=59)  # 01:59
    assert first.tick().created == []
    clock.now = T0 + timedelta(hours=1, seconds=30)  # 02:00:30
    made = first.tick().created
    assert [e.cutoff for e in made] == [datetime(2026, 12, 1, 2, 0, tzinfo=UTC)]
    assert first.tick().created == []
    restarted = Events(store, config, clock=clock)  # the service restarts at 02:01
    clock.now = T0 + timedelta(hours=1, minutes=1)
    assert restarted.tick().created == []
    clock.now = T0 + timedelta(days=3, hours=1, minutes=5)  # down for days: one round only
    assert len(restarted.tick().created) == 1
    assert restarted.next_round() == datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
    rounds = list_events(store, kind="round")
    assert [r.number for r in rounds] == [2, 1]
    assert rounds[0].cutoff == datetime(2026, 12, 4, 2, 0, tzinfo=UTC)


def test_plans_are_fixed_by_entrants_and_seed() -> None:
    settings = FinalsSection(schedule="sampled", games_per_bot=6, players=[2, 4])
    from arena.competition.events import event_settings

    chosen = event_settings(settings, "sampled")
    one = plan_games("finals", 1, [5, 6, 7, 8, 9], chosen)
    two = plan_games("finals", 2, [9, 8, 7, 6, 5], chosen)
    assert [(g.players, g.seed, g.version_ids) for g in one] == [
        (g.players, g.seed, g.version_ids) for g in two
    ]
    per_bot = {v: sum(v in g.version_ids for g in one) for v in range(5, 10)}
    assert min(per_bot.values()) >= 6
    assert one[0].game_id == "finals1-0000" and two[0].game_id == "finals2-0000"


def test_a_round_robin_too_large_to_schedule_says_so() -> None:
    from arena.competition.events import event_settings
    from arena.store.competition import Invalid

    huge = event_settings(FinalsSection(players=[4]), "round-robin")
    with pytest.raises(Invalid, match="use schedule = 'sampled'"):
        plan_games("finals", 1, list(range(60)), huge)  # C(60, 4) x 12 seatings


def test_rounds_config_is_checked() -> None:
    with pytest.raises(ValueError, match="neither 'daily HH:MM' nor a cron line"):
        RoundsSection(schedule="nightly")
    assert RoundsSection(schedule="daily 02:30").cron == "30 2 * * *"
    assert RoundsSection(schedule="0 */6 * * *").cron == "0 */6 * * *"


# ---------------------------------------------------------------- the results page


def _finish_with(store: CompetitionStore, crasher: str) -> None:
    """Play every scheduled game on paper: ``crasher`` crashes in each (a forfeit)."""
    from arena.store.competition import FinishedFault, FinishedSeat, GameOutcome

    while (game := store.claim_scheduled_game(events_only=True)) is not None:
        seats = []
        faults = []
        for s in game.seats:
            crashed = s.bot_name == crasher
            seats.append(
                FinishedSeat(s.seat, 0 if crashed else 40 + s.seat, 2 if crashed else 1, crashed)
            )
            if crashed:
                faults.append(FinishedFault(s.seat, "crash", 1, "exited with status 3", True))
        outcome = GameOutcome("forfeit", 1, 0.1, "test", b"{}", tuple(seats), tuple(faults))
        assert store.finish_game(game.id, outcome)


def test_results_page_shows_the_stability_audit_and_the_failed_column(tmp_path: Path) -> None:
    from tests.server.web_helpers import make_site

    site = make_site(tmp_path)
    store = site.store
    store.set_staff("bob", True)  # beta is a staff baseline: no prize rank
    refused = site.client.post("/api/admin/finals", headers=site.auth("alice"))
    assert refused.status_code == 403
    started = site.client.post("/api/admin/finals", headers=site.auth("org"))
    assert started.status_code == 202, started.text
    body = started.json()
    assert body["status"] == "running" and body["games"] == {"scheduled": 2}
    again = site.client.post("/api/admin/finals", headers=site.auth("org"))
    assert again.status_code == 409 and "re-run" in again.json()["error"]
    assert "appear here when every game" in site.client.get("/results").text
    _finish_with(store, "beta")
    Events(store, CompetitionConfig()).tick()
    page = site.client.get("/results")
    assert page.status_code == 200
    html = page.text
    assert "Stability audit" in html
    assert "rank 1 (alpha v1) held in" in html and "% of 200 resamples" in html
    assert "FAILED" in html
    failed = html.split('class="srv-failed">')[1:]
    assert [cell.split("<")[0] for cell in failed] == ["0", "2"]  # alpha, then beta
    for game in event_games(store, body["id"]):
        assert f'href="/games/{game.id}"' in html
    shown = site.client.get(f"/api/events/{body['id']}").json()
    assert shown["visible"] and shown["results"]["rows"][1]["failed"] == 2
    staff = [(r["bot"], r["staff"], r["prize_rank"]) for r in shown["results"]["rows"]]
    assert staff == [("alpha", False, 1), ("beta", True, None)]
    assert '<span class="srv-badge">staff</span>' in html
    assert [g["url"] for g in shown["game_list"]] == [f"/games/finals1-000{i}" for i in (0, 1)]
    assert "Finals" in site.client.get("/rounds").text
    redo = site.client.post(
        f"/api/admin/games/{shown['game_list'][0]['id']}/rerun", headers=site.auth("org")
    )
    assert redo.status_code == 202
    reopened = event(store, body["id"])
    assert reopened is not None and reopened.status == "running" and reopened.results is None
    _finish_with(store, "alpha")  # the re-run game: now alpha crashes
    Events(store, CompetitionConfig()).tick()
    again_done = site.client.get(f"/api/events/{body['id']}").json()
    assert again_done["status"] == "finished"
    assert {r["bot"]: r["failed"] for r in again_done["results"]["rows"]} == {"alpha": 1, "beta": 1}
    rerun = site.client.post("/api/admin/finals", headers=site.auth("org"), json={"rerun": True})
    assert rerun.status_code == 202 and rerun.json()["settings"]["rerun_of"] == body["id"]


# ---------------------------------------------------------------- real games


def _greedy_bots(store: CompetitionStore, root: Path, crasher: str) -> None:
    """Copies of bots/python-greedy (deterministic) built and on the ladder; ``crasher``
    exits on its third decision of every game."""
    import shutil

    from arena.play.build import build_bot
    from arena.referee.manifest import load_bot

    repo = Path(__file__).resolve().parents[2]
    author, _ = store.create_author("alice")
    for name in ("greedy-a", "greedy-b", crasher):
        source = root / "src" / name
        shutil.copytree(repo / "bots" / "python-greedy", source)
        toml = source / "bot.toml"
        toml.write_text(toml.read_text().replace('"python-greedy"', f'"{name}"'))
        if name == crasher:
            bot = source / "bot.py"
            bot.write_text(
                bot.read_text()
                .replace(
                    '        elif kind == "decide":\n',
                    '        elif kind == "decide":\n'
                    "            DECISIONS.append(1)\n"
                    "            if len(DECISIONS) == 3:\n"
                    "                sys.exit(3)\n",
                )
                .replace("import sys\n", "import sys\n\nDECISIONS: list[int] = []\n", 1)
            )
        built = build_bot(load_bot(source), cache=root / "cache")
        store.add_submission(author.id, name, "/dev/null", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        meta = {"manifest": built.spec.manifest.model_dump(mode="json"), "source": str(source)}
        store.finish_build(version.id, True, "ok", "", str(built.spec.folder), built.version, meta)
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)  # the per-bot uid reads the built bots


def _moves(store: CompetitionStore, game_id: str) -> list[object]:
    record = store.record(game_id)
    assert record is not None
    moves = [[(d["seat"], d["move"]) for d in r["decisions"]] for r in record["rounds"]]
    assert moves and moves[0]
    return moves


def test_finals_rerun_with_the_same_seeds_plays_the_same_games(tmp_path: Path) -> None:
    from arena.play.executors import LocalPoolExecutor

    tmp_path.chmod(0o755)
    store = CompetitionStore.open(f"sqlite:///{tmp_path / 'c.sqlite'}")
    try:
        _greedy_bots(store, tmp_path, "crashes")
        store.set_paused(True)
        events = Events(store, _config(finals={"players": [2], "master_seed": 7}))
        first = events.start_finals("org")
        ladder = Ladder(
            store,
            LadderSection(games_in_flight=2),
            PlaySettings(),
            tmp_path / "data",
            LocalPoolExecutor(2),
        )
        thread = threading.Thread(target=ladder.run)
        thread.start()
        try:
            deadline = time.monotonic() + 240
            second = None
            while True:
                events.tick()
                one = event(store, first.id)
                assert one is not None
                if one.status == "finished" and second is None:
                    second = events.start_finals("org", rerun=True)
                if second is not None:
                    two = event(store, second.id)
                    assert two is not None
                    if two.status == "finished":
                        break
                assert time.monotonic() < deadline, "the finals stalled"
                time.sleep(0.1)
        finally:
            ladder.shutdown(abort=False)
            thread.join(30)
        games_one = event_games(store, first.id)
        games_two = event_games(store, second.id)
        assert len(games_one) == len(games_two) == 6
        assert all(g.status == "finished" for g in games_one + games_two)
        for a, b in zip(games_one, games_two, strict=True):
            assert (a.seed, [s.version_id for s in a.seats]) == (
                b.seed,
                [s.version_id for s in b.seats],
            )
            assert [s.faults for s in a.seats] == [s.faults for s in b.seats]
            crashed = [s.seat for s in a.seats if s.forfeit]
            if crashed:
                # The referee plays a forfeited seat on with a policy seeded by the game
                # id (which names the event): the moves repeat up to the crash.
                first = _moves(store, a.id)[0]
                third = [i for i, (seat, _) in enumerate(first) if seat == crashed[0]][2]
                assert third >= 4
                assert first[:third] == _moves(store, b.id)[0][:third]
                continue
            assert [(s.score, s.rank) for s in a.seats] == [(s.score, s.rank) for s in b.seats]
            assert _moves(store, a.id) == _moves(store, b.id)
        assert one.results is not None and two.results is not None
        failed = {r["bot"]: r["failed"] for r in one.results["rows"]}
        assert failed == {"greedy-a": 0, "greedy-b": 0, "crashes": 4}
        assert store.leaderboard()[0].games == 0  # the ladder never rated a finals game
    finally:
        store.close()


# ---------------------------------------------------------------- export


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_export_writes_the_finals_and_round_tables_and_their_games(tmp_path: Path) -> None:
    toml = tmp_path / "comp.toml"
    toml.write_text('[competition]\nname = "Course"\n[rounds]\nschedule = "daily 02:00"\n')
    missing = _cli("export", str(toml), cwd=tmp_path)
    assert missing.returncode != 0 and "no competition store" in missing.stderr
    assert "Traceback" not in missing.stderr
    data = tmp_path / "comp-data"
    data.mkdir()
    store = CompetitionStore.open(f"sqlite:///{data / 'competition.sqlite'}")
    try:
        _add_bots(store, ["a", "b", "=evil"], tmp_path / "built")
        events = Events(store, _config(rounds={"schedule": "daily 02:00"}))
        finals = events.start_finals("org")
        _finish_with(store, "b")
        events.tick()
        round_one = events.start_round("org")
        _finish_with(store, "a")
        events.tick()
        assert event(store, round_one.id).status == "finished"  # type: ignore[union-attr]
    finally:
        store.close()
    done = _cli("export", str(toml), "--to", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "event-games.csv",
        "event-games.jsonl",
        "finals.csv",
        "finals.jsonl",
        "round-1.csv",
        "round-1.jsonl",
    ]
    with (out / "finals.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [r["bot"] for r in table][-1] == "b" and table[-1]["failed"] == "4"
    assert "'=evil" in {r["bot"] for r in table}  # a spreadsheet does not run it
    lines = (out / "event-games.jsonl").read_text().splitlines()
    assert len(lines) == finals.total_games + round_one.total_games == 12
    first = json.loads(lines[0])
    assert first["event"] == "finals" and first["game_id"] == "finals1-0000"
    assert len(first["seats"]) == 2


def test_results_pages_escape_bot_text_and_hide_unfinished_results(tmp_path: Path) -> None:
    from tests.server.web_helpers import EVIL_BOT, XSS, make_site

    site = make_site(tmp_path, hostile=True)
    made = site.client.post("/api/admin/finals", headers=site.auth("org")).json()
    hidden = site.client.get(f"/api/events/{made['id']}")
    assert hidden.json()["results"] is None and "game_list" not in hidden.json()
    _finish_with(site.store, "beta")
    Events(site.store, CompetitionConfig()).tick()
    for url in ("/results", f"/results?event={made['id']}", f"/events/{made['id']}", "/rounds"):
        html = site.client.get(url).text
        assert XSS not in html and "\x1b" not in html, url
    assert site.client.get("/events/999").status_code == 404
    rows = site.client.get(f"/api/events/{made['id']}").json()["results"]["rows"]
    assert EVIL_BOT in {r["bot"] for r in rows}  # JSON keeps the raw text


def test_finals_entrants_keep_their_builds_and_top_k_takes_the_ladder_leaders(
    store: CompetitionStore, tmp_path: Path
) -> None:
    ids = _add_bots(store, ["a", "b", "c"], tmp_path / "built")
    events = Events(store, _config(finals={"entrants": "top:2"}))
    store.set_paused(True)
    made = events.start_finals("org")
    board = [r.bot_name for r in store.leaderboard()[:2]]
    assert sorted(store.version(v).bot_name for v in made.entrants) == sorted(board)  # type: ignore[union-attr]
    assert made.settings["notes"] == ["the top 2 of the ladder when the event started"]
    _finish_with(store, "nobody")
    events.tick()
    for name in ("a", "b", "c"):  # new uploads retire every version...
        _add_bots_for(store, name, tmp_path / "built")
    unused = {v for v, _ in store.unused_builds()}
    assert len(unused) == 1  # ...but the finalists' builds stay, for a re-run
    assert unused == set(ids) - set(made.entrants)


# ---------------------------------------------------------------- the real server


@pytest.mark.slow
def test_finals_on_the_real_server_survive_kill9_and_publish_results(tmp_path: Path) -> None:
    """`arena serve` plays the finals started over the API with the ladder paused; a
    kill -9 mid-finals loses and doubles nothing; the results page has the audit."""
    import signal

    import httpx

    from arena.competition.config import load_competition
    from tests.server.test_service import Server, _free_port

    tmp_path.chmod(0o755)
    port = _free_port()
    toml = tmp_path / "cup.toml"
    toml.write_text(
        f"[server]\nport = {port}\n[ladder]\nplayers = {{2 = 1.0}}\ngames_in_flight = 1\n"
        '[finals]\ndeals = 2\n[play]\nfault_policy = "forfeit"\n'
    )
    config = load_competition(toml)
    config.data_dir.mkdir(parents=True)
    seeded = CompetitionStore.open(config.store_url)
    try:
        _greedy_bots(seeded, tmp_path, "crashes")
        seeded.set_paused(True)
    finally:
        seeded.close()
    server = Server(toml, port, tmp_path / "serve.log")
    server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        token = config.organiser_token_file.read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        made = httpx.post(f"{base}/api/admin/finals", headers=auth, timeout=30)
        assert made.status_code == 202, made.text
        event_id = made.json()["id"]
        assert made.json()["games"] == {"scheduled": 12}

        def shown() -> dict[str, object]:
            reply = httpx.get(f"{base}/api/events/{event_id}", headers=auth, timeout=30)
            return dict(reply.json())

        deadline = time.monotonic() + 240
        while dict(shown()["games"]).get("finished", 0) < 3:  # type: ignore[call-overload]
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.2)
        server.stop(signal.SIGKILL)
        server.start()
        while shown()["status"] != "finished":
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.2)
        done = shown()
        assert done["games"] == {"finished": 12}
        ids = [g["id"] for g in done["game_list"]]  # type: ignore[attr-defined]
        assert ids == [f"finals1-{i:04d}" for i in range(12)]
        page = httpx.get(f"{base}/results", timeout=30).text
        assert "Stability audit" in page and "held in" in page and "FAILED" in page
        rows = done["results"]["rows"]  # type: ignore[index]
        assert {r["bot"]: r["failed"] for r in rows}["crashes"] == 8
    finally:
        server.stop(signal.SIGTERM)


# ---------------------------------------------------------------- with [phases]


def test_the_phases_start_the_finals_as_of_the_deadline_and_publish_their_results(
    tmp_path: Path,
) -> None:
    """The phases' organiser action starts the events' finals (entrants as of the
    deadline: a later version does not play); their end moves the phase to results;
    the public sees the finals' results once the organiser publishes them."""
    from fastapi.testclient import TestClient

    from arena.server.app import ServerContext, create_app
    from tests.server.web_helpers import activate

    store = CompetitionStore.open(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        _org, org_token = store.create_author("org", organiser=True)
        alice, _ = store.create_author("alice")
        bob, _ = store.create_author("bob")
        first = activate(store, alice.id, "alpha")
        activate(store, bob.id, "beta")
        time.sleep(0.01)
        deadline = datetime.now(UTC)
        time.sleep(0.01)
        late = activate(store, alice.id, "alpha")  # after the deadline (at the store level)
        config = _config(
            phases={"deadline": deadline, "finals": "manual", "publish": "manual"},
            finals={"players": [2]},
        )
        ctx = ServerContext(config=config, store=store, data_dir=tmp_path)
        client = TestClient(create_app(ctx), base_url="http://testserver")
        auth = {"Authorization": f"Bearer {org_token}"}
        done = client.post("/api/admin/phase/start-finals", headers=auth)
        assert done.status_code == 200, done.text
        assert done.json()["phase"] == "finals"
        finals = list_events(store, kind="finals")
        assert len(finals) == 1 and finals[0].cutoff == deadline
        assert first in finals[0].entrants and late not in finals[0].entrants
        _finish_with(store, "beta")
        ctx.event_keeper().tick()
        assert client.get("/api/phase").json()["phase"] == "results"
        assert "not published yet" in client.get("/results").text
        hidden = client.get(f"/api/events/{finals[0].id}").json()
        assert hidden["results"] is None and not hidden["visible"]
        mine = client.get(f"/api/events/{finals[0].id}", headers=auth).json()
        assert mine["visible"] and mine["results"]["stability"]  # the organiser sees them
        published = client.post("/api/admin/phase/publish", headers=auth)
        assert published.status_code == 200 and published.json()["phase"] == "published"
        page = client.get("/results").text
        assert "Stability audit" in page and "FAILED" in page
        rerun = client.post("/api/admin/finals", headers=auth, json={"rerun": True})
        assert rerun.status_code == 202, rerun.text
        assert rerun.json()["number"] == 2 and client.get("/api/phase").json()["phase"] == "finals"
        log = [row["action"] for row in client.get("/api/phase", headers=auth).json()["log"]]
        assert "rerun-finals" in log and "start-finals" in log
    finally:
        store.close()
