"""Breaches before and around the game: hostile builds, manifests, per-uid kernel state,
host details, terminal control characters, transcripts, the uid pool.

Each test drives the arena the way an organiser does (``arena check-bot``, ``arena
match``) or the sandbox directly, with a fixture from ``fixtures/`` (see its README).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.play.build import BuildError, build_bot
from arena.protocol.messages import GameStart
from arena.referee import BotSeat, ManifestError, SandboxSettings, load_bot
from arena.sandbox import Level, SandboxBusy, layers, reaper, spawn, uids
from arena.sandbox.stage import remove_tree
from arena.textsafe import NEUTRALISED

from .conftest import require_full_sandbox
from .hostile_support import FIXTURES, REPO, copy_bot, make_public, snapshot

BUILDS = FIXTURES / "builds"


def unsafe_characters(text: str) -> list[str]:
    """Control, format and separator characters (what textsafe neutralises), newline
    aside."""
    return sorted({c for c in text if c != "\n" and unicodedata.category(c) in NEUTRALISED})


def arena(*args: str, cache: Path, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the arena CLI as a user would; a hang fails the test instead of blocking it."""
    env = {**os.environ, "ARENA_BUILD_CACHE": str(cache)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "arena.cli", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"arena {' '.join(args)} hung for {timeout_s} s: {exc.output!r}")


def harmless_sandbox() -> str:
    """The sandbox level for fixtures that are harmless under bubblewrap alone (hostile
    builds, escapes on the terminal, floods): ``strict`` where every layer is on, else
    ``auto``, which is how a non-root user runs them.  Needs bubblewrap: it holds the
    build area's size bound and loads the seccomp filter."""
    found = layers.detection()
    if all(s.on for s in found.layers):
        return "strict"
    if not found.layer(layers.BWRAP).on:
        require_full_sandbox()  # skips (or fails under ARENA_REQUIRE_SANDBOX=1)
    return "auto"


def own_uids() -> bool:
    return layers.detection().layer(layers.UID).on


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_public(tmp_path)
    return tmp_path


@pytest.fixture
def public_cache() -> Iterator[Path]:
    """A build cache every uid can reach through its ancestors (without bubblewrap a bot
    needs that; pytest's own tmp folders may be made private by another session)."""
    folder = Path(tempfile.mkdtemp(prefix="azul-arena-test-cache-", dir="/var/tmp"))
    folder.chmod(0o755)
    try:
        yield folder / "cache"
    finally:
        remove_tree(folder)


def build_fixture(name: str, root: Path) -> Path:
    return copy_bot(BUILDS / name, root / "bots")


