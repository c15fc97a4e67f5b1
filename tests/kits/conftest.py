"""Fixtures for the starter-kit tests: toolchain and sandbox requirements, bot folders."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.kits import Kit, missing_programs
from arena.referee import BotSpec, load_bot
from arena.sandbox import layers

# The fixture programs are bots, not test modules.
collect_ignore = ["fixtures"]

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def require_toolchain(kit: Kit) -> None:
    """Skip (or, with ARENA_REQUIRE_TOOLCHAINS=1 as in CI, fail) without the kit's toolchain."""
    missing = missing_programs(kit)
    if missing:
        message = f"the {kit.language} toolchain is not installed ({', '.join(missing)})"
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1":
            pytest.fail(f"{message} (ARENA_REQUIRE_TOOLCHAINS=1; .ci/run installs it)")
        pytest.skip(f"{message}: {kit.toolchain}")


def require_strict_sandbox() -> None:
    """Skip (or, with ARENA_REQUIRE_SANDBOX=1, fail) unless every sandbox layer is on."""
    off = [s for s in layers.detection().layers if not s.on]
    if off:
        message = "sandbox layers off here: " + ", ".join(f"{s.name} ({s.reason})" for s in off)
        if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1":
            pytest.fail(message + " (ARENA_REQUIRE_SANDBOX=1)")
        pytest.skip(message)


@pytest.fixture
def quirky_bot(tmp_path: Path) -> Callable[[str, int], BotSpec]:
    """``quirky_bot("chatty", 0)``: a bot folder running fixtures/quirky/bot.py MODE MS."""
    tmp_path.chmod(0o755)  # readable by the per-bot uid

    def make(mode: str, ms: int = 0) -> BotSpec:
        folder = tmp_path / f"{mode}-{ms}"
        folder.mkdir()
        shutil.copy(FIXTURES / "quirky" / "bot.py", folder / "bot.py")
        (folder / "bot.toml").write_text(
            f'name = "{mode}"\nlanguage = "python"\n'
            f'command = "/usr/bin/python3 bot.py {mode} {ms}"\n'
        )
        folder.chmod(0o755)
        return load_bot(folder)

    return make
