"""What runs inside a worker: whole games, with that worker's persistent bot processes.

A job is plain picklable data; the result is a :class:`GameResult` ready for the
store. Workers never touch the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import shutil
import signal
import time
from collections import OrderedDict
from pathlib import Path
from types import FrameType

import orjson

from arena.engine import Game, ReplayError
from arena.engine.tables import AnyMove
from arena.play.job import (
    Announcement,
    FaultRow,
    GameJob,
    GameResult,
    JobUnpickler,
    SeatRow,
    gzip_frames,
    gzip_record,
)
from arena.protocol.messages import GameEnd, GameStart
from arena.referee import BotSeat, SandboxSettings, Seat, play_game
from arena.referee.faults import Fault
from arena.referee.manifest import Built
from arena.referee.referee import GameOutcome
from arena.referee.seats import Choice
from arena.sandbox import abort_all
from arena.sandbox.affinity import pin_worker, unpin
from arena.viewer.frames import Snapshot, fault_steps, frames_of, replay_frames, snapshot

MAX_LIVE_BOTS = 8
"""Bot processes one worker keeps alive at most (least recently used ones are closed):
with 100+ bots a worker's memory stays fixed. At least 4 (one 4-player game)."""
STDERR_TAIL_BYTES = 256 * 1024
"""Of a game's stderr per seat, at most this much (the end) is handed back."""
MAX_SLOT = 1000
"""Slots (per-bot uids) are worker * max_live_bots + a free slot of the worker, modulo
the sandbox's slot range; the sandbox itself gives a different uid when a slot's uid is
still in use."""


class WorkerState:
    """The bot processes one worker keeps alive between games (at most
    ``max_live_bots``, least recently used closed first)."""

    def __init__(self, worker_id: int, max_live_bots: int | None = None) -> None:
        self.worker_id = worker_id
        self.max_live = max(4, max_live_bots or MAX_LIVE_BOTS)
        self.seats: OrderedDict[tuple[str, str], tuple[BotSeat, int]] = OrderedDict()

    def seat_for(self, job: GameJob, seat: int, keep: set[tuple[str, str]]) -> BotSeat:
        bot = job.bots[seat]
        key = _key(bot)
        entry = self.seats.get(key)
        if entry is not None and entry[0].persistent == job.persistent:
            self.seats.move_to_end(key)
            return entry[0]
        if entry is not None:
            entry[0].close()
            del self.seats[key]
        while len(self.seats) >= self.max_live:
            victim = next((k for k in self.seats if k not in keep), None)
            if victim is None:
                break
            self.seats.pop(victim)[0].close()
        used = {slot for _, slot in self.seats.values()}
        slot = next(s for s in range(self.max_live + 4) if s not in used)
        seated = BotSeat(
            bot,
            time_control=job.settings.time,
            sandbox=SandboxSettings(
                level=job.settings.sandbox,
                slot=(self.worker_id * (self.max_live + 4) + slot) % MAX_SLOT,
                toolchains=job.settings.toolchains,
                python_env=job.settings.python_env,
            ),
            stderr_log=self.stderr_log(job, bot),
            persistent=job.persistent,
        )
        self.seats[key] = (seated, slot)
        return seated

    def log_dir(self, job: GameJob) -> Path:
        """Where a seat's stderr log goes: the job's folder, or one of its game's own."""
        return job.log_dir / job.game.game_id if job.collect_stderr else job.log_dir

    def stderr_log(self, job: GameJob, bot: Built) -> Path:
        """The file a seat of ``bot`` in ``job`` writes its stderr to."""
        return self.log_dir(job) / f"{bot.spec.name}.w{self.worker_id}.stderr.log"

    def close(self) -> None:
        for bot, _ in self.seats.values():
            bot.close()
        self.seats.clear()


def _key(bot: Built) -> tuple[str, str]:
    return (bot.spec.name, str(bot.spec.folder))


def run_job(state: WorkerState, job: GameJob) -> GameResult:
    """Play one scheduled game and turn its outcome into store rows.

    A job that asks for its stderr gets fresh bot processes logging to a folder of its
    own (in a worker state of its own, closed after the game), read back and deleted."""
    if job.collect_stderr:
        return _run_collecting_stderr(state.worker_id, job)
    return _play(state, job)[0]


def _play(state: WorkerState, job: GameJob) -> tuple[GameResult, list[BotSeat]]:
    started = time.monotonic()
    keep = {_key(bot) for bot in job.bots}
    seats = [state.seat_for(job, i, keep) for i in range(len(job.bots))]
    settings = job.settings.game(job.game.variant, job.game.deal_seed)
    watch = _Positions() if job.replay_frames else None
    played = [_Watched(seat, watch) for seat in seats] if watch is not None else seats
    outcome = play_game(played, settings, job.game.game_id)
    result = game_result(
        job.game.game_index,
        outcome,
        duration_s=time.monotonic() - started,
        worker=f"{os.uname().nodename}:{os.getpid()}",
        announced=tuple(_announcement(seat) for seat in seats),
        frames=job.replay_frames,
        watched=watch,
    )
    if job.compress:
        result = dataclasses.replace(
            result,
            record_gz=gzip_record(result.record_json),
            replay_gz=gzip_frames(result.replay_json) if result.replay_json is not None else None,
        )
    return result, seats


