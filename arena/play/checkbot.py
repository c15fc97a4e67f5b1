"""``arena check-bot``: build a bot, handshake, play quick games against the random
policy, and explain any protocol mistake in plain words."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from arena.engine import Game, Variant
from arena.engine.record import FaultRecord, WarningRecord
from arena.engine.tables import AnyMove
from arena.kits import KITS, kit_for
from arena.play.build import BuildError, build_bot
from arena.protocol.messages import GameEnd, GameStart
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.faults import Fault
from arena.referee.manifest import BotManifest, BotSpec, Built
from arena.referee.referee import GameSettings, play_game
from arena.referee.seats import BotSeat, Choice, RandomSeat, SandboxSettings, Seat
from arena.referee.toolchains import (
    command_program,
    explain_build_failure,
    explain_not_found,
    find_in_sandbox,
)

ADVICE: dict[str, str] = {
    "init": (
        "Answer the first line ('hello') with one line "
        '{"type":"ready","protocol":1,"name":"..."} within the init time.'
    ),
    "timeout": ("Reply to every 'decide' within time_left_ms; log to stderr, not stdout."),
    "malformed": (
        "Each reply must be one JSON object on one line: "
        '{"type":"move","id":<the request id>,"index":<0-based option index>} '
        '(or "option": <one of the options>). Nothing else may be written to stdout.'
    ),
    "illegal": (
        "Choose only from the request's 'options': index 0..len(options)-1, or an "
        "option object exactly as listed."
    ),
    "crash": (
        "The process exited or closed its stdout. Keep reading stdin until 'quit'; "
        "see the stderr tail for the error."
    ),
}


PLAYER_COUNTS = (2, 3, 4)
SLOW_FRACTION = 0.5
"""Warn when the handshake or a decision was charged more than this share of its time: a
loaded tournament machine can easily double a time (on wall clocks)."""
IDLE_HANDSHAKE_S = 1.5
"""A bot that owes ``ready`` and has written nothing and used no CPU for this long is told
at once to flush stdout, instead of after the whole start-up allowance (25 s of wall time
on the default CPU clock)."""
GAMES_BUDGET_S = 20.0
"""``arena check-bot`` starts no new game after this much wall time of games (the first is
always played): a bot that sleeps on a CPU clock passes, and its check stays short."""
WAITS_FRACTION = 0.5
"""Note a bot whose decisions' wall time exceeds its charged CPU time by more than this
share of the time per decision: free on a CPU clock, counted on a wall clock."""

NO_REPLY_ADVICE = (
    "The bot wrote {line} where a 'move' was expected. It looks like an answer to a message "
    "that needs no reply ('game_start', 'game_end', or a type the bot does not know): the "
    "line waits in the pipe and is read as the answer to the next 'decide'. Answer only "
    "'hello' (with 'ready', once) and 'decide' (with one 'move'); read everything else "
    "silently."
)


def flush_advice(language: str | None) -> str:
    """How to flush stdout, for the bot's language (all of them when it is unknown)."""
    kit = kit_for(language)
    if kit is not None:
        return f"{kit.language}: {kit.flush}"
    return "; ".join(f"{k.language}: {k.flush}" for k in KITS)


def advice(kind: str, language: str | None) -> str:
    """How to fix a fault kind, naming the flush idiom of the bot's language."""
    text = ADVICE[kind]
    if kind in ("init", "timeout"):
        text += f" Flush stdout after every line ({flush_advice(language)})."
    return text


def answers_no_request(line: str | None) -> bool:
    """A JSON object that is not a move: an answer to a message that needs no reply."""
    if not line:
        return False
    try:
        obj = orjson.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") != "move"


