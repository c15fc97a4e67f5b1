"""`arena bench engine`: random playouts through the public ``Game`` API.

Each playout lists every legal move, picks one uniformly with a seeded RNG and
applies it until the game ends: the same object interface that bots use. Times
are CPU time of this process (``time.process_time``), medians of repeats, so a
loaded machine matters less. In the same run the tests' plain reference model of
the rules (``tests/engine/reference.py``: lists of lists, nothing precomputed) plays
the same workload, and the ratio of the two is reported: a speed claim that does
not depend on how fast or busy the machine is.
"""

from __future__ import annotations

import importlib.util
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import arena.engine
from arena.engine import Game, Variant

REFERENCE_MODEL = Path(__file__).resolve().parents[2] / "tests" / "engine" / "reference.py"
PURE_GAME_MODULE = Path(arena.engine.__file__).resolve().parent / "game.py"
COMP90054_MODEL = Path("Azul") / "azul_model.py"
"""The course framework's rules model, inside the folder ``--baseline-comp90054`` names."""


@dataclass(frozen=True)
class PlayoutResult:
    players: int
    variant: Variant
    games_per_s: float
    moves_per_s: float
    moves_per_game: float
    us_per_game: float
    reference_us_per_game: float | None
    """The reference model's CPU time per game on the same workload (None: not found)."""

    @property
    def vs_reference(self) -> float | None:
        """How many times faster than the plain reference model."""
        if self.reference_us_per_game is None:
            return None
        return self.reference_us_per_game / self.us_per_game


@dataclass(frozen=True)
class CopyResult:
    copy_us: float
    """``Game.copy()``, median over positions from 2-player games."""
    copy_legal_apply_us: float
    """``copy()`` + ``legal_moves()`` + ``apply()`` of the first move: one search node."""


@dataclass(frozen=True)
class SameRunComparison:
    """2-player coloured random games, the engine against its baselines in interleaved repeats
    of one run: the pure-Python engine when the compiled build runs, the COMP90054 model when
    its folder is given. ``None``: that baseline was not measured."""

    us_per_game: float
    pure_us_per_game: float | None
    comp90054_us_per_game: float | None
    comp90054_games: int
    """COMP90054 games per repeat (a tenth of the engine's: it is ~15-20 times slower)."""

    @property
    def vs_pure(self) -> float | None:
        """The compiled build's speed-up over the pure-Python engine."""
        if self.pure_us_per_game is None:
            return None
        return self.pure_us_per_game / self.us_per_game

    @property
    def vs_comp90054(self) -> float | None:
        """How many times faster than the COMP90054 model (the engine that runs)."""
        if self.comp90054_us_per_game is None:
            return None
        return self.comp90054_us_per_game / self.us_per_game

    @property
    def pure_vs_comp90054(self) -> float | None:
        """The pure-Python engine against COMP90054 (the pure engine's target)."""
        if self.comp90054_us_per_game is None:
            return None
        pure = self.us_per_game if self.pure_us_per_game is None else self.pure_us_per_game
        return self.comp90054_us_per_game / pure


