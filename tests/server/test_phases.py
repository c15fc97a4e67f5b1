"""Competition phases (issue 21 item 1): ``[phases]`` in competition.toml, the phase
derived from the store with an injectable clock, uploads refused after the deadline (API,
form, registration), organiser actions logged with their actor, the deadline timer
starting the finals once (also across a restart), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from fastapi.testclient import TestClient

from arena.competition.config import (
    CompetitionConfig,
    CompetitionConfigError,
    PhasesSection,
    load_competition,
)
from arena.competition.ladder import LadderScheduler
from arena.competition.phases import Phases, PhaseTimer
from arena.server.app import ServerContext, create_app
from arena.server.service import BuildVerdict, BuildWorker, make_service
from arena.store.competition import CompetitionStore, Conflict, Invalid

from .web_helpers import activate, bot_zip, csrf_of

DEADLINE = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)


@dataclass
class Clock:
    """The phases' clock, moved by hand (no test sleeps for a deadline)."""

    now: datetime = DEADLINE - timedelta(days=3)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class FakeEvents:
    """Stands in for the finals and rounds runner: records each call."""

    finals: list[tuple[str, bool]] = field(default_factory=list)
    rounds: list[str] = field(default_factory=list)
    fail: str | None = None

    def start_finals(self, actor: str, rerun: bool) -> str:
        if self.fail:
            raise RuntimeError(self.fail)
        self.finals.append((actor, rerun))
        return f"finals #{len(self.finals)}"

    def start_round(self, actor: str) -> str:
        self.rounds.append(actor)
        return f"round #{len(self.rounds)}"


def phases_of(
    store: CompetitionStore, clock: Clock, events: FakeEvents | None = None, **table: str
) -> Phases:
    return Phases(store, PhasesSection(deadline=DEADLINE, **table), events or FakeEvents(), clock)


# ---------------------------------------------------------------- competition.toml


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ("deadline = 2026-12-20T12:00:00", "with a UTC offset or 'Z'"),
        ('deadline = "soon"', "a TOML datetime with a UTC offset"),
        ("deadline = 2026-12-20", "a TOML datetime with a UTC offset"),
        ('finals = "manual"', "phases.deadline: Field required"),
        ('deadline = 2026-12-20T12:00:00Z\nfinals = "later"', "'at-deadline' or 'manual'"),
        ('deadline = 2026-12-20T12:00:00Z\npublish = "never"', "'auto' or 'manual'"),
        ('deadline = 2026-12-20T12:00:00Z\nladder = "on"', "'until-deadline', 'always' or"),
        ("deadline = 2026-12-20T12:00:00Z\nfinal = 1", "phases.final"),
    ],
)
def test_a_bad_phases_table_is_a_clear_error(tmp_path: Path, table: str, words: str) -> None:
    toml = tmp_path / "competition.toml"
    toml.write_text(f"[phases]\n{table}\n")
    with pytest.raises(CompetitionConfigError) as info:
        load_competition(toml)
    assert words in str(info.value) and str(toml) in str(info.value)


def test_a_deadline_with_an_offset_is_kept_as_utc(tmp_path: Path) -> None:
    toml = tmp_path / "competition.toml"
    toml.write_text("[phases]\ndeadline = 2026-12-20T13:00:00+01:00\n")
    phases = load_competition(toml).phases
    assert phases is not None
    assert phases.deadline == DEADLINE and phases.deadline.tzinfo == UTC
    assert (phases.finals, phases.publish, phases.ladder) == (
        "at-deadline",
        "auto",
        "until-deadline",
    )
    toml.write_text("[competition]\nname = 'x'\n")
    assert load_competition(toml).phases is None


# ---------------------------------------------------------------- the phase, the store


def test_without_phases_the_ladder_is_open_for_ever(store: CompetitionStore) -> None:
    phases = Phases(store, None)
    view = phases.view()
    assert (view.phase, view.deadline, view.uploads_open, view.banner()) == (
        "open",
        None,
        True,
        None,
    )
    assert phases.ladder_allowed() and phases.tick() is None
    with pytest.raises(Conflict, match=r"no \[phases\] table"):
        phases.extend("org", DEADLINE)
    assert store.phase_log() == []


