"""An independent, deliberately naive model of RULES.md, for differential tests.

It shares no code with ``arena.engine`` except the ``Move``/``Place`` tuples
(the move vocabulary). Walls are 5x5 lists, lines are (colour, count) pairs,
runs are counted by walking the wall; nothing is precomputed. It does not deal
at random: it is given each round's deal (from the engine under test) and
checks the deal could have been drawn under the rules (factories filled one by
one; the bag is emptied before the lid is poured in; partial fills only when
bag and lid are both exhausted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arena.engine import CENTRE, FLOOR, Move, Place

N = 5
MARKER = 5
"""How the public observation writes the first-player marker on a floor."""
SLOTS = (-1, -1, -2, -2, -2, -3, -3)
FACTORIES = {2: 5, 3: 7, 4: 9}


class RefIllegal(Exception):
    """The reference model refuses a move or a deal."""


def coloured_cell_colour(row: int, col: int) -> int:
    return (col - row) % N


@dataclass
class RefBoard:
    line_colour: list[int | None] = field(default_factory=lambda: [None] * N)
    line_count: list[int] = field(default_factory=lambda: [0] * N)
    wall: list[list[int | None]] = field(default_factory=lambda: [[None] * N for _ in range(N)])
    floor: list[int] = field(default_factory=list)
    score: int = 0

    def full_rows(self) -> int:
        return sum(1 for row in self.wall if all(cell is not None for cell in row))

    def full_cols(self) -> int:
        return sum(1 for c in range(N) if all(self.wall[r][c] is not None for r in range(N)))

    def full_colours(self) -> int:
        return sum(1 for k in range(N) if sum(cell == k for row in self.wall for cell in row) == N)

    def bonus(self) -> tuple[int, int, int]:
        return 2 * self.full_rows(), 7 * self.full_cols(), 10 * self.full_colours()


def placement_points(wall: list[list[int | None]], row: int, col: int) -> int:
    """RULES.md Phase 2.2, by walking the wall from the new tile."""
    h = 1
    c = col - 1
    while c >= 0 and wall[row][c] is not None:
        h, c = h + 1, c - 1
    c = col + 1
    while c < N and wall[row][c] is not None:
        h, c = h + 1, c + 1
    v = 1
    r = row - 1
    while r >= 0 and wall[r][col] is not None:
        v, r = v + 1, r - 1
    r = row + 1
    while r < N and wall[r][col] is not None:
        v, r = v + 1, r + 1
    if h == 1 and v == 1:
        return 1
    return (h if h > 1 else 0) + (v if v > 1 else 0)


class RefGame:
    def __init__(self, players: int, variant: str, round_limit: int = 100) -> None:
        self.n = players
        self.gray = variant == "gray"
        self.round_limit = round_limit
        self.bag = [20] * N
        self.lid = [0] * N
        self.factories = [[0] * N for _ in range(FACTORIES[players])]
        self.centre = [0] * N
        self.marker_in_centre = True
        self.boards = [RefBoard() for _ in range(players)]
        self.round = 0
        self.first = 0
        self.holder: int | None = None
        self.current = 0
        self.phase = "deal"
        self.end_reason: str | None = None
        self.tiling_seat = 0
        self.tiling_line = 0
        self.options: list[int] = []
        self.round_scores: list[list[int]] = []
        self.round_firsts: list[int] = []

    # ------------------------------------------------------------------ dealing
    def deal(self, deal: list[list[int]]) -> None:
        if self.phase != "deal":
            raise RefIllegal("not dealing now")
        if len(deal) != len(self.factories):
            raise RefIllegal("wrong number of factories")
        available = sum(self.bag) + sum(self.lid)
        sizes = [min(4, max(0, available - 4 * i)) for i in range(len(deal))]
        if [sum(f) for f in deal] != sizes:
            raise RefIllegal(f"factory sizes {[sum(f) for f in deal]}, expected {sizes}")
        bag, lid = list(self.bag), list(self.lid)
        for f in deal:
            need = sum(f)
            if need <= sum(bag):
                if any(f[k] > bag[k] for k in range(N)):
                    raise RefIllegal(f"factory {f} not in bag {bag}")
                bag = [bag[k] - f[k] for k in range(N)]
            else:
                if any(bag[k] > f[k] for k in range(N)):
                    raise RefIllegal(f"factory {f} leaves bag tiles {bag} behind")
                rest = [f[k] - bag[k] for k in range(N)]
                bag, lid = lid, [0] * N
                if any(rest[k] > bag[k] for k in range(N)):
                    raise RefIllegal(f"factory {f} not drawable after pouring the lid")
                bag = [bag[k] - rest[k] for k in range(N)]
        self.bag, self.lid = bag, lid
        self.factories = [list(f) for f in deal]
        self.round += 1
        if self.round > 1 and self.holder is not None:
            self.first = self.holder
        self.holder = None
        self.current = self.first
        self.marker_in_centre = True
        self.phase = "draft"
        self.round_firsts.append(self.first)

    # ------------------------------------------------------------------ moves
    def row_has(self, board: RefBoard, row: int, colour: int) -> bool:
        if self.gray:
            return colour in board.wall[row]
        col = next(c for c in range(N) if coloured_cell_colour(row, c) == colour)
        return board.wall[row][col] is not None

    def line_takes(self, board: RefBoard, line: int, colour: int) -> bool:
        if board.line_count[line] == line + 1:
            return False
        if board.line_colour[line] is not None and board.line_colour[line] != colour:
            return False
        return not self.row_has(board, line, colour)

    def legal_moves(self) -> list[Move | Place]:
        if self.phase == "place":
            return [Place(c) for c in self.options]
        if self.phase != "draft":
            return []
        board = self.boards[self.current]
        sources = [(i, f) for i, f in enumerate(self.factories)] + [(CENTRE, self.centre)]
        out: list[Move | Place] = []
        for src, counts in sources:
            for colour in range(N):
                if counts[colour]:
                    for line in range(N):
                        if self.line_takes(board, line, colour):
                            out.append(Move(src, colour, line))
                    out.append(Move(src, colour, FLOOR))
        return out

    def _to_floor(self, board: RefBoard, colour: int, n: int) -> None:
        for _ in range(n):
            if len(board.floor) < 7:
                board.floor.append(colour)
            else:
                self.lid[colour] += 1

    def apply(self, move: Move | Place) -> None:
        if move not in self.legal_moves():
            raise RefIllegal(f"{move} is not legal")
        if self.phase == "place":
            assert isinstance(move, Place)
            self._place(self.boards[self.tiling_seat], self.tiling_line, move.column)
            self.tiling_line += 1
            self._tiling()
            return
        assert isinstance(move, Move)
        seat = self.current
        board = self.boards[seat]
        src, colour, line = move
        if src == CENTRE:
            n = self.centre[colour]
            self.centre[colour] = 0
            if self.marker_in_centre:
                self.marker_in_centre = False
                self.holder = seat
                if len(board.floor) < 7:
                    board.floor.append(MARKER)
        else:
            f = self.factories[src]
            n = f[colour]
            for k in range(N):
                if k != colour:
                    self.centre[k] += f[k]
            self.factories[src] = [0] * N
        if line != FLOOR:
            put = min(n, line + 1 - board.line_count[line])
            board.line_colour[line] = colour
            board.line_count[line] += put
            n -= put
        self._to_floor(board, colour, n)
        on_table = sum(self.centre) + sum(sum(f) for f in self.factories)
        if on_table:
            self.current = (seat + 1) % self.n
        else:
            self.tiling_seat, self.tiling_line = 0, 0
            self._tiling()

    # ------------------------------------------------------------------ tiling
    def _place(self, board: RefBoard, line: int, col: int) -> None:
        colour = board.line_colour[line]
        assert colour is not None
        assert board.wall[line][col] is None
        board.wall[line][col] = colour
        board.score += placement_points(board.wall, line, col)
        self.lid[colour] += line
        board.line_colour[line] = None
        board.line_count[line] = 0

    def _tiling(self) -> None:
        while self.tiling_seat < self.n:
            board = self.boards[self.tiling_seat]
            while self.tiling_line < N:
                line = self.tiling_line
                colour = board.line_colour[line]
                if colour is not None and board.line_count[line] == line + 1:
                    if not self.gray:
                        col = next(c for c in range(N) if coloured_cell_colour(line, c) == colour)
                        self._place(board, line, col)
                    else:
                        cols = [
                            c
                            for c in range(N)
                            if board.wall[line][c] is None
                            and all(board.wall[r][c] != colour for r in range(N))
                        ]
                        if len(cols) >= 2:
                            self.phase = "place"
                            self.options = cols
                            self.current = self.tiling_seat
                            return
                        if len(cols) == 1:
                            self._place(board, line, cols[0])
                        else:
                            self._to_floor(board, colour, line + 1)
                            board.line_colour[line] = None
                            board.line_count[line] = 0
                self.tiling_line += 1
            board.score = max(0, board.score + sum(SLOTS[: len(board.floor)]))
            for item in board.floor:
                if item != MARKER:
                    self.lid[item] += 1
            board.floor = []
            self.tiling_seat += 1
            self.tiling_line = 0
        self.options = []
        self.round_scores.append([b.score for b in self.boards])
        if any(b.full_rows() for b in self.boards):
            self._over("normal")
        elif self.round >= self.round_limit:
            self._over("round_limit")
        elif sum(self.bag) + sum(self.lid) == 0:
            self._over("no_tiles")
        else:
            self.phase = "deal"

    def _over(self, reason: str) -> None:
        self.phase = "over"
        self.end_reason = reason

    # ------------------------------------------------------------------ results
    def final_scores(self) -> list[int]:
        return [b.score + sum(b.bonus()) for b in self.boards]

    def ranks(self) -> list[int]:
        keys = [(s, b.full_rows()) for s, b in zip(self.final_scores(), self.boards, strict=True)]
        ranks = []
        for total, rows in keys:
            better = sum(1 for t, r in keys if t > total or (t == total and r > rows))
            ranks.append(1 + better)
        return ranks

    def public(self) -> dict[str, Any]:
        """The same facts as the engine's ``observation_dict`` (subset of keys)."""
        return {
            "round": self.round,
            "decision": {"draft": "draft", "place": "place", "over": "over"}[self.phase],
            "current_player": self.current,
            "first_player": self.first,
            "pending_line": self.tiling_line if self.phase == "place" else None,
            "factories": [list(f) for f in self.factories],
            "centre": list(self.centre),
            "marker_in_centre": self.marker_in_centre,
            "bag": list(self.bag),
            "lid": list(self.lid),
            "end_reason": self.end_reason,
            "players": [
                {
                    "seat": seat,
                    "score": b.score,
                    "lines": [
                        {
                            "colour": b.line_colour[i] if b.line_count[i] else None,
                            "count": b.line_count[i],
                        }
                        for i in range(N)
                    ],
                    "wall": [list(row) for row in b.wall],
                    "floor": list(b.floor),
                }
                for seat, b in enumerate(self.boards)
            ],
        }


def compare(game: Any, ref: RefGame) -> None:
    """Assert the engine position equals the reference position (all public facts)."""
    mine = ref.public()
    theirs = game.observation_dict()
    keys = [k for k in mine if not (k == "current_player" and ref.phase == "over")]
    for key in keys:
        assert theirs[key] == mine[key], (
            f"{key}: engine {theirs[key]!r} != rules {mine[key]!r}\n{game.render()}"
        )


def from_position(
    players: int,
    variant: str,
    round_number: int,
    round_limit: int,
    first: int,
    current: int,
    holder: int | None,
    marker_in_centre: bool,
    factories: list[list[int]],
    centre: list[int],
    bag: list[int],
    lid: list[int],
    boards: list[RefBoard],
) -> RefGame:
    """A reference game in the middle of a round's factory offer."""
    ref = RefGame(players, variant, round_limit)
    ref.round = round_number
    ref.first = first
    ref.current = current
    ref.holder = holder
    ref.marker_in_centre = marker_in_centre
    ref.factories = [list(f) for f in factories]
    ref.centre = list(centre)
    ref.bag = list(bag)
    ref.lid = list(lid)
    ref.boards = boards
    ref.phase = "draft"
    return ref
