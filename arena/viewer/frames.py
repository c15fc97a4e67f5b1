"""A game record turned into what the viewer draws: one position per decision.

The record is re-executed through the engine (``arena.engine.replay``), so the
positions are the rules' own, any valid record works, and a record that does not
verify is refused instead of drawn wrongly. Positions are compact JSON-ready data
(colours as the letters ``B Y R K W``), the viewer script only draws them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

import orjson

from arena.engine import Game, GameRecord, replay
from arena.engine import game as engine_game
from arena.engine.render import tiles_text
from arena.engine.tables import CODE_COUNTS, LETTERS, MARKER

assert len(LETTERS) == MARKER  # _FLOOR below relies on it

VIEWER_DATA_FORMAT = "azul-arena/viewer-data"
"""Tag of the JSON the viewer script reads (one per game)."""


_CELL = ".BYRKW"
"""Wall cell text by colour + 1 (-1 = empty)."""
_FLOOR = LETTERS + "1"
"""Floor item text by item (colours 0-4, ``MARKER`` = 5)."""
_FACTORY_TEXT = [tiles_text(counts) for counts in CODE_COUNTS]
"""Factory contents as letters, by factory code."""

Snapshot = tuple[Any, ...]
"""What :func:`position` draws, as plain values (:func:`snapshot`)."""
BoardState = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""A board in a snapshot: its score, its lines (five colours then five counts), its 25 wall
cells, its floor; each part drawn (and compared) on its own."""


_COMPILED_SNAPSHOT: Callable[[Game], Snapshot] | None = getattr(Game, "_snapshot", None)
"""The compiled engine's own :func:`snapshot` (~1 µs instead of ~4: the attributes below
are built on each read there); None for the pure engine."""


_COMPILED_DELTAS: Callable[..., list[dict[str, Any]]] | None = getattr(
    engine_game, "_encode_deltas", None
)
"""The compiled engine's loop of :func:`encode_frames` after the first frame; None for the
pure engine."""


def snapshot(game: Game) -> Snapshot:
    """Everything :func:`position` draws of ``game``, copied into a few tuples: a worker
    takes one before every decision and encodes them all after the game
    (:func:`encode_frames`), rather than drawing a position between a bot's reply and the
    next request."""
    if _COMPILED_SNAPSHOT is not None and type(game) is Game:
        return _COMPILED_SNAPSHOT(game)
    return (
        game.round,
        game.current_player,
        game.first_player,
        game.decision.value,
        game.pending_line,
        tuple(game.factories),
        tuple(game.centre),
        game.marker_in_centre,
        tuple(
            [
                (b.score, (*b.line_colour, *b.line_count), tuple(b.wall), tuple(b.floor))
                for b in game.boards
            ]
        ),
    )


def position(game: Game) -> dict[str, Any]:
    """The whole public position, compact: ``f`` factories, ``c`` centre, ``m`` marker in the
    centre, ``p`` per player ``s`` score, ``l`` pattern lines, ``w`` wall (25 cells, a letter
    or ``.``), ``f`` floor (``1`` = the first-player marker)."""
    return draw(snapshot(game))


def draw(taken: Snapshot) -> dict[str, Any]:
    """A :func:`snapshot` as :func:`position` draws it."""
    rnd, current, first, decision, pending, factories, centre, marker, states = taken
    return {
        "r": rnd,
        "cp": current,
        "fp": first,
        "d": decision,
        "pl": pending,
        "f": [_FACTORY_TEXT[code] for code in factories],
        "c": _centre_text(centre),
        "m": marker,
        "p": [_board(state) for state in states],
    }


def _board(state: BoardState) -> dict[str, Any]:
    """One board of a :func:`snapshot`, drawn."""
    score, lines, wall, floor = state
    return {"s": score, "l": _lines_text(lines), "w": _wall_text(wall), "f": _floor_text(floor)}


_TEXT_CACHE_SIZE = 50_000
_LINES_TEXT: dict[tuple[int, ...], list[str]] = {}
"""Pattern lines drawn, by their colours and counts (one list per state: frames are data
for JSON, never edited)."""
_TILES_TEXT: dict[tuple[int, ...], str] = {}
"""A centre drawn, by its counts."""
_FLOOR_TEXT_CACHE: dict[tuple[int, ...], str] = {}
"""A floor drawn, by its items."""


def _lines_text(lines: tuple[int, ...]) -> list[str]:
    text = _LINES_TEXT.get(lines)
    if text is None:
        if len(_LINES_TEXT) >= _TEXT_CACHE_SIZE:
            _LINES_TEXT.clear()
        text = _LINES_TEXT[lines] = [
            LETTERS[lines[i]] * lines[i + 5] if lines[i + 5] else "" for i in range(5)
        ]
    return text


