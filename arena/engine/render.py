"""A compact text picture of a position, for terminals and divergence reports.

Colours are letters (B Y R K W). On a wall, a placed tile is an upper-case
letter; an empty cell of the coloured wall shows its fixed colour in lower
case, an empty cell of the gray wall is ``.``. ``1`` is the first-player
marker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena.engine.tables import CODE_COUNTS, LETTERS, MARKER, N_COLOURS, Decision, Variant

if TYPE_CHECKING:
    from arena.engine.game import Game


def tiles_text(counts: list[int] | tuple[int, ...]) -> str:
    """``[2, 0, 1, 0, 0] -> 'BBR'``."""
    return "".join(LETTERS[c] * counts[c] for c in range(N_COLOURS))


def render(game: Game, names: list[str] | None = None) -> str:
    lines = []
    if game.decision is Decision.OVER:
        status = f"game over ({game.end_reason.value if game.end_reason else '?'})"
    elif game.decision is Decision.PLACE:
        status = f"seat {game.current_player} places line {game.pending_line} (gray wall)"
    else:
        status = f"seat {game.current_player} to draft"
    lines.append(
        f"Round {game.round} · {game.n_players} players · {game.variant.value} wall · "
        f"first player {game.first_player} · {status}"
    )
    factories = "  ".join(
        f"{i}:{tiles_text(CODE_COUNTS[code]) or '-'}" for i, code in enumerate(game.factories)
    )
    centre = ("1" if game.marker_in_centre else "") + tiles_text(game.centre)
    lines.append(f"Factories {factories}   Centre: {centre or '-'}")
    lines.append(
        "Bag "
        + " ".join(f"{LETTERS[c]}{game.bag[c]}" for c in range(N_COLOURS))
        + "   Lid "
        + " ".join(f"{LETTERS[c]}{game.lid[c]}" for c in range(N_COLOURS))
    )
    gray = game.variant is Variant.GRAY
    for seat, board in enumerate(game.boards):
        label = names[seat] if names else f"seat {seat}"
        if game.decision is Decision.OVER:
            b = board.breakdown()
            lines.append(
                f"{label}: final {b.total} = {b.rounds} + rows {b.rows} + columns {b.columns} "
                f"+ colours {b.colours}"
            )
        else:
            lines.append(f"{label}: score {board.score}")
        for row in range(5):
            count, colour = board.line_count[row], board.line_colour[row]
            pattern = "." * (row + 1 - count) + (LETTERS[colour] * count if count else "")
            cells = []
            for col in range(5):
                placed = board.wall[row * 5 + col]
                if placed >= 0:
                    cells.append(LETTERS[placed])
                elif gray:
                    cells.append(".")
                else:
                    cells.append(LETTERS[(col - row) % 5].lower())
            lines.append(f"  {pattern:>5} | {' '.join(cells)}")
        floor = "".join("1" if item == MARKER else LETTERS[item] for item in board.floor)
        lines.append(f"  floor: {floor or '-'}")
    return "\n".join(lines)
