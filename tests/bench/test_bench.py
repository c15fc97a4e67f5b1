"""The benchmarks run and report what they claim (no timing thresholds: speed lives in
``arena bench``, never in tests)."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from arena.bench.engine import bench_engine, load_reference, reference_playouts
from arena.bench.tournament import independent_rate
from arena.cli import main
from arena.engine import Variant


def test_engine_bench_times_the_reference_model_on_the_same_workload() -> None:
    bench = bench_engine(games=4, repeats=1, seed=3)
    assert bench.reference_model is not None
    assert [(r.variant, r.players) for r in bench.playouts] == [
        (v, p) for v in Variant for p in (2, 3, 4)
    ]
    for r in bench.playouts:
        assert 40 < r.moves_per_game < 400
        assert r.reference_us_per_game is not None and r.vs_reference is not None
        assert r.vs_reference == pytest.approx(r.reference_us_per_game / r.us_per_game)
    assert bench.copy.copy_us > 0 and bench.copy.copy_legal_apply_us > bench.copy.copy_us


def test_reference_playouts_finish_games_the_rules_accept() -> None:
    model = load_reference()
    assert model is not None
    for variant in Variant:
        _, moves = reference_playouts(model, 3, variant, 2, seed=1)
        assert moves > 60  # two whole games, every deal and move accepted by the model


def test_bench_engine_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "engine", "--games", "2", "--repeats", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"games", "repeats", "playouts", "copy", "reference_model"} <= set(data)
    row = data["playouts"][0]
    assert row["variant"] == "coloured" and row["players"] == 2
    assert row["vs_reference"] > 0 and row["games_per_s"] > 0
    assert set(data["copy"]) == {"copy_us", "copy_legal_apply_us"}


FAKE_COMP90054_MODEL = """
class AzulGameRule:
    \"\"\"The 2021 framework's runner API, a game of 30 actions: a round starts every 10.\"\"\"

    def __init__(self, num_of_agent):
        self.num_of_agent = num_of_agent
        self.current_agent_index = num_of_agent
        self.current_game_state = [0]

    def getLegalActions(self, state, agent_id):
        if agent_id == self.num_of_agent:
            return ["STARTROUND"]
        return [(1, agent_id, tile) for tile in range(5)]

    def update(self, action):
        self.current_game_state[0] += 1
        played = self.current_game_state[0]
        self.current_agent_index = self.num_of_agent if played % 10 == 0 else played % 2

    def gameEnds(self):
        return self.current_game_state[0] >= 30