def _centre_text(counts: tuple[int, ...]) -> str:
    text = _TILES_TEXT.get(counts)
    if text is None:
        if len(_TILES_TEXT) >= _TEXT_CACHE_SIZE:
            _TILES_TEXT.clear()
        text = _TILES_TEXT[counts] = tiles_text(counts)
    return text


def _wall_text(wall: tuple[int, ...]) -> str:
    return "".join([_CELL[cell + 1] for cell in wall])


def _floor_text(floor: tuple[int, ...]) -> str:
    return "".join([_FLOOR[item] for item in floor])


def encode_frames(taken: list[Snapshot]) -> list[dict[str, Any]]:
    """The first snapshot's :func:`position`, then each next one's :func:`delta` from the
    one before, compared as snapshots (tuples, in C) and drawn only where they differ,
    part by part (a draft move changes one board's lines and floor, never a wall): the
    same frames as ``delta`` of the drawn positions, without drawing every position."""
    # One loop, the texts' caches read inline: ~4 µs a position (a function per delta and a
    # board dict copied per change took ~6.5). The compiled engine repeats this loop in C
    # (~0.3 µs): a worker runs it once per game, on ~50 positions its caches no longer hold.
    if not taken:
        return []
    first = draw(taken[0])
    lines_drawn: list[list[str]] = [board["l"] for board in first["p"]]
    """Each seat's pattern lines as last drawn (an empty line's colour is not drawn, so
    lines that differ as snapshots may read the same)."""
    if _COMPILED_DELTAS is not None:
        return [first, *_COMPILED_DELTAS(taken, lines_drawn, _FACTORY_TEXT, LETTERS, _CELL, _FLOOR)]
    frames = [first]
    append = frames.append
    factory_text, centre_text, lines_text = _FACTORY_TEXT, _centre_text, _lines_text
    tiles_cache, lines_cache, floor_cache = _TILES_TEXT, _LINES_TEXT, _FLOOR_TEXT_CACHE
    r0, cp0, fp0, d0, pl0, factories0, centre0, m0, boards0 = taken[0]
    for after in taken[1:]:
        r1, cp1, fp1, d1, pl1, factories1, centre1, m1, boards1 = after
        out: dict[str, Any] = {}
        if r0 != r1:
            out["r"] = r1
        if cp0 != cp1:
            out["cp"] = cp1
        if fp0 != fp1:
            out["fp"] = fp1
        if d0 != d1:
            out["d"] = d1
        if pl0 != pl1:
            out["pl"] = pl1
        if factories0 != factories1:
            changed_factories = {}
            for i, a in enumerate(factories0):
                b = factories1[i]
                if a != b:
                    text = factory_text[b]
                    if factory_text[a] != text:
                        changed_factories[str(i)] = text
            if changed_factories:
                out["f"] = changed_factories
        if centre0 != centre1:
            text = tiles_cache.get(centre1)
            out["c"] = text if text is not None else centre_text(centre1)
        if m0 != m1:
            out["m"] = m1
        if boards0 != boards1:
            players = {}
            for seat, a in enumerate(boards0):
                b = boards1[seat]
                if a == b:
                    continue
                score0, lines0, wall0, floor0 = a
                score1, lines1, wall1, floor1 = b
                changed: dict[str, Any] = {}
                if score0 != score1:
                    changed["s"] = score1
                if lines0 != lines1:
                    text = lines_cache.get(lines1)
                    if text is None:
                        text = lines_text(lines1)
                    if text != lines_drawn[seat]:
                        lines_drawn[seat] = changed["l"] = text
                if wall0 != wall1:
                    changed["w"] = _wall_text(wall1)
                if floor0 != floor1:
                    text = floor_cache.get(floor1)
                    if text is None:
                        text = _floor_text(floor1)
                        if len(floor_cache) >= _TEXT_CACHE_SIZE:
                            floor_cache.clear()
                        floor_cache[floor1] = text
                    changed["f"] = text
                if changed:
                    players[str(seat)] = changed
            if players:
                out["p"] = players
        append(out)
        r0, cp0, fp0, d0, pl0, factories0, centre0, m0, boards0 = after
    return frames


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed from one position to the next: changed keys only; ``f`` (factories) and
    ``p`` (players) as ``{index: new value}`` with, per player, only its changed keys.
    A decision changes a factory or the centre and one board, so deltas are ~5x smaller
    (and most keys are equal: one comparison in C each).

    >>> before = {"cp": 0, "f": ["BB", "RY"], "p": [{"s": 0, "f": ""}]}
    >>> delta(before, {"cp": 1, "f": ["", "RY"], "p": [{"s": 0, "f": "1"}]})
    {'cp': 1, 'f': {'0': ''}, 'p': {'0': {'f': '1'}}}
    """
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before[key]
        if old == value:
            continue
        if key == "f":
            out[key] = {
                str(i): new
                for i, (was, new) in enumerate(zip(old, value, strict=True))
                if was != new
            }
        elif key == "p":
            out[key] = {
                str(seat): {k: v for k, v in new.items() if was[k] != v}
                for seat, (was, new) in enumerate(zip(old, value, strict=True))
                if was != new
            }
        else:
            out[key] = value
    return out


def reproduce_command(record: GameRecord) -> str:
    """The ``arena match`` command that replays this game's deal with the same seats.

    Bot folders are not in the record: each seat's name stands for its folder.
    """
    return _reproduce(record.players, record.variant, record.seed, record.round_limit)


def _reproduce(players: list[str], variant: str, seed: int | None, round_limit: int) -> str:
    parts = ["arena", "match", *(shlex.quote(str(name)) for name in players)]
    parts += ["--variant", str(variant)]
    if seed is not None:
        parts += ["--seed", str(seed)]
    if round_limit != 100:
        parts += ["--round-limit", str(round_limit)]
    return " ".join(parts)


def fault_steps(record: GameRecord) -> list[int | None]:
    """For each fault, the index of the decision it cost (the first matching move the referee
    played for that seat), or None when the record does not show one."""
    steps: list[int | None] = []
    claimed: set[int] = set()
    for fault in record.faults:
        found = None
        index = 0
        for rnd in record.rounds:
            for dec in rnd.decisions:
                if (
                    found is None
                    and index not in claimed
                    and rnd.number >= fault.round
                    and dec.seat == fault.seat
                    and dec.auto
                ):
                    found = index
                index += 1
        if found is not None:
            claimed.add(found)
        steps.append(found)
    return steps


def replay_frames(record: GameRecord) -> dict[str, Any]:
    """The part of a replay that takes the engine (~5 ms a game): the position before each
    decision and the final one (``frames[i]`` is before decision ``i``; the first in full,
    each next as its :func:`delta` from the one before) and the decision each fault cost.
    Free of names and ids, so a tournament stores it once, when the game is played (a
    finished game never changes), and reports only assemble it (:func:`assemble`).
    Raises ``ReplayError`` for a record that does not verify."""
    taken: list[Snapshot] = []
    take = taken.append

    def before(game: Game, move: str, seat: int) -> None:
        take(snapshot(game))

    final = replay(record, on_decision=before)
    taken.append(snapshot(final))
    return frames_of(taken, fault_steps(record))


def frames_of(taken: list[Snapshot], steps: list[int | None]) -> dict[str, Any]:
    """:func:`replay_frames` from the :func:`snapshot` before each decision and the final
    one, already known (a worker takes them live instead of re-running the game), and the
    game's :func:`fault_steps`."""
    return {"frames_encoding": "delta", "frames": encode_frames(taken), "fault_steps": steps}


