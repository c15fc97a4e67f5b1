"""Real bots against the real sandbox: what they can reach, what they cannot, and cleanup."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.sandbox import (
    BuildLimits,
    Level,
    Limits,
    SandboxError,
    build,
    cgroups,
    detect_layers,
    launch,
    layers,
    process,
    spawn,
    uids,
)
from arena.sandbox.reaper import pids_of_uid
from arena.sandbox.runtime_env import runtime_env

from .conftest import PYTHON, MakeBot, RequireLayer
from .helpers import assert_nothing_left, read_line, simulated

BWRAP = "bubblewrap"
UID = "separate uid"
CGROUPS = "cgroups"


def run_json(proc_args: list[str], folder: Path, **kw: object) -> dict[str, str]:
    """Run a fixture that prints one JSON line; return it parsed."""
    with spawn(proc_args, folder, **kw) as proc:  # type: ignore[arg-type]
        line = read_line(proc)
    assert_nothing_left(proc)
    result: dict[str, str] = json.loads(line)
    return result


# ------------------------------------------------------------------ it works at all


@pytest.mark.parametrize("level", list(Level))
def test_echo_bot_works_at_every_level(
    level: Level, make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    if level is Level.STRICT:
        require_layer(BWRAP, UID, CGROUPS)
    folder = make_bot("echo", "echo.py")
    with spawn(f"{PYTHON} echo.py", folder, level=level, slot=3) as proc:
        ready = read_line(proc)
        assert ready.startswith("ready")
        proc.stdin.write(b"hello\n")
        assert read_line(proc) == "echo hello"
        proc.stdin.write(b"second line\n")
        assert read_line(proc) == "echo second line"
        proc.stdin.close()
        assert proc.wait(5) == 0
    assert_nothing_left(proc)
    if level is not Level.OFF and "separate uid" in proc.layers:
        assert proc.uid is not None and proc.uid % 1000 == 3
        assert f"uid={proc.uid}" in ready
    if "bubblewrap" in proc.layers:
        assert "cwd=/bot" in ready


def test_compiled_bot_built_in_sandbox_runs(make_bot: MakeBot, require_layer: RequireLayer) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    folder = make_bot("cbot", "hello.c")
    built = folder.parent / "cbot-built"
    result = build("gcc -O2 -o bot hello.c", folder, built, BuildLimits(timeout_s=60))
    assert result.ok, result.output
    assert (built / "bot").exists() and not (folder / "bot").exists()
    with spawn("./bot", built) as proc:
        assert read_line(proc) == "ready"
        proc.stdin.write(b"x\n")
        assert read_line(proc) == "echo x"
    assert_nothing_left(proc)


@pytest.mark.parametrize(
    ("runtime", "source", "command"),
    [
        ("node", "console.log('node ok')", "node bot.js"),
        (
            "java",
            'class Bot { public static void main(String[] a) { System.out.println("java ok"); } }',
            "java Bot.java",
        ),
    ],
)
def test_system_runtimes_run_sandboxed_under_rlimit_data(
    runtime: str, source: str, command: str, make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    if shutil.which(runtime, path="/usr/bin") is None:
        pytest.skip(f"/usr/bin/{runtime} is not installed")
    require_layer(BWRAP)
    folder = make_bot(runtime)
    name = "bot.js" if runtime == "node" else "Bot.java"
    (folder / name).write_text(source)
    (folder / name).chmod(0o644)
    with spawn(command, folder, limits=Limits(memory_bytes=1024**3)) as proc:
        assert read_line(proc, timeout_s=30) == f"{runtime} ok", proc.stderr_tail()
    assert_nothing_left(proc)


# ------------------------------------------------------------------ what it cannot reach


def test_network_is_unreachable(make_bot: MakeBot, require_layer: RequireLayer) -> None:
    require_layer(BWRAP)
    folder = make_bot("net", "netprobe.py")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        began = time.monotonic()
        with spawn([PYTHON, "netprobe.py", f"127.0.0.1:{port}", "1.1.1.1:53"], folder) as proc:
            local = read_line(proc).split()
            outside = read_line(proc).split()
    assert_nothing_left(proc)
    assert local[1] != "connected", local
    assert outside[1] != "connected", outside
    assert float(outside[2]) < 1.0, "an outside address must fail fast, not time out"
    assert time.monotonic() - began < 10


def test_host_folders_are_invisible(
    make_bot: MakeBot, world_dir: Path, require_layer: RequireLayer
) -> None:
    require_layer(BWRAP)
    folder = make_bot("me", "fsprobe.py")
    other = make_bot("other", "echo.py")
    results = world_dir / "results"
    results.mkdir(mode=0o755)
    (results / "match.json").write_text("{}")
    ops = [
        f"ls:{other}",
        f"read:{other}/echo.py",
        "ls:../other",
        f"ls:{results}",
        "ls:/work",
        "ls:/root",
        "ls:/home",
        "read:/etc/passwd",
        "read:/etc/shadow",
        "ls:/sys",
        "ls:.",
        "read:fsprobe.py",
        "read:/usr/bin/python3",
    ]
    verdict = run_json([PYTHON, "fsprobe.py", *ops], folder)
    for op in ops[:-3]:
        assert verdict[op] != "ok", f"{op} should be impossible, got {verdict[op]}"
    for op in ops[-3:]:
        assert verdict[op] == "ok", f"{op} should work, got {verdict[op]}"


def test_filesystem_is_read_only_except_bounded_tmp(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    require_layer(BWRAP)
    folder = make_bot("fs", "fsprobe.py")
    ops = [
        "write:/bot/new.txt",
        "write:fsprobe.py",
        "write:/usr/evil",
        "write:/etc/evil",
        "write:/evil",
        "write:/tmp/scratch",
        "fill:/tmp/big:16777216",
    ]
    limits = Limits(tmp_bytes=8 * 1024 * 1024)
    verdict = run_json([PYTHON, "fsprobe.py", *ops], folder, limits=limits)
    for op in ops[:5]:
        assert verdict[op] in ("EROFS", "EACCES", "EPERM"), (op, verdict[op])
    assert verdict["write:/tmp/scratch"] == "ok"
    assert verdict["fill:/tmp/big:16777216"] in ("ENOSPC", "EFBIG")
    assert not (folder / "new.txt").exists()


def test_environment_is_cleared(make_bot: MakeBot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_SECRET_TOKEN", "hunter2")
    folder = make_bot("env", "env.py")
    for level in (Level.AUTO, Level.OFF):
        env = run_json([PYTHON, "env.py"], folder, level=level, env={"SEED": "42"})
        env.pop("PWD", None)
        assert env == {
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            **runtime_env(Limits()),  # the limits, told to runtimes (SPEC §15)
            "SEED": "42",
        }


# ------------------------------------------------------------------ limits


def test_rlimits_are_applied(make_bot: MakeBot) -> None:
    folder = make_bot("lim", "limits.py")
    limits = Limits(cpu_seconds=7, memory_bytes=300 * 1024**2, open_files=100)
    for level in (Level.AUTO, Level.OFF):
        got = run_json([PYTHON, "limits.py"], folder, level=level, limits=limits)
        assert got["CPU"] == [7, 8]
        assert got["DATA"] == [300 * 1024**2] * 2
        assert got["NOFILE"] == [100, 100]
        assert got["FSIZE"] == [64 * 1024**2] * 2
        assert got["CORE"] == [0, 0]
        assert got["AS"][0] == -1, "RLIMIT_AS must stay unlimited (JVM, Go, Node)"


def test_nproc_limit_with_separate_uid(make_bot: MakeBot, require_layer: RequireLayer) -> None:
    require_layer(UID)
    folder = make_bot("lim", "limits.py")
    got = run_json([PYTHON, "limits.py"], folder, limits=Limits(max_processes=33), slot=5)
    assert got["NPROC"] == [33, 33]


def test_cgroup_limits_are_written(make_bot: MakeBot, require_layer: RequireLayer) -> None:
    require_layer(CGROUPS)
    folder = make_bot("cg", "echo.py")
    limits = Limits(max_processes=20, cpu_quota=0.5, memory_bytes=256 * 1024**2)
    with spawn([PYTHON, "echo.py"], folder, limits=limits) as proc:
        read_line(proc)
        files = {f.name: f for d in proc.cgroup_dirs for f in d.iterdir()}
        assert int(files["pids.max"].read_text()) >= 20
        assert int(files["pids.max"].read_text()) < 40
        if "cpu.cfs_quota_us" in files:
            assert files["cpu.cfs_quota_us"].read_text().strip() == "50000"
        mem = files.get("memory.limit_in_bytes") or files["memory.max"]
        assert 256 * 1024**2 < int(mem.read_text()) < 1024**3
        # The bot and everything it starts live in the cgroup.
        procs = {int(p) for d in proc.cgroup_dirs for p in (d / "cgroup.procs").read_text().split()}
        assert procs
    assert_nothing_left(proc)


def test_memory_hog_is_stopped(make_bot: MakeBot) -> None:
    folder = make_bot("hog", "memhog.py")
    with spawn([PYTHON, "memhog.py"], folder, limits=Limits(memory_bytes=128 * 1024**2)) as proc:
        code = proc.wait(20)
        out = proc.stdout.read() or b""
    assert_nothing_left(proc)
    assert code != 0
    assert b"allocated" not in out
    assert b"MemoryError" in out or code < 0


def test_cpu_limit_kills_a_spinner(make_bot: MakeBot) -> None:
    folder = make_bot("spin", "spin.py")
    began = time.monotonic()
    with spawn([PYTHON, "spin.py"], folder, limits=Limits(cpu_seconds=1)) as proc:
        assert read_line(proc) == "spinning"
        code = proc.wait(15)
    assert_nothing_left(proc)
    assert code < 0 or code > 128  # SIGXCPU or SIGKILL
    assert time.monotonic() - began < 10


@pytest.mark.parametrize("config", ["full stack", "uid scan only"])
def test_fork_bomb_is_contained(
    config: str,
    make_bot: MakeBot,
    require_layer: RequireLayer,
    simulate: Callable[..., None],
) -> None:
    # The pids cgroup and/or RLIMIT_NPROC under a per-bot uid must bound the bomb, and
    # kill() must get every copy, even with only the uid sweep left.
    if config == "full stack":
        found = {s.name: s.on for s in detect_layers()}
        if not (found[CGROUPS] or found[UID]):
            require_layer(CGROUPS)
    else:
        require_layer(UID)
        simulate(BWRAP, CGROUPS)
    folder = make_bot("bomb", "forkbomb.py")
    limits = Limits(max_processes=24, cpu_seconds=20)
    with spawn([PYTHON, "forkbomb.py"], folder, limits=limits, slot=7) as proc:
        assert read_line(proc) == "bombing"
        if proc.uid is not None:
            # Copies appear (on a busy machine not within a fixed second), never over 24.
            deadline = time.monotonic() + 30
            while len(pids_of_uid(proc.uid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # the bomb pushes on against its limit meanwhile
            assert 1 < len(pids_of_uid(proc.uid)) <= 24
        else:
            time.sleep(1.0)
        # The machine is fine: we can still start processes.
        assert subprocess.run(["/bin/true"], timeout=5, check=False).returncode == 0
        began = time.monotonic()
        proc.kill()
        assert time.monotonic() - began < 5
    assert_nothing_left(proc)


# ------------------------------------------------------------------ tree kill


CONFIGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (layers that must be on, layers simulated off)
    "full stack": ((BWRAP,), ()),
    "no bubblewrap": ((CGROUPS,), (BWRAP,)),
    "uid scan only": ((UID,), (BWRAP, CGROUPS)),
}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("parent_exits", [False, True])
def test_setsid_double_fork_escapee_is_killed(
    config: str,
    parent_exits: bool,
    make_bot: MakeBot,
    require_layer: RequireLayer,
    simulate: Callable[..., None],
) -> None:
    need, off = CONFIGS[config]
    require_layer(*need)
    simulate(*off)
    folder = make_bot("esc", "escape.py")
    args = [PYTHON, "escape.py", *(["exit"] if parent_exits else [])]
    with spawn(args, folder, slot=9) as proc:
        lines = sorted([read_line(proc), read_line(proc)])  # either may come first
        assert lines[1] == "parent waiting"
        escapee = int(lines[0].split()[1])
        if parent_exits:
            proc.wait(5)
        if BWRAP in off:
            # Host pid: the escapee is alive and outside the bot's process group.
            assert Path(f"/proc/{escapee}").exists()
    assert_nothing_left(proc)
    if BWRAP in off:
        status = Path(f"/proc/{escapee}/status")
        assert not status.exists() or "zombie" in status.read_text()


def test_kill_is_idempotent_and_reports_signal(make_bot: MakeBot) -> None:
    folder = make_bot("echo", "echo.py")
    proc = spawn([PYTHON, "echo.py"], folder)
    read_line(proc)
    proc.kill()
    proc.kill()
    assert proc.returncode == -9
    assert proc.poll() == -9
    assert_nothing_left(proc)


def test_exit_code_is_passed_through(make_bot: MakeBot) -> None:
    folder = make_bot("exit", "echo.py")
    with spawn(["/bin/sh", "-c", "exit 7"], folder) as proc:
        assert proc.wait(5) == 7


# ------------------------------------------------------------------ stderr


@pytest.mark.parametrize("level", [Level.AUTO, Level.OFF])
def test_stderr_flood_does_not_block_and_log_is_capped(
    level: Level, make_bot: MakeBot, world_dir: Path
) -> None:
    folder = make_bot("flood", "flood.py")
    log = world_dir / "logs" / "flood.stderr"
    with spawn([PYTHON, "flood.py"], folder, level=level, stderr_log=log, stderr_cap=100_000) as p:
        assert read_line(p, timeout_s=20) == "done"
        assert p.stderr_tail().endswith("e\n")
        assert len(p.stderr_tail()) <= 4096
    data = log.read_bytes()
    assert len(data) < 100_000 + 100
    assert data.endswith(f"[truncated {10 * 1024 * 1024 - 100_000} bytes]\n".encode())


# ------------------------------------------------------------------ folder permissions


def test_unreadable_bot_folder_gives_clear_error(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    require_layer(UID)
    folder = make_bot("private", "echo.py")
    folder.chmod(0o700)
    with pytest.raises(SandboxError, match="chmod -R a\\+rX"):
        spawn([PYTHON, "echo.py"], folder)
    folder.chmod(0o755)
    (folder / "echo.py").chmod(0o600)
    with pytest.raises(SandboxError, match=r"echo\.py"):
        spawn([PYTHON, "echo.py"], folder)


# ------------------------------------------------------------------ build


def test_build_times_out_and_kills_tree(make_bot: MakeBot) -> None:
    folder = make_bot("slow")
    began = time.monotonic()
    out = folder.parent / "slow-built"
    result = build("sleep 60 & sleep 60", folder, out, BuildLimits(timeout_s=0.5))
    assert time.monotonic() - began < 5
    assert not result.ok and result.timed_out and result.returncode is None
    assert result.limit == "time limit of 0.5 s"
    assert "time limit" in result.output
    assert not out.exists()


def test_build_reports_failure_output(make_bot: MakeBot) -> None:
    folder = make_bot("bad")
    out = folder.parent / "bad-built"
    result = build("echo compiling; echo oops >&2; exit 2", folder, out, BuildLimits(timeout_s=10))
    assert not result.ok and result.returncode == 2
    assert "compiling" in result.output and "oops" in result.output
    assert not out.exists()


def test_build_has_no_network_and_writes_only_its_copy(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    require_layer(BWRAP)
    folder = make_bot("b", "netprobe.py")
    out = folder.parent / "b-built"
    result = build(
        f"{PYTHON} netprobe.py 1.1.1.1:53; touch /usr/evil /src/evil; echo $?; touch out.txt",
        folder,
        out,
        BuildLimits(timeout_s=20),
    )
    assert result.ok, result.output
    assert "connected" not in result.output
    assert (out / "out.txt").exists()
    assert not (folder / "out.txt").exists() and not (folder / "evil").exists()
    assert not Path("/usr/evil").exists()


def test_build_runs_as_a_bot_uid_without_privileges(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    require_layer(UID)
    folder = make_bot("rootbuild")
    out = folder.parent / "rootbuild-built"
    result = build(
        "id -u > uid.txt; grep CapEff /proc/self/status > caps.txt",
        folder,
        out,
        BuildLimits(timeout_s=10),
    )
    assert result.ok, result.output
    uid = int((out / "uid.txt").read_text())
    assert uid != 0 and uid in range(61000, 65000)
    assert (out / "caps.txt").read_text().split()[1] == "0000000000000000"


@pytest.mark.parametrize("method", ["cgroup.kill", "freezer", "procs"])
@pytest.mark.parametrize("bot", ["escape.py", "forkbomb.py"])
def test_cgroup_alone_kills_the_tree(
    method: str,
    bot: str,
    make_bot: MakeBot,
    require_layer: RequireLayer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No bwrap, no per-bot uid: each cgroup kill method must still get every process."""
    require_layer(CGROUPS)
    real = layers.detection()
    assert real.cgroups is not None
    support = real.cgroups
    if method != support.kill:
        if method == "freezer":
            freezer = next((h for h in cgroups.discover() if "freezer" in h.controllers), None)
            if freezer is None:
                pytest.skip("no v1 freezer hierarchy here")
            kept = tuple(h for h in support.hierarchies if h != support.kill_hierarchy)
            support = dataclasses.replace(
                support, hierarchies=(*kept, freezer), kill="freezer", kill_hierarchy=freezer
            )
        else:
            kept = tuple(h for h in support.hierarchies if h != support.kill_hierarchy)
            support = dataclasses.replace(
                support, hierarchies=kept, kill=method, kill_hierarchy=kept[0]
            )
    fake = dataclasses.replace(simulated(BWRAP, UID), cgroups=support)
    monkeypatch.setattr(layers, "detection", lambda: fake)
    monkeypatch.setattr(process, "ROOT_GUARD", False)  # simulates a machine without root
    folder = make_bot("cgkill", bot)
    with spawn([PYTHON, bot], folder, limits=Limits(max_processes=16, cpu_seconds=20)) as proc:
        assert proc.uid is None and "cgroups" in proc.layers
        first = read_line(proc)
        if bot == "escape.py":
            read_line(proc)
        else:
            time.sleep(0.5)
        members = set().union(
            *({int(p) for p in (d / "cgroup.procs").read_text().split()} for d in proc.cgroup_dirs)
        )
        assert len(members) >= 2, first
    assert_nothing_left(proc)
    for pid in members:
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "zombie" in status.read_text(), pid


