"""The referee's per-decision shortcuts give exactly what the general code gives."""

from __future__ import annotations

import random

import orjson
import pytest

from arena.referee.referee import _ms3
from arena.referee.seats import _plain_move


def test_microsecond_rounding_matches_round() -> None:
    rng = random.Random(7)
    values = [rng.uniform(0, 10) for _ in range(5000)] + [
        rng.uniform(0, 60_000) for _ in range(5000)
    ]
    for value in [*values, 0.0, 0.0004, 0.0006, 1.0, 999.9999]:
        assert _ms3(value) == round(value, 3)
        assert len(repr(_ms3(value)).partition(".")[2]) <= 3


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"type":"move","id":7,"index":2}', 2),
        (b'{"index":0,"id":7,"type":"move"}', 0),
        (b'{"type":"move","id":7,"index":2,"note":"extra keys are allowed"}', 2),
        (b'{"type":"move","id":7,"index":5}', None),  # out of range: an illegal move
        (b'{"type":"move","id":7,"index":-1}', None),
        (b'{"type":"move","id":6,"index":2}', None),  # an earlier request's answer
        (b'{"type":"move","id":7.0,"index":2}', None),  # 7.0 == 7 but is no id
        (b'{"type":"move","id":7,"index":true}', None),
        (b'{"type":"move","id":7,"index":2.0}', None),
        (b'{"type":"mov","id":7,"index":2}', None),
        (b'{"type":"move","id":7,"option":{"column":1}}', None),
        (b"[7, 2]", None),
        (b"not json", None),
        (b"[" * 2000, None),
    ],
)
def test_the_usual_reply_is_read_by_the_plain_check(line: bytes, expected: int | None) -> None:
    """Anything but a well-formed in-range index for this request goes to the general
    reader, which judges it (late answer, fault or option by value)."""
    assert _plain_move(line, 7, 5) == expected
    if expected is not None:
        assert orjson.loads(line)["index"] == expected