"""


def _fake_comp90054(folder: Path) -> Path:
    (folder / "Azul").mkdir(parents=True)
    (folder / "Azul" / "__init__.py").write_text("")
    (folder / "Azul" / "azul_model.py").write_text(FAKE_COMP90054_MODEL)
    return folder


def _arena(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_bench_engine_times_a_comp90054_folder_in_the_same_run(tmp_path: Path) -> None:
    """As a user runs it: their framework copy's 2-player games are played (its round actions
    not counted as moves) and the engine's speed is reported against them."""
    folder = _fake_comp90054(tmp_path / "framework")
    done = _arena(
        "bench", "engine", "--games", "20", "--repeats", "1", "--json",
        "--baseline-comp90054", str(folder),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["comp90054"] == str(folder)
    assert data["engine_build"].startswith(("compiled", "pure Python"))
    same = data["same_run"]
    assert same["comp90054_games"] == 2 and same["comp90054_us_per_game"] > 0
    assert same["vs_comp90054"] == pytest.approx(
        same["comp90054_us_per_game"] / same["us_per_game"]
    )
    assert same["pure_vs_comp90054"] > 0


def test_comp90054_playouts_count_only_the_players_moves(tmp_path: Path) -> None:
    from arena.bench.engine import comp90054_playouts, load_comp90054

    model = load_comp90054(_fake_comp90054(tmp_path / "framework"))
    _, moves = comp90054_playouts(model, games=3, seed=1)
    assert moves == 3 * 27  # 30 actions a game, of which 3 start a round


@pytest.mark.parametrize("layout", ["missing", "empty", "no runner API"])
def test_bench_engine_refuses_a_folder_that_is_not_the_framework(
    tmp_path: Path, layout: str
) -> None:
    folder = tmp_path / "framework"
    if layout != "missing":
        (folder / "Azul").mkdir(parents=True)
    if layout == "no runner API":
        (folder / "Azul" / "azul_model.py").write_text("class AzulGameRule:\n    pass\n")
    done = _arena("bench", "engine", "--games", "2", "--baseline-comp90054", str(folder))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and str(folder) in message


FAKE_COMP90054_GAME = """
import random
from func_timeout import func_timeout, FunctionTimedOut  # as the 2021 runner does

FREEDOM = False


class Game:
    \"\"\"The 2021 runner's Game: its agents pick, its game master starts the rounds.\"\"\"

    def __init__(self, GameRule, agent_list, num_of_agent, seed=1, time_limit=1,
                 warning_limit=3, displayer=None, agents_namelist=None, interactive=False):
        random.seed(seed)
        self.game_rule = GameRule(num_of_agent)
        self.agents = agent_list

    def Run(self):
        if not FREEDOM:
            func_timeout(1, print)  # the bench switches the timeouts off: never called
        history = {"actions": []}
        rule = self.game_rule
        while not rule.gameEnds():
            index = rule.current_agent_index
            actions = rule.getLegalActions(rule.current_game_state, index)
            if index == rule.num_of_agent:
                selected = actions[0]
            else:
                selected = self.agents[index].SelectAction(actions, rule.current_game_state)
            history["actions"].append({len(history["actions"]): {"agent_id": index,
                                                                 "action": selected}})
            rule.update(selected)
        return history
"""

FAKE_COMP90054_AGENTS = {
    "template.py": "class Agent:\n    def __init__(self, _id):\n        self.id = _id\n",
    "agents/generic/first_move.py": (
        "from template import Agent\n\n"
        "class myAgent(Agent):\n"
        "    def SelectAction(self, actions, game_state):\n"
        "        return actions[0]\n"
    ),
    "agents/generic/random.py": (
        "import random\nfrom template import Agent\n\n"
        "class myAgent(Agent):\n"
        "    def SelectAction(self, actions, game_state):\n"
        "        return random.choice(actions)\n"
    ),
}


def _fake_comp90054_runner(folder: Path) -> Path:
    """A tiny stand-in for the 2021 framework: game.py, template.py, Azul/ and the two
    generic agents (the framework's own code never enters the project)."""
    _fake_comp90054(folder)
    (folder / "game.py").write_text(FAKE_COMP90054_GAME)
    for name, text in FAKE_COMP90054_AGENTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    "layout", ["missing", "only the model", "no agents", "agent without myAgent", "no Game"]
)
def test_bench_tournament_refuses_a_folder_that_is_not_the_framework(
    tmp_path: Path, layout: str
) -> None:
    """One line naming the folder, no traceback, before any game is played."""
    folder = tmp_path / "framework"
    if layout == "only the model":
        _fake_comp90054(folder)
    elif layout != "missing":
        _fake_comp90054_runner(folder)
    if layout == "no agents":
        (folder / "agents" / "generic" / "random.py").unlink()
    if layout == "agent without myAgent":
        (folder / "agents" / "generic" / "first_move.py").write_text("class Agent:\n    pass\n")
    if layout == "no Game":
        (folder / "game.py").write_text("class Runner:\n    pass\n")
    done = _arena(
        "bench", "tournament", "--bots", "bots/python-random", "bots/python-greedy",
        "--seeds", "1", "--baseline-comp90054", str(folder),
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and str(folder) in message, message
    assert "framework" in message or "myAgent" in message


def test_vs_comp90054_is_printed_as_a_ratio_per_core() -> None:
    from rich.console import Console

    from arena.bench.tournament import VsComp90054, print_vs_comp90054

    vs = VsComp90054(
        folder="/x/comp90054",
        blocks=3,
        arena_games=200,
        comp90054_games=40,
        arena_cpu_ms_per_game=5.0,
        arena_bots_cpu_ms_per_game=2.0,
        arena_wall_games_per_s=150.0,
        comp90054_cpu_ms_per_game=50.0,
        comp90054_wall_games_per_s=20.0,
        comp90054_actions_per_game=85.0,
        load_average=[1.0, 2.0],
    )
    console = Console(width=400, record=True)
    print_vs_comp90054(vs, console)
    text = console.export_text()
    assert "200.0 vs 20.0 = 10.0x" in text and "150.0 vs 20.0 games/s = 7.5x" in text
    assert "the bots' own 2.00 of the arena's 5.00 ms a game leave at most 25.0x" in text
    assert vs.as_json()["per_core"] == 10.0 and vs.as_json()["bots_bound"] == 25.0
    # Measured: the median of each pair of blocks' own ratio, not the medians' ratio (a
    # fast second of one beside a slow one of the other).
    paired = dataclasses.replace(vs, per_core_blocks=[12.5, 8.0, 9.5])
    console = Console(width=400, record=True)
    print_vs_comp90054(paired, console)
    assert "per pair of blocks 12.5x, 8.0x, 9.5x: median 9.5x" in console.export_text()
    assert paired.as_json()["per_core"] == 9.5


@pytest.mark.slow
def test_bench_protocol_json_judges_the_referee_against_a_floor_in_both_placements() -> None:
    """As a user runs it: the old figures, plus the pipe floor per placement with a
    decision's message sizes, the overhead over it, and the referee's profile by module."""
    root = Path(__file__).resolve().parents[2]
    bot = root / "bots" / "c-greedy"
    argv = ["bench", "protocol", "--bot", str(bot), "--games", "2", "--sandbox", "off", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", *argv],
        capture_output=True,
        text=True,
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for key in ("overhead_us", "overhead_wall_us", "spawn_ms", "pipe_roundtrip_us", "think_us"):
        assert data[key] > 0, key
    assert data["games"] == 2 and data["decisions"] > 60
    assert set(data["overhead_by_clock_us"]) == {"cpu", "wall"}
    assert data["overhead_by_clock_us"]["cpu"] == data["overhead_us"]
    assert set(data["referee_cpu_by_clock_us"]) == {"cpu", "wall"}
    assert all(us > 0 for us in data["referee_cpu_by_clock_us"].values())
    assert isinstance(data["spawn_layers"], list)
    # The floor speaks a decision's sizes: a whole decide request, a short move reply.
    sizes = data["message_bytes"]
    assert sizes["request"] > 500 and 10 < sizes["reply"] < sizes["request"]
    placements = {"one_core", "os_placed"} if len(os.sched_getaffinity(0)) > 1 else {"one_core"}
    assert set(data["floor_us"]) == placements == set(data["overhead_vs_floor"])
    assert all(us > 0 for us in data["floor_us"].values())
    assert all(len(b) == 2 and min(b) > 0 for b in data["floor_by_block_us"].values())
    one_core = data["overhead_us"] / data["floor_us"]["one_core"]
    assert data["overhead_vs_floor"]["one_core"] == pytest.approx(one_core)
    if "os_placed" in placements:  # the CPU clock placed by the OS, interleaved
        assert data["overhead_os_placed_us"] > 0 and data["referee_cpu_os_placed_us"] > 0
        ratio = data["overhead_os_placed_us"] / data["overhead_us"]
        assert data["one_core_speedup"] == pytest.approx(ratio)
        os_placed = data["overhead_os_placed_us"] / data["floor_us"]["os_placed"]
        assert data["overhead_vs_floor"]["os_placed"] == pytest.approx(os_placed)
    # The profile: the referee's own modules, largest first, within the profiled total,
    # and not the bench's timing wrapper.
    rows = data["profile"]
    modules = [row["module"] for row in rows]
    assert "arena.referee.referee" in modules and "arena.bench.protocol" not in modules
    assert [row["us"] for row in rows] == sorted((row["us"] for row in rows), reverse=True)
    assert 0 < sum(row["us"] for row in rows) <= data["profiled_us"] * (1 + 1e-9)
    assert 0 < sum(row["share"] for row in rows) <= 1 + 1e-9


def test_bench_tournament_refuses_a_bot_listed_twice_in_one_line() -> None:
    root = Path(__file__).resolve().parents[2]
    bot = str(root / "bots" / "python-random")
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "tournament", "--bots", bot, bot],
        capture_output=True,
        text=True,
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root)},
        timeout=120,
    )
    assert done.returncode == 2
    assert "listed twice" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_independent_tournaments_count_only_while_all_of_them_play() -> None:
    # A: start-up until 1.0, then a game every 0.1 s to 3.0; B: starts late (2.0) and
    # plays a game every 0.05 s to 4.0. Together they overlap from 2.0 to 3.0, where A
    # plays 10 games/s and B 20.
    a = [0.0, 1.0, *[1.0 + 0.1 * k for k in range(1, 21)]]
    b = [0.5, 2.0, *[2.0 + 0.05 * k for k in range(1, 41)]]
    assert independent_rate([a, b]) == pytest.approx(30.0)
    assert independent_rate([a]) == pytest.approx(10.0)  # alone: its steady rate
    assert independent_rate([a, [0.0, 3.5, 3.6, 3.7]]) is None  # they never played together
    assert independent_rate([a, [0.0, 1.0]]) is None  # no steady game at all
    assert independent_rate([]) is None


