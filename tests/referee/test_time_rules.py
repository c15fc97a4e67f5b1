"""Soft and hard limits, warnings, round-start time and the comp90054 preset: fake CPU
meters and scripted seats (no timing), plus the records they leave."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from arena.engine import Game
from arena.engine.record import GameRecord
from arena.engine.tables import AnyMove
from arena.protocol.messages import GameEnd, GameStart
from arena.referee import GameSettings, RandomSeat, play_game
from arena.referee.clock import Clock, ClockKind, Stopwatch, TimeControl
from arena.referee.faults import Fault
from arena.referee.seats import Choice
from arena.referee.settings import PlaySettings
from arena.tournament.config import ConfigError

from .test_clock import FakeHost

COURSE = TimeControl(move_ms=1000, hard_move_ms=3000, warnings=3, grace_ms=50, wall_ceiling=5)


def course_watch(host: FakeHost, control: TimeControl = COURSE, soft: int = 1000) -> Stopwatch:
    """A decision's stopwatch as a bot seat makes it: timed to the hard limit."""
    hard = control.hard_limit_ms(soft)
    assert hard is not None
    return Stopwatch(hard, control, host, now=host.now, soft_ms=soft)


# ------------------------------------------------------------------ the stopwatch


def test_a_decision_between_soft_and_hard_is_in_time_with_a_warning() -> None:
    host = FakeHost()
    watch = course_watch(host)
    spent = host.think(watch, cpu_needed_s=1.8, cpu_share=1.0)
    assert not isinstance(spent, str), spent
    assert spent.charged_ms == pytest.approx(1800.0)
    warning = watch.warning(spent)
    assert warning is not None
    assert "1800 ms of CPU time" in warning and "1000 ms" in warning and "3000 ms" in warning


def test_a_decision_within_the_soft_limit_earns_nothing() -> None:
    host = FakeHost()
    watch = course_watch(host)
    spent = host.think(watch, cpu_needed_s=1.04, cpu_share=1.0)  # within the grace
    assert not isinstance(spent, str)
    assert watch.warning(spent) is None


def test_a_decision_over_the_hard_limit_is_stopped_there() -> None:
    host = FakeHost()
    watch = course_watch(host)
    start = host.t
    why = host.think(watch, cpu_needed_s=60.0, cpu_share=1.0)
    assert isinstance(why, str) and "over its 3000 ms" in why
    waited_ms = (host.t - start) * 1000
    assert 3000 < waited_ms < 3050 + 11  # hard + grace (+ one 10 ms reading step), not 60 s


def test_a_decision_that_could_be_slow_is_not_vouched_for_by_wall_time() -> None:
    """The quick path (closing reading deferred) must not skip a warning: over the soft
    limit's worth of wall time, the CPU time is read at once."""
    host = FakeHost()
    watch = course_watch(host)
    host.run(1.2, 1.0)
    assert watch.quick_stop() is None


def test_round_start_time_is_the_allowance_and_its_own_hard_limit() -> None:
    control = TimeControl(move_ms=1000, hard_move_ms=3000, round_start_ms=5000)
    clock = Clock(control)
    assert clock.allowance_ms() == 1000
    assert clock.allowance_ms(round_start=True) == 5000
    assert control.hard_limit_ms(1000) == 3000
    assert control.hard_limit_ms(5000) == 5000
    assert TimeControl(move_ms=1000).hard_limit_ms(1000) is None


# ------------------------------------------------------------------ settings


def test_the_comp90054_preset_and_explicit_fields_override_it() -> None:
    course = TimeControl.model_validate({"preset": "comp90054"})
    assert (
        course.init_ms,
        course.move_ms,
        course.hard_move_ms,
        course.warnings,
        course.round_start_ms,
        course.clock,
    ) == (15000, 1000, 3000, 3, 5000, ClockKind.CPU)
    faster = PlaySettings.model_validate({"time": {"preset": "comp90054", "move_ms": 500}})
    assert faster.time.move_ms == 500 and faster.time.hard_move_ms == 3000
    text = course.describe()
    assert "over 3000 ms forfeits" in text and "warning 3" in text and "5000 ms" in text


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"move_ms": 1000, "hard_move_ms": 1000}, "must be more than move_ms"),
        ({"warnings": 3}, "warnings needs hard_move_ms"),
        ({"hard_move_ms": 3000, "bank_ms": 10000}, "time bank does not combine"),
        ({"preset": "comp9999"}, "unknown time preset 'comp9999' (known: comp90054)"),
        ({"hard_move_ms": 3000, "warnings": 0}, "greater than or equal to 1"),
    ],
)
def test_impossible_rules_are_refused_clearly(fields: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=says.replace("(", r"\(").replace(")", r"\)")):
        TimeControl.model_validate(fields)


