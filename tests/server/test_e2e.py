"""`arena serve` as a user runs it: the real server on a loopback port, bots uploaded
through the HTTP API (one broken, rejected with a readable reason), the ladder playing,
the leaderboard, a bot page and a replay in headless Chromium, an author signing in and
uploading through the page, `arena submit --wait` with a new version, and a SIGTERM
restart and a `kill -9` that lose no finished game and resume the ladder. All of it on
SQLite and on PostgreSQL.

The tests of this module run in order against one competition per store (module
fixture); each waits for the ladder by polling, with generous deadlines, never by
sleeping a fixed time.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "fastapi", reason="the server extra is not installed (pip install -e '.[server]')"
)
httpx = pytest.importorskip("httpx", reason="the server extra is not installed")

from arena.bench.serve import (  # noqa: E402
    LiveServer,
    arena_command,
    competition_toml,
    free_port,
    pack_bot,
    submit_archive,
    wait_for,
    wait_settled,
)
from arena.competition.config import ServerSection  # noqa: E402
from tests.pgutil import drop_database  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GOOD = {"e2e-greedy": "python-greedy", "e2e-random": "python-random"}
BROKEN = "e2e-broken"
BROKEN_MESSAGE = "this bot is broken on purpose"
PATIENCE = 300  # seconds for anything that waits on builds or games (CI is loaded)


@dataclass
class Competition:
    server: LiveServer
    root: Path
    tokens: dict[str, str]
    """author name -> raw token (alice, bob, and the organiser)."""
    label: str
    """sqlite or postgresql (names the screenshots)."""
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """bot name -> the 202 reply of its upload."""
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """bot name -> GET /api/submissions/{id} once settled (seen by its author)."""

    def get(self, path: str, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        reply = httpx.get(self.server.url + path, headers=headers, timeout=30)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:500])
        return reply.json()

    def post(self, path: str, token: str) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.post(self.server.url + path, headers=headers, timeout=30)

    def games(self) -> list[dict[str, Any]]:
        """Every game, newest first, paging on with ``before`` as a client must."""
        rows: list[dict[str, Any]] = []
        query = "/api/games?limit=500"
        while True:
            page = self.get(query)["games"]
            rows += page
            if len(page) < 500:
                return rows
            query = f"/api/games?limit=500&before={page[-1]['id']}"

    def finished(self) -> set[str]:
        return {str(g["id"]) for g in self.games() if g["status"] == "finished"}

    def games_finished(self) -> int:
        count: int = self.server.health()["games_finished"]
        return count

    def leaderboard(self, token: str | None = None) -> list[dict[str, Any]]:
        data = self.get("/api/leaderboard", token)
        rows: list[dict[str, Any]] = data["rows"]
        return rows

    def wait_games(self, at_least: int) -> int:
        """Until the ladder has finished ``at_least`` games in all; the count."""
        count: int = wait_for(
            f"{at_least} finished games",
            lambda: (n := self.games_finished()) >= at_least and n,
            PATIENCE,
            self.server,
        )
        return count


def _broken_bot(root: Path) -> Path:
    """The commonest broken upload: a bot that dies before the handshake."""
    folder = root / "broken"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        f'name = "{BROKEN}"\nlanguage = "python"\ncommand = "/usr/bin/python3 bot.py"\n'
    )
    (folder / "bot.py").write_text(f"import sys\nsys.exit({BROKEN_MESSAGE!r})\n")
    return folder


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The competition's store: SQLite in its data folder, or a fresh database on the
    PostgreSQL server of ``tests/server/conftest.py`` (CI: a real server)."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    import sqlalchemy as sa

    server = request.getfixturevalue("postgres_server")
    name = f"arena_e2e_{secrets.token_hex(6)}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.engine.make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        drop_database(admin, name)
        admin.dispose()


@pytest.fixture(scope="module")
def competition(tmp_path_factory: pytest.TempPathFactory, store: str) -> Iterator[Competition]:
    root = tmp_path_factory.mktemp("e2e")
    root.chmod(0o755)  # readable by the per-bot uid
    port = free_port()
    data_dir = root / "data"
    toml = root / "competition.toml"
    sandbox = "strict" if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1" else "auto"
    toml.write_text(competition_toml(data_dir, port, name="e2e", sandbox=sandbox, store=store))
    server = LiveServer(toml, port, data_dir, root / "serve.log")
    try:
        server.start()
        tokens = {
            "organiser": server.organiser_token(),
            "alice": server.issue_token("alice"),
            "bob": server.issue_token("bob"),
        }
        comp = Competition(server, root, tokens, store.split(":")[0].split("+")[0])
        uploads = [
            ("alice", "e2e-greedy", pack_bot(REPO / "bots" / GOOD["e2e-greedy"], "e2e-greedy")),
            ("bob", "e2e-random", pack_bot(REPO / "bots" / GOOD["e2e-random"], "e2e-random")),
            ("alice", BROKEN, pack_bot(_broken_bot(root))),
        ]
        for author, name, archive in uploads:
            reply = submit_archive(server.url, tokens[author], archive, f"{name}.tar.gz")
            assert reply["bot"] == name and reply["status"] == "queued", reply
            comp.submissions[name] = reply
        for author, name, _ in uploads:
            sid = comp.submissions[name]["submission"]
            comp.verdicts[name] = wait_settled(server, tokens[author], sid, PATIENCE)
        yield comp
    finally:
        server.close()
        log = server.log_tail(20_000)
        keep = os.environ.get("ARENA_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"e2e-serve-{store.split(':')[0].split('+')[0]}.log").write_text(log)


def test_good_bots_go_active_and_the_broken_one_is_rejected_with_a_reason(
    competition: Competition,
) -> None:
    for name in GOOD:
        verdict = competition.verdicts[name]
        assert verdict["status"] == "active", verdict
    broken = competition.verdicts[BROKEN]
    assert broken["status"] == "rejected", broken
    reason = broken["verdict"]
    assert isinstance(reason, str) and len(reason) > 10, broken
    assert reason.isprintable() and "Traceback" not in reason, reason
    # Its author reads the build and check-bot log, with the bot's own last words...
    sid = competition.submissions[BROKEN]["submission"]
    mine = httpx.get(
        f"{competition.server.url}/api/submissions/{sid}",
        headers={"Authorization": f"Bearer {competition.tokens['alice']}"},
        timeout=30,
    )
    assert mine.status_code == 200 and BROKEN_MESSAGE in mine.text
    # ...another author does not.
    theirs = httpx.get(
        f"{competition.server.url}/api/submissions/{sid}",
        headers={"Authorization": f"Bearer {competition.tokens['bob']}"},
        timeout=30,
    )
    assert BROKEN_MESSAGE not in theirs.text


def test_the_ladder_plays_and_rates_only_the_good_bots(competition: Competition) -> None:
    competition.wait_games(4)
    rows = {row["bot_name"]: row for row in competition.leaderboard()}
    assert set(rows) == set(GOOD), rows
    for row in rows.values():
        assert row["games"] >= 1 and row["mu"] > 0 and row["sigma"] > 0, row
    # Only the two good bots can play: every finished game seats exactly them.
    for game in competition.games():
        if game["status"] == "finished":
            assert {seat["bot_name"] for seat in game["seats"]} == set(GOOD), game


def _row_numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def test_leaderboard_bot_and_game_pages_in_chromium(
    competition: Competition, browser: Any, tmp_path: Path
) -> None:
    shots = Path(os.environ.get("ARENA_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    try:
        competition.wait_games(4)
        # The page shows what the API says, with the ladder paused by the organiser (and
        # the games in flight finished) so that nothing changes between the two reads.
        organiser = competition.tokens["organiser"]
        assert competition.post("/api/admin/pause", organiser).status_code == 200
        wait_for(
            "the games in flight to finish after the pause",
            lambda: not any(g["status"] == "running" for g in competition.games()),
            PATIENCE,
            competition.server,
        )
        try:
            # The last game landed at most now: once ``stale_seconds`` have passed, the
            # page cache answers no page outdated by it (a CI run: the page showed 8 games,
            # the API 9), and nothing lands while the ladder is paused.
            time.sleep(ServerSection().stale_seconds + 0.1)
            page.goto(competition.server.url + "/")
            # Signed in, so that the answer is made now: an anonymous one may be the kept
            # page of the previous test's read, answered stale for up to a second while it
            # is remade (``stale_seconds``), with the games that landed since missing.
            api = {row["bot_name"]: row for row in competition.leaderboard(organiser)}
        finally:
            assert competition.post("/api/admin/resume", organiser).status_code == 200
        body = page.inner_text("body")
        assert BROKEN not in body and "paused" in body.lower()
        for name in GOOD:
            row = page.locator("tr", has_text=name)
            assert row.count() == 1, body
            text = row.inner_text()
            assert api[name]["games"] in _row_numbers(text), (text, api[name])
            assert api[name]["author_name"] in text, text
            # A rating is on the row: mu, the conservative rating or an end of its
            # interval, to the one decimal shown.
            ratings = [api[name][k] for k in ("mu", "conservative", "low", "high")]
            shown = [float(x) for x in re.findall(r"-?\d+\.\d+", text)]
            assert any(abs(x - r) <= 0.051 for x in shown for r in ratings), (text, ratings)
        shot = str(shots / f"e2e-{competition.label}-leaderboard.png")
        page.screenshot(path=shot, full_page=True)

        page.locator("a", has_text="e2e-greedy").first.click()
        page.wait_for_url("**/bots/e2e-greedy")
        assert "e2e-greedy" in page.inner_text("body")
        page.screenshot(path=str(shots / f"e2e-{competition.label}-bot.png"), full_page=True)

        # A finished game (the first rows may be games still running: no replay yet).
        game_links = page.locator("tr", has_text="finished").locator("a[href*='/games/']")
        assert game_links.count() >= 1, "the bot page links no finished game"
        game_links.first.click()
        page.wait_for_url(re.compile(r".*/games/[^/]+$"))
        page.wait_for_selector("[data-testid=step]")  # the replay viewer is running
        assert page.locator(".az-board").count() == 2
        page.keyboard.press("End")
        assert page.inner_text("[data-testid=step]").startswith("final position")
        page.screenshot(path=str(shots / f"e2e-{competition.label}-game.png"), full_page=True)
    finally:
        context.close()
    assert errors == [], errors


def test_an_author_signs_in_and_uploads_through_the_page(
    competition: Competition, browser: Any, tmp_path: Path
) -> None:
    """The web route of a submission: sign in with the token, upload the archive with the
    form (no JavaScript needed), read the verdict on one's own page."""
    shots = Path(os.environ.get("ARENA_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    token = competition.server.issue_token("carol")
    archive = tmp_path / "carol.tar.gz"
    archive.write_bytes(pack_bot(REPO / "bots" / "python-greedy", "e2e-carol"))
    url = competition.server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(url + "/login")
        page.fill("input[name=token]", token)
        page.click("form[action='/login'] button")
        page.wait_for_url(url + "/me")
        page.goto(url + "/submit")
        page.set_input_files("input[name=archive]", str(archive))
        page.click("form[action='/submit'] button")
        page.wait_for_load_state()

        def verdict_shown() -> str | None:
            page.goto(url + "/me")
            card = page.locator("section", has_text="e2e-carol v1")
            if card.count() == 1 and "active" in card.locator("h3").inner_text():
                return str(card.inner_text())
            return None

        card = wait_for("e2e-carol's verdict on /me", verdict_shown, PATIENCE, competition.server)
        assert "check-bot" in card, card
        page.screenshot(path=str(shots / f"e2e-{competition.label}-me.png"), full_page=True)
    finally:
        context.close()
    assert errors == [], errors
    assert competition.get("/api/bots/e2e-carol")["bot"]["author"] == "carol"


def test_arena_submit_waits_for_the_verdict_and_the_new_version_replaces_the_old(
    competition: Competition, tmp_path: Path
) -> None:
    folder = tmp_path / "e2e-random"
    shutil.copytree(REPO / "bots" / "python-random", folder)
    manifest = (folder / "bot.toml").read_text()
    (folder / "bot.toml").write_text(re.sub(r'(?m)^name = ".*"$', 'name = "e2e-random"', manifest))
    (folder / "NOTES.md").write_text("version 2: same moves, new notes\n")
    tmp_path.chmod(0o755)
    base = [*arena_command(), "submit", str(folder), "--server", competition.server.url]

    forged = subprocess.run(
        [*base, "--token", "forged-" + "x" * 40], capture_output=True, text=True
    )
    assert forged.returncode != 0
    assert "Traceback" not in forged.stderr and forged.stderr.strip(), forged.stderr

    done = subprocess.run(
        [*base, "--token", competition.tokens["bob"], "--wait"],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "active" in done.stdout.lower(), done.stdout

    bot = competition.get("/api/bots/e2e-random")
    versions = {v["number"]: v["status"] for v in bot["versions"]}
    assert versions == {1: "retired", 2: "active"}, bot["versions"]

    def version_two_rated() -> bool:
        rows = {row["bot_name"]: row for row in competition.leaderboard()}
        row = rows.get("e2e-random")
        return row is not None and row["version_number"] == 2 and row["games"] >= 1

    wait_for("version 2 on the ladder", version_two_rated, PATIENCE, competition.server)


def _restart_keeps_finished_games(competition: Competition, stop: str) -> set[str]:
    """Stop the server (``sigterm`` or ``kill``) with games in flight, start it again;
    the ids of the games in flight just after the restart."""
    server = competition.server
    competition.wait_games(competition.games_finished() + 1)
    before = competition.finished()
    count_before = competition.games_finished()
    if stop == "sigterm":
        assert server.terminate() == 0, server.log_tail()
    else:
        server.kill()
        # What it started (pool workers, bots) dies with it, without anyone's help.
        wait_for("the killed server's processes to exit", lambda: not server.stragglers(), 60)
    server.start()
    in_flight = {
        str(g["id"]) for g in competition.games() if g["status"] in ("running", "scheduled")
    }
    after = competition.finished()
    assert before <= after, f"finished games lost: {sorted(before - after)}"
    count_after = competition.games_finished()
    assert count_after >= count_before
    for game_id in sorted(before)[:5]:
        record = competition.get(f"/api/games/{game_id}")
        assert record, game_id
    # The ladder resumes: more games finish after the restart.
    competition.wait_games(count_after + 2)
    assert before <= competition.finished()
    return in_flight


def test_sigterm_restart_loses_no_finished_game_and_the_ladder_resumes(
    competition: Competition,
) -> None:
    _restart_keeps_finished_games(competition, "sigterm")


def test_kill_9_loses_no_finished_game_and_the_ladder_resumes(competition: Competition) -> None:
    in_flight = _restart_keeps_finished_games(competition, "kill")

    # No game stays "running" forever: whatever was in flight at the kill is played again
    # or void once the ladder has moved on.
    def settled() -> bool:
        now = {str(g["id"]): g["status"] for g in competition.games()}
        return all(now.get(g) in ("finished", "void", None) for g in in_flight)

    wait_for("the games in flight at the kill to settle", settled, PATIENCE, competition.server)
