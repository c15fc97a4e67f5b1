"""Per-bot cgroups: memory, pids and CPU limits, plus a kill that cannot miss a process.

Every hierarchy we can write to gets a directory ``<our cgroup>/arena/bot-<pid>-<n>``.
Nesting under the cgroup we already live in keeps whatever limits our own supervisor
imposes.  A bot joins its cgroups from a tiny shell prologue *before* it execs anything
(see launch.py), so no process of the bot is ever outside them.

Works with cgroup v1 controllers (memory, pids, cpu, freezer), a v2 hierarchy with
controllers, and the hybrid layout where v2 (``unified``) has no controllers but
offers ``cgroup.kill``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox.spec import Limits

PARENT = "arena"
CFS_PERIOD_US = 100_000
# Slack over RLIMIT_DATA so that a heap overrun gives the bot a MemoryError first and the
# cgroup OOM killer only stops what rlimits cannot see (tmpfs, page cache, stacks).
MEMORY_SLACK = 128 * 1024 * 1024
# pids.max counts the outer bwrap, its init and the privilege-dropping wrapper too.
PIDS_OVERHEAD = 4

_counter = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    """A mounted cgroup hierarchy and the directory under which our cgroups go."""

    mount: Path
    version: int
    controllers: frozenset[str]
    base: Path


@dataclass(frozen=True)
class Support:
    """What the cgroup layer can do on this machine (probed once)."""

    hierarchies: tuple[Hierarchy, ...]
    memory: Hierarchy | None
    pids: Hierarchy | None
    cpu: Hierarchy | None
    kill: str  # "cgroup.kill", "freezer", "procs" or ""
    kill_hierarchy: Hierarchy | None
    problems: tuple[str, ...] = ()
    cpuacct: Hierarchy | None = None
    """Where the CPU time of a bot's whole tree is read (v1 cpuacct, or any v2 cpu.stat)."""

    @property
    def complete(self) -> bool:
        """True when memory, pids and CPU limits and a tree kill all work."""
        return bool(self.memory and self.pids and self.cpu and self.kill)

    def describe(self) -> str:
        """One line for `arena doctor`."""
        have = [
            n for n, h in (("memory", self.memory), ("pids", self.pids), ("cpu", self.cpu)) if h
        ]
        parts = [
            f"limits: {', '.join(have) or 'none'}",
            f"tree kill: {self.kill or 'none'}",
        ]
        if self.cpuacct is not None:
            source = "cpuacct" if self.cpuacct.version == 1 else "cpu.stat"
            waits = any(
                h.version == 2 and (h.base / "cpu.pressure").exists() for h in self.hierarchies
            )
            parts.append(f"CPU clock: {source}" + (" + cpu.pressure" if waits else ""))
        freezes = any(h.version == 2 for h in self.hierarchies)  # (BotCgroup.freeze)
        parts.append(
            "between turns: "
            + ("frozen (cgroup.freeze)" if freezes else "charged (no cgroup v2 to freeze)")
        )
        if self.problems:
            parts.append("; ".join(self.problems))
        return "; ".join(parts)


def _read(path: Path) -> str:
    return path.read_text(encoding="ascii", errors="replace")


def _write(path: Path, value: str) -> None:
    """Write a cgroup control file in one write() call, as the kernel expects."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _mounts() -> list[tuple[str, Path, str, frozenset[str]]]:
    """(fstype, mount point, mount root, super options) of every cgroup mount."""
    out: list[tuple[str, Path, str, frozenset[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        rfields = right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        root = fields[3].replace("\\040", " ")
        point = Path(fields[4].replace("\\040", " "))
        out.append((rfields[0], point, root, frozenset(rfields[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """Our cgroup path per hierarchy key ("" for v2, else the comma-joined controllers)."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            paths[parts[1]] = parts[2]
    return paths


def _base_for(point: Path, root: str, own: str | None) -> Path:
    """Directory of our own cgroup inside a mount, or the mount itself if unknown."""
    if own is None:
        return point
    if root != "/" and (own == root or own.startswith(root + "/")):
        own = own[len(root) :]
    candidate = point / own.lstrip("/")
    return candidate if candidate.is_dir() else point


