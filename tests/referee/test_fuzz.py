"""Fuzzing the referee's input side: whatever bytes a bot writes, the referee ends with a
legal move or a typed fault — never an uncaught exception, never a hang."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.engine import Game
from arena.engine.record import FAULT_KINDS
from arena.referee import BotSeat, Choice, Fault, TimeControl, load_bot, seats
from arena.referee.channel import Channel
from arena.referee.manifest import Built

REPO = Path(__file__).resolve().parents[2]

SPEC = load_bot(REPO / "bots" / "python-random")
MAX_LINE = 4096


def positions() -> list[Game]:
    rng = random.Random(5)
    games = []
    for variant in ("coloured", "gray"):
        game = Game.new(players=2, variant=variant, seed=3)
        while not game.is_over():
            games.append(game.copy())
            game.apply(rng.choice(game.legal_moves()))
    return [g for g in games if g.decision.value == "place"][:3] + games[::25]


GAMES = positions()


@pytest.fixture(autouse=True, scope="module")
def short_trailing_wait() -> Iterator[None]:
    """A malformed reply waits for the bot's next line (a runtime's crash report comes in
    several writes); nothing follows on these pipes, so a short wait fuzzes the same path
    without paying half a second an example."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seats, "TRAILING_OUTPUT_WAIT_S", 0.01)
        yield


@contextmanager
def piped_bot() -> Iterator[tuple[BotSeat, int, int]]:
    """A BotSeat wired to two pipes instead of a process: (seat, bot_stdout_w, bot_stdin_r)."""
    to_bot_r, to_bot_w = os.pipe()
    from_bot_r, from_bot_w = os.pipe()
    seat = BotSeat(
        Built(SPEC, 0.0, False, "fuzz", SPEC.folder),
        time_control=TimeControl(move_ms=1, grace_ms=20),
        max_line=MAX_LINE,
    )
    channel = Channel(to_bot_w, from_bot_r, MAX_LINE)
    seat.attach(channel)
    try:
        yield seat, from_bot_w, to_bot_r
    finally:
        channel.close()
        for fd in (to_bot_r, to_bot_w, from_bot_r, from_bot_w):
            os.close(fd)


def decide_with(reply: bytes, game: Game, req_id: int = 9) -> Choice | Fault:
    options = game.legal_moves()
    with piped_bot() as (seat, bot_out, _bot_in):
        os.set_blocking(bot_out, False)
        with suppress(BlockingIOError):
            os.write(bot_out, reply[:60000])
        start = time.monotonic()
        result = seat.decide(req_id, game, options, 1, "fuzz")
        assert time.monotonic() - start < 2.0, "the referee hung"
    if isinstance(result, Choice):
        assert 0 <= result.index < len(options)
    else:
        assert result.kind in FAULT_KINDS and result.message
    return result


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(reply=st.binary(max_size=5000), which=st.integers(0, len(GAMES) - 1))
def test_arbitrary_bytes(reply: bytes, which: int) -> None:
    decide_with(reply, GAMES[which])


# JSON has no NaN or infinity (``json.dumps`` would write ``NaN``/``Infinity``, which are
# not JSON: a different test, ``test_arbitrary_bytes``, covers invalid text).
json_floats = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | json_floats | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@FUZZ
@given(value=json_values, which=st.integers(0, len(GAMES) - 1))
def test_arbitrary_json(value: object, which: int) -> None:
    decide_with(json.dumps(value).encode() + b"\n", GAMES[which])


small_ints = st.integers(-3, 12) | st.sampled_from([2**31, -(2**63), 10**30])
shaped = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["move", "ready", "Move", ""]),
        "id": st.sampled_from([9, 8, 10, -1, 9.0, 8.0, True, "9"]),
    },
    optional={
        "index": small_ints | st.text(max_size=3) | st.booleans() | json_floats | st.none(),
        "option": st.fixed_dictionaries(
            {},
            optional={
                "source": small_ints,
                "colour": small_ints,
                "line": small_ints,
                "column": small_ints | st.text(max_size=2),
            },
        )
        | st.none()
        | st.integers(),
        "extra": json_values,
    },
)


@pytest.mark.slow
@FUZZ
@given(message=shaped, which=st.integers(0, len(GAMES) - 1))
def test_schema_shaped_objects(message: dict[str, object], which: int) -> None:
    result = decide_with(json.dumps(message).encode() + b"\n", GAMES[which])
    rid = message.get("id")
    if type(rid) is int and rid == 8 and message.get("type") == "move":
        # An answer to an earlier request is ignored: nothing else came, so a timeout.
        assert isinstance(result, Fault) and result.kind == "timeout"
    elif type(rid) is not int and message.get("type") == "move":
        # SPEC §8: a non-integer id (9.0, true, "9") is malformed, never the right id.
        assert isinstance(result, Fault) and result.kind == "malformed", result
    if isinstance(result, Choice):
        assert message["type"] == "move" and type(rid) is int and rid == 9


def test_an_over_long_line_is_malformed_and_does_not_hang() -> None:
    result = decide_with(b"x" * (MAX_LINE + 10), GAMES[0])
    assert isinstance(result, Fault) and result.kind == "malformed"


def test_stale_answer_then_good_answer_is_accepted() -> None:
    stale = json.dumps({"type": "move", "id": 8, "index": 0}).encode()
    good = json.dumps({"type": "move", "id": 9, "index": 1}).encode()
    result = decide_with(stale + b"\n" + good + b"\n", GAMES[0])
    assert isinstance(result, Choice) and result.index == 1


def test_a_float_or_boolean_id_is_malformed() -> None:
    """17.0 == 17 and true == 1 in Python: the referee must still refuse them as ids."""
    for rid in (9.0, True, "9"):
        reply = json.dumps({"type": "move", "id": rid, "index": 0}).encode() + b"\n"
        result = decide_with(reply, GAMES[0], req_id=1 if rid is True else 9)
        assert isinstance(result, Fault) and result.kind == "malformed", (rid, result)