def test_the_deadline_closes_uploads_and_a_restart_stays_closed(store: CompetitionStore) -> None:
    clock = Clock()
    phases = phases_of(store, clock, finals="manual")
    view = phases.view()
    assert view.phase == "open" and view.uploads_open
    assert view.banner() == "Submissions close 2026-12-20 12:00 UTC (in 3 days)"
    assert phases.tick() == pytest.approx(3 * 86400)
    clock.now = DEADLINE
    assert phases.uploads_refusal() == "submissions closed at 2026-12-20 12:00 UTC"
    assert phases.tick() is None
    [noted] = store.phase_log()
    assert (noted.action, noted.phase_from, noted.phase_to, noted.actor) == (
        "deadline",
        "open",
        "closed",
        "schedule",
    )
    restarted = phases_of(CompetitionStore.open(store.url), clock, finals="manual")
    assert restarted.view().phase == "closed" and not restarted.view().uploads_open
    restarted.tick()
    assert len(store.phase_log()) == 1, "the deadline passing is logged once"


def test_extend_and_reopen_are_stored_and_logged_with_the_organiser(
    store: CompetitionStore,
) -> None:
    clock = Clock(DEADLINE + timedelta(hours=1))
    phases = phases_of(store, clock, finals="manual")
    later = DEADLINE + timedelta(days=2)
    with pytest.raises(Invalid, match="after the deadline"):
        phases.extend("org", DEADLINE - timedelta(hours=1))
    assert phases.extend("org", later).phase == "open"
    # a restart reads the extended deadline from the store, not competition.toml's
    again = phases_of(CompetitionStore.open(store.url), clock, finals="manual")
    assert again.view().deadline == later and again.view().uploads_open
    clock.now = later + timedelta(minutes=1)
    assert again.view().phase == "closed"
    newer = later + timedelta(days=1)
    assert again.reopen("org2", newer).phase == "open"
    log = store.phase_log()
    assert [(r.action, r.phase_from, r.phase_to, r.actor) for r in log] == [
        ("reopen", "closed", "open", "org2"),
        ("extend", "closed", "open", "org"),
    ]
    assert log[1].detail == {"deadline": later.isoformat()}


def test_finals_at_the_deadline_start_once_even_across_a_restart(store: CompetitionStore) -> None:
    clock = Clock()
    events = FakeEvents()
    phases = phases_of(store, clock, events)
    phases.tick()
    assert events.finals == [], "not before the deadline"
    clock.now = DEADLINE + timedelta(seconds=1)
    phases.tick()
    phases.tick()
    assert events.finals == [("schedule", False)]
    after_restart = phases_of(CompetitionStore.open(store.url), clock, events)
    after_restart.tick()
    assert events.finals == [("schedule", False)]
    assert after_restart.view().phase == "finals" and not after_restart.ladder_allowed()
    started = store.phase_log()[0]
    assert (started.action, started.actor, started.detail) == (
        "start-finals",
        "schedule",
        {"started": "finals #1"},
    )
    # the runner reports the finals finished: published at once (publish = "auto")
    assert after_restart.finals_finished().phase == "published"
    assert [r.action for r in store.phase_log()[:2]] == ["publish", "finals-finished"]


def test_the_timer_thread_wakes_and_starts_the_finals_after_a_restart_past_the_deadline(
    store: CompetitionStore,
) -> None:
    clock = Clock(DEADLINE + timedelta(days=1))  # the server was down at the deadline
    started = threading.Event()

    class Events(FakeEvents):
        def start_finals(self, actor: str, rerun: bool) -> str:
            started.set()
            return super().start_finals(actor, rerun)

    events = Events()
    timer = PhaseTimer(phases_of(store, clock, events))
    thread = threading.Thread(target=timer.run, daemon=True)
    thread.start()
    try:
        assert started.wait(60), "the timer did not start the finals"
    finally:
        timer.stop()
        thread.join(60)
    assert not thread.is_alive() and events.finals == [("schedule", False)]


