"""Helpers for the hostile-bot tests: bot folders, real tournament runs through the CLI,
and the evidence they leave behind (processes, files, cgroups, store contents).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BOT_UIDS = range(61000, 65000)
"""Per-bot uids: 61000 + slot (+ 1000 k for alternates)."""
TELLTALE = "azul-hostile"
"""Every file a hostile bot tries to create outside its sandbox has this in its name."""
GOOD = ("python-greedy", "c-greedy")
"""The well-behaved bots (copies of bots/...) every hostile bot plays against."""
BUILD_OUTPUTS = {"c-greedy": ("bot",)}
"""Files a bot's own build writes into its folder (not a sandbox escape)."""
TRIGGER = 3
"""The decision on which the hostile bots misbehave (fixtures/_lib/azulbot.py)."""


# ---------------------------------------------------------------- bot folders


def make_public(path: Path) -> None:
    """Bots run under their own uid: folders must be enterable all the way down."""
    for p in [path, *path.parents]:
        if p in (Path("/tmp"), p.parent):
            break
        p.chmod(p.stat().st_mode | 0o755)


def hostile_names() -> list[str]:
    """Every bot of the corpus (a folder with a bot.toml)."""
    return sorted(d.name for d in FIXTURES.iterdir() if (d / "bot.toml").is_file())


ORIGIN_FILE = ".azul-test-origin"
"""Written into every copied bot: a random token, so that the tests can tell which copy a
sandboxed process runs (through ``/proc/PID/root/bot``; no host path is visible inside,
not even in its mount table)."""
_ORIGINS: dict[str, Path] = {}


def copy_bot(src: Path, dest_dir: Path) -> Path:
    """A world-readable copy of a bot folder, symlinks dereferenced, build outputs left out."""
    dest = dest_dir / src.name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("bot", "__pycache__"))
    token = uuid.uuid4().hex
    (dest / ORIGIN_FILE).write_text(token)
    _ORIGINS[token] = dest
    for p in [dest, *dest.rglob("*")]:
        p.chmod(p.stat().st_mode | (0o755 if p.is_dir() else 0o644))
    return dest


def good_bot(name: str, dest_dir: Path) -> Path:
    return copy_bot(REPO / "bots" / name, dest_dir)


def hostile_bot(name: str, dest_dir: Path) -> Path:
    return copy_bot(FIXTURES / name, dest_dir)


# ---------------------------------------------------------------- tournaments


def tournament_command(
    bots: Sequence[Path],
    out: Path,
    *,
    seeds: int,
    master_seed: int = 1,
    workers: int = 2,
    move_ms: int = 300,
    init_ms: int = 2000,
    sandbox: str = "strict",
    players: Sequence[int] = (2,),
    variants: Sequence[str] = ("coloured",),
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "arena.cli",
        "tournament",
        "--quiet",
        "--bootstrap",
        "0",
        "--bots",
        *map(str, bots),
        "--players",
        *map(str, players),
        "--variants",
        *variants,
        "--seeds",
        str(seeds),
        "--master-seed",
        str(master_seed),
        "--workers",
        str(workers),
        "--time-per-move",
        str(move_ms),
        "--init-time",
        str(init_ms),
        "--sandbox",
        sandbox,
        "--out",
        str(out),
    ]


@dataclass(frozen=True)
class CliRun:
    returncode: int | None
    """None: killed by the test after its timeout."""
    output: str
    seconds: float
    pid: int


def run_cli(cmd: list[str], timeout_s: float = 60.0, cache: Path | None = None) -> CliRun:
    """Run one tournament command to its end (or SIGKILL it after ``timeout_s``).

    Output goes through a file, not a pipe: a process that outlives the CLI cannot make
    the test wait for the pipe to close.  ``cache``: the build cache folder to use.
    """
    began = time.monotonic()
    env = dict(os.environ)
    if cache is not None:
        env["ARENA_BUILD_CACHE"] = str(cache)
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, env=env)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        sink.seek(0)
        text = sink.read().decode("utf-8", errors="replace")
    return CliRun(code, text, time.monotonic() - began, proc.pid)


