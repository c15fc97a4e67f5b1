"""Where a tournament game's time goes: one inline tournament (games played in this
process, one by one) under cProfile, its time grouped by the call edges that enter each
part of a game.

cProfile rather than timers in the referee: normal runs carry no instrumentation at all
(nothing to switch off, so nothing to cost), and the parts are read off the call graph,
each as the inclusive time of the calls crossing into it from the layer that drives it,
so no part counts another's time; only each game's own span is profiled (from its play's
start to its result stored). The profiler slows Python code more than the bots'
waits, so the same tournament is also timed without it: compare shares, not absolute
milliseconds, with that unprofiled time per game.
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.play.executors import InlineExecutor
from arena.play.job import GameJob, GameResult
from arena.play.worker import WorkerState, run_job
from arena.tournament import Progress, TournamentConfig, run_tournament

Key = tuple[str, int, str]
"""A profiled function: (file, line, name); builtins have file ``~``."""

PARTS = {
    "rules": "the engine as the referee drives it (new game, legal moves, apply)",
    "encode": "messages to the bots built and their replies parsed",
    "pipe": "waiting on the bots' pipes (poll, read, write): their think time",
    "bot_processes": "the sandbox around each decision: freezing/thawing bots, CPU clocks",
    "record": "the game record built (as plain data)",
    "frames": "the replay's frames drawn (positions noted live, or the record re-run)",
    "serialise": "the record and frames dumped to JSON for the store",
    "store": "the store: the game's result and the ratings written",
}
"""The parts of a game's time, in order, and what each covers."""


@dataclass(frozen=True)
class GameCost:
    games: int
    game_ms: float
    """Wall time per game without the profiler (the same tournament, timed first, from
    its first result to its last: no start-up)."""
    profiled_game_ms: float
    """Per game under the profiler: from its play's start to its result stored (what the
    parts divide); the first game, which starts the bots, is not profiled."""
    parts_ms: dict[str, float]
    """Profiled ms per game, by part (see :data:`PARTS`)."""
    other_ms: float
    """The rest of the profiled game time (the referee's own loop, results rows, ...)."""

    def as_json(self) -> dict[str, object]:
        return asdict(self)


ROOT: Key = ("<root>", 0, "<root>")
"""The caller of a call made where profiling was switched on (its frame above the
profiled span: the tournament loop storing a result)."""


def _in(folder: str) -> Callable[[Key], bool]:
    marker = f"/arena/{folder}"
    return lambda key: marker in key[0]


def _builtin(*names: str) -> Callable[[Key], bool]:
    """A built-in by the name cProfile gives it: ``<built-in method posix.read>``. An
    extension's function may go by ``<orjson.dumps>`` instead (orjson 3.13 does, where
    earlier sessions saw the long form), which matches the long name here too."""
    short = {f"<{name.removeprefix('<built-in method ')}" for name in names}
    return lambda key: key[0] == "~" and (key[2] in names or key[2] in short)


def _named(folder: str, *names: str) -> Callable[[Key], bool]:
    inside = _in(folder)
    return lambda key: inside(key) and key[2] in names


def _compiled_engine(key: Key) -> bool:
    """A method of the compiled engine (the C extension): cProfile names it as a built-in."""
    return key[0] == "~" and (
        "of 'arena.engine.game." in key[2] or key[2] == "<built-in method new>"
    )