def special_files(folder: Path) -> list[str]:
    """Setuid/setgid files, other-writable entries, non-regular files under ``folder``."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            mode = st.st_mode
            if stat.S_ISLNK(mode):
                continue
            if mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(f"{path}: setuid/setgid {stat.filemode(mode)}")
            if mode & stat.S_IWOTH:
                found.append(f"{path}: writable by others {stat.filemode(mode)}")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append(f"{path}: {stat.filemode(mode)}")
    return found


# ---------------------------------------------------------------- builds


def test_a_hostile_build_runs_as_a_bot_uid_and_leaves_no_setuid_file(root: Path) -> None:
    """Breach 1: the build ran as root, in the submitted folder, and left a setuid-root
    shell there.  Now it runs as a bot uid on a staged copy whose result is checked."""
    level = harmless_sandbox()
    bot = build_fixture("setuid-shell", root)
    before = snapshot(bot)
    cache = root / "cache"
    run = arena("check-bot", str(bot), "--sandbox", level, "--games", "1", cache=cache)
    assert run.returncode == 0, run.stdout + run.stderr
    assert snapshot(bot) == before, "the build changed the submitted folder"
    assert not special_files(root), special_files(root)
    (entry,) = [d for d in cache.iterdir() if d.name != "compiler" and d.name[:4] != "tmp-"]
    built = entry / "bot"
    build_uid = int((built / "build-uid.txt").read_text())
    assert build_uid != 0
    if own_uids():
        assert build_uid in range(uids.UID_BASE, uids.UID_BASE + 4000)
    assert (built / "rootsh").stat().st_mode & 0o7777 == 0o555  # a plain, read-only copy
    assert not (built / "open").stat().st_mode & 0o222  # read-only for everyone
    assert not list(cache.glob("tmp-*")), "staging leftovers in the cache"


@pytest.mark.parametrize(
    ("name", "limit"),
    [("fill-disk", r"build area limit of 256 MiB"), ("slow-build", r"time limit of 2 s")],
)
def test_a_build_past_its_limits_fails_naming_the_limit(name: str, limit: str, root: Path) -> None:
    """Breach 2: a build wrote 300 MB (or never ended) and passed.  Now it works in a
    bounded area with a time limit, fails with the limit named, and leaves nothing."""
    level = harmless_sandbox()
    bot = build_fixture(name, root)
    before = snapshot(bot)
    cache = root / "cache"
    began = time.monotonic()
    run = arena("check-bot", str(bot), "--sandbox", level, cache=cache)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert re.search(limit, output), output
    assert "FAIL" in output and f"building {name} failed" in output
    assert time.monotonic() - began < 60
    assert snapshot(bot) == before
    assert list(cache.iterdir()) == [], "something of the failed build remains"


@pytest.mark.parametrize("name", ["fifo-manifest", "zero-manifest"])
def test_a_build_cannot_change_what_the_arena_reads(name: str, root: Path) -> None:
    """Breach 3: a build replaced bot.toml with a FIFO (or a link to /dev/zero) and every
    later load hung.  The build's result is refused, and the manifest the arena reads is
    the submitted one, read once, never blocking."""
    level = harmless_sandbox()
    bot = build_fixture(name, root)
    cache = root / "cache"
    for _ in range(2):  # a second check-bot (a resume) must not hang either
        run = arena("check-bot", str(bot), "--sandbox", level, cache=cache, timeout_s=60)
        output = run.stdout + run.stderr
        assert run.returncode == 1, output
        assert "refused" in output and "bot.toml" in output, output
    assert (bot / "bot.toml").is_file() and not (bot / "bot.toml").is_symlink()
    assert load_bot(bot).name == name


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_manifest_that_is_not_a_small_regular_file_is_refused_at_once(
    kind: str, tmp_path: Path
) -> None:
    """load_bot never follows a symlink, never blocks on a FIFO, never reads a huge file."""
    folder = tmp_path / kind
    folder.mkdir()
    manifest = folder / "bot.toml"
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "dev-zero":
        manifest.symlink_to("/dev/zero")
    else:
        manifest.write_text('name = "x"\ncommand = "true"\n' + "#" * 100_000 + "\n")
    began = time.monotonic()
    with pytest.raises(ManifestError, match=r"bot\.toml"):
        load_bot(folder)
    assert time.monotonic() - began < 1


def test_a_submission_with_special_files_is_refused(root: Path) -> None:
    """The staging rules apply to every submission, built or not."""
    folder = root / "fifo-bot"
    shutil.copytree(REPO / "bots" / "python-random", folder)
    os.mkfifo(folder / "pipe")
    with pytest.raises(BuildError, match=r"'pipe' is a FIFO"):
        build_bot(load_bot(folder), cache=root / "cache")
    (folder / "pipe").unlink()
    (folder / "escape").symlink_to("/etc/passwd")
    with pytest.raises(BuildError, match=r"symlink that leaves the folder"):
        build_bot(load_bot(folder), cache=root / "cache")


def test_builds_are_cached_across_runs_and_a_damaged_entry_is_rebuilt(root: Path) -> None:
    """Issue 9: an unchanged bot is built once; the cache is checked on every use."""
    level = Level(harmless_sandbox())
    bot = copy_bot(REPO / "bots" / "c-greedy", root / "bots")
    cache = root / "cache"
    first = build_bot(load_bot(bot), level, cache=cache)
    again = build_bot(load_bot(bot), level, cache=cache)
    assert first.ran and not again.ran
    assert again.spec.folder == first.spec.folder and again.version == first.version
    assert not os.access(first.spec.folder / "bot", os.W_OK) or os.geteuid() == 0
    assert first.spec.folder.stat().st_mode & 0o222 == 0
    # Damage the entry (as a disk error or a meddler would): it is never reused.
    target = first.spec.folder / "bot.c"
    first.spec.folder.chmod(0o755)  # (the owner can; bots cannot)
    target.chmod(0o644)
    target.write_text("/* azul-damaged */ int main(void) { return 1; }\n")
    rebuilt = build_bot(load_bot(bot), level, cache=cache)
    assert rebuilt.ran and rebuilt.version == first.version
    assert "azul-damaged" not in (rebuilt.spec.folder / "bot.c").read_text()
    # A changed source is a new version.
    (bot / "bot.c").write_text((bot / "bot.c").read_text() + "\n/* v2 */\n")
    changed = build_bot(load_bot(bot), level, cache=cache)
    assert changed.ran and changed.version != first.version


# ---------------------------------------------------------------- never root


@pytest.mark.parametrize("level", ["strict", "off"])
def test_nothing_runs_as_root_for_a_bot(level: str, root: Path, public_cache: Path) -> None:
    """Neither its build nor its play, whatever the sandbox level."""
    if os.geteuid() != 0:
        pytest.skip("the arena runs as root only when root runs it")
    require_full_sandbox()
    bot = build_fixture("setuid-shell", root)
    (bot / "bot.py").write_text(
        "import os, sys\nfrom azulbot import log, run\n"
        "log(f'uid={os.getuid()} euid={os.geteuid()}')\nrun('setuid-shell')\n"
    )
    out = root / f"out-{level}"
    cache = public_cache
    run = arena(
        "match",
        str(bot),
        "bots/python-random",
        "--sandbox",
        level,
        "--out",
        str(out),
        cache=cache,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (out / "seat0-setuid-shell.stderr.log").exists(), (sorted(out.iterdir()), run.stdout)
    log = (out / "seat0-setuid-shell.stderr.log").read_text()
    uid, euid = (int(v) for v in re.findall(r"uid=(\d+) euid=(\d+)", log)[0])
    assert uid != 0 and euid != 0, log
    (noted,) = cache.glob("*/bot/build-uid.txt")
    assert int(noted.read_text()) != 0
    assert not special_files(cache), special_files(cache)  # no setuid shell either way


# ---------------------------------------------------------------- per-uid state


def _state(proc_out: int, timeout_s: float = 20) -> dict[str, dict[str, object]]:
    """Read the uid_state.py report (kind -> result) up to its ``done`` line."""
    found: dict[str, dict[str, object]] = {}
    buf = b""
    deadline = time.monotonic() + timeout_s
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            item = json.loads(line)
            if "done" in item:
                found["done"] = item
                return found
            found[item["kind"]] = item
        left = deadline - time.monotonic()
        assert left > 0, f"no report from uid_state.py: {buf!r}"
        if select.select([proc_out], [], [], left)[0]:
            chunk = os.read(proc_out, 65536)
            assert chunk, f"uid_state.py ended early: {buf!r}"
            buf += chunk


def test_no_per_uid_kernel_state_outlives_a_bot_or_crosses_to_another(root: Path) -> None:
    """Breach 4: a key added inside the sandbox survived it (same uid later, other uids
    through /proc/keys).  Keyrings are denied by seccomp; SysV IPC, POSIX message queues,
    /dev/shm and /tmp are private to each sandbox."""
    level = Level(harmless_sandbox())
    folder = root / "state"
    folder.mkdir(mode=0o755)
    shutil.copy(FIXTURES / "state" / "uid_state.py", folder / "uid_state.py")
    (folder / "uid_state.py").chmod(0o644)
    command = ["/usr/bin/python3", "uid_state.py"]
    slot = 600 + os.getpid() % 300
    with spawn([*command, "leave", "stay"], folder, level=level, slot=slot) as first:
        left = _state(first.stdout.fileno())
        assert left["done"]["done"] == (first.uid if own_uids() else os.getuid())
        assert not left["keyring"]["worked"], left["keyring"]  # seccomp: EPERM
        assert left["sysv-shm"]["worked"] and left["tmp"]["worked"], left  # inside only
        with spawn([*command, "find"], folder, level=level, slot=slot + 1) as other:
            assert other.uid != first.uid or not own_uids()
            seen = _state(other.stdout.fileno())
        # At most the uid's two empty keyrings (left by an older arena, then cleared).
        keys_while_running = reaper.keys_of_uid(first.uid) if first.uid else 0
    later_uid = None
    for _attempt in range(5):  # the same slot gives the same uid unless another arena holds it
        with spawn([*command, "find"], folder, level=level, slot=slot) as later:
            later_uid = later.uid
            after = _state(later.stdout.fileno())
        if later_uid == first.uid:
            break
    assert later_uid == first.uid, "could not get the same uid again"
    if not own_uids():  # every bot runs as the user: their keys are not the bots'
        keys_while_running = 0
    for name, report in (("concurrent bot of another uid", seen), ("later bot", after)):
        leaked = {k: v for k, v in report.items() if k != "done" and v["worked"]}
        assert not leaked, f"{name} found state: {leaked}"
    assert keys_while_running <= 2, f"the bot's uid owns {keys_while_running} keys"


def test_the_strict_sandbox_refuses_the_kernel_surface_a_bot_never_needs(root: Path) -> None:
    """Issue 22: ``io_uring_setup`` worked inside the strict sandbox (the filter was a
    three-call denylist).  The default-deny allowlist refuses io_uring, bpf,
    perf_event_open, userfaultfd, mounts, namespaces, kexec, ptrace, keyrings, modules,
    reboot and swap with EPERM; each is called with arguments the kernel would reject
    otherwise (EINVAL/EFAULT), so the EPERM is the filter's."""
    require_full_sandbox()
    folder = root / "surface"
    folder.mkdir(mode=0o755)
    shutil.copy(FIXTURES / "kernel-surface" / "surface.py", folder / "surface.py")
    (folder / "surface.py").chmod(0o644)
    with spawn(["/usr/bin/python3", "surface.py"], folder, level=Level.STRICT) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.wait(20)
    assert line, proc.stderr_tail()
    report = json.loads(line)
    found = report["errno"]
    assert found.pop("getpid") == 0  # the control: an allowed call works
    refused = {name: code for name, code in found.items() if code == errno.EPERM}
    assert refused == found, f"reached the kernel: {sorted(set(found) - set(refused))}"
    assert {"io_uring_setup", "bpf", "perf_event_open", "userfaultfd"} <= set(refused)


