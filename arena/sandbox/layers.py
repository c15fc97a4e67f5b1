"""Detect, once per process, which isolation layers really work on this machine.

Every layer is tried for real (a throw-away bwrap run, a setpriv run, a probe cgroup)
rather than inferred from what is installed: containers often ship the binaries but
forbid namespaces or cgroup writes.  ``plan()`` turns the detection plus a Level into
the concrete set of layers one spawn uses, raising SandboxUnavailable for ``strict``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from arena.sandbox import cgroups, rlimits
from arena.sandbox.spec import LayerStatus, Level, SandboxUnavailable
from arena.sandbox.uids import UID_BASE

BWRAP = "bubblewrap"
SECCOMP = "seccomp"
UID = "separate uid"
RLIMITS = "rlimits"
CGROUPS = "cgroups"
PGROUP = "process group"
LAYER_NAMES = (BWRAP, SECCOMP, UID, RLIMITS, CGROUPS, PGROUP)


FIXES = {
    BWRAP: "install bubblewrap (apt-get install bubblewrap); it needs root or "
    "unprivileged user namespaces",
    SECCOMP: "install libseccomp (apt-get install libseccomp2) and the pyseccomp module "
    "(pip install pyseccomp; a dependency of the arena); it is loaded by bubblewrap",
    UID: "run the arena as root so each bot gets its own uid (needs setpriv from util-linux)",
    RLIMITS: "install util-linux (prlimit)",
    CGROUPS: "run as root with a writable /sys/fs/cgroup (e.g. docker run --privileged, "
    "or a delegated cgroup)",
    PGROUP: "",
}


@dataclass(frozen=True)
class Detection:
    """Everything spawn needs to know about the machine, probed once."""

    layers: tuple[LayerStatus, ...]
    bwrap: str | None
    setpriv: str | None
    prlimit: str | None
    cgroups: cgroups.Support | None
    seccomp: bytes | None = None

    def layer(self, name: str) -> LayerStatus:
        """The status of one layer by name."""
        return next(s for s in self.layers if s.name == name)


@dataclass(frozen=True)
class Plan:
    """The layers one spawn will actually use."""

    level: Level
    bwrap: str | None
    setpriv: str | None
    prlimit: str | None
    cgroups: cgroups.Support | None
    seccomp: bytes | None = None
    """The BPF filter bubblewrap loads for the bot (needs bwrap)."""

    @property
    def separate_uid(self) -> bool:
        """A per-bot uid is used (so RLIMIT_NPROC and the uid scan apply)."""
        return self.setpriv is not None


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:160] if lines else "no output"


def bwrap_probe(bwrap: str, seccomp: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run /usr/bin/true exactly as a bot is launched (small /tmp), through bubblewrap."""
    from arena.sandbox.launch import bot_env, bwrap_argv, bwrap_command, data_fd
    from arena.sandbox.spec import Limits

    fds = [data_fd(b"exec /usr/bin/true\n")]
    try:
        if seccomp is not None:
            fds.append(data_fd(seccomp))
        options = bwrap_argv(
            bwrap,
            Limits(tmp_bytes=1 << 20),
            bot_env(None),
            launch_fd=fds[0],
            seccomp_fd=fds[1] if seccomp is not None else None,
        )
        argv, more = bwrap_command(options, ["/bin/sh", "/.launch"])
        fds += more
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=10, check=False, pass_fds=fds
        )
    finally:
        for fd in fds:
            os.close(fd)


def _detect_bwrap() -> tuple[LayerStatus, str | None]:
    path = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if path is None:
        return LayerStatus(BWRAP, False, "bwrap not found: apt-get install bubblewrap"), None
    try:
        res = bwrap_probe(path)
    except (OSError, subprocess.SubprocessError) as exc:
        return LayerStatus(BWRAP, False, f"{path} cannot run: {exc}"), None
    if res.returncode != 0:
        why = _first_line(res.stderr)
        return LayerStatus(BWRAP, False, f"{path} fails here ({why}); " + FIXES[BWRAP]), None
    try:
        version = (
            subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=5, check=False
            ).stdout.strip()
            or "bwrap"
        )
    except (OSError, subprocess.SubprocessError):
        version = "bwrap"
    return LayerStatus(
        BWRAP,
        True,
        f"{version}: no network, own pid/ipc/uts namespaces, read-only /usr and bot folder "
        "at /bot, bounded private /tmp, launch arguments hidden",
    ), path


def _detect_seccomp(bwrap: str | None) -> tuple[LayerStatus, bytes | None]:
    from arena.sandbox.seccomp import SeccompUnavailable, profile

    if bwrap is None:
        return LayerStatus(SECCOMP, False, "needs bubblewrap (it loads the filter)"), None
    try:
        found = profile()
    except SeccompUnavailable as exc:
        return LayerStatus(SECCOMP, False, f"{exc}; " + FIXES[SECCOMP]), None
    try:
        res = bwrap_probe(bwrap, found.program)
    except (OSError, subprocess.SubprocessError) as exc:
        return LayerStatus(SECCOMP, False, f"bwrap --seccomp cannot run: {exc}"), None
    if res.returncode != 0:
        why = _first_line(res.stderr)
        return LayerStatus(SECCOMP, False, f"bwrap refuses the filter ({why})"), None
    return LayerStatus(SECCOMP, True, f"libseccomp filter: {found.describe()}"), found.program


