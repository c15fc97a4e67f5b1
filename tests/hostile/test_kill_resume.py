"""Crash safety: SIGKILL the tournament process at random moments, resume, repeat.

The parent (the CLI process started by the test, found by its Popen pid) is killed
five times at seeded random moments: odd attempts at a random delay after start (start-up,
building c-greedy, writing the schedule, starting the workers, or play), even attempts
at a random delay after that run stored its first game (mid-play). A run is killed sooner
once it has stored its share of the games still to play, so that every later kill finds
games left however fast the machine plays them.  After each kill:
the store passes its integrity checks, no game is lost or half-written, and no process
of the tournament survives (workers and bots die with the parent).  The last run
completes; the result is exactly the scheduled games, each once, with seat results
identical to an uninterrupted run with the same master seed, and no per-bot cgroup of
a killed run is left over.  Deterministic bots only (python-greedy, c-greedy and
python-random choose by position and game id).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from .hostile_support import (
    REPO,
    cgroups_of,
    descendants,
    good_bot,
    kill_all,
    make_public,
    processes,
    run_cli,
    seat_rows,
    store_problems,
    stored_games,
    tournament_command,
    wait_for_no_leftovers,
)

BOTS = ("python-greedy", "c-greedy", "python-random")
SEEDS = 22
"""528 games. A killed run stops once it has stored its share of those left
(:func:`kill_at_random_moment`): with delays alone, a fast spell of this machine (~250
games/s) played all of them by the fourth kill, and 88 seeds to avoid that took 75 s on a
slow spell."""
PLAYERS = (2, 3)
VARIANTS = ("coloured", "gray")
KILLS = 5
FINAL_RUN_S = 180.0
RNG_SEED = 20240601
SCHEDULED = SEEDS * len(VARIANTS) * (3 * 2 + 1 * 6)
"""Per deal and wall: 3 pairs x 2 seatings, and 1 trio x 6 (balanced) seatings."""


@dataclass(frozen=True)
class Kill:
    attempt: int
    after_first_game: bool
    delay_s: float
    alive: bool
    """The process was still running when the test killed it."""
    stored_before: int
    stored_after: int
    pids: frozenset[int]
    """The tournament's processes just before the kill (parent, workers, sandboxes)."""


