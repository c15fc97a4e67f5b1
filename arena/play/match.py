"""``arena match``: one refereed game between bot folders, written to disk."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from arena.engine import Game, replay
from arena.errors import ArenaError
from arena.play.build import build_bot
from arena.recordio import save_record
from arena.referee.manifest import BotSpec
from arena.referee.referee import GameOutcome, GameSettings, play_game
from arena.referee.seats import BotSeat, SandboxSettings
from arena.sandbox import affinity


def new_match_folder(root: Path, stamp: str | None = None) -> Path:
    """A new, empty folder ``root/STAMP`` (``STAMP-2``, ``-3``... if taken), created
    atomically: two matches started in the same second never share a folder."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = root / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"{root}: no free folder name for {stamp}")


def writable_folder(folder: Path) -> Path:
    """``folder``, created if needed, once a file could be written in it: checked before the
    bots are built and the game played, so an unwritable ``--out`` never costs a game."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".arena-probe-") as probe:
            probe.write(b"probe")
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise ArenaError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    return folder


def match_folder(out: Path | None, parent: Path) -> Path:
    """``out`` if it holds no record yet, else a new timestamped folder in ``parent``:
    a match never overwrites an earlier one. Either is checked writable."""
    if out is not None:
        if (out / "record.json").exists():
            raise ArenaError(f"{out} already holds a game record; choose another --out")
        return writable_folder(out)
    try:
        return writable_folder(new_match_folder(parent))
    except OSError as exc:
        raise ArenaError(f"cannot create a folder in {parent}: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class MatchResult:
    outcome: GameOutcome
    final_position: Game
    record_path: Path
    log_paths: list[Path]


def run_match(
    specs: Sequence[BotSpec],
    settings: GameSettings,
    out_dir: Path,
    sandbox: SandboxSettings | None = None,
    transcripts: bool = False,
    one_core: bool = False,
) -> MatchResult:
    """Build the bots, play one game, save the record and the bots' stderr logs.
    ``one_core``: play on one core (``PlaySettings.pins_core``; the build is not pinned)."""
    sandbox = sandbox or SandboxSettings()
    built = {
        s.folder: build_bot(s, sandbox.level, toolchains=sandbox.toolchains)
        for s in {s.folder: s for s in specs}.values()
    }
    bots = [built[s.folder] for s in specs]  # every bot runs from its built copy
    out_dir.mkdir(parents=True, exist_ok=True)
    logs = [out_dir / f"seat{i}-{bot.spec.name}.stderr.log" for i, bot in enumerate(bots)]
    game_id = f"match-{int(time.time())}-{settings.seed}"
    with ExitStack() as stack:
        stack.enter_context(affinity.one_core(one_core))  # left last: after the bots close
        seats = []
        for i, bot in enumerate(bots):
            seat = BotSeat(
                bot,
                time_control=settings.time_control,
                sandbox=replace(sandbox, slot=sandbox.slot + i),
                stderr_log=logs[i],
                persistent=False,
                transcript=out_dir / f"seat{i}-{bot.spec.name}.transcript" if transcripts else None,
            )
            stack.callback(seat.close)
            seats.append(seat)
        outcome = play_game(seats, settings, game_id)
    record_path = out_dir / "record.json"
    save_record(outcome.record, record_path)
    final = replay(outcome.record)  # the referee's own record must verify
    return MatchResult(outcome, final, record_path, logs)
