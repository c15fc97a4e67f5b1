"""Drain a bot's stderr so it can never block, keeping a capped log and a short tail.

A child that writes more than a pipe buffer (64 KiB) to an unread stderr blocks
forever, which would look like a timeout.  The sink reads continuously in a daemon
thread, writes at most ``cap`` bytes to the log, counts the rest, and remembers the
last few KiB for fault reports.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sys
import termios
import threading
import time
from pathlib import Path
from typing import BinaryIO

DEFAULT_CAP = 1024 * 1024
TAIL_BYTES = 4096
_CHUNK = 65536


class StderrSink:
    """Reads one pipe until EOF into a size-capped log file and an in-memory tail.

    The sink owns ``fd`` and closes it.  ``close()`` wakes the reader through a private
    pipe, so a descendant that escaped with the pipe still open cannot hang us.
    """

    def __init__(
        self,
        fd: int,
        log_path: Path | None = None,
        *,
        cap: int = DEFAULT_CAP,
        tail_bytes: int = TAIL_BYTES,
        head_bytes: int = 0,
        name: str = "bot",
    ) -> None:
        self._fd = fd
        self._head_bytes = head_bytes
        self._head = bytearray()
        self._cap = cap
        self._tail_bytes = tail_bytes
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        """Held from a read to its bookkeeping, so :meth:`since` sees whole reads."""
        self._fd_open = True
        self._probe = select.poll()
        """Asks "anything unread in the pipe?" for :meth:`since` (cheaper than FIONREAD)."""
        self._probe.register(fd, select.POLLIN)
        self._log: BinaryIO | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "wb")  # noqa: SIM115 - closed in close()
        self.written = 0
        self.dropped = 0
        self.total = 0
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name=f"stderr-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if self._wake_r in events:
                    # Asked to stop: take what is already buffered, then quit.
                    self._drain_nonblocking()
                    return
                if not events.get(self._fd):
                    continue
                with self._reading:
                    try:
                        chunk = os.read(self._fd, _CHUNK)
                    except InterruptedError:
                        continue
                    except OSError:
                        return
                    if not chunk:
                        return
                    self._take(chunk)
        finally:
            with self._reading:
                self._fd_open = False
                os.close(self._fd)
            os.close(self._wake_r)

    def _drain_nonblocking(self) -> None:
        os.set_blocking(self._fd, False)
        for _ in range(64):
            try:
                chunk = os.read(self._fd, _CHUNK)
            except OSError:
                return
            if not chunk:
                return
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            if len(self._head) < self._head_bytes:
                self._head += chunk[: self._head_bytes - len(self._head)]
            self._tail += chunk
            if len(self._tail) > self._tail_bytes:
                del self._tail[: len(self._tail) - self._tail_bytes]
            if self._log is None or self._closed:
                return
            room = max(0, self._cap - self.written)
            keep = chunk[:room]
            if keep:
                try:
                    self._log.write(keep)
                    self._log.flush()
                    self.written += len(keep)
                except OSError:
                    keep = b""
            self.dropped += len(chunk) - len(keep)

    def mark(self) -> int:
        """The stream position now (bytes read so far), for :meth:`since`."""
        return self.total  # one attribute read: atomic, no lock needed

    def active_since(self, mark: int) -> bool:
        """Whether anything was read (or is being read) after ``mark``: no system call,
        so a pipe written to but not yet read says False (:meth:`since` waits for it)."""
        return self.total != mark or self._reading.locked()

    def since(self, mark: int, limit: int, settle_s: float = 0.05) -> str | None:
        """What the bot wrote after ``mark`` (the last ``limit`` bytes of it at most), or None.

        Used per decision: a bot writes its stderr lines before its answer, so they are
        already in the pipe; this waits (at most ``settle_s``, only while bytes are
        pending, so a quiet bot costs nothing) until the reader has taken
        everything the pipe holds, then reads the kept tail.
        """
        # Quiet bot (the usual case), without locks: the pipe is empty, so every byte written
        # so far was read; no read is in progress, so each was counted in ``total``.
        if not self._probe.poll(0) and not self._reading.locked() and self.total == mark:
            return None
        deadline = time.monotonic() + settle_s
        while True:
            with self._reading:
                pending = self._pending()
                if pending == 0 or time.monotonic() >= deadline:
                    with self._lock:
                        new = self.total - mark
                        if new <= 0:
                            return None
                        keep = min(new, limit, len(self._tail))
                        data = bytes(self._tail[len(self._tail) - keep :])
                    text = data.decode("utf-8", errors="replace")
                    return text if keep == new else f"[... {new - keep} bytes before ...]\n{text}"
            time.sleep(0.0002)

    def _pending(self) -> int:
        """Bytes waiting in the pipe (0 once it is closed). Call with ``_reading`` held."""
        if not self._fd_open:
            return 0
        try:
            buf = fcntl.ioctl(self._fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int.from_bytes(buf, sys.byteorder)

    def tail(self, settle_s: float = 0.2) -> str:
        """The last few KiB the bot wrote, decoded leniently, for fault reports. What the
        pipe still holds is taken first (waiting at most ``settle_s`` for the reader): a
        bot's last words before it died belong in its fault however late, on a loaded
        host, the reader thread gets to run."""
        deadline = time.monotonic() + settle_s
        while True:
            with self._reading:
                if self._pending() == 0:
                    break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.0005)
        with self._lock:
            return self._tail.decode("utf-8", errors="replace")

    def text(self) -> str:
        """Head and tail of everything read, with a note of what was left out between."""
        with self._lock:
            data = bytes(self._head)
            if self.total > len(self._head):
                tail = bytes(self._tail[-max(0, self.total - len(self._head)) :])
                gap = self.total - len(self._head) - len(tail)
                if gap:
                    data += f"\n[... {gap} bytes omitted ...]\n".encode()
                data += tail
            return data.decode("utf-8", errors="replace")

    def close(self, timeout_s: float = 1.0) -> None:
        """Finish reading (normally EOF: the writers are dead), then close the log.

        Idempotent.  If EOF does not come within ``timeout_s`` (some escaped process
        still holds the pipe) the reader is told to stop after draining what is buffered.
        """
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
            self._thread.join(timeout_s)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self._wake_w)
            if self._log is not None:
                if self.dropped:
                    with contextlib.suppress(OSError):
                        self._log.write(f"\n[truncated {self.dropped} bytes]\n".encode())
                with contextlib.suppress(OSError):
                    self._log.close()
