"""What a bot can run inside the sandbox: organiser-declared toolchain folders, and
plain-words answers when a build or run command is not there.

Inside the sandbox only /usr (with the /bin, /lib aliases), the bot folder at /bot,
a private /tmp and the toolchain folders an organiser declared are visible; PATH is
/usr/bin:/bin plus each toolchain's ``bin``.  A program installed under $HOME (rustup's
~/.cargo, sdkman, nvm) or /opt is invisible unless declared.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path

from arena.errors import ArenaError

SYSTEM_PATH = ("/usr/bin", "/bin")
VISIBLE_ROOTS = ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc", "/proc", "/dev")
"""Host paths that exist inside the sandbox too (the bot folder and /tmp aside)."""
_SANDBOX_OWN = ("/", "/tmp", "/etc", "/run", "/var")
"""Folders the sandbox builds itself: a toolchain may sit below them, never be them."""
_SANDBOX_TREES = ("/proc", "/dev", "/sys", "/bot")
"""Trees a toolchain may not be in at all."""
RUNTIMES = ("python3", "node", "java", "javac", "go", "cargo", "rustc", "gcc", "g++", "tsc")
"""Programs worth naming when telling an author what the sandbox offers."""

_NOT_FOUND = re.compile(r"(?:^|\n)(?:/bin/)?sh: (?:\d+: )?(?:line \d+: )?([^:\n]+): not found")


class ToolchainError(ArenaError, ValueError):
    """A declared toolchain path that cannot be used, with a message for the organiser."""


def validate_toolchains(paths: Iterable[str | Path]) -> tuple[str, ...]:
    """Absolute, existing folders that do not shadow the sandbox's own mounts."""
    checked: list[str] = []
    for raw in paths:
        text = str(raw)
        if not os.path.isabs(text):
            raise ToolchainError(f"toolchain path {text!r} must be absolute")
        path = os.path.normpath(text)
        if not os.path.isdir(path):
            raise ToolchainError(f"toolchain path {path} is not an existing folder")
        if path in _SANDBOX_OWN or any(
            path == t or path.startswith(f"{t}/") for t in _SANDBOX_TREES
        ):
            raise ToolchainError(
                f"toolchain path {path} would shadow the sandbox's own {path}; "
                "declare the toolchain's own folder (e.g. /opt/rust or /root/.cargo)"
            )
        if path == "/usr" or path.startswith("/usr/"):
            continue  # already visible
        if path not in checked:
            checked.append(path)
    return tuple(checked)


def validate_python_envs(paths: Iterable[str | Path]) -> tuple[str, ...]:
    """Organiser-declared Python environments (a venv, or a plain folder of modules such
    as a course's framework): checked like toolchains, and a venv must hold packages for
    the sandbox's Python (``lib/python3.X/site-packages``)."""
    checked: list[str] = []
    for raw in paths:
        try:
            found = validate_toolchains([raw]) or (os.path.normpath(str(raw)),)  # /usr: kept
        except ToolchainError as exc:
            message = str(exc).replace("toolchain path", "python_env path", 1)
            raise ToolchainError(message) from None
        checked += [p for p in found if p not in checked]
    for path in checked:
        if os.path.isfile(os.path.join(path, "pyvenv.cfg")) and not _site_packages(path):
            raise ToolchainError(
                f"python_env {path} is a virtualenv without lib/python3.*/site-packages"
            )
    return tuple(checked)


def sandbox_mounts(toolchains: Iterable[str], python_envs: Iterable[str]) -> tuple[str, ...]:
    """The declared folders to show read-only in the sandbox (/usr is there already)."""
    mounts: list[str] = []
    for path in [*toolchains, *python_envs]:
        if path not in mounts and not (path == "/usr" or path.startswith("/usr/")):
            mounts.append(path)
    return tuple(mounts)


def _site_packages(venv: str) -> list[str]:
    lib = Path(venv, "lib")
    return sorted(str(p) for p in lib.glob("python3*/site-packages") if p.is_dir())