class _Positions:
    """The replay's positions seen live: one before each decision a seat was asked for,
    and the game itself for the final one (the referee's own game, so the rules' own
    positions, with no second run of the engine)."""

    def __init__(self) -> None:
        self.before: list[Snapshot] = []
        """A :func:`snapshot` before each decision, drawn after the game."""
        self.game: Game | None = None

    def frames(self, outcome: GameOutcome, decisions: int) -> dict[str, object] | None:
        """The frames :func:`replay_frames` draws for the game's ``decisions``, or None when
        a decision was played for a seat without asking it (a forfeited seat's): that
        position was not seen."""
        if self.game is None or len(self.before) != decisions:
            return None
        # Without faults there are no steps to find: no need to read the record.
        steps = fault_steps(outcome.record) if outcome.faults else []
        return frames_of([*self.before, snapshot(self.game)], steps)


class _Watched:
    """A seat as the referee sees it, noting the position before each decision (outside
    the bot's stopwatch, which starts inside ``decide``)."""

    def __init__(self, seat: Seat, watch: _Positions) -> None:
        self.seat = seat
        self.name = seat.name
        self.watch = watch

    def begin(self, start: GameStart) -> Fault | None:
        return self.seat.begin(start)

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        self.watch.before.append(snapshot(game))
        self.watch.game = game
        return self.seat.decide(req_id, game, options, time_left_ms, game_id)

    def end(self, end: GameEnd) -> None:
        self.seat.end(end)

    def abandon(self) -> None:
        self.seat.abandon()


def _run_collecting_stderr(worker_id: int, job: GameJob) -> GameResult:
    state = WorkerState(worker_id)
    folder = state.log_dir(job)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o755)
        try:
            result, seats = _play(state, job)
        finally:
            state.close()
        stderr = []
        for index, seat in enumerate(seats):
            text = _tail(seat.stderr_log) if seat.stderr_log is not None else ""
            if text:
                stderr.append((index, text))
        return dataclasses.replace(result, stderr=tuple(stderr))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _tail(path: Path) -> str:
    """The last :data:`STDERR_TAIL_BYTES` of a log (what a store keeps of a game's stderr)."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def game_result(
    game_index: int,
    outcome: GameOutcome,
    *,
    duration_s: float,
    worker: str,
    announced: tuple[Announcement | None, ...] = (),
    frames: bool = True,
    watched: _Positions | None = None,
) -> GameResult:
    """A refereed game as the store keeps it: seats, faults, the record, and the replay's
    frames, drawn here once (a finished game never changes) so that no report has to
    re-run the engine for it (None for a record that does not verify: a report says so).
    Frames come from the positions ``watched`` during play where it saw them all, else
    from a replay of the record."""
    data = outcome.data  # plain data: validating it into a GameRecord costs ~100 µs a game
    players: list[str] = data["players"]
    first_fault: dict[int, str] = {}
    for f in outcome.faults:
        first_fault.setdefault(f.seat, f.kind)
    forfeits = {f.seat for f in outcome.faults if f.forfeit}
    warned = [0] * len(players)
    for w in outcome.warnings:
        warned[w.seat] += 1
    rows = []
    cpu: list[list[float]] = [[] for _ in players]
    decisions = 0
    for rnd in data["rounds"]:
        decisions += len(rnd["decisions"])
        for d in rnd["decisions"]:
            if d["cpu_ms"] is not None:
                cpu[d["seat"]].append(d["cpu_ms"])
    for final, think in zip(data["final"], outcome.think, strict=True):
        seat = final["seat"]
        used = cpu[seat]
        full_rows = final.get("full_rows")
        rows.append(
            SeatRow(
                seat=seat,
                bot=final["player"],
                score=final["total"],
                round_score=final["rounds"],
                bonus_rows=final["rows"],
                bonus_columns=final["columns"],
                bonus_colours=final["colours"],
                rank=final["rank"],
                full_rows=full_rows if full_rows is not None else final["rows"] // 2,
                forfeit=seat in forfeits,
                fault=first_fault.get(seat),
                decisions=think.decisions,
                think_mean_ms=think.mean_ms,
                think_p95_ms=think.p95_ms,
                think_max_ms=think.max_ms,
                cpu_mean_ms=sum(used) / len(used) if used else None,
                cpu_max_ms=max(used) if used else None,
                warnings=warned[seat],
            )
        )
    faults = tuple(
        FaultRow(f.seat, players[f.seat], f.kind, f.round, f.message, f.forfeit)
        for f in outcome.faults
    )
    drawn: bytes | None = None
    if frames:
        seen = watched.frames(outcome, decisions) if watched is not None else None
        if seen is not None:
            drawn = orjson.dumps(seen)
        else:
            with contextlib.suppress(ReplayError):
                drawn = orjson.dumps(replay_frames(outcome.record))
    return GameResult(
        game_index=game_index,
        duration_s=duration_s,
        end_reason=data["end_reason"],
        rounds=len(data["rounds"]),
        worker=worker,
        record_json=outcome.record_json,
        seats=tuple(rows),
        faults=faults,
        announced=announced,
        replay_json=drawn,
    )


def _announcement(seat: Seat) -> Announcement | None:
    """What a bot seat said in ``ready`` (None: no handshake, or not a bot)."""
    ready = seat.ready if isinstance(seat, BotSeat) else None
    if ready is None:
        return None
    return Announcement(ready.name, ready.author, ready.version)


# ---------------------------------------------------------------- pool worker process

_STATE: WorkerState | None = None


def _on_term(signum: int, frame: FrameType | None) -> None:
    """Terminated (Ctrl-C in the parent, or the parent died): kill our bots at once, then
    exit.

    This handler may run in the middle of anything the worker does, a bot's own
    ``kill()`` included (holding its lock), so it takes no lock and waits for nothing
    (:func:`arena.sandbox.process.abort_all`), and an alarm ends the process should even
    that stall.  Further SIGTERMs (pool.terminate() and the parent-death signal can both
    arrive) are ignored from here on.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(2)
    try:
        unpin()  # a worker on one core may share it with a busy process: use any core now
        abort_all()  # no polite quit: each would wait for its bot to exit
    finally:
        os._exit(1)


