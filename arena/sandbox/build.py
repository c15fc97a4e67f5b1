"""Run a bot's build command (e.g. ``gcc -O2 -o bot bot.c``): untrusted code, like the bot.

A build runs under the same layers as play: its own per-bot uid (never root), bubblewrap,
seccomp, rlimits, cgroup, no network.  It never touches the submitted folder: under
bubblewrap the staged source is streamed in as an archive and unpacked into ``/bot`` (a
tmpfs of ``area_bytes``: the build cannot fill the disk), built there, and streamed back
as a tar archive that is extracted under the staging rules (regular files, folders and
inside symlinks only, plain permissions, the size budget).  A build that exceeds its
wall-clock, CPU, memory or size limit fails with the limit named; nothing of it remains.

Without bubblewrap (``auto`` on a machine without it, or ``off``) the build works in a
host folder and only the result's size is checked, afterwards.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import select
import shutil
import subprocess
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from arena.sandbox import bundle, layers, uids
from arena.sandbox.launch import BOT_PATH, CACHE_MOUNT
from arena.sandbox.process import BotProcess, start
from arena.sandbox.spec import DEFAULT_LEVEL, GIB, MIB, Level, Limits, SandboxError
from arena.sandbox.stage import (
    StagingError,
    TreeLimits,
    copy_checked,
    file_mode,
    link_stays_inside,
    remove_tree,
)

OUTPUT_HEAD = 64 * 1024
OUTPUT_TAIL = 16 * 1024
BUILD_SLOT = uids.SLOTS - 1
"""Builds lease a per-bot uid like bots do, preferring the last slot."""

# Runs inside bubblewrap as the build's uid: $1 is the build command, $2 the area in KiB,
# $3 the size of the source archive, $4 the compiler cache's cap in KiB ("": no cache),
# $5 "1" when this bot's saved cache follows the source on stdin.
# The staged source arrives on stdin as an archive (never mounted: a mount would show
# its host path in the build's mountinfo), unpacked into /bot; the cache into /cache.
# The build's stdout joins its stderr (the log); stdout carries only the tar stream
# (bot/... is the result, cache/... the cache to keep for the next build).
# Before tar, every other process of the build is killed (only the pid namespace is
# visible), so nothing can still write into the tree or the stream.
BUILD_SCRIPT = """\
head -c "$3" | tar -x -f - -C /bot >&2 || exit 120
if [ "$5" = 1 ]; then
    if tar -x -f - -C /cache >&2; then
        kept=$(du -sk /cache | cut -f1)
        echo "arena: compiler cache: $kept KiB kept from this bot's last build" >&2
    else
        echo "arena: compiler cache unreadable: building without it" >&2
        chmod -R u+w /cache 2>/dev/null; rm -rf /cache/* /cache/.[!.]* 2>/dev/null
    fi
fi
exec </dev/null
/bin/sh -c "$1" </dev/null >&2
status=$?
if [ "$status" -ne 0 ]; then
    echo "arena: build area: $(du -sk /bot 2>/dev/null | cut -f1) KiB used of $2 KiB" >&2
    if [ -n "$4" ]; then
        used=$(du -sk /cache 2>/dev/null | cut -f1)
        echo "arena: compiler cache: $used KiB used of $4 KiB" >&2
    fi
    exit "$status"
fi
kill -KILL -1 2>/dev/null
[ -n "$4" ] && exec tar -C / --numeric-owner -cf - bot cache
exec tar -C / --numeric-owner -cf - bot
"""
_FILTER_ERROR: type[Exception] | tuple[()] = getattr(tarfile, "FilterError", ())
"""tarfile's extraction-filter error (Python 3.11.4+; older ones rely on our checks)."""
_AREA_LINE = re.compile(r"arena: build area: (\d+) KiB used of (\d+) KiB")
_CACHE_LINE = re.compile(r"arena: compiler cache: (\d+) KiB used of (\d+) KiB")


def cache_env(root: str) -> dict[str, str]:
    """Where each toolchain keeps its cache, under a bot's compiler cache folder ``root``
    (``ARENA_CACHE`` itself is for build commands of their own, e.g. make's objects)."""
    env = {
        "ARENA_CACHE": root,
        "GOCACHE": f"{root}/go-build",
        "CARGO_TARGET_DIR": f"{root}/cargo-target",
        "npm_config_cache": f"{root}/npm",
    }
    if shutil.which("ccache", path=BOT_PATH):  # only a ccache the build can run
        env["CCACHE_DIR"] = f"{root}/ccache"
    return env


@dataclass(frozen=True)
class CompilerCache:
    """One bot's compiler cache for one build (see :mod:`arena.play.build` for whose).

    Under bubblewrap the build gets an empty tmpfs of ``cap_bytes`` at /cache, the
    ``saved`` archive (if any) is unpacked into it inside the sandbox, and what the build
    leaves there is written to ``new`` as an archive.  The host never unpacks it: only
    the same bot's next build does, in its own sandbox."""

    saved: Path | None
    new: Path
    cap_bytes: int


@dataclass(frozen=True)
class BuildLimits:
    """What one build may use.  An organiser sets these; a manifest may only lower them."""

    timeout_s: float = 300.0
    area_bytes: int = 256 * MIB
    """The size-bounded area the build works in, and the cap on what it leaves."""
    memory_bytes: int = 2 * GIB
    max_processes: int = 128
    max_entries: int = 50_000

    def sandbox_limits(self, cache_bytes: int = 0) -> Limits:
        """``cache_bytes``: the compiler cache's tmpfs, counted by the memory cgroup too."""
        cores = os.cpu_count() or 1
        return Limits(
            cpu_seconds=max(1, math.ceil(self.timeout_s)) * cores + 1,
            memory_bytes=self.memory_bytes + cache_bytes,
            max_processes=self.max_processes,
            open_files=1024,
            file_size_bytes=self.area_bytes,
            # The build area is a tmpfs: the memory cgroup counts it on top of the heap.
            tmp_bytes=self.area_bytes + 64 * MIB,
            cpu_quota=float(cores),
        )

    def tree(self) -> TreeLimits:
        return TreeLimits(max_bytes=self.area_bytes, max_entries=self.max_entries)


@dataclass(frozen=True)
class BuildResult:
    """Outcome of a build: ``ok`` only if it exited 0 in time and its result was accepted."""

    ok: bool
    returncode: int | None
    output: str
    seconds: float
    timed_out: bool = False
    limit: str | None = None
    """The limit the build hit, in words ("time limit of 300 s"), if any."""
    rejected: str | None = None
    """Why the result was refused by the staging rules, if it was."""
    cache_saved: bool = False
    """The compiler cache was written to its ``new`` archive (an ok build under bubblewrap)."""


def build(
    command: str,
    source: Path,
    dest: Path,
    limits: BuildLimits | None = None,
    *,
    level: Level = DEFAULT_LEVEL,
    env: Mapping[str, str] | None = None,
    ro_paths: Sequence[str] = (),
    compiler_cache: CompilerCache | None = None,
) -> BuildResult:
    """Build a copy of the (already staged) folder ``source`` into the new folder ``dest``.

    ``dest`` exists afterwards only if the build succeeded and its result passed the
    staging rules (plain files, the size budget...).  ``source`` is never written.
    ``ro_paths`` are organiser-declared toolchain folders, visible read-only.
    ``compiler_cache``: the bot's own cache, kept across builds under bubblewrap (without
    it the toolchains' cache variables point at a fresh folder: a cold build).
    """
    limits = limits or BuildLimits()
    plan = layers.plan(level)
    lease = uids.lease(BUILD_SLOT, plan.setpriv) if plan.separate_uid else None
    try:
        if plan.bwrap:
            result = _build_in_bwrap(
                command, source, dest, limits, plan, lease, env, ro_paths, compiler_cache
            )
        else:
            result = _build_on_host(
                command, source, dest, limits, plan, lease, env, ro_paths, compiler_cache
            )
    except BaseException:
        remove_tree(dest)
        if compiler_cache is not None:
            compiler_cache.new.unlink(missing_ok=True)
        raise
    finally:
        if lease is not None:
            lease.release()
    if not result.ok:
        remove_tree(dest)  # nothing of a failed build remains
        if compiler_cache is not None:
            compiler_cache.new.unlink(missing_ok=True)
    return result


def _limit_hit(code: int | None, output: str, limits: BuildLimits, timed_out: bool) -> str | None:
    if timed_out:
        return f"time limit of {limits.timeout_s:g} s"
    cache = _CACHE_LINE.findall(output)
    if cache:
        used, cap = (int(x) for x in cache[-1])
        if used >= cap - 256:
            return f"compiler cache limit of {cap // 1024} MiB"
    area = _AREA_LINE.findall(output)
    if area:
        used, cap = (int(x) for x in area[-1])
        if used >= cap - 256:  # within a few pages of the cap
            return f"build area limit of {limits.area_bytes // MIB} MiB"
    if "No space left on device" in output:
        return f"build area limit of {limits.area_bytes // MIB} MiB"
    if code in (128 + 24, -24):  # SIGXCPU
        return "CPU time limit"
    if code in (128 + 25, -25):  # SIGXFSZ
        return f"file size limit of {limits.area_bytes // MIB} MiB"
    if code in (128 + 9, -9):
        return f"memory limit of {limits.memory_bytes // MIB} MiB (killed)"
    return None


class _Stream:
    """The build's stdout as a file for tarfile: bounded in bytes and in time."""

    def __init__(self, fd: int, deadline: float, cap: int) -> None:
        self.fd = fd
        self.deadline = deadline
        self.cap = cap
        self.read_bytes = 0
        self.timed_out = False
        self.too_big = False
        os.set_blocking(fd, False)

    def read(self, n: int = -1) -> bytes:
        want = 1 << 16 if n is None or n < 0 else n
        chunks: list[bytes] = []
        got = 0
        while got < want:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.timed_out = True
                break
            if not select.select([self.fd], [], [], left)[0]:
                continue
            try:
                chunk = os.read(self.fd, want - got)
            except BlockingIOError:
                continue
            if not chunk:
                break
            self.read_bytes += len(chunk)
            if self.read_bytes > self.cap:
                self.too_big = True
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


def _check_member(member: tarfile.TarInfo, budget: list[int], limits: BuildLimits) -> None:
    """The staging rules for one archive entry (raises StagingError)."""
    name = member.name
    if name in (".", "./"):
        return
    budget[0] += 1
    budget[1] += member.size if member.isfile() else 0
    if budget[0] > limits.max_entries:
        raise StagingError(f"more than {limits.max_entries} files and folders")
    if budget[1] > limits.area_bytes:
        raise StagingError(f"larger than the size limit of {limits.area_bytes // MIB} MiB")
    rel = os.path.normpath(name)
    if rel.startswith(("/", "../")) or rel == "..":
        raise StagingError(f"{name!r} is outside the folder")
    if member.issym():
        if not link_stays_inside(rel, member.linkname):
            raise StagingError(f"{rel!r} is a symlink that leaves the folder")
    elif member.islnk():
        target = os.path.normpath(member.linkname)
        if target.startswith(("/", "../")) or target == "..":
            raise StagingError(f"{rel!r} is a hard link to outside the folder")
    elif not (member.isfile() or member.isdir()):
        kind = "a FIFO" if member.isfifo() else "a device or special file"
        raise StagingError(f"{rel!r} is {kind}: only files, folders and links")


def _extract(
    stream: _Stream, dest: Path, limits: BuildLimits, cache_out: Path | None = None
) -> None:
    """Extract the tar stream's ``bot/`` into ``dest`` under the staging rules; its
    ``cache/`` is copied, still packed, to ``cache_out`` (never unpacked on the host)."""
    budget = [0, 0]
    os.mkdir(dest, 0o755)
    with contextlib.ExitStack() as stack:
        archive = stack.enter_context(
            tarfile.open(fileobj=stream, mode="r|")  # type: ignore[call-overload]
        )
        saved = None
        if cache_out is not None:
            saved = stack.enter_context(tarfile.open(cache_out, "w", format=tarfile.GNU_FORMAT))
        for member in archive:
            top, _, rel = os.path.normpath(member.name).partition("/")
            if top == "cache" and saved is not None:
                _keep_cache_member(archive, saved, member, rel)
                continue
            if top != "bot":
                raise StagingError(f"{member.name!r} is outside the folder")
            member.name = rel or "."
            if member.islnk():
                link_top, _, link_rel = os.path.normpath(member.linkname).partition("/")
                if link_top != "bot" or not link_rel:
                    raise StagingError(f"{rel!r} is a hard link to outside the folder")
                member.linkname = link_rel
            _check_member(member, budget, limits)
            if member.name in (".", "./"):
                continue
            member.mode = 0o755 if member.isdir() else file_mode(member.mode)
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            try:
                archive.extract(member, dest, **kwargs)
            except _FILTER_ERROR as exc:  # the stdlib's own checks agree with ours
                raise StagingError(str(exc)) from None
            except tarfile.TarError as exc:
                raise StagingError(f"damaged result archive: {exc}") from None


def _keep_cache_member(
    archive: tarfile.TarFile, saved: tarfile.TarFile, member: tarfile.TarInfo, rel: str
) -> None:
    """Copy one cache entry, renamed relative to /cache; the sandbox of the bot's next
    build is the only place it is ever unpacked (by tar, as that build's uid)."""
    if not rel or not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return
    member.name = rel
    if member.islnk():
        link_top, _, link_rel = os.path.normpath(member.linkname).partition("/")
        if link_top != "cache" or not link_rel:
            return
        member.linkname = link_rel
    saved.addfile(member, archive.extractfile(member) if member.isfile() else None)


def _finish(proc: BotProcess, deadline: float) -> int | None:
    try:
        return proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def _build_in_bwrap(
    command: str,
    source: Path,
    dest: Path,
    limits: BuildLimits,
    plan: layers.Plan,
    lease: uids.UidLease | None,
    env: Mapping[str, str] | None,
    ro_paths: Sequence[str] = (),
    cache: CompilerCache | None = None,
) -> BuildResult:
    packed = bundle.pack(source, read_only=False).data
    saved = None
    if cache is not None and cache.saved is not None:
        with contextlib.suppress(OSError):  # gone (cleared meanwhile): a cold build
            saved = open(cache.saved, "rb")  # noqa: SIM115 (closed below, once fed)
    try:
        return _run_bwrap_build(
            command, source, dest, limits, plan, lease, env, ro_paths, cache, packed, saved
        )
    finally:
        if saved is not None:
            saved.close()


def _run_bwrap_build(
    command: str,
    source: Path,
    dest: Path,
    limits: BuildLimits,
    plan: layers.Plan,
    lease: uids.UidLease | None,
    env: Mapping[str, str] | None,
    ro_paths: Sequence[str],
    cache: CompilerCache | None,
    packed: bytes,
    saved: BinaryIO | None,
) -> BuildResult:
    began = time.monotonic()
    deadline = began + limits.timeout_s
    area_kib = limits.area_bytes // 1024
    cache_bytes = cache.cap_bytes if cache else 0
    proc = start(
        plan,
        [
            "/bin/sh",
            "-c",
            BUILD_SCRIPT,
            "arena-build",
            command,
            str(area_kib),
            str(len(packed)),
            str(cache_bytes // 1024) if cache else "",
            "1" if saved is not None else "",
        ],
        source,
        limits.sandbox_limits(cache_bytes),
        uid=lease.uid if lease else None,
        extra_env={**(cache_env(CACHE_MOUNT) if cache else {}), **(env or {})},
        ro_paths=ro_paths,
        build_area=limits.area_bytes,
        cache_area=cache_bytes or None,
        head_bytes=OUTPUT_HEAD,
        tail_bytes=OUTPUT_TAIL,
        tag="build",
        nproc=False,
    )
    try:
        proc.stdin.write(packed)
        if saved is not None:
            while chunk := saved.read(1 << 20):
                proc.stdin.write(chunk)
    except BrokenPipeError:
        pass  # the build's unpacking failed (area full): its output says so
    except OSError as exc:
        proc.kill()
        raise SandboxError(f"cannot feed the source to the build: {exc}") from exc
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    stream = _Stream(proc.stdout.fileno(), deadline, limits.area_bytes + cache_bytes + 16 * MIB)
    rejected = None
    try:
        _extract(stream, dest, limits, cache.new if cache else None)
    except StagingError as exc:
        rejected = str(exc)
    except tarfile.TarError:
        rejected = "" if not stream.read_bytes else "damaged result archive"
    except OSError as exc:
        rejected = f"cannot write the result: {exc.strerror}"
    if stream.too_big:
        rejected = f"larger than the size limit of {limits.area_bytes // MIB} MiB"
    if rejected:  # the rest of the stream does not matter: stop the build now
        proc.kill()
        code, timed_out = proc.returncode, False
    else:
        code = _finish(proc, deadline)
        timed_out = stream.timed_out or code is None
        proc.kill()
    output = proc.sink.text()
    seconds = time.monotonic() - began
    limit = None if rejected else _limit_hit(code, output, limits, timed_out)
    if timed_out:
        output += f"\n[build stopped: it exceeded its time limit of {limits.timeout_s:g} s]\n"
    ok = code == 0 and not timed_out and not rejected
    if rejected:
        output += f"\n[build result refused: {rejected}]\n"
    return BuildResult(
        ok=ok,
        returncode=code,
        output=output,
        seconds=seconds,
        timed_out=timed_out,
        limit=limit,
        rejected=rejected or None,
        cache_saved=ok and cache is not None,
    )


def _build_on_host(
    command: str,
    source: Path,
    dest: Path,
    limits: BuildLimits,
    plan: layers.Plan,
    lease: uids.UidLease | None,
    env: Mapping[str, str] | None,
    ro_paths: Sequence[str] = (),
    cache: CompilerCache | None = None,
) -> BuildResult:
    began = time.monotonic()
    work = dest.with_name(dest.name + ".work")
    # Without bubblewrap nothing could keep one bot out of another's cache folder: the
    # toolchains' caches go to a fresh private folder, thrown away (a cold build).
    scratch = dest.with_name(dest.name + ".cache")
    copy_checked(source, work, limits.tree())
    try:
        scratch.mkdir(mode=0o700)
        if cache is not None:
            env = {**cache_env(str(scratch)), **(env or {})}
        if lease is not None:
            for root, dirs, files in os.walk(work):
                for name in dirs + files:
                    os.lchown(os.path.join(root, name), lease.uid, lease.uid)
            os.chown(work, lease.uid, lease.uid)
            os.chown(scratch, lease.uid, lease.uid)
        proc = start(
            plan,
            ["/bin/sh", "-c", command],
            work,
            limits.sandbox_limits(),
            uid=lease.uid if lease else None,
            extra_env=env,
            ro_paths=ro_paths,
            merge_output=True,
            head_bytes=OUTPUT_HEAD,
            tail_bytes=OUTPUT_TAIL,
            tag="build",
            nproc=False,
        )
        code = _finish(proc, began + limits.timeout_s)
        timed_out = code is None
        proc.kill()
        output = proc.sink.text()
        rejected = None
        if code == 0:
            try:
                copy_checked(work, dest, limits.tree())
            except StagingError as exc:
                rejected = str(exc)
                output += f"\n[build result refused: {rejected}]\n"
    finally:
        remove_tree(work)
        remove_tree(scratch)
    if timed_out:
        output += f"\n[build stopped: it exceeded its time limit of {limits.timeout_s:g} s]\n"
    ok = code == 0 and not rejected
    return BuildResult(
        ok=ok,
        returncode=code,
        output=output,
        seconds=time.monotonic() - began,
        timed_out=timed_out,
        limit=_limit_hit(code, output, limits, timed_out),
        rejected=rejected,
    )