def test_hello_announces_the_rules_only_when_set() -> None:
    plain = orjson.loads(TimeControl().limits(65536).model_dump_json())
    assert set(plain) == {
        "init_ms",
        "move_ms",
        "time_bank_ms",
        "increment_ms",
        "max_line_bytes",
        "clock",
        "wall_ceiling",
    }  # as before these rules existed
    course_tc = TimeControl.model_validate({"preset": "comp90054"})
    course = orjson.loads(course_tc.limits(65536).model_dump_json())
    assert (course["hard_move_ms"], course["warnings"], course["round_start_ms"]) == (3000, 3, 5000)


# ------------------------------------------------------------------ the referee


SLOW_MESSAGE = "used 1500 ms of CPU time, over its 1000 ms"


class ScriptedSeat:
    """Answers option 0; ``slow`` decisions (1-based, its own) come back with a warning
    (what a bot seat reports for a decision over the soft limit). Notes each allowance."""

    def __init__(self, name: str, slow: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.name = name
        self.slow = slow
        self.asked: list[tuple[int, int]] = []
        """(round, time_left_ms) per decision."""
        self.abandoned = False

    def begin(self, start: GameStart) -> Fault | None:
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        self.asked.append((game.round, time_left_ms))
        late = len(self.asked) in self.slow
        return Choice(0, 1.0, warning=SLOW_MESSAGE if late else None)

    def end(self, end: GameEnd) -> None:
        return None

    def abandon(self) -> None:
        self.abandoned = True


def course_game(seat: ScriptedSeat, control: TimeControl = COURSE) -> GameRecord:
    settings = GameSettings(seed=4, time_control=control)
    return play_game([seat, RandomSeat("random")], settings, "g").record


def test_warnings_let_the_game_go_on_and_the_limit_th_forfeits() -> None:
    seat = ScriptedSeat("slowcoach", slow={2, 5, 9})
    record = course_game(seat)
    assert [(w.seat, w.message) for w in record.warnings][:1] == [
        (0, "used 1500 ms of CPU time, over its 1000 ms")
    ]
    assert len(record.warnings) == 3
    assert [(f.kind, f.forfeit) for f in record.faults] == [("timeout", True)]
    assert record.faults[0].message.startswith("warning 3 of 3, which forfeits")
    assert seat.abandoned and len(seat.asked) == 9  # the 9th counted, then random play
    ninth = [d for r in record.rounds for d in r.decisions if d.seat == 0][8]
    assert ninth.auto is False  # the move itself counted
    assert record.final[0].rank == 2


def test_fewer_warnings_than_the_limit_cost_nothing() -> None:
    record = course_game(ScriptedSeat("twice", slow={1, 4}))
    assert len(record.warnings) == 2 and record.faults == []


def test_without_a_limit_warnings_are_recorded_but_never_forfeit() -> None:
    control = TimeControl(move_ms=1000, hard_move_ms=3000)
    record = course_game(ScriptedSeat("slow", slow=set(range(1, 100))), control)
    assert record.faults == [] and len(record.warnings) >= 10


def test_round_start_time_goes_to_each_seat_s_first_decision_of_a_round() -> None:
    control = TimeControl(move_ms=1000, hard_move_ms=3000, round_start_ms=5000)
    seat = ScriptedSeat("setup")
    record = course_game(seat, control)
    firsts = [i for i, (rnd, _) in enumerate(seat.asked) if i == 0 or seat.asked[i - 1][0] != rnd]
    assert len(firsts) == len(record.rounds) >= 3
    assert [ms for i, (_, ms) in enumerate(seat.asked) if i in firsts] == [5000] * len(firsts)
    assert {ms for i, (_, ms) in enumerate(seat.asked) if i not in firsts} == {1000}


def test_a_game_without_the_new_rules_records_as_before() -> None:
    """No warnings: the record has no ``warnings`` key, and serialises as one parsed back
    through a model without that field would (byte-identical to the old format)."""
    record = course_game(ScriptedSeat("steady"), TimeControl(move_ms=1000))
    text = record.model_dump_json()
    assert '"warnings"' not in text
    old = orjson.loads(text)
    assert GameRecord.model_validate(old).model_dump_json() == text
    warned = course_game(ScriptedSeat("slow", slow={3}))
    assert orjson.loads(warned.model_dump_json())["warnings"][0]["seat"] == 0


class TimingOutSeat(ScriptedSeat):
    """Its ``slow`` decisions run over the hard limit."""

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        self.asked.append((game.round, time_left_ms))
        if len(self.asked) in self.slow:
            return Fault("timeout", "over the hard limit: used 3100 ms of CPU time")
        return Choice(0, 1.0)


def test_over_the_hard_limit_forfeits_at_once_whatever_the_strikes() -> None:
    from arena.referee.faults import FaultPolicy

    seat = TimingOutSeat("stuck", slow={2})
    settings = GameSettings(seed=4, time_control=COURSE, fault_policy=FaultPolicy(strikes=5))
    record = play_game([seat, RandomSeat("random")], settings, "g").record
    assert [(f.kind, f.forfeit) for f in record.faults] == [("timeout", True)]
    assert len(seat.asked) == 2
    plain = GameSettings(seed=4, fault_policy=FaultPolicy(strikes=5))  # no hard limit
    record = play_game([TimingOutSeat("stuck", slow={2}), RandomSeat("r")], plain, "g").record
    assert [(f.kind, f.forfeit) for f in record.faults] == [("timeout", False)]


def test_a_tournament_file_preset_and_command_line_flags_combine(tmp_path: Path) -> None:
    from arena.tournament import load_config

    path = tmp_path / "cup.toml"
    path.write_text('bots = ["a", "b"]\n[time]\npreset = "comp90054"\nwarnings = 2\n')
    config = load_config(path, {"time": {"move_ms": 400}})
    tc = config.time
    assert (tc.init_ms, tc.move_ms, tc.hard_move_ms, tc.warnings) == (15000, 400, 3000, 2)
    path.write_text('bots = ["a", "b"]\n[time]\npreset = "blitz"\n')
    with pytest.raises(ConfigError, match="unknown time preset 'blitz'"):
        load_config(path, {})


def test_settings_without_the_rules_dump_as_before() -> None:
    """A tournament's stored identity (written before these rules existed) must still
    match on resume: unset rules are left out of the dump."""
    assert set(TimeControl().model_dump(mode="json")) == {
        "init_ms",
        "move_ms",
        "bank_ms",
        "increment_ms",
        "clock",
        "wall_ceiling",
    }
    course = TimeControl.model_validate({"preset": "comp90054"})
    assert TimeControl.model_validate(course.model_dump(mode="json")) == course


def test_a_worker_s_game_result_counts_each_seat_s_warnings() -> None:
    from arena.play.worker import game_result

    settings = GameSettings(seed=4, time_control=COURSE)
    outcome = play_game([ScriptedSeat("slow", slow={2, 5}), RandomSeat("random")], settings, "g")
    result = game_result(0, outcome, duration_s=1.0, worker="w", frames=False)
    assert [(s.seat, s.warnings) for s in result.seats] == [(0, 2), (1, 0)]
    assert result.faults == ()


def test_the_wall_clock_warns_and_stops_on_elapsed_time() -> None:
    control = TimeControl(
        move_ms=1000, hard_move_ms=3000, warnings=3, grace_ms=50, clock=ClockKind.WALL
    )
    host = FakeHost()
    watch = course_watch(host, control)
    spent = host.think(watch, cpu_needed_s=0.2, cpu_share=0.1)  # 2 s elapsed, 0.2 s CPU
    assert not isinstance(spent, str)
    assert (
        watch.warning(spent) == "took 2000 ms, over its 1000 ms (within the hard limit of 3000 ms)"
    )
    host = FakeHost()
    watch = course_watch(host, control)
    start = host.t
    assert host.think(watch, cpu_needed_s=1.0, cpu_share=0.1) == "no move within 3000 ms"
    assert (host.t - start) * 1000 == pytest.approx(3050)
