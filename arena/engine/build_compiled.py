"""Build the optional compiled engine: ``python -m arena.engine.build_compiled`` (``make
engine-compiled``).

The C extension ``arena/engine/_game.c`` is compiled with the C compiler and flags this Python
was built with (``sysconfig``) into ``arena/engine/_compiled/game.<extension suffix>``;
``arena.engine`` loads it as ``arena.engine.game`` when its ``SOURCE`` stamp matches the
current sources and ``ARENA_PURE_ENGINE`` is unset, and the pure-Python ``game.py`` otherwise.
It needs a C compiler and the Python headers, nothing from a package registry; a normal
install needs neither.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import arena.engine as engine

PACKAGE_DIR = Path(engine.__file__).resolve().parent
WARNINGS = ("-Wall", "-Wextra")
"""The C must compile clean with these (tests/engine/test_compiled.py builds with -Werror)."""


def _config_command(name: str, fallback: str) -> list[str]:
    value = os.environ.get(name) or sysconfig.get_config_var(name) or fallback
    return shlex.split(str(value))


def build(into: Path | None = None, werror: bool = False) -> list[Path]:
    """Compile the engine into ``into`` (``arena.engine.COMPILED_DIR``); return the extension
    files written.

    Raises ``RuntimeError`` with a one-line reason when the compiler or the Python headers are
    missing or the compiler fails.
    """
    into = engine.COMPILED_DIR if into is None else into
    source = PACKAGE_DIR / engine.COMPILED_SOURCE
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise RuntimeError(
            f"the compiled engine needs the Python headers (no Python.h in {include}): "
            "install this Python's development package (Debian: python3-dev)"
        )
    cc = _config_command("CC", "cc")
    ldshared = _config_command("LDSHARED", f"{cc[0]} -shared")
    if shutil.which(cc[0]) is None or shutil.which(ldshared[0]) is None:
        raise RuntimeError(f"the compiled engine needs a C compiler ({cc[0]} is not on PATH)")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    ccshared = shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC")
    flags = ["-O2", "-fno-strict-aliasing", *WARNINGS, *(["-Werror"] if werror else [])]
    digest = engine.source_digest()
    with tempfile.TemporaryDirectory(prefix="arena-engine-build-") as tmp:
        work = Path(tmp)
        obj, built = work / "_game.o", work / f"game{suffix}"
        for command in (
            [*cc, *ccshared, *flags, f"-I{include}", "-c", str(source), "-o", str(obj)],
            [*ldshared, str(obj), "-o", str(built)],
        ):
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=300)
            except OSError as error:
                raise RuntimeError(f"the C build could not run {command[0]}: {error}") from None
            if result.stderr.strip():
                print(result.stderr.rstrip(), file=sys.stderr)
            if result.returncode != 0:
                first = next(
                    (line for line in result.stderr.splitlines() if "error" in line),
                    f"exit {result.returncode}",
                )
                raise RuntimeError(f"the C build failed: {first.strip()}")
        if into.exists():
            shutil.rmtree(into)
        into.mkdir(parents=True)
        target = into / built.name
        shutil.copy2(built, target)
    # Written last: a build interrupted before this line is never loaded.
    (into / "SOURCE").write_text(digest + "\n")
    return [target]


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
