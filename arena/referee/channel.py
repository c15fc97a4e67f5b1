"""Line I/O with a bot process that can never hang or deadlock the referee.

Writes are non-blocking and bounded by the same deadline as the read that
follows (a bot that stops reading its stdin times out instead of blocking
us); reads wait with ``poll`` up to a deadline and cap the line length. ``poll``
objects are used directly (not ``selectors``): this is the per-decision path,
and a read is attempted only once the pipe is readable (two system calls per
reply, not three).
"""

from __future__ import annotations

import math
import os
import select
import time
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class LineLog(Protocol):
    """Where a channel copies its lines (a capped transcript)."""

    def write(self, data: bytes, /) -> object: ...

    def close(self) -> None: ...


class ChannelError(Enum):
    TIMEOUT = "timeout"
    CLOSED = "closed"
    """The bot closed its stdout (or its stdin, when we write)."""
    TOO_LONG = "too_long"


@dataclass(frozen=True)
class ReadFailure:
    error: ChannelError
    partial: bytes
    """What the bot had written of the unfinished line (truncated), for the fault report."""


class Channel:
    """Newline-delimited messages over a pair of pipe file descriptors."""

    def __init__(
        self, write_fd: int, read_fd: int, max_line: int, transcript: LineLog | None = None
    ) -> None:
        self.transcript = transcript
        """When set, every line is copied there: ``> `` referee to bot, ``< `` bot to referee."""
        self._wfd = write_fd
        self._rfd = read_fd
        self.max_line = max_line
        os.set_blocking(write_fd, False)
        os.set_blocking(read_fd, False)
        self._buf = bytearray()
        self._rpoll = select.poll()
        self._rpoll.register(read_fd, select.POLLIN)
        self._wpoll = select.poll()
        self._wpoll.register(write_fd, select.POLLOUT)
        self.last_line: bytes | None = None

    def close(self) -> None:
        """Forget the descriptors (the process owns and closes them)."""
        self._rpoll = self._wpoll = select.poll()

    def send(self, data: bytes, deadline: float) -> ChannelError | None:
        """Write ``data`` (one or more complete lines) before ``deadline`` (monotonic)."""
        if self.transcript is not None:
            self.transcript.write(b"> " + data)
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._wfd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except OSError:  # EPIPE, EBADF, EIO...: whatever it is, the bot cannot hear us
                return ChannelError.CLOSED
            if not _wait(self._wpoll, deadline):
                return ChannelError.TIMEOUT
        return None

    def read_line(self, deadline: float) -> bytes | ReadFailure:
        """The next complete line (without the newline), or why there is none."""
        buf = self._buf
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                if nl + 1 > self.max_line:
                    return self._too_long()
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                self.last_line = line
                if self.transcript is not None:
                    self.transcript.write(b"< " + line + b"\n")
                return line
            if len(buf) >= self.max_line:
                return self._too_long()
            if not _wait(self._rpoll, deadline):
                return ReadFailure(ChannelError.TIMEOUT, bytes(buf[:200]))
            try:
                chunk = os.read(self._rfd, 65536)
            except BlockingIOError:  # woken without data after all: wait again
                continue
            except OSError:
                chunk = b""  # a broken pipe reads as the end of the stream
            if not chunk:
                return ReadFailure(ChannelError.CLOSED, bytes(buf[:200]))
            buf += chunk

    def trailing(self, deadline: float, limit: int = 4096) -> bytes:
        """The next line the bot writes after its last one (buffered or arriving before
        ``deadline``, at most ``limit`` bytes): evidence for a fault, since a runtime's
        crash report arrives in several writes and only its first line may have been
        read when the fault was found. What it reads stays buffered for ``read_line``
        (a game under a strikes policy goes on reading this bot)."""
        buf = self._buf
        while b"\n" not in buf and len(buf) < limit and _wait(self._rpoll, deadline):
            try:
                chunk = os.read(self._rfd, limit - len(buf))
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
        return bytes(buf[:limit])

    def _too_long(self) -> ReadFailure:
        partial = bytes(self._buf[:200])
        self._buf.clear()
        return ReadFailure(ChannelError.TOO_LONG, partial)


def _wait(poller: select.poll, deadline: float) -> bool:
    """Wait until ``poller`` reports an event (readable, writable, hang-up, error) or
    ``deadline`` (monotonic) passes; True when an event came."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return bool(poller.poll(0))
    return bool(poller.poll(math.ceil(remaining * 1000)))
