"""The SPRT ledger keeps one result per leg, on both backends."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import sqlalchemy as sa

from arena.store.engine import store_error
from arena.store.sprt import LegResult, SprtStore, SprtStoreError


def leg(pair: int, leg: int, points: float, faults: str = "") -> LegResult:
    return LegResult(
        pair,
        leg,
        f"g{pair}-{leg}",
        "coloured",
        2**40 + pair,
        points,
        50,
        40,
        "finished",
        faults,
        f'{{"pair": {pair}}}'.encode(),
    )


def test_a_leg_stored_twice_keeps_its_first_result_and_survives_reopening(where: str) -> None:
    store = SprtStore(where)
    store.set_meta("identity", "one")
    store.set_meta("identity", "two")  # replaced
    store.add(leg(0, 0, 1.0, "old:timeout"))
    store.add(leg(0, 0, 0.0))  # delivered again: ignored
    store.add(leg(0, 1, 0.5, "old:timeout,new:illegal"))
    store.close()
    again = SprtStore(where)
    try:
        assert again.get_meta("identity") == "two"
        assert again.get_meta("missing") is None
        assert again.legs() == {(0, 0): 1.0, (0, 1): 0.5}
        assert again.fault_counts() == {"old:timeout": 2, "new:illegal": 1}
        assert again.record_json(0, 1) == b'{"pair": 0}'
        assert again.record_json(3, 0) is None
    finally:
        again.close()


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(SprtStoreError, match="cannot reach the database server"):
        SprtStore("postgresql+psycopg://nobody:secret@127.0.0.1:1/none")


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
        (OSError(errno.EROFS, "Read-only file system"), "cannot write here"),
        (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "cannot write here"),
        (sqlite3.DatabaseError("database disk image is malformed"), "damaged"),
    ],
)
def test_failures_are_explained_for_people(error: BaseException, says: str) -> None:
    wrapped = (
        sa.exc.OperationalError("INSERT", {}, error) if isinstance(error, sqlite3.Error) else error
    )
    made = store_error(wrapped, "/x/store.sqlite")
    assert says in str(made)
    assert made.resumable == (says != "damaged")