def test_the_service_wires_the_timer_to_the_finals_runner(
    store: CompetitionStore, tmp_path: Path
) -> None:
    """``arena serve``'s parts started past the deadline: the timer starts the finals
    through the runner the service was given, and the ladder stops choosing games."""
    from .test_ladder import ThreadedGames

    started = threading.Event()

    class Events(FakeEvents):
        def start_finals(self, actor: str, rerun: bool) -> str:
            started.set()
            return super().start_finals(actor, rerun)

    events = Events()
    config = CompetitionConfig(
        competition={"data_dir": tmp_path / "data"},  # type: ignore[arg-type]
        phases=PhasesSection(deadline=datetime(2020, 1, 1, tzinfo=UTC)),
    )
    service = make_service(config, store, ThreadedGames(1, lambda job: None), events=events)  # type: ignore[arg-type, return-value]
    service.start()
    try:
        assert started.wait(60), "the finals did not start"
    finally:
        service.stop()
    assert events.finals == [("schedule", False)]
    assert service.phases.view().phase == "finals" and not service.phases.ladder_allowed()


def test_manual_finals_publish_and_rerun_are_the_organisers(store: CompetitionStore) -> None:
    clock = Clock(DEADLINE + timedelta(hours=1))
    events = FakeEvents()
    phases = phases_of(store, clock, events, finals="manual", publish="manual")
    phases.tick()
    assert phases.view().phase == "closed" and events.finals == []
    with pytest.raises(Conflict, match="cannot publish now"):
        phases.publish("org")
    assert phases.start_finals("org").phase == "finals"
    assert phases.finals_finished().phase == "results"
    assert phases.publish("org").phase == "published"
    assert phases.rerun_finals("org").phase == "finals"
    assert events.finals == [("org", False), ("org", True)]
    with pytest.raises(Conflict, match="cannot start a round now"):
        phases.start_round("org")


def test_a_finals_runner_failure_is_logged_and_reported(store: CompetitionStore) -> None:
    clock = Clock()
    phases = phases_of(store, clock, FakeEvents(fail="no executor"), finals="manual")
    with pytest.raises(Conflict, match="the finals did not start: no executor"):
        phases.start_finals("org")
    assert store.phase_log()[0].detail == {"error": "no executor"}


def test_rounds_start_while_open_and_are_logged(store: CompetitionStore) -> None:
    events = FakeEvents()
    phases = phases_of(store, Clock(), events)
    assert phases.start_round("org") == "round #1"
    [row] = store.phase_log()
    assert (row.action, row.phase_from, row.phase_to, row.actor) == (
        "start-round",
        "open",
        "open",
        "org",
    )


@pytest.mark.parametrize(
    ("rule", "before", "after"),
    [("until-deadline", True, False), ("always", True, True), ("off", False, False)],
)
def test_the_ladder_rule_gates_new_ladder_games(
    store: CompetitionStore, rule: str, before: bool, after: bool
) -> None:
    clock = Clock()
    phases = phases_of(store, clock, finals="manual", ladder=rule)
    alice, _ = store.create_author("alice")
    activate(store, alice.id, "a")
    activate(store, alice.id, "b")
    scheduler = LadderScheduler(store, CompetitionConfig().ladder, phases.ladder_allowed)
    assert bool(scheduler.next()) is before
    clock.now = DEADLINE
    assert phases.ladder_allowed() is after


# ---------------------------------------------------------------- the web


@dataclass
class Site:
    client: TestClient
    store: CompetitionStore
    clock: Clock
    tokens: dict[str, str]
    data_dir: Path

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def sign_in(self, who: str) -> str:
        csrf = csrf_of(self.client)
        reply = self.client.post(
            "/login", data={"token": self.tokens[who], "csrf": csrf}, follow_redirects=False
        )
        assert reply.status_code == 303
        return csrf

    def upload(self, who: str = "alice") -> tuple[int, dict[str, str]]:
        reply = self.client.post(
            "/api/submissions",
            headers=self.auth(who),
            files={"archive": ("a.zip", bot_zip("alpha"), "application/zip")},
        )
        return reply.status_code, reply.json()


