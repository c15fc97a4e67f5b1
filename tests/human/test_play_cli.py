"""`arena play BOT --human` on a 100x40 pseudo terminal, as a person runs it."""

from __future__ import annotations

import shutil
from pathlib import Path

from arena.recordio import load_record

from .pty_person import COLUMNS, REPO, ROWS, play_in_pty

SCRIPTED_BOT = REPO / "tests" / "referee" / "fixtures" / "scripted_bot.py"
GENEROUS = ["--time-per-move", "60000", "--init-time", "60000"]
"""A loaded host must not add faults of its own to these games."""
OFF = ["--sandbox", "off", *GENEROUS]
"""No sandbox (tested elsewhere; its uid pool is shared machine-wide)."""


def crashing_bot(root: Path, name: str = "quitter") -> Path:
    """A bot that plays two moves, then exits (at its third decision)."""
    folder = root / name
    folder.mkdir()
    shutil.copy(SCRIPTED_BOT, folder / "bot.py")
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nlanguage = "python"\ncommand = "/usr/bin/python3 bot.py crash 3"\n'
    )
    return folder


def test_a_bot_that_faults_is_shown_as_faulted_on_the_end_screen(tmp_path: Path) -> None:
    bot = crashing_bot(tmp_path)
    out = tmp_path / "game"
    session = play_in_pty(
        [str(bot), "--human", "--seed", "3", "--round-limit", "2", *OFF, "--out", str(out)]
    )
    assert session.returncode == 0, session.text[-2000:]
    record = load_record(out / "record.json")
    assert [(f.seat, f.kind, f.forfeit) for f in record.faults] == [(1, "crash", True)]
    fault_round = record.faults[0].round
    end = session.text[session.text.rindex("Game over") :]
    assert (
        f"quitter faulted (crash, round {fault_round}): "
        "its moves were played at random from then on"
    ) in end
    assert "Traceback" not in session.text


def test_terminal_play_fits_100x40_announces_the_bot_and_colours_tiles(tmp_path: Path) -> None:
    """Against the compiled c-greedy, sandboxed as by default (README's example): it plays
    its own moves (no fault), each announced in words; every screen fits 100x40."""
    out = tmp_path / "game"
    c_greedy = str(REPO / "bots" / "c-greedy")
    session = play_in_pty(
        [c_greedy, "--human", "--seat", "1", "--round-limit", "1", *GENEROUS, "--out", str(out)]
    )
    assert session.returncode == 0, session.text[-2000:]
    record = load_record(out / "record.json")
    assert record.faults == []
    bot_moves = sum(d.seat == 0 for r in record.rounds for d in r.decisions)
    assert session.text.count("c-greedy took ") == bot_moves
    assert len(session.screens) == sum(d.seat == 1 for r in record.rounds for d in r.decisions)
    for screen in session.screens:
        lines = screen.rstrip("\n").split("\n")
        assert len(lines) <= ROWS, screen
        assert max(len(line) for line in lines) <= COLUMNS, screen
        assert "Round 1 ·" in screen and "Legal moves:" in screen
    assert b"\x1b[97;44mB\x1b[0m" in session.raw  # blue tiles are blue on a terminal
    assert "faulted" not in session.text


def test_no_color_turns_the_tiles_plain(tmp_path: Path) -> None:
    session = play_in_pty(
        [str(REPO / "bots" / "python-random"), "--human", "--round-limit", "1", *OFF],
        env={"NO_COLOR": "1"},
    )
    assert session.returncode == 0, session.text[-2000:]
    assert session.screens and b"\x1b[97;44m" not in session.raw
    assert "python-random took " in session.text


def test_gray_wall_columns_are_answered_with_a_digit(tmp_path: Path) -> None:
    out = tmp_path / "game"
    bot = str(REPO / "bots" / "python-random")
    session = play_in_pty(
        [bot, "--human", "--variant", "gray", "--round-limit", "1", *OFF, "--out", str(out)]
    )
    assert session.returncode == 0, session.text[-2000:]
    record = load_record(out / "record.json")
    mine = [d for r in record.rounds for d in r.decisions if d.seat == 0]
    places = [d for d in mine if d.move.startswith("col")]
    assert places and not any(d.auto for d in mine)
    assert sum("Your wall column for line" in screen for screen in session.screens) == len(places)