def kill_at_random_moment(
    cmd: list[str], out: Path, attempt: int, rng: random.Random
) -> tuple[Kill, str]:
    """Start the tournament and SIGKILL its parent process at a seeded random moment, or
    once it has stored its share of the games left (this kill's and the later ones')."""
    mid_play = attempt % 2 == 0
    delay = rng.uniform(0.0, 1.5) if mid_play else rng.uniform(0.1, 2.5)
    before = stored_games(out)
    share = before + max(1, (SCHEDULED - before) // (KILLS - attempt + 2))
    log = out.parent / f"kill-{attempt}.log"
    with open(log, "wb") as sink:  # a file, not a pipe: survivors could hold a pipe open
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    began = time.monotonic()
    if mid_play:
        while stored_games(out) == before and proc.poll() is None:
            if time.monotonic() - began > 60:
                break
            time.sleep(0.01)
        began = time.monotonic()
    while time.monotonic() < began + delay and proc.poll() is None:
        if stored_games(out) >= share:
            break
        time.sleep(0.01)
    pids = frozenset(descendants(proc.pid))
    alive = proc.poll() is None
    if alive:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kill = Kill(attempt, mid_play, delay, alive, before, stored_games(out), pids)
    return kill, log.read_text(errors="replace")


def expected_ids() -> list[str]:
    from arena.tournament.schedule import build_schedule

    games = build_schedule(list(BOTS), list(PLAYERS), list(VARIANTS), SEEDS, master_seed=3)
    return [g.game_id for g in games]


@pytest.mark.slow
def test_repeated_sigkill_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    make_public(tmp_path)
    bots = [good_bot(name, tmp_path / "bots") for name in BOTS]
    roots = [tmp_path / "bots", tmp_path / "interrupted", tmp_path / "clean"]

    def command(out: Path) -> list[str]:
        return tournament_command(
            bots,
            out,
            seeds=SEEDS,
            master_seed=3,
            players=PLAYERS,
            variants=VARIANTS,
            sandbox="auto",
        )

    out = tmp_path / "interrupted"
    rng = random.Random(RNG_SEED)
    kills: list[Kill] = []
    problems: list[str] = []
    # Every problem is noted and the run goes on (leftovers are killed), so one failure
    # also tells whether resuming still gives the uninterrupted results.
    for attempt in range(1, KILLS + 1):
        kill, output = kill_at_random_moment(command(out), out, attempt, rng)
        kills.append(kill)
        left = wait_for_no_leftovers(roots, grace_s=3.0)
        kill_all(left)
        if left:
            problems.append(
                f"after kill {attempt} ({kill.delay_s:.2f} s"
                + (" after its first game" if kill.after_first_game else "")
                + f", {kill.stored_after} games stored), processes still alive 3 s later:\n"
                + "\n".join(f"  {p.describe()[:250]}" for p in left)
            )
        if (out / "tournament.sqlite").exists():
            if stored_games(out) < kill.stored_before:
                problems.append(f"games were lost by kill {attempt}: {kill}")
            damage = store_after_kill(out)
            problems += [f"after kill {attempt}: {p}\n{output[-1000:]}" for p in damage]
    # Hang guards, not speed targets: a run ends by writing the report site (a replay page
    # per game), which takes a while on a loaded 2-core machine.
    finished = run_cli(command(out), timeout_s=FINAL_RUN_S)
    left = wait_for_no_leftovers(roots)
    kill_all(left)
    problems += [f"leftover after the last run: {p.describe()[:250]}" for p in left]
    clean = run_cli(command(tmp_path / "clean"), timeout_s=FINAL_RUN_S)
    left = wait_for_no_leftovers(roots)
    kill_all(left)
    assert finished.returncode == 0, "\n".join(problems) + finished.output[-3000:]
    assert clean.returncode == 0, clean.output[-3000:]

    summary = "\n".join(str(k) for k in kills)
    assert all(k.alive for k in kills), f"a run ended before its kill:\n{summary}"
    assert sum(k.stored_before < k.stored_after < SCHEDULED for k in kills) >= 2, (
        f"fewer than two kills interrupted play:\n{summary}"
    )
    problems += [f"store: {p}" for p in store_problems(out, expected_ids())]
    resumed, uninterrupted = seat_rows(out), seat_rows(tmp_path / "clean")
    if len({row[0] for row in resumed}) != SCHEDULED:
        problems.append(f"{len({row[0] for row in resumed})} games stored, {SCHEDULED} scheduled")
    if resumed != uninterrupted:
        differ = [(a, b) for a, b in zip(resumed, uninterrupted, strict=False) if a != b]
        problems.append(f"results differ from the uninterrupted run, e.g. {differ[:3]}")
    killed_pids = set().union(*(k.pids for k in kills))
    stale = cgroups_of(killed_pids)
    if stale:
        problems.append(f"per-bot cgroups of killed runs never removed: {stale[:6]}")
    assert not problems, "\n".join(problems)


def store_after_kill(out: Path) -> list[str]:
    """A killed run's store: intact, and every stored game complete (no half-writes).
    A kill before the schema's first transaction leaves an empty file: nothing stored,
    nothing to damage (the resumed run creates the schema in it)."""
    import sqlite3

    from arena.store.tournament import Store

    with sqlite3.connect(f"file:{out / 'tournament.sqlite'}?mode=ro", uri=True) as db:
        if not db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            return []
    with Store(out / "tournament.sqlite", readonly=True) as store:
        return store.integrity_problems()


def test_workers_stop_when_told_to_stop_more_than_once(tmp_path: Path) -> None:
    """A worker can be sent SIGTERM several times: the parent-death signal comes once
    per exiting thread of the killed parent (the pool's threads included), and
    ``pool.terminate()`` after a SIGTERM to the process group sends another.  However
    many arrive, the worker must stop its bots and exit.

    Here the parent is SIGKILLed mid-play and its workers get SIGTERM every millisecond
    for half a second; they must all be gone (with their bots) 3 s later.
    """
    make_public(tmp_path)
    bots = [good_bot(name, tmp_path / "bots") for name in BOTS]
    out = tmp_path / "out"
    cmd = tournament_command(
        bots, out, seeds=SEEDS, master_seed=3, players=PLAYERS, variants=VARIANTS, sandbox="auto"
    )
    with open(tmp_path / "cli.log", "wb") as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    began = time.monotonic()
    while stored_games(out) < 5 and proc.poll() is None and time.monotonic() - began < 60:
        time.sleep(0.01)
    assert proc.poll() is None, "the tournament ended before it could be stopped"
    workers = [p.pid for p in processes().values() if p.ppid == proc.pid and "arena" in p.cmdline]
    assert workers, "no worker processes found"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        time.sleep(0.001)
    left = wait_for_no_leftovers([tmp_path], grace_s=3.0)
    kill_all(left)
    assert not left, (
        f"workers {workers} told to stop (SIGTERM) repeatedly did not exit:\n"
        + "\n".join(p.describe() for p in left)
    )
