"""What runtimes learn about the sandbox, out-of-memory deaths, toolchain folders, and
check-bot's plain-words diagnoses."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.engine import Variant
from arena.kits import kit_for
from arena.play.build import build_bot
from arena.play.checkbot import advice, check_bot
from arena.referee import (
    BotSeat,
    BotSpec,
    GameSettings,
    RandomSeat,
    SandboxSettings,
    TimeControl,
    load_bot,
    play_game,
)
from arena.referee.clock import ClockKind
from arena.referee.memory import mentions_memory
from arena.referee.toolchains import (
    ToolchainError,
    explain_build_failure,
    missing_from_build_output,
    validate_toolchains,
)
from arena.sandbox import Limits, spawn
from arena.sandbox.spec import MIB

from .conftest import FIXTURES, REPO, require_strict_sandbox, require_toolchain

QUICK = TimeControl(move_ms=2000, init_ms=5000)


def run_in_sandbox(command: list[str], folder: Path, limits: Limits) -> str:
    proc = spawn(command, folder, limits=limits)
    try:
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        proc.wait(30)
    finally:
        proc.kill()
    return out


def test_the_limits_reach_the_bot_environment() -> None:
    require_strict_sandbox()
    limits = Limits(memory_bytes=512 * MIB)
    script = "echo $ARENA_MEMORY_MB $ARENA_CPUS $GOMAXPROCS $GOMEMLIMIT $NODE_OPTIONS"
    out = run_in_sandbox(["/bin/sh", "-c", script], REPO / "bots" / "python-random", limits)
    assert out.split() == ["512", "1", "1", "384MiB", "--max-old-space-size=256"]


def test_the_jvm_sizes_its_heap_and_cpus_to_the_sandbox() -> None:
    kit = kit_for("java")
    assert kit is not None
    require_toolchain(kit)
    require_strict_sandbox()
    limits = Limits(memory_bytes=512 * MIB)
    command = ["/bin/sh", "-c", "/usr/bin/java -XX:+PrintFlagsFinal -version 2>&1"]
    out = run_in_sandbox(command, REPO / "bots" / "java-greedy", limits)
    assert "Picked up JAVA_TOOL_OPTIONS" in out
    heap = re.search(r"\bMaxHeapSize\s+=\s+(\d+)", out)
    assert heap, out
    assert int(heap.group(1)) <= 256 * MIB  # half of the sandbox's memory, not the host's
    # The host may have many cores; the JVM is told the sandbox's one.
    assert re.search(r"\bActiveProcessorCount\s+=\s+1\b", out)


def test_out_of_memory_in_python_is_a_crash_that_says_memory(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    spec = quirky_bot("memory", 0)
    bot = BotSeat(build_bot(spec), time_control=QUICK)
    try:
        record = play_game([bot, RandomSeat()], GameSettings(time_control=QUICK), "oom").record
    finally:
        bot.close()
    (fault,) = record.faults
    assert fault.kind == "crash"
    assert "ran out of memory" in fault.message and "1024 MiB" in fault.message


def test_a_report_whose_reason_follows_a_bare_first_line_is_a_memory_crash(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    # The JVM's native report arrives in several writes: the referee reads '#' alone
    # (malformed) before the reason; it must look at what follows before judging.
    spec = quirky_bot("jvm-report", 50)
    bot = BotSeat(build_bot(spec), time_control=QUICK)
    try:
        record = play_game([bot, RandomSeat()], GameSettings(time_control=QUICK), "jvm").record
    finally:
        bot.close()
    (fault,) = record.faults
    assert fault.kind == "crash", fault
    assert "ran out of memory" in fault.message
    assert fault.last_message == "#"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "last_words"),
    [
        # The case: told -Xmx3g in a smaller sandbox, the JVM fails to commit
        # memory and writes its native report ('#', 'There is insufficient memory ...').
        ("-Xmx3g -XX:-ExitOnOutOfMemoryError", "#"),
        # The arena's defaults: the heap fits the sandbox, and the JVM exits on
        # OutOfMemoryError, saying so on stdout.
        ("", "Terminating due to java.lang.OutOfMemoryError"),
    ],
    ids=["native", "heap"],
)
def test_jvm_out_of_memory_on_stdout_is_a_crash_not_malformed(
    tmp_path: Path, flags: str, last_words: str
) -> None:
    kit = kit_for("java")
    assert kit is not None
    require_toolchain(kit)
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    folder = tmp_path / "hog"
    shutil.copytree(FIXTURES / "java-memory-hog", folder, ignore=shutil.ignore_patterns("classes"))
    manifest = (folder / "bot.toml").read_text()
    manifest = re.sub(
        r"(?m)^command = .*$", f'command = "/usr/bin/java {flags} -cp classes Hog"', manifest
    )
    (folder / "bot.toml").write_text(manifest)
    built = build_bot(load_bot(folder))
    slow = TimeControl(move_ms=60_000, init_ms=20_000)
    sandbox = SandboxSettings(limits=Limits(memory_bytes=512 * MIB))
    bot = BotSeat(built, time_control=slow, sandbox=sandbox)
    try:
        record = play_game([bot, RandomSeat()], GameSettings(time_control=slow), "hog").record
    finally:
        bot.close()
    (fault,) = record.faults
    assert fault.kind == "crash", fault
    assert "ran out of memory" in fault.message and "512 MiB" in fault.message
    assert fault.last_message is not None and fault.last_message.startswith(last_words)


def test_memory_signs_ignore_the_echoed_java_options() -> None:
    echoed = "Picked up JAVA_TOOL_OPTIONS: -XX:MaxRAM=1024m -XX:+ExitOnOutOfMemoryError\n"
    assert not mentions_memory(echoed)
    assert mentions_memory(echoed + "Exception in thread main java.lang.OutOfMemoryError")
    assert mentions_memory(b"memory allocation of 8589934592 bytes failed")
    assert not mentions_memory("all fine", None, b"")


def test_toolchain_paths_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="absolute"):
        validate_toolchains(["opt/rust"])
    with pytest.raises(ToolchainError, match="not an existing folder"):
        validate_toolchains([str(tmp_path / "missing")])
    for shadowing in ("/", "/tmp", "/proc/self", "/dev"):
        with pytest.raises(ToolchainError, match="shadow"):
            validate_toolchains([shadowing])
    assert validate_toolchains(["/usr/lib", str(tmp_path), f"{tmp_path}/"]) == (str(tmp_path),)


def _tool_bot(tmp_path: Path, build: str | None, command: str) -> Path:
    folder = tmp_path / "toolbot"
    folder.mkdir()
    shutil.copy(REPO / "bots" / "python-random" / "bot.py", folder / "bot.py")
    manifest = f'name = "toolbot"\nlanguage = "python"\ncommand = "{command}"\n'
    if build:
        manifest += f'build = "{build}"\n'
    (folder / "bot.toml").write_text(manifest)
    folder.chmod(0o755)
    return folder


def test_a_declared_toolchain_is_visible_and_on_path(tmp_path: Path) -> None:
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    toolchain = tmp_path / "opt-python"
    (toolchain / "bin").mkdir(parents=True)
    (toolchain / "bin" / "tc-python").symlink_to("/usr/bin/python3")
    for d in (toolchain, toolchain / "bin"):
        d.chmod(0o755)
    spec = load_bot(
        _tool_bot(tmp_path, 'tc-python -c \'open(\\"built\\", \\"w\\")\'', "tc-python bot.py")
    )
    without = check_bot(spec, SandboxSettings(), QUICK, player_counts=(2,))
    assert not without.ok
    (problem,) = without.problems[-1:]
    assert "'tc-python' is not found inside the sandbox" in problem
    assert "PATH is /usr/bin:/bin" in problem and "python3" in problem
    declared = validate_toolchains([str(toolchain)])
    sandbox = SandboxSettings(toolchains=declared)
    report = check_bot(spec, sandbox, QUICK, player_counts=(2,))
    assert report.ok, (report.problems, report.faults)
    assert report.folder is not None
    assert (report.folder / "built").exists()  # the build ran the toolchain's program


def test_check_bot_explains_a_missing_run_program(tmp_path: Path) -> None:
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    spec = load_bot(_tool_bot(tmp_path, None, "/opt/no-such-jdk/bin/java Bot"))
    report = check_bot(spec, SandboxSettings(), QUICK, player_counts=(2,))
    assert not report.ok and report.games == 0
    assert (
        "the run command's program '/opt/no-such-jdk/bin/java' is not found" in report.problems[0]
    )
    assert "prebuilt binary" in report.problems[0]


def test_build_output_not_found_is_recognised() -> None:
    assert missing_from_build_output("/bin/sh: 1: cargo: not found\n") == "cargo"
    assert missing_from_build_output("sh: 1: go: not found") == "go"
    assert missing_from_build_output("error: linking failed") is None
    failed = "building x failed ('rustup-cargo build', exit status 127):\n"
    text = explain_build_failure(failed + "/bin/sh: 1: rustup-cargo: not found")
    assert text.startswith(failed)
    assert "'rustup-cargo' is not found inside the sandbox" in text and "--toolchain" in text
    assert explain_build_failure("error: linking failed") == "error: linking failed"


def test_check_bot_plays_every_player_count_on_both_walls() -> None:
    spec = load_bot(REPO / "bots" / "python-greedy")
    report = check_bot(spec, SandboxSettings(), QUICK)
    assert report.ok
    assert sorted(report.played) == [
        (n, v.value) for n in (2, 3, 4) for v in sorted(Variant, key=lambda v: v.value)
    ]


def test_check_bot_explains_a_line_that_answers_no_request(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    report = check_bot(quirky_bot("chatty", 0), SandboxSettings(), QUICK, player_counts=(2,))
    assert not report.ok
    assert {f.kind for _, f in report.faults} == {"malformed"}
    (why,) = report.explanations()
    assert '{"type": "ack"}' in why and "needs no reply" in why


def test_check_bot_warns_about_a_slow_handshake(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    # Sleeps 1.1 s of a 2 s init time: past half on a wall clock, with 0.9 s to spare under
    # load; on the CPU clock sleeping is not charged, so there is nothing to warn about.
    bot = quirky_bot("slow-start", 1100)
    wall = TimeControl(init_ms=2000, move_ms=2000, clock=ClockKind.WALL)
    report = check_bot(bot, SandboxSettings(), wall, player_counts=(2,))
    assert report.ok
    assert any("handshake was charged" in w and "2000 ms" in w for w in report.warnings())
    cpu = TimeControl(init_ms=2000, move_ms=2000)
    report = check_bot(bot, SandboxSettings(), cpu, player_counts=(2,))
    assert report.ok and not any("handshake" in w for w in report.warnings())


def test_check_bot_warns_about_a_slow_decision(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    # Sleeps 1.1 s once: past half on a wall clock, 0.9 s to spare; free on the CPU clock.
    bot = quirky_bot("slow-first", 1100)
    wall = TimeControl(move_ms=2000, clock=ClockKind.WALL)
    report = check_bot(bot, SandboxSettings(), wall, player_counts=(2,))
    assert report.ok
    (warning,) = report.warnings()
    assert "1 decision(s) were charged more than half" in warning and "of 2000 ms" in warning
    assert "wall clock" in warning
    cpu = TimeControl(move_ms=2000)
    report = check_bot(bot, SandboxSettings(), cpu, player_counts=(2,))
    assert report.ok and report.warnings() == []


def test_flush_advice_names_the_language_idiom() -> None:
    assert "System.out.println flushes" in advice("timeout", "java")
    assert "fflush(stdout)" in advice("timeout", "c")
    assert "std::endl" in advice("init", "C++")
    unknown = advice("timeout", "cobol")
    assert "fflush(stdout)" in unknown and "sys.stdout.flush()" in unknown
    assert "flush" not in advice("illegal", "java").lower()


def test_a_prebuilt_binary_without_build_passes(tmp_path: Path) -> None:
    """SPEC §15: prebuilt binaries are allowed (built here outside the sandbox)."""
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    folder = tmp_path / "prebuilt"
    folder.mkdir()
    source = REPO / "bots" / "c-greedy" / "bot.c"
    subprocess.run(
        ["gcc", "-O1", "-std=c11", "-o", str(folder / "bot"), str(source), "-lm"], check=True
    )
    (folder / "bot.toml").write_text('name = "prebuilt"\nlanguage = "c"\ncommand = "./bot"\n')
    folder.chmod(0o755)
    report = check_bot(load_bot(folder), SandboxSettings(), QUICK, player_counts=(2,))
    assert report.ok and report.build_s is None


def test_command_is_split_and_execd_not_run_by_a_shell(tmp_path: Path) -> None:
    """SPEC §15: `command` is split like a shell and exec'd: nothing is expanded."""
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "echo"\ncommand = "/bin/echo \'$HOME\' $HOME && ;"\n')
    folder.chmod(0o755)
    spec = load_bot(folder)
    out = run_in_sandbox(spec.manifest.argv, folder, Limits())
    assert out == "$HOME $HOME && ;\n"