def _close_state() -> None:
    """Normal worker exit (the pool is done): say quit to our bots and clean up."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _STATE is not None:
        _STATE.close()


def init_pool_worker(
    worker_id: int | None = None,
    one_core: bool = False,
    parent: int | None = None,
    core_order: list[int] | None = None,
) -> None:
    """Pool initializer: own bot processes, die with the parent (pid ``parent``), leave
    Ctrl-C to it; with ``one_core``, run on one core (with the bots it starts), a core no
    other arena worker on this machine holds where there is one (see
    :func:`arena.sandbox.affinity.pin_worker`; ``core_order``: the pool's
    :func:`~arena.sandbox.affinity.claim_order`)."""
    global _STATE
    if worker_id is None:
        import multiprocess

        # A pool made in a child process (the server's ladder process) numbers its
        # workers (child, k): the last number tells them apart.
        identity = multiprocess.current_process()._identity
        worker_id = identity[-1] if identity else 0
    _STATE = WorkerState(worker_id)
    if one_core:
        pin_worker(max(0, worker_id - 1), core_order)  # pool identities count from 1
    from multiprocess import util

    util.Finalize(None, _close_state, exitpriority=10)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    die_with_parent(signal.SIGTERM, parent)


def pool_run_job(job: GameJob) -> GameResult:
    assert _STATE is not None, "init_pool_worker was not called"
    try:
        return run_job(_STATE, job)
    except Exception as exc:
        tag_failure(exc, job)
        raise


def pool_run_pickled(job: bytes) -> bytes:
    """:func:`pool_run_job` on a job pickled by :class:`~arena.play.job.JobPickler`, its
    result pickled back by the standard pickler: the pool's own pickler (``dill``, pure
    Python) took ~1.8 ms per job and ~0.5 ms per result, the standard one ~80 and ~10 µs,
    and a job whose settings and bots this worker has seen ~8 µs (the pool only carries
    bytes)."""
    return pickle.dumps(pool_run_job(_JOBS.loads(job)), pickle.HIGHEST_PROTOCOL)


_JOBS = JobUnpickler()
"""This worker's reader of jobs (the parts its jobs share, unpickled once)."""


def tag_failure(exc: Exception, job: GameJob) -> Exception:
    """Mark ``exc`` with the game it stopped (it travels back with the exception, so a
    caller that voids games, the server's ladder, knows which; see :func:`failed_game`)."""
    exc.arena_game_index = job.game.game_index  # type: ignore[attr-defined]
    return exc


def failed_game(exc: BaseException) -> int | None:
    """The game index an executor's exception stopped (None: not a game's failure)."""
    index = getattr(exc, "arena_game_index", None)
    return index if isinstance(index, int) else None


def die_with_parent(sig: int, parent: int | None) -> None:
    """Linux: deliver ``sig`` to this process when its parent dies (kill -9 included).
    A parent that died before this was set is noticed by our new parent's pid (a
    subreaper's, not always 1's)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    adopter = os.getppid()
    # With the parent's pid known, only another parent means it is gone: the parent may
    # be pid 1 itself (the first process of a PID namespace or a container).
    if adopter != parent if parent is not None else adopter == 1:
        os.kill(os.getpid(), sig)
