"""From an unpacked submission to a verdict: build it in the build sandbox with the
competition's limits, then run ``check-bot`` on it.

Pure: no store, no web.  The build worker (``arena/server/service.py``) calls
:func:`process_submission` on the folder :func:`arena.server.uploads.unpack_upload`
returned and records the outcome.  Anything wrong with the bot (manifest, build, a
protocol mistake in the games) is a rejected outcome with a readable verdict and the
full log; only an arena-side problem (the uid pool exhausted, a sandbox layer missing
under ``strict``, the build cache unusable) raises :class:`ArenaError`, so the
submission can be retried instead of wrongly rejected.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from arena.competition.config import UploadLimits
from arena.engine import Variant
from arena.errors import ArenaError
from arena.play.build import BuildError, build_bot
from arena.play.checkbot import PLAYER_COUNTS, CheckReport, check_bot
from arena.play.verdict import check_lines, first_problem, passed
from arena.referee.manifest import Built
from arena.referee.seats import SandboxSettings
from arena.referee.settings import PlaySettings
from arena.referee.toolchains import explain_build_failure
from arena.sandbox import SandboxBusy, SandboxError, SandboxUnavailable, check_level
from arena.server.uploads import UploadRejected, validate_manifest
from arena.textsafe import visible

MAX_LOG_CHARS = 64 * 1024
"""The log kept per submission (its tail: the end of a build says why it failed)."""
MAX_VERDICT_CHARS = 400


@dataclass(frozen=True)
class SubmissionOutcome:
    """What became of a submission: ``ok`` (playable, ``built`` set) or rejected, with a
    one-line ``verdict`` for the author and the full ``log`` (build and check-bot)."""

    ok: bool
    verdict: str
    log: str
    built: Built | None = None
    content_hash: str | None = None
    meta: dict[str, object] = field(default_factory=dict)


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, text: str) -> None:
        self.lines.append(visible(text, multiline=True))

    def text(self) -> str:
        full = "\n".join(self.lines) + "\n"
        if len(full) > MAX_LOG_CHARS:
            full = "[… earlier lines cut]\n" + full[-MAX_LOG_CHARS:]
        return full


def _one_line(text: str) -> str:
    line = visible(" ".join(text.split()))
    return line if len(line) <= MAX_VERDICT_CHARS else line[: MAX_VERDICT_CHARS - 1] + "…"


def sandbox_for(settings: PlaySettings) -> SandboxSettings:
    """The sandbox submissions build and play in; ArenaError when ``strict`` is asked
    for and a layer is missing (the organiser's problem, never the author's)."""
    try:
        check_level(settings.sandbox)
    except SandboxUnavailable as exc:
        raise ArenaError(str(exc)) from None
    return SandboxSettings(
        level=settings.sandbox, toolchains=settings.toolchains, python_env=settings.python_env
    )


def _arena_side(exc: BaseException) -> bool:
    """A BuildError caused by the arena (uid pool, missing layer, cache folder)."""
    cause = exc.__cause__ or exc.__context__
    return isinstance(cause, SandboxBusy | SandboxUnavailable) or (
        isinstance(cause, OSError) and not isinstance(cause, SandboxError)
    )


def process_submission(
    folder: Path,
    settings: PlaySettings,
    limits: UploadLimits,
    *,
    games_per_setting: int = 1,
    identity: str | None = None,
    player_counts: tuple[int, ...] = PLAYER_COUNTS,
    walls: tuple[Variant, ...] = tuple(Variant),
) -> SubmissionOutcome:
    """Build ``folder`` (an unpacked upload) under ``limits`` and check it with
    ``check-bot`` (2-4 players, both walls, against the arena's random policy).
    ``identity`` names the bot whose compiler cache the build reuses (see ``build_bot``).

    Never raises for a bot problem; raises :class:`ArenaError` for an arena problem."""
    log = _Log()
    try:
        spec = validate_manifest(folder, folder)
    except UploadRejected as exc:
        log.add(f"manifest: {exc.reason}")
        return SubmissionOutcome(False, _one_line(f"rejected: {exc.reason}"), log.text())
    # Check only the games the competition plays that the bot declares it can play.
    declared = spec.manifest
    player_counts = tuple(
        n for n in player_counts if declared.players is None or n in declared.players
    )
    walls = tuple(w for w in walls if declared.walls is None or w in declared.walls)
    if not player_counts or not walls:
        reason = (
            f"the bot declares {spec.manifest.declared_limits()} in bot.toml, and this "
            "competition plays none of those games"
        )
        log.add(f"manifest: {reason}")
        return SubmissionOutcome(False, _one_line(f"rejected: {reason}"), log.text())
    sandbox = sandbox_for(settings)
    build_limits = limits.build_limits()
    m = spec.manifest
    log.add(f"bot {m.name} (language {m.language or 'not given'})")
    log.add(f"build: {m.build!r}" if m.build else "build: none (runs as submitted)")
    log.add(
        f"limits: build {build_limits.timeout_s:g} s, {build_limits.memory_bytes >> 20} MiB "
        f"memory, {build_limits.area_bytes >> 20} MiB build area; sandbox {settings.sandbox.value}"
    )
    meta: dict[str, object] = {"name": m.name, "language": m.language}
    try:
        built = build_bot(
            spec,
            settings.sandbox,
            limits=build_limits,
            toolchains=settings.toolchains,
            identity=identity,
        )
    except BuildError as exc:
        if _arena_side(exc):
            raise ArenaError(f"cannot build submissions here: {exc}") from None
        text = explain_build_failure(str(exc), settings.toolchains)
        log.add(f"build FAILED:\n{text}")
        first = text.splitlines()[0] if text else "the build failed"
        return SubmissionOutcome(False, _one_line(f"rejected: {first}"), log.text(), meta=meta)
    meta["build_seconds"] = round(built.seconds, 3) if built.ran else None
    meta["version"] = built.version
    log.add(
        f"build ok in {built.seconds:.1f} s"
        if built.ran
        else ("build ok (cached)" if m.build else "staged ok")
    )
    try:
        report = check_bot(
            spec,
            sandbox,
            settings.time,
            games_per_setting=games_per_setting,
            built=built,
            player_counts=player_counts,
            walls=walls,
        )
    except (SandboxBusy, SandboxUnavailable) as exc:
        raise ArenaError(f"cannot run check-bot here: {exc}") from None
    except SandboxError as exc:
        log.add(f"check-bot could not start the bot: {exc}")
        return SubmissionOutcome(
            False, _one_line(f"rejected: cannot start the bot: {exc}"), log.text(), meta=meta
        )
    for line in check_lines(report, settings.time, terminal=False):
        log.add(line)
    meta.update(_report_meta(report))
    if report.ok:
        verdict = f"accepted: {passed(report)}"
        log.add(verdict)
        return SubmissionOutcome(True, verdict, log.text(), built, built.version, meta)
    verdict = _one_line(f"rejected by check-bot: {first_problem(report)}")
    log.add(verdict)
    return SubmissionOutcome(False, verdict, log.text(), built, built.version, meta)


def _report_meta(report: CheckReport) -> dict[str, object]:
    meta: dict[str, object] = {
        "games": report.games,
        "wins": report.wins,
        "faults": [fault.kind for _, fault in report.faults],
        "reported": dict(report.reported),
        "warnings": report.warnings(),
    }
    if report.scores:
        meta["mean_score"] = round(statistics.fmean(report.scores), 2)
    latency = report.latency()
    if latency:
        meta["think_ms"] = {"median": latency[0], "p95": latency[1], "max": latency[2]}
    return meta
