"""Turn a bot command plus a Plan into the argv of one exec chain.

The chain is built from small programs that each do one thing and exec the next, so
no Python runs in the child (no ``preexec_fn``) and spawn stays fast::

    setpriv --pdeathsig  ->  sh -c GUARD+JOIN (the spawner alive, cgroups)  ->
        prlimit (rlimits)  ->  bwrap (namespaces, mounts, env, seccomp)  ->
        sh /.launch  ->  setpriv (per-bot uid, no caps, no new privileges)  ->  the bot

Any link whose layer is off is simply left out.  Under bubblewrap nothing of the launch
is readable from inside: bwrap's options come from a memfd (``--args``), so its process
(pid 1 inside) shows only ``bwrap --args N -- /bin/sh /.launch``, and the privilege drop
is in ``/.launch``, a root-only file when the bot gets its own uid.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import os
import shlex
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox import bundle, rlimits
from arena.sandbox.layers import Plan
from arena.sandbox.runtime_env import runtime_env, toolchain_path
from arena.sandbox.spec import Limits, SandboxError

BOT_MOUNT = "/bot"
"""Where the bot folder appears inside bubblewrap; also the bot's working directory."""
CACHE_MOUNT = "/cache"
"""Inside a build: the bot's own compiler cache (a tmpfs, filled and saved by the build)."""
BUNDLE_FILE = "/bot/.arena-bundle"
"""Inside bubblewrap: the bot folder's archive, unpacked into /bot and removed by /.launch."""
UNPACK_SCRIPT = (
    f"/usr/bin/tar -x -f {BUNDLE_FILE} -C {BOT_MOUNT} </dev/null || exit 125\n"
    f"/usr/bin/rm -f {BUNDLE_FILE}\n"
)
LAUNCH_FILE = "/.launch"
"""Inside bubblewrap: the shell script that drops privileges and execs the bot."""
BOT_PATH = "/usr/bin:/bin"
BASE_ENV = {"PATH": BOT_PATH, "HOME": "/tmp", "LANG": "C.UTF-8"}

# Joins every cgroup whose cgroup.procs path is given before "--", then execs the rest.
# Runs as the invoking user (root), before any privilege is dropped or anything forks.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
# Run under ``setpriv --pdeathsig=KILL`` with the spawner's pid first: the death signal is
# armed from the chain's first exec on (bwrap's --die-with-parent arms it only once bwrap
# runs), and a spawner that died before it was armed is noticed by the new parent's pid.
GUARD_SCRIPT = '[ "$PPID" = "$1" ] || exit 125; shift; ' + JOIN_SCRIPT
# The start of /.launch (see :func:`lifeline`). Wait (up to ~1 s) until the sandbox's
# pid 1 has armed its death signal: bwrap's init does it just before it installs the
# seccomp filter, so its filter count reaching ours (the shell's, pid 2) proves it (no fork
# or exec unless it has to wait). Then read ``{fd}``, a descriptor on a pipe only the
# spawner can write to: end of file (dd reads 0 bytes and succeeds) means the spawner is
# gone, and nothing starts; alive, the non-blocking read fails (EAGAIN).
ALIVE_CHECK = """\
arena_filters() {{
  f=; while IFS= read -r l; do case $l in Seccomp_filters:*) f=$l; return;; esac; done < "$1"
}}
arena_filters /proc/self/status; own=$f; waited=0
while [ -n "$own" ]; do
  arena_filters /proc/1/status; [ "$f" = "$own" ] && break
  waited=$((waited + 1)); [ "$waited" -gt 500 ] && break; /usr/bin/sleep 0.002
done
/usr/bin/dd if=/dev/fd/{fd} iflag=nonblock bs=1 count=1 status=none 2>/dev/null && exit 125
"""