def test_orphaned_cgroups_of_a_dead_arena_are_swept(require_layer: RequireLayer) -> None:
    require_layer(CGROUPS)
    support = layers.detection().cgroups
    assert support is not None
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    orphan = cgroups.BotCgroup.create(support, Limits(), tag="bot")
    renamed = {}
    for d, h in orphan.dirs.items():
        target = d.parent / f"bot-{dead.pid}-1"
        target.mkdir()
        d.rmdir()
        renamed[target] = h
    # A process left running in the orphaned cgroups, as after an arena crash.
    procs = " ".join(str(d / "cgroup.procs") for d in renamed)
    survivor = subprocess.Popen(
        ["/bin/sh", "-c", f'for f in {procs}; do echo $$ > "$f"; done; exec sleep 60'],
        start_new_session=True,
    )
    deadline = time.monotonic() + 5
    while not all((d / "cgroup.procs").read_text().strip() for d in renamed):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert cgroups.sweep_stale(support) >= len(renamed)
        assert survivor.wait(5) == -9
        assert not any(d.exists() for d in renamed)
    finally:
        survivor.kill()
        survivor.wait()


def test_a_cgroup_of_another_pid_namespace_is_not_swept(require_layer: RequireLayer) -> None:
    """Hosts of one machine (containers, the namespace test cluster) share the cgroup tree
    but not their process lists: a bot cgroup made in another pid namespace, whose
    creator's pid this one does not see, belongs to a live arena there and is kept, bot
    and all (before, every new arena process on one host killed the others' bots); one
    of this namespace whose creator is gone is still swept."""
    require_layer(CGROUPS)
    support = layers.detection().cgroups
    assert support is not None
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    made = cgroups.BotCgroup.create(support, Limits(), tag="bot")
    assert all(d.name.split("-")[3].split("x")[0] == cgroups._pid_namespace() for d in made.dirs)
    other, own = {}, {}
    for d, h in made.dirs.items():
        for names, ns in ((other, "1"), (own, cgroups._pid_namespace())):
            target = d.parent / f"bot-{dead.pid}-1-{ns}"
            target.mkdir()
            names[target] = h
        d.rmdir()
    procs = " ".join(str(d / "cgroup.procs") for d in other)
    elsewhere = subprocess.Popen(
        ["/bin/sh", "-c", f'for f in {procs}; do echo $$ > "$f"; done; exec sleep 60'],
        start_new_session=True,
    )
    deadline = time.monotonic() + 5
    while not all((d / "cgroup.procs").read_text().strip() for d in other):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        cgroups.sweep_stale(support)
        assert not any(d.exists() for d in own)
        assert all(d.exists() for d in other) and elsewhere.poll() is None
    finally:
        elsewhere.kill()
        elsewhere.wait()
        cgroups.BotCgroup(support, other).remove(wait_s=2.0)


