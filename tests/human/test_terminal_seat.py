"""The terminal seat: numbered moves, notation, invalid input re-asked, clocks, resigning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from arena.engine import Game, replay
from arena.human import TerminalSeat
from arena.human.command import play_with_human
from arena.protocol.messages import GameStart
from arena.referee import Choice, Fault, GameSettings, SandboxSettings, TimeControl, load_bot
from arena.sandbox import Level

REPO = Path(__file__).resolve().parents[2]
NO_SANDBOX = SandboxSettings(level=Level.OFF)
"""The sandbox is tested elsewhere; its uid pool is shared machine-wide."""


def scripted(lines: list[str | None]) -> tuple[TerminalSeat, list[str]]:
    answers: Iterator[str | None] = iter(lines)
    shown: list[str] = []
    seat = TerminalSeat("ann", read_line=lambda timeout: next(answers, ""), write=shown.append)
    seat.begin(
        GameStart(
            game_id="g",
            seat=0,
            n_players=2,
            variant="coloured",
            players=["ann", "b"],
            round_limit=100,
        )
    )
    return seat, shown


def test_invalid_input_is_asked_again_then_a_number_is_taken() -> None:
    game = Game.new(players=2, seed=1)
    options = game.legal_moves()
    seat, shown = scripted(["0", "x", "9:B>9", str(len(options) + 1), "3"])
    answer = seat.decide(1, game, options, 60_000, "g")
    assert isinstance(answer, Choice) and answer.index == 2
    assert sum("not a move" in text for text in shown) == 4
    assert any("Round 1" in text for text in shown)  # the board
    assert any(f"  3) {options[2]!s}" in text for text in shown)  # the numbered list


def test_notation_is_accepted() -> None:
    game = Game.new(players=2, seed=1)
    options = game.legal_moves()
    seat, _ = scripted([f"  {options[7]}  "])
    answer = seat.decide(1, game, options, 60_000, "g")
    assert isinstance(answer, Choice) and answer.index == 7


def test_timeout_and_end_of_input_are_faults() -> None:
    game = Game.new(players=2, seed=1)
    seat, _ = scripted([None])
    late = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(late, Fault) and late.kind == "timeout"
    seat, _ = scripted([""])
    gone = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(gone, Fault) and gone.kind == "crash"


def test_a_person_plays_a_bot_and_gets_a_verified_record(tmp_path: Path) -> None:
    answers = iter(["1"] * 40)
    shown: list[str] = []
    settings = GameSettings(seed=4, round_limit=1, time_control=TimeControl(move_ms=60_000))
    result = play_with_human(
        [load_bot(REPO / "bots" / "python-random")],
        settings,
        tmp_path,
        human_seat=1,
        sandbox=NO_SANDBOX,
        seat_factory=lambda: TerminalSeat(
            "ann", read_line=lambda t: next(answers), write=shown.append
        ),
        say=shown.append,
    )
    record = result.outcome.record
    assert record.players == ["python-random", "ann"]
    assert record.end_reason == "round_limit" and record.faults == []
    human_moves = [d for r in record.rounds for d in r.decisions if d.seat == 1]
    assert human_moves and all(d.think_ms is not None and not d.auto for d in human_moves)
    assert replay(record).is_over()
    assert (tmp_path / "record.json").is_file()
    assert any("Game over (round_limit)" in text for text in shown)


def test_a_person_plays_a_compiled_bot_which_plays_its_own_moves(tmp_path: Path) -> None:
    """`arena play bots/c-greedy --human`: the bot needs a build; it must play from its
    built copy (launched from its source folder it failed its handshake and the referee's
    random policy played under its name, with no fault shown)."""
    answers = iter(["1"] * 60)
    settings = GameSettings(seed=2, round_limit=1, time_control=TimeControl(move_ms=60_000))
    result = play_with_human(
        [load_bot(REPO / "bots" / "c-greedy")],
        settings,
        tmp_path,
        human_seat=0,
        seat_factory=lambda: TerminalSeat(
            "ann", read_line=lambda t: next(answers), write=[].append
        ),
        say=lambda text: None,
    )
    record = result.outcome.record
    assert record.players == ["ann", "c-greedy"]
    assert record.faults == []
    bot_moves = [d for r in record.rounds for d in r.decisions if d.seat == 1]
    assert bot_moves and not any(d.auto for d in bot_moves)
    assert all(d.think_ms is not None for d in bot_moves)  # answered by the process
    assert replay(record).is_over()