def test_without_namespaces_the_reaper_clears_what_a_uid_left(root: Path) -> None:
    """``--sandbox off`` as root: no ipc namespace, no seccomp, but still a bot uid.
    What the bot leaves in host-wide kernel state (SysV IPC, /dev/shm, its keyrings) is
    removed when it is killed, so the next bot of that uid finds nothing.  (Files it
    writes elsewhere, e.g. /tmp, and POSIX message queues while /dev/mqueue is not
    mounted are out of reach: docs/security.md says so.)"""
    if not own_uids():
        pytest.skip("per-bot uids need root")
    folder = Path(tempfile.mkdtemp(prefix="azul-hostile-state-", dir="/var/tmp"))
    try:
        folder.chmod(0o755)
        shutil.copy(FIXTURES / "state" / "uid_state.py", folder / "uid_state.py")
        (folder / "uid_state.py").chmod(0o644)
        command = ["/usr/bin/python3", "uid_state.py"]
        slot = 300 + os.getpid() % 300
        with spawn([*command, "leave", "stay"], folder, level=Level.OFF, slot=slot) as first:
            left = _state(first.stdout.fileno())
            uid = first.uid
            assert uid is not None and uid != 0
            made = {k for k, v in left.items() if k != "done" and v["worked"]}
            assert {"keyring", "sysv-shm", "sysv-msg", "sysv-sem", "dev-shm"} <= made, left
            assert reaper.sysv_objects_of_uid(uid)
        assert not reaper.sysv_objects_of_uid(uid), "SysV objects of the uid survived it"
        assert not [e for e in os.scandir("/dev/shm") if e.stat().st_uid == uid]
        with spawn([*command, "find"], folder, level=Level.OFF, slot=slot) as later:
            after = _state(later.stdout.fileno())
            assert later.uid == uid, "another arena holds the uid: rerun"
        for kind in ("keyring", "sysv-shm", "sysv-msg", "sysv-sem", "dev-shm"):
            assert not after[kind]["worked"], (kind, after[kind])
    finally:
        remove_tree(folder)
        with contextlib.suppress(OSError):
            os.unlink("/tmp/azul-hostile-state")
        ctypes.CDLL(None).mq_unlink(b"/azul-hostile-state")  # out of the reaper's reach