# ---------------------------------------------------------------- processes


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    uid: int
    state: str
    start: int
    """Start time in clock ticks since boot: with the pid, identifies a process."""
    cmdline: str
    cwd: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start)

    def describe(self) -> str:
        return f"pid {self.pid} uid {self.uid} state {self.state} cwd {self.cwd}: {self.cmdline}"


def _proc(pid: int) -> ProcInfo | None:
    base = Path("/proc") / str(pid)
    try:
        stat = (base / "stat").read_text()
        status = (base / "status").read_text()
        cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    try:
        cwd = os.readlink(base / "cwd")
    except OSError:
        cwd = ""
    rest = stat[stat.rfind(")") + 2 :].split()
    uid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:"))
    return ProcInfo(pid, int(rest[1]), uid, rest[0], int(rest[19]), cmdline.strip(), cwd)


def processes() -> dict[int, ProcInfo]:
    """Every live (non-zombie) process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _proc(int(entry))
            if info is not None and info.state not in ("Z", "X"):
                found[info.pid] = info
    return found


def bot_uid_keys() -> set[tuple[int, int]]:
    """The processes running under per-bot uids right now (to ignore other arenas' bots)."""
    return {p.key for p in processes().values() if p.uid in BOT_UIDS}


def _runs_from(pid: int, tokens: Sequence[str]) -> bool:
    """Does the process run a copy of a bot folder under one of ``tokens`` (host paths)?
    A sandboxed bot's /bot holds the copy's origin token (see :data:`ORIGIN_FILE`)."""
    try:
        token = Path(f"/proc/{pid}/root/bot/{ORIGIN_FILE}").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    origin = _ORIGINS.get(token)
    return origin is not None and any(str(origin).startswith(t) for t in tokens)


def leftovers(roots: Sequence[Path], before: Iterable[tuple[int, int]] = ()) -> list[ProcInfo]:
    """Processes started for the tests' folders that are still alive.

    Ours: a command line or working directory pointing into ``roots``, or a process of a
    per-bot uid (new since ``before``) running a copy of a bot folder in ``roots``
    (inside bubblewrap a bot's cwd is /bot and nothing it shows names a host path).
    """
    tokens = [str(r) for r in roots]
    old = set(before)
    me = os.getpid()
    found = []
    for info in processes().values():
        if info.pid == me:
            continue
        if any(t in info.cmdline or info.cwd.startswith(t) for t in tokens) or (
            info.uid in BOT_UIDS and info.key not in old and _runs_from(info.pid, tokens)
        ):
            found.append(info)
    return found


def wait_for_no_leftovers(
    roots: Sequence[Path], before: Iterable[tuple[int, int]] = (), grace_s: float = 2.0
) -> list[ProcInfo]:
    """Leftovers still alive after ``grace_s`` (dying processes get a moment)."""
    deadline = time.monotonic() + grace_s
    while True:
        found = leftovers(roots, before)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


class SandboxMonitor:
    """Samples, while a tournament runs, how many sandboxes (pid namespaces) of one bot
    are alive at once.  A forfeited bot's process tree is killed at the fault, so a bot
    never has more live sandboxes than there are workers."""

    def __init__(
        self, bot_dir: Path, before: Iterable[tuple[int, int]], period_s: float = 0.02
    ) -> None:
        self.token = str(bot_dir)
        self.before = set(before)
        self.period_s = period_s
        self.most = 0
        self.seen: set[int] = set()
        """Every pid namespace of the bot seen (one per process the arena started)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> set[int]:
        spaces = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                status = Path(f"/proc/{entry}/status").read_text()
                uid = int(status.split("\nUid:", 1)[1].split()[0])
                if uid not in BOT_UIDS or "\nState:\tZ" in status:
                    continue
                start = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[19])
                if (int(entry), start) in self.before:
                    continue
                if not _runs_from(int(entry), [self.token]):
                    continue
                spaces.add(os.stat(f"/proc/{entry}/ns/pid").st_ino)
            except (OSError, ValueError, IndexError):
                continue
        return spaces

    def _run(self) -> None:
        while not self._stop.is_set():
            spaces = self._sample()
            self.seen |= spaces
            self.most = max(self.most, len(spaces))
            self._stop.wait(self.period_s)

    def __enter__(self) -> SandboxMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def descendants(pid: int) -> set[int]:
    """``pid`` and every process below it, right now."""
    procs = processes()
    children: dict[int, list[int]] = {}
    for info in procs.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found = {pid}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_all(infos: Iterable[ProcInfo]) -> None:
    """Clean up after a failed test (never by name: by pid, each one checked)."""
    for info in infos:
        current = _proc(info.pid)
        if current is not None and current.start == info.start:
            with contextlib.suppress(OSError):
                os.kill(info.pid, signal.SIGKILL)


# ---------------------------------------------------------------- cgroups


def arena_cgroups() -> list[Path]:
    """Every per-bot cgroup directory (``<base>/arena/<tag>-<pid>-<n>``) on the machine."""
    from arena.sandbox.cgroups import PARENT, discover

    found = []
    for h in discover():
        parent = h.base / PARENT
        with contextlib.suppress(OSError):
            found += [d for d in parent.iterdir() if d.is_dir() and d.name.count("-") == 2]
    return found


def cgroups_of(pids: Iterable[int]) -> list[Path]:
    """Per-bot cgroups created by any of ``pids`` (the creator's pid is in the name)."""
    wanted = {str(p) for p in pids}
    return sorted(d for d in arena_cgroups() if d.name.split("-")[1] in wanted)


# ---------------------------------------------------------------- files


def snapshot(root: Path, skip: Iterable[Path] = ()) -> dict[str, tuple[object, ...]]:
    """Everything under ``root`` (type, size, mode, owner, content hash), minus ``skip``."""
    skipped = {str(p) for p in skip}
    found: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skipped]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if path in skipped:
                continue
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path), st.st_uid)
            elif os.path.isdir(path):
                found[rel] = ("dir", st.st_mode, st.st_uid)
            else:
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                found[rel] = ("file", st.st_size, st.st_mode, st.st_uid, digest)
    return found


