"""Per-bot compiler caches (issue 23): a warm rebuild reuses the bot's own cache, never
another bot's, within its cap, and never at play time."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from arena.errors import ArenaError
from arena.kits import kit_for, missing_programs, new_bot
from arena.play.build import (
    COMPILER_ARCHIVE,
    COMPILER_CAP_ENV,
    BuildError,
    build_bot,
    collect_compiler_caches,
    compiler_cache_for,
)
from arena.referee.manifest import load_bot
from arena.sandbox import Level, build, layers, spawn
from arena.sandbox.build import CompilerCache

# A stand-in compiler: its "object file" lives in the cache; "made" says whether the
# previous build's object was there, "objects" is what the cache held after this build.
FAKE_COMPILER = (
    'if [ -f "$ARENA_CACHE/obj" ]; then echo reused > made; else echo fresh > made; fi; '
    'cat src.txt >> "$ARENA_CACHE/obj" && cp "$ARENA_CACHE/obj" objects'
)


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    """Compiler caches are kept only under bubblewrap (it alone keeps bots apart)."""
    if not layers.detection().layer(layers.BWRAP).on:
        if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1":
            pytest.fail("bubblewrap is needed (ARENA_REQUIRE_SANDBOX=1)")
        pytest.skip("bubblewrap is not available")


def make_bot(folder: Path, build_command: str, name: str = "cached") -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(
        f"name = {name!r}\ncommand = \"/usr/bin/python3 bot.py\"\nbuild = '''{build_command}'''\n"
    )
    (folder / "bot.py").write_text("print('never played here')\n")
    (folder / "src.txt").write_text("version 1\n")
    return folder


def test_a_warm_rebuild_reuses_the_bots_own_compiler_cache(tmp_path: Path) -> None:
    bot = make_bot(tmp_path / "bot", FAKE_COMPILER)
    cache = tmp_path / "cache"
    cold = build_bot(load_bot(bot), cache=cache)
    assert (cold.spec.folder / "made").read_text() == "fresh\n"
    (bot / "src.txt").write_text("version 2\n")  # the one-line change
    warm = build_bot(load_bot(bot), cache=cache)
    assert warm.ran and warm.version != cold.version
    assert (warm.spec.folder / "made").read_text() == "reused\n"
    assert (warm.spec.folder / "objects").read_text() == "version 1\nversion 2\n"
    # Kept where the docs say, root-only, outside anything a bot sees.
    compiler = compiler_cache_for(load_bot(bot), cache)
    assert compiler is not None and compiler.archive.is_file()
    assert compiler.folder.parent == cache / "compiler"
    assert compiler.folder.stat().st_mode & 0o077 == 0


def test_two_bots_never_share_a_compiler_cache_or_its_builds(tmp_path: Path) -> None:
    """Same source, same command, different folders: different bots."""
    first = make_bot(tmp_path / "one" / "bot", FAKE_COMPILER)
    second = make_bot(tmp_path / "two" / "bot", FAKE_COMPILER)
    cache = tmp_path / "cache"
    built_first = build_bot(load_bot(first), cache=cache)
    built_second = build_bot(load_bot(second), cache=cache)
    assert built_second.ran, "the second bot was handed the first bot's build"
    assert built_second.spec.folder != built_first.spec.folder
    assert (built_second.spec.folder / "made").read_text() == "fresh\n"
    a = compiler_cache_for(load_bot(first), cache)
    b = compiler_cache_for(load_bot(second), cache)
    assert a is not None and b is not None and a.folder != b.folder
    # The server names its bots itself: one author's bot is one identity.
    assert compiler_cache_for(load_bot(first), cache, "server bot 7") == compiler_cache_for(
        load_bot(second), cache, "server bot 7"
    )


def test_a_hostile_build_can_neither_read_nor_write_another_bots_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    secret = f"azul-secret-{secrets.token_hex(8)}"
    victim_build = f'echo {secret} > "$ARENA_CACHE/secret"; {FAKE_COMPILER}'
    victim = make_bot(tmp_path / "victim", victim_build, name="victim")
    build_bot(load_bot(victim), cache=cache)
    victim_cache = compiler_cache_for(load_bot(victim), cache)
    assert victim_cache is not None
    before = hashlib.sha256(victim_cache.archive.read_bytes()).hexdigest()
    target = victim_cache.archive
    attack = (
        "{ grep -rEs 'azul-sec(r)et-[0-9a-f]{16}' /cache /tmp /bot /var /root /home "
        f"{cache} ; ls -la {cache}/compiler {target.parent}; "
        f"echo poisoned > {target}; echo poisoned > /cache/secret; "
        f"echo MOUNTS; cat /proc/self/mountinfo; }} > report.txt 2>&1; true"
    )
    attacker = make_bot(tmp_path / "attacker", attack, name="attacker")
    seen = build_bot(load_bot(attacker), cache=cache)
    report = (seen.spec.folder / "report.txt").read_text()
    assert secret not in report
    assert str(cache) not in report.split("MOUNTS")[1]  # nothing of it is mounted
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before
    # The victim's next build still finds its own cache, unpoisoned.
    (victim / "src.txt").write_text("version 2\n")
    again = build_bot(load_bot(victim), cache=cache)
    assert (again.spec.folder / "made").read_text() == "reused\n"
    with tarfile.open(victim_cache.archive) as archive:
        kept = archive.extractfile("secret")
        assert kept is not None and kept.read().decode().strip() == secret


def test_the_cap_fails_a_build_that_overfills_and_clears_a_full_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMPILER_CAP_ENV, "1")
    cache = tmp_path / "cache"
    flood = make_bot(tmp_path / "flood", 'dd if=/dev/zero of="$ARENA_CACHE/big" bs=64k count=64')
    with pytest.raises(BuildError, match=r"compiler cache limit of 1 MiB"):
        build_bot(load_bot(flood), cache=cache)
    # 600 KiB is past half the cap: kept once, then cleared before the next build.
    grow = f'dd if=/dev/zero of="$ARENA_CACHE/big" bs=1k count=600 2>/dev/null; {FAKE_COMPILER}'
    bot = make_bot(tmp_path / "bot", grow)
    build_bot(load_bot(bot), cache=cache)
    compiler = compiler_cache_for(load_bot(bot), cache)
    assert compiler is not None and compiler.archive.stat().st_size > 600 * 1024
    (bot / "src.txt").write_text("version 2\n")
    rebuilt = build_bot(load_bot(bot), cache=cache)
    assert (rebuilt.spec.folder / "made").read_text() == "fresh\n"


def test_a_bad_cap_setting_is_the_organisers_error_not_the_bots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMPILER_CAP_ENV, "lots")
    bot = make_bot(tmp_path / "bot", FAKE_COMPILER)
    with pytest.raises(ArenaError, match=r"ARENA_COMPILER_CACHE_MB='lots' is not a size") as err:
        build_bot(load_bot(bot), cache=tmp_path / "cache")
    assert not isinstance(err.value, BuildError)


def test_the_total_cap_removes_the_least_recently_saved_caches(tmp_path: Path) -> None:
    root = tmp_path / "compiler"
    for age, name in enumerate(["newest", "middle", "oldest"]):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / COMPILER_ARCHIVE).write_bytes(b"x" * 1000)
        stamp = time.time() - 3600 * age
        os.utime(folder / COMPILER_ARCHIVE, (stamp, stamp))
    assert collect_compiler_caches(root, 2000) == ["oldest"]
    assert collect_compiler_caches(root, 500, keep=root / "middle") == ["newest"]
    assert sorted(p.name for p in root.iterdir()) == ["middle"]


def test_without_bubblewrap_every_build_is_cold_in_a_private_folder(tmp_path: Path) -> None:
    """Nothing could keep bots out of a shared host folder: no cache is kept there."""
    bot = make_bot(tmp_path / "bot", FAKE_COMPILER + '; echo "$ARENA_CACHE" > where')
    bot.chmod(0o755)
    for path in bot.iterdir():
        path.chmod(0o644)
    cache = tmp_path / "cache"
    first = build_bot(load_bot(bot), Level.OFF, cache=cache)
    (bot / "src.txt").write_text("version 2\n")
    second = build_bot(load_bot(bot), Level.OFF, cache=cache)
    assert (second.spec.folder / "made").read_text() == "fresh\n"
    assert (first.spec.folder / "where").read_text() != (second.spec.folder / "where").read_text()
    assert not (cache / "compiler").exists()


def test_a_bot_at_play_time_sees_no_compiler_cache(tmp_path: Path) -> None:
    bot = make_bot(tmp_path / "bot", FAKE_COMPILER)
    built = build_bot(load_bot(bot), cache=tmp_path / "cache")
    proc = spawn(["/bin/sh", "-c", "ls -d /cache; env"], built.spec.folder)
    try:
        out = proc.stdout.read().decode()
        proc.wait(30)
    finally:
        proc.kill()
    assert "/cache" not in out and "GOCACHE" not in out and "ARENA_CACHE" not in out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("language", "verbose", "cold_mark", "warm_mark"),
    [
        ("go", ("go build", "go build -v"), r"(?m)^encoding/json$", r"(?m)^encoding/json$"),
        ("rust", ("--quiet", "-v"), r"Compiling serde_json", r"Compiling serde_json"),
    ],
)
def test_the_go_and_rust_kits_rebuild_warm_from_their_cache(
    tmp_path: Path, language: str, verbose: tuple[str, str], cold_mark: str, warm_mark: str
) -> None:
    """The real toolchains: the warm build compiles the bot, not the libraries again."""
    kit = kit_for(language)
    assert kit is not None
    if missing_programs(kit):
        pytest.skip(f"{language} is not installed")
    folder = new_bot(f"warm-{language}", language, tmp_path)
    command = load_bot(folder).manifest.build
    assert command is not None and verbose[0] in command
    command = command.replace(*verbose)
    saved = tmp_path / "saved.tar"
    cold = build(command, folder, tmp_path / "cold", compiler_cache=_cache(None, saved))
    assert cold.ok and cold.cache_saved, cold.output
    assert re.search(cold_mark, cold.output), cold.output
    source = folder / ("main.go" if language == "go" else "src/main.rs")
    source.write_text(source.read_text() + "\n// one more line\n")
    warm_saved = tmp_path / "warm.tar"
    warm = build(command, folder, tmp_path / "warm", compiler_cache=_cache(saved, warm_saved))
    assert warm.ok, warm.output
    assert "kept from this bot's last build" in warm.output
    assert not re.search(warm_mark, warm.output), warm.output
    shutil.rmtree(tmp_path / "cold")


def _cache(saved: Path | None, new: Path) -> CompilerCache:
    return CompilerCache(saved=saved, new=new, cap_bytes=512 << 20)


@pytest.mark.slow
def test_bench_builds_measures_a_real_warm_rebuild_of_the_go_kit() -> None:
    """``arena bench builds --json`` as a user runs it (the figures are not judged here)."""
    kit = kit_for("go")
    assert kit is not None
    if missing_programs(kit):
        pytest.skip("go is not installed")
    run = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "builds", "--kit", "go", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert run.returncode in (0, 1), run.stderr
    (go,) = json.loads(run.stdout)["kits"]
    assert go["kit"] == "go-greedy" and go["rebuilt"] is True
    assert go["compiler_cache_bytes"] > 1 << 20
    assert go["cold_s"] > 0 and go["warm_s"] > 0