@dataclass
class CheckReport:
    name: str
    language: str | None = None
    build_s: float | None = None
    spawn_ms: float | None = None
    handshake_ms: float | None = None
    init_ms: int = 0
    move_ms: int = 0
    reported: dict[str, str | None] = field(default_factory=dict)
    games: int = 0
    wins: int = 0
    played: dict[tuple[int, str], int] = field(default_factory=dict)
    """Games per (players, wall)."""
    scores: list[int] = field(default_factory=list)
    think_ms: list[float] = field(default_factory=list)
    """Wall time per decision, request written to reply read."""
    charged_ms: list[float] = field(default_factory=list)
    """What each decision was charged on the clock in use (:attr:`clock`)."""
    clock: str = "cpu"
    """The clock the decisions were charged on ("cpu", or "wall" also where a CPU clock fell
    back to wall time because the bot's CPU time could not be read)."""
    handshake_charged_ms: float | None = None
    """The handshake's charge: CPU time on a CPU clock, else its wall time."""
    slow: list[tuple[float, int]] = field(default_factory=list)
    """(charged ms, time it had) of decisions charged more than SLOW_FRACTION of it."""
    cpu_ms: list[float] = field(default_factory=list)
    """CPU time of the bot's process tree per decision (where measured)."""
    planned: int = 0
    """Games the check meant to play."""
    budget_s: float | None = None
    """The games' wall-time budget, when it cut the check short (else None)."""
    faults: list[tuple[str, FaultRecord]] = field(default_factory=list)
    """(game description, fault)"""
    time_warnings: list[tuple[str, WarningRecord]] = field(default_factory=list)
    """(game description, warning): decisions over the soft limit, within the hard one."""
    problems: list[str] = field(default_factory=list)
    """Failures found before any game (build, missing program), in plain words."""
    folder: Path | None = None
    """The built bot folder that played."""

    @property
    def ok(self) -> bool:
        return not self.faults and not self.problems and self.games > 0

    def latency(self) -> tuple[float, float, float] | None:
        """(median, p95, max) wall time per decision in ms."""
        return spread(self.think_ms)

    def charged(self) -> tuple[float, float, float] | None:
        """(median, p95, max) charged time per decision in ms."""
        return spread(self.charged_ms)

    def warnings(self) -> list[str]:
        """Things that passed here but may fail on a busier machine."""
        notes = []
        handshake = self.handshake_charged_ms
        if handshake is not None and handshake > SLOW_FRACTION * self.init_ms:
            notes.append(
                f"the handshake was charged {handshake:.0f} ms of {self.clock} time, more than "
                f"half of the {self.init_ms} ms init time: on a loaded machine it may miss it. "
                "Start faster (load tables lazily, answer 'hello' first), or ask for more "
                "--init-time."
            )
        if self.slow:
            worst, had = max(self.slow)
            notes.append(
                f"{len(self.slow)} decision(s) were charged more than half of their time "
                f"(worst {worst:.0f} ms of {had} ms, {self.clock} clock): on a loaded machine "
                "they may time out. Stop thinking well before time_left_ms."
            )
        if self.time_warnings:
            where, first = self.time_warnings[0]
            notes.append(
                f"{len(self.time_warnings)} decision(s) went over the soft time limit and "
                f"earned a warning (first in the {where}: {first.message}); under a warning "
                "limit, enough of them in one game forfeit it. Stop thinking before "
                "time_left_ms."
            )
        waits = self.waits_ms()
        if self.clock == "cpu" and waits is not None:
            notes.append(
                f"the bot waits (sleeps or blocks) about {waits:.0f} ms per decision: free "
                "on this CPU clock, but an arena on wall clocks (--clock wall) counts it."
            )
        if self.budget_s is not None:
            notes.append(
                f"{self.games} of {self.planned} games played: check-bot starts no game after "
                f"{self.budget_s:g} s of games (these decisions took {self._wall_median():.0f} "
                "ms of wall time each, median)."
            )
        return notes

    def _wall_median(self) -> float:
        return statistics.median(self.think_ms) if self.think_ms else 0.0

    def waits_ms(self) -> float | None:
        """Median wall time not charged per decision, when it is a notable share of the
        time per decision (None otherwise, or when CPU time was not measured)."""
        if not self.think_ms or len(self.cpu_ms) != len(self.think_ms):
            return None
        waits = statistics.median(w - c for w, c in zip(self.think_ms, self.cpu_ms, strict=True))
        return waits if waits > WAITS_FRACTION * self.move_ms else None

    def explanations(self) -> list[str]:
        """Plain-words causes beyond the fault kind's general advice."""
        notes = []
        for _where, fault in self.faults:
            if fault.kind in ("malformed", "illegal") and answers_no_request(fault.last_message):
                notes.append(NO_REPLY_ADVICE.format(line=fault.last_message))
                break
        return notes


