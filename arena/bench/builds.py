"""``arena bench builds``: a cold build, then a one-line change rebuilt warm, per kit.

What a bot author waits for while iterating: each kit (Go, Rust) is copied as
``arena new-bot`` does, built with an empty build cache (cold: no compiler cache
either), changed by one line of code and built again through the same path as
``arena check-bot`` (warm: only the bot's own compiler cache is reused; the finished
build cache cannot help, the source changed).  Both in one run, under the same load.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.kits import kit_for, missing_programs, new_bot
from arena.play.build import build_bot, compiler_cache_for
from arena.referee.manifest import load_bot
from arena.sandbox import DEFAULT_LEVEL, Level

WARM_GOAL_S = 3.0
"""The issue's goal for a warm one-line rebuild of the Go and Rust kits."""
SOURCES = {"go": "main.go", "rust": "src/main.rs"}
"""Per kit language: the file holding the bot's name, the line the benchmark changes."""


def _timed_build(folder: Path, cache: Path, level: Level) -> dict[str, Any]:
    began = time.monotonic()
    built = build_bot(load_bot(folder), level, cache=cache)
    return {
        "seconds": round(time.monotonic() - began, 3),
        "ran": built.ran,
        "binary": (built.spec.folder / "bot").read_bytes(),
    }


def bench_kit(language: str, work: Path, level: Level = DEFAULT_LEVEL) -> dict[str, Any]:
    """Cold build, one-line edit, warm build of the ``language`` kit, under ``work``."""
    kit = kit_for(language)
    assert kit is not None
    missing = missing_programs(kit)
    if missing:
        return {"kit": kit.folder, "skipped": f"not installed: {', '.join(missing)}"}
    cache = work / "build-cache"
    folder = new_bot(f"bench-{language}", language, work)
    cold = _timed_build(folder, cache, level)
    compiler = compiler_cache_for(load_bot(folder), cache)
    kept = compiler.archive.stat().st_size if compiler and compiler.archive.exists() else 0
    # The one-line change: the bot's name, which the binary holds (proof it was rebuilt).
    source = folder / SOURCES[language]
    text = source.read_text(encoding="utf-8")
    old, new = f'"{folder.name}"', f'"{folder.name}-edited"'
    if text.count(old) != 1:
        raise ArenaError(f"bench builds: {source} no longer names the bot once as {old}")
    source.write_text(text.replace(old, new), encoding="utf-8")
    warm = _timed_build(folder, cache, level)
    rebuilt = warm["ran"] and new[1:-1].encode() in warm["binary"]
    return {
        "kit": kit.folder,
        "edit": f"{SOURCES[language]}: {old} -> {new}",
        "cold_s": cold["seconds"],
        "warm_s": warm["seconds"],
        "speedup": round(cold["seconds"] / warm["seconds"], 1) if warm["seconds"] else None,
        "compiler_cache_bytes": kept,
        "rebuilt": rebuilt,
        "goal_met": rebuilt and warm["seconds"] <= WARM_GOAL_S,
    }


def bench_builds(
    languages: tuple[str, ...] = ("go", "rust"), level: Level = DEFAULT_LEVEL
) -> dict[str, Any]:
    """Every kit in ``languages``, each in a fresh folder and build cache."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="arena-bench-builds-") as tmp:
        os.chmod(tmp, 0o755)  # the build's uid reads the bot folder through it
        kits = [bench_kit(lang, Path(tmp) / lang, level) for lang in languages]
    return {
        "benchmark": "builds",
        "sandbox": level.value,
        "cores": os.cpu_count(),
        "load_average_before": round(load, 2),
        "warm_goal_s": WARM_GOAL_S,
        "kits": kits,
        "goal_met": all(k.get("goal_met", True) for k in kits),
    }


def print_builds(result: dict[str, Any], out: Callable[[str], object]) -> None:
    out(
        f"builds (sandbox {result['sandbox']}, {result['cores']} cores, load "
        f"{result['load_average_before']} before): cold build, then a one-line change"
    )
    for kit in result["kits"]:
        if "skipped" in kit:
            out(f"  {kit['kit']:<12} skipped ({kit['skipped']})")
            continue
        out(
            f"  {kit['kit']:<12} cold {kit['cold_s']:6.1f} s   warm {kit['warm_s']:5.1f} s   "
            f"x{kit['speedup']}   compiler cache {kit['compiler_cache_bytes'] / 2**20:.0f} MiB"
            + ("" if kit["rebuilt"] else "   NOT REBUILT")
        )
    verdict = "met" if result["goal_met"] else "NOT met"
    out(f"  goal: a warm rebuild in at most {result['warm_goal_s']:g} s: {verdict}")
