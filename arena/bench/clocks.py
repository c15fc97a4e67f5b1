"""`arena bench clocks`: do the clocks measure the bot or the host?

An honest bot burns ~80 % of its move time in CPU, an over-budget bot 120 %. They run
with 1x and then 4x as many busy bots as cores; in each phase half of the seats are on
wall clocks and half on CPU clocks, side by side, so both clocks face the same load
at the same moment. Any timeout of an honest bot is a false timeout (the harness's
fault); an over-budget bot must be timed out every time.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.engine import Game
from arena.play.bots import ready_bot
from arena.referee.clock import Clock, ClockKind, TimeControl
from arena.referee.seats import BotSeat, Choice, SandboxSettings
from arena.sandbox import DEFAULT_LEVEL, Level

HONEST = 0.8
OVER_BUDGET = 1.2

BOT = """\
import json, sys, time

share = float(sys.argv[1])
for raw in sys.stdin:
    msg = json.loads(raw)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "protocol": 1, "name": "burn"}), flush=True)
    elif msg["type"] == "decide":
        until = time.process_time() + share * msg["time_left_ms"] / 1000
        while time.process_time() < until:
            pass
        print(json.dumps({"type": "move", "id": msg["id"], "index": 0}), flush=True)
    elif msg["type"] == "quit":
        break