def diff(before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]]) -> list[str]:
    changes = [f"new: {k} {after[k]}" for k in sorted(after.keys() - before.keys())]
    changes += [f"gone: {k}" for k in sorted(before.keys() - after.keys())]
    changes += [
        f"changed: {k} {before[k]} -> {after[k]}"
        for k in sorted(before.keys() & after.keys())
        if before[k] != after[k]
    ]
    return changes


SHARED_TMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


def shared_tmp_entries() -> dict[str, int]:
    """Top-level entries of the machine's shared scratch folders, with their owner."""
    found = {}
    for folder in SHARED_TMP:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    found[entry.path] = entry.stat(follow_symlinks=False).st_uid
    return found


def foreign_files(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """New shared-tmp entries a bot could have made: owned by a bot uid, or a telltale."""
    return [
        f"{path} (uid {uid})"
        for path, uid in sorted(after.items())
        if path not in before and (uid in BOT_UIDS or TELLTALE in path)
    ]


def bot_owned(root: Path) -> list[str]:
    """Files under ``root`` owned by a per-bot uid or named like a telltale."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                uid = os.lstat(path).st_uid
                if uid in BOT_UIDS or TELLTALE in name:
                    found.append(f"{path} (uid {uid})")
    return found


# ---------------------------------------------------------------- the store


def stored_games(out: Path) -> int:
    """Games stored so far (0 while the store does not exist or is being created)."""
    from arena.store.tournament import Store, StoreError

    if not (out / "tournament.sqlite").exists():
        return 0
    try:
        with Store(out / "tournament.sqlite", readonly=True) as store:
            return store.finished_count()
    except (StoreError, sqlite3.Error):
        return 0


def store_problems(out: Path, expected_ids: Sequence[str]) -> list[str]:
    """Integrity: the store's own check (SQLite's included), and every scheduled game
    stored exactly once with one seat row per player."""
    from arena.store.tournament import Store

    problems = []
    with Store(out / "tournament.sqlite", readonly=True) as store:
        problems += [f"arena integrity check: {p}" for p in store.integrity_problems()]
        schedule = list(store.schedule())
        scheduled = [g.game_id for g in schedule]
        if sorted(scheduled) != sorted(expected_ids):
            problems.append(f"schedule {scheduled} != expected {sorted(expected_ids)}")
        indices = [g.game_index for g in schedule]
        if indices != list(range(len(indices))):
            problems.append(f"schedule indices are not 0..n-1: {indices}")
        games = sorted(store.finished_indices())
        if games != indices:
            problems.append(f"stored games {games} != scheduled {indices}")
    return problems


def records_by_game_id(out: Path) -> dict[str, dict[str, Any]]:
    """Every stored game record (parsed JSON) by game id."""
    from arena.store.tournament import Store

    with Store(out / "tournament.sqlite", readonly=True) as store:
        return {game_id: json.loads(data) for game_id, data in store.records()}


def without_timing(record: dict[str, Any]) -> dict[str, Any]:
    """A record minus what the clock measured (wall, CPU and between-turn CPU times):
    what must be reproducible."""
    copy: dict[str, Any] = json.loads(json.dumps(record))
    for rnd in copy["rounds"]:
        for decision in rnd["decisions"]:
            decision.pop("think_ms", None)
            decision.pop("cpu_ms", None)
            decision.pop("between_ms", None)
    return copy


def replay_problems(records: dict[str, dict[str, Any]]) -> list[str]:
    """Re-execute every record with the rules engine; report those that do not verify."""
    from arena.engine.record import GameRecord
    from arena.engine.verify import ReplayError, replay

    problems = []
    for game_id, data in sorted(records.items()):
        try:
            replay(GameRecord.model_validate(data))
        except (ReplayError, ValueError) as exc:
            problems.append(f"{game_id}: {str(exc).splitlines()[0]}")
    return problems


def seat_rows(out: Path) -> list[tuple[Any, ...]]:
    from arena.store.tournament import Store

    with Store(out / "tournament.sqlite", readonly=True) as store:
        return [(r[0], r[1], r[2], r[3], r[8], r[11]) for r in store.seat_rows()]


def worker_pids(out: Path) -> set[int]:
    """Pids of the worker processes that stored games (a game's worker is host:pid)."""
    from arena.store.tournament import Store

    with Store(out / "tournament.sqlite", readonly=True) as store:
        return {int(str(row[12]).rsplit(":", 1)[1]) for row in store.game_rows()}


# ---------------------------------------------------------------- network targets


@dataclass
class Listeners:
    """A TCP port (all IPv4 addresses, and ::1) and an abstract unix socket held by the
    test: a sandboxed bot must not be able to reach any of them."""

    sockets: list[socket.socket] = field(default_factory=list)
    port: int = 0
    abstract: str = ""

    def __enter__(self) -> Listeners:
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        v4.bind(("0.0.0.0", 0))
        self.port = v4.getsockname()[1]
        self.sockets.append(v4)
        with contextlib.suppress(OSError):
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            self.sockets.append(v6)
            v6.bind(("::1", self.port))
        self.abstract = f"{TELLTALE}-{os.getpid()}-{time.monotonic_ns()}"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind("\0" + self.abstract)
        self.sockets.append(unix)
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.listen(16)
                sock.setblocking(False)
        return self

    def __exit__(self, *exc: object) -> None:
        for sock in self.sockets:
            sock.close()

    def hosts(self) -> list[str]:
        """The machine's own non-loopback IPv4 addresses (best effort)."""
        found: set[str] = set()
        with contextlib.suppress(OSError):
            for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
                found.add(str(info[4][0]))
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("1.1.1.1", 53))  # no packet is sent: this only picks a route
            found.add(s.getsockname()[0])
        return sorted(h for h in found if not h.startswith("127."))

    def connections(self) -> list[str]:
        """Whoever connected (nothing should have)."""
        peers = []
        for sock in self.sockets:
            while True:
                try:
                    conn, addr = sock.accept()
                except OSError:
                    break
                peers.append(f"{sock.family.name} {addr!r}")
                conn.close()
        return peers


def write_targets(bot_dir: Path, data: dict[str, Any]) -> None:
    """``targets.json`` for the probing bots (host paths, ports, pids to try)."""
    path = bot_dir / "targets.json"
    path.write_text(json.dumps(data, indent=1))
    path.chmod(0o644)


def bot_logs(out: Path, name: str) -> str:
    """Everything the bot's processes wrote to stderr (the arena keeps it per worker)."""
    logs = sorted((out / "logs").glob(f"{name}.*"))
    return "".join(p.read_text(errors="replace") for p in logs)
