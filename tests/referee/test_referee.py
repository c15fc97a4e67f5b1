"""The referee against real bot processes: every fault type, both policies, clocks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arena.engine import Variant, replay
from arena.play.build import build_bot
from arena.referee import (
    BotSeat,
    BotSpec,
    FaultPolicy,
    GameSettings,
    RandomSeat,
    Seat,
    TimeControl,
    play_game,
)
from arena.referee.clock import ClockKind

FAST = TimeControl(init_ms=5000, move_ms=400)
WALL = TimeControl(init_ms=5000, move_ms=400, clock=ClockKind.WALL)


@contextmanager
def seats_for(
    *specs: BotSpec | None, persistent: bool = True, tc: TimeControl = FAST
) -> Iterator[list[Seat]]:
    """Bot seats for the specs (None = the built-in random policy), always closed."""
    seats: list[Seat] = []
    bots: list[BotSeat] = []
    for i, spec in enumerate(specs):
        if spec is None:
            seats.append(RandomSeat(f"random{i}"))
        else:
            bot = BotSeat(build_bot(spec), time_control=tc, persistent=persistent)
            bot.sandbox.slot = i
            bots.append(bot)
            seats.append(bot)
    try:
        yield seats
    finally:
        for bot in bots:
            bot.close()


def settings(**kw: object) -> GameSettings:
    base: dict[str, object] = {"seed": 3, "time_control": FAST}
    base.update(kw)
    return GameSettings(**base)  # type: ignore[arg-type]


def test_good_bots_play_a_verifiable_game(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("good", name="a"), scripted_bot("option", name="b")) as seats:
        outcome = play_game(seats, settings(), "g1")
    record = outcome.record
    assert record.faults == []
    assert record.players == ["a", "b"]
    assert all(d.think_ms is not None and not d.auto for r in record.rounds for d in r.decisions)
    # CPU time for every decision, also those whose closing reading waited for the next request
    assert all(d.cpu_ms is not None and d.cpu_ms >= 0 for r in record.rounds for d in r.decisions)
    assert outcome.think[0].decisions > 10
    replay(record)


@pytest.mark.parametrize(
    ("mode", "kind"),
    [
        ("timeout", "timeout"),
        ("crash", "crash"),
        ("malformed", "malformed"),
        ("badschema", "malformed"),
        ("illegal", "illegal"),
        ("wrong-protocol", "init"),
        ("silent-init", "init"),
    ],
)
def test_each_fault_is_typed_and_forfeits(
    scripted_bot: Callable[..., BotSpec], mode: str, kind: str
) -> None:
    tc = TimeControl(init_ms=1500, move_ms=300)
    with seats_for(scripted_bot(mode, after=3), None, tc=tc) as seats:
        outcome = play_game(seats, settings(time_control=tc), "g-" + mode)
    record = outcome.record
    assert [(f.seat, f.kind, f.forfeit) for f in record.faults] == [(0, kind, True)]
    assert record.faults[0].message
    assert record.final[0].rank == 2 and record.final[1].rank == 1
    # The rest of the faulted seat's game was auto-played; the game still verifies.
    auto = [d for r in record.rounds for d in r.decisions if d.seat == 0 and d.auto]
    assert auto
    replay(record)


def test_fault_evidence_includes_last_message(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("malformed", after=2), None) as seats:
        record = play_game(seats, settings(), "g").record
    assert record.faults[0].last_message == "this is not json"


def test_strikes_forgive_then_late_answer_is_ignored(scripted_bot: Callable[..., BotSpec]) -> None:
    policy = FaultPolicy.parse("strikes:1")
    with seats_for(scripted_bot("late", after=2), None, tc=WALL) as seats:
        record = play_game(seats, settings(fault_policy=policy, time_control=WALL), "g").record
    assert [(f.kind, f.forfeit) for f in record.faults] == [("timeout", False)]
    mine = [d for r in record.rounds for d in r.decisions if d.seat == 0]
    # One random move was played for the bot; every later decision is its own again.
    assert [d.auto for d in mine].count(True) == 1
    assert not mine[-1].auto
    replay(record)


def test_strikes_run_out(scripted_bot: Callable[..., BotSpec]) -> None:
    policy = FaultPolicy.parse("strikes:0")
    with seats_for(scripted_bot("illegal", after=1), None) as seats:
        record = play_game(seats, settings(fault_policy=policy), "g").record
    assert record.faults[0].forfeit


def test_persistent_bot_plays_many_games_in_one_process(
    scripted_bot: Callable[..., BotSpec],
) -> None:
    spec = scripted_bot("good")
    with seats_for(spec, None) as seats:
        bot = seats[0]
        assert isinstance(bot, BotSeat)
        pids = set()
        for g in range(3):
            play_game(seats, settings(seed=g, variant=Variant.GRAY), f"g{g}")
            assert bot.alive
            pids.add(bot.pid)
    assert len(pids) == 1


def test_fresh_process_after_a_fault(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("crash", after=2), None) as seats:
        first = play_game(seats, settings(), "g1").record
        second = play_game(seats, settings(), "g2").record
    assert first.faults[0].kind == "crash"
    # The restarted process counts decisions from 1 again, so it crashes again at #2.
    assert second.faults[0].kind == "crash"


def test_stderr_flood_does_not_block(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("flood-stderr"), None) as seats:
        record = play_game(seats, settings(), "g").record
    assert record.faults == []


@pytest.mark.parametrize(("clock", "mode"), [(ClockKind.WALL, "late"), (ClockKind.CPU, "burn")])
def test_time_bank_runs_out(
    scripted_bot: Callable[..., BotSpec], clock: ClockKind, mode: str
) -> None:
    tc = TimeControl(init_ms=3000, move_ms=5000, bank_ms=600, increment_ms=0, clock=clock)
    with seats_for(scripted_bot(mode, after=1), None, tc=tc) as seats:
        record = play_game(seats, settings(time_control=tc), "g").record
    assert record.faults[0].kind == "timeout"


def test_cpu_clock_charges_cpu_time_not_sleep(scripted_bot: Callable[..., BotSpec]) -> None:
    """A bot that sleeps past its move time is not late on a CPU clock (the harness may
    have been the one that was slow); the record keeps both times."""
    with seats_for(scripted_bot("late", after=1), None) as seats:
        record = play_game(seats, settings(), "g").record
    assert record.faults == [] and record.clock == "cpu"
    first = next(d for r in record.rounds for d in r.decisions if d.seat == 0)
    assert first.think_ms is not None and first.think_ms > FAST.move_ms
    assert first.cpu_ms is not None and first.cpu_ms < FAST.move_ms


def test_cpu_clock_times_out_a_bot_over_its_cpu_time(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("burn", after=2), None) as seats:
        record = play_game(seats, settings(), "g").record
    assert [(f.kind, f.forfeit) for f in record.faults] == [("timeout", True)]
    # Over its CPU time, or (on a host too loaded to give it the CPU) over the ceiling.
    assert "CPU time" in record.faults[0].message


def test_cpu_clock_wall_ceiling_stops_a_sleeping_bot(scripted_bot: Callable[..., BotSpec]) -> None:
    tc = TimeControl(init_ms=5000, move_ms=200, wall_ceiling=3)
    with seats_for(scripted_bot("timeout", after=1), None, tc=tc) as seats:
        record = play_game(seats, settings(time_control=tc), "g").record
    assert [f.kind for f in record.faults] == ["timeout"]
    assert "ceiling" in record.faults[0].message


@pytest.mark.parametrize("clock", list(ClockKind))
def test_hello_announces_the_clock(scripted_bot: Callable[..., BotSpec], clock: ClockKind) -> None:
    tc = TimeControl(clock=clock)
    with seats_for(scripted_bot("clock"), None, tc=tc) as seats:
        bot = seats[0]
        assert isinstance(bot, BotSeat) and bot.start() is None
        assert bot.ready is not None and bot.ready.name == f"clock-{clock.value}"


def test_check_bot_verdicts(
    scripted_bot: Callable[..., BotSpec], bundled: Callable[[str], BotSpec]
) -> None:
    from arena.play.checkbot import check_bot
    from arena.referee import SandboxSettings

    good = check_bot(bundled("python-greedy"), SandboxSettings(), FAST, games_per_setting=1)
    assert good.ok and good.games == 6 and good.reported["name"] == "python-greedy"
    assert good.latency() is not None
    bad = check_bot(scripted_bot("illegal", after=4), SandboxSettings(), FAST, games_per_setting=1)
    assert not bad.ok
    assert {f.kind for _, f in bad.faults} == {"illegal"}
    silent = check_bot(scripted_bot("wrong-protocol"), SandboxSettings(), FAST, games_per_setting=1)
    assert [f.kind for _, f in silent.faults] == ["init"] and silent.games == 0
    assert "protocol 99" in silent.faults[0][1].message


def test_cli_match_writes_a_verifiable_record(
    tmp_path: Path, bundled: Callable[[str], BotSpec]
) -> None:
    from arena.cli import main

    out = tmp_path / "m"
    folders = [str(bundled("python-greedy").folder), str(bundled("python-random").folder)]
    args = ["match", *folders, "--variant", "gray", "--seed", "5", "--out", str(out)]
    assert main([*args, "--transcript"]) == 0
    assert main(["replay", str(out / "record.json")]) == 0
    transcript = (out / "seat0-python-greedy.transcript").read_text().splitlines()
    assert transcript[0].startswith('> {"type":"hello"')
    assert transcript[1].startswith('< {"type":"ready"')
    assert transcript[-1] == '> {"type":"quit"}'
    decided = [line for line in transcript if line.startswith('> {"type":"decide"')]
    assert len(decided) == len([line for line in transcript if line.startswith("< ")]) - 1
    assert main(["match", folders[0]]) == 2  # one bot is a usage error, not a traceback
    assert main(["match", folders[0], str(tmp_path)]) == 2  # no bot.toml


@pytest.mark.parametrize(
    "reply",
    [
        '{"type":"move","id":"ID","index":0}',
        '{"type":"move","id":ID,"index":0.0}',
        '{"type":"move","id":ID,"index":true}',
        '{"type":"move","id":ID,"option":{"source":"0","colour":0,"line":0}}',
        '{"type":"move","id":ID}',
        '{"type":"moves","id":ID,"index":0}',
        "[1, 2]",
    ],
)
def test_loosely_typed_replies_are_malformed(reply: str) -> None:
    from arena.engine import Game
    from arena.referee.manifest import BotManifest, BotSpec, Built
    from arena.referee.seats import BotSeat

    spec = BotSpec(folder=Path("/nonexistent"), manifest=BotManifest(name="b", command="x"))
    bot = BotSeat(Built(spec, 0.0, False, "v", spec.folder))  # never started

    options = Game.new(seed=1).legal_moves()
    fault = bot._parse_reply(reply.replace("ID", "5").encode(), 5, options)
    assert not isinstance(fault, int) and fault is not None
    assert fault.kind == "malformed", fault.message


def test_persistent_process_is_recycled_before_its_cpu_budget(
    scripted_bot: Callable[..., BotSpec],
) -> None:
    from arena.sandbox import Limits

    with seats_for(scripted_bot("good"), None) as seats:
        bot = seats[0]
        assert isinstance(bot, BotSeat)
        bot.sandbox.limits = Limits(cpu_seconds=2)
        play_game(seats, settings(), "g1")
        first = bot.pid
        bot._busy_s = 1.5  # as if it had thought for 1.5 s of its 2 s budget
        play_game(seats, settings(), "g2")
        assert bot.pid is not None and bot.pid != first
        assert bot._busy_s < 1.0


def test_cli_prints_bot_text_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bot-controlled text (here rich markup in a handshake) is shown, never interpreted."""
    from arena.cli import main

    tmp_path.chmod(0o755)
    folder = tmp_path / "markup"
    folder.mkdir()
    (folder / "bot.py").write_text(
        "import json, sys\n"
        "for raw in sys.stdin:\n"
        "    print(json.dumps({'type': 'ready', 'protocol': '[/red][bold]x', 'name': 'm'}),"
        " flush=True)\n"
    )
    (folder / "bot.toml").write_text('name = "markup"\ncommand = "/usr/bin/python3 bot.py"\n')
    folder.chmod(0o755)
    assert main(["check-bot", str(folder), "--init-time", "2000"]) == 1
    out = capsys.readouterr().out
    assert "[/red][bold]x" in out and "FAIL" in out


