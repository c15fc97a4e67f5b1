"""Who sits at a seat: a bot process speaking protocol v1, or the built-in random policy.

Both implement :class:`Seat`, the only thing :func:`arena.referee.play_game` knows.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

import orjson
from pydantic import ValidationError

from arena.engine import Game
from arena.engine.tables import MOVE_OF, PLACES, AnyMove
from arena.protocol.encode import encode, encode_decide
from arena.protocol.messages import (
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    GameEnd,
    GameStart,
    Hello,
    MoveReply,
    Quit,
    Ready,
)
from arena.referee.channel import Channel, ChannelError, ReadFailure
from arena.referee.clock import ClockKind, Spent, Stopwatch, TimeControl
from arena.referee.faults import Fault
from arena.referee.manifest import Built
from arena.referee.memory import memory_message, mentions_memory, oom_killed
from arena.referee.toolchains import python_path, sandbox_mounts
from arena.referee.transcript import Transcript
from arena.sandbox import (
    DEFAULT_LEVEL,
    BotProcess,
    Level,
    Limits,
    SandboxBusy,
    SandboxError,
    SandboxUnavailable,
    StderrSink,
    spawn,
)


class Choice:
    """A seat's answer to a decision request (a plain slotted class: built per decision).

    A bot's closing CPU reading, and what it wrote to stderr meanwhile, may be taken
    after the referee has sent the next request to another seat (off the path the bots
    wait on; see :func:`settle_cpu`): :attr:`cpu_ms` and :attr:`stderr` are then filled
    in on first use."""

    __slots__ = (
        "_cpu_ms",
        "_pending",
        "_stderr",
        "between_ms",
        "clock",
        "index",
        "think_ms",
        "warning",
    )

    def __init__(
        self,
        index: int,
        think_ms: float,
        stderr: str | None = None,
        cpu_ms: float | None = None,
        clock: ClockKind = ClockKind.WALL,
        between_ms: float = 0.0,
        warning: str | None = None,
    ) -> None:
        self.index = index
        self.warning = warning
        """Why the decision earned a warning (over the soft limit, within the hard one)."""
        self.think_ms = think_ms
        """Wall time from request written to reply read."""
        self._stderr = stderr
        self._cpu_ms = cpu_ms
        self.clock = clock
        """The clock the decision was charged on."""
        self.between_ms = between_ms
        """CPU time used since the bot's previous reply, before this request (charged
        to this decision on CPU clocks; µs for a bot that waited for its request)."""
        self._pending: tuple[Stopwatch, BotSeat, StderrSink | None, int] | None = None
        """Set while the closing CPU reading is still to be taken: the decision's
        stopwatch, its seat, and the seat's stderr sink with its position at the request."""

    @property
    def cpu_ms(self) -> float | None:
        """CPU time of the bot's process tree meanwhile (None: not measured)."""
        if self._pending is not None:
            self.settle()
        return self._cpu_ms

    @property
    def stderr(self) -> str | None:
        """What the bot wrote to stderr while deciding (capped), if anything."""
        if self._pending is not None:
            self.settle()
        return self._stderr

    def settled(self) -> tuple[float | None, str | None]:
        """(:attr:`cpu_ms`, :attr:`stderr`) in one call: the record reads both of every
        decision."""
        if self._pending is not None:
            self.settle()
        return self._cpu_ms, self._stderr

    def settle(self, reading: int | None = None, *, read: bool = True, freeze: bool = True) -> None:
        """Take the closing CPU reading now (or use ``reading``, taken while the bot was
        idle), let the bot rest until its next request (frozen once another decision runs
        long; never when ``freeze`` is False) and collect its stderr; a no-op when it was
        done already."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        watch, seat, sink, mark = pending
        if read:
            reading = seat.cpu_reading()
        cpu_ms = self._cpu_ms = watch.cpu_ms_at(reading)
        seat._busy_s += (cpu_ms + self.between_ms if cpu_ms is not None else self.think_ms) / 1000
        seat.rest(reading, freeze=freeze)
        if sink is not None:
            self._stderr = sink.since(mark, DECISION_STDERR_BYTES)

    @property
    def spent(self) -> Spent:
        return Spent(self.think_ms, self.cpu_ms, self.clock, None, self.between_ms)

    def __repr__(self) -> str:
        return f"Choice(index={self.index}, think_ms={self.think_ms:.3f}, cpu_ms={self.cpu_ms})"


class _Unsettled(threading.local):
    def __init__(self) -> None:
        self.choices: list[Choice] = []


_UNSETTLED = _Unsettled()
"""Per thread (one game at a time): bot answers whose closing CPU reading is deferred."""

REST_FREEZE_S = 0.001
"""Once another seat's decision has run this long (1 ms, wall), the bots resting between
their turns are frozen until their next request: a decision that ends sooner leaves
them running (an honest bot is blocked reading its stdin; what a pondering one uses is
charged to its next decision), so fast games pay no freeze at all."""


class _Resting(threading.local):
    def __init__(self) -> None:
        self.seats: list[BotSeat] = []


_RESTING = _Resting()
"""Per thread (one game at a time): bots between their turns, not yet frozen."""


def _turn_lists() -> tuple[list[BotSeat], list[Choice]]:
    """This thread's resting seats and deferred answers. A seat keeps them from its game's
    start (:meth:`BotSeat.begin`): a game runs in one thread, and a thread-local's
    attribute costs ~0.3 µs, several times a decision."""
    return _RESTING.seats, _UNSETTLED.choices


def freeze_resting() -> None:
    """Freeze every bot of this thread's game that rests between its turns unfrozen: a
    seat calls it once its own decision has run :data:`REST_FREEZE_S` (a bot's read
    loop, a person at the keyboard), so nothing computes while somebody else thinks."""
    seats = _RESTING.seats
    if seats:
        for seat in seats:
            seat._freeze()
        seats.clear()


def settle_cpu() -> None:
    """Take every deferred closing CPU reading (and stderr) of this thread's game now. A
    seat does it right after writing its request (the answering bots wait for nothing
    then); :func:`arena.referee.play_game` once more when the game ends."""
    _settle_all(_UNSETTLED.choices)


def _settle_all(pending: list[Choice]) -> None:
    if pending:
        for choice in pending:
            choice.settle()
        pending.clear()


class Seat(Protocol):
    name: str

    def begin(self, start: GameStart) -> Fault | None: ...

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault: ...

    def end(self, end: GameEnd) -> None: ...

    def abandon(self) -> None: ...


class RandomSeat:
    """The built-in random policy (also plays for forfeited seats)."""

    def __init__(self, name: str = "random", seed: int | str | None = None) -> None:
        self.name = name
        self._rng = random.Random(seed)

    def begin(self, start: GameStart) -> Fault | None:
        self._rng.seed(f"{start.game_id}:{start.seat}")
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        return Choice(self._rng.randrange(len(options)), 0.0)

    def end(self, end: GameEnd) -> None:
        return None

    def abandon(self) -> None:
        return None


@dataclass
class SandboxSettings:
    level: Level = DEFAULT_LEVEL
    limits: Limits = field(default_factory=Limits)
    slot: int = 0
    """Distinguishes concurrently running bots (each gets its own uid)."""
    toolchains: tuple[str, ...] = ()
    """Organiser-declared toolchain folders, shown read-only inside the sandbox."""
    python_env: tuple[str, ...] = ()
    """Organiser-declared Python environments: shown read-only, on the bot's PYTHONPATH."""


