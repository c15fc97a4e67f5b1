"""``arena tournament`` as a user runs it: progress bar or JSON-lines events, signals,
and what to do next (resume command, report) - the CLI only parses and calls this."""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as Bar

from arena.errors import ArenaError
from arena.referee import BotSpec
from arena.tournament.config import TournamentConfig
from arena.tournament.runner import Progress, run_tournament

EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``progress`` when it finished, else ``status`` to exit with."""

    progress: Progress | None
    status: int


def game_event(p: Progress) -> dict[str, object]:
    """The JSON-lines event of the last finished game (``--jsonl``)."""
    assert p.last is not None
    return {
        "event": "game",
        "game_index": p.last.game_index,
        "done": p.done,
        "total": p.total,
        "end_reason": p.last.end_reason,
        "seats": [
            {"bot": s.bot, "score": s.score, "rank": s.rank, "fault": s.fault} for s in p.last.seats
        ],
    }


@contextmanager
def interrupts_as_keyboard_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT both stop the run the same way (KeyboardInterrupt), so the
    runner stops the workers and their bots and nothing finished is lost."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def resume_command(argv: list[str] | None = None) -> str:
    args = sys.argv[1:] if argv is None else argv
    import shlex

    return "arena " + shlex.join(args) if args else "the same command"


def run_with_progress(
    config: TournamentConfig,
    *,
    mode: str,
    extend: bool,
    console: Console,
    err_console: Console,
) -> Outcome:
    """Run with a live bar (``mode`` "bar"), quietly ("quiet") or printing one JSON line
    per finished game ("jsonl"). Interrupted or failed runs print the resume command."""
    bar = Bar(
        TextColumn("[bold]games"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("leader: {task.fields[leader]}"),
        console=err_console,
        disable=mode != "bar",
    )
    task = bar.add_task("games", total=None, rate="", leader="-")
    started = time.monotonic()

    def on_progress(p: Progress) -> None:
        if not bar.live.is_started:  # shown once the store and config check out
            bar.start()
        new = p.done - p.done_before
        elapsed = time.monotonic() - started
        rate = f"{new / elapsed:.1f} games/s" if new and elapsed > 0 else ""
        leader = escape(p.leader() or "-")
        bar.update(task, total=p.total, completed=p.done, rate=rate, leader=leader)
        if mode == "jsonl" and p.last is not None:
            print(json.dumps(game_event(p)), flush=True)

    def on_built(spec: BotSpec, seconds: float) -> None:
        if mode == "bar":
            err_console.print(f"built {escape(spec.name)} in {seconds:.1f} s")

    resume = resume_command()
    with interrupts_as_keyboard_interrupt():
        try:
            try:
                progress = run_tournament(
                    config, extend=extend, on_progress=on_progress, on_built=on_built
                )
            finally:
                bar.stop()
        except KeyboardInterrupt:
            err_console.print(
                f"\n[yellow]Interrupted.[/yellow] Finished games are stored in "
                f"{escape(str(config.output))}; running games were abandoned and their bots "
                f"stopped.\nResume with: {escape(resume)}"
            )
            return Outcome(None, EXIT_INTERRUPTED)
        except ArenaError as exc:
            if exc.hint is None and getattr(exc, "resumable", False):
                exc.hint = f"Resume with: {resume}"
            raise  # SandboxBusy (every bot uid in use) included: resumable, try again later
    if mode == "jsonl":
        print(json.dumps({"event": "done", "done": progress.done, "total": progress.total}))
    else:
        played = progress.done - progress.done_before
        console.print(
            f"{progress.done}/{progress.total} games finished ({played} played now) in "
            f"{escape(str(config.output))}"
        )
    return Outcome(progress, 0)
