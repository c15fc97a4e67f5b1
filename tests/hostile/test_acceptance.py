"""Acceptance test: real tournaments with hostile bots, through the CLI and the sandbox.

Every bot of the corpus (``fixtures/<name>/``, see ``fixtures/README.md``) plays a small
round-robin tournament with two well-behaved bots (copies of bots/python-greedy and
bots/c-greedy): bots ``[python-greedy, <hostile>, c-greedy]``, 2-player games, two
deals (``ARENA_HOSTILE_SEEDS``), both seatings, two workers, 300 ms per move, sandbox
``strict``.  The hostile bot misbehaves on its 3rd decision of every game.  Each
tournament must:

- complete (exit status 0), its store intact: ``PRAGMA integrity_check``, the arena's own
  check, every scheduled game stored exactly once with one seat row per player, and
  every record re-executes under the rules engine;
- record the expected fault for the hostile seat of every one of its games (seats and
  faults tables: kind, forfeit, last rank, how many decisions it answered first), and
  none for the good bots;
- leave the games between the two good bots exactly as they are in a tournament of
  only those two bots with the same master seed (the stored records, by game id,
  without think times): the hostile bot, running in the other worker at the same time,
  must not change them;
- never have more live sandboxes of the hostile bot than there are workers (sampled
  while it runs): a forfeited bot is killed at its fault, not at the end;
- leave no process behind (command line / cwd in the test's folders, or a per-bot uid
  process whose mount namespace binds one of them);
- leave no file behind outside the output folder and the sandboxes' private /tmp: the
  test's folders (bot folders included) are unchanged, nothing new in the machine's
  /tmp, /var/tmp, /dev/shm is owned by a bot uid or named like a telltale, and nothing
  in the output folder belongs to a bot uid;
- for the probing bots (network, other folders, writes, signals): the probe ran (its
  ``PROBE-DONE`` line is in the stderr logs), nothing escaped (no ``ESCAPED`` line, no
  illegal-move telltale, no connection to the test's listeners).

Two more tests check the end of a tournament: every bot process is told ``quit``
(SPEC §2, §9) and the per-bot cgroups are removed.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arena.play.build import build_bot
from arena.referee import load_bot
from arena.sandbox import Level
from arena.store.tournament import Store

from .hostile_support import (
    BUILD_OUTPUTS,
    GOOD,
    REPO,
    TRIGGER,
    CliRun,
    Listeners,
    ProcInfo,
    SandboxMonitor,
    bot_logs,
    bot_owned,
    bot_uid_keys,
    cgroups_of,
    diff,
    foreign_files,
    good_bot,
    hostile_bot,
    hostile_names,
    kill_all,
    make_public,
    records_by_game_id,
    replay_problems,
    run_cli,
    shared_tmp_entries,
    snapshot,
    store_problems,
    stored_games,
    tournament_command,
    wait_for_no_leftovers,
    without_timing,
    worker_pids,
    write_targets,
)

SEEDS = int(os.environ.get("ARENA_HOSTILE_SEEDS", "2"))
MASTER_SEED = 7
MOVE_MS = 300
WORKERS = 2
INIT_MS = 2000
TOURNAMENT_TIMEOUT_S = 60
"""A hostile bot's tournament takes under 10 s; one still running after this is hung."""
LOG_CAP = 1024 * 1024
"""The arena keeps at most 1 MiB of a bot process's stderr (plus a truncation note)."""


@dataclass(frozen=True)
class Expect:
    """What a hostile bot's games must show."""

    fault: str | None
    """The hostile seat's fault kind in every game, or None (plays every game to the end)."""
    answered: int | None = TRIGGER - 1
    """Decisions the hostile seat answered before the fault (None: not checked)."""
    probe: bool = False
    """A probing bot: its logs must show ``PROBE-DONE <name> escapes=0``."""
    log: str | None = None
    """A regular expression its stderr logs must match."""
    move_ms: int = MOVE_MS


PROBE = Expect(None, answered=None, probe=True)
PLAYS_ON = Expect(None, answered=None)

