"""The Azul rules engine: positions, legal moves, scoring, records. No I/O.

Bot authors can use it to simulate::

    from arena.engine import Game, Move
    game = Game.new(players=2, variant="gray", seed=1)
    for move in game.legal_moves():
        child = game.copy()
        child.apply(move)
        print(move, child.scores())

The core (``Game``, moves, tables) needs only the standard library, so it can be
copied into a bot folder and run on a bare ``/usr/bin/python3``; the pydantic models
(observation, record, replay) are imported on first use.

``make engine-compiled`` builds the C extension ``_game.c`` (optional, ~8x faster: the same
games, move for move); it is loaded as ``arena.engine.game`` when present and built from the
current sources, the pure-Python ``game.py`` otherwise, and ``ARENA_PURE_ENGINE=1`` forces it.
:data:`ENGINE_BUILD` says which engine runs and why.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.engine.tables import (
    CENTRE,
    COLOURS,
    FLOOR,
    LETTERS,
    MARKER,
    AnyMove,
    Decision,
    EndReason,
    Move,
    Place,
    Variant,
)

COMPILED_DIR = Path(__file__).resolve().parent / "_compiled"
"""Where ``make engine-compiled`` puts the compiled engine (``game.<extension suffix>``)."""
COMPILED_SOURCE = "_game.c"
"""The C source of the compiled ``arena.engine.game``."""
DIGESTED_SOURCES = (COMPILED_SOURCE, "game.py", "tables.py")
"""What a build is stamped with: its C source, the pure engine it must play like (a rules
change there makes the build stale until rebuilt) and the tables whose layout the C repeats."""


def source_digest() -> str:
    """What a compiled build must have been built from: the sources it compiles and repeats."""
    from hashlib import sha256

    digest = sha256()
    for name in DIGESTED_SOURCES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


def _compiled_build_usable() -> str | None:
    """Why the compiled build is not used, or None when it may be (it is then on ``__path__``).

    Only a build of the current sources counts: a stale one could play different games.
    """
    if os.environ.get("ARENA_PURE_ENGINE", "") not in ("", "0"):
        return "ARENA_PURE_ENGINE is set"
    try:
        built_from = (COMPILED_DIR / "SOURCE").read_text().strip()
    except OSError:
        return "no compiled build (make engine-compiled builds one)"
    if built_from != source_digest():
        return "the compiled build is stale: rebuild it (make engine-compiled)"
    __path__.insert(0, str(COMPILED_DIR))
    return None


_not_compiled = _compiled_build_usable()
try:
    from arena.engine.game import (
        Board,
        Breakdown,
        Deal,
        Game,
        IllegalDeal,
        IllegalMove,
        moves_json,
    )
except ImportError as error:  # a build for another Python, or a broken one: the pure engine
    if str(COMPILED_DIR) not in __path__:
        raise
    __path__.remove(str(COMPILED_DIR))
    for _name in [m for m in sys.modules if m.startswith("arena.engine.game")]:
        del sys.modules[_name]
    _not_compiled = f"the compiled build does not load ({error})"
    from arena.engine.game import (
        Board,
        Breakdown,
        Deal,
        Game,
        IllegalDeal,
        IllegalMove,
        moves_json,
    )

COMPILED = not (sys.modules["arena.engine.game"].__file__ or "").endswith(".py")
"""Whether the rules run from the compiled C build (else the pure-Python modules, the fallback)."""
if not COMPILED and _not_compiled is None:
    _not_compiled = "no compiled module for this Python"
ENGINE_BUILD = "compiled (C extension)" if COMPILED else f"pure Python: {_not_compiled}"
"""Which engine runs, for ``arena doctor`` and ``arena bench engine``."""

if TYPE_CHECKING:
    from arena.engine.observation import Observation, PlayerView
    from arena.engine.record import GameRecord, parse_move
    from arena.engine.verify import Divergence, ReplayError, replay

_LAZY = {
    "Observation": "arena.engine.observation",
    "PlayerView": "arena.engine.observation",
    "GameRecord": "arena.engine.record",
    "parse_move": "arena.engine.record",
    "Divergence": "arena.engine.verify",
    "ReplayError": "arena.engine.verify",
    "replay": "arena.engine.verify",
}


def __getattr__(name: str) -> Any:
    """Import the pydantic-based parts only when asked for."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'arena.engine' has no attribute {name!r}")


__all__ = [
    "CENTRE",
    "COLOURS",
    "COMPILED",
    "ENGINE_BUILD",
    "FLOOR",
    "LETTERS",
    "MARKER",
    "AnyMove",
    "Board",
    "Breakdown",
    "Deal",
    "Decision",
    "Divergence",
    "EndReason",
    "Game",
    "GameRecord",
    "IllegalDeal",
    "IllegalMove",
    "Move",
    "Observation",
    "Place",
    "PlayerView",
    "ReplayError",
    "Variant",
    "moves_json",
    "parse_move",
    "replay",
]