@pytest.fixture
def site(tmp_path: Path) -> Site:
    store = CompetitionStore.open(f"sqlite:///{tmp_path / 'store.db'}")
    tokens = {}
    _, tokens["org"] = store.create_author("org", organiser=True)
    _, tokens["alice"] = store.create_author("alice")
    data_dir = tmp_path / "data"
    (data_dir / "uploads").mkdir(parents=True)
    clock = Clock()
    config = CompetitionConfig(
        phases=PhasesSection(deadline=DEADLINE, finals="manual"),
        server={"registration": "open"},  # type: ignore[arg-type]
    )
    phases = Phases(store, config.phases, FakeEvents(), clock)
    ctx = ServerContext(config=config, store=store, data_dir=data_dir, phases=phases)
    client = TestClient(create_app(ctx), base_url="http://testserver")
    return Site(client, store, clock, tokens, data_dir)


def test_uploads_through_the_api_before_and_after_the_deadline(site: Site) -> None:
    assert site.upload()[0] == 202
    site.clock.now = DEADLINE
    status, body = site.upload()
    assert status == 403
    assert body == {"error": "submissions closed at 2026-12-20 12:00 UTC"}
    assert len(site.store.versions_of("alpha")) == 1, "nothing stored after the deadline"
    phase = site.client.get("/api/phase").json()
    assert phase["phase"] == "closed" and not phase["uploads_open"]
    assert "log" not in phase, "the log is the organiser's"
    registered = site.client.post("/api/register", json={"name": "late"})
    assert registered.status_code == 403 and "closed at" in registered.json()["error"]


def test_an_upload_queued_before_the_deadline_still_builds_and_counts(site: Site) -> None:
    assert site.upload()[0] == 202
    site.clock.now = DEADLINE + timedelta(hours=1)
    assert site.upload()[0] == 403
    worker = BuildWorker(
        site.store,
        CompetitionConfig(),
        lambda: None,
        lambda version, archive, config: BuildVerdict(True, "accepted", "", "/b", "h", {}),
    )
    claimed = worker.claim()
    assert claimed is not None and worker.build_one(claimed).status == "active"
    assert [v.bot_name for v in site.store.active_versions()] == ["alpha"]


def test_open_registration_closes_with_the_deadline(site: Site) -> None:
    assert "New here?" in site.client.get("/login").text
    site.clock.now = DEADLINE
    assert "New here?" not in site.client.get("/login").text
    csrf = csrf_of(site.client)
    posted = site.client.post("/register", data={"csrf": csrf, "name": "late"})
    assert posted.status_code == 403 and "submissions closed at" in posted.text
    assert site.store.author_by_name("late") is None


def test_the_form_says_closed_instead_of_the_form(site: Site) -> None:
    csrf = site.sign_in("alice")
    page = site.client.get("/submit").text
    assert 'name="archive"' in page and "Submissions close 2026-12-20 12:00 UTC (in 3 days)" in page
    assert "Submissions close 2026-12-20 12:00 UTC" in site.client.get("/").text
    site.clock.now = DEADLINE + timedelta(minutes=5)
    page = site.client.get("/submit").text
    assert 'name="archive"' not in page
    assert "Uploads are refused: submissions closed at 2026-12-20 12:00 UTC" in page
    assert "Submissions closed" in site.client.get("/").text
    posted = site.client.post(
        "/submit",
        data={"csrf": csrf},
        files={"archive": ("a.zip", bot_zip("alpha"), "application/zip")},
    )
    assert posted.status_code == 403 and "submissions closed at" in posted.text
    assert posted.headers["content-type"].startswith("text/html")
    assert site.store.versions_of("alpha") == []


