#!/usr/bin/env python3
"""comp90054-adapter: run a COMP90054 Azul framework agent unchanged (protocol v1).

The course's agents are written against the framework's own classes: the 2020 API
(``class myPlayer(AdvancePlayer)`` with ``SelectMove(moves, game_state)`` and
``StartRound(game_state)`` over ``model.GameState``) or the 2021+ one (``class myAgent``
with ``SelectAction(actions, game_state)`` over ``Azul.azul_model.AzulState``). At every
decision this adapter rebuilds the framework's state from the referee's observation,
asks the framework for its legal moves (checked against the referee's options: any
difference is logged as a mismatch), calls the agent, and answers with the option the
agent's move names. A move that is not legal is refused (the adapter stops, saying why).

What the observation cannot tell (protocol/SPEC.md has the whole mapping): the bag's
order (the bag's counts are shuffled) and the move history (traces are left empty).

The framework is never bundled (it is the course's, GPL): it is imported from the
folder the organiser declares as a python_env. The agent's ``print()`` goes to stderr:
stdout carries protocol lines only. Settings: comp90054.toml next to this file.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import os
import random
import sys
import tomllib
import traceback
import zlib
from pathlib import Path

NAME = "comp90054-adapter"
PROTOCOL = 1
CENTRE = -1  # option.source of the centre; the framework's factory id for it too
MARKER = 5  # the first-player marker in the observation's floor lists
FLOOR_SLOTS = 7  # the framework's floor line
HERE = Path(__file__).resolve().parent

# stdout is the protocol: keep a private handle on it and send everything else written
# there (the agent's print(), a C extension's output) to stderr, file descriptor and all.
PROTOCOL_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

API = {
    "2020": {
        "model": "model",
        "utils": "utils",
        "state": "GameState",
        "players": "players",
        "first": "first_player",
        "next_first": "next_first_player",
        "taken": "first_player_taken",
        "agent_file": "player.py",
        "agent_class": "myPlayer",
        "select": "SelectMove",
    },
    "2021": {
        "model": "Azul.azul_model",
        "utils": "Azul.azul_utils",
        "state": "AzulState",
        "players": "agents",
        "first": "first_agent",
        "next_first": "next_first_agent",
        "taken": "first_agent_taken",
        "agent_file": "myTeam.py",
        "agent_class": "myAgent",
        "select": "SelectAction",
    },
}
SETTINGS = ("framework_api", "agent_file", "agent_class")


class AdapterError(Exception):
    """A problem with the settings, the framework or the agent's answer, in plain words."""


def send(message: dict) -> None:
    PROTOCOL_OUT.write(json.dumps(message, separators=(",", ":")) + "\n")
    PROTOCOL_OUT.flush()


def log(*parts: object) -> None:
    print(f"{NAME}:", *parts, file=sys.stderr, flush=True)


def read_settings(path: Path = HERE / "comp90054.toml") -> dict:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AdapterError(f"{path.name} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise AdapterError(
            f"{path.name}: unknown setting {unknown[0]!r}; known: {', '.join(SETTINGS)}"
        )
    api = str(data.get("framework_api", "2020"))
    if api not in API:
        raise AdapterError(
            f"{path.name}: framework_api must be one of {', '.join(API)}, not {api!r}"
        )
    return {
        "framework_api": api,
        "agent_file": str(data.get("agent_file", API[api]["agent_file"])),
        "agent_class": str(data.get("agent_class", API[api]["agent_class"])),
    }


