"""The compiled engine (C) against the pure-Python one, in one process, position by position.

``game.py`` is the specification; the C build must play the same games: the same legal moves
in the same order, the same deals from the same seeds, the same scores, observations, records
and errors. The pure engine is loaded from its file beside the compiled one (its own module,
the same tables and shared classes, so ``IllegalMove`` is one class for both). Skipped when no
compiled build runs, and failed instead when CI asks for it (``ARENA_REQUIRE_COMPILED_ENGINE``).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import random
import sys
import weakref
from pathlib import Path
from typing import Any

import orjson
import pytest

import arena.engine
from arena.engine import (
    CENTRE,
    FLOOR,
    Decision,
    Game,
    IllegalDeal,
    IllegalMove,
    Move,
    Place,
    moves_json,
)

if not arena.engine.COMPILED:
    if os.environ.get("ARENA_REQUIRE_COMPILED_ENGINE") == "1":
        pytest.fail(f"no compiled engine: {arena.engine.ENGINE_BUILD}", pytrace=False)
    pytest.skip(f"no compiled engine here ({arena.engine.ENGINE_BUILD})", allow_module_level=True)


def _load_pure() -> type[Game]:
    path = Path(arena.engine.__file__).resolve().parent / "game.py"
    spec = importlib.util.spec_from_file_location("arena_engine_pure_game_parity", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    pure: type[Game] = module.Game
    return pure


Pure = _load_pure()
pure_moves_json = sys.modules[Pure.__module__].moves_json
assert Pure is not Game and Game.__module__ == "arena.engine.game"


def state(game: Game) -> dict[str, Any]:
    """Everything a user of either engine can read, as plain data."""
    return {
        "legal": game.legal_moves(),
        "scores": game.scores(),
        "observation": game.observation_dict(),
        "observation_json": game.observation_json(),
        "decision": game.decision,
        "pending": game.pending_line,
        "end": game.end_reason,
        "rng": game._rng,
        "tiles": game.tile_counts(),
        "breakdowns": game.breakdowns(),
        "ranks": game.ranks(),
        "factories": game.factory_counts(),
        "masks": [
            (b.accept, b.row_cells, b.row_colours, b.col_rows, b.colour_cols, b.full_rows())
            for b in game.boards
        ],
        "rounds": [
            (log.number, log.first_player, log.codes, log.decisions, log.scores)
            for log in game.rounds
        ],
        "repr": repr(game).replace(type(game).__name__, "Game"),
    }


def assert_same(compiled: Game, pure: Game, where: str = "") -> None:
    a, b = state(compiled), state(pure)
    for key in a:
        assert a[key] == b[key], f"{where}: {key} differs\n{compiled.render()}"


def play_both(
    compiled: Game, pure: Game, rng: random.Random, moves: int = 10_000, where: str = ""
) -> int:
    """Random moves on both, compared after every move; returns the moves played."""
    n = 0
    while not pure.is_over() and n < moves:
        assert not compiled.is_over()
        legal = compiled.legal_moves()
        move = legal[rng.randrange(len(legal))]
        compiled.apply(move)
        pure.apply(move)
        n += 1
        assert_same(compiled, pure, f"{where} move {n}")
    assert compiled.is_over() == pure.is_over()
    return n


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_random_games_with_diverging_copies_match_move_for_move(players: int, variant: str) -> None:
    for seed in range(10):
        compiled = Game.new(players=players, variant=variant, seed=seed)
        pure = Pure.new(players=players, variant=variant, seed=seed)
        assert_same(compiled, pure, f"seed {seed} start")
        rng = random.Random(seed)
        step = 0
        while not pure.is_over():
            if step % 9 == 4:
                # Copies (one with a fresh generator) play on their own: they must still
                # match each other, and leave their originals as they were.
                before = state(compiled)
                copy_seed = None if step % 2 else seed + 1000
                copies = compiled.copy(seed=copy_seed), pure.copy(seed=copy_seed)
                play_both(*copies, random.Random(step), 25, f"seed {seed} copy at {step}")
                assert state(compiled) == before
                assert_same(compiled, pure, f"seed {seed} after the copy at {step}")
            step += play_both(compiled, pure, rng, 1, f"seed {seed}")
        names = [f"p{i}" for i in range(players)]
        assert compiled.record(names).model_dump_json() == pure.record(names).model_dump_json()
        assert compiled.render(names) == pure.render(names)


@pytest.mark.parametrize("seed", [0, 1, 2**63, 2**64 - 1, 2**64, 2**200 + 7, -1, -(2**70)])
def test_seeds_of_any_size_deal_the_same_games(seed: int) -> None:
    compiled, pure = Game.new(players=3, seed=seed), Pure.new(players=3, seed=seed)
    assert compiled.seed == pure.seed == seed
    play_both(compiled, pure, random.Random(seed % 1000), where=f"seed {seed}")


def test_round_limit_and_game_errors_match() -> None:
    compiled, pure = Game.new(seed=4, round_limit=2), Pure.new(seed=4, round_limit=2)
    play_both(compiled, pure, random.Random(4))
    assert compiled.end_reason is pure.end_reason is not None
    assert compiled.end_reason.value == "round_limit"
    for kwargs in ({"players": 5}, {"players": 1}, {"round_limit": 0}, {"variant": "purple"}):
        with pytest.raises(ValueError) as c_error:
            Game.new(**kwargs)
        with pytest.raises(ValueError) as p_error:
            Pure.new(**kwargs)
        assert str(c_error.value) == str(p_error.value)


def test_copies_are_independent_both_ways() -> None:
    for variant in ("coloured", "gray"):
        original = Game.new(players=2, variant=variant, seed=11)
        rng = random.Random(11)
        for _ in range(17):
            original.apply(rng.choice(original.legal_moves()))
        view = original.boards[0]  # a view of the original's board
        before = state(original)
        child = original.copy()
        assert state(child) == before
        while not child.is_over():  # the copy plays on: the original does not move
            child.apply(child.legal_moves()[-1])
        assert state(original) == before
        assert view.score == before["observation"]["players"][0]["score"]
        child_state = state(child)
        while not original.is_over():  # and the other way round
            original.apply(original.legal_moves()[0])
        assert state(child) == child_state
        assert view.score == original.boards[0].score


def test_board_views_write_through_and_board_copies_do_not() -> None:
    game = Game.new(seed=5)
    board = game.boards[1]
    board.score = 17
    assert game.scores() == [0, 17]
    detached = board.copy()
    detached.score = 3
    assert game.boards[1].score == 17
    lines = board.line_count
    lines[0] = 1  # a snapshot: edits in place do not reach the game
    assert game.boards[1].line_count == [0] * 5


def test_subclasses_and_cycles_through_board_views() -> None:
    """A subclass keeps its type through ``new``/``from_observation`` (``copy()`` makes a
    ``Game``, as the pure engine's does), and a board view kept on the game is collected."""

    class Tracked(Game):
        pass

    game = Tracked.new(players=3, seed=6)
    assert type(Tracked.from_observation(game.observation_dict())) is Tracked
    assert type(game.copy()) is Game
    game.view = game.boards[2]  # type: ignore[attr-defined]
    alive = weakref.ref(game)
    del game
    gc.collect()
    assert alive() is None


def positions(variant: str, players: int, seed: int) -> list[Game]:
    game = Game.new(players=players, variant=variant, seed=seed)
    rng = random.Random(seed)
    out = []
    while not game.is_over():
        out.append(game.copy())
        game.apply(rng.choice(game.legal_moves()))
    out.append(game)
    return out


@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_from_observation_round_trips_and_matches(variant: str) -> None:
    places = 0
    for players in (2, 4):
        for position in positions(variant, players, seed=players)[::3]:
            view = position.observation_dict()
            compiled = Game.from_observation(view, seed=9)
            pure = Pure.from_observation(view, seed=9)
            assert type(compiled) is Game
            assert compiled.observation_dict() == view
            assert_same(compiled, pure, f"from {view['round']}")
            assert compiled.legal_moves() == position.legal_moves()
            places += compiled.decision is Decision.PLACE
            play_both(compiled, pure, random.Random(3), 12, "from_observation")
    if variant == "gray":
        assert places, "no gray-wall placement was rebuilt"


def test_injected_deals_replay_the_seeded_game() -> None:
    for variant in ("coloured", "gray"):
        pure = Pure.new(players=4, variant=variant, seed=21)
        rng = random.Random(21)
        while not pure.is_over():
            pure.apply(rng.choice(pure.legal_moves()))
        deals = [log.factories for log in pure.rounds]
        compiled = Game.new(players=4, variant=variant, seed=99, deals=deals)
        replayed = Pure.new(players=4, variant=variant, seed=99, deals=deals)
        for log in pure.rounds:
            for _, move in log.decisions:
                compiled.apply(move)
                replayed.apply(move)
                assert_same(compiled, replayed, "replay")
        assert compiled.record().model_dump_json() == replayed.record().model_dump_json()
        assert compiled.scores() == pure.scores()
        assert compiled._deal_pos == len(deals)


def test_illegal_deals_raise_the_same_errors() -> None:
    full = [[4, 0, 0, 0, 0]] * 5
    bad_deals = [
        [[[4, 0, 0, 0, 0]] * 4 + [[1, 0, 0, 0, 4]]],  # 5 tiles
        [[[4, 0, 0, 0, 0]] * 4 + [[-1, 1, 1, 1, 2]]],  # malformed
        [[[4, 0, 0, 0, 0]] * 6],  # 6 factories for 2 players
        [[[4, 0, 0, 0, 0]] * 4 + [[3, 0, 0, 0, 0]]],  # partial fill, full bag
        [[[4, 0, 0, 0, 0]] * 6][:0],  # no deal at all
    ]
    for deals in bad_deals:
        with pytest.raises(IllegalDeal) as c_error:
            Game.new(players=2, deals=deals)
        with pytest.raises(IllegalDeal) as p_error:
            Pure.new(players=2, deals=deals)
        assert str(c_error.value) == str(p_error.value)
    # Round 2 has no deal: the round's last move raises, both engines alike.
    compiled, pure = Game.new(players=2, deals=[full]), Pure.new(players=2, deals=[full])
    with pytest.raises(IllegalDeal) as c_error:
        while True:
            move = compiled.legal_moves()[-1]
            compiled.apply(move)
            pure.apply(move)
    with pytest.raises(IllegalDeal) as p_error:
        pure.apply(move)
    assert str(c_error.value) == str(p_error.value) == "no deal given for round 2"
    assert compiled.tile_counts() == pure.tile_counts()


BAD_MOVES: list[Any] = [
    Move(0, 0, 0),
    Move(CENTRE, 4, FLOOR),
    Move(8, 0, 0),  # no factory 8 with 2 players
    (0, 7, 0),
    (0, 0, 9),
    (99, 0, 0),
    "0:B>1",
    (0, 0),
    5,
    None,
    Place(2),
    [CENTRE, 1, 2],
    (0.5, 1, 1),
]


@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_illegal_moves_raise_the_same_errors_and_change_nothing(variant: str) -> None:
    start = positions(variant, 2, seed=8)[7].observation_dict()
    compiled, pure = Game.from_observation(start, seed=1), Pure.from_observation(start, seed=1)
    rng = random.Random(8)
    checked = 0
    while not compiled.is_over():
        legal = compiled.legal_moves()
        before = state(compiled)
        for move in [*BAD_MOVES, Place(0), Place(4), (1,)]:
            if move in legal:
                continue
            with pytest.raises(IllegalMove) as c_error:
                compiled.apply(move)
            with pytest.raises(IllegalMove) as p_error:
                pure.apply(move)
            assert str(c_error.value) == str(p_error.value), move
            assert state(compiled) == before
            checked += 1
        move = legal[rng.randrange(len(legal))]
        # Equal moves that are not the interned tuples play alike (and log the interned one).
        given = list(move) if isinstance(move, Move) and rng.random() < 0.3 else move
        compiled.apply(given)
        pure.apply(given)
        assert_same(compiled, pure, "after a move given as a list")
    for engine_game in (compiled, pure):
        with pytest.raises(IllegalMove, match="the game is over"):
            engine_game.apply(Move(0, 0, 0))
    assert checked > 100


@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_moves_and_observations_as_json_match_the_plain_encoding(variant: str) -> None:
    """What the referee sends: ``moves_json`` of the legal moves and ``observation_json``,
    from either engine, are the bytes of orjson of the plain data (placements included)."""
    for players in (2, 3, 4):
        for game in positions(variant, players, seed=players):
            legal = game.legal_moves()
            plain = orjson.dumps(
                [
                    {"column": m[0]}
                    if len(m) == 1
                    else {"source": m[0], "colour": m[1], "line": m[2]}
                    for m in legal
                ]
            )
            assert moves_json(legal) == pure_moves_json(legal) == plain
            assert game.observation_json() == orjson.dumps(game.observation_dict())


@pytest.mark.parametrize("bad", [(1, 2), (9, 0, 0), (0, 5, 0), (0, 0, 5), [0, 0, 0], "x"])
def test_moves_json_refuses_what_is_not_a_move(bad: object) -> None:
    moves = [Move(CENTRE, 0, FLOOR), bad]
    for encode in (moves_json, pure_moves_json):
        with pytest.raises(ValueError, match="not a move"):
            encode(moves)  # type: ignore[arg-type]
