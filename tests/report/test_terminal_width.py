"""The terminal leaderboard at 80 columns: ranks, names and faults are never hidden."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from arena.play.job import FaultRow
from arena.report import build_report, load_results
from arena.report.command import report_command
from arena.report.terminal import layout, leaderboard_table
from arena.textsafe import visible

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
    header = next(line for line in lines if line.lstrip().startswith("#"))
    for column in ("#", "Bot", "Rating", "Games", "Faults"):
        assert column in header
    board = text.split("Faults by bot and kind")[0].split("Rating = ")[0]
    start = header.index("Bot")
    body = [
        line for line in board.splitlines()[board.splitlines().index(header) + 2 :] if line.strip()
    ]
    assert len(body) == 3  # one line per bot: nothing wraps
    row = next(line for line in body if line.split()[0] == "2")
    shown = row[start:].split("  ")[0].strip()
    head, tail = shown.split("…")  # elided in the middle, never wrapped
    assert LONG.startswith(head) and LONG.endswith(tail) and len(head) > 8 and tail.endswith("-v2")
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


HOSTILE = [
    LONG,
    LONG.replace("-v2", "-v3"),  # shares all but its end with LONG
    "python-greedy",
    "python-greedy-experimental-branch-number-2",  # shares a prefix with python-greedy
    "evil\x1b[2J\x1b]0;pwned\x07-clears-your-screen",
    "外国語のボット名前です長い名前のボット",  # two cells per character
    "bidi\u202eeman-desrever-a-si-siht",
    "x",
]


def hostile_outdir(tmp_path: Path) -> Path:
    """Every bot plays every other 4 times; every bot but "x" times out in each game."""
    games = []
    for i, (a, b) in enumerate((a, b) for a in HOSTILE for b in HOSTILE if a < b for _ in range(4)):
        faults = tuple(
            FaultRow(seat, bot, "timeout", 1, "slow", False)
            for seat, bot in enumerate((a, b))
            if bot != "x"
        )
        games.append(game(i, (a, 30 + i % 5, 1), (b, 20, 2), faults=faults))
    return make_store(tmp_path / "t", games)


@pytest.mark.parametrize("width", [80, 60])
def test_long_and_hostile_names_are_elided_distinctly_on_one_line(
    tmp_path: Path, width: int
) -> None:
    report = build_report(load_results(hostile_outdir(tmp_path)), bootstrap=0)
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(leaderboard_table(report.leaderboard, width=width))
    text = console.export_text()
    lines = text.splitlines()
    assert all(cell_len(line) <= width for line in lines), max(lines, key=cell_len)
    assert not any(c in text for c in "\x1b\x07\u202e")  # shown as escapes, never obeyed
    fit = layout(report.leaderboard, width)
    assert fit.names is not None and {"#", "Bot", "Faults"} <= set(fit.columns)
    shown = list(fit.names.values())
    assert len(set(shown)) == len(HOSTILE)  # no two alike
    for name, short in fit.names.items():
        full = visible(name)
        assert cell_len(short) <= 30
        if short != full:
            head, tail = short.split("…")
            assert full.startswith(head) and full.endswith(tail) and head and tail
    assert fit.names[LONG] != fit.names[LONG.replace("-v2", "-v3")]
    assert fit.names["python-greedy"] == "python-greedy"  # short names stay whole
    header = next(line for line in lines if line.lstrip().startswith("#"))
    body = [line for line in lines[lines.index(header) + 2 :] if line.strip()][: len(HOSTILE)]
    assert "Rating = " in lines[lines.index(body[-1]) + 2]  # and nothing after the last bot
    ranks = [line.split()[0] for line in body]
    assert ranks == [str(r) for r in report.leaderboard["rank"]]  # one line per bot
    for line, bot in zip(body, report.leaderboard["bot"], strict=True):
        assert fit.names[bot] in line
        assert ("timeout 28" in line) == (bot != "x")  # 7 opponents x 4 games, all faulted


def test_the_fault_groups_elide_names_too(tmp_path: Path) -> None:
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    report_command(hostile_outdir(tmp_path), console=console, bootstrap=0, write=False)
    groups = console.export_text().split("Faults by bot and kind")[1]
    rows = [line for line in groups.splitlines() if " timeout " in line]
    assert len(rows) == len(HOSTILE) - 1  # one row per bot and kind, each on one line
    assert all(r.split()[-4:-2] == ["28", "0"] for r in rows if "slow" in r)
    assert sum("…" in r for r in rows) >= 4 and all(cell_len(r) <= 80 for r in rows)


def test_the_stored_leaderboard_of_a_rerun_shows_faults_and_fits(tmp_path: Path) -> None:
    from arena.report.current import stored_leaderboard
    from arena.store.tournament import STORE_NAME, Store
    from arena.tournament.ledger import RatingLedger

    outdir = hostile_outdir(tmp_path)
    with Store(outdir / STORE_NAME) as store:
        RatingLedger(store).advance()
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(stored_leaderboard(outdir, width=80))
    lines = console.export_text().splitlines()
    assert all(cell_len(line) <= 80 for line in lines), max(lines, key=cell_len)
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split() == ["#", "Bot", "Version", "Rating", "Games", "Win", "%", "Faults"]
    body = [line for line in lines[lines.index(header) + 2 :] if line.strip()][: len(HOSTILE)]
    assert [line.split()[0] for line in body] == [str(i) for i in range(1, len(HOSTILE) + 1)]
    assert sorted(line.split()[-1] for line in body) == ["0"] + ["28"] * (len(HOSTILE) - 1)
    assert "\x1b" not in console.export_text() and any("…" in line for line in body)
