"""The optional compiled engine (the C extension ``_game.c``) and its pure-Python fallback.

The rules tests in this folder run against whichever engine ``arena.engine`` loads: CI runs
them once on the pure engine and once more on the compiled build with
``ARENA_REQUIRE_COMPILED_ENGINE=1`` (``.ci/run``). These tests check how the build is chosen
(in a copy of the package, so no compiler is needed), that the C compiles without a warning,
and that both engines play the same seeded games into byte-identical records in two processes
(``test_parity.py`` compares them position by position in one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import arena.engine

ROOT = Path(__file__).resolve().parents[2]
REQUIRE_COMPILED = os.environ.get("ARENA_REQUIRE_COMPILED_ENGINE") == "1"

PLAY_GAMES = """
import json, random, sys
import arena.engine as engine
from arena.engine import Game
out = {"compiled": engine.COMPILED, "build": engine.ENGINE_BUILD, "records": []}
for players in (2, 3, 4):
    for variant in ("coloured", "gray"):
        for seed in range(6):
            game = Game.new(players=players, variant=variant, seed=seed)
            pick = random.Random(seed).random
            while not game.is_over():
                moves = game.legal_moves()
                child = game.copy()  # copies share boards until written: exercise it
                child.apply(moves[0])
                game.apply(moves[int(pick() * len(moves))])
            names = [f"p{i}" for i in range(players)]
            out["records"].append(game.record(names).model_dump_json())
print(json.dumps(out))
"""


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "ARENA_PURE_ENGINE"}
    environment.update(env, PYTHONPATH=str(cwd))
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _engine_copy(tmp_path: Path) -> Path:
    """The ``arena`` package with only its engine (what the selection needs), without a build."""
    root = tmp_path / "src"
    (root / "arena").mkdir(parents=True)
    shutil.copy(ROOT / "arena" / "__init__.py", root / "arena" / "__init__.py")
    shutil.copytree(
        ROOT / "arena" / "engine",
        root / "arena" / "engine",
        ignore=shutil.ignore_patterns("_compiled", "__pycache__"),
    )
    return root


REPORT = (
    "import arena.engine as e; from arena.engine import Game; g = Game.new(seed=3); "
    "g.apply(g.legal_moves()[0]); print(e.COMPILED); print(e.ENGINE_BUILD)"
)


def test_without_a_build_the_pure_engine_runs_and_says_so(tmp_path: Path) -> None:
    root = _engine_copy(tmp_path)
    result = _python(REPORT, root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "False",
        "pure Python: no compiled build (make engine-compiled builds one)",
    ]


def test_a_stale_build_is_not_loaded(tmp_path: Path) -> None:
    """A build of other sources could play other games: only the pure engine runs."""
    root = _engine_copy(tmp_path)
    compiled = root / "arena" / "engine" / "_compiled"
    compiled.mkdir()
    (compiled / "SOURCE").write_text("0" * 64 + "\n")
    result = _python(REPORT, root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        "pure Python: the compiled build is stale: rebuild it (make engine-compiled)"
    )


def test_a_build_that_does_not_load_falls_back_to_the_pure_engine(tmp_path: Path) -> None:
    root = _engine_copy(tmp_path)
    compiled = root / "arena" / "engine" / "_compiled"
    compiled.mkdir()
    (compiled / f"game{EXTENSION_SUFFIXES[0]}").write_bytes(b"not a shared object")
    digest = _python("import arena.engine as e; print(e.source_digest())", root)
    (compiled / "SOURCE").write_text(digest.stdout)
    result = _python(REPORT, root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1].startswith("pure Python: the compiled build does not load (")


def test_arena_pure_engine_forces_the_pure_engine() -> None:
    result = _python(REPORT, ROOT, ARENA_PURE_ENGINE="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["False", "pure Python: ARENA_PURE_ENGINE is set"]


def test_the_compiled_engine_runs_when_ci_asks_for_it() -> None:
    """CI's second pass over tests/engine must not silently test the pure engine again."""
    if not REQUIRE_COMPILED:
        pytest.skip("ARENA_REQUIRE_COMPILED_ENGINE=1 is not set")
    assert arena.engine.COMPILED, arena.engine.ENGINE_BUILD


def test_compiled_and_pure_engines_write_identical_records() -> None:
    """The same seeded games (2-4 players, both walls, copies played beside them) on the
    compiled build and on the pure engine: every record byte for byte the same."""
    if not arena.engine.COMPILED:
        if REQUIRE_COMPILED:
            pytest.fail(f"no compiled engine: {arena.engine.ENGINE_BUILD}")
        pytest.skip(f"no compiled engine here ({arena.engine.ENGINE_BUILD})")
    runs = {}
    for name, env in (("compiled", {}), ("pure", {"ARENA_PURE_ENGINE": "1"})):
        result = _python(PLAY_GAMES, ROOT, **env)
        assert result.returncode == 0, result.stderr
        runs[name] = json.loads(result.stdout)
    assert runs["compiled"]["compiled"] is True, runs["compiled"]["build"]
    assert runs["pure"]["compiled"] is False
    assert len(runs["compiled"]["records"]) == 36
    for compiled, pure in zip(runs["compiled"]["records"], runs["pure"]["records"], strict=True):
        assert compiled == pure