@dataclass(frozen=True)
class EngineBench:
    games: int
    repeats: int
    playouts: list[PlayoutResult]
    copy: CopyResult
    reference_model: str | None
    engine_build: str
    """``arena.engine.ENGINE_BUILD``: which engine ran (compiled or pure, and why)."""
    same_run: SameRunComparison | None
    comp90054: str | None
    """The COMP90054 framework folder measured, if any."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for row, result in zip(data["playouts"], self.playouts, strict=True):
            row["variant"] = result.variant.value
            row["vs_reference"] = result.vs_reference
        if self.same_run is not None:
            data["same_run"]["vs_pure"] = self.same_run.vs_pure
            data["same_run"]["vs_comp90054"] = self.same_run.vs_comp90054
            data["same_run"]["pure_vs_comp90054"] = self.same_run.pure_vs_comp90054
        return data


def playouts(
    players: int, variant: Variant, games: int, seed: int, engine: type[Game] = Game
) -> tuple[float, int]:
    """Play ``games`` random games; return (CPU seconds, total moves)."""
    rnd = random.Random(seed).random
    moves = 0
    new = engine.new
    start = time.process_time()
    for i in range(games):
        game = new(players=players, variant=variant, seed=seed * 1_000_003 + i)
        legal_moves, apply, is_over = game.legal_moves, game.apply, game.is_over
        while not is_over():
            options = legal_moves()
            apply(options[int(rnd() * len(options))])
            moves += 1
    return time.process_time() - start, moves


def load_reference() -> ModuleType | None:
    """The tests' reference model, when this is a source checkout (it is not installed)."""
    if not REFERENCE_MODEL.exists():
        return None
    spec = importlib.util.spec_from_file_location("arena_reference_model", REFERENCE_MODEL)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def load_pure_engine() -> type[Game]:
    """The pure-Python ``Game`` loaded beside the compiled one (its own module, same tables),
    so that both play in one process and one run."""
    spec = importlib.util.spec_from_file_location("arena_engine_pure_game", PURE_GAME_MODULE)
    if spec is None or spec.loader is None:  # pragma: no cover - the file is the package's
        raise RuntimeError(f"cannot load {PURE_GAME_MODULE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    pure: type[Game] = module.Game
    return pure


class BaselineError(ValueError):
    """The COMP90054 folder given is not usable (a user problem: one line, no traceback)."""


def load_comp90054(folder: Path) -> ModuleType:
    """The COMP90054 framework's ``Azul.azul_model`` from the user's own copy (never shipped:
    its code stays outside the project). Raises :class:`BaselineError`."""
    if not (folder / COMP90054_MODEL).is_file():
        raise BaselineError(
            f"{folder} is not a COMP90054 framework folder (no {COMP90054_MODEL} in it)"
        )
    sys.path.insert(0, str(folder.resolve()))  # the framework imports template, utils, Azul
    try:
        model = importlib.import_module("Azul.azul_model")
    except Exception as error:  # its imports (numpy, ...) or its code
        raise BaselineError(f"the COMP90054 model in {folder} does not load: {error}") from None
    rule = getattr(model, "AzulGameRule", None)
    if rule is None or not all(hasattr(rule, name) for name in ("update", "gameEnds")):
        raise BaselineError(
            f"{folder}: its Azul.azul_model has no AzulGameRule with update() and gameEnds() "
            "(the 2021 framework's runner API, which the bench plays through)"
        )
    return model


COMP90054_ACTION_CAP = 2000
"""A game that lasts longer is cut (its 4-player games can run out of tiles and never end)."""


def comp90054_playouts(model: ModuleType, games: int, seed: int) -> tuple[float, int]:
    """The same workload on the COMP90054 model, 2 players, through its ``GameRule`` as its
    runner plays (minus the runner's defensive deep copies): the legal actions, one picked
    with ``rng.random()``, ``update``; its own bag shuffles draw from the seeded ``random``."""
    random.seed(seed)
    rnd = random.Random(seed).random
    moves = 0
    start = time.process_time()
    for _ in range(games):
        rule = model.AzulGameRule(2)
        legal, update, ends = rule.getLegalActions, rule.update, rule.gameEnds
        actions_played = 0
        while not ends() and actions_played < COMP90054_ACTION_CAP:
            options = legal(rule.current_game_state, rule.current_agent_index)
            action = options[int(rnd() * len(options))]
            update(action)
            actions_played += 1
            if action.__class__ is not str:  # "STARTROUND" / "ENDROUND" are the runner's
                moves += 1
    return time.process_time() - start, moves


def same_run_comparison(
    games: int, repeats: int, seed: int, comp90054: ModuleType | None
) -> SameRunComparison:
    """2-player coloured: the engine, the pure engine (if the compiled one runs) and COMP90054
    (if given) in interleaved repeats, so that the machine's load weighs on each alike."""
    pure = load_pure_engine() if arena.engine.COMPILED else None
    comp_games = max(1, games // 10)
    ours, pures, comps = [], [], []
    for r in range(repeats):
        ours.append(playouts(2, Variant.COLOURED, games, seed + r)[0] / games)
        if pure is not None:
            pures.append(playouts(2, Variant.COLOURED, games, seed + r, pure)[0] / games)
        if comp90054 is not None:
            comps.append(comp90054_playouts(comp90054, comp_games, seed + r)[0] / comp_games)
    return SameRunComparison(
        us_per_game=statistics.median(ours) * 1e6,
        pure_us_per_game=statistics.median(pures) * 1e6 if pures else None,
        comp90054_us_per_game=statistics.median(comps) * 1e6 if comps else None,
        comp90054_games=comp_games if comps else 0,
    )


def _plain_deal(
    bag: list[int], lid: list[int], factories: int, rng: random.Random
) -> list[list[int]]:
    """Deal as the rules say, naively: tile by tile, the lid poured in when the bag is empty."""
    bag, lid = list(bag), list(lid)
    deal = []
    for _ in range(factories):
        counts = [0] * 5
        for _ in range(4):
            if not sum(bag):
                bag, lid = lid, [0] * 5
                if not sum(bag):
                    break
            r = rng.randrange(sum(bag))
            colour = 0
            while r >= bag[colour]:
                r -= bag[colour]
                colour += 1
            bag[colour] -= 1
            counts[colour] += 1
        deal.append(counts)
    return deal


def reference_playouts(
    model: ModuleType, players: int, variant: Variant, games: int, seed: int
) -> tuple[float, int]:
    """The same workload on the reference model (it is given its deals: dealt naively here)."""
    rng = random.Random(seed)
    rnd = rng.random
    factories = {2: 5, 3: 7, 4: 9}[players]
    moves = 0
    start = time.process_time()
    for _ in range(games):
        ref = model.RefGame(players, variant.value)
        while ref.phase != "over":
            if ref.phase == "deal":
                ref.deal(_plain_deal(ref.bag, ref.lid, factories, rng))
                continue
            options = ref.legal_moves()
            ref.apply(options[int(rnd() * len(options))])
            moves += 1
    return time.process_time() - start, moves


def _positions(count: int, seed: int) -> list[Game]:
    """Positions from random 2-player games, one every few moves (search-like nodes)."""
    rng = random.Random(seed)
    out: list[Game] = []
    game_seed = seed
    while len(out) < count:
        game = Game.new(players=2, variant=Variant.COLOURED, seed=game_seed)
        game_seed += 1
        step = 0
        while not game.is_over() and len(out) < count:
            if step % 5 == 0:
                out.append(game.copy())
            game.apply(rng.choice(game.legal_moves()))
            step += 1
    return out


def _per_call_us(run: Callable[[], int], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        calls = run()
        times.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(times)


def bench_copy(repeats: int = 5, seed: int = 0) -> CopyResult:
    positions = _positions(400, seed)

    def copies() -> int:
        for _ in range(20):
            for game in positions:
                game.copy()
        return 20 * len(positions)

    def nodes() -> int:
        for _ in range(5):
            for game in positions:
                child = game.copy()
                child.apply(child.legal_moves()[0])
        return 5 * len(positions)

    return CopyResult(
        copy_us=_per_call_us(copies, repeats), copy_legal_apply_us=_per_call_us(nodes, repeats)
    )


def bench_engine(
    games: int = 1000,
    repeats: int = 5,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    comp90054: Path | None = None,
) -> EngineBench:
    """Median-of-``repeats`` playout speed for 2-4 players and both walls, the reference
    model's speed on a tenth of the games, the cost of a search node, and the 2-player
    comparison with the pure engine and COMP90054 (see :func:`same_run_comparison`)."""
    comp_model = load_comp90054(comp90054) if comp90054 is not None else None
    model = load_reference()
    results = []
    ref_games = max(1, games // 10)
    for variant in Variant:
        for players in (2, 3, 4):
            if progress is not None:
                progress(f"{players}-player {variant.value}")
            runs = [playouts(players, variant, games, seed + r) for r in range(repeats)]
            secs = statistics.median(s for s, _ in runs)
            moves = statistics.median(m for _, m in runs)
            ref_us = None
            if model is not None:
                ref_runs = [
                    reference_playouts(model, players, variant, ref_games, seed + r)
                    for r in range(repeats)
                ]
                ref_us = statistics.median(s for s, _ in ref_runs) / ref_games * 1e6
            results.append(
                PlayoutResult(
                    players=players,
                    variant=variant,
                    games_per_s=games / secs,
                    moves_per_s=moves / secs,
                    moves_per_game=moves / games,
                    us_per_game=secs / games * 1e6,
                    reference_us_per_game=ref_us,
                )
            )
    same_run = None
    if comp_model is not None or arena.engine.COMPILED:
        if progress is not None:
            progress("2-player coloured against the baselines")
        same_run = same_run_comparison(games, repeats, seed, comp_model)
    if progress is not None:
        progress("copies")
    return EngineBench(
        games=games,
        repeats=repeats,
        playouts=results,
        copy=bench_copy(repeats, seed),
        reference_model=str(REFERENCE_MODEL) if model is not None else None,
        engine_build=arena.engine.ENGINE_BUILD,
        same_run=same_run,
        comp90054=str(comp90054) if comp90054 is not None else None,
    )


def print_engine_bench(bench: EngineBench, as_json: bool) -> None:
    """Print the results: a table, or one JSON document (``--json``)."""
    if as_json:
        print(json.dumps(bench.to_json(), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"Engine: {bench.engine_build}")
    table = Table(
        title=f"Random playouts, CPU time, median of {bench.repeats} x {bench.games} games"
    )
    for col in ("variant", "players", "games/s", "moves/s", "moves/game", "vs reference model"):
        table.add_column(col, justify="right")
    for r in bench.playouts:
        ratio = r.vs_reference
        table.add_row(
            r.variant.value,
            str(r.players),
            f"{r.games_per_s:,.0f}",
            f"{r.moves_per_s:,.0f}",
            f"{r.moves_per_game:.1f}",
            f"{ratio:.1f}x" if ratio is not None else "n/a",
        )
    console.print(table)
    if bench.reference_model is None:
        console.print(
            "The reference model (tests/engine/reference.py) is not here: run from a source "
            "checkout to get the speed ratio measured in the same run."
        )
    else:
        console.print(
            "vs reference model: CPU time per game of the tests' plain model of the rules "
            "(same workload, same run) divided by the engine's."
        )
    same = bench.same_run
    if same is not None:
        lines = [f"2-player coloured, interleaved repeats: {same.us_per_game:.0f} µs a game"]
        if same.vs_pure is not None:
            lines.append(
                f"the pure-Python engine {same.pure_us_per_game:.0f} µs: compiled "
                f"{same.vs_pure:.2f}x the pure engine (target ≥ 7x)"
            )
        if same.vs_comp90054 is not None and same.pure_vs_comp90054 is not None:
            versus = f"the pure-Python engine {same.pure_vs_comp90054:.1f}x (target ≥ 25x)"
            if same.vs_pure is not None:
                versus = f"the compiled engine {same.vs_comp90054:.1f}x, {versus}"
            lines.append(
                f"COMP90054 ({same.comp90054_games} games a repeat) "
                f"{same.comp90054_us_per_game:,.0f} µs: {versus}"
            )
        console.print("\n".join(lines))
    elif bench.comp90054 is None:
        console.print(
            "COMP90054: not measured (--baseline-comp90054 FOLDER: your copy of the course "
            "framework, the folder holding Azul/azul_model.py)"
        )
    c = bench.copy
    console.print(
        f"Game.copy(): {c.copy_us:.2f} µs (target ≤ 6 µs); copy + legal_moves + apply: "
        f"{c.copy_legal_apply_us:.2f} µs (target ≤ 15 µs)"
    )


def run(games: int, repeats: int, seed: int, as_json: bool, comp90054: Path | None = None) -> int:
    """``arena bench engine``. Raises :class:`BaselineError` for a bad COMP90054 folder."""
    if as_json:
        bench = bench_engine(games=games, repeats=repeats, seed=seed, comp90054=comp90054)
    else:
        from rich.console import Console

        with Console(stderr=True).status("random playouts…") as status:
            bench = bench_engine(
                games=games,
                repeats=repeats,
                seed=seed,
                progress=lambda what: status.update(f"random playouts: {what}…"),
                comp90054=comp90054,
            )
    print_engine_bench(bench, as_json)
    return 0
