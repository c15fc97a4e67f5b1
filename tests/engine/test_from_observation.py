"""Bots can rebuild the engine's game from the observation they receive, and simulate."""

from __future__ import annotations

import json
import random

import pytest

from arena.engine import Game


@pytest.mark.parametrize("variant", ["coloured", "gray"])
@pytest.mark.parametrize("players", [2, 4])
def test_rebuilt_game_matches_and_plays_on_identically(variant: str, players: int) -> None:
    rng = random.Random(players)
    game = Game.new(players=players, variant=variant, seed=11)
    checked = 0
    while not game.is_over():
        wire = json.loads(json.dumps(game.observation_dict()))
        rebuilt = Game.from_observation(wire)
        assert rebuilt.observation_dict() == game.observation_dict()
        assert rebuilt.legal_moves() == game.legal_moves()
        assert sum(rebuilt.tile_counts().values()) == 100
        # Play the rest of the round the same way in both: same positions throughout.
        twin, probe_rng = game.copy(), random.Random(checked)
        round_now = rebuilt.round
        while not twin.is_over() and twin.round == round_now:
            move = probe_rng.choice(twin.legal_moves())
            twin.apply(move)
            rebuilt.apply(move)
            if twin.round == round_now or twin.is_over():
                assert rebuilt.observation_dict()["players"] == twin.observation_dict()["players"]
        checked += 1
        game.apply(rng.choice(game.legal_moves()))
    assert checked > 40
