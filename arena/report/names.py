"""Bot names that fit a terminal column: one line each, elided in the middle with an
ellipsis when too long, and still told apart when several share a prefix or a suffix.

Widths are terminal cells (a CJK character or an emoji takes two), measured on the text
as shown: bot-controlled names pass through :func:`arena.textsafe.visible` first.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len

from arena.textsafe import visible

ELLIPSIS = "…"
HEAD_SHARE = 0.6
"""Of the cells left beside the ellipsis, the share kept from the start of a name (names
usually differ first at the start; versions and suffixes such as ``-v2`` at the end)."""


def _head(text: str, cells: int) -> str:
    out, used = [], 0
    for char in text:
        used += cell_len(char)
        if used > cells:
            break
        out.append(char)
    return "".join(out)


def _tail(text: str, cells: int) -> str:
    return _head(text[::-1], cells)[::-1]


def elide(name: str, width: int, head: int) -> str:
    """``name`` in at most ``width`` cells: itself if it fits, else ``head`` cells of its
    start, an ellipsis and as much of its end as fits."""
    if cell_len(name) <= width:
        return name
    return _head(name, head) + ELLIPSIS + _tail(name, width - 1 - head)


def short_names(names: Iterable[str], width: int) -> dict[str, str] | None:
    """Each name (as shown: control characters made visible) in at most ``width`` cells,
    all still distinct; None when no way of eliding tells them apart at this width.

    Every long name is cut at the same place, the first of the cuts (nearest
    ``HEAD_SHARE`` first) that keeps them all distinct.

    >>> short_names(["python-greedy", "python-random", "c-mcts"], 8)
    {'python-greedy': 'pyth…edy', 'python-random': 'pyth…dom', 'c-mcts': 'c-mcts'}
    """
    shown = {name: visible(name) for name in dict.fromkeys(names)}
    if all(cell_len(text) <= width for text in shown.values()):
        return shown
    if width < 3:
        return None
    default = round((width - 1) * HEAD_SHARE)
    for head in sorted(range(1, width - 1), key=lambda h: (abs(h - default), -h)):
        cut = {name: elide(text, width, head) for name, text in shown.items()}
        if len(set(cut.values())) == len(cut):
            return cut
    return None
