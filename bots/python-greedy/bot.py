#!/usr/bin/env python3
"""python-greedy: a one-ply heuristic Azul Arena bot (protocol v1). Stdlib only.

Every option is scored by its immediate effect on the bot's own board, and the
best one is played (ties: the first in the referee's order). No search, no
opponent model: a baseline that beats random play clearly, and a skeleton for
something better. The heuristic, in points:

draft (source, colour, line):
  * the tiles that fit on the pattern line are worth their share of the line's
    *payoff* (wall points of the tile when the line is tiled: adjacency, plus
    the real end-of-game bonuses it would complete, plus 1); a line completed
    now earns the rest of its payoff, a line left partial only a discounted
    share (the discount grows as the game nears its end, and in the very last
    round a partial line is worth something only if enough tiles of its colour
    are still on the table);
  * tiles that overflow to the floor, and the first-player marker, cost the
    real floor penalty of the slots they will occupy;
  * gray wall: a line whose colour has no legal column left is a floor dump.
place (gray wall, column for the pending full line):
  * small exhaustive search over the columns of every full line still to be
    tiled this round: wall points + bonuses, lines that would lose their last
    column go to the floor (real penalty), plus a little for options kept open.
"""

from __future__ import annotations

import json
import sys

NAME = "python-greedy"
PROTOCOL = 1
FLOOR_PENALTY = (0, 1, 2, 4, 6, 8, 11, 14)  # total for 0..7 floor items
MARKER = 5  # first-player marker in floor lists
CENTRE = -1  # option.source of the centre
EPS = 1e-9  # values closer than this are a tie: the first option wins
FLOOR = -1  # option.line of the floor


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def floor_cost(items: int) -> int:
    return FLOOR_PENALTY[min(items, 7)]


# ----------------------------------------------------------------- the wall
# A wall is 5 rows of 5 cells, each a colour index or None (empty).


def coloured_column(row: int, colour: int) -> int:
    """Coloured wall: cell (row, col) has colour (col - row) mod 5."""
    return (row + colour) % 5


def legal_columns(wall: list[list], row: int, colour: int, gray: bool) -> list[int]:
    if not gray:
        col = coloured_column(row, colour)
        return [col] if wall[row][col] is None else []
    if colour in wall[row]:
        return []
    return [
        c
        for c in range(5)
        if wall[row][c] is None and all(wall[r][c] != colour for r in range(5))
    ]


def tile_points(wall: list[list], row: int, col: int, colour: int) -> int:
    """Points for putting a tile on (row, col): adjacency plus completed bonuses."""
    h = 1
    c = col - 1
    while c >= 0 and wall[row][c] is not None:
        h, c = h + 1, c - 1
    c = col + 1
    while c < 5 and wall[row][c] is not None:
        h, c = h + 1, c + 1
    v = 1
    r = row - 1
    while r >= 0 and wall[r][col] is not None:
        v, r = v + 1, r - 1
    r = row + 1
    while r < 5 and wall[r][col] is not None:
        v, r = v + 1, r + 1
    points = 1 if h == 1 and v == 1 else (h if h > 1 else 0) + (v if v > 1 else 0)
    if h == 5:
        points += 2  # complete row
    if v == 5:
        points += 7  # complete column
    if sum(cell == colour for line in wall for cell in line) == 4:
        points += 10  # fifth tile of this colour
    return points


def best_column(wall: list[list], row: int, colour: int, gray: bool) -> tuple[int, int] | None:
    """(points, column) of the best legal column, or None when there is none."""
    best = None
    for col in legal_columns(wall, row, colour, gray):
        pts = tile_points(wall, row, col, colour)
        if best is None or pts > best[0]:
            best = (pts, col)
    return best


def projected_wall(me: dict, gray: bool) -> list[list]:
    """My wall after this round's tiling of the lines that are already full."""
    wall = [list(row) for row in me["wall"]]
    for i, line in enumerate(me["lines"]):
        if line["count"] == i + 1 and line["colour"] is not None:
            best = best_column(wall, i, line["colour"], gray)
            if best is not None:
                wall[i][best[1]] = line["colour"]
    return wall


def rows_filled(wall: list[list]) -> int:
    return max(sum(cell is not None for cell in row) for row in wall)


# ----------------------------------------------------------------- drafting


def draft_value(opt: dict, obs: dict, seat: int, ctx: dict) -> float:
    source, colour, line = opt["source"], opt["colour"], opt["line"]
    me = obs["players"][seat]
    if source == CENTRE:
        n = obs["centre"][colour]
        marker = 1 if obs["marker_in_centre"] else 0
    else:
        n = obs["factories"][source][colour]
        marker = 0
    floor_now = len(me["floor"])
    value = -0.2 * marker  # slight dislike of the marker beyond its floor slot

    if line == FLOOR:
        return value - (floor_cost(floor_now + marker + n) - floor_cost(floor_now)) - 0.5

    cap = line + 1
    have = me["lines"][line]["count"]
    placed = min(n, cap - have)
    overflow = n - placed
    filled = have + placed
    floor_items = marker + overflow
    wall = ctx["wall"]
    best = best_column(wall, line, colour, ctx["gray"])
    if best is None:
        # Gray wall: no column can take this colour in this row any more; the
        # whole line would end on the floor when full. Treat it as a dump.
        return value - (floor_cost(floor_now + marker + n) - floor_cost(floor_now)) - 1.0
    payoff = best[0] + 1.0

    if filled == cap:
        share_before = ctx["partial"] * have / cap
        value += payoff * (1.0 - share_before) + 0.3  # +0.3: the line is free again next round
    else:
        remaining = cap - filled
        factor = ctx["partial"]
        if ctx["last_round"]:
            # Only this round is left: the line must be completed from what is on the table.
            still = ctx["table"][colour] - n
            factor = 0.45 if still >= remaining else 0.0
        value += payoff * factor * placed / cap
        value -= 0.15 * remaining  # a partial line is blocked for other colours
    value -= floor_cost(floor_now + floor_items) - floor_cost(floor_now)
    return value


