"""Finals and scheduled rounds: tournaments over a snapshot of versions, played by the
ladder loop through the store, with their results computed once."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def test_rounds_config_is_checked() -> None:
    with pytest.raises(ValueError, match="neither 'daily HH:MM' nor a cron line"):
        RoundsSection(schedule="nightly")
    assert RoundsSection(schedule="daily 02:30").cron == "30 2 * * *"
    assert RoundsSection(schedule="0 */6 * * *").cron == "0 */6 * * *"
