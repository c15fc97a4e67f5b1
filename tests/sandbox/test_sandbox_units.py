"""Fast tests of the pure parts: limits, command parsing, argv building, detection logic."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from arena.sandbox import (
    LayerStatus,
    Level,
    Limits,
    SandboxError,
    SandboxUnavailable,
    StderrSink,
    detect_layers,
    sandbox_warning,
    spawn,
    uids,
)
from arena.sandbox import layers as layers_mod
from arena.sandbox.launch import bot_env, bwrap_argv, parse_command
from arena.sandbox.rlimits import prlimit_argv

from .conftest import RequireLayer
from .helpers import simulated


def test_limits_defaults_and_validation() -> None:
    limits = Limits()
    assert limits.memory_bytes == 1024**3
    assert limits.max_processes == 64
    with pytest.raises(ValueError):
        Limits(memory_bytes=0)
    with pytest.raises(ValueError):
        Limits(cpu_seconds=0)
    with pytest.raises(ValueError):
        Limits(cpu_quota=0)
    assert Limits(cpu_seconds=None).cpu_seconds is None


def test_parse_command_uses_shell_only_when_needed() -> None:
    assert parse_command("python3 bot.py") == ["python3", "bot.py"]
    assert parse_command("./bot --fast 'a b'") == ["./bot", "--fast", "a b"]
    assert parse_command(["node", "bot.js"]) == ["node", "bot.js"]
    assert parse_command("./a && ./b")[:2] == ["/bin/sh", "-c"]
    assert parse_command("FOO=1 ./bot")[:2] == ["/bin/sh", "-c"]
    with pytest.raises(SandboxError):
        parse_command("   ")
    with pytest.raises(SandboxError):
        parse_command("python3 'unterminated")


def test_bot_env_is_cleared_plus_extras() -> None:
    env = bot_env({"SEED": "7"})
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "SEED": "7"}
    with pytest.raises(SandboxError):
        bot_env({"A=B": "x"})


def test_prlimit_uses_data_not_as() -> None:
    argv = prlimit_argv(Limits(cpu_seconds=5), nproc=True)
    assert "--data=1073741824:1073741824" in argv
    assert "--cpu=5:6" in argv
    assert "--core=0:0" in argv
    assert "--nproc=64:64" in argv
    assert not any(a.startswith("--as") for a in argv)
    assert not any(a.startswith("--nproc") for a in prlimit_argv(Limits(), nproc=False))


def test_bwrap_argv_shows_only_usr_etc_and_the_bot(tmp_path: Path) -> None:
    """Only /usr (and /etc entries) are bound from the host: the bot folder arrives as an
    archive (``--file``) in its own tmpfs, so no host path is a mount source."""
    argv = bwrap_argv(
        "/usr/bin/bwrap", Limits(tmp_bytes=1234), {"PATH": "/usr/bin"}, bot_area=5678, bundle_fd=9
    )
    assert "--unshare-net" in argv and "--unshare-pid" in argv
    assert "--die-with-parent" in argv
    binds = [argv[i + 1] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    assert set(binds) == {"/usr"}
    at = argv.index("/bot")
    assert argv[at - 5 : at] == ["--perms", "0555", "--size", "5678", "--tmpfs"]
    assert argv[at + 1 : at + 6] == ["--perms", "0400", "--file", "9", "/bot/.arena-bundle"]
    assert "--clearenv" in argv
    assert argv[argv.index("--size") + 1] == "1234"
    for i, a in enumerate(argv):
        if a == "--ro-bind-try":
            assert argv[i + 1].startswith("/etc/")


def test_detect_layers_is_complete_and_cached() -> None:
    first = detect_layers()
    assert [s.name for s in first] == list(layers_mod.LAYER_NAMES)
    began = time.perf_counter()
    assert detect_layers() == first
    assert time.perf_counter() - began < 0.01
    assert all(s.reason for s in first)


def test_warning_text() -> None:
    on = [LayerStatus(n, True, "fine") for n in layers_mod.LAYER_NAMES]
    assert sandbox_warning(on) is None
    off = [*on[:1], LayerStatus("separate uid", False, "not root"), *on[2:]]
    text = sandbox_warning(off)
    assert text is not None and "separate uid" in text and "\n" not in text


def test_one_check_of_a_level_against_the_machine() -> None:
    """The CLI, the server, its submissions and Ray nodes all ask check_level."""
    from arena.sandbox import Level, SandboxUnavailable, check_level

    on = [LayerStatus(n, True, "fine") for n in layers_mod.LAYER_NAMES]
    off = [*on[:1], LayerStatus("separate uid", False, "not root"), *on[2:]]
    assert check_level(Level.STRICT, on) is None
    assert check_level(Level.AUTO, on) is None
    warning = check_level(Level.AUTO, off)
    assert warning is not None and warning.startswith("warning: ") and "separate uid" in warning
    assert not warning.startswith("warning: warning")
    assert check_level(Level.OFF, off) is None
    with pytest.raises(SandboxUnavailable, match="separate uid: not root"):
        check_level(Level.STRICT, off)


@pytest.mark.parametrize("missing", ["bubblewrap", "seccomp", "cgroups", "separate uid"])
def test_strict_refuses_when_a_layer_is_missing(
    missing: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = simulated(missing)
    monkeypatch.setattr(layers_mod, "detection", lambda: fake)
    with pytest.raises(SandboxUnavailable) as info:
        spawn(["/bin/true"], tmp_path, level=Level.STRICT)
    message = str(info.value)
    assert missing in message
    if missing == "bubblewrap":
        assert "apt-get install bubblewrap" in message
    assert sandbox_warning(list(fake.layers)) is not None


def test_spawn_rejects_missing_folder_and_bad_slot(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        spawn(["/bin/true"], tmp_path / "nope", level=Level.OFF)
    with pytest.raises(SandboxError, match="slot"):
        spawn(["/bin/true"], tmp_path, level=Level.OFF, slot=-1)


def test_stderr_sink_caps_log_and_keeps_tail(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    log = tmp_path / "err.log"
    sink = StderrSink(read_end, log, cap=1000, tail_bytes=50, head_bytes=20)
    payload = b"".join(f"line {i:05d}\n".encode() for i in range(1000))
    os.write(write_end, payload)
    os.close(write_end)
    sink.close()
    data = log.read_bytes()
    assert data.startswith(payload[:1000])
    assert data.endswith(f"[truncated {len(payload) - 1000} bytes]\n".encode())
    assert sink.tail() == payload[-50:].decode()
    assert sink.total == len(payload)
    text = sink.text()
    assert text.startswith(payload[:20].decode()) and text.endswith(payload[-50:].decode())
    assert "bytes omitted" in text


def test_stderr_sink_tail_takes_what_the_pipe_still_holds() -> None:
    """A fault's stderr tail holds the bot's last words even when the reader thread has
    not run yet (a loaded host): here it is held off until the tail has been asked."""
    import threading

    read_end, write_end = os.pipe()
    sink = StderrSink(read_end, None)
    sink._reading.acquire()  # the reader cannot take anything meanwhile
    os.write(write_end, b"this bot is broken on purpose\n")
    threading.Timer(0.05, sink._reading.release).start()
    assert "broken on purpose" in sink.tail()
    os.close(write_end)
    sink.close()


def test_stderr_sink_close_does_not_hang_on_open_writer() -> None:
    read_end, write_end = os.pipe()
    sink = StderrSink(read_end, None)
    os.write(write_end, b"partial")
    began = time.monotonic()
    sink.close(timeout_s=0.2)
    assert time.monotonic() - began < 2
    assert sink.tail() == "partial"
    os.close(write_end)


def test_forked_child_does_not_keep_uid_locks(require_layer: RequireLayer) -> None:
    require_layer("separate uid")
    lease = uids.lease(30, None)
    pid = os.fork()
    if pid == 0:  # child: hold on for a while with the inherited state
        time.sleep(0.5)
        os._exit(0)
    try:
        lease.release()
        time.sleep(0.1)  # let the child run its at-fork handler
        again = uids.lease(30, None)
        assert again.uid == lease.uid, "the child kept the parent's lock alive"
        again.release()
    finally:
        os.waitpid(pid, 0)


def test_seccomp_profile_is_a_default_deny_allowlist() -> None:
    """Issue 22: the filter allows a list and denies the rest; what must never be allowed
    is named, and ``arena doctor`` reports the profile."""
    pytest.importorskip("pyseccomp")
    from arena.sandbox import seccomp

    assert not seccomp.ALLOWED & seccomp.DENIED
    assert not set(seccomp.CONDITIONAL) & seccomp.DENIED
    assert {"io_uring_setup", "bpf", "perf_event_open", "userfaultfd", "mount"} <= seccomp.DENIED
    assert {"ptrace", "process_vm_readv", "kexec_load", "keyctl", "init_module"} <= seccomp.DENIED
    assert not {"flock", "inotify_init1", "fanotify_init"} & seccomp.ALLOWED
    import pyseccomp

    rules, _count = seccomp._rules()
    assert rules.get_attr(pyseccomp.Attr.ACT_DEFAULT) == pyseccomp.ERRNO(errno.EPERM)
    assert rules.get_attr(pyseccomp.Attr.ACT_BADARCH) == pyseccomp.KILL  # foreign ABIs
    found = seccomp.profile()
    assert 200 < found.allowed < 400
    assert f"allowlist, {found.allowed} system calls" in found.describe()
    status = layers_mod._detect_seccomp(
        "/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap") else None
    )
    if status[0].on:
        assert f"allowlist, {found.allowed} system calls" in status[0].reason


def test_the_etc_entries_a_bot_sees_follow_etc_and_uids_come_slot_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/etc is globbed again when it changed (its mtime), not at every spawn; a slot's
    own uids are offered first, then every other uid of the pool once."""
    import itertools
    import types

    from arena.sandbox import launch, uids

    globbed: list[str] = []
    stamp = [1]
    real_stat = os.stat
    monkeypatch.setattr(launch.glob, "glob", lambda pattern: globbed.append(pattern) or [])
    monkeypatch.setattr(
        launch.os,
        "stat",
        lambda path, *a, **k: (
            types.SimpleNamespace(st_mtime_ns=stamp[0])
            if path == "/etc"
            else real_stat(path, *a, **k)
        ),
    )
    launch._ETC_SEEN.clear()
    first = launch._etc_entries()
    assert launch._etc_entries() == first and len(globbed) == len(launch.ETC_GLOBS)
    stamp[0] = 2  # an entry added to /etc
    launch._etc_entries()
    assert len(globbed) == 2 * len(launch.ETC_GLOBS)
    launch._ETC_SEEN.clear()

    offered = list(uids.candidates(7))
    assert offered[: uids.ALTERNATES] == [
        uids.UID_BASE + 7 + uids.SLOTS * k for k in range(uids.ALTERNATES)
    ]
    assert sorted(offered) == list(
        range(uids.UID_BASE, uids.UID_BASE + uids.SLOTS * uids.ALTERNATES)
    )
    assert next(itertools.islice(uids.candidates(3), 0, None)) == uids.UID_BASE + 3
