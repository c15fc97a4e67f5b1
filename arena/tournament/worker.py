"""What runs inside a worker: whole games, with that worker's persistent bot processes.

A job is plain picklable data; the result is a :class:`GameResult` ready for the
store. Workers never touch the store.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from arena.engine.tables import Variant
from arena.referee import BotSeat, BotSpec, GameSettings, SandboxSettings, Seat, play_game
from arena.referee.clock import TimeControl
from arena.referee.faults import FaultPolicy
from arena.sandbox import Level
from arena.tournament.store import FaultRow, GameResult, ScheduledGame, SeatRow

MAX_BOTS = 64
MAX_SLOT = 1000
"""Slots (per-bot uids) are worker * MAX_BOTS + bot index, modulo the sandbox's slot
range; the sandbox itself gives a different uid when a slot's uid is still in use."""


@dataclass(frozen=True)
class GameJob:
    game: ScheduledGame
    specs: tuple[BotSpec, ...]
    """By seat."""
    bot_index: tuple[int, ...]
    """Each seat's bot's position in the tournament's bot list (for its sandbox slot)."""
    round_limit: int
    time_control: TimeControl
    fault_policy: str
    sandbox: str
    persistent: bool
    log_dir: Path


class WorkerState:
    """The bot processes one worker keeps alive between games."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id
        self.seats: dict[str, BotSeat] = {}

    def seat_for(self, job: GameJob, seat: int) -> BotSeat:
        spec = job.specs[seat]
        bot = self.seats.get(spec.name)
        if bot is None or bot.persistent != job.persistent:
            if bot is not None:
                bot.close()
            slot = (self.worker_id * MAX_BOTS + job.bot_index[seat]) % MAX_SLOT
            bot = BotSeat(
                spec,
                time_control=job.time_control,
                sandbox=SandboxSettings(level=Level(job.sandbox), slot=slot),
                stderr_log=job.log_dir / f"{spec.name}.w{self.worker_id}.stderr.log",
                persistent=job.persistent,
            )
            self.seats[spec.name] = bot
        return bot

    def close(self) -> None:
        for bot in self.seats.values():
            bot.close()
        self.seats.clear()


def run_job(state: WorkerState, job: GameJob) -> GameResult:
    """Play one scheduled game and turn its outcome into store rows."""
    started = time.monotonic()
    seats: list[Seat] = [state.seat_for(job, i) for i in range(len(job.specs))]
    settings = GameSettings(
        variant=Variant(job.game.variant),
        seed=job.game.deal_seed,
        round_limit=job.round_limit,
        time_control=job.time_control,
        fault_policy=FaultPolicy.parse(job.fault_policy),
    )
    outcome = play_game(seats, settings, job.game.game_id)
    record = outcome.record
    first_fault: dict[int, str] = {}
    for f in record.faults:
        first_fault.setdefault(f.seat, f.kind)
    forfeits = {f.seat for f in record.faults if f.forfeit}
    rows = []
    cpu: list[list[float]] = [[] for _ in record.players]
    for rnd in record.rounds:
        for d in rnd.decisions:
            if d.cpu_ms is not None:
                cpu[d.seat].append(d.cpu_ms)
    for final, think in zip(record.final, outcome.think, strict=True):
        used = cpu[final.seat]
        full_rows = final.rows // 2
        rows.append(
            SeatRow(
                seat=final.seat,
                bot=final.player,
                score=final.total,
                round_score=final.rounds,
                bonus_rows=final.rows,
                bonus_columns=final.columns,
                bonus_colours=final.colours,
                rank=final.rank,
                full_rows=full_rows,
                forfeit=final.seat in forfeits,
                fault=first_fault.get(final.seat),
                decisions=think.decisions,
                think_mean_ms=think.mean_ms,
                think_p95_ms=think.p95_ms,
                think_max_ms=think.max_ms,
                cpu_mean_ms=sum(used) / len(used) if used else None,
                cpu_max_ms=max(used) if used else None,
            )
        )
    faults = tuple(
        FaultRow(f.seat, record.players[f.seat], f.kind, f.round, f.message, f.forfeit)
        for f in record.faults
    )
    return GameResult(
        game_index=job.game.game_index,
        duration_s=time.monotonic() - started,
        end_reason=record.end_reason,
        rounds=len(record.rounds),
        worker=f"{os.uname().nodename}:{os.getpid()}",
        record_json=record.model_dump_json().encode(),
        seats=tuple(rows),
        faults=faults,
    )


# ---------------------------------------------------------------- pool worker process

_STATE: WorkerState | None = None


def _on_term(signum: int, frame: FrameType | None) -> None:
    """Terminated (Ctrl-C in the parent, or the parent died): kill our bots, then exit.

    Further SIGTERMs (pool.terminate() and the parent-death signal can both arrive)
    are ignored from here on: a nested handler would deadlock inside kill().
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        if _STATE is not None:
            _STATE.close()
    finally:
        os._exit(1)


def _close_state() -> None:
    """Normal worker exit (the pool is done): say quit to our bots and clean up."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _STATE is not None:
        _STATE.close()


def init_pool_worker(worker_id: int | None = None) -> None:
    """Pool initializer: own bot processes, die with the parent, leave Ctrl-C to it."""
    global _STATE
    if worker_id is None:
        import multiprocess

        identity = multiprocess.current_process()._identity
        worker_id = identity[0] if identity else 0
    _STATE = WorkerState(worker_id)
    from multiprocess import util

    util.Finalize(None, _close_state, exitpriority=10)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    _die_with_parent(signal.SIGTERM)


def pool_run_job(job: GameJob) -> GameResult:
    assert _STATE is not None, "init_pool_worker was not called"
    return run_job(_STATE, job)


def _die_with_parent(sig: int) -> None:
    """Linux: deliver ``sig`` to this process when its parent dies (kill -9 included)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent is already gone
        os.kill(os.getpid(), sig)
