"""The PostgreSQL store's binary COPY decoding: rows as the format defines them, and a
damaged answer refused with a StoreError (never wrong numbers)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from arena.store.tournament import (
    PG_COPY_SIGNATURE,
    StoreError,
    _copy_header_length,
    _copy_rows,
)

ROW = np.dtype([("n", ">i2"), *((f"f{i}", [("len", ">i4"), ("v", ">i8")]) for i in range(2))])


def _row(*values: int, count: int | None = None, length: int = 8) -> bytes:
    out = struct.pack(">h", len(values) if count is None else count)
    for v in values:
        out += struct.pack(">iq", length, v)
    return out


def test_rows_decode_as_the_format_defines_them() -> None:
    header = PG_COPY_SIGNATURE + struct.pack(">ii", 0, 3) + b"ext"
    assert _copy_header_length(header + b"rest") == len(header)
    data = bytearray(_row(1, -2) + _row(2**40, 0))
    assert _copy_rows(data, 2, ROW, 2).tolist() == [[1, -2], [2**40, 0]]


@pytest.mark.parametrize(
    "data",
    [_row(1, 2, count=3), _row(1, 2, length=-1)[: ROW.itemsize]],
    ids=["another width", "a NULL"],
)
def test_a_damaged_copy_is_refused(data: bytes) -> None:
    with pytest.raises(StoreError):
        _copy_rows(bytearray(data.ljust(ROW.itemsize, b"\0")), 1, ROW, 2)
    with pytest.raises(StoreError, match="binary format"):
        _copy_header_length(b"PGCOPY\nno")