def test_a_bot_that_cannot_start_forfeits_even_with_strikes(
    scripted_bot: Callable[..., BotSpec],
) -> None:
    policy = FaultPolicy.parse("strikes:3")
    with seats_for(scripted_bot("wrong-protocol"), None) as seats:
        record = play_game(seats, settings(fault_policy=policy), "g").record
    assert [(f.kind, f.forfeit) for f in record.faults] == [("init", True)]
    assert record.final[0].rank == 2
    replay(record)  # the recorded forfeit explains the ranks


def test_restarted_bot_keeps_its_predecessors_stderr(
    scripted_bot: Callable[..., BotSpec], tmp_path: Path
) -> None:
    log = tmp_path / "logs" / "bot.stderr.log"
    log.parent.mkdir()
    bot = BotSeat(build_bot(scripted_bot("crash", after=2)), time_control=FAST, stderr_log=log)
    try:
        for g in range(5):
            play_game([bot, RandomSeat()], settings(), f"g{g}")
    finally:
        bot.close()
    kept = sorted(p.name for p in log.parent.iterdir())
    assert kept == ["bot.stderr.log", "bot.stderr.log.1", "bot.stderr.log.2", "bot.stderr.log.3"]


def test_cpu_clock_without_cgroups_reads_proc() -> None:
    """`--sandbox off` has no cgroup: the CPU clock falls back to scanning /proc."""
    import shutil
    import tempfile

    from arena.referee import SandboxSettings, load_bot
    from arena.sandbox import Level

    from .conftest import SCRIPT

    # Without bubblewrap the per-bot uid must reach the folder through its ancestors.
    root = Path(tempfile.mkdtemp(prefix="arena-burn-", dir="/tmp"))
    try:
        root.chmod(0o755)
        shutil.copy(SCRIPT, root / "bot.py")
        (root / "bot.toml").write_text(
            'name = "burn"\ncommand = "/usr/bin/python3 bot.py burn 2"\n'
        )
        for path in (root / "bot.py", root / "bot.toml"):
            path.chmod(0o644)
        bot = BotSeat(build_bot(load_bot(root)), time_control=FAST)
        bot.sandbox = SandboxSettings(level=Level.OFF)
        try:
            record = play_game([bot, RandomSeat("r")], settings(), "g").record
        finally:
            bot.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert bot.clock is ClockKind.CPU
    first = next(d for r in record.rounds for d in r.decisions if d.seat == 0)
    assert first.cpu_ms is not None
    assert [f.kind for f in record.faults] == ["timeout"]
    assert "CPU time" in record.faults[0].message
