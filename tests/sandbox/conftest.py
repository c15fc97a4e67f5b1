"""Fixtures for the sandbox tests: bot folders, layer requirements, simulated machines."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arena.sandbox import layers, process

from .helpers import simulated

# The fixture programs are bots, not test modules: never import them (one is a fork bomb).
collect_ignore = ["fixtures"]

FIXTURES = Path(__file__).parent / "fixtures"
PYTHON = "/usr/bin/python3"

RequireLayer = Callable[..., None]
MakeBot = Callable[..., Path]


def _require(*names: str) -> None:
    """Skip (or, with ARENA_REQUIRE_SANDBOX=1, fail) unless every named layer is on."""
    found = {s.name: s for s in layers.detection().layers}
    for name in names:
        status = found[name]
        if not status.on:
            message = f"sandbox layer {name!r} is off here: {status.reason}"
            if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1":
                pytest.fail(message + " (ARENA_REQUIRE_SANDBOX=1)")
            pytest.skip(message)


@pytest.fixture
def require_layer() -> RequireLayer:
    """``require_layer("bubblewrap", ...)``: skip or fail unless the layers are on."""
    return _require


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A world-readable scratch folder: other uids must be able to enter it."""
    root = Path(tempfile.mkdtemp(prefix="arena-sbx-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def make_bot(world_dir: Path) -> MakeBot:
    """``make_bot("name", "echo.py", ...)``: a world-readable bot folder with fixtures."""

    def make(name: str, *files: str) -> Path:
        folder = world_dir / name
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        for f in files:
            target = folder / f
            shutil.copyfile(FIXTURES / f, target)
            target.chmod(0o644)
        return folder

    return make


@pytest.fixture
def simulate(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``simulate("bubblewrap")``: pretend those layers are missing for this test."""

    def apply(*off: str) -> None:
        fake = simulated(*off)
        monkeypatch.setattr(layers, "detection", lambda: fake)
        if layers.UID in off:  # a simulated machine without root: allow what it would run
            monkeypatch.setattr(process, "ROOT_GUARD", False)

    return apply
