"""The browser seat in headless Chromium: a person plays a short game by clicking."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from arena.engine import replay
from arena.human import BrowserSeat
from arena.human.command import PlayResult, play_with_human
from arena.recordio import load_record
from arena.referee import GameSettings, SandboxSettings, TimeControl, load_bot
from arena.sandbox import Level

REPO = Path(__file__).resolve().parents[2]
NO_SANDBOX = SandboxSettings(level=Level.OFF)
"""The sandbox is tested elsewhere; its uid pool is shared machine-wide."""
SCRIPTED_BOT = REPO / "tests" / "referee" / "fixtures" / "scripted_bot.py"


def moved(page: Any, click: Any) -> None:
    """Click, then wait until the page shows a newer state (the move was taken)."""
    version = page.get_attribute("body", "data-version")
    click()
    page.wait_for_function(f"document.body.dataset.version !== '{version}'")


def test_a_person_plays_by_clicking(page: Any, tmp_path: Path, shoot: Any) -> None:
    seat = BrowserSeat("ann")
    # Generous clocks: a loaded host must not fault the bot's start (5 s by default).
    time_control = TimeControl(move_ms=60_000, init_ms=60_000)
    settings = GameSettings(seed=2, round_limit=1, time_control=time_control)
    results: list[PlayResult] = []
    errors: list[BaseException] = []

    def play() -> None:
        try:
            results.append(
                play_with_human(
                    [load_bot(REPO / "bots" / "python-greedy")],
                    settings,
                    tmp_path,
                    seat_factory=lambda: seat,
                    sandbox=NO_SANDBOX,
                    say=lambda text: None,
                    game_id="person-clicks",
                )
            )
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    game = threading.Thread(target=play, daemon=True)
    game.start()
    # Each wait below ends when the game moves on; the bound is the game's own clocks (a
    # bot's start and move may take their full minute on a loaded host), not Playwright's
    # 30 s default, which the first wait (the bot built and started) could exceed.
    page.set_default_timeout(180_000)
    try:
        page.goto(seat.url)
        page.wait_for_selector("body[data-status=your_turn]")
        assert page.locator(".az-factory").count() == 5
        shoot(page, "play-first-move")
        # First move by clicking: a blue tile of a factory, then the highlighted line 0.
        tile = page.locator(".az-factory [data-colour]").first
        source, colour = tile.get_attribute("data-source"), tile.get_attribute("data-colour")
        tile.click()
        assert page.locator(".az-board[data-seat='0'] .az-legal").count() >= 1
        moved(page, lambda: page.locator(".az-board[data-seat='0'] [data-line='0']").first.click())
        page.wait_for_selector("body[data-status=your_turn]")
        assert re.search(  # the bot's move, in words with the tiles it took
            r"python-greedy took \d (blue|yellow|red|black|white) from (factory \d|the centre) → ",
            page.inner_text("#play-recent"),
        )
        # The rest through the move list, until the game is over.
        clicks = 0
        while True:
            page.wait_for_function("['your_turn', 'over'].includes(document.body.dataset.status)")
            if page.get_attribute("body", "data-status") == "over":
                break
            moved(page, lambda: page.locator("#play-options button").first.click())
            clicks += 1
            assert clicks < 60
        shoot(page, "play-over", full_page=True)
        game.join(180)  # the page has the result: only the bot's shutdown remains
        assert not game.is_alive() and not errors, errors
        record = results[0].outcome.record
        human_moves = [d.move for r in record.rounds for d in r.decisions if d.seat == 0]
        assert human_moves[0] == f"{source}:{colour}>0"
        assert len(human_moves) == clicks + 1
        for f in record.final:
            shown = page.inner_text(f"[data-testid=result-{f.seat}]")
            assert shown.startswith(f"#{f.rank} {f.player}") and shown.endswith(f": {f.total}")
        replay(record)
    finally:
        seat.close()


def test_a_bot_that_faults_is_shown_as_faulted_in_the_browser(
    page: Any, tmp_path: Path, shoot: Any
) -> None:
    """`arena play BOT --human --browser` against a bot that exits at its third decision:
    the page's end screen says it faulted (kind, round) and that its moves were random."""
    bot = tmp_path / "quitter"
    bot.mkdir()
    shutil.copy(SCRIPTED_BOT, bot / "bot.py")
    (bot / "bot.toml").write_text(
        'name = "quitter"\nlanguage = "python"\ncommand = "/usr/bin/python3 bot.py crash 3"\n'
    )
    out = tmp_path / "game"
    command = [sys.executable, "-m", "arena.cli", "play", str(bot), "--human", "--browser"]
    command += ["--no-open", "--round-limit", "2", "--seed", "3", "--sandbox", "off"]
    command += ["--time-per-move", "60000", "--init-time", "60000", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once the server listens
        url = re.search(r"http://127\.0\.0\.1:\d+/", first)
        assert url, first
        page.set_default_timeout(180_000)  # see test_a_person_plays_by_clicking
        page.goto(url[0])
        while True:
            page.wait_for_function("['your_turn', 'over'].includes(document.body.dataset.status)")
            if page.get_attribute("body", "data-status") == "over":
                break
            moved(page, lambda: page.locator("#play-options button").first.click())
        shoot(page, "play-faulted-bot-over", full_page=True)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, rest
    record = load_record(out / "record.json")
    assert [(f.seat, f.kind) for f in record.faults] == [(1, "crash")]
    notice = (
        f"quitter faulted (crash, round {record.faults[0].round}): "
        "its moves were played at random from then on"
    )
    assert page.inner_text("[data-testid=fault-0]").startswith(notice)
    assert "crash" in page.inner_text("[data-testid=result-1]")
    assert notice in rest  # and in the terminal


def test_moves_need_the_page_token_and_the_right_host(tmp_path: Path) -> None:
    import http.client

    seat = BrowserSeat("ann")
    try:
        port = seat.server.server_address[1]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/move", body=b'{"req":1,"move":"0:B>0"}')
        assert conn.getresponse().status == 403  # no token
        conn.request("GET", "/state", headers={"Host": "evil.example:80"})
        assert conn.getresponse().status == 403  # DNS rebinding
        conn.request(
            "POST", "/move", body=b'{"req":1,"move":"0:B>0"}', headers={"X-Arena-Token": seat.token}
        )
        assert conn.getresponse().status == 409  # not your turn
    finally:
        seat.close()