def _text(raw: bytes | None, limit: int = 300) -> str | None:
    if raw is None:
        return None
    text = raw[:limit].decode("utf-8", errors="replace")
    return text + ("…" if len(raw) > limit else "")


_CPU: Final = ClockKind.CPU
_WALL: Final = ClockKind.WALL
"""Per decision: an enum member through its class costs a metaclass ``__getattr__`` hook
on Python 3.11."""

DECISION_STDERR_BYTES = 2048
IDLE_PROBE_S = 0.1
"""``idle_handshake_s``: how often the bot's CPU time is read while it owes ``ready``."""
IDLE_CPU_NS = 2_000_000
"""``idle_handshake_s``: less CPU time than this (2 ms) over the window counts as idle."""
"""Per decision, at most this much of what a bot wrote to stderr goes into the record."""


class BotSeat:
    """A bot process: spawned in the sandbox on first use, handshaken, kept for many
    games when persistent, killed (whole tree) after a fault or on :meth:`close`."""

    def __init__(
        self,
        bot: Built,
        *,
        time_control: TimeControl | None = None,
        sandbox: SandboxSettings | None = None,
        stderr_log: Path | None = None,
        persistent: bool = True,
        max_line: int = MAX_LINE_BYTES,
        transcript: Path | None = None,
        idle_handshake_s: float | None = None,
    ) -> None:
        """``idle_handshake_s``: end a handshake early, with a did-you-flush message, when
        the bot has written no line and used no CPU for this long (``check-bot``: the
        usual cause is a ``ready`` line left in the bot's output buffer, and waiting out
        the whole start-up allowance only delays saying so)."""
        if not isinstance(bot, Built):
            raise TypeError(
                "a BotSeat launches built bots only (a staged, sandbox-built, read-only copy): "
                f"resolve {getattr(bot, 'name', bot)!r} with arena.play.bots.ready_bot() first"
            )
        self.bot = bot
        self.spec = bot.spec
        self.transcript = transcript
        """Copy every protocol line to this file (appending across processes)."""
        self.name = bot.spec.name
        self.time_control = time_control or TimeControl()
        self._hard_limit_ms = self.time_control.hard_limit_ms
        """``time_control`` is frozen: its method, looked up once (a pydantic model's
        attributes cost a ``__getattr__`` hook each, on the per-decision path)."""
        self._banked = self.time_control.bank_ms is not None
        self.sandbox = sandbox or SandboxSettings()
        self.stderr_log = stderr_log
        self.persistent = persistent
        self.max_line = max_line
        self.idle_handshake_s = idle_handshake_s
        self.ready: Ready | None = None
        """The bot's handshake answer (its self-reported name, author, version)."""
        self.spawn_ms: float | None = None
        self.handshake_ms: float | None = None
        self._proc: BotProcess | None = None
        self._chan: Channel | None = None
        self._busy_s = 0.0
        """Think time of the current process (CPU time where measured, else wall time),
        so a persistent process is recycled before it reaches its CPU-seconds rlimit."""
        self._unsettled: Choice | None = None
        """This seat's last answer while its closing CPU reading is deferred."""
        self._last_cpu: int | None = None
        """The bot's CPU reading at its last reply (or ``ready``): whatever it uses after
        that and before its next request is charged to that request (None: unknown)."""
        self.clock = self.time_control.clock
        """The clock that applies to the current process (CPU falls back to wall when
        the bot's CPU time cannot be read)."""
        self._sink: StderrSink | None = None
        """The current process's stderr drain (per decision: no property look-ups)."""
        self._resting, self._deferred = _turn_lists()
        """The lists of :func:`freeze_resting` and :func:`settle_cpu` in the thread of
        this seat's game (taken again when a game begins)."""

    # ---------------------------------------------------------------- lifecycle

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The bot's current process id (None: not started, or killed)."""
        return self._proc.pid if self._proc is not None else None

    def attach(
        self, channel: Channel, process: BotProcess | None = None, clock: ClockKind | None = None
    ) -> None:
        """Talk to a bot started elsewhere instead of spawning one: ``channel`` carries its
        lines, ``process`` (if any) is polled, CPU-read and killed like a spawned one.
        Tests script a bot this way (as python-chess's ``MockTransport`` scripts an
        engine); no handshake is done."""
        self._chan = channel
        self._proc = process
        self._sink = process.sink if process is not None else None
        if clock is not None:
            self.clock = clock

    def start(self) -> Fault | None:
        """Spawn and handshake (if not already running)."""
        if self.alive:
            return None
        self.kill()
        if self.stderr_log is not None:
            _rotate(self.stderr_log)
        t0 = time.monotonic()
        try:
            proc = spawn(
                self.spec.manifest.argv,
                self.spec.folder,
                level=self.sandbox.level,
                limits=self.sandbox.limits,
                slot=self.sandbox.slot,
                stderr_log=self.stderr_log,
                ro_paths=sandbox_mounts(self.sandbox.toolchains, self.sandbox.python_env),
                env=python_path(self.sandbox.python_env),
            )
        except (SandboxUnavailable, SandboxBusy):
            raise  # the arena's problem, not the bot's: never recorded as a fault
        except (OSError, SandboxError) as exc:
            return Fault("init", f"could not start {self.spec.manifest.command!r}: {exc}")
        self.spawn_ms = (time.monotonic() - t0) * 1000
        self._busy_s = 0.0
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        log = Transcript(self.transcript) if self.transcript else None  # closed in kill()
        self._chan = Channel(proc.stdin.fileno(), proc.stdout.fileno(), self.max_line, log)
        self._sink = proc.sink
        self.clock = self._usable_clock(proc)
        hello = Hello(
            limits=self.time_control.limits(self.max_line, self.clock),
            persistent=self.persistent,
        )
        fault = self._handshake(encode(hello), self._stopwatch(self.time_control.init_ms))
        if fault is not None:
            self.kill()
            return fault
        self.handshake_ms = (time.monotonic() - t0) * 1000
        self.rest(proc.cpu_ns())  # start-up is over: from here on its CPU time is a decision's
        return None

    def rest(self, reading: int | None, *, freeze: bool = True) -> None:
        """Between turns: note the bot's CPU time ``reading`` (what it uses from now until
        its next request is charged to that request) and, unless ``freeze`` is False,
        let it be frozen as soon as another seat's decision runs long
        (:func:`freeze_resting`), so that it cannot compute while the other bots think
        nor slow them down on a shared core."""
        self._last_cpu = reading
        if freeze and self._proc is not None and not self._proc.frozen:
            resting = self._resting
            if self not in resting:
                resting.append(self)

    def _freeze(self) -> None:
        """Freeze the bot now (until its next request); see :func:`freeze_resting`."""
        if self._proc is not None:
            self._proc.freeze()

    def _wake(self) -> None:
        """Its turn, or its end: it no longer waits to be frozen."""
        resting = self._resting
        if self in resting:
            resting.remove(self)

    def _usable_clock(self, proc: BotProcess) -> ClockKind:
        if self.time_control.clock is ClockKind.CPU and proc.cpu_ns() is None:
            _log.warning(
                "%s: the bot's CPU time cannot be read (no cgroup accounting, no /proc): "
                "its decisions are timed on the wall clock",
                self.name,
            )
            return ClockKind.WALL
        return self.time_control.clock

    def _stopwatch(self, allowance_ms: int) -> Stopwatch:
        return Stopwatch(
            allowance_ms,
            self.time_control,
            self._proc,
            cores=self.sandbox.limits.cpu_quota,
            clock=self.clock,
        )

    def _read_reply(self, chan: Channel, watch: Stopwatch) -> tuple[bytes | ReadFailure, str]:
        """The next line, or why there is none; a timeout comes with the clock's message."""
        while True:
            line = chan.read_line(watch.wake_at)
            if isinstance(line, ReadFailure) and line.error is ChannelError.TIMEOUT:
                why = watch.overrun()
                if why is None:
                    continue  # CPU clock: still within its CPU time
                return line, why
            return line, ""

    def _read_ready(self, chan: Channel, watch: Stopwatch) -> tuple[bytes | ReadFailure, str]:
        """The ``ready`` line, as :meth:`_read_reply`; with ``idle_handshake_s`` set (and
        the bot's CPU time readable) also a timeout with no reason as soon as the bot has
        been idle that long: no CPU time, no line."""
        idle_s, proc = self.idle_handshake_s, self._proc
        first = proc.cpu_ns() if proc is not None and idle_s is not None else None
        if first is None or idle_s is None or proc is None:
            return self._read_reply(chan, watch)
        idle_from, idle_cpu = time.monotonic(), first
        while True:
            line = chan.read_line(min(watch.wake_at, time.monotonic() + IDLE_PROBE_S))
            if not isinstance(line, ReadFailure) or line.error is not ChannelError.TIMEOUT:
                return line, ""
            now, cpu = time.monotonic(), proc.cpu_ns()
            if cpu is None or cpu - idle_cpu > IDLE_CPU_NS:
                idle_from, idle_cpu = now, cpu if cpu is not None else idle_cpu
            elif now - idle_from >= idle_s:
                return line, ""
            if now >= watch.wake_at:
                why = watch.overrun()
                if why is not None:
                    return line, why

    def _idle_text(self, watch: Stopwatch, partial: bytes) -> str:
        waited = (time.monotonic() - watch.start) * 1000
        idle = f"{self.idle_handshake_s:g} s"
        if partial:
            return (
                f"no complete 'ready' line within {waited:.0f} ms: the bot wrote part of one "
                f"without an end of line and has been idle for {idle} (end the line with "
                "\\n and flush stdout)"
            )
        return (
            f"no `ready` line within {waited:.0f} ms — did you flush stdout? (the bot has "
            f"written nothing and used no CPU for {idle}: it waits, likely for its next "
            "input, with its answer still in its output buffer)"
        )

    def _handshake(self, hello: bytes, watch: Stopwatch) -> Fault | None:
        assert self._chan is not None
        if self._chan.send(hello, watch.ceiling) is not None:
            return self._fault("init", "the bot did not read the hello message")
        line, why = self._read_ready(self._chan, watch)
        if isinstance(line, ReadFailure) and line.error is ChannelError.TIMEOUT and not why:
            return self._fault("init", self._idle_text(watch, line.partial), line.partial)
        if isinstance(line, ReadFailure):
            what = {
                ChannelError.TIMEOUT: f"no 'ready': {why}",
                ChannelError.CLOSED: "the bot exited (or closed its stdout) during the handshake"
                + self._exit_text(),
                ChannelError.TOO_LONG: f"the 'ready' line is longer than {self.max_line} bytes",
            }[line.error]
            return self._fault("init", what, line.partial)
        try:
            obj = orjson.loads(line)
        except (ValueError, RecursionError):  # orjson refuses absurdly deep nesting too
            return self._fault("init", "the answer to 'hello' is not JSON", line)
        if isinstance(obj, dict) and obj.get("type") == "ready":
            version = obj.get("protocol")
            if version != PROTOCOL_VERSION:
                return self._fault(
                    "init",
                    f"the bot speaks protocol {version!r}; this referee speaks "
                    f"{PROTOCOL_VERSION} (see protocol/SPEC.md)",
                    line,
                )
        try:
            self.ready = Ready.model_validate(obj)
        except ValidationError as exc:
            return self._fault("init", f"bad 'ready' message: {_explain(exc)}", line)
        return None

    def close(self) -> None:
        """Say ``quit``, give the bot a moment to exit, then kill whatever is left."""
        if self.alive and self._chan is not None:
            assert self._proc is not None
            self._proc.thaw()
            self._chan.send(encode(Quit()), time.monotonic() + 0.05)
            with contextlib.suppress(Exception):
                self._proc.wait(0.2)
        self.kill()

    def cpu_reading(self) -> int | None:
        """The bot's CPU time so far (ns), None when unknown (see ``BotProcess.cpu_ns``)."""
        proc = self._proc
        return proc.cpu_ns() if proc is not None else None

    def _may_defer(self) -> bool:
        """Whether the closing CPU reading may wait: not when a CPU-clock bank needs it."""
        return not self._banked or self.clock is not _CPU

    def kill(self) -> None:
        if self._unsettled is not None:  # its last CPU reading, while it still exists
            self._unsettled.settle(freeze=False)
            self._unsettled = None
        self._wake()
        self._last_cpu = None
        if self._chan is not None:
            self._chan.close()
            if self._chan.transcript is not None:
                self._chan.transcript.close()
            self._chan = None
        self._sink = None
        if self._proc is not None:
            self._proc.kill()
            self._proc = None

    def abandon(self) -> None:
        """The seat forfeited: stop its process now; a fresh one serves its next game."""
        self.kill()

    # ---------------------------------------------------------------- one game

    def begin(self, start: GameStart) -> Fault | None:
        self._resting, self._deferred = _turn_lists()  # this game's thread
        budget = self.sandbox.limits.cpu_seconds
        if budget is not None and self._busy_s > budget / 2:
            self.close()  # a fresh process with a fresh CPU budget
        fault = self.start()
        if fault is not None:
            return fault
        assert self._chan is not None
        deadline = time.monotonic() + self.time_control.write_timeout_s
        error = self._chan.send(encode(start), deadline)
        if error is ChannelError.CLOSED:
            return self._fault("crash", "the bot stopped reading its stdin" + self._exit_text())
        if error is ChannelError.TIMEOUT:
            return self._fault("timeout", "the bot did not read the game_start message")
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        chan = self._chan
        if chan is None:
            return Fault("crash", "the bot process is gone")
        payload = encode_decide(req_id, game_id, game.current_player, game, options, time_left_ms)
        resting = self._resting
        if resting and self in resting:
            resting.remove(self)  # its turn: it no longer waits to be frozen
        own = self._unsettled
        if own is not None:
            self._unsettled = None
            if own._pending is None:
                own = None
        # When this seat's own last answer is still open (the same seat decides twice in
        # a row), one opening reading taken before the request also closes it, and its
        # stderr is collected before this decision's starts. Otherwise the opening
        # reading waits until the request is out (the bot is only being woken then): the
        # bots never wait for that system call.
        # What the bot used since its last reply is charged to this decision (that reply's
        # closing reading is the baseline; with its own answer still open the baseline is
        # this opening reading, which closes both).
        proc = self._proc
        hard_ms = self._hard_limit_ms(time_left_ms)
        watch = Stopwatch(
            time_left_ms if hard_ms is None else hard_ms,  # the referee waits until this
            self.time_control,
            proc,
            cores=self.sandbox.limits.cpu_quota,
            clock=self.clock,
            read_now=own is not None,
            prior_ns=self._last_cpu if own is None else None,
            soft_ms=None if hard_ms is None else time_left_ms,
        )
        if own is not None:
            own.settle(watch.opening_ns, read=False, freeze=False)
        sink = self._sink
        stderr_mark = sink.mark() if sink is not None else 0
        error = chan.send(payload, watch.ceiling)  # writing costs a bot no CPU time
        if proc is not None:
            proc.thaw()  # after the write: the bot finds its request when it wakes
        if own is None:
            watch.open()
        deferred = self._deferred
        if deferred:
            _settle_all(deferred)  # the other seats' last answers, while this bot thinks
        if error is not None:
            if error is ChannelError.CLOSED:
                return self._fault("crash", "the bot stopped reading its stdin" + self._exit_text())
            return self._fault("timeout", f"the bot did not read its request in {time_left_ms} ms")
        defer = self._may_defer()
        # The others rest unfrozen until this decision has run REST_FREEZE_S.
        freeze_at = watch.start + REST_FREEZE_S if resting else None
        while True:
            wake = watch.wake_at
            line = chan.read_line(wake if freeze_at is None or wake < freeze_at else freeze_at)
            if isinstance(line, ReadFailure):
                if line.error is ChannelError.TIMEOUT:
                    if freeze_at is not None:
                        freeze_at = None
                        freeze_resting()
                        if time.monotonic() < watch.wake_at:
                            continue
                    why = watch.overrun()
                    if why is None:
                        continue  # CPU clock: still within its CPU time
                    closed = self._closed_pipe()
                    if closed:
                        return self._fault(
                            "crash", f"the bot closed its {closed} but kept running", None
                        )
                    if hard_ms is not None:
                        why = "over the hard limit: " + why
                    return self._fault("timeout", why, line.partial or None)
                if line.error is ChannelError.CLOSED:
                    return self._fault(
                        "crash",
                        "the bot exited (or closed its stdout) while thinking" + self._exit_text(),
                        line.partial or None,
                    )
                return self._fault(
                    "malformed", f"a line longer than {self.max_line} bytes", line.partial
                )
            wall_ms = watch.quick_stop() if defer else None
            if wall_ms is not None:  # in time whatever its CPU time: read that later
                plain = _plain_move(line, req_id, len(options))
                result = plain if plain is not None else self._parse_reply(line, req_id, options)
                if result is None:
                    continue
                if isinstance(result, Fault):
                    self._busy_s += wall_ms / 1000
                    return result
                # Its stderr is collected later too, unless collecting may have to wait
                # for the pipe to drain (it is writing, or the wall clock, where that wait
                # would run on the next bot's time): then now, as on the slow path.
                stderr = None
                if sink is not None and (self.clock is _WALL or sink.active_since(stderr_mark)):
                    stderr = sink.since(stderr_mark, DECISION_STDERR_BYTES)
                    sink = None
                choice = Choice(result, wall_ms, stderr, None, self.clock, watch.between_ms)
                choice._pending = (watch, self, sink, stderr_mark)
                self._unsettled = choice
                deferred.append(choice)
                return choice
            spent = watch.stop()
            result = self._parse_reply(line, req_id, options)
            over = watch.verdict(spent)
            if result is None:  # a late answer to an earlier request: ignore it
                if over:  # but a flood of them must not stop the clock
                    return self._fault("timeout", over, line)
                continue
            self._busy_s += (
                spent.cpu_ms + spent.between_ms if spent.cpu_ms is not None else spent.wall_ms
            ) / 1000
            if isinstance(result, Fault):
                return result
            if over:  # answered, but after its time (CPU clocks check between readings)
                if hard_ms is not None:
                    over = "over the hard limit: " + over
                return self._fault("timeout", over, line)
            self.rest(watch.closing_ns)
            stderr = sink.since(stderr_mark, DECISION_STDERR_BYTES) if sink is not None else None
            return Choice(
                result,
                spent.wall_ms,
                stderr,
                spent.cpu_ms,
                spent.clock,
                spent.between_ms,
                watch.warning(spent) if hard_ms is not None else None,
            )

    def _parse_reply(self, line: bytes, req_id: int, options: list[AnyMove]) -> int | Fault | None:
        """The chosen option's index, a fault, or None for a late answer to an earlier
        request (ignored)."""
        try:
            obj = orjson.loads(line)
        except (ValueError, RecursionError):  # orjson refuses absurdly deep nesting too
            return self._fault("malformed", "the reply is not JSON", line)
        if not isinstance(obj, dict):
            return self._fault("malformed", "the reply is not a JSON object", line)
        rid = obj.get("id")
        if type(rid) is int and rid < req_id and obj.get("type") == "move":
            return None
        index = obj.get("index")
        # ``type(...) is int``: 17.0 and true compare equal to 17 and 1 but are not ids.
        if obj.get("type") == "move" and type(rid) is int and rid == req_id and type(index) is int:
            if 0 <= index < len(options):
                return index
            return self._fault(
                "illegal", f"index {index} is not an option (there are {len(options)})", line
            )
        try:
            reply = MoveReply.model_validate(obj)
        except ValidationError as exc:
            return self._fault("malformed", f"not a valid 'move': {_explain(exc)}", line)
        if reply.id != req_id:
            return self._fault("malformed", f"the reply answers id {reply.id}, not {req_id}", line)
        if reply.index is not None:
            return self._fault(
                "illegal", f"index {reply.index} is not an option (there are {len(options)})", line
            )
        if reply.option is None:
            return self._fault("malformed", "the move has neither 'index' nor 'option'", line)
        chosen = _as_move(reply.option.model_dump())
        if chosen is None or chosen not in options:
            what = reply.option.model_dump()
            return self._fault("illegal", f"{what} is not a legal option", line)
        return options.index(chosen)

    def end(self, end: GameEnd) -> None:
        if self._chan is not None and self.alive:
            error = self._chan.send(encode(end), time.monotonic() + 0.5)
            if error is not None:
                self.kill()
        if not self.persistent:
            self.close()
        elif self._proc is not None:  # frozen until its next game's first request
            self._wake()
            self._freeze()

    # ---------------------------------------------------------------- evidence

    def _fault(self, kind: str, message: str, last: bytes | None = None) -> Fault:
        tail = self._proc.stderr_tail() if self._proc is not None else None
        last = last if last is not None else (self._chan.last_line if self._chan else None)
        if kind in ("crash", "malformed", "init") and self._died_of_memory(kind, last, tail):
            # A runtime's out-of-memory report may reach stdout first (the JVM's does):
            # the death is the fault, not the text.
            kind = "init" if kind == "init" else "crash"
            message = f"{memory_message(self.sandbox.limits)}: {message}"
        if self._proc is not None and kind != "init":
            self.rest(self._proc.cpu_ns())  # a bot playing on after a fault rests too
        return Fault(kind, message, _text(last), tail or None)  # type: ignore[arg-type]

    def _died_of_memory(self, kind: str, last: bytes | None, tail: str | None) -> bool:
        if oom_killed(self._proc):
            return True
        if kind != "malformed":
            return mentions_memory(last, tail)
        if not mentions_memory(last, tail):
            # The JVM's native report starts with a bare '#' line and says why in the
            # lines after it, written separately: look at what follows before judging.
            more = b""
            if self._chan is not None:
                more = self._chan.trailing(time.monotonic() + TRAILING_OUTPUT_WAIT_S)
            fresh_tail = self._proc.stderr_tail() if self._proc is not None else None
            if not mentions_memory(more, fresh_tail):
                return False
        # A line that mentions memory is a crash only if the process then dies.
        proc = self._proc
        if proc is None:
            return False
        try:
            proc.wait(MEMORY_DEATH_WAIT_S)
        except Exception:
            return False
        return True

    def _closed_pipe(self) -> str | None:
        """Which of its pipes a still-running bot has closed (the sandbox hides the EOF)."""
        held = self._proc.pipes_held() if self._proc is not None else None
        if held is None or self._proc is None or self._proc.poll() is not None:
            return None
        stdin, stdout = held
        if not stdout:
            return "stdout"
        return None if stdin else "stdin"

    def _exit_text(self) -> str:
        proc = self._proc
        if proc is None:
            return ""
        try:
            proc.wait(0.1)
        except Exception:
            return ""
        code = proc.returncode
        if code is None:
            return ""
        return f" (killed by signal {-code})" if code < 0 else f" (exit status {code})"


