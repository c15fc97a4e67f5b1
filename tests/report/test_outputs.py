"""``report_command`` and the files it writes: Markdown, CSV, JSON, self-contained HTML."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
from rich.console import Console

from arena.report import (
    build_report,
    html_path,
    leaderboard_table,
    load_results,
    report_command,
    report_dir,
)
from arena.report.plots import MAX_POINTS, thin
from arena.store.tournament import STORE_NAME

from .conftest import hand_games
from .helpers import game, make_store

TABLES = {
    "leaderboard",
    "host_load",
    "head_to_head",
    "head_to_head_pairs",
    "seat_advantage",
    "by_variant",
    "by_players",
    "faults",
    "rating_history",
}


def console() -> Console:
    return Console(record=True, width=200, color_system=None)


def test_command_prints_the_leaderboard_and_writes_every_file(hand_outdir: Path) -> None:
    out = console()
    assert report_command(hand_outdir, console=out, bootstrap=10) == 0
    text = out.export_text()
    assert "5/6 games finished" in text
    assert all(bot in text for bot in ("alpha", "beta", "gamma"))
    assert "Rank 95%" in text
    folder = report_dir(hand_outdir)
    for name in ("report.md", "report.html", "report.json", *(f"{t}.csv" for t in TABLES)):
        assert (folder / name).is_file(), name
    assert not list(folder.glob(".*.tmp"))
    assert html_path(hand_outdir) == folder / "report.html"
    assert str(html_path(hand_outdir)) in text.replace("\n", "")


def test_csv_and_json_hold_the_raw_figures(hand_outdir: Path) -> None:
    assert report_command(hand_outdir, console=console(), bootstrap=10) == 0
    folder = report_dir(hand_outdir)
    csv = pd.read_csv(folder / "leaderboard.csv").set_index("bot")
    assert csv.loc["alpha", "wins"] == 3
    assert csv.loc["beta", "faults_timeout"] == 1
    data = json.loads((folder / "report.json").read_text())
    assert set(data["tables"]) == TABLES
    assert data["summary"]["finished"] == 5 and data["summary"]["scheduled"] == 6
    alpha = next(r for r in data["tables"]["leaderboard"] if r["bot"] == "alpha")
    assert alpha["mean_margin"] == 3.0 and alpha["win_rate"] == 0.6
    pairs = pd.read_csv(folder / "head_to_head_pairs.csv")
    assert len(pairs) == 6  # 3 bots, every ordered pair met
    faults = pd.read_csv(folder / "faults.csv")
    stored = data["tables"]["faults"]
    kinds = [c for c in csv.columns if c.startswith("faults_")]
    assert len(faults) == len(stored) == int(csv[kinds].to_numpy().sum()) > 0
    assert set(faults["kind"]) <= {"timeout", "crash", "malformed", "illegal", "init"}
    assert faults["game_id"].notna().all()
    assert (faults.loc[faults["kind"] == "timeout", "bot"] == "beta").any()


def test_markdown_has_every_table(hand_outdir: Path) -> None:
    assert report_command(hand_outdir, console=console(), bootstrap=10) == 0
    md = (report_dir(hand_outdir) / "report.md").read_text()
    titles = ("Leaderboard", "Head-to-head", "Seat advantage", "By variant", "By player count")
    for title in (*titles, "Faults"):
        assert f"## {title}" in md
    assert "5/6 games finished" in md
    assert re.search(r"^\| # \| Bot \| Version \| Rating \|", md, re.MULTILINE)
    assert re.search(r"^\| \d \| alpha \|", md, re.MULTILINE)


def test_html_is_self_contained_with_tables_and_plot(hand_outdir: Path) -> None:
    assert report_command(hand_outdir, console=console(), bootstrap=10) == 0
    html = html_path(hand_outdir).read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert "<style" in html and html.count("<table") >= 6
    assert "<svg" in html and "Rating over games" in html
    assert 'id="T_h2h"' in html and "background-color" in html  # the heatmap
    for bot in ("alpha", "beta", "gamma"):
        assert bot in html


def test_missing_store_exits_2_with_one_line(tmp_path: Path) -> None:
    out = console()
    assert report_command(tmp_path, console=out, bootstrap=10) == 2
    text = out.export_text().strip()
    assert "no tournament store here" in text
    assert len(text.splitlines()) == 1 and "Traceback" not in text
    assert not report_dir(tmp_path).exists()
    assert report_command(tmp_path / "nope", console=console()) == 2


def test_invalid_store_exits_2(tmp_path: Path) -> None:
    (tmp_path / STORE_NAME).write_text("not a database")
    out = console()
    assert report_command(tmp_path, console=out, bootstrap=10) == 2
    assert "not a usable tournament store" in out.export_text()


def test_no_finished_games_yet(tmp_path: Path) -> None:
    outdir = make_store(tmp_path, [replace(g, finished=False) for g in hand_games()])
    out = console()
    assert report_command(outdir, console=out, bootstrap=10) == 0
    assert "0/6 games finished" in out.export_text()
    assert html_path(outdir).is_file()


def test_write_false_writes_nothing(hand_outdir: Path) -> None:
    assert report_command(hand_outdir, console=console(), bootstrap=0, write=False) == 0
    assert not report_dir(hand_outdir).exists()


def test_leaderboard_table_for_the_runner(tmp_path: Path) -> None:
    outdir = make_store(tmp_path, hand_games()[:5])
    report = build_report(load_results(outdir), bootstrap=0)
    table = leaderboard_table(report.leaderboard)
    assert table.row_count == 3
    assert table.title == "Leaderboard"
    running = leaderboard_table(report.leaderboard, finished=2, scheduled=9)
    assert "2/9 games finished" in str(running.title)


def test_unwritable_report_folder_exits_1(hand_outdir: Path) -> None:
    report_dir(hand_outdir).write_text("a file where the folder should be")
    out = console()
    assert report_command(hand_outdir, console=out, bootstrap=0) == 1
    assert "cannot write the report" in out.export_text()


def test_long_histories_are_thinned_for_the_plot_only() -> None:
    history = pd.DataFrame({"game": range(1, 4001), "x": [0.0] * 4000})
    thinned = thin(history)
    assert len(thinned) <= MAX_POINTS + 1
    assert thinned["game"].iloc[0] == 1 and thinned["game"].iloc[-1] == 4000
    assert thin(history.iloc[:50]).equals(history.iloc[:50])


def test_bot_names_are_text_not_markup(tmp_path: Path) -> None:
    """Bot names come from manifests: they must not inject HTML or rich markup."""
    evil = "<script>x</script>[bold]b[/] $x"
    outdir = make_store(tmp_path, [game(0, (evil, 40, 1), ("plain", 30, 2))])
    out = console()
    assert report_command(outdir, console=out, bootstrap=0) == 0
    assert evil in out.export_text()
    html = html_path(outdir).read_text()
    assert "<script" not in html
    assert "&lt;script&gt;x&lt;/script&gt;[bold]b[/] $x" in html
    md = (report_dir(outdir) / "report.md").read_text()
    assert evil in md


def test_files_are_reproducible(hand_outdir: Path) -> None:
    """Same finished games, same bytes (no timestamps, fixed SVG ids, seeded bootstrap)."""
    assert report_command(hand_outdir, console=console(), bootstrap=10) == 0
    folder = report_dir(hand_outdir)
    first = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert report_command(hand_outdir, console=console(), bootstrap=10) == 0
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == first
