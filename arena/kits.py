"""Starter kits: one bundled bot per language, and ``arena new-bot`` to copy one.

This table is the single owner of the per-language facts that several places show: the
kit folder, the flush idiom (check-bot's advice), the JSON library and the toolchain
packages (protocol/SPEC.md's language notes, checked against this table by the tests).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from arena.errors import ArenaError

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
"""The bundled bots (a source checkout; ``arena new-bot`` copies from here)."""

ARTIFACTS = frozenset({"bot", "classes", "build", "target", "Cargo.lock", "__pycache__"})
"""Build outputs that a copied kit must not carry along."""


class KitError(ArenaError):
    """A kit that cannot be copied, with a message for the user."""


@dataclass(frozen=True)
class Kit:
    language: str
    """The ``language`` value in the kit's bot.toml."""
    folder: str
    """Folder under bots/."""
    aliases: tuple[str, ...]
    flush: str
    """How to get each line to the referee at once."""
    flush_code: str
    """The kit's own code for it (the tests check the kit really does it)."""
    json: str
    """The JSON library the kit uses."""
    json_code: str
    """Where the kit's source uses it (checked by the tests)."""
    toolchain: str
    """Where the build and run programs come from."""
    programs: tuple[str, ...]
    """Programs the kit needs on the host (absolute, or looked up in /usr/bin:/bin)."""
    in_demo: bool = False
    """Plays in `arena demo`: only kits whose toolchain the quickstart machine has
    (Python, gcc, node), so the demo works, and stays the same tournament, anywhere."""
    needs_python_env: bool = False
    """Runs only with modules the organiser declares (``python_env``): never in the demo."""
    next_step: str = "edit choose() in it"
    """What ``arena new-bot`` tells its author to do first."""
    check_flags: str = ""
    """Flags ``arena new-bot`` suggests for the first ``check-bot``."""


KITS: tuple[Kit, ...] = (
    Kit(
        "python",
        "python-greedy",
        ("py", "python3"),
        "print(..., flush=True) or sys.stdout.flush()",
        "sys.stdout.flush()",
        "json (standard library)",
        "import json",
        "Debian python3",
        ("python3",),
        in_demo=True,
    ),
    Kit(
        "javascript",
        "js-random",
        ("js", "node", "nodejs"),
        "fs.writeSync(1, line) (one write per line: nothing to flush)",
        "fs.writeSync(1,",
        "JSON.parse (built in)",
        "JSON.parse(",
        "Node.js (nodejs)",
        ("node",),
        in_demo=True,
    ),
    Kit(
        "typescript",
        "ts-greedy",
        ("ts",),
        "fs.writeSync(1, line) (one write per line: nothing to flush)",
        "fs.writeSync(1,",
        "JSON.parse (built in), typed with interfaces",
        "JSON.parse(",
        "npm install -g typescript @types/node; runs on node",
        ("node", "tsc"),
    ),
    Kit(
        "c",
        "c-greedy",
        (),
        "fflush(stdout) after each line, or setvbuf(stdout, NULL, _IOLBF, 0) once",
        "fflush(stdout)",
        "a small parser in bot.c (C has no usual JSON library in Debian's base)",
        "json_parse(",
        "Debian gcc",
        ("gcc",),
        in_demo=True,
    ),
    Kit(
        "cpp",
        "cpp-greedy",
        ("c++", "cxx"),
        "std::cout << line << std::endl (std::endl flushes) or std::flush",
        "std::endl",
        "nlohmann/json (Debian nlohmann-json3-dev, header in /usr/include)",
        "#include <nlohmann/json.hpp>",
        "Debian g++ nlohmann-json3-dev",
        ("g++",),
    ),
    Kit(
        "java",
        "java-greedy",
        ("jvm",),
        "flush() after each line (System.out.println flushes; print(), PrintWriter, "
        "BufferedWriter do not)",
        "OUT.flush()",
        "Gson (Debian libgoogle-gson-java, /usr/share/java/gson.jar)",
        "import com.google.gson.JsonParser;",
        "Debian default-jdk-headless libgoogle-gson-java",
        ("javac", "java", "/usr/share/java/gson.jar"),
    ),
    Kit(
        "go",
        "go-greedy",
        ("golang",),
        "os.Stdout.Write(...) (unbuffered); a bufio.Writer needs Flush() after each line",
        "os.Stdout.Write(",
        "encoding/json (standard library)",
        '"encoding/json"',
        "Debian golang-go",
        ("go",),
    ),
    Kit(
        "rust",
        "rust-greedy",
        ("rs",),
        "stdout().flush() after each line (stdout is line-buffered, a BufWriter around it is not)",
        "out.flush()",
        "serde_json (Debian librust-serde-json-dev, used offline via .cargo/config.toml)",
        "serde_json::from_str(",
        "Debian rustc cargo librust-serde-json-dev",
        ("cargo", "rustc", "/usr/share/cargo/registry"),
    ),
    Kit(
        "comp90054",
        "comp90054-adapter",
        ("comp90054-azul",),
        "the adapter flushes each protocol line itself; the agent's print() goes to stderr",
        "PROTOCOL_OUT.flush()",
        "json (standard library); the agent sees the framework's own state objects",
        "import json",
        "Debian python3; the course's Azul framework (and numpy, ...) from the organiser's "
        "python_env, never bundled",
        ("python3",),
        needs_python_env=True,
        next_step="put your agent in player.py (class myPlayer; comp90054.toml says which)",
        check_flags="--players 2 --walls coloured --python-env FRAMEWORK_FOLDER",
    ),
)


