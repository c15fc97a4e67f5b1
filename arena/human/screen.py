"""What the terminal seat draws: a position that fits 100x40 (boards side by side), the
legal moves grouped by source and colour, and the other seats' moves in words.

Tiles are coloured with ANSI codes only when asked (:func:`wants_colour`: a TTY and no
``NO_COLOR``); otherwise the same text without escapes. Names are bot-controlled and
pass through :func:`arena.textsafe.visible` before they are shown.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from arena.engine import Game, GameRecord
from arena.engine.game import RoundLog
from arena.engine.tables import (
    CENTRE,
    CODE_COUNTS,
    COLOURS,
    FLOOR,
    FLOOR_PENALTY,
    FLOOR_SLOTS,
    LETTERS,
    MARKER,
    AnyMove,
    Decision,
    Move,
    Place,
    Variant,
)
from arena.textsafe import visible

BOARD_WIDTH = 24
"""One board's column: four boards side by side fit 100 columns."""
_TILE_STYLE = {
    "B": "97;44",
    "Y": "30;103",
    "R": "97;41",
    "K": "97;40",
    "W": "30;107",
    "1": "1;7",
}
"""ANSI SGR per tile letter: white text on blue, black on yellow... (``1`` = the marker)."""
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def wants_colour(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    stream = stream or sys.stdout
    return "NO_COLOR" not in os.environ and stream.isatty()


@dataclass(frozen=True)
class Paint:
    """Text styling that is a no-op without colour, so both outputs share one layout."""

    colour: bool

    def tile(self, letter: str) -> str:
        style = _TILE_STYLE.get(letter)
        return f"\x1b[{style}m{letter}\x1b[0m" if self.colour and style else letter

    def tiles(self, letters: str) -> str:
        return "".join(self.tile(letter) for letter in letters)

    def dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.colour and text else text

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if self.colour and text else text

    def alert(self, text: str) -> str:
        return f"\x1b[1;31m{text}\x1b[0m" if self.colour and text else text


def shown_name(name: str, width: int = BOARD_WIDTH - 6) -> str:
    """A bot's name made safe to print and cut to ``width`` characters."""
    text = visible(name)
    return text if len(text) <= width else text[: width - 1] + "…"


def _tiles_text(counts: tuple[int, ...] | list[int]) -> str:
    return "".join(LETTERS[c] * counts[c] for c in range(len(LETTERS)))


def _pad(cell: str, plain_len: int, width: int) -> str:
    return cell + " " * max(0, width - plain_len)


def board_rows(game: Game, seat: int, name: str, paint: Paint) -> list[tuple[str, int]]:
    """One player's board as (text, visible length) rows."""
    board = game.boards[seat]
    gray = game.variant is Variant.GRAY
    turn = game.decision is not Decision.OVER and game.current_player == seat
    label = shown_name(name)
    score = f": {board.score}"
    head = ("> " if turn else "  ") + label + score
    rows = [(paint.bold(head) if turn else head, len(head))]
    for row in range(5):
        count, colour = board.line_count[row], board.line_colour[row]
        pattern = paint.dim("." * (row + 1 - count)) + (
            paint.tiles(LETTERS[colour] * count) if count else ""
        )
        cells = []
        for col in range(5):
            placed = board.wall[row * 5 + col]
            if placed >= 0:
                cells.append(paint.tile(LETTERS[placed]))
            else:
                cells.append(paint.dim("." if gray else LETTERS[(col - row) % 5].lower()))
        text = " " * (6 - (row + 1)) + pattern + " | " + " ".join(cells)
        rows.append((text, 6 + 3 + 9))
    floor = "".join("1" if item == MARKER else LETTERS[item] for item in board.floor)
    penalty = f" ({-FLOOR_PENALTY[min(len(floor), FLOOR_SLOTS)]})" if floor else ""
    text = "  floor " + (paint.tiles(floor) if floor else "-") + penalty
    rows.append((text, 8 + max(1, len(floor)) + len(penalty)))
    return rows


def position_text(game: Game, names: list[str], me: int, paint: Paint) -> str:
    """The whole public position in ~10 lines (boards side by side)."""
    names = [names[i] if i < len(names) else f"seat {i}" for i in range(game.n_players)]
    if game.decision is Decision.OVER:
        status = "final position"
    elif game.decision is Decision.PLACE:
        status = f"{shown_name(names[game.current_player])} places line {game.pending_line}"
    else:
        status = f"{shown_name(names[game.current_player])} to draft"
    lines = [f"Round {game.round} · {game.variant.value} wall · {status}"]
    factories = "  ".join(
        f"{i}:{paint.tiles(_tiles_text(CODE_COUNTS[code])) or '-'}"
        for i, code in enumerate(game.factories)
    )
    lines.append(f"Factories {factories}")
    centre = ("1" if game.marker_in_centre else "") + _tiles_text(game.centre)
    lines.append(f"Centre    {paint.tiles(centre) or '-'}")
    boards = [
        board_rows(game, seat, names[seat] + (" (you)" if seat == me else ""), paint)
        for seat in range(game.n_players)
    ]
    for row in range(len(boards[0])):
        cells = [_pad(*board[row], BOARD_WIDTH) for board in boards]
        lines.append("".join(cells).rstrip())
    return "\n".join(lines)


def option_groups(options: list[AnyMove], game: Game, paint: Paint) -> list[str]:
    """Draft options by source and colour (``0:B x2 > 0 1 2 F``): one entry instead of up
    to six; place options (gray wall) one per column."""
    labels: list[str] = []
    groups: dict[tuple[int, int], list[int]] = {}
    for move in options:
        if isinstance(move, Place):
            labels.append(f"col{move.column}")
        else:
            groups.setdefault((move.source, move.colour), []).append(move.line)
    for (source, colour), lines in groups.items():
        count = (
            game.centre[colour] if source == CENTRE else CODE_COUNTS[game.factories[source]][colour]
        )
        src = "C" if source == CENTRE else str(source)
        dests = " ".join(
            "F" if line == FLOOR else str(line) for line in sorted(lines, key=_line_order)
        )
        labels.append(f"{src}:{paint.tile(LETTERS[colour])} x{count} > {dests}")
    return labels


def _line_order(line: int) -> int:
    return 9 if line == FLOOR else line


def columns(labels: list[str], width: int, paint: Paint) -> str:
    """``labels`` in as many columns as ``width`` allows (escapes take no room)."""
    if not labels:
        return ""
    lengths = [len(_plain(label, paint)) for label in labels]
    cell = max(lengths) + 3
    per_row = max(1, width // cell)
    rows = []
    for start in range(0, len(labels), per_row):
        row = [
            _pad(labels[i], lengths[i], cell)
            for i in range(start, min(start + per_row, len(labels)))
        ]
        rows.append("".join(row).rstrip())
    return "\n".join(rows)


def _plain(text: str, paint: Paint) -> str:
    return _SGR.sub("", text) if paint.colour else text


def draft_counts(log: RoundLog) -> Iterator[tuple[int, AnyMove, int]]:
    """(seat, move, tiles taken) for each decision of a round, replayed from its deal
    (place decisions take none). Only the round's own log is needed: no engine, no RNG."""
    factories = [list(CODE_COUNTS[code]) for code in log.codes]
    centre = [0] * len(LETTERS)
    for seat, move in log.decisions:
        if isinstance(move, Move):
            if move.source == CENTRE:
                taken = centre[move.colour]
                centre[move.colour] = 0
            else:
                counts = factories[move.source]
                taken = counts[move.colour]
                for colour, n in enumerate(counts):
                    if colour != move.colour:
                        centre[colour] += n
                factories[move.source] = [0] * len(LETTERS)
            yield seat, move, taken
        else:
            yield seat, move, 0


def played_text(name: str, move: AnyMove, taken: int) -> str:
    """``c-greedy took 3 blue from factory 2 → line 4`` (``name`` is shown safely)."""
    who = shown_name(name, 40)
    if isinstance(move, Place):
        return f"{who} placed its full line's tile in wall column {move.column}"
    source = "the centre" if move.source == CENTRE else f"factory {move.source}"
    line = "the floor" if move.line == FLOOR else f"line {move.line}"
    return f"{who} took {taken} {COLOURS[move.colour]} from {source} → {line}"


def decisions_since(game: Game, seen: int) -> tuple[list[tuple[int, AnyMove, int]], int]:
    """The decisions after the first ``seen`` of the game, with tiles taken; and the new
    total (a seat remembers it to announce only what it has not shown yet)."""
    out: list[tuple[int, AnyMove, int]] = []
    index = 0
    for log in game.rounds:
        if index + len(log.decisions) <= seen:
            index += len(log.decisions)
            continue
        for entry in draft_counts(log):
            if index >= seen:
                out.append(entry)
            index += 1
    return out, index


def fault_notices(record: GameRecord) -> list[str]:
    """Each fault in words for the end screen, e.g. ``c-greedy faulted (timeout, round 3):
    its moves were played at random from then on`` (names shown safely)."""
    notices = []
    for fault in record.faults:
        name = visible(record.players[fault.seat])
        cost = (
            "its moves were played at random from then on"
            if fault.forfeit
            else "that move was played at random"
        )
        notices.append(
            f"{name} faulted ({fault.kind}, round {fault.round}): {cost}\n"
            f"  ({visible(fault.message)})"
        )
    return notices