def test_same_slot_in_parallel_gets_distinct_uids(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    require_layer(UID)
    folder = make_bot("twin", "echo.py")
    with (
        spawn([PYTHON, "echo.py"], folder, slot=11) as a,
        spawn([PYTHON, "echo.py"], folder, slot=11) as b,
    ):
        assert a.uid is not None and b.uid is not None and a.uid != b.uid
        assert f"uid={a.uid}" in read_line(a) and f"uid={b.uid}" in read_line(b)
        a.kill()
        # Killing one twin must not touch the other.
        b.stdin.write(b"still here\n")
        assert read_line(b) == "echo still here"
    assert_nothing_left(a)
    assert_nothing_left(b)


def test_uid_orphans_of_a_crashed_arena_are_killed_on_next_lease(
    require_layer: RequireLayer,
) -> None:
    require_layer(UID)
    setpriv = layers.detection().setpriv
    first = uids.lease(20, setpriv)
    uid = first.uid
    orphan = subprocess.Popen(
        [str(setpriv), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "sleep", "60"],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 5
        while not pids_of_uid(uid):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # Crash: the lock goes away with the process but the "held" marker stays.
        assert first.fd is not None
        os.close(first.fd)
        first.fd = None
        second = uids.lease(20, setpriv)
        try:
            assert second.uid == uid
            assert orphan.wait(5) == -9
            assert not pids_of_uid(uid)
        finally:
            second.release()
    finally:
        orphan.kill()
        orphan.wait()


def test_a_probe_left_by_a_killed_run_is_swept_in_every_hierarchy(
    require_layer: RequireLayer,
) -> None:
    """The start-up probe makes a directory in every mounted hierarchy, also those bots
    never use (a v1 freezer or cpuacct next to the ones that limit): a run killed while
    probing leaves them, and the next run's sweep must find them there too."""
    require_layer(CGROUPS)
    support = layers.detection().cgroups
    assert support is not None
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    left = []
    for h in cgroups.discover():
        try:
            left.append(cgroups._make_child(h, f"probe-{dead.pid}-1"))
        except OSError:
            continue
    unused = {h.base for h in cgroups.discover()} - {h.base for h in support.hierarchies}
    assert left
    cgroups.sweep_stale(support)
    assert not [d for d in left if d.exists()], (left, unused)


def test_no_host_path_is_visible_to_a_bot_or_its_build(
    make_bot: MakeBot, world_dir: Path, require_layer: RequireLayer
) -> None:
    """Issue 22: the mount table showed the build-cache path of the bot's copy.  The
    folder is unpacked into the sandbox's own tmpfs, so neither the build nor the bot
    sees a host path: the build cache, the tests' tmp folder, the checkout."""
    require_layer(BWRAP, layers.SECCOMP, UID, CGROUPS)
    source = make_bot("paths", "hostpaths.py")
    cache = Path(tempfile.mkdtemp(prefix="arena-test-cache-", dir="/var/tmp"))
    try:
        cache.chmod(0o755)
        built = cache / "entry" / "bot"
        built.parent.mkdir(mode=0o755)
        result = build(
            f"{PYTHON} hostpaths.py > build-view.json",
            source,
            built,
            BuildLimits(timeout_s=60),
            level=Level.STRICT,
        )
        assert result.ok, result.output
        build_view = json.loads((built / "build-view.json").read_text())
        play_view = run_json([PYTHON, "hostpaths.py"], built, level=Level.STRICT)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert play_view["/proc/self/cwd"] == "/bot" and "/bot" in play_view["/proc/self/mountinfo"]
    repo = str(Path(__file__).resolve().parents[2])
    hidden = [str(cache), str(world_dir), str(source), repo]
    for who, view in (("build", build_view), ("bot", play_view)):
        shown = {place: t for place, text in view.items() for t in hidden if t in text}
        assert not shown, f"the {who} sees host paths: {shown}"


def test_a_bot_file_above_the_file_size_limit_is_unpacked_and_the_limit_still_holds(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    """The folder is unpacked inside the sandbox under the chain's rlimits: a file larger
    than the bot's file-size limit still arrives whole, and the bot then has its limit."""
    require_layer(BWRAP)
    folder = make_bot("big")
    (folder / "big.bin").write_bytes(b"x" * (3 << 20))
    (folder / "big.bin").chmod(0o644)
    script = "wc -c < big.bin; grep 'Max file size' /proc/self/limits"
    limits = Limits(file_size_bytes=1 << 20)
    with spawn(["/bin/sh", "-c", script], folder, limits=limits) as proc:
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        proc.wait(20)
    assert out.split()[0] == str(3 << 20), (out, proc.stderr_tail())
    assert out.split()[4:6] == [str(1 << 20), str(1 << 20)], out


# ---------------------------------------------------------- a spawner killed mid-spawn


def test_a_spawner_gone_before_the_death_signal_is_armed_starts_no_bot(
    make_bot: MakeBot, require_layer: RequireLayer
) -> None:
    """The chain's guard compares its parent with the spawner's pid once the death
    signal is armed: another parent (a subreaper, or init) means the spawner died in the
    window, and nothing may start, since no signal would ever stop it."""
    require_layer(BWRAP)
    folder = make_bot("guarded", "echo.py")
    plan = layers.plan(Level.STRICT)
    spec = launch.launch_spec(plan, ["/bin/sleep", "60"], folder, Limits(), uid=None)
    argv = list(spec.argv)
    assert argv[0] == launch.parent_guard(plan)
    mark = argv.index("arena-join") + 1
    assert argv[mark] == str(os.getpid())
    argv[mark] = str(os.getppid())  # as if the spawner were not our parent any more
    try:
        chain = subprocess.Popen(
            argv, env=spec.env, cwd=spec.cwd, pass_fds=spec.pass_fds, start_new_session=True
        )
    finally:
        spec.close()
    try:
        assert chain.wait(10) == 125
    finally:
        chain.kill()
        chain.wait()


def test_a_bot_whose_spawner_is_gone_by_its_launch_never_starts(
    make_bot: MakeBot, require_layer: RequireLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/.launch reads the spawner's lifeline once the sandbox's pid 1 is armed: end of
    file there (every writer gone, as when the spawner has died) and the bot must not run,
    since bwrap outside may have died before pid 1 could arm against it."""
    require_layer(BWRAP)
    folder = make_bot("orphan", "echo.py")

    def dead_lifeline() -> int:
        read_end, write_end = os.pipe()
        os.close(write_end)
        return read_end

    monkeypatch.setattr(launch, "lifeline", dead_lifeline)
    with spawn([PYTHON, "echo.py"], folder, level=Level.STRICT) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b""  # the bot never said a word
        assert proc.wait(10) == 125
    monkeypatch.undo()
    with spawn([PYTHON, "echo.py"], folder, level=Level.STRICT) as proc:  # alive: it runs
        assert read_line(proc).startswith("ready ")


def test_the_chain_dies_with_a_spawner_killed_before_bwrap_runs(
    require_layer: RequireLayer,
) -> None:
    """The guard arms the parent-death signal at the chain's first exec: a spawner killed
    while the chain is still on its way to bwrap (which arms its own only once it runs)
    leaves nothing behind.  Here the chain never reaches bwrap: it stops at sleep."""
    require_layer(BWRAP)
    guard = launch.parent_guard(layers.plan(Level.STRICT))
    assert guard is not None
    script = (
        "import os, subprocess, sys, time\n"
        f"argv = [{guard!r}, '--pdeathsig=KILL', '--', '/bin/sh', '-c', {launch.GUARD_SCRIPT!r},"
        " 'arena-join', str(os.getpid()), '--', '/bin/sleep', '60']\n"
        "child = subprocess.Popen(argv, start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    spawner = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE)
    try:
        assert spawner.stdout is not None
        chain = int(spawner.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{chain}/cmdline").read_bytes().split(b"\0")[0] != b"/bin/sleep":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        spawner.kill()
        spawner.wait()
        deadline = time.monotonic() + 10
        while _alive(chain):
            assert time.monotonic() < deadline, "the chain outlived its spawner"
            time.sleep(0.01)
    finally:
        spawner.kill()
        spawner.wait()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status
