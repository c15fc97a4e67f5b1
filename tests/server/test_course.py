"""A course contest from roster to prize-giving, as an organiser runs one (issue 21's
"done when"): the real `arena serve` on loopback with the strict sandbox, the course's
time rule (`preset = "comp90054"`), a roster of 12 teams and 2 staff teams imported
with `arena roster import`, every bot uploaded through the API with a member's token
(eight of known strength, three course agents through the COMP90054 adapter kit against
a framework stand-in declared as the organiser's python_env, one planted crashing bot),
two rounds started by the organiser, the deadline (an upload after it refused), the
finals, the published results page in headless Chromium (stability audit, FAILED
column) and `arena export`.

The bots of known strength play python-greedy's move with probability ``q`` and a random
option otherwise, seeded by the game and the request, so the whole finals is a
deterministic function of the master seed: the order checks below hold or fail the same
way on every run.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
httpx = pytest.importorskip("httpx", reason="the server extra is not installed")

from arena.bench.serve import (  # noqa: E402
    LiveServer,
    arena_command,
    free_port,
    pack_bot,
    submit_archive,
    wait_for,
    wait_settled,
)
from tests.kits.comp90054_standin import write_agent, write_framework  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PATIENCE = 600  # seconds for anything that waits on builds or games (CI is loaded)

STRENGTH: dict[str, float] = {
    "Aurora": 1.0,
    "Borealis": 0.85,
    "Cassiopeia": 0.7,
    "Draco": 0.55,
    "Eridanus": 0.4,
    "Fornax": 0.25,
    "Gemini": 0.1,
    "Hydra": 0.0,
}
"""Teams whose bots are of known strength: the share of python-greedy's moves they play."""
ADAPTED: dict[str, tuple[str, str]] = {
    "Minimax Club": ("greedy", "2020"),
    "Numpy Knights": ("numpy-chatty", "2020"),
    "Selectors": ("random", "2021"),
}
"""Teams that submit a course agent (kind, framework API) through the adapter kit."""
CRASHER = "Kaboom"
"""The planted crashing bot: passes the upload check, then dies in every contest game."""
STAFF: dict[str, str] = {"Tutors": "python-greedy", "Random Staff": "python-random"}
"""Staff baselines: bundled bots, badged and without a prize rank."""

STRENGTH_BOT = '''\
"""python-greedy's move with probability Q (strength.txt), else a random option; seeded
by the game and the request. CRASH: exits during every game that is not a check."""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bot  # python-greedy

with open(os.path.join(HERE, "strength.txt")) as f:
    Q, CRASH = f.read().split()
Q = float(Q)
greedy = bot.choose


def choose(msg):
    if CRASH == "crash" and not msg["game_id"].startswith("check-") and msg["id"] > 6:
        os._exit(3)
    rng = random.Random(f"{msg['game_id']}/{msg['id']}")
    if rng.random() < Q:
        return greedy(msg)
    return rng.randrange(len(msg["options"]))


bot.choose = choose
bot.main()
'''


def bot_name(team: str) -> str:
    return team.lower().replace(" ", "-") + "-bot"


def manifest(name: str, command: str) -> str:
    return f'name = "{name}"\nlanguage = "python"\ncommand = "{command}"\n'


@dataclass
class Course:
    server: LiveServer
    root: Path
    toml: Path
    organiser: str
    tokens: dict[str, str]
    """team -> a member's token (from the roster's tokens file)."""
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def get(self, path: str, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        reply = httpx.get(self.server.url + path, headers=headers, timeout=60)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:500])
        return reply.json()

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.organiser}"}
        return httpx.post(self.server.url + path, headers=headers, json=body, timeout=60)

    def wait_event(self, event_id: int) -> dict[str, Any]:
        """The event once every game of it finished and its results are computed."""

        def done() -> dict[str, Any] | None:
            shown: dict[str, Any] = self.get(f"/api/events/{event_id}", self.organiser)
            return shown if shown["status"] == "finished" and shown["results"] else None

        found: dict[str, Any] = wait_for(f"event {event_id}", done, PATIENCE, self.server)
        return found


