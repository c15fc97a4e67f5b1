"""One game from start to record: seats, clocks, faults. Knows no tournaments."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from arena.engine import Game, Variant
from arena.engine.record import MOVE_TEXT, FaultRecord, GameRecord, WarningRecord, record_data
from arena.engine.tables import DEFAULT_ROUND_LIMIT
from arena.protocol.messages import GameEnd, GameStart, SeatResult
from arena.referee.clock import Clock, TimeControl
from arena.referee.faults import Fault, FaultPolicy
from arena.referee.seats import Choice, Seat, freeze_resting, settle_cpu

GAME_STDERR_BYTES = 32 * 1024
"""Per seat and game, at most this much per-decision stderr goes into the record
(the full log is in the bot's stderr file)."""


@dataclass(frozen=True)
class GameSettings:
    variant: Variant = Variant.COLOURED
    seed: int = 0
    round_limit: int = DEFAULT_ROUND_LIMIT
    time_control: TimeControl = field(default_factory=TimeControl)
    fault_policy: FaultPolicy = field(default_factory=FaultPolicy)


@dataclass(frozen=True)
class ThinkStats:
    decisions: int
    mean_ms: float
    p95_ms: float
    max_ms: float

    @classmethod
    def of(cls, times: Sequence[float]) -> ThinkStats:
        if not times:
            return cls(0, 0.0, 0.0, 0.0)
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return cls(len(ordered), math.fsum(ordered) / len(ordered), p95, ordered[-1])


@dataclass(frozen=True)
class GameOutcome:
    """What a refereed game produced: the verifiable record and per-seat statistics.

    The record is kept as the plain data the referee built, laid out as
    ``GameRecord.model_dump_json`` writes it (fields in order, defaults present, the
    excluded ones absent), so that storing it takes one ``orjson.dumps``
    (:attr:`record_json`). Validating it into a :class:`GameRecord` (~100 µs a game, a
    model per decision) is left to those who read it as one (:attr:`record`), which a
    tournament's worker does not: that check is of the referee's own code, and
    ``tests/referee/test_outcome_record.py`` makes it on games with every kind of
    decision a record holds.
    """

    data: dict[str, Any]
    """The record as JSON-ready data (do not change it: :attr:`record` is made from it)."""
    faults: list[FaultRecord]
    warnings: list[WarningRecord]
    think: list[ThinkStats]

    @functools.cached_property
    def record(self) -> GameRecord:
        """The record, validated (strictly: the referee's own data needs no coercion)."""
        return GameRecord.model_validate(self.data, strict=True)

    @functools.cached_property
    def record_json(self) -> bytes:
        """The record as JSON, byte for byte what ``record.model_dump_json()`` gives."""
        return orjson.dumps(self.data)


def play_game(seats: Sequence[Seat], settings: GameSettings, game_id: str) -> GameOutcome:
    """Referee one game. Never raises for anything a bot does: faults are recorded.

    A forfeited seat is played to the end by a seeded random policy, so the
    other seats' game still counts; it ranks last.
    """
    n = len(seats)
    freeze_resting()  # bots a game ended by an error left waiting to be frozen
    game = Game.new(
        players=n, variant=settings.variant, seed=settings.seed, round_limit=settings.round_limit
    )
    names = [seat.name for seat in seats]
    policy = settings.fault_policy
    clocks = [Clock(settings.time_control) for _ in seats]
    auto_rngs: dict[int, random.Random] = {}
    """Made on a seat's first fault (seeding from a string costs ~10 µs per seat)."""

    def auto_index(seat: int, options: int) -> int:
        rng = auto_rngs.get(seat)
        if rng is None:
            rng = auto_rngs[seat] = random.Random(f"{settings.seed}:{game_id}:{seat}:auto")
        return rng.randrange(options)

    strikes = [0] * n
    warned = [0] * n
    warnings: list[WarningRecord] = []
    warning_limit = settings.time_control.warnings
    hard_limit = settings.time_control.hard_move_ms is not None
    round_start = settings.time_control.round_start_ms is not None
    last_round = [0] * n
    """By seat, the round of its latest decision (round-start time is for its first)."""
    forfeited: list[bool] = [False] * n
    faults: list[FaultRecord] = []
    think: list[list[float]] = [[] for _ in seats]
    decisions: list[Choice | None] = []
    """Per decision, in order: the seat's answer, or None where the referee played for a
    forfeited or faulted seat; made the record's decisions once the game is over."""

    def fault(seat: int, f: Fault, always_forfeit: bool = False) -> None:
        strikes[seat] += 1
        lost = always_forfeit or policy.forfeits(f.kind, strikes[seat])
        faults.append(
            FaultRecord(
                seat=seat,
                kind=f.kind,
                round=game.round,
                message=f.message,
                last_message=f.last_message,
                stderr_tail=f.stderr_tail,
                forfeit=lost,
            )
        )
        if lost:
            forfeited[seat] = True
            seats[seat].abandon()

    for i, seat in enumerate(seats):
        start = GameStart(
            game_id=game_id,
            seat=i,
            n_players=n,
            variant=settings.variant.value,
            players=names,
            round_limit=settings.round_limit,
        )
        problem = seat.begin(start)
        if problem is not None:
            fault(i, problem, always_forfeit=True)  # a bot that cannot start cannot play

    req_id = 0
    is_over, legal_moves, apply = game.is_over, game.legal_moves, game.apply
    banked = settings.time_control.bank_ms is not None  # else charging is a no-op
    while not is_over():
        current = game.current_player
        options = legal_moves()
        if forfeited[current]:
            index = auto_index(current, len(options))
            decisions.append(None)
        else:
            req_id += 1
            first = round_start and last_round[current] != game.round
            last_round[current] = game.round
            answer = seats[current].decide(
                req_id,
                game,
                options,
                clocks[current].allowance_ms(first),
                game_id,
            )
            if isinstance(answer, Choice):
                index = answer.index
                if banked:
                    clocks[current].charge(answer.spent)
                think[current].append(answer.think_ms)
                decisions.append(answer)  # its CPU time may be read later
                if answer.warning is not None:
                    warnings.append(
                        WarningRecord(seat=current, round=game.round, message=answer.warning)
                    )
                    warned[current] += 1
                    count = warned[current]
                    if warning_limit is not None and count >= warning_limit:
                        # The move counts (as in the course's framework); the seat is out.
                        fault(
                            current,
                            Fault(
                                "timeout",
                                f"warning {count} of {warning_limit}, which forfeits: "
                                f"{answer.warning}",
                            ),
                            always_forfeit=True,
                        )
            else:
                # Over a hard limit forfeits at once, whatever the fault policy.
                fault(current, answer, always_forfeit=hard_limit and answer.kind == "timeout")
                index = auto_index(current, len(options))
                decisions.append(None)
        apply(options[index])

    settle_cpu()
    lost_seats = [i for i in range(n) if forfeited[i]]
    made_rounds = _decision_records(game, decisions, [GAME_STDERR_BYTES] * n)
    data = record_data(game, names, lost_seats, made_rounds)
    data["faults"] = [f.model_dump() for f in faults]
    data["clock"] = settings.time_control.clock.value
    if warnings:
        data["warnings"] = [w.model_dump() for w in warnings]

    fault_of = {f.seat: f.kind for f in faults if f.forfeit}
    end = GameEnd(
        game_id=game_id,
        end_reason=data["end_reason"],
        results=[
            SeatResult(
                seat=f["seat"],
                player=f["player"],
                score=f["total"],
                rank=f["rank"],
                fault=fault_of.get(f["seat"]),
            )
            for f in data["final"]
        ],
    )
    for i, seat in enumerate(seats):
        if not forfeited[i]:
            seat.end(end)
    return GameOutcome(
        data=data, faults=faults, warnings=warnings, think=[ThinkStats.of(t) for t in think]
    )


def _decision_records(
    game: Game, decisions: list[Choice | None], stderr_room: list[int]
) -> list[list[dict[str, Any]]]:
    """Per round, the record's decisions: each made once, with the referee's facts (think
    times, auto flags, ...), in ``DecisionRecord``'s field order (see ``GameOutcome``).
    ``decisions``: the game's answers in order (None: played for the seat)."""
    notation = MOVE_TEXT
    it = iter(decisions)
    made_rounds: list[list[dict[str, Any]]] = []
    for log in game.rounds:
        made = []
        for seat_index, move in log.decisions:
            entry = next(it)
            text = notation.get(move) or str(move)
            if entry is None:  # played for the seat: no answer to time
                made.append(
                    {
                        "seat": seat_index,
                        "move": text,
                        "think_ms": None,
                        "cpu_ms": None,
                        "auto": True,
                    }
                )
                continue
            cpu_ms, stderr = entry.settled()
            made_one = {
                "seat": seat_index,
                "move": text,
                "think_ms": int(entry.think_ms * 1000.0 + 0.5) / 1000.0,  # _ms3, inlined
                "cpu_ms": None if cpu_ms is None else int(cpu_ms * 1000.0 + 0.5) / 1000.0,
            }
            if entry.between_ms >= 0.001:  # (charged; µs for a bot that waited)
                made_one["between_ms"] = int(entry.between_ms * 1000.0 + 0.5) / 1000.0
            made_one["auto"] = False
            if stderr is not None and stderr_room[seat_index] > 0:
                made_one["stderr"] = _capped(stderr, stderr_room[seat_index])
                stderr_room[seat_index] -= len(stderr)
            made.append(made_one)
        made_rounds.append(made)
    return made_rounds


def _ms3(ms: float) -> float:
    """``ms`` (>= 0) to the microsecond: ``round(ms, 3)`` but for exact ties, 4x cheaper
    (two per decision when the record is built, where it is inlined)."""
    return int(ms * 1000.0 + 0.5) / 1000.0


def _capped(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[:room] + "\n[... per-game stderr cap reached: see the bot's stderr log ...]"
