"""No channel between concurrent bots (issue 22): two bots sandboxed at once by the
arena's own launcher, one sending a bit through every shared kernel object tried, the
other watching.  What the receiver sees must not change when the sender acts.

Tried (fixtures/channels/channels.py): ``flock``, POSIX record locks (F_SETLK, seen with
F_GETLK), OFD locks (F_OFD_SETLK / F_OFD_GETLK) and leases (F_SETLEASE) on files every
sandbox reads (a file under /usr, /dev/null, and the bot's own file when both run the
same bot); inotify and dnotify watches on the shared file and its folder; a file in
/dev/shm and in /tmp; an abstract unix socket; SysV shared memory; a POSIX message
queue; the hostname; the other's processes in /proc.  Not tried: timing (the page cache
and host load, see the README's security model) — no test here measures time.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from arena.sandbox import BotProcess, Level, spawn

from .conftest import require_full_sandbox
from .hostile_support import FIXTURES, make_public

SHARED_CANDIDATES = ("/usr/share/common-licenses/Artistic", "/usr/share/common-licenses/GPL-2")
"""Files nothing else on the machine is likely to read while the test runs."""


def read_line(proc: BotProcess, timeout_s: float = 20) -> str:
    """One line of the program's stdout, or fail (never hang)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            pytest.fail(f"no line from the sandboxed program: {data!r} {proc.stderr_tail()}")
        chunk = os.read(fd, 1)
        if not chunk:
            pytest.fail(f"the sandboxed program ended: {data!r} {proc.stderr_tail()}")
        data += chunk
    return data.decode()


def ask(proc: BotProcess, line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode())
    proc.stdin.flush()


def probe(receiver: BotProcess) -> dict[str, Any]:
    ask(receiver, "probe\n")
    seen: dict[str, Any] = json.loads(read_line(receiver))
    return seen


def test_two_concurrent_sandboxed_bots_share_no_channel(tmp_path: Path) -> None:
    require_full_sandbox()
    shared = next((p for p in SHARED_CANDIDATES if os.path.isfile(p)), None)
    assert shared is not None, f"none of {SHARED_CANDIDATES} exists"
    make_public(tmp_path)
    folder = tmp_path / "channels"
    folder.mkdir(mode=0o755)
    shutil.copy(FIXTURES / "channels" / "channels.py", folder / "channels.py")
    (folder / "channels.py").chmod(0o644)
    command = ["/usr/bin/python3", "channels.py"]
    slot = 700 + os.getpid() % 200
    with spawn([*command, "receive", shared], folder, level=Level.STRICT, slot=slot) as receiver:
        assert read_line(receiver) == "ready\n"
        with spawn([*command, "send", shared], folder, level=Level.STRICT, slot=slot + 1) as sender:
            assert sender.uid != receiver.uid
            idle = probe(receiver)
            ask(sender, "act\n")
            sent = json.loads(read_line(sender))
            active = probe(receiver)
            assert sender.stdin is not None
            sender.stdin.close()
    # The sender did act: its locks "worked" (they are inert), its own objects exist
    # (/dev/shm is not writable in the sandbox: that attempt fails with EACCES).
    print(json.dumps({"sent": sent, "idle": idle, "active": active}, indent=1))
    assert sent[f"flock {shared}"] == "ok", sent
    assert sent["file in /tmp"] == "ok" and sent["SysV shm"] == "ok", sent
    carried = {k: (idle[k], active[k]) for k in idle if idle[k] != active[k]}
    assert not carried, f"channels that carried a bit (idle, after the sender acted): {carried}"
    assert active["flock /bot/channels.py"] == "took it", active
    assert active["inotify on the shared file"] is not True, active
    assert not active["file in /dev/shm"] and not active["file in /tmp"], active
    assert active["abstract socket"] == "ECONNREFUSED", active
    assert active["SysV shm"] == "ENOENT" and active["POSIX mq"] == "ENOENT", active
    assert active["hostname"] != "azul-hostile-channel" and not active["the sender in /proc"]
