"""The referee's record as plain data: what a tournament stores without validating it.

``GameOutcome.record_json`` is ``orjson.dumps`` of the data the referee built, never
validated on the way to the store. These tests are the check it skips: on games with
every kind of decision a record holds, the data validates strictly and its JSON is byte
for byte what the validated ``GameRecord`` writes.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from arena.engine import Game, GameRecord, Variant, replay
from arena.engine.tables import AnyMove
from arena.play.worker import game_result
from arena.protocol.messages import GameEnd, GameStart
from arena.referee import RandomSeat, play_game
from arena.referee.clock import ClockKind, TimeControl
from arena.referee.faults import Fault, FaultPolicy
from arena.referee.referee import GameOutcome, GameSettings
from arena.referee.seats import Choice

HOSTILE = [
    None,
    "",
    "plain line\n",
    'quotes " and \\ backslashes',
    "control \x00\x01\x1b[31m\x7f and tab\t",
    "unicode é 漢字 \u2028 \u2029 🎲",
    "x" * 5000,
]
"""What a bot may write to stderr in a decision (after the referee's decoding)."""


class VariedSeat:
    """Answers at random with every optional fact a ``Choice`` carries: CPU time or none,
    time used between turns, stderr of every sort, warnings; faults now and then."""

    def __init__(self, name: str, seed: int, faults: bool) -> None:
        self.name = name
        self.rng = random.Random(seed)
        self.faults = faults

    def begin(self, start: GameStart) -> Fault | None:
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        rng = self.rng
        if self.faults and rng.random() < 0.05:
            return Fault(rng.choice(["timeout", "malformed", "illegal"]), "scripted fault")
        return Choice(
            rng.randrange(len(options)),
            rng.choice([0.0, 0.0004, 0.0005, 1.0, 12.3456789, 1234.5, 1e-7]),
            stderr=rng.choice(HOSTILE),
            cpu_ms=rng.choice([None, 0.0, 0.25, 3.14159, 999.9995]),
            clock=ClockKind.CPU,
            between_ms=rng.choice([0.0, 0.0004, 0.001, 2.5]),
            warning="over the soft limit" if rng.random() < 0.03 else None,
        )

    def end(self, end: GameEnd) -> None:
        return None

    def abandon(self) -> None:
        return None


def _games() -> list[tuple[int, Variant, bool]]:
    return [
        (players, variant, faults)
        for players in (2, 3, 4)
        for variant in (Variant.COLOURED, Variant.GRAY)
        for faults in (False, True)
    ]


def _outcome(players: int, variant: Variant, faults: bool, seed: int) -> GameOutcome:
    seats = [VariedSeat(f"bot{i}", seed * 10 + i, faults) for i in range(players)]
    settings = GameSettings(
        variant=variant,
        seed=seed,
        time_control=TimeControl(clock=ClockKind.CPU, hard_move_ms=3000, move_ms=1000),
        fault_policy=FaultPolicy(strikes=3),
    )
    return play_game(seats, settings, f"g{seed}")


SEEDS = range(4)


@pytest.mark.parametrize(("players", "variant", "faults"), _games())
def test_the_stored_json_is_what_the_validated_record_writes(
    players: int, variant: Variant, faults: bool
) -> None:
    for seed in SEEDS:
        outcome = _outcome(players, variant, faults, seed)
        validated = GameRecord.model_validate(outcome.data, strict=True)
        assert outcome.record_json == validated.model_dump_json().encode()
        assert outcome.record == validated
        assert GameRecord.model_validate_json(outcome.record_json) == validated
        assert outcome.faults == validated.faults
        assert outcome.warnings == validated.warnings
        replay(validated)  # the record still re-executes to its own scores


def test_every_optional_fact_occurs_in_the_games_above() -> None:
    """The parity test above sees each shape of decision at least once (else it proves
    less than it says)."""
    seen: set[str] = set()
    for players, variant, faults in _games():
        for seed in SEEDS:
            data = _outcome(players, variant, faults, seed).data
            for rnd in data["rounds"]:
                for d in rnd["decisions"]:
                    seen.update(k for k, v in d.items() if v is not None and v is not False)
                    if d["cpu_ms"] is None:
                        seen.add("no cpu_ms")
            if any(f["forfeit"] for f in data["faults"]):
                seen.add("forfeit")
            if any(not f["forfeit"] for f in data["faults"]):
                seen.add("forgiven fault")
            if "warnings" in data:
                seen.add("warnings")
    wanted = {"between_ms", "stderr", "cpu_ms", "no cpu_ms", "auto", "warnings"}
    assert wanted | {"forfeit", "forgiven fault"} <= seen


def test_a_worker_stores_the_same_bytes_and_rows_as_from_the_validated_record(
    tmp_path: Path,
) -> None:
    """``game_result`` reads the plain data; its rows and stored JSON match the record."""
    seats = [VariedSeat("a", 1, True), RandomSeat("b", seed=2)]
    outcome = play_game(seats, GameSettings(seed=3, time_control=TimeControl()), "g")
    result = game_result(0, outcome, duration_s=0.1, worker="w", frames=True)
    record = outcome.record
    assert result.record_json == record.model_dump_json().encode()
    assert [r.score for r in result.seats] == [f.total for f in record.final]
    assert [r.rank for r in result.seats] == [f.rank for f in record.final]
    assert [(f.seat, f.kind) for f in result.faults] == [(f.seat, f.kind) for f in record.faults]
    assert result.rounds == len(record.rounds) and result.end_reason == record.end_reason
    assert result.replay_json is not None
    assert orjson.loads(result.replay_json)["frames"]
