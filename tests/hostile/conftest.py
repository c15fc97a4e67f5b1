"""Fixtures for the hostile-bot tests.

The bots under ``fixtures/`` are programs, not test modules (one is a fork bomb): the
suite-wide ``collect_ignore_glob`` keeps pytest from importing them.
"""

from __future__ import annotations

import os

import pytest

from arena.sandbox import layers

collect_ignore = ["fixtures"]

ALL_LAYERS = (layers.BWRAP, layers.UID, layers.RLIMITS, layers.CGROUPS)


def require_full_sandbox() -> None:
    """Skip (or, with ARENA_REQUIRE_SANDBOX=1, fail) unless every sandbox layer is on.

    Hostile bots are only safe to run inside the whole sandbox: bubblewrap, a per-bot
    uid, rlimits and cgroups (the tournaments run with ``--sandbox strict``).
    """
    found = {s.name: s for s in layers.detection().layers}
    off = [found[name] for name in ALL_LAYERS if not found[name].on]
    if off:
        message = "hostile bots need every sandbox layer; off here: " + "; ".join(
            f"{s.name} ({s.reason})" for s in off
        )
        if os.environ.get("ARENA_REQUIRE_SANDBOX") == "1":
            pytest.fail(message + " (ARENA_REQUIRE_SANDBOX=1)")
        pytest.skip(message)


@pytest.fixture(scope="module")
def full_sandbox() -> None:
    require_full_sandbox()
