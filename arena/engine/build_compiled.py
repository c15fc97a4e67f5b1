"""Build the optional compiled engine: ``python -m arena.engine.build_compiled`` (``make
engine-compiled``).

mypyc compiles the rules module (``arena/engine/game.py``, unchanged source) to a C extension
in ``arena/engine/_compiled/``; ``arena.engine`` loads it when its ``SOURCE`` stamp matches the
current sources and ``ARENA_PURE_ENGINE`` is unset, and the pure-Python modules otherwise. It
needs mypy (which ships mypyc; ``pip install -e '.[fast]'``), setuptools and a C compiler with
the Python headers; a normal install needs none of them.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib import import_module
from pathlib import Path

import arena.engine as engine

PACKAGE_DIR = Path(engine.__file__).resolve().parent


def build(into: Path = engine.COMPILED_DIR) -> list[Path]:
    """Compile the engine's hot modules into ``into``; return the extension files written.

    Raises ``RuntimeError`` with a one-line reason when a build tool is missing or fails.
    """
    try:
        from mypyc.build import mypycify

        distribution = import_module("setuptools").Distribution  # untyped: Any
    except ImportError as error:
        raise RuntimeError(
            f"the compiled engine needs mypy and setuptools ({error.name} is missing): "
            "pip install -e '.[fast]'"
        ) from None
    sources = [f"arena/engine/{name}.py" for name in engine.COMPILED_MODULES]
    digest = engine.source_digest()
    root = PACKAGE_DIR.parents[1]  # mypy resolves ``arena.engine...`` from here
    with tempfile.TemporaryDirectory(prefix="arena-engine-build-") as tmp:
        work = Path(tmp)
        previous = Path.cwd()
        try:
            os.chdir(root)
            extensions = mypycify(sources, opt_level="3", target_dir=str(work / "c"))
            dist = distribution({"name": "arena-engine-compiled", "ext_modules": extensions})
            command = dist.get_command_obj("build_ext")
            command.build_lib = str(work / "lib")
            command.build_temp = str(work / "temp")
            command.ensure_finalized()
            command.run()
        except SystemExit as error:  # setuptools/mypyc report failures by exiting
            raise RuntimeError(f"the mypyc build failed (exit {error.code})") from None
        except Exception as error:  # compiler missing, headers missing, a mypyc error
            raise RuntimeError(f"the mypyc build failed: {error}") from None
        finally:
            os.chdir(previous)
        built = sorted((work / "lib" / "arena" / "engine").glob("*.so"))
        if not built:
            raise RuntimeError("the mypyc build wrote no extension module")
        if into.exists():
            shutil.rmtree(into)
        into.mkdir(parents=True)
        written = []
        for extension in built:
            target = into / extension.name
            shutil.copy2(extension, target)
            written.append(target)
    # Written last: a build interrupted before this line is never loaded.
    (into / "SOURCE").write_text(digest + "\n")
    return written


def main() -> int:
    try:
        written = build()
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    names = ", ".join(path.name for path in written)
    print(f"compiled engine built in {engine.COMPILED_DIR}: {names}")
    print("arena.engine now loads it; ARENA_PURE_ENGINE=1 forces the pure-Python engine")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
