"""Which bot, built: the one place a bot reference becomes something that can be launched.

A reference is a bot folder (or its loaded :class:`~arena.referee.manifest.BotSpec`), or a
version the competition store says it built. Either way the caller receives a
:class:`~arena.play.build.Built`: the staged, sandbox-built, read-only copy (cached by
content across runs) plus the submitted folder it came from (what a Ray node is sent as a
bundle). :class:`~arena.referee.seats.BotSeat` launches nothing else, so no caller can start
a bot from its source folder by mistake (``arena play`` once did: a compiled bot then
failed its handshake and random moves were played under its name).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from arena.errors import ArenaError
from arena.play.build import BuildError, build_bot
from arena.referee.manifest import (
    BotManifest,
    BotSpec,
    Built,
    ManifestError,
    load_bot,
    unique_names,
)
from arena.referee.toolchains import explain_build_failure
from arena.sandbox import DEFAULT_LEVEL, BuildLimits, Level

__all__ = ["BotNotReady", "Built", "ready_bot", "ready_bots", "stored_bot"]


class BotNotReady(ArenaError):
    """A bot could not be made ready to launch: a bad folder or manifest, a failed build,
    or a stored build that is gone. The message says which and why."""


def ready_bot(
    ref: Path | str | BotSpec,
    level: Level = DEFAULT_LEVEL,
    *,
    toolchains: tuple[str, ...] = (),
    limits: BuildLimits | None = None,
    cache: Path | None = None,
) -> Built:
    """Load, stage and build ``ref`` in the sandbox (or take it from the build cache).

    Raises :class:`BotNotReady` with the user's message (a build failure is explained
    with the declared ``toolchains`` in mind)."""
    try:
        spec = ref if isinstance(ref, BotSpec) else load_bot(Path(ref))
    except ManifestError as exc:
        raise BotNotReady(str(exc)) from None
    try:
        return build_bot(spec, level, limits=limits, cache=cache, toolchains=toolchains)
    except BuildError as exc:
        raise BotNotReady(explain_build_failure(str(exc), toolchains)) from None


def ready_bots(
    refs: Sequence[Path | str | BotSpec],
    level: Level = DEFAULT_LEVEL,
    *,
    toolchains: tuple[str, ...] = (),
    on_built: Callable[[Built], None] | None = None,
) -> list[Built]:
    """:func:`ready_bot` for each reference, in order; a folder named twice is built once
    and two different bots with one name are refused (results could not tell them apart).
    ``on_built`` hears of each build that ran now (not the cached ones)."""
    try:
        specs = [r if isinstance(r, BotSpec) else load_bot(Path(r)) for r in refs]
        unique_names(specs)
    except ManifestError as exc:
        raise BotNotReady(str(exc)) from None
    done: dict[Path, Built] = {}
    for spec in specs:
        if spec.folder not in done:
            built = done[spec.folder] = ready_bot(spec, level, toolchains=toolchains)
            if on_built is not None and built.ran:
                on_built(built)
    return [done[s.folder] for s in specs]


def stored_bot(
    built_path: Path, manifest: BotManifest, version: str, source: Path | None = None
) -> Built:
    """A version the competition's build worker built earlier (with :func:`ready_bot`),
    from what the store kept of it: its built copy, manifest and version, and the
    submitted folder. Raises :class:`BotNotReady` when the built copy is gone."""
    if not built_path.is_dir():
        raise BotNotReady(f"the built copy of {manifest.name} is missing: {built_path}")
    spec = BotSpec(folder=built_path, manifest=manifest)
    return Built(spec, 0.0, False, version, source or built_path)