# Root-level paths that are symlinks into /usr on merged-/usr systems (Debian 12).
USR_ALIASES = ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")
# The few /etc entries the dynamic linker and the system runtimes read.  /etc/alternatives
# backs /usr/bin/java, c++, awk...; the JVM reads its jvm.cfg and security files from
# /etc/java-N-openjdk.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
ETC_GLOBS = ("java-*",)
_SHELL_CHARS = frozenset("|&;<>()$`*?[]{}~\n")


@dataclass(frozen=True)
class LaunchSpec:
    """Everything Popen needs to start one sandboxed bot.

    ``pass_fds`` (memfds with bwrap's options, the launch script, the seccomp filter)
    belong to the spec: pass them to Popen, then :meth:`close` them.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec: Callable[[], None] | None = None
    uid: int | None = None
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        """Close the parent's copies of the passed file descriptors (idempotent)."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def data_fd(data: bytes, name: str = "arena") -> int:
    """A readable file descriptor holding ``data`` (a memfd, read from offset 0)."""
    fd = os.memfd_create(name)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def bwrap_command(argv: list[str], command: list[str]) -> tuple[list[str], list[int]]:
    """bwrap's own ``argv`` (from :func:`bwrap_argv`, ending in ``--``) passed through a
    memfd, followed by ``command``: the options stay out of /proc/PID/cmdline."""
    options = argv[1:-1] if argv[-1:] == ["--"] else argv[1:]
    fd = data_fd(b"".join(a.encode() + b"\0" for a in options), "bwrap-args")
    return [argv[0], "--args", str(fd), "--", *command], [fd]


def parse_command(command: str | list[str]) -> list[str]:
    """Split a manifest command; use /bin/sh only when it really has shell syntax."""
    if isinstance(command, list):
        if not command or not all(isinstance(a, str) for a in command):
            raise SandboxError("bot command must be a non-empty list of strings")
        return list(command)
    text = command.strip()
    if not text:
        raise SandboxError("bot command is empty")
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise SandboxError(f"cannot parse bot command {command!r}: {exc}") from exc
    if any(ch in _SHELL_CHARS for ch in text) or "=" in argv[0]:
        return ["/bin/sh", "-c", text]
    return argv


def bot_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The bot's whole environment: the fixed base plus explicitly passed variables."""
    env = dict(BASE_ENV)
    for key, value in (extra or {}).items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise SandboxError(f"invalid environment variable {key!r}")
        env[key] = value
    return env


def _etc_entries() -> list[str]:
    """The host's /etc entries a bot sees (its loader's cache, timezone, Java's files):
    globbed again only when /etc itself changed (an entry added, removed or renamed:
    its modification time), not at every spawn."""
    try:
        stamp: int | None = os.stat("/etc").st_mtime_ns
    except OSError:
        stamp = None
    cached = _ETC_SEEN.get(stamp) if stamp is not None else None
    if cached is None:
        cached = [f"/etc/{n}" for n in ETC_FILES]
        for pattern in ETC_GLOBS:
            cached.extend(sorted(glob.glob(f"/etc/{pattern}")))
        _ETC_SEEN.clear()
        if stamp is not None:
            _ETC_SEEN[stamp] = cached
    return list(cached)


_ETC_SEEN: dict[int, list[str]] = {}
""":func:`_etc_entries` by /etc's modification time (the last one seen)."""


_OWN_MOUNTS = frozenset({"/", "/tmp", "/usr", "/etc", "/proc", "/dev", BOT_MOUNT, CACHE_MOUNT})


def _searchable_parents(inside: str) -> list[str]:
    """Create the folders above an extra mount point world-searchable: left to bubblewrap
    they copy the host's modes (``/root`` is 0700), and the bot's uid could not reach
    the mount."""
    argv: list[str] = []
    parent = os.path.dirname(os.path.normpath(inside))
    parents: list[str] = []
    while parent not in _OWN_MOUNTS and parent != os.path.dirname(parent):
        parents.append(parent)
        parent = os.path.dirname(parent)
    for folder in reversed(parents):
        argv += ["--perms", "0755", "--dir", folder]
    return argv