def spread(values: list[float]) -> tuple[float, float, float] | None:
    """(median, p95, max) of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return statistics.median(ordered), p95, ordered[-1]


def charge_ms(choice: Choice) -> float:
    """What a decision was charged: its CPU time (pondering between turns included) on a
    CPU clock, else its wall time."""
    cpu = choice.cpu_ms
    if choice.clock is ClockKind.CPU and cpu is not None:
        return cpu + choice.between_ms
    return choice.think_ms


class _TimedSeat:
    """Passes everything to the bot, keeping each answer and the time it had, so the
    decisions' charges can be read once the game is over (CPU readings may settle late)."""

    def __init__(self, bot: BotSeat, report: CheckReport) -> None:
        self.bot = bot
        self.name = bot.name
        self.report = report
        self.answers: list[tuple[Choice, int]] = []

    def settle(self) -> None:
        """Charge this game's answers to the report (their CPU readings are taken now)."""
        for choice, time_left_ms in self.answers:
            charged = charge_ms(choice)
            self.report.charged_ms.append(charged)
            if choice.clock is ClockKind.WALL:
                self.report.clock = "wall"
            if charged > SLOW_FRACTION * time_left_ms:
                self.report.slow.append((charged, time_left_ms))
        self.answers.clear()

    def begin(self, start: GameStart) -> Fault | None:
        return self.bot.begin(start)

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        answer = self.bot.decide(req_id, game, options, time_left_ms, game_id)
        if isinstance(answer, Choice):
            self.answers.append((answer, time_left_ms))
        return answer

    def end(self, end: GameEnd) -> None:
        self.bot.end(end)

    def abandon(self) -> None:
        self.bot.abandon()


def _interleaved(
    player_counts: tuple[int, ...], walls: tuple[Variant, ...] = tuple(Variant)
) -> list[tuple[int, Variant]]:
    """Every (players, wall), the walls alternating, so that a check cut short by its
    budget has still seen both walls and several player counts."""
    order = [
        (n, walls[(i + j) % len(walls)])
        for j in range(len(walls))
        for i, n in enumerate(player_counts)
    ]
    return order


def declared_beyond(
    manifest: BotManifest, player_counts: tuple[int, ...], walls: tuple[Variant, ...]
) -> str | None:
    """Why a check of these games does not fit what the bot declares it plays, or None."""
    outside = [
        f"{n}p {wall.value}" for n in player_counts for wall in walls if not manifest.plays(n, wall)
    ]
    if not outside:
        return None
    declared = manifest.declared_limits()
    fits_players = sorted(set(player_counts) & set(manifest.players or player_counts))
    fits_walls = [w.value for w in walls if manifest.walls is None or w in manifest.walls]
    hint = (
        f"check only what your competition plays, e.g. --players "
        f"{','.join(map(str, fits_players))} --walls {','.join(fits_walls)}"
        if fits_players and fits_walls
        else "it declares none of the games asked for"
    )
    return (
        f"the bot declares {declared} in bot.toml, so it cannot play {', '.join(outside)}; {hint}"
    )