# ---------------------------------------------------------------- shown text


def test_bot_text_reaches_no_terminal_as_control_characters(root: Path) -> None:
    """Breach 7: author/version in check-bot, stderr tail and last line in match; issue 22:
    zero-width and other format characters (Trojan Source) too."""
    level = harmless_sandbox()
    bot = copy_bot(FIXTURES / "terminal-escapes", root / "bots")
    cache = root / "cache"
    check = arena("check-bot", str(bot), "--sandbox", level, "--games", "1", cache=cache)
    match = arena(
        "match",
        str(bot),
        "bots/python-random",
        "--sandbox",
        level,
        "--out",
        str(root / "out"),
        cache=cache,
    )
    for run in (check, match):
        text = run.stdout + run.stderr
        assert "azul-hostile" in text, text  # the strings are shown...
        assert "\\x1b" in text, text  # ...with their control characters visible
        assert "\\u202e" in text and "\\u200b" in text and "\\U000e0041" in text, text
        bad = unsafe_characters(text)
        assert not bad, f"raw control/format characters reached the terminal: {bad!r}\n{text!r}"
    assert "malformed" in match.stdout


def test_report_outputs_show_control_characters_escaped() -> None:
    """Markdown and HTML (and the terminal leaderboard) get text through one sanitiser."""
    import pandas as pd

    from arena.report.format import fault_log_display
    from arena.report.html import _table_html as html_table
    from arena.report.markdown import markdown_table

    log = pd.DataFrame(
        [
            {
                "game_id": "g",
                "bot": "b",
                "seat": 0,
                "kind": "malformed",
                "round": 1,
                "forfeit": True,
                "message": "bad\x1b]52;c;eA==\x07 \x9b2J \u202eevil\u2066 zero\u200bwidth\ufeff",
            }
        ]
    )
    shown = fault_log_display(log)
    for rendered in (markdown_table(shown), html_table(shown)):
        assert "\\x1b]52" in rendered and "\\x9b" in rendered
        assert "\\u202eevil\\u2066" in rendered and "zero\\u200bwidth\\ufeff" in rendered
        assert not unsafe_characters(rendered)


