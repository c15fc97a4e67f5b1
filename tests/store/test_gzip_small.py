"""The store's gzip for small blobs: a window sized to the input, the same data back."""

from __future__ import annotations

import gzip
import random

import pytest

from arena.gz import gzip_small


def _text(size: int, seed: int) -> bytes:
    """JSON-like text with repeats far apart (matches a small window would miss)."""
    rng = random.Random(seed)
    words = [f'"k{rng.randrange(10_000)}":{rng.random():.6f}'.encode() for _ in range(400)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b","
    return bytes(out[:size])


@pytest.mark.parametrize("size", [0, 1, 255, 256, 257, 511, 512, 513, 5_000, 32_768, 100_000])
def test_round_trips_through_gzip_decompress(size: int) -> None:
    data = _text(size, size)
    packed = gzip_small(data, 3)
    assert gzip.decompress(packed) == data
    assert packed[:2] == b"\x1f\x8b"  # a gzip file: what the stores' readers open
    assert packed[4:8] == b"\x00\x00\x00\x00"  # no timestamp: the same data, the same bytes
    assert gzip_small(data, 3) == packed


@pytest.mark.parametrize("size", [300, 5_000, 20_000, 100_000])
def test_compresses_as_well_as_the_full_window(size: int) -> None:
    data = _text(size, 7)
    assert len(gzip_small(data, 3)) <= len(gzip.compress(data, 3, mtime=0)) * 1.01 + 8