def _detect_uid() -> tuple[LayerStatus, str | None]:
    if os.geteuid() != 0:
        return LayerStatus(UID, False, "not running as root; " + FIXES[UID]), None
    path = shutil.which("setpriv", path="/usr/bin:/bin")
    if path is None:
        return LayerStatus(UID, False, "setpriv not found: apt-get install util-linux"), None
    # Probe with a uid outside the pool: a live bot (a fork bomb, say) may hold a pool uid
    # at its process limit, and the probe must not mistake that for a missing layer.
    probe_uid = UID_BASE - 1
    try:
        res = subprocess.run(
            [
                path,
                f"--reuid={probe_uid}",
                f"--regid={probe_uid}",
                "--clear-groups",
                "--no-new-privs",
                "--",
                "/usr/bin/true",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return LayerStatus(UID, False, f"setpriv cannot run: {exc}"), None
    if res.returncode != 0:
        return LayerStatus(UID, False, f"setpriv fails ({_first_line(res.stderr)})"), None
    return LayerStatus(
        UID, True, f"each bot runs as uid/gid {UID_BASE}+slot, no groups, no new privileges"
    ), path


def _detect_rlimits() -> tuple[LayerStatus, str | None]:
    path = rlimits.prlimit_path()
    how = "via prlimit" if path else "via preexec_fn (prlimit not found)"
    return LayerStatus(RLIMITS, True, f"CPU, DATA, NOFILE, FSIZE, CORE=0, NPROC {how}"), path


def _detect_cgroups() -> tuple[LayerStatus, cgroups.Support | None]:
    try:
        support = cgroups.probe()
    except OSError as exc:
        return LayerStatus(CGROUPS, False, f"probe failed ({exc}); " + FIXES[CGROUPS]), None
    if not support.hierarchies:
        why = "; ".join(support.problems) or "no cgroup hierarchy mounted"
        return LayerStatus(CGROUPS, False, f"{why}; " + FIXES[CGROUPS]), None
    if not support.complete:
        return LayerStatus(CGROUPS, False, "partial: " + support.describe()), support
    return LayerStatus(CGROUPS, True, support.describe()), support


@functools.cache
def detection() -> Detection:
    """Probe the machine once (about 50 ms) and remember the answer."""
    bw, bw_path = _detect_bwrap()
    sc, program = _detect_seccomp(bw_path)
    uid, setpriv = _detect_uid()
    rl, prlimit = _detect_rlimits()
    cg, support = _detect_cgroups()
    pg = LayerStatus(PGROUP, True, "own session and process group; the group is killed")
    return Detection((bw, sc, uid, rl, cg, pg), bw_path, setpriv, prlimit, support, program)


def detect_layers() -> list[LayerStatus]:
    """Status of every layer, in a fixed order (cached after the first call)."""
    return list(detection().layers)


def sandbox_warning(layers: list[LayerStatus] | None = None) -> str | None:
    """One-line warning for running with missing layers, or None if all are on."""
    layers = detect_layers() if layers is None else layers
    off = [s for s in layers if not s.on]
    if not off:
        return None
    names = ", ".join(s.name for s in off)
    return (
        f"warning: sandbox layers off: {names}; bots are less isolated than intended "
        "(run `arena doctor` for details, or use --sandbox strict to refuse)"
    )


def unavailable_message(missing: list[LayerStatus]) -> str:
    """User-facing text for SandboxUnavailable: what is missing and how to fix it."""
    lines = ["strict sandbox refused: these layers are off:"]
    for s in missing:
        fix = FIXES.get(s.name, "")
        if fix and fix not in s.reason:
            lines.append(f"  - {s.name}: {s.reason} (fix: {fix})")
        else:
            lines.append(f"  - {s.name}: {s.reason}")
    return "\n".join(lines)


def plan(level: Level, found: Detection | None = None) -> Plan:
    """Choose the layers for one spawn at ``level``."""
    found = detection() if found is None else found
    if level is Level.OFF:
        # Still never root: as root, a bot always gets its own uid.
        return Plan(level, None, found.setpriv, found.prlimit, None)
    if level is Level.STRICT:
        missing = [s for s in found.layers if not s.on]
        if missing:
            raise SandboxUnavailable(unavailable_message(missing))
    return Plan(level, found.bwrap, found.setpriv, found.prlimit, found.cgroups, found.seccomp)


def check_level(level: Level, layers: list[LayerStatus] | None = None) -> str | None:
    """The one check of a sandbox level against this machine: ``strict`` with a layer
    off raises :class:`SandboxUnavailable` (what is missing, how to fix it); ``auto`` with
    a layer off returns the warning to show; otherwise None."""
    if level is Level.OFF:
        return None
    layers = detect_layers() if layers is None else layers
    missing = [layer for layer in layers if not layer.on]
    if missing and level is Level.STRICT:
        raise SandboxUnavailable(unavailable_message(missing))
    return sandbox_warning(layers) if missing else None
