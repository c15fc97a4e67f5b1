"""``arena check-bot``: build a bot, handshake, play quick games against the random
policy, and explain any protocol mistake in plain words."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from arena.engine import Variant
from arena.engine.record import FaultRecord
from arena.referee.build import build_bot
from arena.referee.clock import TimeControl
from arena.referee.manifest import BotSpec
from arena.referee.referee import GameSettings, play_game
from arena.referee.seats import BotSeat, RandomSeat, SandboxSettings, Seat

ADVICE: dict[str, str] = {
    "init": (
        "Answer the first line ('hello') with one line "
        '{"type":"ready","protocol":1,"name":"..."} within the init time, and flush stdout.'
    ),
    "timeout": (
        "Reply to every 'decide' within time_left_ms. Flush stdout after each line "
        "(Python: print(..., flush=True); C: fflush(stdout)); log to stderr, not stdout."
    ),
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


@dataclass
class CheckReport:
    name: str
    build_s: float | None = None
    spawn_ms: float | None = None
    handshake_ms: float | None = None
    reported: dict[str, str | None] = field(default_factory=dict)
    games: int = 0
    wins: int = 0
    scores: list[int] = field(default_factory=list)
    think_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    """CPU time of the bot's process tree per decision (where measured)."""
    faults: list[tuple[str, FaultRecord]] = field(default_factory=list)
    """(game description, fault)"""

    @property
    def ok(self) -> bool:
        return not self.faults and self.games > 0

    def latency(self) -> tuple[float, float, float] | None:
        """(median, p95, max) think time in ms."""
        if not self.think_ms:
            return None
        ordered = sorted(self.think_ms)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return statistics.median(ordered), p95, ordered[-1]


def check_bot(
    spec: BotSpec,
    sandbox: SandboxSettings,
    time_control: TimeControl,
    games_per_variant: int = 2,
) -> CheckReport:
    """Raises BuildError when the build fails; everything else ends up in the report."""
    report = CheckReport(name=spec.name)
    built = build_bot(spec, sandbox.level)
    report.build_s = built.seconds if built.ran else None
    bot = BotSeat(built.spec, time_control=time_control, sandbox=sandbox, persistent=True)
    try:
        start_fault = bot.start()
        report.spawn_ms, report.handshake_ms = bot.spawn_ms, bot.handshake_ms
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
        for variant in Variant:
            for g in range(games_per_variant):
                my_seat = g % 2
                seats: list[Seat] = [RandomSeat("random")]
                seats.insert(my_seat, bot)
                settings = GameSettings(variant=variant, seed=1000 + g, time_control=time_control)
                outcome = play_game(seats, settings, f"check-{variant.value}-{g}")
                record = outcome.record
                report.games += 1
                report.scores.append(record.final[my_seat].total)
                report.wins += record.final[my_seat].rank == 1
                report.think_ms += [
                    d.think_ms
                    for r in record.rounds
                    for d in r.decisions
                    if d.seat == my_seat and d.think_ms is not None
                ]
                report.cpu_ms += [
                    d.cpu_ms
                    for r in record.rounds
                    for d in r.decisions
                    if d.seat == my_seat and d.cpu_ms is not None
                ]
                where = f"{variant.value} game {g + 1} (seat {my_seat})"
                report.faults += [(where, f) for f in record.faults if f.seat == my_seat]
    finally:
        bot.close()
    return report
