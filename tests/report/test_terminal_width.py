"""The terminal leaderboard at 80 columns: ranks, names and faults are never hidden."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from arena.report import build_report, load_results
from arena.report.command import report_command
from arena.tournament.store import FaultRow

from .helpers import Seat, game, make_store

LONG = "a-bot-with-a-rather-long-descriptive-name-v2"


def faulty_outdir(tmp_path: Path) -> Path:
    games = []
    for i in range(48):
        games.append(
            game(
                i,
                Seat("clean", 40, 1),
                Seat(LONG, 10 + i % 7, 2, forfeit=True, fault="timeout"),
                ("third", 20, 2) if i % 2 else ("third", 5, 3),
                faults=(
                    FaultRow(1, LONG, "timeout", 2, f"no move within 1000 ms (game {i})", True),
                ),
            )
        )
    games.append(
        game(
            48,
            ("clean", 30, 1),
            Seat("third", 20, 2, fault="malformed"),
            faults=(FaultRow(1, "third", "malformed", 1, "not JSON\x1b[31m red", False),),
        )
    )
    return make_store(tmp_path / "t", games)


def test_the_leaderboard_fits_80_columns_with_ranks_names_and_faults(tmp_path: Path) -> None:
    outdir = faulty_outdir(tmp_path)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    assert report_command(outdir, console=console, bootstrap=0, write=False) == 0
    text = console.export_text()
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "…" not in text  # nothing truncated
    header = next(line for line in lines if line.lstrip().startswith("#"))
    for column in ("#", "Bot", "Rating", "Games", "Faults"):
        assert column in header
    board = text.split("Faults by bot and kind")[0]
    start = header.index("Bot")
    body = board.splitlines()[board.splitlines().index(header) + 2 :]
    names = "".join(line[start:].split("  ")[0].strip() for line in body)
    assert LONG in names  # wrapped over lines, never cut
    faults = "".join(line[header.index("Faults") :].strip() for line in body)
    assert "timeout 48" in faults and "malformed 1" in faults
    for rank in ("1", "2", "3"):
        assert any(line.split()[:1] == [rank] for line in lines)


def test_faults_are_grouped_by_bot_and_kind(tmp_path: Path) -> None:
    outdir = faulty_outdir(tmp_path)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    report_command(outdir, console=console, bootstrap=0, write=False)
    groups = console.export_text().split("Faults by bot and kind")[1]
    squashed = " ".join(groups.split())
    assert "timeout 48 48" in squashed  # one row: count 48, forfeits 48 (not 48 rows)
    assert re.findall(r"g000\d\d", squashed) == ["g00000", "g00048"]  # one example each
    assert "malformed 1 0" in squashed
    assert "\x1b" not in console.export_text(styles=False)  # bot text cannot drive the terminal


def test_wide_terminals_get_every_column(tmp_path: Path) -> None:
    report = build_report(load_results(faulty_outdir(tmp_path)), bootstrap=0)
    from arena.report.terminal import leaderboard_table

    table = leaderboard_table(report.leaderboard, width=200)
    headers = [str(c.header) for c in table.columns]
    assert headers == [
        "#", "Bot", "Rating", "Rank 95%", "Games", "Win %", "Score", "Margin", "Faults", "Think ms"
    ]  # fmt: skip
    narrow = leaderboard_table(report.leaderboard, width=60)
    assert [str(c.header) for c in narrow.columns] == ["#", "Bot", "Rating", "Games", "Faults"]
