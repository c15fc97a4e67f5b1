"""Start one sandboxed bot and kill its whole process tree, however it tried to hide.

Kill order: cgroup kill (gets everything, pid namespace included) -> process group ->
the outer process (bwrap: its death takes the pid namespace with it) -> every process
of the per-bot uid -> reap -> remove the cgroups -> close pipes and the stderr log.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from arena.sandbox import cputime, layers, reaper, uids
from arena.sandbox.cgroups import BotCgroup, sweep_stale
from arena.sandbox.launch import check_readable, launch_spec
from arena.sandbox.spec import DEFAULT_LEVEL, Level, Limits, SandboxError
from arena.sandbox.stderr import DEFAULT_CAP, TAIL_BYTES, StderrSink

ROOT_GUARD = True
"""Refuse to start anything as root.  Only tests that simulate a machine without the
per-bot uid layer (while really running as root) switch it off."""
_sweep_lock = threading.Lock()
_swept = False
_live: weakref.WeakSet[BotProcess] = weakref.WeakSet()


def _forget_in_child() -> None:
    """Bots belong to the process that spawned them, never to a forked child."""
    _live.clear()


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _kill_leftovers() -> None:
    """A forgotten kill() must not leave bots or cgroups behind when we exit."""
    for proc in list(_live):
        with contextlib.suppress(Exception):
            proc.kill()


def abort_all() -> None:
    """:meth:`BotProcess.abort` every bot this process started (see there)."""
    for proc in list(_live):
        with contextlib.suppress(Exception):
            proc.abort()


def _normalize(code: int | None, via_bwrap: bool) -> int | None:
    """Map bwrap's ``128 + signal`` exit status back to Popen's ``-signal`` convention."""
    if code is None or not via_bwrap or code <= 128:
        return code
    sig = code - 128
    return -sig if sig in signal.valid_signals() else code


class BotProcess:
    """A running bot: binary pipes to talk to it, a stderr tail, and a thorough kill().

    ``stdin`` is unbuffered; read ``stdout`` with ``os.read(stdout.fileno(), n)`` and a
    selector.  Always call ``kill()`` (or use ``with``) when done: it is idempotent and
    also cleans up after a bot that already exited but left descendants behind.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        plan: layers.Plan,
        sink: StderrSink,
        cgroup: BotCgroup | None,
        uid: int | None,
        stdin: IO[bytes],
        stdout: IO[bytes],
        lease: uids.UidLease | None = None,
    ) -> None:
        self._popen = popen
        self._plan = plan
        self._sink = sink
        self._cgroup = cgroup
        self._kill_lock = threading.Lock()
        self._killed = False
        self._frozen = False
        self.uid = uid
        self._lease = lease
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.cgroup_dirs: list[Path] = list(cgroup.dirs) if cgroup else []
        _live.add(self)

    @property
    def layers(self) -> list[str]:
        """Names of the layers this bot actually runs under."""
        used = [layers.RLIMITS, layers.PGROUP]
        if self._plan.bwrap:
            used.append(layers.BWRAP)
            if self._plan.seccomp is not None:
                used.append(layers.SECCOMP)
        if self.uid is not None:
            used.append(layers.UID)
        if self._cgroup is not None:
            used.append(layers.CGROUPS)
        return used

    @property
    def returncode(self) -> int | None:
        """Exit status once reaped; negative means killed by that signal."""
        return _normalize(self._popen.returncode, self._plan.bwrap is not None)

    def poll(self) -> int | None:
        """Exit status if the bot has exited, else None (never blocks)."""
        return _normalize(self._popen.poll(), self._plan.bwrap is not None)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for exit; raises subprocess.TimeoutExpired like Popen.wait."""
        code = _normalize(self._popen.wait(timeout), self._plan.bwrap is not None)
        assert code is not None
        return code

    @property
    def sink(self) -> StderrSink:
        """The stderr drain (builds read their merged output from it)."""
        return self._sink

    def stderr_tail(self) -> str:
        """The last few KiB of the bot's stderr, for fault reports."""
        return self._sink.tail()

    @property
    def stderr_bytes(self) -> int:
        """Total bytes the bot wrote to stderr so far (logged or not)."""
        return self._sink.total

    def cpu_ns(self) -> int | None:
        """CPU time the bot's whole process tree has used so far, in ns: the cgroup's
        accounting (exact, one file read), else a /proc scan (see cputime.py); None
        when neither is readable."""
        if self._cgroup is not None:
            used = self._cgroup.cpu_ns()
            if used is not None:
                return used
        return cputime.tree_cpu_ns(self.pid, self.uid)

    def freeze(self) -> bool:
        """Stop every process of the bot until :meth:`thaw` (between its turns, so that
        it cannot compute while others think); False where it cannot be frozen."""
        if self._cgroup is None or self._killed:
            return False
        self._frozen = self._cgroup.freeze(True)
        return self._frozen

    def thaw(self) -> None:
        """Let the bot run again (a no-op unless :meth:`freeze` froze it)."""
        if self._frozen:
            self._frozen = False
            if self._cgroup is not None:
                self._cgroup.freeze(False)

    @property
    def frozen(self) -> bool:
        return self._frozen

    def cpu_wait_ns(self) -> int | None:
        """Time the bot's tasks waited for a CPU while runnable (ns; cgroup v2 pressure
        stall information), None where the kernel does not offer it."""
        return self._cgroup.cpu_wait_ns() if self._cgroup is not None else None

    def pipes_held(self) -> tuple[bool, bool] | None:
        """Whether the bot's own processes still hold (stdin, stdout).

        Bubblewrap's processes keep copies of the pipes, so a bot that closes its stdout
        while running produces no EOF (nor EPIPE for stdin): this tells the referee what
        the pipes cannot. None when the bot's processes cannot be listed.
        """
        if self._cgroup is not None:
            pids = self._cgroup.pids()
        elif self.uid is not None:
            pids = reaper.pids_of_uid(self.uid)
        else:
            return None
        try:
            ends = [f"pipe:[{os.fstat(f.fileno()).st_ino}]" for f in (self.stdin, self.stdout)]
        except (OSError, ValueError):
            return None
        held = [False, False]
        for pid in pids:
            if self._is_bwrap(pid):
                continue
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                for i, end in enumerate(ends):
                    if link == end:
                        held[i] = True
        return held[0], held[1]

    def _is_bwrap(self, pid: int) -> bool:
        """One of bubblewrap's own processes: the outer one (our child) or its init in the
        bot's pid namespace (the outer one's only child).  Recognised by pid, never by
        name: a bot can call itself ``bwrap``."""
        if self._plan.bwrap is None:
            return False
        if pid == self.pid:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            return int(stat[stat.rindex(b")") + 2 :].split()[1]) == self.pid
        except (OSError, ValueError, IndexError):
            return False

    def kill(self) -> None:
        """Kill the whole tree, reap, remove the cgroups and close the pipes (idempotent)."""
        with self._kill_lock:
            if self._killed:
                return
            self._killed = True
            _live.discard(self)
            try:
                self._kill_tree()
            finally:
                if self._lease is not None:
                    self._lease.release()
                for pipe in (self.stdin, self.stdout):
                    with contextlib.suppress(OSError):
                        pipe.close()
                self._sink.close()

    close = kill

    def abort(self) -> None:
        """SIGKILL the tree now, taking no lock and waiting for nothing: for a signal
        handler that is about to exit the process.  The handler may have interrupted
        :meth:`kill` itself (holding its lock), so it must not call it.  What this
        leaves (reaping, the cgroup directories, the uid lease) goes with our exit:
        bwrap's --die-with-parent, the lease's lock, and the next run's sweep."""
        if self._killed:
            return
        if self._cgroup is not None:
            with contextlib.suppress(OSError):
                self._cgroup.kill(timeout_s=0.2)
        if self._popen.returncode is None:
            reaper.kill_group(self.pid)
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def _kill_tree(self) -> None:
        if self._cgroup is not None:
            self._cgroup.kill()  # SIGKILL reaches frozen tasks on cgroup v2
            if self._frozen:
                self._frozen = False
                self._cgroup.freeze(False)
        if self._popen.returncode is None:
            # The group leader is not reaped yet, so its pgid cannot have been reused.
            reaper.kill_group(self.pid)
            with contextlib.suppress(OSError):
                self._popen.kill()
        if self.uid is not None:
            reaper.kill_uid(self.uid, self._plan.setpriv)
            if self._plan.bwrap is None or self._plan.seccomp is None:
                # No ipc namespace or no seccomp: the bot may have left host-wide state.
                reaper.clear_uid_state(self.uid, self._plan.setpriv)
        try:
            self._popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                self._popen.kill()
            self._popen.wait(timeout=5)
        if self._cgroup is not None:
            self._cgroup.kill()
            self._cgroup.remove()

    def __enter__(self) -> BotProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()

    def __repr__(self) -> str:
        return f"<BotProcess pid={self.pid} uid={self.uid} rc={self._popen.returncode}>"