def test_build_runs_through_bin_sh(tmp_path: Path) -> None:
    """SPEC §15: `build` is a /bin/sh -c string (variables, &&, redirections work)."""
    require_strict_sandbox()
    tmp_path.chmod(0o755)
    folder = _tool_bot(
        tmp_path, "X=shell; echo $X > made && test -s made", "/usr/bin/python3 bot.py"
    )
    built = build_bot(load_bot(folder))
    assert (built.spec.folder / "made").read_text() == "shell\n"  # built now or cached


def test_a_cgroup_oom_kill_is_a_crash_that_says_memory(
    quirky_bot: Callable[[str, int], BotSpec],
) -> None:
    """Shared memory escapes RLIMIT_DATA; the memory cgroup's OOM killer stops the bot
    with SIGKILL and nothing on stderr: the cgroup's oom_kill counter tells why."""
    require_strict_sandbox()
    spec = quirky_bot("shared-memory", 0)
    slow = TimeControl(move_ms=60_000)
    sandbox = SandboxSettings(limits=Limits(memory_bytes=256 * MIB))
    bot = BotSeat(build_bot(spec), time_control=slow, sandbox=sandbox)
    try:
        record = play_game([bot, RandomSeat()], GameSettings(time_control=slow), "oom").record
    finally:
        bot.close()
    (fault,) = record.faults
    assert fault.kind == "crash"
    assert "ran out of memory" in fault.message and "signal 9" in fault.message
