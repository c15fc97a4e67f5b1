"""A COMP90054 Azul framework stand-in and test agents, for the adapter kit's tests (and
any course test that needs them): ``write_framework(dest, api)`` lays out the framework
the way the course ships it, ``write_agent(dest, kind, api)`` writes an agent file.

Written from the framework's public API for these tests; the course's (GPL) framework is
never copied here. The engine is fixtures/comp90054/standin_engine.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ENGINE = Path(__file__).parent / "fixtures" / "comp90054" / "standin_engine.py"
APIS = ("2020", "2021")
AGENT_KINDS = ("random", "greedy", "numpy-chatty", "illegal")

_2020 = {
    "utils.py": "from standin_engine import Action, Move, Tile, TileGrab  # noqa: F401\n",
    "model.py": "from standin_engine import *  # noqa: F403\nfrom utils import *  # noqa: F403\n",
    "advance_model.py": (
        "import random\n\nfrom model import *  # noqa: F403\n\n\n"
        "class Player:\n    def __init__(self, _id):\n        self.id = _id\n\n\n"
        "class AdvancePlayer(Player):\n"
        "    def StartRound(self, game_state):\n        return None\n\n"
        "    def SelectMove(self, moves, game_state):\n        return random.choice(moves)\n"
    ),
}
_2021 = {
    "Azul/__init__.py": "",
    "Azul/azul_utils.py": "from Azul.standin_engine import Action, Tile, TileGrab  # noqa: F401\n",
    "Azul/azul_model.py": """import copy

from Azul.standin_engine import GameState, PlayerState, TileDisplay  # noqa: F401

AgentState = PlayerState


def _alias(name):
    return property(lambda self: getattr(self, name), lambda self, v: setattr(self, name, v))


class AzulState(GameState):
    agents = _alias("players")
    first_agent = _alias("first_player")
    next_first_agent = _alias("next_first_player")
    first_agent_taken = _alias("first_player_taken")


class AzulGameRule:
    def __init__(self, num_of_agent):
        self.num_of_agent = num_of_agent

    def getLegalActions(self, game_state, agent_id):
        return game_state.agents[agent_id].GetAvailableMoves(game_state)

    def generateSuccessor(self, state, action, agent_id):
        state.ExecuteMove(agent_id, action)
        return state

    def copy(self, state):
        return copy.deepcopy(state)
""",
}

_BODY = {
    "random": "        return random.choice({moves})\n",
    "greedy": """        best, best_points = None, None
        for move in {moves}:
            after = copy.deepcopy(game_state)
            after.ExecuteMove(self.id, move)
            points, _ = after.{players}[self.id].ScoreRound()
            if best_points is None or points > best_points:
                best, best_points = move, points
        return best
""",
    "numpy-chatty": """        print('{{"type":"move","id":1,"index":0}}')  # not for the referee
        print("thinking about", len({moves}), "moves")
        walls = numpy.array(game_state.{players}[self.id].grid_state)
        rng = numpy.random.default_rng(int(walls.sum()) + len({moves}))
        return {moves}[int(rng.integers(len({moves})))]
""",
    "illegal": """        grab = copy.deepcopy({moves}[0][2])
        grab.pattern_line_dest = 9
        return ({moves}[0][0], 99, grab)
""",
}


def write_framework(dest: Path, api: str = "2020") -> Path:
    """Write the stand-in framework into ``dest`` (made world-readable for the per-bot uid)
    in the course's layout for ``api``; return ``dest``: the folder to declare as a
    python_env."""
    files = _2020 if api == "2020" else _2021
    engine = "standin_engine.py" if api == "2020" else "Azul/standin_engine.py"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "Azul").mkdir(exist_ok=True) if api != "2020" else None
    shutil.copy(ENGINE, dest / engine)
    for name, text in files.items():
        (dest / name).write_text(text, encoding="utf-8")
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def write_agent(dest: Path, kind: str, api: str = "2020") -> Path:
    """Write an agent of ``kind`` (random, greedy by immediate round score, numpy-chatty:
    prints to stdout and uses numpy, illegal: answers a move that is not legal) for
    ``api`` into the folder ``dest``, under the course's file name; return the file."""
    if kind not in _BODY:
        raise ValueError(f"agent kind {kind!r}: one of {', '.join(AGENT_KINDS)}")
    players = "players" if api == "2020" else "agents"
    moves = "moves" if api == "2020" else "actions"
    imports = "import copy\nimport random\n"
    if kind == "numpy-chatty":
        imports += "\nimport numpy\n"
    if api == "2020":
        head = (
            f"{imports}\nfrom advance_model import AdvancePlayer\n\n\n"
            "class myPlayer(AdvancePlayer):\n"
            "    def __init__(self, _id):\n        super().__init__(_id)\n\n"
            "    def StartRound(self, game_state):\n"
            '        print("StartRound", self.id)\n        return None\n\n'
            "    def SelectMove(self, moves, game_state):\n"
        )
        path = dest / "player.py"
    else:
        head = (
            f"{imports}\n\nclass myAgent:\n"
            "    def __init__(self, _id):\n        self.id = _id\n\n"
            "    def SelectAction(self, actions, game_state):\n"
        )
        path = dest / "myTeam.py"
    path.write_text(head + _BODY[kind].format(moves=moves, players=players), encoding="utf-8")
    path.chmod(0o644)
    return path