EXPECTED: dict[str, Expect] = {
    # resources
    "cpu-burn": Expect("timeout"),
    # Frozen between its turns (cgroup v2), its thread ponders only on its own time.
    "ponder": PLAYS_ON,
    "sleep-forever": Expect("timeout"),
    "memory-bomb": Expect("crash", log=r"MemoryError"),
    # The cgroup's OOM killer stops the child; the bot waits for that before it answers
    # its 3rd decision, so the move time must cover the child's whole run on a loaded
    # machine (it has one core's quota and needs about a second of it).
    "memory-hog": Expect(
        None, answered=None, probe=True, log=r"child killed by signal 9", move_ms=30000
    ),
    "fork-bomb": Expect("timeout"),
    # Writing 16 MiB per decision needs more than 300 ms on a loaded machine.
    "fill-tmp": Expect(
        None, answered=None, probe=True, log=r"/tmp full after 6\d MiB", move_ms=3000
    ),
    # output
    "stdout-flood": Expect("malformed"),
    "stderr-flood": PLAYS_ON,
    "invalid-json": Expect("malformed"),
    "deep-json": Expect("malformed"),
    "huge-line": Expect("malformed"),
    "wrong-types": Expect("malformed"),
    "float-index": Expect("malformed"),
    "late-answer-spam": Expect("timeout"),
    "padded-late-answers": Expect("timeout"),
    "float-id": Expect("malformed"),
    "terminal-escapes": Expect("malformed"),
    "illegal-index": Expect("illegal"),
    "illegal-option": Expect("illegal"),
    "negative-index": Expect("illegal"),
    # process life
    "exit-midgame": Expect("crash"),
    "handshake-crash": Expect("init", answered=0),
    "deep-json-handshake": Expect("init", answered=0),
    "close-stdout": Expect("crash"),
    "fake-bwrap": Expect("timeout"),
    "close-stdin": Expect("crash", answered=TRIGGER),
    "double-fork-exit": Expect("crash"),
    "background-child": PLAYS_ON,
    "ignore-sigterm": Expect("timeout"),
    "ignore-quit": PLAYS_ON,
    "kill-parent": PROBE,
    # escapes
    "net-loopback": PROBE,
    "net-outside": PROBE,
    "read-others": PROBE,
    "write-outside": PROBE,
    # state and details beyond the sandbox
    "keyring": PROBE,
    "host-details": PROBE,
}


def test_every_corpus_bot_has_an_expectation() -> None:
    assert sorted(EXPECTED) == hostile_names()