def test_the_c_source_compiles_without_warnings(tmp_path: Path) -> None:
    """``-Wall -Wextra -Werror``, with this Python's compiler and headers (as CI has them)."""
    from arena.engine.build_compiled import build

    try:
        written = build(into=tmp_path / "_compiled", werror=True)
    except RuntimeError as error:
        if REQUIRE_COMPILED or "failed" in str(error):
            pytest.fail(str(error))
        pytest.skip(str(error))  # no compiler or headers here: the pure engine is the default
    assert [path.name for path in written] == [f"game{EXTENSION_SUFFIXES[0]}"]
    assert (tmp_path / "_compiled" / "SOURCE").read_text().strip() == arena.engine.source_digest()


def test_a_missing_compiler_or_missing_headers_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sysconfig

    from arena.engine import build_compiled

    into = tmp_path / "_compiled"
    monkeypatch.setattr(build_compiled.engine, "COMPILED_DIR", into)
    monkeypatch.setenv("CC", "no-such-compiler-here")
    assert build_compiled.main() == 1
    assert capsys.readouterr().err == (
        "error: the compiled engine needs a C compiler (no-such-compiler-here is not on PATH)\n"
    )
    monkeypatch.delenv("CC")
    paths = {**sysconfig.get_paths(), "include": str(tmp_path)}
    monkeypatch.setattr(build_compiled.sysconfig, "get_paths", lambda: paths)
    assert build_compiled.main() == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the compiled engine needs the Python headers (no Python.h in")
    assert err.count("\n") == 1
    assert not into.exists()  # nothing written, nothing to load


def test_arena_doctor_and_the_engine_bench_say_which_engine_runs() -> None:
    doctor = subprocess.run(
        [sys.executable, "-m", "arena.cli", "doctor"],
        cwd=ROOT,
        env={**os.environ, "ARENA_PURE_ENGINE": "1", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Rules engine: pure Python: ARENA_PURE_ENGINE is set" in doctor.stdout
    bench = _python(
        "import json, contextlib, io\n"
        "from arena.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    main(['bench', 'engine', '--games', '2', '--repeats', '1', '--json'])\n"
        "print(json.loads(out.getvalue())['engine_build'])",
        ROOT,
        ARENA_PURE_ENGINE="1",
    )
    assert bench.returncode == 0, bench.stderr
    assert bench.stdout.strip() == "pure Python: ARENA_PURE_ENGINE is set"


def test_the_compiled_snapshot_is_the_viewers_snapshot_of_the_pure_engine() -> None:
    """The replay's positions taken by the C build's ``_snapshot`` equal, value and type,
    what :func:`arena.viewer.frames.snapshot` reads from the pure engine playing the same
    seeded games (2-4 players, both walls, every position)."""
    import random

    from arena.bench.engine import load_pure_engine
    from arena.engine import Game, Variant
    from arena.viewer.frames import snapshot

    if not arena.engine.COMPILED:
        if REQUIRE_COMPILED:
            pytest.fail(f"no compiled engine: {arena.engine.ENGINE_BUILD}")
        pytest.skip(f"no compiled engine here ({arena.engine.ENGINE_BUILD})")
    pure_game = load_pure_engine()
    positions = 0
    for seed in range(24):
        players, variant = 2 + seed % 3, (Variant.COLOURED, Variant.GRAY)[seed // 3 % 2]
        fast = Game.new(players=players, variant=variant, seed=seed)
        slow = pure_game.new(players=players, variant=variant, seed=seed)
        rng = random.Random(seed)
        while True:
            taken, expected = snapshot(fast), snapshot(slow)
            assert taken == expected
            assert [type(part) for part in taken] == [type(part) for part in expected]
            positions += 1
            if fast.is_over():
                break
            move = rng.choice(fast.legal_moves())
            fast.apply(move)
            slow.apply(move)
    assert positions > 24 * 50


def test_the_compiled_frames_loop_draws_the_frames_of_the_python_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``encode_frames`` through the C build's ``_encode_deltas`` gives, byte for byte as
    JSON, the frames of its own Python loop: 2-4 players, both walls, random and
    first-option moves (long rounds, repeated texts), plus snapshots that repeat (no
    change) and pattern lines that differ as snapshots but read the same."""
    import random

    import orjson

    from arena.engine import Game, Variant
    from arena.viewer import frames

    if frames._COMPILED_DELTAS is None:
        if REQUIRE_COMPILED:
            pytest.fail(f"no compiled engine: {arena.engine.ENGINE_BUILD}")
        pytest.skip(f"no compiled engine here ({arena.engine.ENGINE_BUILD})")
    games = []
    for seed in range(36):
        players, variant = 2 + seed % 3, (Variant.COLOURED, Variant.GRAY)[seed // 3 % 2]
        game = Game.new(players=players, variant=variant, seed=seed)
        rng = random.Random(seed)
        taken = []
        while not game.is_over():
            taken.append(frames.snapshot(game))
            options = game.legal_moves()
            game.apply(options[0] if seed % 4 == 0 else rng.choice(options))
        taken.append(frames.snapshot(game))
        games.append(taken)
    first = games[0]
    emptied = list(first[0])
    boards = list(emptied[8])
    score, lines, wall, floor = boards[0]
    boards[0] = (score, (4, *lines[1:5], 0, *lines[6:]), wall, floor)  # a colour, no tiles
    emptied[8] = tuple(boards)
    games.append([first[0], first[0], tuple(emptied), *first[1:4], first[3]])
    compiled = [orjson.dumps(frames.encode_frames(taken)) for taken in games]
    monkeypatch.setattr(frames, "_COMPILED_DELTAS", None)
    python = [orjson.dumps(frames.encode_frames(taken)) for taken in games]
    assert compiled == python
    assert sum(len(taken) for taken in games) > 36 * 50
