"""``arena export OUTDIR``: the final table, per-format tables and every game as CSV and
JSON Lines, run as an organiser runs it (a subprocess of ``python -m arena.cli``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from arena.report.command import make_report
from arena.report.export import csv_safe, iter_games, write_export
from arena.store.tournament import STORE_NAME, Store

from .conftest import hand_games
from .helpers import game, make_store, result, scheduled

REPO = Path(__file__).resolve().parents[2]
BOTS = REPO / "bots"
HOSTILE = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\x1b[2Jplain"]


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="160")
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real round-robin of three bundled Python bots (2 and 3 players, 2 deals)."""
    root = tmp_path_factory.mktemp("export")
    twin = root / "python-random-2"
    shutil.copytree(BOTS / "python-random", twin)
    manifest = twin / "bot.toml"
    manifest.write_text(manifest.read_text().replace('"python-random"', '"python-random-2"'))
    out = root / "out"
    run = arena(
        "tournament",
        "--bots",
        str(BOTS / "python-greedy"),
        str(BOTS / "python-random"),
        str(twin),
        "--players",
        "2",
        "3",
        "--seeds",
        "2",
        "--workers",
        "2",
        "--sandbox",
        "off",
        "--bootstrap",
        "0",
        "--quiet",
        "--out",
        str(out),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def report_leaderboard(out: Path, *options: str) -> list[dict[str, object]]:
    run = arena("report", str(out), "--bootstrap", "0", *options)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((out / "report" / "report.json").read_text(encoding="utf-8"))
    board: list[dict[str, object]] = report["tables"]["leaderboard"]
    return board


def test_export_writes_every_game_and_the_reports_final_table(
    tournament: Path, tmp_path: Path
) -> None:
    target = tmp_path / "exported"
    run = arena("export", str(tournament), "--to", str(target), "--bootstrap", "0")
    assert run.returncode == 0, run.stdout + run.stderr
    with Store(tournament / STORE_NAME, readonly=True) as store:
        finished = store.finished_count()
        listing = {row[1]: row for row in store.game_listing()}
    assert finished == 24  # 3 pairs x 2 seatings x 2 deals (2p) + 1 trio x 6 x 2 (3p)

    games = read_jsonl(target / "games.jsonl")
    assert len(games) == finished
    for line in games:
        _, _, n_players, variant, end_reason, rounds, bots, scores, ranks = listing[line["game_id"]]
        seats = line["seats"]
        assert isinstance(seats, list) and len(seats) == n_players
        assert [s["bot"] for s in seats] == list(bots)
        assert [s["score"] for s in seats] == list(scores)
        assert [s["rank"] for s in seats] == list(ranks)
        assert (line["variant"], line["end_reason"], line["rounds"]) == (
            variant,
            end_reason,
            rounds,
        )
        assert isinstance(line["deal_seed"], int) and line["duration_s"] > 0

    rows = pd.read_csv(target / "games.csv")
    assert rows["game_id"].nunique() == finished
    assert len(rows) == sum(len(line["seats"]) for line in games)  # one row per seat
    first = games[0]
    seat_rows = rows[rows["game_id"] == first["game_id"]].sort_values("seat")
    assert list(seat_rows["bot"]) == [s["bot"] for s in first["seats"]]
    assert list(seat_rows["score"]) == [s["score"] for s in first["seats"]]

    board = report_leaderboard(tournament)
    assert read_jsonl(target / "final.jsonl") == board
    final = pd.read_csv(target / "final.csv")
    assert list(final["bot"]) == [r["bot"] for r in board]
    assert list(final["rank"]) == [r["rank"] for r in board]
    assert "wrote " + str(target / "games.csv") + " (24 games)" in run.stdout


def test_per_format_tables_add_up_to_the_reports_split_by_players(
    tournament: Path, tmp_path: Path
) -> None:
    run = arena("export", str(tournament), "--to", str(tmp_path), "--format", "csv")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not list(tmp_path.glob("*.jsonl"))
    formats = sorted(p.name for p in tmp_path.glob("format-*.csv"))
    assert formats == ["format-2p-coloured.csv", "format-3p-coloured.csv"]
    report = json.loads((tournament / "report" / "report.json").read_text(encoding="utf-8"))
    by_players = pd.DataFrame(report["tables"]["by_players"])
    for name, n in (("format-2p-coloured.csv", 2), ("format-3p-coloured.csv", 3)):
        in_file = pd.read_csv(tmp_path / name)
        assert in_file["win_rate"].is_monotonic_decreasing  # best first
        table = in_file.set_index("bot").sort_index()
        split = by_players[by_players["n_players"] == n].set_index("bot").sort_index()
        assert list(table["games"]) == list(split["games"])
        assert list(table["wins"]) == list(split["wins"])
        assert (table["n_players"] == n).all()


def test_the_final_table_follows_rank_by_points_as_the_report_does(
    tournament: Path, tmp_path: Path
) -> None:
    formula = "losses - points"  # ranks the weakest first: differs from TrueSkill's order
    options = ("--rank-by", "points", "--points", formula)
    run = arena("export", str(tournament), "--to", str(tmp_path), "--bootstrap", "0", *options)
    assert run.returncode == 0, run.stdout + run.stderr
    exported = read_jsonl(tmp_path / "final.jsonl")
    assert exported == report_leaderboard(tournament, *options)
    assert exported[0]["bot"] != "python-greedy"
    assert "points" in pd.read_csv(tmp_path / "final.csv").columns


def test_hostile_bot_names_are_written_as_data(tmp_path: Path) -> None:
    """A spreadsheet opening the CSV must not run a name as a formula; JSON keeps it raw."""
    games = [
        game(0, (HOSTILE[0], 40, 1), (HOSTILE[1], 30, 2)),
        game(1, (HOSTILE[2], 45, 1), (HOSTILE[3], 38, 2)),
        game(2, (HOSTILE[4], 10, 2), (HOSTILE[0], 20, 1)),
    ]
    out = make_store(tmp_path / "t", games)
    target = tmp_path / "x"
    run = arena("export", str(out), "--to", str(target), "--bootstrap", "0")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = pd.read_csv(target / "games.csv")
    cells = set(rows["bot"])
    assert cells == {"'" + name for name in HOSTILE[:4]} | {HOSTILE[4]}
    final = pd.read_csv(target / "final.csv")
    assert not any(str(b).startswith(("=", "+", "-", "@")) for b in final["bot"])
    assert all(str(b).startswith("'") for b in final["bot"] if str(b) != HOSTILE[4])
    names = {s["bot"] for line in read_jsonl(target / "games.jsonl") for s in line["seats"]}
    assert names == set(HOSTILE)
    assert "\x1b" not in run.stdout + run.stderr


def test_csv_safe_leaves_numbers_and_plain_text_alone() -> None:
    assert csv_safe(-3) == -3
    assert csv_safe("python-greedy") == "python-greedy"
    assert csv_safe("=1+1") == "'=1+1"
    assert csv_safe("\tx") == "'\tx"


def test_games_are_merged_with_their_own_seats_only(tmp_path: Path) -> None:
    """Games finished out of order, one still to play: each game gets exactly its seats."""
    out = make_store(tmp_path / "t", hand_games(), finish_order=[3, 0, 4, 2, 1, 5])
    with Store(out / STORE_NAME, readonly=True) as store:
        exported = list(iter_games(store))
        expected = [s for s in store.games(limit=100) if s.finished]
    assert [g["game_index"] for g in exported] == [s.game_index for s in expected]
    for line, summary in zip(exported, expected, strict=True):
        seats = line["seats"]
        assert [s["bot"] for s in seats] == list(summary.bots)
        assert [s["score"] for s in seats] == list(summary.scores)
    forfeited = exported[4]["seats"][2]
    assert (forfeited["forfeit"], forfeited["fault"]) == (True, "malformed")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_games_stream_from_either_database(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    """Two streams (games, seats) at once, in one snapshot: SQLite and PostgreSQL alike."""
    where = (
        str(tmp_path / STORE_NAME)
        if backend == "sqlite"
        else str(request.getfixturevalue("postgres_url"))
    )
    games = hand_games()
    with Store(where) as store:
        store.save_schedule([scheduled(g) for g in games])
        for g in games:
            if g.finished:
                store.add_result(result(g))
    with Store(where, readonly=True) as store, store.snapshot():
        exported = list(iter_games(store))
    finished = [g for g in games if g.finished]
    assert [line["game_id"] for line in exported] == [scheduled(g).game_id for g in finished]
    for line, g in zip(exported, finished, strict=True):
        assert [(s["bot"], s["score"], s["rank"]) for s in line["seats"]] == [
            (s.bot, s.score, s.rank) for s in g.seats
        ]


def test_an_export_says_when_games_finished_after_the_final_table(tmp_path: Path) -> None:
    games = hand_games()
    out = make_store(tmp_path / "t", games)
    report = make_report(out, bootstrap=0)
    with Store(out / STORE_NAME, readonly=True) as store:
        assert write_export(report, store, tmp_path / "a", "jsonl").same_snapshot
    with Store(out / STORE_NAME) as store:
        store.add_result(result(games[5]))  # finished while the export was starting
    with Store(out / STORE_NAME, readonly=True) as store:
        late = write_export(report, store, tmp_path / "b", "jsonl")
    assert not late.same_snapshot
    assert len(read_jsonl(tmp_path / "b" / "games.jsonl")) == 6
    # the final table still counts the 5 games it was rated from (12 seats), not the 6th
    assert sum(r["games"] for r in read_jsonl(tmp_path / "b" / "final.jsonl")) == 12


@pytest.mark.parametrize("where", ["under-a-file", "a-file"])
def test_an_unwritable_target_is_one_line_and_exit_2(tmp_path: Path, where: str) -> None:
    out = make_store(tmp_path / "t", hand_games())
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder\n")
    target = blocker / "sub" if where == "under-a-file" else blocker
    run = arena("export", str(out), "--to", str(target), "--bootstrap", "0")
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write the export to")
    assert blocker.read_text() == "not a folder\n"


def test_a_folder_without_a_store_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run = arena("export", str(tmp_path / "nowhere"))
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().startswith("error:") and len(run.stderr.strip().splitlines()) == 1