"""


@dataclass
class ClockTally:
    """Timeouts of one clock in one phase."""

    false_timeouts: int = 0
    decisions: int = 0
    over_budget_timeouts: int = 0
    over_budget_decisions: int = 0
    ceiling_timeouts: int = 0
    """Timeouts (of any bot) at the wall-clock ceiling rather than over CPU time."""
    honest_cpu_ms: list[float] = field(default_factory=list)
    honest_wall_ms: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        def median(xs: list[float]) -> float | None:
            return round(statistics.median(xs), 1) if xs else None

        return {
            "false_timeouts": self.false_timeouts,
            "decisions": self.decisions,
            "over_budget_timeouts": self.over_budget_timeouts,
            "over_budget_decisions": self.over_budget_decisions,
            "ceiling_timeouts": self.ceiling_timeouts,
            "honest_cpu_ms_median": median(self.honest_cpu_ms),
            "honest_wall_ms_median": median(self.honest_wall_ms),
            "honest_wall_ms_max": round(max(self.honest_wall_ms), 1)
            if self.honest_wall_ms
            else None,
        }


@dataclass(frozen=True)
class Phase:
    oversubscription: int
    workers: int
    tallies: dict[ClockKind, ClockTally]
    seconds: float


def _bot_folder(root: Path, share: float) -> Path:
    folder = root / f"burn-{int(share * 100)}"
    folder.mkdir()
    (folder / "bot.py").write_text(BOT)
    (folder / "bot.toml").write_text(
        f'name = "burn-{int(share * 100)}"\ncommand = "/usr/bin/python3 bot.py {share}"\n'
    )
    for path in (root, folder, folder / "bot.py", folder / "bot.toml"):
        path.chmod(0o755)  # readable by the per-bot uid
    return folder


def _worker(
    folder: Path,
    control: TimeControl,
    slot: int,
    decisions: int,
    honest: bool,
    tally: ClockTally,
    lock: threading.Lock,
    level: Level,
) -> None:
    seat = BotSeat(
        ready_bot(folder, level),
        time_control=control,
        sandbox=SandboxSettings(level=level, slot=slot),
    )
    game = Game.new(players=2, seed=slot)
    options = game.legal_moves()
    allowance = Clock(control).allowance_ms()
    try:
        for req in range(1, decisions + 1):
            if seat.start() is not None:
                continue
            answer = seat.decide(req, game, options, allowance, f"bench-{slot}")
            with lock:
                timed_out = not isinstance(answer, Choice)
                if timed_out and "ceiling" in getattr(answer, "message", ""):
                    tally.ceiling_timeouts += 1
                if honest:
                    tally.decisions += 1
                    tally.false_timeouts += timed_out
                    if isinstance(answer, Choice):
                        tally.honest_wall_ms.append(answer.think_ms)
                        if answer.cpu_ms is not None:
                            tally.honest_cpu_ms.append(answer.cpu_ms)
                else:
                    tally.over_budget_decisions += 1
                    tally.over_budget_timeouts += timed_out
            if timed_out:
                seat.abandon()  # as the referee does: a fresh process for the next one
    finally:
        seat.close()


def run_phase(
    folders: tuple[Path, Path],
    oversubscription: int,
    decisions: int,
    timing: TimeControl,
    level: Level,
    cores: int,
) -> Phase:
    """``cores x oversubscription`` busy bots, half on each clock; with 2+ bots per clock
    one of them is over budget."""
    workers = max(2, cores * oversubscription)
    honest_dir, over_dir = folders
    tallies = {kind: ClockTally() for kind in ClockKind}
    lock = threading.Lock()
    threads = []
    kinds = list(ClockKind)
    per_clock: dict[ClockKind, int] = {kind: 0 for kind in kinds}
    for i in range(workers):
        kind = kinds[i % 2]
        per_clock[kind] += 1
        over = oversubscription > 1 and per_clock[kind] == 1
        control = timing.model_copy(update={"clock": kind})
        threads.append(
            threading.Thread(
                target=_worker,
                args=(
                    over_dir if over else honest_dir,
                    control,
                    i,
                    decisions,
                    not over,
                    tallies[kind],
                    lock,
                    level,
                ),
                daemon=True,
            )
        )
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Phase(oversubscription, workers, tallies, time.monotonic() - start)


def print_clocks(result: dict[str, Any], out: Callable[[str], None]) -> None:
    """The human-readable table and verdict."""
    out(
        f"{result['cores']} cores; honest bot burns {result['honest_share']:.0%} of "
        f"{result['allowance_ms']} ms in CPU, over-budget bot {result['over_budget_share']:.0%}; "
        f"half the seats on each clock, side by side ({result['seconds']} s)"
    )
    phases = [("1x", result["baseline"]), (f"{result['oversubscription']}x", result)]
    out(f"{'load':<5} {'clock':<5} {'false timeouts':>15} {'over-budget timed out':>22}  wall/CPU")
    for label, phase in phases:
        for kind in ("wall", "cpu"):
            t = phase[kind]
            ratio = (
                f"{t['honest_wall_ms_median'] / t['honest_cpu_ms_median']:.1f}x"
                if t["honest_wall_ms_median"] and t["honest_cpu_ms_median"]
                else "-"
            )
            over = (
                f"{t['over_budget_timeouts']}/{t['over_budget_decisions']}"
                if t["over_budget_decisions"]
                else "-"
            )
            out(
                f"{label:<5} {kind:<5} {t['false_timeouts']:>7}/{t['decisions']:<7} "
                f"{over:>22}  {ratio}"
            )
    verdict = "MET" if result["goal_met"] else "MISSED"
    out(
        f"goal (0 false timeouts on CPU clocks at {result['oversubscription']}x, every "
        f"over-budget decision timed out): {verdict}"
    )


def bench_clocks(
    oversubscription: int = 4,
    decisions: int = 6,
    timing: TimeControl | None = None,
    level: Level = DEFAULT_LEVEL,
) -> dict[str, Any]:
    """Both phases; the result is the ``--json`` document. ``timing``: each decision's
    allowance and the CPU clock's idle ceiling (the clock is set per seat)."""
    timing = timing or TimeControl()
    allowance = Clock(timing).allowance_ms()
    if allowance < 300:
        raise ValueError(
            f"a decision's time must be at least 300 ms, not {allowance}: "
            "20% over it must exceed the 50 ms grace"
        )
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="arena-bench-clocks-") as tmp:
        root = Path(tmp)
        folders = (_bot_folder(root, HONEST), _bot_folder(root, OVER_BUDGET))
        phases = [
            run_phase(folders, k, decisions, timing, level, cores) for k in (1, oversubscription)
        ]
    base, loaded = phases
    cpu = loaded.tallies[ClockKind.CPU]
    return {
        "oversubscription": oversubscription,
        "wall": loaded.tallies[ClockKind.WALL].as_json(),
        "cpu": cpu.as_json(),
        "baseline": {
            "oversubscription": 1,
            "wall": base.tallies[ClockKind.WALL].as_json(),
            "cpu": base.tallies[ClockKind.CPU].as_json(),
        },
        "cores": cores,
        "workers": loaded.workers,
        "allowance_ms": allowance,
        "honest_share": HONEST,
        "over_budget_share": OVER_BUDGET,
        "wall_ceiling": timing.wall_ceiling,
        "seconds": round(base.seconds + loaded.seconds, 1),
        "goal_met": cpu.false_timeouts == 0
        and cpu.over_budget_timeouts == cpu.over_budget_decisions > 0,
    }
