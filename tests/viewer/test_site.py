"""The report site: index, games, bot pages and replays, from a real small tournament."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
from rich.console import Console

from arena.report import site as site_module
from arena.report.command import make_report, report_command
from arena.report.site import REPLAY_STAMP, slug, write_site


@pytest.fixture(scope="module")
def site(small_tournament: Path) -> Path:
    console = Console(file=open("/dev/null", "w"), width=80)  # noqa: SIM115
    assert report_command(small_tournament, console=console, bootstrap=0) == 0
    return small_tournament / "report"


def test_the_site_has_every_page(site: Path) -> None:
    assert (site / "index.html").is_file() and (site / "games.html").is_file()
    assert {p.name for p in (site / "bots").iterdir()} == {
        "chatty.html",
        "faulty.html",
        "python-random.html",
    }
    # 12 games: one replay page (a block of up to BLOCK games), every game in it once
    (block,) = (site / "replays").glob("*.html")
    assert block.read_text().count('class="azul-game"') == 12
    for name in ("viewer.js", "viewer.css", "site.js"):
        assert (site / name).stat().st_size > 1000


def test_replays_link_the_shared_script_and_hold_only_data(site: Path) -> None:
    page = next((site / "replays").glob("*.html")).read_text()
    assert page.startswith(REPLAY_STAMP)
    assert '<script src="../viewer.js"></script>' in page
    assert "function drawBoard" not in page
    assert len(page) < 12 * 60_000


def test_replay_data_from_stored_frames_equals_the_engine_s(small_tournament: Path) -> None:
    """The tournament stored each game's frames when it was played; the page's data
    assembled from them is exactly what the engine draws from the record."""
    import orjson

    from arena.engine import GameRecord
    from arena.store.tournament import STORE_NAME, Store
    from arena.viewer.frames import assemble, assemble_json, viewer_data
    from arena.viewer.page import script_safe

    with Store(small_tournament / STORE_NAME, readonly=True) as store:
        ids = dict(store.game_ids())
        for index, game_id in ids.items():
            source = store.replay_source(index)
            assert source is not None and source[1] is not None  # stored when played
            record, frames = source
            drawn = viewer_data(GameRecord.model_validate_json(record), game_id)
            assert assemble(orjson.loads(record), orjson.loads(frames), game_id) == drawn
            assert orjson.loads(assemble_json(record, frames, game_id)) == drawn  # spliced
            page_json = script_safe(assemble_json(record, frames, game_id))
            assert "<" not in page_json and orjson.loads(page_json) == drawn


def test_a_store_without_frames_gets_the_same_replays(
    small_tournament: Path, site: Path, tmp_path: Path
) -> None:
    """Stores written before frames were stored: the report draws them with the engine."""
    import sqlite3

    from arena.store.tournament import STORE_NAME

    copy = tmp_path / "old"
    copy.mkdir()
    shutil.copy(small_tournament / STORE_NAME, copy / STORE_NAME)
    db = sqlite3.connect(copy / STORE_NAME)  # as an older arena left it: no replays table
    db.execute("DROP TABLE replays")
    db.commit()
    db.close()
    files = write_site(make_report(copy, bootstrap=0), copy)
    assert (files.problems, files.replays_written) == ([], 12)
    (ours,) = (site / "replays").glob("*.html")
    assert (copy / "report" / "replays" / ours.name).read_text() == ours.read_text()


def test_index_shows_settings_date_versions_and_links(site: Path) -> None:
    index = (site / "index.html").read_text()
    for text in ("10000 ms per decision", "fault policy", "forfeit", "master seed", "UTC"):
        assert text in index
    assert 'href="bots/faulty.html"' in index and 'href="games.html"' in index
    assert "A. &lt;Tester&gt; &amp; co" in index  # bot.toml text is escaped
    assert re.search(r"<code>[0-9a-f]{12}</code>", index)  # the folder's version hash


def test_a_bot_page_groups_its_faults_with_one_example(site: Path) -> None:
    page = (site / "bots" / "faulty.html").read_text()
    groups = re.findall(
        r'data-kind="(\w+)"><strong>\w+</strong> ×\s*<span class="az-count">(\d+)', page
    )
    assert groups == [("malformed", "8")]  # one group: 8 games, 8 faults, one example
    assert page.count("this is not json") == 1
    assert 'href="../replays/' in page  # the example and worst losses link to replays


def test_existing_replays_are_kept(small_tournament: Path, site: Path) -> None:
    report = make_report(small_tournament, bootstrap=0)
    files = write_site(report, small_tournament)
    assert (files.replays_written, files.replays_kept) == (0, 12)


def test_a_replay_page_cut_short_or_of_an_older_report_is_redrawn(
    small_tournament: Path, site: Path
) -> None:
    (block,) = (site / "replays").glob("*.html")
    whole = block.read_text()
    report = make_report(small_tournament, bootstrap=0)
    block.write_text(whole[: len(whole) // 2])  # a crash while writing it
    old = site / "replays" / "2p-coloured-d0-a+b-r0.html"  # a page of an earlier report
    old.write_text("<!-- azul-arena replay page v2 -->\n<!doctype html>")
    mine = site / "replays" / "notes.html"  # not a report's page: left alone
    mine.write_text("my notes")
    files = write_site(report, small_tournament)
    assert (files.replays_written, files.replays_kept) == (12, 0)
    assert block.read_text() == whole and not old.exists() and mine.exists()
    mine.unlink()


def test_slugs_are_safe_and_distinct() -> None:
    assert slug("a/b") != slug("a_b") and "/" not in slug("a/b")
    assert slug("..") != ".." and slug("ok-name.v2") == "ok-name.v2"


def test_arena_view_of_a_tournament_game(
    small_tournament: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.cli import main

    game_id = "2p-gray-d0-chatty+faulty-r1"
    assert main(["view", str(small_tournament), "--game", game_id, "--out", str(tmp_path)]) == 0
    page = (tmp_path / f"{game_id}.html").read_text()
    assert "function drawBoard" in page  # standalone: the viewer is inlined
    assert main(["view", str(small_tournament), "--game", "nope"]) == 2
    assert "no game 'nope'" in capsys.readouterr().err


def test_bot_pages_show_what_the_bot_announced_in_ready(site: Path) -> None:
    chatty = (site / "bots" / "chatty.html").read_text()
    facts = dict(
        re.findall(r'<th class="az-text">([^<]+)</th>\s*<td class="az-text">([^<]*)</td>', chatty)
    )
    # control characters made visible, then HTML-escaped: no markup, no escape, no bidi override
    assert facts["author"] == "Eve \\x1b[2J&lt;img src=x onerror=alert(1)&gt;"
    assert facts["version (from ready)"] == "2.0\\u202erc"
    assert facts["language"] == "python" and "name it announced" not in facts
    assert re.fullmatch(r"[0-9a-f]{12}", facts["build (content hash)"])
    assert "<img" not in chatty and "\x1b" not in chatty and "\u202e" not in chatty
    faulty = (site / "bots" / "faulty.html").read_text()
    assert "A. &lt;Tester&gt; &amp; co" in faulty  # bot.toml's author
    assert re.search(r"version \(from ready\)</th>\s*<td class=\"az-text\">—<", faulty)
    # the scripted bot calls itself after its mode: shown, since it differs from its name
    assert re.search(r"name it announced</th>\s*<td class=\"az-text\">malformed<", faulty)


def test_the_index_lists_language_author_and_announced_version(site: Path) -> None:
    index = (site / "index.html").read_text()
    table = index.split('id="bots"')[1].split("</table>")[0]
    rows = {
        cells[0]: cells[1:]
        for cells in (
            [
                re.sub(r"<[^>]+>", "", c).strip()
                for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            ]
            for row in table.split("<tr>")[2:]
        )
    }
    language, author, version, build, games = rows["chatty"]
    assert (language, version, games) == ("python", "2.0\\u202erc", "8")
    assert (
        author == "Eve \\x1b[2J&lt;img src=x onerror=alert(1)&gt;"
    )  # from ready: no bot.toml author
    assert re.fullmatch(r"[0-9a-f]{12}", build)
    assert rows["faulty"][1] == "A. &lt;Tester&gt; &amp; co"  # bot.toml's author first
    assert rows["python-random"][2] == "1"  # python-random announces version "1"


def test_report_html_groups_faults_by_bot_and_kind(site: Path) -> None:
    html = (site / "report.html").read_text()
    section = html.split('id="faults"')[1].split("<h2")[0]
    rows = [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", section, re.S)
        if "<td" in row
    ]
    assert len(rows) == 1  # 8 faults of one bot and kind: one row, not eight
    bot, kind, count, forfeits, game, round_, message = rows[0]
    assert (bot, kind, count, forfeits) == ("faulty", "malformed", "8", "8")
    assert game.startswith("2p-") and "faulty" in game and round_.isdigit() and message
    board = html.split('id="leaderboard"')[1].split("<h2")[0]
    headers = re.findall(r"<th[^>]*>(.*?)</th>", board)
    assert "Faults" in headers and "Malformed" not in headers  # one column, not one per kind
    assert "malformed 8" in board


def test_a_second_report_parses_no_record(
    small_tournament: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = {p: p.read_text() for p in site.rglob("*.html")}
    report = make_report(small_tournament, bootstrap=0)

    class Unparsable:
        @staticmethod
        def model_validate_json(blob: bytes) -> None:
            raise AssertionError("a record was parsed: rows and replays come from the store")

    with monkeypatch.context() as patched:
        patched.setattr(site_module, "GameRecord", Unparsable)
        files = write_site(report, small_tournament)
    assert files.problems == [] and files.replays_kept == 12
    assert {p: p.read_text() for p in site.rglob("*.html")} == pages


def _row(
    index: int, players: list[str], totals: list[int], ranks: list[int]
) -> site_module.GameRow:
    return site_module.GameRow(
        index, f"g{index}", len(players), "coloured", "normal", 5, players, totals, ranks
    )


def test_worst_losses_are_each_bot_s_widest_margins(tmp_path: Path) -> None:
    """Ranked by the store in SQL, equal to a plain sort of every loss."""
    import random

    from arena.store.tournament import STORE_NAME, Store
    from tests.report.helpers import game, make_store

    rng = random.Random(7)
    bots = ["a", "b", "c", "d", "e"]
    games = []
    for index in range(400):
        players = rng.sample(bots, rng.choice((2, 4)))
        totals = [rng.randrange(0, 60) for _ in players]
        ranks = [1 + sum(o > t for o in totals) for t in totals]
        games.append(game(index, *zip(players, totals, ranks, strict=True)))
    make_store(tmp_path, games)
    with Store(tmp_path / STORE_NAME, readonly=True) as store:
        found = store.worst_losses(keep=8)
    for bot in bots:  # against a plain sort of every loss
        every = sorted(
            (
                -(max(s.score for s in g.seats) - seat.score),
                f"g{g.index:05d}",
                g.index,
                position,
            )
            for g in games
            for position, seat in enumerate(g.seats)
            if seat.bot == bot and seat.rank != 1
        )
        assert [(i, seat, m) for b, i, seat, m in found if b == bot] == [
            (index, position, -negative) for negative, _, index, position in every[:8]
        ]


def test_the_games_table_escapes_labels_and_links_each_game() -> None:
    row = _row(3, ['<img src=x onerror="1">', "b&c"], [40, 12], [1, 2])
    row.faults = [(1, "malformed")]
    html = site_module.games_table_rows([row])
    assert "<img" not in html and "&lt;img src=x onerror=&quot;1&quot;&gt;" in html
    assert "b&amp;c: malformed" in html and 'data-faults="malformed"' in html
    assert 'href="replays/games-0000000.html#g=g3"' in html
    row.replayed = False  # no replay on the site: the id, no link
    assert "replays/" not in site_module.games_table_rows([row])


def test_a_large_tournament_s_site_is_paged_and_replays_chosen_games(
    small_tournament: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the site's limits made tiny (as a million games makes them bite): pages of
    the last games, a faulted games' page, replays only of the chosen games (the last,
    the faulted, worst losses, fault examples), every link to a replay resolving."""
    copy = tmp_path / "big"
    shutil.copytree(small_tournament, copy, ignore=shutil.ignore_patterns("report"))
    for name, value in (
        ("LISTED_GAMES", 5),
        ("GAMES_PER_PAGE", 2),
        ("REPLAYED_RECENT", 2),
        ("REPLAYED_FAULTED", 1),
        ("WORST_LOSSES", 1),
    ):
        monkeypatch.setattr(site_module, name, value)
    files = write_site(make_report(copy, bootstrap=0), copy)
    folder = copy / "report"
    pages = sorted(p.name for p in folder.glob("games*.html"))
    assert pages == ["games-2.html", "games-3.html", "games-faulted.html", "games.html"]
    listed = [
        (folder / name).read_text().count("<tr data-bots")
        for name in ("games.html", "games-2.html", "games-3.html", "games-faulted.html")
    ]
    assert listed == [2, 2, 1, 1]  # the last 5 of 12, newest page first; 1 faulted game
    first = (folder / "games.html").read_text()
    assert "the last 5 of\n12 finished games" in first and "arena view" in first
    in_blocks = [
        game_id
        for block in (folder / "replays").glob("*.html")
        for game_id in re.findall(r'class="azul-game"[^>]* data-game="([^"]+)"', block.read_text())
    ]
    assert files.problems == [] and files.replays_written == len(set(in_blocks)) < 12
    links = [
        href
        for page in [*folder.glob("games*.html"), *folder.glob("bots/*.html")]
        for href in re.findall(r'href="(?:\.\./)?(replays/[^"]+)"', page.read_text())
    ]
    assert links  # the last games, the faulted one, each bot's worst loss and example
    for href in links:
        block, game_id = href.split("#g=")
        assert unquote(game_id) in in_blocks and unquote(game_id) in (folder / block).read_text()
    monkeypatch.setattr(site_module, "LISTED_GAMES", 2)  # a shorter listing: fewer pages
    write_site(make_report(copy, bootstrap=0), copy)
    assert sorted(p.name for p in folder.glob("games*.html")) == [
        "games-faulted.html",
        "games.html",
    ]