NOT_IN_DEMO = frozenset(k.folder for k in KITS if not k.in_demo)
"""Bundled bot folders that `arena demo` leaves out."""


def bundled_bots(bots_dir: Path = BOTS_DIR) -> list[Path]:
    """The bundled bot folders the demo (and the benchmarks) play: every kit a fresh
    machine can build."""
    found = sorted(
        p
        for p in (bots_dir.iterdir() if bots_dir.is_dir() else [])
        if (p / "bot.toml").is_file() and p.name not in NOT_IN_DEMO
    )
    if len(found) < 2:
        raise KitError(f"no bundled bots found in {bots_dir}")
    return found


def kit_for(language: str | None) -> Kit | None:
    """The kit for a bot.toml ``language`` (or an alias), case-insensitively."""
    if not language:
        return None
    wanted = language.strip().lower()
    for kit in KITS:
        if wanted == kit.language or wanted in kit.aliases:
            return kit
    return None


def missing_programs(kit: Kit) -> list[str]:
    """The kit's programs this host lacks (what the sandbox would lack too)."""
    missing = []
    for program in kit.programs:
        if program.startswith("/"):
            if not os.path.exists(program):
                missing.append(program)
        elif shutil.which(program, path="/usr/bin:/bin") is None:
            missing.append(program)
    return missing


NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def new_bot(name: str, language: str, parent: Path, bots_dir: Path = BOTS_DIR) -> Path:
    """Copy the kit for ``language`` to ``parent/name``, renamed; return the new folder."""
    kit = kit_for(language)
    if kit is None:
        known = ", ".join(k.language for k in KITS)
        raise KitError(f"no starter kit for language {language!r}; kits: {known}")
    if not NAME_PATTERN.match(name):
        raise KitError(
            f"bad bot name {name!r}: use 1-64 characters of a-z, 0-9, '.', '_', '-' "
            "(starting with a letter or digit)"
        )
    source = bots_dir / kit.folder
    if not (source / "bot.toml").is_file():
        raise KitError(f"the {kit.language} kit is missing ({source}); reinstall the arena")
    target = parent / name
    if target.exists():
        raise KitError(f"{target} already exists; choose another name or remove it")
    try:
        shutil.copytree(source, target, ignore=lambda _d, names: ARTIFACTS & set(names))
        for path in sorted(target.rglob("*")):
            if not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            if kit.folder in text:
                path.write_text(text.replace(kit.folder, name), encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise KitError(f"cannot create {target}: {exc.strerror or exc}") from None
    return target
