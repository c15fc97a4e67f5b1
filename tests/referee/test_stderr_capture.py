"""Per-decision stderr: what a bot writes while deciding lands on that decision's record."""

from __future__ import annotations

import os
from collections.abc import Callable

from arena.engine import replay
from arena.referee import BotSpec, play_game
from arena.referee.referee import GAME_STDERR_BYTES
from arena.referee.seats import DECISION_STDERR_BYTES
from arena.sandbox.stderr import StderrSink

from .test_referee import seats_for, settings


def test_each_decision_carries_its_own_stderr(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("chatty", 3, name="chatty"), None) as seats:
        record = play_game(seats, settings(), "g1").record
    replay(record)
    mine = [d for r in record.rounds for d in r.decisions if d.seat == 0]
    assert len(mine) > 10
    for count, dec in enumerate(mine, start=1):
        if count % 2 == 0:
            assert dec.stderr is None, (count, dec.stderr)
        elif count == 3:
            assert dec.stderr is not None
            assert dec.stderr.startswith("[... ")  # capped: the head is cut, the end is kept
            assert len(dec.stderr) < DECISION_STDERR_BYTES + 50
            assert dec.stderr.endswith("y" * 100 + "\n")
        else:
            assert dec.stderr is not None
            assert dec.stderr.startswith(f"decision {count}: ")
            assert dec.stderr.endswith(" options\n")
    others = [d for r in record.rounds for d in r.decisions if d.seat == 1]
    assert all(d.stderr is None for d in others)


def test_stderr_collected_after_the_next_request_stays_with_its_decision(
    scripted_bot: Callable[..., BotSpec],
) -> None:
    """Two chatty bots alternate: each answer's stderr is collected only after the
    other seat's request is out (off the path the bots wait on), and still lands on
    the decision that wrote it."""
    chatty = scripted_bot("chatty", 3, name="chatty")
    with seats_for(chatty, chatty) as seats:
        record = play_game(seats, settings(), "g1").record
    replay(record)
    for seat in (0, 1):
        mine = [d for r in record.rounds for d in r.decisions if d.seat == seat]
        assert len(mine) > 10
        for count, dec in enumerate(mine, start=1):
            if count % 2 == 0:
                assert dec.stderr is None, (seat, count, dec.stderr)
            elif count != 3:
                assert dec.stderr is not None, (seat, count)
                assert dec.stderr.startswith(f"decision {count}: "), (seat, count, dec.stderr)


def test_a_flood_is_capped_per_game(scripted_bot: Callable[..., BotSpec]) -> None:
    with seats_for(scripted_bot("flood-stderr", name="flood"), None) as seats:
        record = play_game(seats, settings(), "g1").record
    captured = sum(len(d.stderr or "") for r in record.rounds for d in r.decisions)
    assert 0 < captured <= GAME_STDERR_BYTES + 200


def test_sink_since_returns_exactly_what_came_after_the_mark() -> None:
    read_end, write_end = os.pipe()
    sink = StderrSink(read_end, tail_bytes=4096)
    try:
        os.write(write_end, b"before\n")
        mark = 0
        assert sink.since(mark, 100, settle_s=1.0) == "before\n"
        mark = sink.mark()
        assert sink.since(mark, 100) is None
        os.write(write_end, b"during 1\nduring 2\n")
        assert sink.since(mark, 100, settle_s=1.0) == "during 1\nduring 2\n"
        assert sink.since(mark, 9, settle_s=1.0) == "[... 9 bytes before ...]\nduring 2\n"
    finally:
        os.close(write_end)
        sink.close()
