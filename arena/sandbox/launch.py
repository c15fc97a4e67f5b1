"""Turn a bot command plus a Plan into the argv of one exec chain.

The chain is built from small programs that each do one thing and exec the next, so
no Python runs in the child (no ``preexec_fn``) and spawn stays fast::

    sh -c JOIN (cgroups)  ->  prlimit (rlimits)  ->  bwrap (namespaces, mounts, env)
        ->  setpriv (per-bot uid, no caps, no new privileges)  ->  the bot

Any link whose layer is off is simply left out.
"""

from __future__ import annotations

import glob
import os
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox import rlimits
from arena.sandbox.layers import Plan
from arena.sandbox.runtime_env import runtime_env, toolchain_path
from arena.sandbox.spec import Limits, SandboxError

BOT_MOUNT = "/bot"
"""Where the bot folder appears inside bubblewrap; also the bot's working directory."""
BOT_PATH = "/usr/bin:/bin"
BASE_ENV = {"PATH": BOT_PATH, "HOME": "/tmp", "LANG": "C.UTF-8"}

# Joins every cgroup whose cgroup.procs path is given before "--", then execs the rest.
# Runs as the invoking user (root), before any privilege is dropped or anything forks.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'

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
    """Everything Popen needs to start one sandboxed bot."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec: Callable[[], None] | None = None
    uid: int | None = None


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
    names = [f"/etc/{n}" for n in ETC_FILES]
    for pattern in ETC_GLOBS:
        names.extend(sorted(glob.glob(f"/etc/{pattern}")))
    return names


def bwrap_argv(
    bwrap: str,
    bot_dir: Path,
    limits: Limits,
    env: Mapping[str, str],
    *,
    writable: bool = False,
    drop_caps: bool = False,
    ro_paths: Sequence[str] = (),
) -> list[str]:
    """bubblewrap flags: empty root, /usr read-only, the bot folder at /bot, no network.

    ``ro_paths`` are toolchain folders an organiser declared (e.g. a Rust toolchain
    outside /usr): bound read-only at the same path."""
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
    for path in ro_paths:
        argv += ["--ro-bind", path, path]
    argv += [
        "--bind" if writable else "--ro-bind",
        str(bot_dir),
        BOT_MOUNT,
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
    if drop_caps:
        argv += ["--cap-drop", "ALL"]
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
    writable: bool = False,
    drop_caps: bool = False,
    nproc: bool | None = None,
    ro_paths: Sequence[str] = (),
) -> LaunchSpec:
    """The full exec chain for ``command`` run in ``bot_dir`` under ``plan``.

    ``uid``/``gid`` switch identity with setpriv (needs root); ``procs_files`` are the
    cgroup.procs files to join first; ``writable`` binds the folder read-write (builds).
    """
    argv_cmd = parse_command(command)
    told = {**runtime_env(limits), **toolchain_path(ro_paths, BOT_PATH)}
    env = bot_env({**told, **(extra_env or {})})
    argv: list[str] = []
    if procs_files:
        argv += ["/bin/sh", "-c", JOIN_SCRIPT, "arena-join", *map(str, procs_files), "--"]
    use_nproc = (uid is not None and uid != 0) if nproc is None else nproc
    preexec = None
    if plan.prlimit:
        argv += rlimits.prlimit_argv(limits, nproc=use_nproc, prlimit=plan.prlimit)
    else:
        preexec = rlimits.preexec(limits, nproc=use_nproc)
    if plan.bwrap:
        argv += bwrap_argv(
            plan.bwrap,
            bot_dir,
            limits,
            env,
            writable=writable,
            drop_caps=drop_caps,
            ro_paths=ro_paths,
        )
        outer_env = {"PATH": BOT_PATH}
    else:
        outer_env = env
    if uid is not None and plan.setpriv:
        argv += setpriv_argv(
            plan.setpriv, uid, uid if gid is None else gid, pdeathsig=plan.bwrap is None
        )
    elif drop_caps and plan.setpriv and not plan.bwrap:
        argv += [plan.setpriv, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    argv += argv_cmd
    return LaunchSpec(argv=argv, env=outer_env, cwd=bot_dir, preexec=preexec, uid=uid)
