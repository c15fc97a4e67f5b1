"""bots/c-mcts outside the referee: the protocol, determinism with --iterations, its clock."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from arena.play.build import build_bot
from arena.referee import load_bot

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "bots" / "c-mcts"
TRANSCRIPT = REPO / "protocol" / "transcripts" / "python-greedy-gray-seat0.txt"


@pytest.fixture(scope="module")
def binary() -> Path:
    return build_bot(load_bot(FOLDER)).spec.folder / "bot"  # the read-only built copy


def referee_lines() -> list[str]:
    """Every line the referee wrote in a real gray-wall session (draft and place decisions)."""
    text = TRANSCRIPT.read_text(encoding="utf-8")
    return [line[2:] for line in text.splitlines() if line.startswith("> ")]


def run(binary: Path, lines: list[str], *args: str) -> tuple[list[dict[str, object]], str]:
    done = subprocess.run(
        [str(binary), *args],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_answers_every_decide_with_a_legal_index(binary: Path) -> None:
    lines = referee_lines()
    replies, _ = run(binary, lines, "--iterations", "200")
    decides = [json.loads(line) for line in lines if '"decide"' in line]
    assert replies[0]["type"] == "ready" and replies[0]["name"] == "c-mcts"
    moves = replies[1:]
    assert len(moves) == len(decides)
    assert {d["decision"] for d in decides} == {"draft", "place"}
    for request, move in zip(decides, moves, strict=True):
        assert move["type"] == "move" and move["id"] == request["id"]
        index = move["index"]
        assert isinstance(index, int) and 0 <= index < len(request["options"])


def test_a_fixed_number_of_iterations_is_deterministic(binary: Path) -> None:
    lines = referee_lines()
    first, log = run(binary, lines, "--iterations", "300", "--seed", "5")
    second, _ = run(binary, lines, "--iterations", "300", "--seed", "5")
    assert first == second
    assert re.search(r"options, 300 iterations", log)


def test_a_short_clock_gets_the_heuristic_move_at_once(binary: Path) -> None:
    """With 150 ms or less left the bot does not search at all (the margin it keeps)."""
    lines = [
        re.sub(r'"time_left_ms":\d+', '"time_left_ms":120', line) if '"decide"' in line else line
        for line in referee_lines()
    ]
    replies, log = run(binary, lines)
    assert len(replies) == 1 + sum('"decide"' in line for line in lines)
    searched = re.findall(r"request \d+: \d+ options, (\d+) iterations", log)
    assert searched and all(n == "0" for n in searched)


@pytest.mark.slow
def test_beats_the_greedy_bot_with_a_fixed_search(tmp_path: Path) -> None:
    """Deterministic: a fixed number of iterations (the clock is far away), fixed deals,
    and c-greedy is deterministic. The tournament figure in docs/bots.md is the real measure."""
    import shutil

    from arena.engine import Variant
    from arena.referee import BotSeat, GameSettings, Seat, play_game
    from arena.referee.clock import TimeControl

    folder = tmp_path / "c-mcts"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("bot"))
    manifest = (folder / "bot.toml").read_text()
    (folder / "bot.toml").write_text(
        manifest.replace('command = "./bot"', 'command = "./bot --iterations 1000 --seed 1"')
    )
    mcts = build_bot(load_bot(folder))
    greedy = build_bot(load_bot(REPO / "bots" / "c-greedy"))
    clock = TimeControl(move_ms=20_000)
    seats = {
        "mcts": BotSeat(mcts, time_control=clock),
        "greedy": BotSeat(greedy, time_control=clock),
    }
    wins = games = 0
    try:
        for deal in range(3):
            for variant in Variant:
                for mcts_seat in (0, 1):
                    order: list[Seat] = [seats["mcts"], seats["greedy"]]
                    if mcts_seat:
                        order.reverse()
                    settings = GameSettings(variant=variant, seed=deal, time_control=clock)
                    record = play_game(order, settings, f"d{deal}-{variant}-{mcts_seat}").record
                    assert record.faults == []
                    games += 1
                    wins += record.final[mcts_seat].rank == 1
    finally:
        for seat in seats.values():
            seat.close()
    assert games == 12 and wins >= 10
