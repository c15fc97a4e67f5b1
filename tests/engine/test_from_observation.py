"""Bots can rebuild the engine's game from the observation they receive, and simulate."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.engine import Game

ENGINE = Path(__file__).resolve().parents[2] / "arena" / "engine"


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


def test_engine_core_runs_without_pydantic(tmp_path: Path) -> None:
    """A Python bot can copy arena/engine into its folder and run it on a bare python3."""
    package = tmp_path / "arena"
    shutil.copytree(ENGINE, package / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").write_text("")
    script = (
        "import builtins, json, random, sys\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'pydantic': raise ImportError('no pydantic here')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from arena.engine import Game\n"
        "g = Game.new(players=2, variant='gray', seed=1); r = random.Random(0)\n"
        "for _ in range(30): g.apply(r.choice(g.legal_moves()))\n"
        "h = Game.from_observation(json.loads(json.dumps(g.observation_dict())))\n"
        "assert h.legal_moves() == g.legal_moves()\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "ok", out.stderr