KEPT_LOGS = 3
TRAILING_OUTPUT_WAIT_S = 0.5
"""How long a malformed line's follow-up output is awaited (a fault path only)."""
MEMORY_DEATH_WAIT_S = 1.0
"""How long a bot whose stray line mentions memory gets to die before it counts as
``malformed`` rather than an out-of-memory ``crash``."""
_log = logging.getLogger(__name__)


def _rotate(log: Path, keep: int = KEPT_LOGS) -> None:
    """Keep the stderr of the last few processes of a bot (``log.1`` is the previous one):
    a restarted bot must not erase the evidence of why its predecessor died."""
    if not log.exists():
        return
    for i in range(keep, 0, -1):
        older = log.with_name(f"{log.name}.{i}")
        if older.exists():
            if i == keep:
                older.unlink()
            else:
                older.replace(log.with_name(f"{log.name}.{i + 1}"))
    log.replace(log.with_name(f"{log.name}.1"))


def _plain_move(line: bytes, req_id: int, options: int) -> int | None:
    """The usual reply, ``{"type":"move","id":<req_id>,"index":<a valid index>}`` (any
    key order, extra keys allowed as in :class:`MoveReply`): its index; None for anything
    else, which :meth:`BotSeat._parse_reply` judges."""
    try:
        obj = orjson.loads(line)
    except (ValueError, RecursionError):
        return None
    if type(obj) is not dict:
        return None
    rid = obj.get("id")
    index = obj.get("index")
    # ``type(...) is int``: 17.0 and true compare equal to 17 and 1 but are not ids.
    if (
        type(rid) is int
        and rid == req_id
        and type(index) is int
        and 0 <= index < options
        and obj.get("type") == "move"
    ):
        return index
    return None


def _as_move(option: dict[str, int]) -> AnyMove | None:
    if set(option) == {"column"}:
        col = option["column"]
        return PLACES[col] if 0 <= col < 5 else None
    return MOVE_OF.get((option.get("source", 99), option.get("colour", 99), option.get("line", 99)))


def _explain(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'message'}: {err['msg']}"
        for err in exc.errors()[:3]
    )