def test_arena_replay_of_a_folder_streams_its_records(
    small_tournament: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A million stored games are verified one at a time, never all read first: when the
    first is replayed, only the few that decide the output's verbosity were read."""
    import arena.engine
    from arena.cli import main
    from arena.commands import replay as replay_command
    from arena.tournament.records import stored_records

    (label, record), *_ = stored_records(small_tournament)
    pulled: list[int] = []
    read_when_replayed: list[int] = []

    def many(paths: object, game_ids: object) -> object:
        for n in range(1, 201):
            pulled.append(n)
            yield f"{label}#{n}", record

    real_replay = arena.engine.replay

    def replay(*args: object, **kwargs: object) -> object:
        read_when_replayed.append(len(pulled))
        return real_replay(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(replay_command, "_sources", many)
    monkeypatch.setattr(arena.engine, "replay", replay)
    assert main(["replay", str(small_tournament)]) == 0
    assert "200/200 records verified" in capsys.readouterr().out
    assert read_when_replayed[0] == replay_command.VERBOSE_UP_TO + 1
    assert read_when_replayed[-1] == 200


def test_a_report_of_an_unchanged_store_is_the_one_written(
    small_tournament: Path, tmp_path: Path
) -> None:
    """``arena report`` again with nothing new prints what the first printed, from the
    files written, without rebuilding them; a missing page or new options rebuild."""
    import os
    import subprocess
    import sys

    copy = tmp_path / "again"
    shutil.copytree(small_tournament, copy, ignore=shutil.ignore_patterns("report"))
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(Path(__file__).parents[2])}

    def report(resamples: str = "10") -> str:
        done = subprocess.run(
            [sys.executable, "-m", "arena.cli", "report", str(copy), "--bootstrap", resamples],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return done.stdout

    first = report()
    written = {p: p.stat().st_mtime_ns for p in (copy / "report").rglob("*") if p.is_file()}
    assert report() == first and "Faults by bot and kind" in first
    assert {p: p.stat().st_mtime_ns for p in written} == written  # nothing rewritten
    (copy / "report" / "games.html").unlink()
    assert report() == first and (copy / "report" / "games.html").is_file()  # rebuilt
    rebuilt = (copy / "report" / "report.html").stat().st_mtime_ns
    assert rebuilt != written[copy / "report" / "report.html"]
    report("0")
    assert (copy / "report" / "report.html").stat().st_mtime_ns != rebuilt  # other options
    import json

    path = copy / "report" / "report.json"
    older = json.loads(path.read_text())
    del older["summary"]["report_format"]  # as an earlier arena wrote it
    path.write_text(json.dumps(older))
    report("0")
    assert json.loads(path.read_text())["summary"]["report_format"] >= 2  # written again


def test_arena_replay_of_many_records_counts_them_on_the_terminal(
    small_tournament: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million games take a while to verify: a terminal sees how many are done."""
    import io

    from rich.console import Console

    from arena.cli import main
    from arena.commands import replay as replay_command
    from arena.tournament.records import stored_records

    (label, record), *_ = stored_records(small_tournament)
    shown: list[str] = []

    def many(paths: object, game_ids: object) -> object:
        for n in range(1, 1_201):
            yield f"{label}#{n}", record

    terminal = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=100)
    real_status = terminal.status

    def status(text: str, **kwargs: object) -> object:
        line = real_status(text, **kwargs)  # type: ignore[arg-type]
        real_update = line.update

        def update(new: str, **kw: object) -> None:
            shown.append(new)
            real_update(new, **kw)  # type: ignore[arg-type]

        line.update = update  # type: ignore[method-assign]
        return line

    monkeypatch.setattr(terminal, "status", status)
    monkeypatch.setattr(replay_command, "_sources", many)
    monkeypatch.setattr(replay_command, "console", terminal)
    assert main(["replay", str(small_tournament)]) == 0
    assert shown[-1] == "replaying: 1,000 records verified, 0 diverged"
    assert "1200/1200 records verified" in terminal.file.getvalue()  # type: ignore[attr-defined]