def bwrap_argv(
    bwrap: str,
    limits: Limits,
    env: Mapping[str, str],
    *,
    bot_area: int = 1 << 20,
    bundle_fd: int | None = None,
    bot_writable: bool = False,
    build_area: int | None = None,
    cache_area: int | None = None,
    ro_binds: Sequence[tuple[Path, str]] = (),
    launch_fd: int | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """bubblewrap flags: empty root, /usr read-only, a tmpfs at /bot, no network.

    The bot folder is never mounted (a bind mount names its host path in mountinfo):
    ``bundle_fd`` holds its archive (see :mod:`arena.sandbox.bundle`), written to
    :data:`BUNDLE_FILE` in the ``bot_area``-byte tmpfs at /bot for ``/.launch`` to unpack.
    ``build_area``: a build; /bot is an empty tmpfs of that many bytes, open to the build's
    uid (the build unpacks its source from stdin).  ``cache_area``: with ``build_area``, an
    empty tmpfs of that many bytes at /cache for the bot's compiler cache (the build
    unpacks the saved one from stdin and streams it back; never at play time).
    ``bot_writable``: /bot is 0755, not 0555 (without a separate uid the launch script
    unpacks as the bot's own user).
    ``ro_binds``: extra read-only (host path, sandbox path) mounts, e.g. toolchains an
    organiser declares.  ``launch_fd``: a script mounted at /.launch (root-only when the
    bot has its own uid).  ``seccomp_fd``: a compiled BPF filter for the bot.
    """
    argv = [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "arena",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for alias in USR_ALIASES:
        if os.path.islink(alias):
            argv += ["--symlink", os.readlink(alias), alias]
        elif os.path.isdir(alias):
            argv += ["--ro-bind", alias, alias]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--perms",
        "0755",
        "--dir",
        "/etc",
    ]
    for entry in _etc_entries():
        argv += ["--ro-bind-try", entry, entry]
    for host, inside in ro_binds:
        argv += [*_searchable_parents(inside), "--ro-bind", str(host), inside]
    if build_area is None:
        mode = "0755" if bot_writable else "0555"
        argv += ["--perms", mode, "--size", str(bot_area), "--tmpfs", BOT_MOUNT]
        if bundle_fd is not None:
            argv += ["--perms", "0400", "--file", str(bundle_fd), BUNDLE_FILE]
    else:
        argv += ["--perms", "0777", "--size", str(build_area), "--tmpfs", BOT_MOUNT]
        if cache_area is not None:
            argv += ["--perms", "0777", "--size", str(cache_area), "--tmpfs", CACHE_MOUNT]
    if launch_fd is not None:
        argv += ["--perms", "0400", "--ro-bind-data", str(launch_fd), LAUNCH_FILE]
    argv += [
        # The sandbox's own root (where /etc and /bot were created) is read-only too:
        # without root the bot owns it, and could otherwise write files there.
        "--remount-ro",
        "/",
        "--chdir",
        BOT_MOUNT,
        "--clearenv",
    ]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--"]


def setpriv_argv(setpriv: str, uid: int, gid: int, *, pdeathsig: bool) -> list[str]:
    """Drop to ``uid``/``gid`` with no groups, no capabilities and no new privileges."""
    argv = [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
    ]
    if pdeathsig:
        argv.append("--pdeathsig=KILL")
    return [*argv, "--"]


def check_readable(bot_dir: Path, *, through_ancestors: bool) -> None:
    """Fail clearly if another uid could not read the bot folder.

    The per-bot uid is nobody's owner or group member, so it relies on the "other"
    permission bits.  Under bubblewrap only the folder itself matters (it is mounted at
    /bot); without it every ancestor must be searchable too.
    """
    try:
        st = bot_dir.stat()
    except OSError as exc:
        raise SandboxError(f"bot folder {bot_dir} is not accessible: {exc.strerror}") from exc
    hint = f"make it world-readable: chmod -R a+rX {shlex.quote(str(bot_dir))}"
    if st.st_mode & (stat.S_IROTH | stat.S_IXOTH) != (stat.S_IROTH | stat.S_IXOTH):
        raise SandboxError(
            f"bot folder {bot_dir} (mode {stat.S_IMODE(st.st_mode):04o}) is not readable by "
            f"the sandbox's unprivileged uid; {hint}"
        )
    if through_ancestors:
        for parent in bot_dir.parents:
            try:
                mode = parent.stat().st_mode
            except OSError:
                continue
            if not mode & stat.S_IXOTH:
                raise SandboxError(
                    f"bot folder {bot_dir} is inside {parent} (mode "
                    f"{stat.S_IMODE(mode):04o}) which the sandbox's unprivileged uid cannot "
                    f"enter; move the folder or chmod o+x {shlex.quote(str(parent))}"
                )
    unreadable = []
    try:
        with os.scandir(bot_dir) as entries:
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
                if not stat.S_ISLNK(mode) and mode & need != need:
                    unreadable.append(entry.name)
    except OSError as exc:
        raise SandboxError(f"cannot list bot folder {bot_dir}: {exc.strerror}") from exc
    if unreadable:
        shown = ", ".join(sorted(unreadable)[:5])
        raise SandboxError(
            f"files in bot folder {bot_dir} are not readable by the sandbox's unprivileged "
            f"uid ({shown}); {hint}"
        )


_LIFELINES: dict[int, int] = {}
"""Per spawning process (by pid: a forked child makes its own): the read end of a pipe
whose write end it holds, close-on-exec, never written, until it exits."""


def lifeline() -> int:
    """A new descriptor on this process's lifeline, for one launch (the spec closes it).

    Inside bubblewrap, the sandbox's pid 1 arms its death signal (against the bwrap
    outside) only after setting up the mounts; a spawner killed meanwhile takes the
    outer bwrap with it and leaves pid 1 and the bot running for good. ``/.launch`` runs
    :data:`ALIVE_CHECK` once pid 1 is armed: if the spawner is still alive then, so was
    the outer bwrap when pid 1 armed, and every link dies with the spawner from then on;
    if not, nothing starts. (One gap is left: a spawner's threads do not all exit at
    once, and the death signal follows the spawning thread while the lifeline closes
    with the last one.)"""
    pid = os.getpid()
    read_end = _LIFELINES.get(pid)
    if read_end is None:
        read_end, _write_end = os.pipe2(os.O_CLOEXEC)  # the write end: kept, never used
        _LIFELINES.clear()  # (another pid's: inherited through a fork, not ours to use)
        _LIFELINES[pid] = read_end
    return os.dup(read_end)


def parent_guard(plan: Plan) -> str | None:
    """setpriv, to arm the chain's parent-death signal (see :data:`GUARD_SCRIPT`); any
    user may set it.  None: not installed, and the chain relies on bwrap's alone."""
    return plan.setpriv or _setpriv_path()


@functools.cache
def _setpriv_path() -> str | None:
    return shutil.which("setpriv", path="/usr/bin:/bin")


def launch_spec(
    plan: Plan,
    command: str | list[str],
    bot_dir: Path,
    limits: Limits,
    *,
    uid: int | None,
    gid: int | None = None,
    procs_files: list[Path] | None = None,
    extra_env: Mapping[str, str] | None = None,
    build_area: int | None = None,
    cache_area: int | None = None,
    ro_binds: Sequence[tuple[Path, str]] = (),
    nproc: bool | None = None,
    ro_paths: Sequence[str] = (),
) -> LaunchSpec:
    """The full exec chain for ``command`` run in ``bot_dir`` under ``plan``.

    ``uid``/``gid`` switch identity with setpriv (needs root); ``procs_files`` are the
    cgroup.procs files to join first; ``build_area`` makes it a build (see bwrap_argv:
    the caller feeds the source's archive to its stdin); ``cache_area`` adds its compiler
    cache at /cache.
    ``ro_paths`` are organiser-declared toolchain folders: bound read-only at the same
    path, their ``bin`` appended to PATH.
    """
    argv_cmd = parse_command(command)
    told = {**runtime_env(limits), **toolchain_path(ro_paths, BOT_PATH)}
    env = bot_env({**told, **(extra_env or {})})
    ro_binds = [*ro_binds, *((Path(p), p) for p in ro_paths)]
    argv: list[str] = []
    guard = parent_guard(plan) if plan.bwrap else None
    if guard is None and procs_files:
        argv += ["/bin/sh", "-c", JOIN_SCRIPT, "arena-join", *map(str, procs_files), "--"]
    use_nproc = (uid is not None and uid != 0) if nproc is None else nproc
    packed = None
    chain_limits = limits
    if plan.bwrap and build_area is None:
        try:
            packed = bundle.pack(bot_dir)
        except OSError as exc:
            raise SandboxError(f"cannot read bot folder {bot_dir}: {exc}") from exc
        # bwrap writes the archive and tar unpacks it under the chain's rlimits: the file
        # size limit lets them through, and /.launch lowers it again before the bot runs
        # (inside bubblewrap every writable place is a size-bounded tmpfs anyway).
        chain_limits = dataclasses.replace(
            limits, file_size_bytes=max(limits.file_size_bytes, packed.tmpfs_bytes)
        )
    preexec = None
    if plan.prlimit:
        argv += rlimits.prlimit_argv(chain_limits, nproc=use_nproc, prlimit=plan.prlimit)
    else:
        preexec = rlimits.preexec(chain_limits, nproc=use_nproc)
    inner: list[str] = []
    if uid is not None and plan.setpriv:
        inner += setpriv_argv(
            plan.setpriv, uid, uid if gid is None else gid, pdeathsig=plan.bwrap is None
        )
    inner += argv_cmd
    if not plan.bwrap:
        return LaunchSpec(argv=argv + inner, env=env, cwd=bot_dir, preexec=preexec, uid=uid)
    fds: list[int] = []
    try:
        unpack = ""
        bundle_fd = None
        area = 1 << 20
        if packed is not None:
            bundle_fd = data_fd(packed.data, "bot")
            fds.append(bundle_fd)
            area = packed.tmpfs_bytes
            unpack = UNPACK_SCRIPT + f"ulimit -f {limits.file_size_bytes // 512}\n"
        check = ""
        if guard is not None:
            alive_fd = lifeline()
            fds.append(alive_fd)
            check = ALIVE_CHECK.format(fd=alive_fd)
            joins = [str(os.getpid()), *map(str, procs_files or ()), "--"]
            shell = ["/bin/sh", "-c", GUARD_SCRIPT, "arena-join", *joins]
            argv = [guard, "--pdeathsig=KILL", "--", *shell, *argv]
        script = f"{check}{unpack}exec {shlex.join(inner)}\n"
        launch_fd = data_fd(script.encode(), "launch")
        fds.append(launch_fd)
        seccomp_fd = None
        if plan.seccomp is not None:
            seccomp_fd = data_fd(plan.seccomp, "seccomp")
            fds.append(seccomp_fd)
        options = bwrap_argv(
            plan.bwrap,
            limits,
            env,
            bot_area=area,
            bundle_fd=bundle_fd,
            bot_writable=not (uid is not None and plan.setpriv),
            build_area=build_area,
            cache_area=cache_area if build_area is not None else None,
            ro_binds=ro_binds,
            launch_fd=launch_fd,
            seccomp_fd=seccomp_fd,
        )
        wrapped, more = bwrap_command(options, ["/bin/sh", LAUNCH_FILE])
        fds += more
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return LaunchSpec(
        argv=argv + wrapped,
        env={"PATH": BOT_PATH},
        cwd=bot_dir,
        preexec=preexec,
        uid=uid,
        pass_fds=tuple(fds),
    )