# ---------------------------------------------------------------- transcripts


@pytest.mark.slow
def test_match_transcript_is_capped_with_a_count_of_what_was_dropped(root: Path) -> None:
    """Breach 6: ignored late answers padded to 60 KB made a 48 MiB transcript."""
    level = harmless_sandbox()
    from arena.referee.transcript import DEFAULT_CAP

    bot = copy_bot(FIXTURES / "padded-late-answers", root / "bots")
    out = root / "out"
    run = arena(
        "match",
        str(bot),
        "bots/python-random",
        "--sandbox",
        level,
        "--out",
        str(out),
        "--transcript",
        "--time-per-move",
        "3000",
        cache=root / "cache",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    transcript = out / "seat0-padded-late-answers.transcript"
    size = transcript.stat().st_size
    assert size <= DEFAULT_CAP + 1024, size
    tail = transcript.read_bytes()[-300:].decode()
    dropped = re.search(r"cap of \d+ bytes reached: (\d+) lines \((\d+) bytes\)", tail)
    assert dropped and int(dropped.group(1)) > 0, tail


# ---------------------------------------------------------------- the uid pool


def test_an_exhausted_uid_pool_is_an_arena_error_never_a_bot_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every per-bot uid held by other bots: the game stops with SandboxBusy (which the
    CLI reports and a resume recovers from); the bot is not charged an ``init`` fault."""
    if not layers.detection().layer(layers.UID).on:
        pytest.skip("per-bot uids need root")
    only = uids.UID_BASE + 3999
    monkeypatch.setattr(uids, "candidates", lambda slot: [only])
    monkeypatch.setattr(uids, "WAIT_S", 0.3)
    held = uids.lease(0, None)
    try:
        seat = BotSeat(
            build_bot(load_bot(REPO / "bots" / "python-random")), sandbox=SandboxSettings()
        )
        start = GameStart(
            game_id="g",
            seat=0,
            n_players=2,
            variant="coloured",
            players=["a", "b"],
            round_limit=100,
        )
        began = time.monotonic()
        with pytest.raises(SandboxBusy, match="in use by other bots"):
            seat.begin(start)
        assert time.monotonic() - began >= 0.3  # it waited for a uid first
        seat.close()
    finally:
        held.release()