def test_bench_tournament_json_breaks_a_game_down_by_part(tmp_path: Path) -> None:
    """As a user runs it: the parts are there, none negative, and together no more than
    the profiled game they divide; the user's COMP90054 runner is played in the same run
    and the ratio per core reported."""
    root = Path(__file__).resolve().parents[2]
    bots = [str(root / "bots" / "python-random"), str(root / "bots" / "python-greedy")]
    argv = ["bench", "tournament", "--bots", *bots, "--seeds", "2", "--json"]
    argv += ["--baseline-comp90054", str(_fake_comp90054_runner(tmp_path / "framework"))]
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", *argv],
        capture_output=True,
        text=True,
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["runs"]) == 4 and all(r["games"] == 4 for r in data["runs"])
    one, many = data["runs"][:2]  # the speed-up is printed with the load it was measured at
    pairs = data["speedup_steady_persistent_pairs"]  # alternating 1-worker / all-core runs
    assert len(pairs) == 3 and len(data["speedup_pair_load_average"]) == 3
    assert pairs[0] == many["steady_games_per_s"] / one["steady_games_per_s"]
    assert data["speedup_steady_persistent"] == sorted(pairs)[1]  # their median
    # Beside each pair, the machine's own ceiling: independent 1-worker tournaments.
    ceilings = data["machine_ceiling_pairs"]
    assert len(ceilings) == 3 and all(c is None or c > 0 for c in ceilings)
    known = sorted(c for c in ceilings if c is not None)
    assert known, "no independent tournaments overlapped: the ceiling was not measured"
    assert data["machine_ceiling"] == pytest.approx(statistics.median(known))
    assert data["speedup_of_ceiling"] == pytest.approx(
        data["speedup_steady_persistent"] / data["machine_ceiling"]
    )
    assert data["load_average"] == [r["load_average"] for r in data["runs"]]
    for run in data["runs"]:  # CPU of every process: the bots' and workers' counted too
        assert run["cpu_s"] > 0
        assert run["cores"] == pytest.approx(run["cpu_s"] / run["seconds"])
        assert run["cpu_ms_per_game"] == pytest.approx(run["cpu_s"] * 1000 / run["games"])
        split = run["cpu_ms_per_game_by_process"]  # the parent, the workers and the bots
        assert split["parent"] > 0 and split["workers"] > 0 and split["bots"] >= 0
        assert sum(split.values()) == pytest.approx(run["cpu_ms_per_game"])
    assert all(load >= 0 for load in data["load_average"])
    cost = data["game_cost"]
    assert cost["games"] == 3  # the first game, starting the bots, is left out
    parts = cost["parts_ms"]
    assert set(parts) == {
        "rules",
        "encode",
        "pipe",
        "bot_processes",
        "record",
        "frames",
        "serialise",
        "store",
    }
    assert all(ms >= 0 for ms in parts.values()), parts
    for played in ("rules", "encode", "pipe", "record", "frames", "serialise", "store"):
        assert parts[played] > 0, played  # each part of a real game is found in the profile
    assert sum(parts.values()) <= cost["profiled_game_ms"]
    assert cost["other_ms"] == pytest.approx(cost["profiled_game_ms"] - sum(parts.values()))
    assert cost["game_ms"] > 0
    vs = data["vs_comp90054"]
    assert vs["blocks"] == 5 and vs["arena_games"] == 4 and vs["comp90054_games"] == 2
    assert vs["comp90054_actions_per_game"] == 30  # the fake runner's whole games were played
    assert len(vs["per_core_blocks"]) == 5 and all(x > 0 for x in vs["per_core_blocks"])
    assert vs["per_core"] == sorted(vs["per_core_blocks"])[2]  # the median pair's ratio
    assert vs["arena_games_per_cpu_s"] > 0 and vs["one_worker"] > 0
    assert len(vs["load_average"]) == 10


