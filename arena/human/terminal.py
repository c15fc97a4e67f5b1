"""A human at the terminal: a clear board, a numbered move list, invalid input re-asked."""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable

from arena.engine import Game
from arena.engine.record import parse_move
from arena.engine.tables import CENTRE, COLOURS, FLOOR, AnyMove, Place
from arena.protocol.messages import GameEnd, GameStart
from arena.referee.faults import Fault
from arena.referee.seats import Choice

ReadLine = Callable[[float], str | None]
"""``read_line(timeout_s)``: one line of input, ``""`` at end of input, None on timeout."""


def stdin_line(timeout_s: float) -> str | None:
    """A line from standard input within ``timeout_s`` (None on timeout, "" at EOF)."""
    ready, _, _ = select.select([sys.stdin], [], [], max(0.0, timeout_s))
    if not ready:
        return None
    return sys.stdin.readline()


def move_text(move: AnyMove) -> str:
    """``3:R>2`` in words: ``red from factory 3 to line 2``."""
    if isinstance(move, Place):
        return f"wall column {move.column}"
    source = "the centre" if move.source == CENTRE else f"factory {move.source}"
    line = "the floor" if move.line == FLOOR else f"line {move.line}"
    return f"{COLOURS[move.colour]} from {source} to {line}"


class TerminalSeat:
    """Asks a person for each decision: the position, then the numbered legal moves; the
    answer is a number or the move's compact notation. End of input resigns (a fault: the
    referee plays on for the seat, as for a bot that left)."""

    def __init__(
        self,
        name: str = "human",
        read_line: ReadLine = stdin_line,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self._read = read_line
        self._write = write or (lambda text: print(text, flush=True))
        self._names: list[str] = []
        self._seat = 0

    def begin(self, start: GameStart) -> Fault | None:
        self._names = list(start.players)
        self._seat = start.seat
        self._write(
            f"You are seat {start.seat} ({self.name}) in a {start.n_players}-player game, "
            f"{start.variant} wall. Answer with a move's number or notation (e.g. 3:R>2)."
        )
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        start = time.monotonic()
        deadline = start + time_left_ms / 1000
        labels = [f"{i + 1:>3}) {move!s:<6} {move_text(move)}" for i, move in enumerate(options)]
        self._write("\n" + game.render(self._names))
        self._write(_columns(labels))
        while True:
            remaining = deadline - time.monotonic()
            self._write(f"Your move (1-{len(options)}, {remaining:.0f} s left): ")
            line = self._read(remaining)
            if line is None:
                return Fault("timeout", f"no move within {time_left_ms} ms")
            if line == "":
                return Fault("crash", "the player left (end of input)")
            index = _choice(line.strip(), options)
            if index is None:
                self._write(f"  not a move: {line.strip()!r} — type a number from the list")
                continue
            return Choice(index, (time.monotonic() - start) * 1000)

    def end(self, end: GameEnd) -> None:
        ranks = ", ".join(f"{r.player} {r.score} (#{r.rank})" for r in end.results)
        self._write(f"\nGame over ({end.end_reason}): {ranks}")

    def abandon(self) -> None:
        return None


def _choice(text: str, options: list[AnyMove]) -> int | None:
    if text.isdigit() and 1 <= int(text) <= len(options):
        return int(text) - 1
    try:
        move = parse_move(text)
    except ValueError:
        return None
    return options.index(move) if move in options else None


def _columns(labels: list[str]) -> str:
    """The move list in as many columns as the terminal allows."""
    width = os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else 100
    cell = max(len(label) for label in labels) + 2
    per_row = max(1, width // cell)
    rows = [labels[i : i + per_row] for i in range(0, len(labels), per_row)]
    return "\n".join("".join(label.ljust(cell) for label in row).rstrip() for row in rows)
