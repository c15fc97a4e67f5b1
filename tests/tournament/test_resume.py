"""Real interruptions: SIGINT and SIGKILL to a running tournament, then resume.

Ends with exactly the scheduled games, once each, the same results (and so the same
ratings) as an uninterrupted run, and no bot process left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.tournament import STORE_NAME, Store, StoreError

REPO = Path(__file__).resolve().parents[2]
BOTS = ["python-greedy", "python-random", "c-greedy"]


def make_public(path: Path) -> None:
    """Bots run under their own uid: the folders must be readable all the way down."""
    for p in [path, *path.parents]:
        if p == Path("/tmp") or p == p.parent:
            break
        p.chmod(p.stat().st_mode | 0o755)


@pytest.fixture
def bot_dirs(tmp_path: Path) -> list[Path]:
    make_public(tmp_path)
    dirs = []
    for name in BOTS:
        dest = tmp_path / "bots" / name
        shutil.copytree(REPO / "bots" / name, dest, ignore=shutil.ignore_patterns("bot"))
        dirs.append(dest)
    make_public(tmp_path / "bots")
    return dirs


def command(bot_dirs: list[Path], out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "arena.cli",
        "tournament",
        "--quiet",
        "--bots",
        *map(str, bot_dirs),
        "--players",
        "2",
        "3",
        "--variants",
        "coloured",
        "gray",
        "--seeds",
        "12",
        "--workers",
        "2",
        "--out",
        str(out),
    ]


def stored(out: Path) -> int:
    if not (out / STORE_NAME).exists():
        return 0
    try:
        with Store(out / STORE_NAME, readonly=True) as store:
            return store.finished_count()
    except (StoreError, sqlite3.Error):
        return 0  # being created


def results(out: Path) -> list[tuple[object, ...]]:
    with Store(out / STORE_NAME, readonly=True) as store:
        assert store.integrity_problems() == []
        return [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]


def interrupt_after(cmd: list[str], out: Path, games: int, sig: int) -> int:
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while stored(out) < games and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the tournament ended before it could be interrupted"
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        text = output.decode()
        assert "Resume with:" in text, text
    return proc.returncode


def settled(probe: Callable[[], list[str]], within: float = 30.0) -> list[str]:
    """What ``probe`` finds once it finds nothing, or after ``within`` s: processes that
    exit on their own take their time on a busy machine (a fixed wait failed there)."""
    deadline = time.monotonic() + within
    while (found := probe()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def leftovers(root: Path) -> list[str]:
    """Processes whose command line or working directory points into ``root``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(root) in cmdline or cwd.startswith(str(root)):
            found.append(f"{entry.name}: {cmdline}")
    return found