def test_the_organiser_reopens_through_the_api_and_it_is_logged(site: Site) -> None:
    site.clock.now = DEADLINE + timedelta(hours=1)
    later = "2026-12-24T12:00:00Z"
    refused = site.client.post(
        "/api/admin/phase/reopen", headers=site.auth("alice"), json={"deadline": later}
    )
    assert refused.status_code == 403 and site.store.phase_log() == []
    naive = site.client.post(
        "/api/admin/phase/reopen", headers=site.auth("org"), json={"deadline": "2026-12-24T12:00"}
    )
    assert naive.status_code == 400 and "UTC offset" in naive.json()["error"]
    done = site.client.post(
        "/api/admin/phase/reopen", headers=site.auth("org"), json={"deadline": later}
    )
    assert done.status_code == 200, done.text
    assert done.json()["phase"] == "open" and done.json()["deadline"] == "2026-12-24T12:00:00+00:00"
    assert done.json()["actions"] == ["extend", "start-finals", "start-round"]
    assert site.upload()[0] == 202
    phase = site.client.get("/api/phase", headers=site.auth("org")).json()
    [row] = phase["log"]
    assert (row["action"], row["actor"], row["phase_from"], row["phase_to"]) == (
        "reopen",
        "org",
        "closed",
        "open",
    )
    bad = site.client.post("/api/admin/phase/publish", headers=site.auth("org"))
    assert bad.status_code == 409 and "cannot publish now" in bad.json()["error"]
    unknown = site.client.post("/api/admin/phase/explode", headers=site.auth("org"))
    assert unknown.status_code == 404


def test_admin_page_buttons_extend_with_csrf_and_show_the_log(site: Site) -> None:
    csrf = site.sign_in("org")
    site.clock.now = DEADLINE + timedelta(hours=1)
    no_csrf = site.client.post("/admin/phase/extend", data={"deadline": "2026-12-22T09:30"})
    assert no_csrf.status_code == 403 and site.store.phase_log() == []
    done = site.client.post(
        "/admin/phase/extend",
        data={"csrf": csrf, "deadline": "2026-12-22T09:30"},
        follow_redirects=False,
    )
    assert done.status_code == 303
    page = site.client.get("/admin").text
    assert "open for submissions" in page and "2026-12-22 09:30" in page
    assert '<td class="az-text">extend</td>' in page and ">org</td>" in page
    for action in ("extend", "start-finals", "start-round"):
        assert f"/admin/phase/{action}" in page
    for action in ("reopen", "rerun-finals", "publish"):  # not while open
        assert f"/admin/phase/{action}" not in page
    assert site.upload()[0] == 202


def test_a_non_organiser_cannot_use_the_admin_buttons(site: Site) -> None:
    csrf = site.sign_in("alice")
    refused = site.client.post("/admin/phase/start-finals", data={"csrf": csrf})
    assert refused.status_code == 403 and site.store.phase_log() == []


def test_challenges_end_with_submissions_on_the_api_and_the_page(site: Site) -> None:
    alice, org = site.store.author_by_name("alice"), site.store.author_by_name("org")
    assert alice is not None and org is not None
    activate(site.store, alice.id, "alpha")
    activate(site.store, org.id, "beta")
    body = {"opponents": ["beta"]}
    assert site.client.post("/api/challenges", json=body, headers=site.auth("alice")).is_success
    csrf = site.sign_in("alice")
    assert "Play a challenge" in site.client.get("/me").text
    site.clock.now = DEADLINE
    refused = site.client.post("/api/challenges", json=body, headers=site.auth("alice"))
    assert refused.status_code == 403
    closed = "challenges ended when submissions closed at 2026-12-20 12:00 UTC"
    assert refused.json() == {"error": closed}
    form = {"csrf": csrf, "opponent": "beta", "players": "2", "variant": "coloured"}
    posted = site.client.post("/challenge", data=form, follow_redirects=False)
    assert posted.status_code == 403 and closed in posted.text
    assert site.store.challenges_since(alice.id, DEADLINE - timedelta(days=30)) == 1
    page = site.client.get("/me").text
    assert f"No challenges now: {closed}." in page and "Play a challenge" not in page


@pytest.mark.parametrize(("ladder", "open_after"), [("always", True), ("until-deadline", False)])
def test_challenges_go_on_after_the_deadline_only_with_the_ladder(
    store: CompetitionStore, ladder: str, open_after: bool
) -> None:
    clock = Clock()
    phases = phases_of(store, clock, ladder=ladder)
    assert phases.challenges_refusal() is None
    clock.now = DEADLINE
    assert (phases.challenges_refusal() is None) is open_after