def _sweep_once(plan: layers.Plan) -> None:
    global _swept
    if plan.cgroups is None:
        return
    with _sweep_lock:
        if not _swept:
            _swept = True
            sweep_stale(plan.cgroups)


def spawn(
    command: str | list[str],
    bot_dir: Path | str,
    *,
    level: Level = DEFAULT_LEVEL,
    limits: Limits | None = None,
    slot: int = 0,
    stderr_log: Path | None = None,
    env: Mapping[str, str] | None = None,
    stderr_cap: int = DEFAULT_CAP,
    ro_paths: Sequence[str] = (),
) -> BotProcess:
    """Start ``command`` (a manifest string or an argv) in ``bot_dir``, sandboxed.

    ``slot`` picks the per-bot uid, ``61000 + slot``; concurrent bots should use
    different slots, and a uid still held by another live bot (say, another arena
    process) falls over to ``61000 + slot + 1000k``.  ``env`` adds variables to the
    cleared environment.
    If this process dies, the bot dies with it (under bwrap see
    :func:`arena.sandbox.launch.lifeline`; without it setpriv's pdeathsig). Spawn from a
    thread that outlives the bot: the kernel's parent-death signal follows the *thread*
    that started the bot, whose exit kills it.
    Cgroups orphaned by a crash are swept by the next arena process that spawns.
    Raises SandboxUnavailable (strict level) or SandboxError (bad folder or command).
    """
    if not 0 <= slot < uids.SLOTS:
        raise SandboxError(f"slot must be in 0..{uids.SLOTS - 1}, got {slot}")
    plan = layers.plan(level)
    folder = bot_folder(bot_dir)
    if plan.separate_uid:
        check_readable(folder, through_ancestors=plan.bwrap is None)
    lease = uids.lease(slot, plan.setpriv) if plan.separate_uid else None
    try:
        return start(
            plan,
            command,
            folder,
            Limits() if limits is None else limits,
            uid=lease.uid if lease else None,
            lease=lease,
            extra_env=env,
            stderr_log=stderr_log,
            stderr_cap=stderr_cap,
            ro_paths=ro_paths,
        )
    except BaseException:
        if lease is not None:
            lease.release()
        raise