class Framework:
    """The course's framework, imported from the organiser's python_env, and the
    translation between its state and moves and the referee's observation and options."""

    def __init__(self, api: str) -> None:
        self.names = API[api]
        try:
            self.model = importlib.import_module(self.names["model"])
            self.utils = importlib.import_module(self.names["utils"])
        except ImportError as exc:
            raise AdapterError(
                f"cannot import the COMP90054 framework (module {self.names['model']}): {exc}. "
                "The organiser declares the framework's folder as a Python environment: "
                "python_env = [...] in the competition's [play], or --python-env PATH"
            ) from None
        self.tile_type = self.utils.Tile
        self.display_type = getattr(self.model, "TileDisplay", None) or self.utils.TileDisplay
        self.rule = self.model.AzulGameRule(2) if api == "2021" else None
        self._check_wall()

    def _check_wall(self) -> None:
        """The framework's wall must be the arena's coloured one: colour k of row r in
        column (r + k) mod 5."""
        player = getattr(self.model, "PlayerState", None) or self.model.AgentState
        scheme = getattr(player(0), "grid_scheme", None)
        if scheme is None:
            return
        for row in range(5):
            for colour in range(5):
                if int(scheme[row][self.tile(colour)]) != (row + colour) % 5:
                    raise AdapterError(
                        "the framework's wall is not the coloured wall the arena plays "
                        f"(row {row}, colour {colour})"
                    )

    def tile(self, colour: int) -> object:
        return self.tile_type(colour)

    def display(self, counts: list[int]) -> object:
        shown = self.display_type()
        for colour, count in enumerate(counts):
            if count:
                shown.AddTiles(count, self.tile(colour))
        return shown

    def state(self, obs: dict) -> object:
        """The framework's state for the observation: a fresh state, every field set."""
        names = self.names
        state = getattr(self.model, names["state"])(obs["n_players"])
        state.factories = [self.display(f) for f in obs["factories"]]
        state.centre_pool = self.display(obs["centre"])
        bag = [self.tile(c) for c in range(5) for _ in range(obs["bag"][c])]
        random.shuffle(bag)  # its order is the one thing the observation does not say
        state.bag = bag
        state.bag_used = [self.tile(c) for c in range(5) for _ in range(obs["lid"][c])]
        taken = not obs["marker_in_centre"]
        setattr(state, names["first"], obs["first_player"])
        setattr(state, names["taken"], taken)
        setattr(state, names["next_first"], obs["next_first_player"] if taken else -1)
        players = getattr(state, names["players"])
        for seat, seen in enumerate(obs["players"]):
            self.fill_player(players[seat], seen)
        return state

    def fill_player(self, player: object, seen: dict) -> None:
        player.score = seen["score"]
        for i, line in enumerate(seen["lines"]):
            player.lines_number[i] = line["count"]
            player.lines_tile[i] = -1 if line["colour"] is None else self.tile(line["colour"])
        on_wall = [0] * 5
        for r, row in enumerate(seen["wall"]):
            for c, cell in enumerate(row):
                player.grid_state[r][c] = 0 if cell is None else 1
                if cell is not None:
                    on_wall[cell] += 1
        if hasattr(player, "number_of"):
            for colour in range(5):
                player.number_of[self.tile(colour)] = on_wall[colour]
        floor = seen["floor"][:FLOOR_SLOTS]
        player.floor = [1 if i < len(floor) else 0 for i in range(FLOOR_SLOTS)]
        player.floor_tiles = [self.tile(c) for c in floor if c != MARKER]

    def legal_moves(self, state: object, seat: int) -> list:
        if self.rule is not None:
            return list(self.rule.getLegalActions(state, seat))
        return list(getattr(state, self.names["players"])[seat].GetAvailableMoves(state))


def option_key(move: object) -> tuple[int, int, int] | None:
    """(source, colour, line) of a framework move ``(action, factory_id, TileGrab)``, in
    the referee's terms (centre -1, floor -1); None when it is not such a move."""
    try:
        action, factory, grab = move
        centre = "CENTRE" in getattr(action, "name", str(action)).upper() or int(factory) < 0
        return (
            CENTRE if centre else int(factory),
            int(grab.tile_type),
            int(grab.pattern_line_dest),
        )
    except (TypeError, ValueError, AttributeError):
        return None


class Game:
    """One game of the agent: its instance (one per game, as the framework makes it) and
    what the adapter counted."""

    def __init__(self, agent_type: type, seat: int) -> None:
        self.agent = agent_type(seat)
        self.round: int | None = None
        self.decisions = 0
        self.mismatches = 0


