"""A person at a 100x40 terminal, scripted: runs ``arena play ... --human`` on a pseudo
terminal and answers each prompt with the first move group the screen lists."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROWS, COLUMNS = 40, 100
SGR = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = re.compile(r"s left: $")
GROUP = re.compile(r"([C0-8]):([BYRKW]) x\d+ > ([0-4F])")
COLUMN = re.compile(r"Your wall column for line \d \(col(\d)")
SAFETY_S = 600.0
"""Only a hung game ends a session this way (not a synchronisation)."""


@dataclass
class Session:
    returncode: int
    raw: bytes
    screens: list[str]
    """What the terminal printed before each prompt, since the previous answer."""

    @property
    def text(self) -> str:
        return SGR.sub("", self.raw.decode("utf-8", "replace")).replace("\r\n", "\n")


def play_in_pty(args: Sequence[str], env: dict[str, str] | None = None) -> Session:
    """``python -m arena.cli play ARGS`` on a 100x40 pty; every prompt answered."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    environ = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
    environ.pop("NO_COLOR", None)
    environ.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "play", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environ,
        cwd=REPO,
        start_new_session=True,
    )
    os.close(slave)
    raw = bytearray()
    answered_at = 0
    screens: list[str] = []
    deadline = time.monotonic() + SAFETY_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            raw += chunk
            pending = SGR.sub("", raw[answered_at:].decode("utf-8", "replace"))
            if PROMPT.search(pending.replace("\r\n", "\n")):
                screens.append(pending.replace("\r\n", "\n"))
                os.write(master, (answer(pending) + "\n").encode())
                answered_at = len(raw)
        else:
            proc.kill()
    finally:
        returncode = proc.wait(timeout=60)
        os.close(master)
    return Session(returncode, bytes(raw), screens)


def answer(screen: str) -> str:
    """The first move the screen lists: ``0B2`` for the group ``0:B x1 > 2 3 F``."""
    column = COLUMN.search(screen)
    if column:
        return column[1]
    listing = screen[screen.rindex("Legal moves:") :]
    group = GROUP.search(listing)
    assert group, listing
    return "".join(group.groups())