# ----------------------------------------------------------------- gray placement


def place_search(wall: list[list], pending: list[tuple[int, int]], floor_len: int) -> float:
    """Best total for tiling the full lines `pending` [(row, colour)] in order."""
    if not pending:
        return openness(wall) - floor_cost(floor_len)
    (row, colour), rest = pending[0], pending[1:]
    cols = legal_columns(wall, row, colour, True)
    if not cols:  # the whole line goes to the floor
        return place_search(wall, rest, floor_len + row + 1)
    best = float("-inf")
    for col in cols:
        pts = tile_points(wall, row, col, colour)
        wall[row][col] = colour
        best = max(best, pts + place_search(wall, rest, floor_len))
        wall[row][col] = None
    return best


def openness(wall: list[list]) -> float:
    """A little credit for every (row, colour) that still has a legal column."""
    in_column = [{wall[r][c] for r in range(5)} for c in range(5)]
    open_pairs = 0
    for row in wall:
        empty = [c for c in range(5) if row[c] is None]
        for colour in range(5):
            if colour not in row and any(colour not in in_column[c] for c in empty):
                open_pairs += 1
    return 0.05 * open_pairs


def choose_place(msg: dict) -> int:
    obs = msg["observation"]
    me = obs["players"][msg["seat"]]
    row = obs["pending_line"]
    colour = me["lines"][row]["colour"]
    later = [
        (i, line["colour"])
        for i, line in enumerate(me["lines"])
        if i > row and line["count"] == i + 1 and line["colour"] is not None
    ]
    wall = [list(r) for r in me["wall"]]
    best_i, best_v = 0, float("-inf")
    for i, opt in enumerate(msg["options"]):
        col = opt["column"]
        pts = tile_points(wall, row, col, colour)
        wall[row][col] = colour
        # Partial lines below want a column for their colour next round.
        blocked = sum(
            1
            for j, line in enumerate(me["lines"])
            if line["count"] and line["count"] < j + 1 and not legal_columns(wall, j, line["colour"], True)
        )
        v = pts + place_search(wall, later, len(me["floor"])) - 2.0 * blocked
        wall[row][col] = None
        if v > best_v + EPS:
            best_i, best_v = i, v
    return best_i


# ----------------------------------------------------------------- decisions


def choose(msg: dict) -> int:
    """Index of the option to play. Replace this with your own logic."""
    options = msg["options"]
    if len(options) == 1:
        return 0
    if msg["decision"] == "place":
        return choose_place(msg)
    obs = msg["observation"]
    seat = msg["seat"]
    gray = obs["variant"] == "gray"
    me = obs["players"][seat]
    wall = projected_wall(me, gray)
    # How close is the end? A complete row (with this round's full lines) ends
    # the game after this round; four tiles in a row usually means it is near.
    most = 0
    last_round = False
    for p in obs["players"]:
        w = wall if p["seat"] == seat else projected_wall(p, gray)
        filled = rows_filled(w)
        most = max(most, filled)
        last_round = last_round or filled == 5
    partial = 0.8 if most <= 3 else 0.55
    table = list(obs["centre"])
    for factory in obs["factories"]:
        for c in range(5):
            table[c] += factory[c]
    ctx = {"gray": gray, "wall": wall, "last_round": last_round, "partial": partial, "table": table}
    best_i, best_v = 0, float("-inf")
    for i, opt in enumerate(options):
        v = draft_value(opt, obs, seat, ctx)
        if v > best_v + EPS:
            best_i, best_v = i, v
    return best_i


def main() -> None:
    stdin = sys.stdin.buffer  # bytes: UTF-8 regardless of the (cleared) locale
    while True:
        line = stdin.readline()
        if not line:
            return
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            log("ignoring a line that is not JSON:", line[:200])
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "hello":
            if msg.get("protocol") != PROTOCOL:
                log("referee speaks protocol", msg.get("protocol"), "- we speak", PROTOCOL)
            send({"type": "ready", "protocol": PROTOCOL, "name": NAME, "version": "1"})
        elif kind == "decide":
            try:
                index = choose(msg)
            except Exception as exc:  # never fault on a bug: fall back to the first option
                log("choose failed:", repr(exc))
                index = 0
            send({"type": "move", "id": msg.get("id"), "index": index})
        elif kind == "quit":
            return
        # game_start, game_end and unknown types need no answer


if __name__ == "__main__":
    main()
