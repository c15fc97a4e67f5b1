"""The report site: index, games, bot pages and replays, from a real small tournament."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

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
    assert len(list((site / "replays").glob("*.html"))) == 12
    for name in ("viewer.js", "viewer.css", "site.js"):
        assert (site / name).stat().st_size > 1000


def test_replays_link_the_shared_script_and_hold_only_data(site: Path) -> None:
    page = next((site / "replays").glob("*.html")).read_text()
    assert page.startswith(REPLAY_STAMP)
    assert '<script src="../viewer.js"></script>' in page
    assert "function drawBoard" not in page
    assert len(page) < 60_000


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