def write_roster(path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["team", "member", "email", "staff"])
        for team in [*STRENGTH, *ADAPTED, CRASHER]:
            slug = team.lower().replace(" ", ".")
            for who in ("ann", "bo"):
                out.writerow([team, f"{who} {team}", f"{who}.{slug}@uni.example", ""])
        for team in STAFF:
            out.writerow([team, f"tutor {team}", f"{team[:3].lower()}@staff.example", "yes"])


def course_toml(root: Path, port: int, framework: Path) -> str:
    deadline = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    envs = json.dumps([str(framework), sys.prefix])  # the framework, and a venv with numpy
    return f"""\
[competition]
name = "COMP90054 Azul contest"
data_dir = "{root / "data"}"

[server]
host = "127.0.0.1"
port = {port}

[ladder]
players = {{2 = 1.0}}
variants = {{coloured = 1.0}}
games_in_flight = 2

[play]
sandbox = "strict"
python_env = {envs}

[play.time]
preset = "comp90054"

[phases]
deadline = {deadline}
finals = "at-deadline"
publish = "auto"
ladder = "off"

[rounds]
schedule = "daily 02:00"
pairing = "sampled"
games_per_bot = 2
rank_by = "points"
points = "50*wins + 20*ties + points"

[finals]
entrants = "all"
schedule = "round-robin"
deals = 1
master_seed = 2026
rank_by = "final"
"""