def assemble(record: dict[str, Any], frames: dict[str, Any], game_id: str | None) -> dict[str, Any]:
    """The viewer data of a game from its record (as JSON data) and its stored
    :func:`replay_frames`: what :func:`viewer_data` returns, without the engine."""
    seed = record.get("seed")
    return {
        "format": VIEWER_DATA_FORMAT,
        "game_id": game_id,
        "record": record,
        "frames_encoding": frames["frames_encoding"],
        "frames": frames["frames"],
        "fault_steps": frames["fault_steps"],
        "reproduce": _reproduce(
            list(record["players"]), record["variant"], seed, int(record.get("round_limit", 100))
        ),
        # as text: seeds are 64-bit, and a JavaScript number keeps only 53 bits
        "seed": None if seed is None else str(seed),
    }


def assemble_json(record_json: bytes, frames_json: bytes, game_id: str | None) -> bytes:
    """:func:`assemble` as JSON text, splicing the stored frames in unparsed (they are
    most of the data; parsing and writing them again was a third of a report's cost per
    replay). The record is parsed (it must be a JSON object): the reproduce line needs it.
    Raises ``ValueError`` (``orjson.JSONDecodeError`` included) or ``KeyError`` for
    unusable input."""
    record = orjson.loads(record_json)
    frames = frames_json.strip()
    if not isinstance(record, dict) or not (frames.startswith(b"{") and frames.endswith(b"}")):
        raise ValueError("record or frames are not JSON objects")
    seed = record.get("seed")
    head = orjson.dumps({"format": VIEWER_DATA_FORMAT, "game_id": game_id})
    tail = orjson.dumps(
        {
            "reproduce": _reproduce(
                list(record["players"]),
                record["variant"],
                seed,
                int(record.get("round_limit", 100)),
            ),
            "seed": None if seed is None else str(seed),
        }
    )
    return b"".join(
        (head[:-1], b',"record":', record_json.strip(), b",", frames[1:-1], b",", tail[1:])
    )


def viewer_data(record: GameRecord, game_id: str | None = None) -> dict[str, Any]:
    """Everything one replay page shows: the record itself plus its :func:`replay_frames`."""
    return assemble(record.model_dump(mode="json"), replay_frames(record), game_id)
