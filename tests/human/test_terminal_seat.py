"""The terminal seat: numbered moves, notation, invalid input re-asked, clocks, resigning."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from arena.engine import Game, replay
from arena.engine.tables import CENTRE, FLOOR, Move
from arena.human import TerminalSeat
from arena.human.command import play_with_human
from arena.protocol.encode import encode_decide
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


def test_invalid_input_is_asked_again_then_a_code_is_taken() -> None:
    game = Game.new(players=2, seed=1)
    options = game.legal_moves()
    wanted = options[7]
    code = str(wanted).replace(":", "").replace(">", "").lower()  # e.g. "1y2"
    seat, shown = scripted(["0", "x", "9:B>9", "7", code])
    answer = seat.decide(1, game, options, 60_000, "g")
    assert isinstance(answer, Choice) and answer.index == 7
    assert sum("not a legal move" in text for text in shown) == 4
    assert any("Round 1" in text for text in shown)  # the board


def test_moves_are_grouped_by_source_and_colour() -> None:
    """90 numbered moves pushed the board off a 40-row screen: one entry per source and
    colour (with the tiles it takes and its lines) keeps the list to a few rows."""
    game = Game.new(players=2, seed=1)
    options = game.legal_moves()
    assert len(options) == 90
    seat, shown = scripted([str(options[0])])
    seat.decide(1, game, options, 60_000, "g")
    listing = next(text for text in shown if text.startswith("Legal moves:"))
    groups = {(m.source, m.colour) for m in options if isinstance(m, Move)}
    assert sum(line.count(" > ") for line in listing.splitlines()) == len(groups)
    assert len(listing.splitlines()) <= 1 + len(groups) // 4 + 1
    assert "0:B x1 > 0 1 2 3 4 F" in listing  # factory 0 (BRRK): one blue, any line
    assert "0:R x2 > 0 1 2 3 4 F" in listing
    assert max(len(line) for text in shown for line in text.splitlines()) <= 100
    assert "\x1b[" not in "".join(shown)  # no colour unless asked


def test_the_other_seats_moves_are_announced_with_the_tiles_taken() -> None:
    game = Game.new(players=2, seed=1)  # factory 0 holds B R R K
    shown: list[str] = []
    answers = iter(["C:B>0", "1:Y>1"])
    seat = TerminalSeat("ann", read_line=lambda t: next(answers), write=shown.append)
    seat.begin(
        GameStart(
            game_id="g",
            seat=1,
            n_players=2,
            variant="coloured",
            players=["evil\x1b[2J\u202ebot", "ann"],
            round_limit=100,
        )
    )
    game.apply(Move(0, 2, 4))  # the bot: two red from factory 0; B and K go to the centre
    first = seat.decide(1, game, game.legal_moves(), 60_000, "g")
    assert isinstance(first, Choice)
    game.apply(game.legal_moves()[first.index])  # the person: the centre's blue
    game.apply(Move(CENTRE, 3, FLOOR))  # the bot: the centre's black, to its floor
    seat.decide(2, game, game.legal_moves(), 60_000, "g")
    text = "\n".join(shown)
    assert "evil\\x1b[2J\\u202ebot took 2 red from factory 0 → line 4" in text
    assert "evil\\x1b[2J\\u202ebot took 1 black from the centre → the floor" in text
    assert "\x1b" not in text and "\u202e" not in text  # the name's escapes are shown, not obeyed
    assert "ann took" not in text  # your own moves are not announced back


def test_tiles_are_coloured_on_a_terminal_only() -> None:
    game = Game.new(players=2, seed=1)
    options = game.legal_moves()
    plain: list[str] = []
    TerminalSeat("ann", read_line=lambda t: "0B0", write=plain.append, colour=False).decide(
        1, game, options, 60_000, "g"
    )
    coloured: list[str] = []
    TerminalSeat("ann", read_line=lambda t: "0B0", write=coloured.append, colour=True).decide(
        1, game, options, 60_000, "g"
    )
    assert "\x1b[" not in "".join(plain)
    assert "\x1b[97;44mB\x1b[0m" in "".join(coloured)  # a blue tile
    strip = re.compile(r"\x1b\[[0-9;]*m")
    assert [strip.sub("", t) for t in coloured] == plain  # same layout, colour aside


def test_timeout_and_end_of_input_are_faults() -> None:
    game = Game.new(players=2, seed=1)
    seat, _ = scripted([None])
    late = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(late, Fault) and late.kind == "timeout"
    seat, _ = scripted([""])
    gone = seat.decide(1, game, game.legal_moves(), 1000, "g")
    assert isinstance(gone, Fault) and gone.kind == "crash"


GENEROUS = TimeControl(move_ms=60_000, init_ms=60_000)
"""A loaded host must not turn a bot's start or move into a fault (CPU clocks aside, the
wall ceiling is a multiple of these)."""


def first_option_person(shown: list[str]) -> TerminalSeat:
    """A scripted person who always answers the first legal move (by its notation)."""
    seat = TerminalSeat(
        "ann", read_line=lambda t: str(seat.options[0]), write=shown.append, colour=False
    )
    return seat


def test_a_person_plays_a_bot_and_gets_a_verified_record(tmp_path: Path) -> None:
    shown: list[str] = []
    settings = GameSettings(seed=4, round_limit=1, time_control=GENEROUS)
    result = play_with_human(
        [load_bot(REPO / "bots" / "python-random")],
        settings,
        tmp_path,
        human_seat=1,
        sandbox=NO_SANDBOX,
        seat_factory=lambda: first_option_person(shown),
        say=shown.append,
        game_id="person-vs-random",  # python-random seeds from it: the same game every run
    )
    record = result.outcome.record
    assert record.players == ["python-random", "ann"]
    assert record.end_reason == "round_limit" and record.faults == []
    human_moves = [d for r in record.rounds for d in r.decisions if d.seat == 1]
    assert human_moves and all(d.think_ms is not None and not d.auto for d in human_moves)
    assert replay(record).is_over()
    assert (tmp_path / "record.json").is_file()
    assert any("Game over (round_limit)" in text for text in shown)
    bot_moves = sum(d.seat == 0 for r in record.rounds for d in r.decisions)
    assert sum(text.startswith("  python-random took ") for text in shown) == bot_moves


def test_a_person_plays_a_compiled_bot_which_plays_its_own_moves(tmp_path: Path) -> None:
    """`arena play bots/c-greedy --human`: the bot needs a build; it must play from its
    built copy (launched from its source folder it failed its handshake and the referee's
    random policy played under its name, with no fault shown). Its moves are greedy: each
    one is what the one-ply greedy policy picks in that position."""
    settings = GameSettings(seed=2, round_limit=1, time_control=GENEROUS)
    result = play_with_human(
        [load_bot(REPO / "bots" / "c-greedy")],
        settings,
        tmp_path,
        human_seat=0,
        seat_factory=lambda: first_option_person([]),
        say=lambda text: None,
        game_id="person-vs-c-greedy",
    )
    record = result.outcome.record
    assert record.players == ["ann", "c-greedy"]
    assert record.faults == []
    bot_moves = [d for r in record.rounds for d in r.decisions if d.seat == 1]
    assert bot_moves and not any(d.auto for d in bot_moves)
    assert all(d.think_ms is not None for d in bot_moves)  # answered by the process
    assert replay(record).is_over()
    greedy = greedy_policy()
    picked: list[tuple[str, str]] = []

    def check(game: Game, move: str, seat: int) -> None:
        if seat == 1:
            options = game.legal_moves()
            msg = json.loads(encode_decide(1, "g", seat, game.copy(), options, 1000))
            picked.append((move, str(options[greedy(msg)])))

    replay(record, on_decision=check)
    assert len(picked) == len(bot_moves) and all(got == want for got, want in picked)


def greedy_policy() -> Callable[[dict[str, Any]], int]:
    """bots/python-greedy's ``choose`` (c-greedy plays the same heuristic)."""
    spec = importlib.util.spec_from_file_location("greedy_bot", REPO / "bots/python-greedy/bot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    choose: Callable[[dict[str, Any]], int] = module.choose
    return choose


def test_the_end_screen_names_each_fault_and_what_it_cost() -> None:
    from viewer.helpers import random_record  # tests/ is on sys.path (rootdir-relative packages)

    from arena.engine.record import FaultRecord

    record = random_record(2, seed=3, names=["ann", "evil\x1b]0;x\x07"])
    strike = FaultRecord(seat=1, kind="timeout", round=2, message="slow", forfeit=False)
    lost = FaultRecord(seat=1, kind="illegal", round=3, message="option 99", forfeit=True)
    record = record.model_copy(update={"faults": [strike, lost]})
    shown: list[str] = []
    seat = TerminalSeat("ann", write=shown.append, colour=False)
    seat.finish(record, replay(record))
    text = "\n".join(shown)
    assert "evil\\x1b]0;x\\x07 faulted (timeout, round 2): that move was played at random" in text
    assert (
        "evil\\x1b]0;x\\x07 faulted (illegal, round 3): "
        "its moves were played at random from then on\n  (option 99)"
    ) in text
    assert "\x1b" not in text and "Game over (" in text


def test_four_players_with_long_names_fit_100_by_40() -> None:
    game = Game.new(players=4, seed=9)
    while game.round < 3:  # some scores, walls and floors
        game.apply(game.legal_moves()[-1])
    names = ["a-very-long-bot-name-" * 3 + str(i) for i in range(4)]
    shown: list[str] = []
    seat = TerminalSeat("ann", read_line=lambda t: str(seat.options[0]), write=shown.append)
    seat.begin(
        GameStart(
            game_id="g", seat=0, n_players=4, variant="coloured", players=names, round_limit=100
        )
    )
    for req in range(1, 5):  # several decisions: the moves between are announced
        assert game.current_player == 0 or game.apply(game.legal_moves()[0]) is None
        while game.current_player != 0:
            game.apply(game.legal_moves()[0])
        shown.clear()
        answer = seat.decide(req, game, game.legal_moves(), 60_000, "g")
        assert isinstance(answer, Choice)
        lines = "\n".join(shown).split("\n")
        assert len(lines) <= 40 and max(map(len, lines)) <= 100, "\n".join(lines)
        game.apply(game.legal_moves()[answer.index])
