"""A per-seat protocol transcript with a size cap (``arena match --transcript``).

A bot controls most of what its transcript holds (its replies, and ignored late answers
padded to the line limit), so without a cap one game could fill the disk.  Past the cap,
lines are counted instead of written, and the file ends with a note of what was dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

DEFAULT_CAP = 4 * 1024 * 1024
"""Bytes of transcript kept per seat (a normal 2-player game writes about 300 KB)."""


class Transcript:
    """Append-only, capped copy of one seat's protocol lines (across bot restarts)."""

    def __init__(self, path: Path, cap: int = DEFAULT_CAP) -> None:
        self.path = path
        self.cap = cap
        self._file: BinaryIO = open(path, "ab")  # noqa: SIM115 - closed in close()
        self.written = self._file.tell()
        """Bytes in the file (a restarted bot's seat appends to the same file)."""
        self.dropped_lines = 0
        self.dropped_bytes = 0

    def write(self, data: bytes) -> None:
        """Keep ``data`` (one or more whole lines) if it fits under the cap, else count it."""
        if self.dropped_lines == 0 and self.written + len(data) <= self.cap:
            self._file.write(data)
            self.written += len(data)
            return
        self.dropped_lines += max(1, data.count(b"\n"))
        self.dropped_bytes += len(data)

    def close(self) -> None:
        """Flush, with a closing note when lines were dropped (idempotent)."""
        if self._file.closed:
            return
        if self.dropped_lines:
            self._file.write(
                f"# transcript cap of {self.cap} bytes reached: {self.dropped_lines} lines "
                f"({self.dropped_bytes} bytes) not written\n".encode()
            )
            self.dropped_lines = self.dropped_bytes = 0
        self._file.close()