def expected_game_ids(bots: list[str], seeds: int) -> list[str]:
    return [
        f"2p-coloured-d{s}-{a}+{b}-r{r}"
        for s in range(seeds)
        for a, b in itertools.combinations(bots, 2)
        for r in range(2)
    ]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def baseline(full_sandbox: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The two good bots alone: their game records by game id."""
    root = tmp_path_factory.mktemp("baseline")
    make_public(root)
    bots = [good_bot(name, root / "bots") for name in GOOD]
    out = root / "out"
    run = run_cli(tournament_command(bots, out, seeds=SEEDS, master_seed=MASTER_SEED))
    assert run.returncode == 0, run.output[-3000:]
    records = records_by_game_id(out)
    assert sorted(records) == sorted(expected_game_ids(list(GOOD), SEEDS))
    return {game_id: without_timing(r) for game_id, r in records.items()}


@dataclass
class Played:
    """One hostile tournament and the evidence around it."""

    name: str
    root: Path
    out: Path
    run: CliRun
    leftovers: list[ProcInfo]
    files_changed: list[str]
    foreign: list[str]
    connections: list[str]
    most_sandboxes: int
    """The most sandboxes of the hostile bot alive at once (sampled)."""
    sandboxes: int
    """How many sandboxes of the hostile bot were seen in all."""


def play(name: str, root: Path, expect: Expect) -> Played:
    """Run the tournament ``[python-greedy, name, c-greedy]`` and collect the evidence."""
    make_public(root)
    bots_dir = root / "bots"
    first, second = (good_bot(g, bots_dir) for g in GOOD)
    hostile = hostile_bot(name, bots_dir)
    out = root / "out"
    cache = root / "cache"
    build_outputs = [bots_dir / bot / f for bot, files in BUILD_OUTPUTS.items() for f in files]
    with Listeners() as listeners:
        write_targets(
            hostile,
            {
                "port": listeners.port,
                "hosts": listeners.hosts(),
                "abstract": listeners.abstract,
                "read": [str(first / "bot.py"), str(second), str(out / "tournament.sqlite")],
                "write": [str(first), str(out), str(hostile), str(root)],
                "pids": [os.getpid()],
                # Host details the bot must not see (host-details): host paths, the
                # launch command's options.
                "hide": [
                    str(root),  # the tests' tmp folder: bots, results, the build cache
                    str(bots_dir),
                    str(out),
                    str(cache),
                    str(REPO),  # the checkout
                    "--reuid",
                    "setpriv",
                    "prlimit",
                    "--ro-bind",
                ],
            },
        )
        # Bots run from their built copies in the test's build cache, unpacked into each
        # sandbox; the monitor recognises them by the origin token of the copy.
        build_bot(load_bot(hostile), Level.STRICT, cache=cache)
        files_before = snapshot(root, skip=[out, cache, *build_outputs])
        shared_before = shared_tmp_entries()
        uids_before = bot_uid_keys()
        cmd = tournament_command(
            [first, hostile, second],
            out,
            seeds=SEEDS,
            master_seed=MASTER_SEED,
            workers=WORKERS,
            move_ms=expect.move_ms,
            init_ms=INIT_MS,
        )
        with SandboxMonitor(hostile, uids_before) as monitor:
            run = run_cli(cmd, timeout_s=TOURNAMENT_TIMEOUT_S, cache=cache)
        left = wait_for_no_leftovers([root], uids_before)
        kill_all(left)  # recorded for the assertion; do not let them linger
        connections = listeners.connections()
    return Played(
        name=name,
        root=root,
        out=out,
        run=run,
        leftovers=left,
        files_changed=diff(files_before, snapshot(root, skip=[out, cache, *build_outputs])),
        foreign=foreign_files(shared_before, shared_tmp_entries()),
        connections=connections,
        most_sandboxes=monitor.most,
        sandboxes=len(monitor.seen),
    )


# ---------------------------------------------------------------- the test


def fault_problems(played: Played, expect: Expect) -> list[str]:
    """The hostile seat's fault (or none) in every game it played; none for the others."""
    problems = []
    with Store(played.out / "tournament.sqlite", readonly=True) as store:
        games = [(g.game_index, g.game_id, g.bots) for g in store.schedule()]
        seats = {(r[0], r[1]): (r[2], r[8], r[10], r[11], r[12]) for r in store.seat_rows()}
        faults: dict[int, list[tuple[Any, ...]]] = {}
        for g, seat, bot, kind, _round, message, forfeit, *_ in store.fault_rows():
            faults.setdefault(g, []).append((seat, bot, kind, forfeit, message))
    for game_index, game_id, _ in games:
        for seat in (0, 1):
            if (game_index, seat) not in seats:
                continue
            bot, rank, forfeit, fault, decisions = seats[(game_index, seat)]
            where = f"{game_id} seat {seat} ({bot})"
            if bot != played.name:
                if fault is not None or forfeit:
                    problems.append(f"{where}: a good bot faulted: {fault}")
                continue
            if fault != expect.fault:
                problems.append(f"{where}: fault {fault!r}, expected {expect.fault!r}")
            if bool(forfeit) != (expect.fault is not None):
                problems.append(f"{where}: forfeit={forfeit}")
            if expect.fault is not None and rank != 2:
                problems.append(f"{where}: a forfeited seat ranks {rank}, not last")
            if expect.answered is not None and decisions != expect.answered:
                problems.append(f"{where}: answered {decisions} decisions before its fault")
        rows = faults.get(game_index, [])
        hostile_seats = {s for s in (0, 1) if seats.get((game_index, s), ("",))[0] == played.name}
        want = [(seat, played.name, expect.fault, 1) for seat in sorted(hostile_seats)]
        got = [row[:4] for row in sorted(rows)]
        if expect.fault is None:
            want = []
        if got != want:
            problems.append(f"{game_id}: fault rows {sorted(rows)}, expected {want}")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_bot_in_a_tournament(
    name: str, full_sandbox: None, baseline: dict[str, Any], tmp_path: Path
) -> None:
    expect = EXPECTED[name]
    played = play(name, tmp_path, expect)
    problems: list[str] = []
    run = played.run
    if run.returncode != 0:
        problems.append(
            f"the tournament did not complete (exit status {run.returncode}"
            + (", killed by the test: hung" if run.returncode is None else "")
            + f", {run.seconds:.1f} s, {stored_games(played.out)} of "
            f"{len(expected_game_ids([GOOD[0], name, GOOD[1]], SEEDS))} games stored):\n"
            f"{run.output[-3000:]}"
        )
    problems += [f"leftover process: {p.describe()}" for p in played.leftovers]
    problems += [f"file changed outside the output folder: {c}" for c in played.files_changed]
    problems += [f"file created in a shared tmp folder: {f}" for f in played.foreign]
    problems += [f"bot-owned or telltale file: {f}" for f in bot_owned(played.out)]
    problems += [f"connection to the test's listener: {c}" for c in played.connections]
    if played.sandboxes == 0:
        problems.append(f"no sandbox of {name} was seen running (the monitor is blind)")
    if played.most_sandboxes > WORKERS:
        problems.append(
            f"{played.most_sandboxes} sandboxes of {name} alive at once with {WORKERS} "
            "workers: a forfeited bot was not killed at its fault"
        )
    logs = bot_logs(played.out, name) if (played.out / "logs").is_dir() else ""
    problems += [f"escape: {line}" for line in logs.splitlines() if line.startswith("ESCAPED")]
    if (played.out / "tournament.sqlite").exists() and run.returncode == 0:
        ids = expected_game_ids([GOOD[0], name, GOOD[1]], SEEDS)
        problems += store_problems(played.out, ids)
        problems += fault_problems(played, expect)
        records = records_by_game_id(played.out)
        problems += [f"record does not replay: {p}" for p in replay_problems(records)]
        for game_id, record in sorted(baseline.items()):
            if game_id not in records:
                problems.append(f"{game_id}: missing")
            elif without_timing(records[game_id]) != record:
                problems.append(
                    f"{game_id}: the good bots' game differs from the tournament without "
                    f"{name} (faults: {records[game_id]['faults']})"
                )
        if expect.probe and f"PROBE-DONE {name} escapes=0" not in logs:
            problems.append(f"the probe did not run to its end; logs:\n{logs[-2000:]}")
        if expect.log and not re.search(expect.log, logs):
            problems.append(f"logs do not match {expect.log!r}:\n{logs[-2000:]}")
        for log in sorted((played.out / "logs").glob("*.log")):
            size = log.stat().st_size
            if size > LOG_CAP + 200:
                problems.append(f"{log.name}: {size} bytes of stderr kept (cap {LOG_CAP})")
    assert not problems, f"{name}: " + "\n".join(problems)


# ---------------------------------------------------------------- end of a tournament


@pytest.fixture(scope="module")
def finished(full_sandbox: None, tmp_path_factory: pytest.TempPathFactory) -> Played:
    """A tournament with ignore-quit (which logs every ``quit`` it gets)."""
    root = tmp_path_factory.mktemp("shutdown")
    played = play("ignore-quit", root, EXPECTED["ignore-quit"])
    assert played.run.returncode == 0, played.run.output[-3000:]
    assert not played.leftovers
    return played


def test_every_bot_process_is_told_to_quit(finished: Played) -> None:
    """SPEC §2/§9: a persistent process gets ``quit`` after its last game.

    ignore-quit logs "told to quit" when it reads ``quit`` (or end of input); its logs
    must show it once per bot process the tournament started.
    """
    logs = bot_logs(finished.out, "ignore-quit")
    processes = len(list((finished.out / "logs").glob("ignore-quit.*")))
    assert processes > 0
    told = logs.count("told to quit")
    assert told == processes, (
        f"{processes} ignore-quit processes, {told} were told to quit (stderr logs: {logs!r})"
    )


def test_no_cgroups_left_after_the_tournament(finished: Played) -> None:
    """Every per-bot cgroup (named after the worker that created it) is removed."""
    workers = worker_pids(finished.out)
    left = cgroups_of([*workers, finished.run.pid])
    assert not left, f"per-bot cgroups left behind by workers {sorted(workers)}: {left}"
