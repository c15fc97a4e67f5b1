"""``arena play BOT... --human``: a person plays against bots, in the terminal or a browser."""

from __future__ import annotations

import time
import webbrowser
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from arena.engine import Game, replay
from arena.human.browser import BrowserSeat
from arena.human.terminal import TerminalSeat
from arena.play.bots import ready_bots
from arena.recordio import save_record
from arena.referee.manifest import BotSpec
from arena.referee.referee import GameOutcome, GameSettings, play_game
from arena.referee.seats import BotSeat, SandboxSettings, Seat

HUMAN_MOVE_MS = 300_000
"""Default time per decision in a game with a person: generous, and the same for every seat."""
PAGE_SEES_RESULT_S = 60.0
"""How long the browser seat's server waits for the page to fetch the result (a page
polls every 0.2 s; a closed tab should not hold the command for long)."""


@dataclass(frozen=True)
class PlayResult:
    outcome: GameOutcome
    final_position: Game
    record_path: Path


def play_with_human(
    specs: Sequence[BotSpec],
    settings: GameSettings,
    out_dir: Path,
    *,
    human_seat: int = 0,
    human_name: str = "human",
    browser: bool = False,
    open_browser: bool = True,
    sandbox: SandboxSettings | None = None,
    say: Callable[[str], None] = print,
    seat_factory: Callable[[], Seat] | None = None,
    game_id: str | None = None,
) -> PlayResult:
    """Build the bots, seat the person at ``human_seat``, play, save and verify the record.

    ``seat_factory`` replaces the person's seat (tests drive a :class:`BrowserSeat` or a
    scripted :class:`TerminalSeat`). ``game_id`` (default: from the clock) seeds the bots'
    and the referee's random choices, so a fixed one replays the same game."""
    n = len(specs) + 1
    if not 0 <= human_seat < n:
        raise ValueError(f"--seat must be between 0 and {n - 1}")
    sandbox = sandbox or SandboxSettings()
    # Every bot plays from its built copy (a compiled bot launched from its source folder
    # would fail its handshake, and random moves would be played under its name).
    built = ready_bots(specs, sandbox.level, toolchains=sandbox.toolchains)
    game_id = game_id or f"play-{int(time.time())}-{settings.seed}"
    with ExitStack() as stack:
        if seat_factory is not None:
            human: Seat = seat_factory()
        elif browser:
            web = BrowserSeat(human_name)
            stack.callback(web.close)
            say(f"Your seat is in the browser: {web.url}   (Ctrl-C stops the game)")
            if open_browser:
                webbrowser.open(web.url)
            human = web
        else:
            human = TerminalSeat(human_name)
        bots = iter(built)
        seats: list[Seat] = []
        for i in range(n):
            if i == human_seat:
                seats.append(human)
                continue
            ready = next(bots)
            bot = BotSeat(
                ready,
                time_control=settings.time_control,
                sandbox=replace(sandbox, slot=sandbox.slot + i),
                stderr_log=out_dir / f"seat{i}-{ready.spec.name}.stderr.log",
                persistent=False,
            )
            stack.callback(bot.close)
            seats.append(bot)
        outcome = play_game(seats, settings, game_id)
        final = replay(outcome.record)
        if isinstance(human, (TerminalSeat, BrowserSeat)):
            human.finish(outcome.record, final)
        # let the page show the result before the server stops
        if isinstance(human, BrowserSeat) and not human.wait_seen(PAGE_SEES_RESULT_S):
            say("The page did not fetch the result (closed?); the record has it.")
    record_path = out_dir / "record.json"
    save_record(outcome.record, record_path)
    return PlayResult(outcome, final, record_path)