class Adapter:
    def __init__(self) -> None:
        settings = read_settings()
        self.api = settings["framework_api"]
        self.framework = Framework(self.api)
        self.agent_type = load_agent(settings["agent_file"], settings["agent_class"])
        self.select = API[self.api]["select"]
        if not callable(getattr(self.agent_type, self.select, None)):
            raise AdapterError(
                f"{settings['agent_class']} has no {self.select}() (framework_api = {self.api!r})"
            )
        self.games: dict[str, Game] = {}

    def game(self, game_id: str, seat: int) -> Game:
        if game_id not in self.games:
            self.games[game_id] = Game(self.agent_type, seat)
        return self.games[game_id]

    def decide(self, msg: dict) -> int:
        options = msg["options"]
        if msg["decision"] != "draft":
            log("a gray-wall placement: the framework has none; playing the first column")
            return 0
        obs, seat = msg["observation"], msg["seat"]
        game = self.game(msg["game_id"], seat)
        seed_randomness(f"{msg['game_id']}/{msg.get('id')}")
        state = self.framework.state(obs)
        if game.round != obs["round"]:  # the first decision of a round
            game.round = obs["round"]
            start_round = getattr(game.agent, "StartRound", None)
            if callable(start_round):
                start_round(copy.deepcopy(state))
        moves = self.framework.legal_moves(state, seat)
        ours = {(o["source"], o["colour"], o["line"]): i for i, o in enumerate(options)}
        theirs = {option_key(m) for m in moves}
        if theirs != set(ours):
            game.mismatches += 1
            log(
                f"MISMATCH at request {msg.get('id')}: legal in the framework only "
                f"{sorted(k for k in theirs - set(ours) if k)}, in the arena only "
                f"{sorted(set(ours) - theirs)}"
            )
        chosen = getattr(game.agent, self.select)(copy.deepcopy(moves), copy.deepcopy(state))
        key = option_key(chosen)
        if key not in ours:
            raise AdapterError(
                f"the agent's move {describe(chosen)} is not one of the {len(ours)} legal "
                f"options of request {msg.get('id')}; refusing it"
            )
        game.decisions += 1
        return ours[key]

    def end(self, game_id: str) -> None:
        game = self.games.pop(game_id, None)
        if game is not None:
            log(f"game {game_id}: {game.decisions} decisions mapped, {game.mismatches} mismatches")


def seed_randomness(key: str) -> None:
    """Seed ``random`` (and numpy's global generator, when the agent uses numpy) from the
    game and request, as the framework reseeds before every move: the bag's shuffle and an
    agent's random choices are the same when the same game is played again."""
    seed = zlib.crc32(key.encode("utf-8"))
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


def describe(move: object) -> str:
    key = option_key(move)
    if key is None:
        return repr(move)[:200]
    source, colour, line = key
    where = "the centre" if source == CENTRE else f"factory {source}"
    return f"(colour {colour} from {where} to {'the floor' if line < 0 else f'line {line}'})"


def load_agent(agent_file: str, agent_class: str) -> type:
    """The agent's class, from its file in the bot folder (its folder first on sys.path,
    so that its own helper modules import as they did in the course's layout)."""
    path = (HERE / agent_file).resolve()
    if not path.is_file():
        raise AdapterError(f"agent file {agent_file} not found in the bot folder (comp90054.toml)")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise AdapterError(f"cannot load {agent_file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    found = getattr(module, agent_class, None)
    if not isinstance(found, type):
        raise AdapterError(f"{agent_file} defines no class {agent_class} (comp90054.toml)")
    return found


def main() -> int:
    stdin = sys.stdin.buffer
    adapter: Adapter | None = None
    try:
        while True:
            line = stdin.readline()
            if not line:
                return 0
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                log("ignoring a line that is not JSON:", line[:200])
                continue
            if not isinstance(msg, dict):
                continue
            kind = msg.get("type")
            if kind == "hello":
                adapter = adapter or Adapter()
                send({"type": "ready", "protocol": PROTOCOL, "name": NAME, "version": "1"})
            elif kind == "game_start" and adapter is not None:
                adapter.game(msg["game_id"], msg["seat"])
            elif kind == "decide" and adapter is not None:
                send({"type": "move", "id": msg.get("id"), "index": adapter.decide(msg)})
            elif kind == "game_end" and adapter is not None:
                adapter.end(msg.get("game_id", ""))
            elif kind == "quit":
                return 0
    except AdapterError as exc:
        log(exc)
        return 3
    except Exception:  # the agent's own error: a crash, with its traceback in the log
        log("the agent raised an exception:")
        traceback.print_exc(file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