_record_data = _named("engine/record.py", "record_data")
_PART_EDGES: dict[str, list[tuple[Callable[[Key], bool], Callable[[Key], bool]]]] = {
    # (caller, callee): the inclusive time of every call along such an edge
    "rules": [
        (
            _in("referee/referee.py"),
            lambda k: (_in("engine/")(k) and not _record_data(k)) or _compiled_engine(k),
        )
    ],
    "encode": [
        (_in("referee/"), _in("protocol/")),
        (_in("referee/"), _named("referee/seats.py", "_parse_reply")),
        (_in("referee/seats.py"), _builtin("<built-in method orjson.loads>")),
    ],
    "pipe": [
        (
            _in("referee/channel.py"),
            _builtin(
                "<method 'poll' of 'select.poll' objects>",
                "<built-in method posix.read>",
                "<built-in method posix.write>",
            ),
        )
    ],
    "bot_processes": [(_in("referee/"), _in("sandbox/"))],
    "record": [
        (_in("referee/referee.py"), _record_data),
        (_in("referee/referee.py"), _named("referee/referee.py", "_decision_records")),
        (_in("referee/referee.py"), lambda k: k[2] == "model_validate"),
    ],
    "frames": [(_in("play/worker.py"), _in("viewer/frames.py"))],
    "serialise": [
        (
            _named("play/worker.py", "game_result"),
            lambda k: k[2] == "model_dump_json" or _builtin("<built-in method orjson.dumps>")(k),
        ),
        (  # the record's JSON, made once from the referee's data (GameOutcome.record_json)
            _named("referee/referee.py", "record_json"),
            _builtin("<built-in method orjson.dumps>"),
        ),
    ],
    "store": [(lambda k: k == ROOT or _in("tournament/")(k), _in("store/"))],
}


def _edge_seconds(
    stats: dict[Key, tuple[int, int, float, float, dict[Key, tuple[int, int, float, float]]]],
    caller: Callable[[Key], bool],
    callee: Callable[[Key], bool],
) -> float:
    total = 0.0
    for key, (cc, nc, tt, ct, callers) in stats.items():
        if callee(key):
            edges = callers.items() if callers else [(ROOT, (cc, nc, tt, ct))]
            total += sum(edge[3] for who, edge in edges if caller(who))
    return total


def _inclusive(
    stats: dict[Key, tuple[int, int, float, float, dict[Key, tuple[int, int, float, float]]]],
    match: Callable[[Key], bool],
) -> float:
    return sum(entry[3] for key, entry in stats.items() if match(key))


def _config(bots: list[Path], seeds: int, output: Path) -> TournamentConfig:
    return TournamentConfig(
        bots=bots,
        players=[2],
        variants=["coloured"],
        seeds=seeds,
        workers=1,
        persistent=True,
        output=output,
    )


class _GameWindows:
    """Profiles each game from the moment its play starts to the progress report that
    follows its store write (the result stored, the ratings ledger ticked), skipping the
    first game (it starts the persistent bots): the per-game cost in steady play."""

    def __init__(self) -> None:
        self.profiler = cProfile.Profile()
        self.state = WorkerState(worker_id=0)
        self.started: float | None = None
        self.played = 0
        self.games = 0
        self.seconds = 0.0

    def play(self, job: GameJob) -> GameResult:
        self.played += 1
        if self.played > 1:
            self.started = time.perf_counter()
            self.profiler.enable()
        return run_job(self.state, job)

    def stored(self, _: Progress) -> None:
        if self.started is not None:
            self.profiler.disable()
            self.seconds += time.perf_counter() - self.started
            self.games += 1
            self.started = None


def measure_game_cost(bots: list[Path], seeds: int) -> GameCost:
    """The same inline tournament twice (built bots expected): timed, then profiled."""
    with tempfile.TemporaryDirectory(prefix="arena-bench-cost-") as tmp:
        stamps: list[float] = []
        run_tournament(
            _config(bots, seeds, Path(tmp) / "plain"),
            executor=InlineExecutor(),
            on_progress=lambda _: stamps.append(time.perf_counter()),
        )
        windows = _GameWindows()
        try:
            run_tournament(
                _config(bots, seeds, Path(tmp) / "profiled"),
                executor=InlineExecutor(play=windows.play),
                on_progress=windows.stored,
            )
        finally:
            windows.profiler.disable()
            windows.state.close()
    first = 1 if len(stamps) > 2 else 0  # from the first result: the bots are running
    stats = pstats.Stats(windows.profiler).stats  # type: ignore[attr-defined]
    games = max(1, windows.games)
    parts = {
        part: sum(_edge_seconds(stats, a, b) for a, b in edges) * 1000 / games
        for part, edges in _PART_EDGES.items()
    }
    profiled = windows.seconds * 1000 / games
    return GameCost(
        games=windows.games,
        game_ms=(stamps[-1] - stamps[first]) * 1000 / max(1, len(stamps) - 1 - first),
        profiled_game_ms=profiled,
        parts_ms=parts,
        other_ms=max(0.0, profiled - sum(parts.values())),
    )