def discover() -> list[Hierarchy]:
    """All cgroup hierarchies mounted here, with the base directory for our cgroups."""
    own = _own_paths()
    found: list[Hierarchy] = []
    seen: set[Path] = set()
    for fstype, point, root, opts in _mounts():
        if point in seen:
            continue
        seen.add(point)
        if fstype == "cgroup2":
            base = _base_for(point, root, own.get(""))
            try:
                ctrls = frozenset(_read(base / "cgroup.controllers").split())
            except OSError:
                ctrls = frozenset()
            found.append(Hierarchy(point, 2, ctrls, base))
        else:
            ctrls = frozenset(
                o for o in opts if o in {"memory", "pids", "cpu", "cpuacct", "freezer"}
            )
            if not ctrls:
                continue
            key = next((k for k in own if k and frozenset(k.split(",")) >= ctrls), None)
            base = _base_for(point, root, own.get(key) if key is not None else None)
            found.append(Hierarchy(point, 1, ctrls, base))
    return found


def _ensure_parent(h: Hierarchy) -> Path:
    """Create ``<base>/arena`` (shared by all arena processes) and enable v2 controllers."""
    parent = h.base / PARENT
    with contextlib.suppress(FileExistsError):
        parent.mkdir()
    if h.version == 2 and h.controllers:
        wanted = h.controllers & {"memory", "pids", "cpu"}
        try:
            enabled = set(_read(parent / "cgroup.subtree_control").split())
        except OSError:
            enabled = set()
        missing = wanted - enabled
        if missing:
            # May fail when our base holds processes and is not the root; then the bot
            # cgroups simply lack the controllers (probe() reports it).
            with contextlib.suppress(OSError):
                base_enabled = set(_read(h.base / "cgroup.subtree_control").split())
                if missing - base_enabled:
                    _write(
                        h.base / "cgroup.subtree_control",
                        " ".join("+" + c for c in sorted(missing - base_enabled)),
                    )
            with contextlib.suppress(OSError):
                _write(
                    parent / "cgroup.subtree_control", " ".join("+" + c for c in sorted(missing))
                )
    return parent


def _make_child(h: Hierarchy, name: str) -> Path:
    """mkdir ``<base>/arena/<name>``, recreating the parent if another process just
    removed it (it is deleted whenever it becomes empty)."""
    for attempt in range(5):
        parent = _ensure_parent(h)
        try:
            (parent / name).mkdir()
            return parent / name
        except FileNotFoundError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


def _has(h: Hierarchy, directory: Path, controller: str) -> bool:
    if h.version == 1:
        return controller in h.controllers
    try:
        return controller in _read(directory / "cgroup.controllers").split()
    except OSError:
        return False


def _apply_limits(d: Path, h: Hierarchy, limits: Limits, which: Iterable[str]) -> None:
    """Write the limit files for the controllers in ``which`` into cgroup dir ``d``."""
    mem = limits.memory_bytes + limits.tmp_bytes + MEMORY_SLACK
    pids = limits.max_processes + PIDS_OVERHEAD
    quota = max(1000, int(limits.cpu_quota * CFS_PERIOD_US))
    for ctrl in which:
        if ctrl == "memory" and h.version == 1:
            _write(d / "memory.limit_in_bytes", str(mem))
            if (d / "memory.memsw.limit_in_bytes").exists():
                _write(d / "memory.memsw.limit_in_bytes", str(mem))
        elif ctrl == "memory":
            _write(d / "memory.max", str(mem))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
        elif ctrl == "pids":
            _write(d / "pids.max", str(pids))
        elif ctrl == "cpu" and h.version == 1:
            _write(d / "cpu.cfs_period_us", str(CFS_PERIOD_US))
            _write(d / "cpu.cfs_quota_us", str(quota))
        elif ctrl == "cpu":
            _write(d / "cpu.max", f"{quota} {CFS_PERIOD_US}")