def archives(root: Path, framework: Path) -> dict[str, bytes]:
    """Each team's upload, as its members pack it."""
    greedy = REPO / "bots" / "python-greedy"
    made: dict[str, bytes] = {}
    for team, q in [*STRENGTH.items(), (CRASHER, 1.0)]:
        name = bot_name(team)
        mode = "crash" if team == CRASHER else "play"
        made[team] = pack_bot(
            greedy,
            extra={
                "bot.toml": manifest(name, "/usr/bin/python3 strength.py"),
                "strength.py": STRENGTH_BOT,
                "strength.txt": f"{q} {mode}\n",
            },
        )
    for team, (kind, api) in ADAPTED.items():
        name = bot_name(team)
        new = subprocess.run(
            [*arena_command(), "new-bot", name, "--language", "comp90054", "--dir", str(root)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert new.returncode == 0, new.stdout + new.stderr
        folder = root / name
        if api == "2021":
            (folder / "player.py").unlink()
            (folder / "comp90054.toml").write_text('framework_api = "2021"\n')
        write_agent(folder, kind, api)
        made[team] = pack_bot(folder)
    for team, bundled in STAFF.items():
        made[team] = pack_bot(REPO / "bots" / bundled, name=bot_name(team))
    return made


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("course")
    root.chmod(0o755)  # the per-bot uids read the framework from here
    framework = root / "framework"
    write_framework(framework, "2020")
    write_framework(framework, "2021")
    toml = root / "competition.toml"
    toml.write_text(course_toml(root, free_port(), framework))
    roster = root / "teams.csv"
    write_roster(roster)
    tokens_file = root / "tokens.csv"
    imported = subprocess.run(
        [*arena_command(), "roster", "import", str(toml), str(roster), "--tokens-out",
         str(tokens_file)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert tokens_file.stat().st_mode & 0o777 == 0o600
    tokens: dict[str, str] = {}
    with tokens_file.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            tokens.setdefault(row["team"], row["token"])
    assert set(tokens) == {*STRENGTH, *ADAPTED, CRASHER, *STAFF}
    server = LiveServer(toml, int(toml.read_text().split("port = ")[1].split()[0]),
                        root / "data", root / "serve.log")  # fmt: skip
    server.start()
    shown = Course(server, root, toml, server.organiser_token(), tokens)
    try:
        for team, archive in archives(root, framework).items():
            shown.uploads[team] = submit_archive(
                server.url, tokens[team], archive, f"{bot_name(team)}.tar.gz"
            )
        for team, reply in shown.uploads.items():
            settled = wait_settled(server, tokens[team], reply["submission"], PATIENCE)
            assert settled["status"] == "active", (team, settled)
        yield shown
    finally:
        keep = os.environ.get("ARENA_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / "course-serve.log").write_text(server.log_tail(200_000))
        server.close()


def test_a_member_token_signs_in_as_the_team(course: Course) -> None:
    me = course.get("/api/me", course.tokens["Aurora"])
    assert me["team"]["name"] == "Aurora"
    assert {m["name"] for m in me["team"]["members"]} == {"ann Aurora", "bo Aurora"}
    board = course.get("/api/leaderboard")
    staff = {row["bot_name"] for row in board["rows"] if row["staff"]}
    assert staff == {bot_name(t) for t in STAFF}


def test_two_rounds_over_the_latest_versions(course: Course) -> None:
    assert "T02:00:00" in course.get("/api/events")["next_round"]  # daily 02:00 UTC
    started = course.post("/api/admin/phase/start-round")
    assert started.status_code == 200, started.text
    first = course.get("/api/events", course.organiser)["events"][0]
    assert first["kind"] == "round"
    first = course.wait_event(first["id"])
    assert first["entrants"] == 14
    versions = {row["bot"]: row["version"] for row in first["results"]["rows"]}
    assert versions[bot_name("Borealis")] == 1
    # A member uploads a new version between the rounds: round 2 plays it.
    archive = pack_bot(
        REPO / "bots" / "python-greedy",
        extra={
            "bot.toml": manifest(bot_name("Borealis"), "/usr/bin/python3 strength.py"),
            "strength.py": STRENGTH_BOT + "# v2\n",
            "strength.txt": f"{STRENGTH['Borealis']} play\n",
        },
    )
    token = course.tokens["Borealis"]
    reply = submit_archive(course.server.url, token, archive, "borealis-v2.tar.gz")
    assert wait_settled(course.server, token, reply["submission"], PATIENCE)["status"] == "active"
    started = course.post("/api/admin/phase/start-round")
    assert started.status_code == 200, started.text
    second = course.get("/api/events", course.organiser)["events"][0]
    assert second["id"] != first["id"]
    second = course.wait_event(second["id"])
    versions = {row["bot"]: row["version"] for row in second["results"]["rows"]}
    assert versions[bot_name("Borealis")] == 2
    # A finished round's results are public, ranked by the course's points formula.
    public = course.get(f"/api/events/{second['id']}")
    assert public["visible"] and public["results"]["rank_by"] == "points"
    rows = public["results"]["rows"]
    assert all(r["score"] == 50 * r["wins"] + 20 * r["ties"] + r["points"] for r in rows)


def test_the_deadline_closes_uploads_and_starts_the_finals(course: Course) -> None:
    closed = course.post("/api/admin/phase/start-finals")
    assert closed.status_code == 200, closed.text
    late = httpx.post(
        course.server.url + "/api/submissions",
        headers={"Authorization": f"Bearer {course.tokens['Hydra']}"},
        files={"archive": ("late.tar.gz", pack_bot(REPO / "bots" / "python-greedy",
                                                   name=bot_name("Hydra")), "application/gzip")},
        timeout=60,
    )  # fmt: skip
    assert late.status_code == 403, late.text
    assert "submissions closed at" in late.json()["error"]
    finals = [e for e in course.get("/api/events", course.organiser)["events"]
              if e["kind"] == "finals"]  # fmt: skip
    assert len(finals) == 1
    shown = course.wait_event(finals[0]["id"])
    assert shown["games"] == {"finished": 14 * 13}  # every pair, both seatings, one deal
    phase = course.get("/api/phase", course.organiser)
    assert phase["phase"] == "published"
    assert course.get("/api/events")["next_round"] is None  # rounds only while open
    actors = {(row["action"], row["actor"]) for row in phase["log"]}
    assert ("start-round", "organiser") in actors and ("start-finals", "organiser") in actors


def test_the_published_results(course: Course) -> None:
    finals = [e for e in course.get("/api/events")["events"] if e["kind"] == "finals"]
    shown = course.get(f"/api/events/{finals[0]['id']}")  # anyone: published
    assert shown["visible"]
    results = shown["results"]
    rows = {row["bot"]: row for row in results["rows"]}
    assert len(rows) == 14 and results["rank_by"] == "final"
    # FAILED counts the planted crashing bot's games, and only those.
    crasher = rows[bot_name(CRASHER)]
    assert crasher["games"] == 26 and crasher["failed"] == 26
    assert all(r["failed"] == 0 for b, r in rows.items() if b != bot_name(CRASHER)), rows
    # The adapter's course agents played every game without a fault.
    for team in ADAPTED:
        assert rows[bot_name(team)]["games"] == 26 and rows[bot_name(team)]["faults"] == 0
    # Staff are baselines: badged, without a prize rank; prize ranks 1..12 for the teams.
    assert {b for b, r in rows.items() if r["staff"]} == {bot_name(t) for t in STAFF}
    prizes = sorted(r["prize_rank"] for r in rows.values() if r["prize_rank"] is not None)
    assert prizes == list(range(1, 13))
    # The known strengths come out in order, within the stated 95 % rank intervals: a
    # stronger bot is ranked above a weaker one, or their intervals overlap.
    known = sorted(STRENGTH, key=lambda t: -STRENGTH[t])
    for i, strong in enumerate(known):
        for weak in known[i + 1 :]:
            a, b = rows[bot_name(strong)], rows[bot_name(weak)]
            assert a["final_rank"] < b["final_rank"] or a["high"] >= b["low"], (strong, weak)
    ranks = [rows[bot_name(t)]["final_rank"] for t in known]
    assert _spearman(ranks) >= 0.8, ranks
    # Every rank states how stable it is, and the audit's numbers are shares.
    assert results["stability"] and all(0 <= r["held"] <= 1 for r in rows.values())


def test_the_results_page_in_chromium(course: Course, browser: Any, tmp_path: Path) -> None:
    shots = Path(os.environ.get("ARENA_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(course.server.url + "/results")
        text = page.inner_text("body")
        assert "held in" in text and "FAILED" in text
        row = page.locator("tr", has_text=bot_name(CRASHER)).first.inner_text()
        assert "26" in row.split()
        page.screenshot(path=str(shots / "course-results.png"), full_page=True)
        page.goto(course.server.url + "/rounds")
        assert "Round 2" in page.inner_text("body") or "round 2" in page.inner_text("body")
        page.screenshot(path=str(shots / "course-rounds.png"), full_page=True)
    finally:
        context.close()
    assert not errors


def test_export_writes_the_final_and_round_tables(course: Course) -> None:
    out = course.root / "export"
    done = subprocess.run(
        [*arena_command(), "export", str(course.toml), "--to", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with (out / "finals.csv").open(encoding="utf-8") as f:
        finals = list(csv.DictReader(f))
    assert len(finals) == 14
    assert (out / "round-1.csv").is_file() and (out / "round-2.csv").is_file()
    games = (out / "event-games.jsonl").read_text().splitlines()
    assert len(games) >= 14 * 13


def _spearman(ranks: list[int]) -> float:
    """Spearman's rho between the known order (0, 1, 2, ...) and the ranks given."""
    order = sorted(range(len(ranks)), key=lambda i: ranks[i])
    position = {i: p for p, i in enumerate(order)}
    n = len(ranks)
    d2 = sum((i - position[i]) ** 2 for i in range(n))
    return 1 - 6 * d2 / (n * (n * n - 1))
