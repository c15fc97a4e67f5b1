"""check-bot's findings are worded once: the terminal and a submission's log show the
same sentences, bot text made safe in each (rich markup escaped on the terminal)."""

from __future__ import annotations

import io

from rich.console import Console

from arena.engine.record import FaultRecord
from arena.play.checkbot import CheckReport
from arena.play.verdict import check_lines, fault_evidence, first_problem, passed
from arena.referee.clock import TimeControl

TC = TimeControl(move_ms=400, init_ms=2000)


def _failed() -> CheckReport:
    tail = "\n".join(f"line {i}" for i in range(1, 9)) + "\n[bold]boom\x1b[2J"
    fault = FaultRecord(
        seat=1,
        kind="malformed",
        round=2,
        message="the reply is not JSON",
        last_message='{"type": "ready", "x": "[red]"}',
        stderr_tail=tail,
        forfeit=True,
    )
    return CheckReport(
        name="b",
        language="python",
        spawn_ms=12,
        handshake_ms=30,
        init_ms=2000,
        reported={"name": "b", "author": "[/red]\x1b]52;c;x\x07", "version": None},
        games=1,
        played={(2, "coloured"): 1},
        scores=[7],
        think_ms=[1.0, 3.0],
        faults=[("2-player coloured game (seat 1)", fault)],
    )


def _printed(markup: str) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(markup)
    return out.getvalue()


def test_the_log_and_the_terminal_say_the_same_things() -> None:
    report = _failed()
    log = check_lines(report, TC, terminal=False)
    terminal = [_printed(line).rstrip("\n") for line in check_lines(report, TC, terminal=True)]
    handshake = "handshake 30 ms wall (limit 2000 ms); says: name b, author [/red]\\x1b]52;c;x\\x07"
    assert handshake in log
    assert "games 1 vs random (2p coloured): 0 won, mean score 7.0" in log
    assert "malformed in the 2-player coloured game (seat 1), round 2: the reply is not JSON" in (
        log
    )
    assert any(line.startswith("how to fix malformed: Each reply") for line in log)
    assert any(line.startswith("why: The bot wrote {") for line in log)  # not a move
    # The terminal: the same sentences, labels aligned, the markup in bot text shown as text.
    assert (
        "  handshake      30 ms wall (limit 2000 ms); says: name b, author [/red]\\x1b]52;c;x\\x07"
        in (terminal)
    )
    assert "  games          1 vs random (2p coloured): 0 won, mean score 7.0" in terminal
    assert "  malformed in the 2-player coloured game (seat 1), round 2: the reply is not JSON" in (
        terminal
    )
    assert '      last line: {"type": "ready", "x": "[red]"}' in terminal
    text = "\n".join(terminal)
    assert "\x1b" not in text and "\x1b" not in "\n".join(log)


def test_a_terminal_shows_the_end_of_a_stderr_tail_and_a_log_all_of_it() -> None:
    (fault,) = (f for _, f in _failed().faults)
    (_, log_tail) = fault_evidence(fault, "  ", terminal=False)
    (_, shown) = fault_evidence(fault, "  ", terminal=True)
    assert log_tail.splitlines()[1:3] == ["    line 1", "    line 2"]
    assert log_tail.endswith("    [bold]boom\\x1b[2J")
    lines = _printed(shown).splitlines()
    assert lines[0] == "  stderr tail:" and len(lines) == 1 + 5
    assert lines[-1] == "    [bold]boom\\x1b[2J" and lines[1] == "    line 5"


def test_one_line_verdicts() -> None:
    failed = _failed()
    assert first_problem(failed) == (
        "malformed in the 2-player coloured game (seat 1), round 2: the reply is not JSON"
    )
    failed.problems.append("building b failed: exit status 2\nbot.c:1: error")
    assert first_problem(failed) == "building b failed: exit status 2"
    assert first_problem(CheckReport(name="b")) == "no game was played"
    good = CheckReport(name="b", games=6, wins=4, scores=[1] * 6)
    assert passed(good) == (
        "passed check-bot (6 games, 2-4 players, both walls, 4 won against the random policy)"
    )
    good.played = {(2, "coloured"): 3, (4, "coloured"): 3}
    assert passed(good) == (
        "passed check-bot (6 games, 2 and 4 players, coloured wall, "
        "4 won against the random policy)"
    )


def test_a_multiline_problem_keeps_its_lines_indented() -> None:
    report = CheckReport(name="b", problems=["building b failed\n[red]error: x"])
    (log,) = check_lines(report, TC, terminal=False)
    (terminal,) = check_lines(report, TC, terminal=True)
    assert log == "problem: building b failed\n  [red]error: x"
    assert _printed(terminal) == "  problem building b failed\n      [red]error: x\n"
