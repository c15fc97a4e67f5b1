"""A human at the terminal: the other seats' moves in words, a board that fits 100x40,
the legal moves grouped by source and colour, and a short code as the answer."""

from __future__ import annotations

import os
import re
import select
import sys
import time
from collections.abc import Callable

from arena.engine import Game, GameRecord
from arena.engine.record import parse_move
from arena.engine.tables import CENTRE, COLOURS, FLOOR, AnyMove, Decision, Place
from arena.human.screen import (
    Paint,
    columns,
    decisions_since,
    fault_notices,
    option_groups,
    played_text,
    position_text,
    shown_name,
    wants_colour,
)
from arena.protocol.messages import GameEnd, GameStart
from arena.referee.faults import Fault
from arena.referee.seats import Choice, freeze_resting

ReadLine = Callable[[float], str | None]
"""``read_line(timeout_s)``: one line of input, ``""`` at end of input, None on timeout."""

HOW_TO_ANSWER = (
    "Answer source, colour, line: 0B2 = factory 0's blue to line 2, CRF = centre's red to floor."
)
MAX_ANNOUNCED = 8
"""Most lines of other seats' moves before a decision (the screen must fit 40 rows)."""
_CODE = re.compile(r"([C0-8])[\s:]*([BYRKW])[\s>]*([0-4F])")
_COLUMN = re.compile(r"(?:COL)?\s*([0-4])")


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


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else 100
    except (OSError, ValueError):
        return 100


class TerminalSeat:
    """Asks a person for each decision. Before each one: what the other seats played
    since (tiles taken, in words), the position, the legal moves grouped by source and
    colour; the answer is a code such as ``0B2`` (or ``0:B>2``; a column on the gray
    wall). End of input resigns (a fault: the referee plays on for the seat, as for a bot
    that left). ``colour`` None: ANSI colours when stdout is a TTY and NO_COLOR is unset."""

    def __init__(
        self,
        name: str = "human",
        read_line: ReadLine = stdin_line,
        write: Callable[[str], None] | None = None,
        colour: bool | None = None,
        width: int | None = None,
    ) -> None:
        self.name = name
        self._read = read_line
        self._write = write or (lambda text: print(text, flush=True))
        self._paint = Paint(wants_colour() if colour is None else colour)
        self._width = width
        self._names: list[str] = []
        self._seat = 0
        self._seen = 0
        self.options: list[AnyMove] = []
        """The legal moves of the decision being asked (empty between decisions)."""

    def begin(self, start: GameStart) -> Fault | None:
        self._names = list(start.players)
        self._seat = start.seat
        others = ", ".join(shown_name(n, 20) for i, n in enumerate(self._names) if i != start.seat)
        self._write(
            f"You are seat {start.seat} ({shown_name(self.name, 20)}) against {others}, "
            f"{start.variant} wall.\n{HOW_TO_ANSWER}"
        )
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        freeze_resting()  # a person thinks for seconds: the bots wait frozen
        start = time.monotonic()
        deadline = start + time_left_ms / 1000
        self.options = options
        self._announce(game)
        self._write(position_text(game, self._names, self._seat, self._paint))
        width = self._width or _width()
        groups = columns(option_groups(options, game, self._paint), width, self._paint)
        if game.decision is Decision.PLACE:
            ask = f"Your wall column for line {game.pending_line} ({', '.join(map(str, options))})"
        else:
            ask = "Your move (e.g. " + _example(options) + ")"
        self._write(f"Legal moves:\n{groups}")
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return Fault("timeout", f"no move within {time_left_ms} ms")
                self._write(f"{ask}, {remaining:.0f} s left: ")
                line = self._read(remaining)
                if line is None:
                    return Fault("timeout", f"no move within {time_left_ms} ms")
                if line == "":
                    return Fault("crash", "the player left (end of input)")
                index = _choice(line.strip(), options)
                if index is None:
                    self._write(self._paint.alert(f"  not a legal move: {line.strip()[:40]!r}"))
                    continue
                return Choice(index, (time.monotonic() - start) * 1000)
        finally:
            self.options = []
            self._seen += 1  # this decision, whoever ends up playing it

    def end(self, end: GameEnd) -> None:
        return None  # :meth:`finish` shows the end, with what the record adds (faults)

    def finish(self, record: GameRecord, final: Game) -> None:
        """The end screen: the last moves, the final position, the result."""
        self._names = self._names or list(record.players)
        self._announce(final)
        self._write(position_text(final, self._names, self._seat, self._paint))
        ranks = ", ".join(
            f"{shown_name(f.player, 40)} {f.total} (#{f.rank})"
            for f in sorted(record.final, key=lambda f: (f.rank, f.seat))
        )
        self._write(self._paint.bold(f"Game over ({record.end_reason}): {ranks}"))
        for notice in fault_notices(record):
            self._write(self._paint.alert(notice))

    def abandon(self) -> None:
        return None

    def _announce(self, game: Game) -> None:
        """What the other seats played since this seat last looked."""
        played, self._seen = decisions_since(game, self._seen)
        others = [entry for entry in played if entry[0] != self._seat]
        if len(others) > MAX_ANNOUNCED:  # a round's end on the gray wall: many placements
            self._write(
                f"  ({len(others) - MAX_ANNOUNCED + 1} earlier moves: arena view shows all)"
            )
            others = others[-(MAX_ANNOUNCED - 1) :]
        for seat, move, taken in others:
            name = self._names[seat] if seat < len(self._names) else f"seat {seat}"
            self._write("  " + played_text(name, move, taken))


def _example(options: list[AnyMove]) -> str:
    move = options[0]
    return f"{str(move).replace(':', '').replace('>', '')} = {move_text(move)}"


def _choice(text: str, options: list[AnyMove]) -> int | None:
    """The option ``text`` names: ``0B2``, ``0:B>2``, ``c k f`` (any case), or a column
    (``3`` or ``col3``) when the options are wall columns."""
    upper = text.upper()
    code = _CODE.fullmatch(upper)
    column = _COLUMN.fullmatch(upper)
    if code:
        text = f"{code[1]}:{code[2]}>{code[3]}"
    elif column and options and isinstance(options[0], Place):
        text = f"col{column[1]}"
    try:
        move = parse_move(text)
    except ValueError:
        return None
    return options.index(move) if move in options else None