def check_bot(
    spec: BotSpec,
    sandbox: SandboxSettings,
    time_control: TimeControl,
    games_per_setting: int = 1,
    player_counts: tuple[int, ...] = PLAYER_COUNTS,
    built: Built | None = None,
    budget_s: float | None = None,
    walls: tuple[Variant, ...] = tuple(Variant),
) -> CheckReport:
    """Build, handshake, then games of every player count on both walls vs random.

    Everything, a failed build included, ends up in the report.  ``built``: the bot
    already built (by a caller with its own build limits); no build then. ``budget_s``:
    start no game after this much wall time of games (the first is always played).
    ``player_counts`` and ``walls``: what the competition plays; a bot whose bot.toml
    declares it cannot play one of them fails before any game, saying so."""
    report = CheckReport(
        name=spec.name,
        language=spec.manifest.language,
        init_ms=time_control.init_ms,
        move_ms=time_control.move_ms,
        clock=time_control.clock.value,
    )
    beyond = declared_beyond(spec.manifest, player_counts, walls)
    if beyond:
        report.problems.append(beyond)
        return report
    try:
        built = built or build_bot(spec, sandbox.level, toolchains=sandbox.toolchains)
    except BuildError as exc:
        report.problems.append(explain_build_failure(str(exc), sandbox.toolchains))
        return report
    report.build_s = built.seconds if built.ran else None
    spec = built.spec
    report.folder = spec.folder
    program = command_program(spec.manifest.command)
    if program and not find_in_sandbox(program, spec.folder, sandbox.toolchains):
        report.problems.append(explain_not_found(program, "run", sandbox.toolchains))
        return report
    bot = BotSeat(
        built,
        time_control=time_control,
        sandbox=sandbox,
        persistent=True,
        idle_handshake_s=IDLE_HANDSHAKE_S,
    )
    timed = _TimedSeat(bot, report)
    try:
        start_fault = bot.start()
        report.spawn_ms, report.handshake_ms = bot.spawn_ms, bot.handshake_ms
        if bot.clock is ClockKind.WALL:
            report.clock = "wall"
        startup_cpu = bot.cpu_reading() if start_fault is None else None
        report.handshake_charged_ms = (
            startup_cpu / 1e6
            if report.clock == "cpu" and startup_cpu is not None
            else report.handshake_ms
        )
        if bot.ready is not None:
            report.reported = {
                "name": bot.ready.name,
                "author": bot.ready.author,
                "version": bot.ready.version,
            }
        if start_fault is not None:
            report.faults.append(
                (
                    "handshake",
                    FaultRecord(
                        seat=0,
                        kind=start_fault.kind,
                        round=0,
                        message=start_fault.message,
                        last_message=start_fault.last_message,
                        stderr_tail=start_fault.stderr_tail,
                        forfeit=True,
                    ),
                )
            )
            return report
        settings_order = [
            (n_players, variant, g)
            for g in range(games_per_setting)
            for n_players, variant in _interleaved(player_counts, walls)
        ]
        report.planned = len(settings_order)
        games_start = time.monotonic()
        for k, (n_players, variant, g) in enumerate(settings_order):
            if k and budget_s is not None and time.monotonic() - games_start > budget_s:
                report.budget_s = budget_s
                break
            my_seat = k % n_players
            seats: list[Seat] = [RandomSeat(f"random{i}") for i in range(n_players - 1)]
            seats.insert(my_seat, timed)
            settings = GameSettings(variant=variant, seed=1000 + k, time_control=time_control)
            game_id = f"check-{n_players}p-{variant.value}-{g}"
            record = play_game(seats, settings, game_id).record
            timed.settle()
            report.games += 1
            key = (n_players, variant.value)
            report.played[key] = report.played.get(key, 0) + 1
            report.scores.append(record.final[my_seat].total)
            report.wins += record.final[my_seat].rank == 1
            mine = [d for r in record.rounds for d in r.decisions if d.seat == my_seat]
            report.think_ms += [d.think_ms for d in mine if d.think_ms is not None]
            report.cpu_ms += [d.cpu_ms for d in mine if d.cpu_ms is not None]
            where = f"{n_players}-player {variant.value} game (seat {my_seat})"
            report.faults += [(where, f) for f in record.faults if f.seat == my_seat]
            report.time_warnings += [(where, w) for w in record.warnings if w.seat == my_seat]
    finally:
        bot.close()
    return report
