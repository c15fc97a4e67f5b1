"""Run a bot's build command (e.g. ``gcc -O2 -o bot bot.c``) in the sandbox.

Unlike a bot run, the folder is mounted read-write so the build can leave its
artifacts, and the command runs as the folder's owner so the files it writes belong
to them.  A root-owned folder is built as root *without any capability* (bwrap
--cap-drop ALL / an empty bounding set), which can write only root-owned files that
are visible: the bot folder and the private /tmp.  Still no network, /usr read-only,
limits, and a tree kill on timeout.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox import layers
from arena.sandbox.process import bot_folder, start
from arena.sandbox.spec import GIB, MIB, Level, Limits

OUTPUT_HEAD = 64 * 1024
OUTPUT_TAIL = 16 * 1024


@dataclass(frozen=True)
class BuildResult:
    """Outcome of a build: ``ok`` only if it exited 0 within the timeout."""

    ok: bool
    returncode: int | None
    output: str
    seconds: float
    timed_out: bool = False


def build_limits(timeout_s: float) -> Limits:
    """Looser limits than a bot's: compilers and JVMs want more memory, files and time."""
    return Limits(
        cpu_seconds=max(1, math.ceil(timeout_s)) * max(1, os.cpu_count() or 1) + 1,
        memory_bytes=2 * GIB,
        max_processes=128,
        open_files=1024,
        file_size_bytes=256 * MIB,
        tmp_bytes=256 * MIB,
        cpu_quota=float(os.cpu_count() or 1),
    )


def build(
    command: str,
    bot_dir: Path | str,
    timeout_s: float,
    *,
    level: Level = Level.AUTO,
    limits: Limits | None = None,
    env: Mapping[str, str] | None = None,
    ro_paths: Sequence[str] = (),
) -> BuildResult:
    """Run ``command`` in ``bot_dir`` (read-write) and capture its merged output."""
    plan = layers.plan(level)
    folder = bot_folder(bot_dir)
    uid: int | None = None
    gid: int | None = None
    drop_caps = False
    if plan.separate_uid:
        st = folder.stat()
        if st.st_uid == 0:
            drop_caps = True
        else:
            uid, gid = st.st_uid, st.st_gid
    # RLIMIT_NPROC is off: the owner's uid is shared with their other processes; the
    # pids cgroup still bounds the build.
    # The command is a shell string by contract (it may use &&, globs, redirections).
    argv = ["/bin/sh", "-c", command]
    began = time.monotonic()
    proc = start(
        plan,
        argv,
        folder,
        build_limits(timeout_s) if limits is None else limits,
        uid=uid,
        gid=gid,
        extra_env=env,
        writable=True,
        drop_caps=drop_caps,
        ro_paths=ro_paths,
        merge_output=True,
        head_bytes=OUTPUT_HEAD,
        tail_bytes=OUTPUT_TAIL,
        tag="build",
        nproc=False,
    )
    timed_out = False
    try:
        code: int | None = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        code = None
    finally:
        proc.kill()
    seconds = time.monotonic() - began
    output = proc.sink.text()
    if timed_out:
        output += f"\n[build timed out after {timeout_s:g} s and was killed]\n"
    return BuildResult(
        ok=code == 0, returncode=code, output=output, seconds=seconds, timed_out=timed_out
    )