def python_path(envs: Iterable[str]) -> dict[str, str]:
    """The bot's PYTHONPATH for the declared Python environments: each venv's
    site-packages, each plain folder itself, in the order declared (the venv's ``.pth``
    files are not run: PYTHONPATH entries are not site directories)."""
    entries: list[str] = []
    for env in envs:
        found = _site_packages(env) if os.path.isfile(os.path.join(env, "pyvenv.cfg")) else [env]
        entries += [e for e in found if e not in entries]
    return {"PYTHONPATH": ":".join(entries)} if entries else {}


def _search_path(toolchains: Iterable[str]) -> list[str]:
    return [*SYSTEM_PATH, *(os.path.join(t, "bin") for t in toolchains)]


def _visible(path: str, toolchains: Iterable[str]) -> bool:
    """Whether an absolute host path can be reached from inside the sandbox."""
    roots = [*VISIBLE_ROOTS, *toolchains]
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def find_in_sandbox(program: str, folder: Path, toolchains: Iterable[str] = ()) -> bool:
    """Whether ``program`` (as a command's first word) would be found inside the sandbox."""
    toolchains = list(toolchains)
    if "/" in program:
        if program.startswith("/bot/"):
            return (folder / program.removeprefix("/bot/")).exists()
        if os.path.isabs(program):
            return _visible(program, toolchains) and os.path.exists(program)
        return (folder / program).exists()
    return shutil.which(program, path=os.pathsep.join(_search_path(toolchains))) is not None


def command_program(command: str) -> str | None:
    """The program a manifest ``command`` starts (after any VAR=value words)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        if "=" in word.split("/")[0] and not word.startswith("/"):
            continue
        return word
    return None


def missing_from_build_output(output: str) -> str | None:
    """The program /bin/sh reported as not found in a failed build's output."""
    found = _NOT_FOUND.search(output)
    return found.group(1).strip() if found else None


def sandbox_view(toolchains: Iterable[str] = ()) -> str:
    """What a bot can see, in plain words (for check-bot)."""
    toolchains = list(toolchains)
    path = os.pathsep.join(_search_path(toolchains))
    present = [p for p in RUNTIMES if shutil.which(p, path=path)]
    lines = [
        "inside the sandbox only these are visible: /usr read-only (and the /bin, /lib "
        "aliases), your bot folder at /bot (read-only; writable during the build), a "
        "private /tmp, /proc and /dev"
        + (f", and the organiser's toolchains {', '.join(toolchains)}" if toolchains else "")
        + "; $HOME is an empty /tmp (nothing under the host's home folders is visible)",
        f"PATH is {path}; runtimes found there: {', '.join(present) or 'none'}",
    ]
    return "\n".join(lines)


def explain_not_found(program: str, what: str, toolchains: Iterable[str] = ()) -> str:
    """Why ``program`` (the build or run command's) is missing inside, and what to do."""
    toolchains = list(toolchains)
    host = shutil.which(program) if "/" not in program else program
    where = (
        f"; on this host it is {host}, outside what the sandbox shows"
        if host and os.path.isabs(host) and os.path.exists(host) and not _visible(host, toolchains)
        else ""
    )
    advice = (
        "Fix: name a program under /usr (e.g. /usr/bin/python3), install the toolchain "
        "from the distribution's packages (apt-get install ...), ask the organiser to "
        "declare its folder (--toolchain PATH / toolchains = [...] in the tournament "
        "file), or build outside the sandbox and ship a prebuilt binary in the bot folder "
        '(command = "./bot", no build).'
    )
    return (
        f"the {what} command's program {program!r} is not found inside the sandbox{where}.\n"
        f"{sandbox_view(toolchains)}\n{advice}"
    )


def explain_build_failure(message: str, toolchains: Iterable[str] = ()) -> str:
    """A failed build's message, plus the plain-words diagnosis when its program is missing."""
    missing = missing_from_build_output(message)
    if missing is None:
        return message
    return f"{message}\n{explain_not_found(missing, 'build', toolchains)}"
