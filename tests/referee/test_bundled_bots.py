"""Every bundled bot (every starter kit, and more) plays real games through the sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena.engine import Variant, replay
from arena.kits import kit_for, missing_programs
from arena.play.build import build_bot
from arena.referee import BotSeat, GameSettings, RandomSeat, Seat, load_bot, play_game
from arena.referee.clock import TimeControl
from arena.referee.seats import SandboxSettings
from tests.kits.comp90054_standin import write_framework

REPO = Path(__file__).resolve().parents[2]
SEARCH_MOVE_MS = {"c-mcts": 150}
"""Bots whose search spends a share of the time they are given (c-mcts: 30 % of what is
left) get less than the default second a move here: clean games are the point, and at the
default c-mcts alone took half a minute of CI."""
BUNDLED = sorted(p.name for p in (REPO / "bots").iterdir() if (p / "bot.toml").is_file())


def test_all_languages_are_bundled() -> None:
    languages = {load_bot(REPO / "bots" / name).manifest.language for name in BUNDLED}
    assert {"python", "javascript", "c"} <= languages


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_bot_plays_clean_games(name: str, tmp_path: Path) -> None:
    spec = load_bot(REPO / "bots" / name)
    kit = kit_for(spec.manifest.language)
    missing = missing_programs(kit) if kit is not None and kit.folder == name else []
    if missing:  # the starter kits need their compilers
        message = f"{name}: toolchain not installed ({', '.join(missing)})"
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1":
            pytest.fail(message + " (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip(message)
    sandbox = SandboxSettings()
    if kit is not None and kit.needs_python_env:  # the course framework: the tests' stand-in
        tmp_path.chmod(0o755)
        sandbox.python_env = (str(write_framework(tmp_path / "framework")),)
    bot = BotSeat(build_bot(spec), sandbox=sandbox)  # bots run from their built copy
    timing = TimeControl(move_ms=SEARCH_MOVE_MS.get(name, TimeControl().move_ms))
    try:
        for variant in [v for v in Variant if spec.manifest.plays(2, v)]:
            for seat in (0, 1):
                seats: list[Seat] = [RandomSeat("random"), RandomSeat("random2")]
                seats[seat] = bot
                settings = GameSettings(variant=variant, seed=seat, time_control=timing)
                outcome = play_game(seats, settings, "g")
                assert outcome.record.faults == []
                replay(outcome.record)
        assert bot.ready is not None and bot.ready.name
    finally:
        bot.close()


@pytest.mark.parametrize("name", ["python-greedy", "c-greedy"])
def test_greedy_bots_beat_random(name: str) -> None:
    spec = load_bot(REPO / "bots" / name)
    bot = BotSeat(build_bot(spec))  # bots run from their built copy
    wins = 0
    try:
        for g in range(10):
            pair: list[Seat] = [bot, RandomSeat("random")]
            seats = pair if g % 2 == 0 else pair[::-1]
            record = play_game(seats, GameSettings(seed=g), f"g{g}").record
            wins += record.final[g % 2].rank == 1
    finally:
        bot.close()
    assert wins >= 9