@pytest.mark.slow
def test_interrupt_kill_and_resume_equals_uninterrupted(
    bot_dirs: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "interrupted"
    cmd = command(bot_dirs, out)
    assert interrupt_after(cmd, out, 20, signal.SIGINT) == 130
    first = stored(out)
    assert settled(lambda: leftovers(tmp_path / "bots")) == []
    # kill -9 of the parent: workers and bots must go too; finished games stay.
    interrupt_after(cmd, out, first + 20, signal.SIGKILL)
    assert stored(out) >= first
    assert settled(lambda: leftovers(tmp_path / "bots")) == []
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()

    clean = tmp_path / "clean"
    once = subprocess.run(command(bot_dirs, clean), cwd=REPO, capture_output=True, timeout=300)
    assert once.returncode == 0, once.stderr.decode()
    resumed, uninterrupted = results(out), results(clean)
    scheduled = 3 * 2 * 12 * 2 + 1 * 6 * 12 * 2  # 3p: 6 balanced seatings
    assert len({row[0] for row in resumed}) == scheduled
    assert resumed == uninterrupted
    assert ratings(out) == ratings(clean)


def ratings(out: Path) -> dict[str, tuple[float, float]]:
    """TrueSkill (mu, sigma) per bot from a store, as the report computes it."""
    from arena.ratings import rate_games, seatings_to_games

    with Store(out / STORE_NAME, readonly=True) as store:
        rows = [(r[0], r[1], r[2], r[8]) for r in store.seat_rows()]
    rated = rate_games(seatings_to_games(rows))
    assert len(rated) == len(BOTS)
    return {bot: (r.mu, r.sigma) for bot, r in rated.items()}


def test_changed_config_is_refused_with_an_explanation(
    bot_dirs: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "t"
    base = [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--out", str(out)]
    first = subprocess.run(
        [*base, "--bots", *map(str, bot_dirs[:2]), "--seeds", "1"], capture_output=True, cwd=REPO
    )
    assert first.returncode == 0, first.stderr.decode()
    changed = subprocess.run(
        [*base, "--bots", *map(str, bot_dirs[:2]), "--seeds", "2"], capture_output=True, cwd=REPO
    )
    assert changed.returncode == 2
    assert b"seeds: stored 1, now 2" in changed.stderr
    # A new bot may join with --extend: only its games are played.
    extended = subprocess.run(
        [*base, "--bots", *map(str, bot_dirs), "--seeds", "1", "--extend"],
        capture_output=True,
        cwd=REPO,
    )
    assert extended.returncode == 0, extended.stderr.decode()
    assert stored(out) == 6
    # Every stored record re-verifies under the rules.
    verified = subprocess.run(
        [sys.executable, "-m", "arena.cli", "replay", str(out)], capture_output=True, cwd=REPO
    )
    assert verified.returncode == 0, verified.stdout.decode()
    assert b"6/6 records verified" in verified.stdout


def test_a_changed_bot_is_a_new_version_never_mixed(bot_dirs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "t"
    cmd = [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--out", str(out)]
    cmd += ["--bots", *map(str, bot_dirs[:2]), "--seeds", "1"]
    assert subprocess.run(cmd, capture_output=True, cwd=REPO).returncode == 0
    with Store(out / STORE_NAME, readonly=True) as store:
        before = {b.name: b.version for b in store.bots()}
    with (bot_dirs[0] / "bot.py").open("a") as handle:
        handle.write("\n# a small change\n")
    changed = subprocess.run(cmd, capture_output=True, cwd=REPO)
    assert changed.returncode == 2
    assert f"bot {BOTS[0]} changed".encode() in changed.stderr
    assert before[BOTS[0]].encode() in changed.stderr  # the version it has there
    with Store(out / STORE_NAME, readonly=True) as store:
        assert {b.name: b.version for b in store.bots()} == before
        assert store.finished_count() == 2


def test_a_second_writer_is_refused_naming_the_first(bot_dirs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "t"
    cmd = [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--out", str(out)]
    cmd += ["--bots", *map(str, bot_dirs[:2]), "--seeds", "1"]
    with Store(out / STORE_NAME):  # this process holds the writer's lock
        second = subprocess.run(cmd, capture_output=True, cwd=REPO)
    assert second.returncode == 2
    assert f"another arena run (pid {os.getpid()})".encode() in second.stderr
    assert b"Traceback" not in second.stderr


def test_the_report_of_an_interrupted_tournament_counts_the_whole_schedule(
    bot_dirs: list[Path], tmp_path: Path
) -> None:
    """Stopped early, the report's total is the schedule's (144 games here), not the
    few games the scheduler had handed out when the run stopped."""
    out = tmp_path / "stopped"
    python_bots = [str(d) for d in bot_dirs if d.name.startswith("python-")]
    cmd = [
        *command(bot_dirs, out)[:6],  # through --bots
        *python_bots,
        "--players", "2", "--variants", "coloured", "gray", "--seeds", "36",
        "--workers", "2", "--out", str(out),
    ]  # fmt: skip
    assert interrupt_after(cmd, out, 4, signal.SIGINT) == 130
    finished = stored(out)
    assert 4 <= finished < 144
    report = subprocess.run(
        [sys.executable, "-m", "arena.cli", "report", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    assert f"Leaderboard ({finished}/144 games finished)" in report.stdout, report.stdout
    markdown = (out / "report" / "report.md").read_text()
    assert f"{finished}/144 games finished (incomplete" in markdown