SCALE = [sys.executable, "-m", "arena.cli", "bench", "scale"]


@pytest.mark.slow
def test_bench_scale_json_reports_fairness_memory_and_the_lru_bound() -> None:
    """``arena bench scale`` as a user runs it, on a small field: both parts give every
    bot its games evenly, the worker's persistent bots stay within their bound, and a
    new version on the ladder plays within the games already in flight."""
    done = subprocess.run(
        [*SCALE, "--bots", "12", "--games-per-bot", "8", "--json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for part in ("sampled", "ladder"):
        m = data[part]
        assert m["bots"] == 12 and m["games"] > 0 and m["games_per_s"] > 0
        assert m["games_per_bot"]["min"] >= 8
        assert m["games_per_bot"]["max_over_min"] <= 1.5
        assert m["peak_mb"] > 0 and m["speed_vs_baseline"] > 0
    assert data["sampled"]["lru_most_live"] <= data["sampled"]["lru_bound"]
    ladder = data["ladder"]
    assert ladder["new_version_games_started_before_its_first"] <= ladder["games_in_flight"]
    assert data["parent_peak_mb"] > 0


def test_bench_scale_refuses_a_tiny_field() -> None:
    done = subprocess.run(
        [*SCALE, "--bots", "3"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode != 0
    assert "--bots must be 10 or more" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_bots_cpu_is_read_from_the_records(tmp_path: Path) -> None:
    """Sandboxed bots are no reaped children of the bench (their CPU never reaches its
    rusage): every decision's CPU as recorded is added, what the bot used between its
    turns (``between_ms``, charged to that decision) included."""
    import orjson

    from arena.bench.tournament import _bots_cpu_s
    from arena.play.job import GameResult, ScheduledGame, SeatRow
    from arena.tournament import Store, TournamentConfig, store_path

    config = TournamentConfig(bots=[tmp_path / "a", tmp_path / "b"], output=tmp_path / "out")
    game = ScheduledGame(0, "g0", 2, "coloured", 0, 1, 0, ("a", "b"), ("v1", "v1"))
    seats = tuple(
        SeatRow(i, bot, 10, 10, 0, 0, 0, i + 1, 0, False, None, 2, 1.0, 1.0, 1.0, cpu, cpu)
        for i, (bot, cpu) in enumerate((("a", 2.5), ("b", None)))
    )
    decisions = [
        {"seat": 0, "cpu_ms": 2.0, "between_ms": 0.5},
        {"seat": 1, "cpu_ms": None},
        {"seat": 0, "cpu_ms": 3.0},
        {"seat": 1, "think_ms": None, "auto": True},
    ]
    record = orjson.dumps({"rounds": [{"decisions": decisions}]})
    (tmp_path / "out").mkdir()
    with Store(store_path(config)) as store:
        store.schedule_games([game])
        store.add_result(GameResult(0, 1.0, "normal", 5, "w", record, seats, ()))
    assert _bots_cpu_s(config) == pytest.approx(5.5 / 1000)