def _join_test(procs_files: list[Path]) -> list[bool]:
    """Can a child process move itself into each cgroup?  (Delegation may forbid it.)"""
    if not procs_files:
        return []
    script = 'for f; do if echo $$ > "$f"; then echo y; else echo n; fi; done 2>/dev/null'
    try:
        out = subprocess.run(
            ["/bin/sh", "-c", script, "probe", *map(str, procs_files)],
            capture_output=True,
            timeout=5,
            check=False,
            text=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return [False] * len(procs_files)
    return [i < len(out) and out[i] == "y" for i in range(len(procs_files))]


@functools.cache
def _pid_namespace() -> str:
    """This process's pid namespace (its inode): the pids a cgroup name holds mean
    something only there. Several hosts of one machine (containers, the namespace test
    cluster) share one cgroup tree but not their process lists."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _child_name(tag: str) -> str:
    """``<tag>-<pid>-<n>-<pid namespace>x<run token>``: whose it is, for :func:`sweep_stale`."""
    return f"{tag}-{os.getpid()}-{next(_counter)}-{_pid_namespace()}x{_RUN_TOKEN}"


_RUN_TOKEN = secrets.token_hex(4)
"""Set apart this process's cgroups from a dead namespace's: a namespace's inode and
its small pids are reused, and a cgroup left by an earlier one (never swept: not ours)
once had this very name (seen in CI: "File exists" at a bot's start)."""


def probe() -> Support:
    """Find out which hierarchies we can create, limit, join and kill through."""
    problems: list[str] = []
    usable: list[Hierarchy] = []
    caps: dict[str, Hierarchy] = {}
    kill = ""
    kill_h: Hierarchy | None = None
    accounting: list[Hierarchy] = []
    trial: list[tuple[Hierarchy, Path]] = []
    denied: dict[str, list[str]] = {}
    limits = Limits()
    for h in discover():
        if h.version == 1 and not h.controllers & {"memory", "pids", "cpu", "cpuacct", "freezer"}:
            continue
        try:
            d = _make_child(h, _child_name("probe"))
        except OSError as exc:
            denied.setdefault(exc.strerror or "error", []).append(h.mount.name)
            continue
        trial.append((h, d))
    joined = _join_test([d / "cgroup.procs" for _, d in trial])
    for (h, d), ok in zip(trial, joined, strict=True):
        try:
            if not ok:
                problems.append(f"cannot join cgroups in {h.mount}")
                continue
            usable.append(h)
            for ctrl in ("memory", "pids", "cpu"):
                if ctrl not in caps and _has(h, d, ctrl):
                    try:
                        _apply_limits(d, h, limits, [ctrl])
                        caps[ctrl] = h
                    except OSError as exc:
                        problems.append(f"{ctrl} limit not writable ({exc.strerror})")
            if (d / "cgroup.kill").exists() and kill != "cgroup.kill":
                kill, kill_h = "cgroup.kill", h
            elif h.version == 1 and "freezer" in h.controllers and not kill:
                kill, kill_h = "freezer", h
            if _read_cpu_ns(d, h) is not None:
                accounting.append(h)
        finally:
            _rmdir(d)
            _rmdir(d.parent)
    if not kill and usable:
        kill, kill_h = "procs", usable[0]
    for why, names in denied.items():
        problems.append(f"cannot create cgroups in {', '.join(names)} ({why})")
    lacking = [c for c in ("memory", "pids", "cpu") if c not in caps]
    if lacking:
        problems.append(f"no usable {'/'.join(lacking)} controller")
    # Only hierarchies that limit something or do the kill get a per-bot directory.
    needed = {id(h) for h in (*caps.values(), kill_h) if h is not None}
    # CPU accounting: prefer a hierarchy the bot joins anyway (no extra mkdir per spawn).
    cpuacct = next(
        (h for h in accounting if id(h) in needed), accounting[0] if accounting else None
    )
    if cpuacct is not None:
        needed.add(id(cpuacct))
    return Support(
        hierarchies=tuple(h for h in usable if id(h) in needed),
        memory=caps.get("memory"),
        pids=caps.get("pids"),
        cpu=caps.get("cpu"),
        kill=kill,
        kill_hierarchy=kill_h,
        problems=tuple(problems),
        cpuacct=cpuacct,
    )


def _read_cpu_ns(d: Path, h: Hierarchy) -> int | None:
    """CPU time used by everything ever in cgroup ``d`` (ns), or None if not readable."""
    try:
        if h.version == 1:
            return int(_read(d / "cpuacct.usage")) if "cpuacct" in h.controllers else None
        for line in _read(d / "cpu.stat").splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
    except (OSError, ValueError):
        return None
    return None


def _rmdir(d: Path, wait_s: float = 0.0) -> bool:
    """Remove a cgroup dir; it is busy for a moment while killed tasks finish exiting."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


@dataclass
class BotCgroup:
    """The cgroups of one bot: created before spawn, removed after the tree is dead."""

    support: Support
    dirs: dict[Path, Hierarchy] = field(default_factory=dict)
    removed: bool = False
    _fds: list[int] = field(default_factory=list, repr=False)
    _cpu_fd: int | None = field(default=None, repr=False)
    _cpu_v1: bool = field(default=False, repr=False)
    _wait_fd: int | None = field(default=None, repr=False)
    _freeze_fd: int | None = field(default=None, repr=False)

    @classmethod
    def create(cls, support: Support, limits: Limits, tag: str = "bot") -> BotCgroup:
        """Make a fresh cgroup per usable hierarchy and write the limits into it."""
        cg = cls(support)
        name = _child_name(tag)
        roles = {
            "memory": support.memory,
            "pids": support.pids,
            "cpu": support.cpu,
        }
        try:
            for h in support.hierarchies:
                d = _make_child(h, name)
                cg.dirs[d] = h
                _apply_limits(d, h, limits, [c for c, owner in roles.items() if owner == h])
        except OSError:
            cg.remove()
            raise
        return cg

    @property
    def procs_files(self) -> list[Path]:
        """Files the bot's first process writes its pid into to join every cgroup."""
        return [d / "cgroup.procs" for d in self.dirs]

    def pids(self) -> set[int]:
        """Every process currently in any of the bot's cgroups."""
        found: set[int] = set()
        for d in self.dirs:
            try:
                found.update(int(p) for p in _read(d / "cgroup.procs").split())
            except (OSError, ValueError):
                continue
        return found

    def cpu_ns(self) -> int | None:
        """CPU time the bot's whole tree has used so far (ns; exited processes included):
        a pread() of a file kept open (a few µs), so the referee can afford it around
        every decision."""
        if self._cpu_fd is None:
            h = self.support.cpuacct
            d = self._dir_of(h)
            if h is None or d is None:
                return None
            self._cpu_v1 = h.version == 1
            self._cpu_fd = self._open(d / ("cpuacct.usage" if self._cpu_v1 else "cpu.stat"))
        try:  # the referee's per-decision path: no helper calls
            text = os.pread(self._cpu_fd, 64, 0)
        except OSError:  # closed (-1) or gone
            return None
        if self._cpu_v1:
            return int(text) if text.strip().isdigit() else None
        end = text.find(b"\n")
        if text[:11] != b"usage_usec " or end < 12:
            return None
        return int(text[11:end]) * 1000

    def cpu_wait_ns(self) -> int | None:
        """How long the bot's tasks were runnable but waiting for a CPU (ns): the v2
        pressure stall counter (PSI "some"), None where there is none. Time a loaded host
        kept the bot from running, as opposed to time it slept or blocked."""
        if self._wait_fd is None:
            d = next((d for d, h in self.dirs.items() if h.version == 2), None)
            if d is None:
                return None
            self._wait_fd = self._open(d / "cpu.pressure")
        total = self._pread(self._wait_fd).split(b"\n", 1)[0].rpartition(b"total=")[2]
        return int(total) * 1000 if total.strip().isdigit() else None

    def freeze(self, frozen: bool) -> bool:
        """Freeze (or thaw) every process of the bot: cgroup v2 ``cgroup.freeze``, one
        write() to a file kept open; the kernel stops the tasks asynchronously. False
        where there is no v2 cgroup to freeze (v1's freezer is synchronous and slow)."""
        fd = self._freeze_fd
        if fd is None:
            d = next((d for d, h in self.dirs.items() if h.version == 2), None)
            fd = -1
            if d is not None:
                try:
                    fd = os.open(d / "cgroup.freeze", os.O_WRONLY | os.O_CLOEXEC)
                except OSError:
                    fd = -1
                else:
                    self._fds.append(fd)
            self._freeze_fd = fd
        if fd < 0:
            return False
        try:
            os.write(fd, b"1" if frozen else b"0")
        except OSError:
            return False
        return True

    def _open(self, path: Path) -> int:
        """A descriptor kept open on a counter file (-1 if it cannot be opened)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return -1
        self._fds.append(fd)
        return fd

    @staticmethod
    def _pread(fd: int) -> bytes:
        try:
            return os.pread(fd, 512, 0) if fd >= 0 else b""
        except OSError:
            return b""

    def _close_counters(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        self._cpu_fd = self._wait_fd = self._freeze_fd = -1

    def _dir_of(self, h: Hierarchy | None) -> Path | None:
        return next((d for d, owner in self.dirs.items() if owner == h), None)

    def kill(self, timeout_s: float = 2.0) -> bool:
        """SIGKILL everything in the cgroups; True once they are empty."""
        deadline = time.monotonic() + timeout_s
        kill_dir = self._dir_of(self.support.kill_hierarchy)
        while True:
            if self.support.kill == "cgroup.kill" and kill_dir is not None:
                with contextlib.suppress(OSError):
                    _write(kill_dir / "cgroup.kill", "1")
            elif self.support.kill == "freezer" and kill_dir is not None:
                self._freeze_and_kill(kill_dir)
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not self.pids():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)

    def _freeze_and_kill(self, d: Path) -> None:
        """Freeze so that nothing can fork while we kill, then thaw to let SIGKILL land."""
        state = d / "freezer.state"
        try:
            _write(state, "FROZEN")
            for _ in range(50):
                if _read(state).strip() == "FROZEN":
                    break
                time.sleep(0.001)
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                _write(state, "THAWED")

    def remove(self, wait_s: float = 1.0) -> bool:
        """rmdir every cgroup (idempotent); False if one is still busy.

        The shared ``arena`` parent goes too when it is empty, so that we never keep
        our supervisor from removing the cgroup we were started in.
        """
        self._close_counters()  # an open file would not keep the rmdir from working, but leak
        ok = True
        for d in list(self.dirs):
            if _rmdir(d, wait_s):
                del self.dirs[d]
                _rmdir(d.parent)  # fails harmlessly (EBUSY) while other bots use it
            else:
                ok = False
        self.removed = ok
        return ok


def sweep_stale(support: Support) -> int:
    """Clean up after arena processes that died without cleaning up (e.g. SIGKILL).

    A cgroup named ``*-<pid>-<n>[-<pid namespace>]`` of this pid namespace (or of none, as
    older versions named them) whose creator pid is gone is orphaned: whatever still runs
    in it is killed and the directory removed. Another pid namespace's is left alone: its
    creator's pid cannot be looked up from here (a live arena on another host of the
    same machine would lose its bots). Returns how many were removed.
    """
    removed = 0
    # Every mounted hierarchy, not only those bots use: the start-up probe makes a
    # directory in each one, and a run killed while probing leaves it behind.
    try:
        mounted = discover()
    except OSError:
        mounted = []
    hierarchies = {h.base: h for h in (*support.hierarchies, *mounted)}
    for h in hierarchies.values():
        parent = h.base / PARENT
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for d in entries:
            parts = d.name.split("-")
            if len(parts) not in (3, 4) or not parts[1].isdigit() or not d.is_dir():
                continue
            if len(parts) == 4 and parts[3].split("x")[0] != _pid_namespace():
                continue
            if Path(f"/proc/{parts[1]}").exists():
                continue
            orphan = BotCgroup(support, {d: h})
            if (d / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    _write(d / "cgroup.kill", "1")
            orphan.kill(timeout_s=1.0)
            if orphan.remove(wait_s=0.2):
                removed += 1
        _rmdir(parent)
    return removed
