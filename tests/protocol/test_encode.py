"""The incremental ``decide`` encoder gives exactly the bytes of the plain encoding."""

from __future__ import annotations

import random

import orjson
import pytest

from arena.engine import Game
from arena.protocol.encode import DecideEncoder, encode_decide, encoder_for


def plain_decide(req_id: int, game_id: str, game: Game, time_left_ms: int) -> bytes:
    """The reference encoding: orjson of plain dicts built from scratch."""
    options = [
        {"column": m[0]} if len(m) == 1 else {"source": m[0], "colour": m[1], "line": m[2]}
        for m in game.legal_moves()
    ]
    message = {
        "type": "decide",
        "id": req_id,
        "game_id": game_id,
        "seat": game.current_player,
        "decision": game.decision.value,
        "time_left_ms": time_left_ms,
        "options": options,
        "observation": game.observation_dict(),
    }
    return orjson.dumps(message) + b"\n"


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_incremental_encoding_matches_the_plain_encoding(players: int, variant: str) -> None:
    rng = random.Random(players)
    for seed in range(3):
        game = Game.new(players=players, variant=variant, seed=seed)
        encoder = DecideEncoder(game)
        req_id = 0
        while not game.is_over():
            req_id += 1
            options = game.legal_moves()
            line = encoder.decide(req_id, 'g"1\\', game.current_player, options, 900)
            assert line == plain_decide(req_id, 'g"1\\', game, 900)
            game.apply(rng.choice(options))


def test_skipped_decisions_and_a_new_game_are_encoded_afresh() -> None:
    """A seat that sees the game only every few decisions still gets the whole position."""
    rng = random.Random(3)
    game = Game.new(players=3, variant="gray", seed=5)
    for step in range(400):
        if game.is_over():
            game = Game.new(players=3, variant="gray", seed=step)
        options = game.legal_moves()
        if step % 3 == 0:
            line = encode_decide(step, "g", game.current_player, game, options, 10)
            assert line == plain_decide(step, "g", game, 10)
            assert encoder_for(game) is encoder_for(game)
        game.apply(rng.choice(options))
