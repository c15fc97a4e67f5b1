"""The COMP90054 course runner's own game loop, timed in the same run as a tournament
(``arena bench tournament --baseline-comp90054 FOLDER``).

What is timed: the 2021 framework's ``game.Game(...).Run()`` exactly as its
``general_game_runner`` plays one game, with its rules (``Azul.azul_model.AzulGameRule``)
and two in-process agents it ships (``agents/generic/first_move.py`` against
``agents/generic/random.py``), no displayer, and its per-move timeouts switched off
(``game.FREEDOM = True``: the runner's own debugging switch, which skips its
``func_timeout`` thread per move; its deep copies of the state and actions for each move
stay, they are its loop). The runner's git cloning, replay pickling and logs are not timed.
The user's own copy is loaded (never shipped: its code stays outside the project); the
clock is this process's CPU time, which is every CPU second the runner used (it is one
process with its agents in it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.bench.engine import BaselineError

RUNNER_FILES = ("game.py", "template.py", "Azul/azul_model.py")
AGENTS = ("agents/generic/first_move.py", "agents/generic/random.py")
"""The framework's two generic agents, seats 0 and 1 (first legal action; uniform random)."""


@dataclass(frozen=True)
class Comp90054Runner:
    """The framework's ``Game`` class, its rules and its agents' classes, loaded."""

    folder: Path
    game_class: Any
    game_rule: Any
    agent_classes: tuple[Any, Any]

    def play(self, games: int, seed: int) -> tuple[float, float, int]:
        """``games`` games, seeds ``seed``, ``seed + 1``, ...: (CPU seconds, wall seconds,
        actions played by the agents)."""
        actions = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(games):
            agents = [cls(seat) for seat, cls in enumerate(self.agent_classes)]
            game = self.game_class(
                self.game_rule,
                agents,
                num_of_agent=2,
                seed=seed + i,
                displayer=None,
                agents_namelist=["first_move", "random"],
            )
            history = game.Run()
            actions += len(history["actions"])
        return time.process_time() - cpu, time.perf_counter() - wall, actions


def _without_func_timeout() -> None:
    """``game.py`` imports ``func_timeout`` (a pip package) even when its timeouts are off;
    if it is not installed, a stand-in that is never called (FREEDOM is on) lets it load."""
    try:
        importlib.import_module("func_timeout")
    except ImportError:
        stand_in = types.ModuleType("func_timeout")

        class FunctionTimedOut(Exception):
            pass

        def func_timeout(*_: object, **__: object) -> object:
            raise RuntimeError("the COMP90054 runner's timeouts are off in this bench")

        stand_in.FunctionTimedOut = FunctionTimedOut  # type: ignore[attr-defined]
        stand_in.func_timeout = func_timeout  # type: ignore[attr-defined]
        sys.modules["func_timeout"] = stand_in


def _agent_class(folder: Path, relative: str) -> Any:
    path = folder / relative
    name = "arena_bench_comp90054_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BaselineError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise BaselineError(f"{path} does not load: {error}") from None
    agent = getattr(module, "myAgent", None)
    if agent is None:
        raise BaselineError(f"{path} has no myAgent class (the framework's agent API)")
    return agent


def load_runner(folder: Path) -> Comp90054Runner:
    """The runner from the user's copy of the 2021 framework. Raises :class:`BaselineError`
    (one line: the folder and what is missing) for a folder that is not the framework."""
    missing = [name for name in (*RUNNER_FILES, *AGENTS) if not (folder / name).is_file()]
    if missing:
        raise BaselineError(
            f"{folder} is not a COMP90054 Azul framework folder (no {', '.join(missing)} in it)"
        )
    root = str(folder.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)  # the framework imports template, utils, Azul by name
    _without_func_timeout()
    try:
        game = importlib.import_module("game")
        model = importlib.import_module("Azul.azul_model")
    except Exception as error:  # its imports (numpy, ...) or its code
        raise BaselineError(f"the COMP90054 runner in {folder} does not load: {error}") from None
    game_class, rule = getattr(game, "Game", None), getattr(model, "AzulGameRule", None)
    if game_class is None or not hasattr(game_class, "Run") or rule is None:
        raise BaselineError(
            f"{folder}: its game.py has no Game class with Run(), or Azul.azul_model no "
            "AzulGameRule (the 2021 framework's runner API, which the bench plays through)"
        )
    game.FREEDOM = True  # type: ignore[attr-defined]  # its timeouts off (see the module's docstring)
    agents = (_agent_class(folder, AGENTS[0]), _agent_class(folder, AGENTS[1]))
    return Comp90054Runner(folder, game_class, rule, agents)