def bot_folder(bot_dir: Path | str) -> Path:
    """The absolute bot folder, or SandboxError if it is not a directory."""
    folder = Path(bot_dir).resolve()
    if not folder.is_dir():
        raise SandboxError(f"bot folder {folder} does not exist or is not a directory")
    return folder


def start(
    plan: layers.Plan,
    command: str | list[str],
    folder: Path,
    limits: Limits,
    *,
    uid: int | None,
    gid: int | None = None,
    lease: uids.UidLease | None = None,
    extra_env: Mapping[str, str] | None = None,
    stderr_log: Path | None = None,
    stderr_cap: int = DEFAULT_CAP,
    build_area: int | None = None,
    cache_area: int | None = None,
    ro_paths: Sequence[str] = (),
    merge_output: bool = False,
    head_bytes: int = 0,
    tail_bytes: int = TAIL_BYTES,
    tag: str = "bot",
    nproc: bool | None = None,
) -> BotProcess:
    """Shared by spawn() and build(): cgroups, exec chain, Popen, stderr sink.

    With ``merge_output`` stdout and stderr both go to the sink (builds) and stdin is
    /dev/null; otherwise stdin/stdout are pipes for the protocol.  Nothing is ever
    started as root: as root, a bot (or a build) must have its own uid.
    """
    if ROOT_GUARD and os.geteuid() == 0 and (uid is None or uid == 0 or plan.setpriv is None):
        raise SandboxError(
            "refusing to run a bot's code as root without its own uid "
            "(setpriv from util-linux is needed; see `arena doctor`)"
        )
    _sweep_once(plan)
    cgroup = None
    if plan.cgroups is not None and plan.cgroups.hierarchies:
        try:
            cgroup = BotCgroup.create(plan.cgroups, limits, tag=tag)
        except OSError as exc:
            if plan.level is Level.STRICT:
                raise SandboxError(f"cannot create the bot's cgroups: {exc}") from exc
    try:
        spec = launch_spec(
            plan,
            command,
            folder,
            limits,
            uid=uid,
            gid=gid,
            procs_files=cgroup.procs_files if cgroup else None,
            extra_env=extra_env,
            build_area=build_area,
            cache_area=cache_area,
            ro_paths=ro_paths,
            nproc=nproc,
        )
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    try:
        read_end, write_end = os.pipe()
    except BaseException:
        spec.close()
        if cgroup is not None:
            cgroup.remove()
        raise
    try:
        popen = subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL if merge_output else subprocess.PIPE,
            stdout=write_end if merge_output else subprocess.PIPE,
            stderr=write_end,
            bufsize=0,
            cwd=spec.cwd,
            env=spec.env,
            start_new_session=True,
            close_fds=True,
            pass_fds=spec.pass_fds,
            preexec_fn=spec.preexec,  # only when prlimit is missing
        )
    except OSError as exc:
        os.close(read_end)
        if cgroup is not None:
            cgroup.remove()
        raise SandboxError(f"cannot start {command!r}: {exc}") from exc
    finally:
        os.close(write_end)
        spec.close()
    try:
        sink = StderrSink(
            read_end,
            stderr_log,
            cap=stderr_cap,
            head_bytes=head_bytes,
            tail_bytes=tail_bytes,
            name=str(popen.pid),
        )
    except BaseException as exc:
        # E.g. the log folder is not writable: do not leave the bot running.
        if cgroup is not None:
            cgroup.kill()
        reaper.kill_group(popen.pid)
        popen.kill()
        popen.wait()
        if cgroup is not None:
            cgroup.remove()
        os.close(read_end)
        if isinstance(exc, OSError):
            raise SandboxError(f"cannot open stderr log {stderr_log}: {exc}") from exc
        raise
    if merge_output:
        stdin: IO[bytes] = open(os.devnull, "wb", buffering=0)  # noqa: SIM115
        stdout: IO[bytes] = open(os.devnull, "rb", buffering=0)  # noqa: SIM115
    else:
        assert popen.stdin is not None and popen.stdout is not None
        stdin, stdout = popen.stdin, popen.stdout
    return BotProcess(
        popen,
        plan=plan,
        sink=sink,
        cgroup=cgroup,
        uid=uid,
        lease=lease,
        stdin=stdin,
        stdout=stdout,
    )
