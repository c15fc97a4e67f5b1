"""Several hosts, for real: a Ray cluster of network namespaces on this machine.

Each "host" is a network namespace with its own 10.77.0.x address (a veth pair to a
bridge that lives in a namespace of its own: nothing reaches the machine's real network)
and its own pid and UTS namespaces (Ray finds "its" raylet by listing processes, and names
a game's worker by host name), its own Ray temp folder, bundle cache, build cache and
temp folder: no host sees another's files through Ray. A Ray head runs in one, worker
nodes in two others, and `arena tournament --executor ray` in a fourth (with a 0-CPU Ray
node of its own, as a driver needs). One of the first two worker hosts is killed (every
process of its namespace, SIGKILL) while it holds a batch, a third joins and takes the
lost games: the store ends with every scheduled game once, the same results and ratings
as the local pool. A second test kills the head's host mid-run: the driver stops, and
the same command, once the cluster is back, resumes to every game once.

No timing is relied on: both Python bots wait, before their first move in a game of
deal GATED_FROM_DEAL on, until the test creates a gate file (in a folder shown read-only
in the sandbox as a python_env), and say so on stderr (the node's log). So each kill
happens while the hosts provably hold unfinished games, and nothing past the gate can
finish before the kill.

Root only (namespaces); skipped without root, `ip`, `unshare` or ray, unless
ARENA_REQUIRE_RAY=1 (CI), which fails instead. Namespaces are named after this run's
pid; ones left by a dead run are swept before the cluster is made.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arena.tournament import STORE_NAME, Store

from .test_resume import make_public, ratings, results, stored

# Ray clusters of their own: one at a time under pytest-xdist (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("netns")]

REPO = Path(__file__).resolve().parents[2]
BOTS = ["python-greedy", "python-random", "c-greedy"]
SEEDS = 40  # 3 pairings x 2 seatings x 40 deals = 240 games
TOTAL = 3 * 2 * SEEDS
HEAD_TEST_SEEDS = 10
"""The head test's tournament: what matters is that games are owed when the head dies."""
STDERR_LINE = 'print("python-greedy: started", file=sys.stderr, flush=True)'
GATED_FROM_DEAL = 5
"""Games of deal 5 on (210 of the 240) wait at the gate until the test opens it."""
GATE_WAITING = "waiting at the gate: "
GATE_CODE = """
import os as _os
import re as _re
import time as _time


def wait_at_gate(msg):
    \"\"\"Test bot: a game of a deal from GATED_FROM on waits before its first move until the
    test creates the gate file (in a folder the sandbox shows read-only: a python_env).\"\"\"
    found = _re.search(r"-d(\\d+)-", str(msg.get("game_id")))
    if found is None or int(found.group(1)) < GATED_FROM or _os.path.exists(GATE):
        return
    print("waiting at the gate: " + str(msg.get("game_id")), file=sys.stderr, flush=True)
    while not _os.path.exists(GATE):
        _time.sleep(0.05)
"""
MOVE_MS = "120000"
"""A game waits at the gate costing no CPU time; the cpu clock's idle ceiling (5x the
time per move) must outlast the wait, or the waiting bot would forfeit."""
PREFIX = "azc-"
SUBNET = "10.77.0"
HEAD = f"{SUBNET}.1"
PORT = 6379
START_TIMEOUT_S = 90
RAY = str(Path(sys.executable).with_name("ray"))
BWRAP_PATH = "/usr/bin/bwrap"


def _unavailable(why: str) -> None:
    if os.environ.get("ARENA_REQUIRE_RAY") == "1":
        pytest.fail(f"ARENA_REQUIRE_RAY=1 but the namespace cluster cannot run: {why}")
    pytest.skip(why)


def _require() -> None:
    if os.geteuid() != 0:
        _unavailable("network namespaces need root")
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            _unavailable(f"`{tool}` is missing (apt-get install iproute2 util-linux)")
    try:
        import ray  # noqa: F401
    except ImportError:
        _unavailable("ray is not installed (pip install -e '.[ray]')")
    if not Path(RAY).exists():
        _unavailable(f"no `ray` command next to {sys.executable}")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def _pids_in(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _kill_namespace(ns: str) -> list[int]:
    """SIGKILL every process of ``ns`` (a host's power cut); the pids killed."""
    pids = _pids_in(ns)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def _remove_namespace(ns: str) -> None:
    deadline = time.monotonic() + 10
    while _kill_namespace(ns) and time.monotonic() < deadline:
        time.sleep(0.1)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _sweep_stale() -> None:
    """Namespaces of an earlier run whose process is gone (a crashed or killed pytest)."""
    for ns in _namespaces():
        if not ns.startswith(PREFIX):
            continue
        owner = ns[len(PREFIX) :].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove_namespace(ns)
    for folder in Path("/tmp").glob(f"{PREFIX}*"):
        owner = folder.name[len(PREFIX) :].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Host:
    name: str
    ns: str
    address: str
    root: Path
    ray_dir: Path
    """Short (Ray's sockets live there: a Unix socket path has at most 107 bytes)."""
    proc: subprocess.Popen[bytes] | None = None
    without_bwrap: bool = False
    """A host without bubblewrap: its sandbox is weaker than ``strict`` (its mount
    namespace shows /dev/null, not executable, at /usr/bin/bwrap: `bwrap not found`)."""

    def env(self, token: str) -> dict[str, str]:
        """What each host needs set: the cluster's token, and its own caches."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "ARENA_"))}
        for sub in ("tmp", "bundles", "build-cache"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        make_public(self.root / "tmp")
        env.update(
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=token,
            RAY_USAGE_STATS_ENABLED="0",
            TMPDIR=str(self.root / "tmp"),
            ARENA_BUNDLE_CACHE=str(self.root / "bundles"),
            ARENA_BUILD_CACHE=str(self.root / "build-cache"),
            PYTHONPATH=str(REPO),
        )
        return env

    def command(self, inner: list[str]) -> list[str]:
        """``inner`` run as this host: its network, pid, mount and UTS namespaces. Through
        nsenter, not `ip netns exec`, which mounts a sysfs of its own over /sys and so
        hides the cgroup tree a strict sandbox needs."""
        script = f'hostname {self.name} && exec "$@"'
        if self.without_bwrap:
            script = f"mount --bind /dev/null {BWRAP_PATH} && {script}"
        return [
            "nsenter", f"--net=/run/netns/{self.ns}",
            "unshare", "--pid", "--fork", "--mount-proc", "--uts", "--kill-child",
            "sh", "-c", script, "host", *inner,
        ]  # fmt: skip

    def ray_start(self, cpus: int) -> list[str]:
        if self.address == HEAD:
            where = ["--head", f"--port={PORT}", "--include-dashboard=false"]
        else:
            where = [f"--address={HEAD}:{PORT}"]
        return [
            RAY, "start", "--block", *where,
            f"--node-ip-address={self.address}", f"--num-cpus={cpus}",
            f"--temp-dir={self.ray_dir}", "--object-store-memory=100000000",
            "--disable-usage-stats",
        ]  # fmt: skip


@dataclass
class Cluster:
    run: str
    root: Path
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    hosts: dict[str, Host] = field(default_factory=dict)
    switch: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> Path:
        return Path("/tmp") / f"{PREFIX}{self.run}"

    def add_host(self, name: str) -> Host:
        index = len(self.hosts) + 1
        ns = f"{PREFIX}{self.run}-{name}"
        host = Host(name, ns, f"{SUBNET}.{index}", self.root / name, self.short / name)
        _ip("netns", "add", host.ns)
        self.hosts[name] = host
        _ip("-n", host.ns, "link", "set", "lo", "up")
        _ip(
            "link", "add", "eth0", "netns", host.ns, "type", "veth",
            "peer", "name", f"p{index}", "netns", self.switch,
        )  # fmt: skip
        _ip("-n", self.switch, "link", "set", f"p{index}", "master", "br0", "up")
        _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip("-n", host.ns, "link", "set", "eth0", "up")
        # A default route into the bridge (which leads nowhere): Ray finds its own
        # address by asking the kernel for a route, and nothing leaves the switch.
        _ip("-n", host.ns, "route", "add", "default", "dev", "eth0")
        return host

    def start_node(self, name: str, cpus: int, *, without_bwrap: bool = False) -> Host:
        """Start Ray on host ``name`` (made now if new: a restart keeps the host)."""
        host = self.hosts.get(name) or self.add_host(name)
        host.without_bwrap = without_bwrap
        log = (self.root / f"{name}.log").open("wb")
        env = {**host.env(self.token), **self.extra_env}
        host.proc = subprocess.Popen(
            host.command(host.ray_start(cpus)), stdout=log, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,
        )  # fmt: skip
        return host

    def wait_started(self, host: Host) -> None:
        """``ray start --block`` says so once the node is registered with the head."""
        log = self.root / f"{host.name}.log"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if "Ray runtime started" in text:
                return
            assert host.proc is not None
            if host.proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"ray on host {host.name} did not start:\n{log.read_text()[-3000:]}")

    def close(self) -> None:
        for host in self.hosts.values():
            _remove_namespace(host.ns)
            if host.proc is not None:
                try:
                    host.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    host.proc.kill()
        if self.switch:
            _remove_namespace(self.switch)
        shutil.rmtree(self.short, ignore_errors=True)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    _require()
    _sweep_stale()
    run = f"{os.getpid()}-{secrets.token_hex(2)}"
    c = Cluster(run, tmp_path / "hosts")
    c.root.mkdir()
    make_public(c.root)
    try:
        c.switch = f"{PREFIX}{run}-switch"
        _ip("netns", "add", c.switch)
        _ip("-n", c.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", c.switch, "link", "set", "br0", "up")
        yield c
    finally:
        c.close()
        left = [ns for ns in _namespaces() if ns.startswith(f"{PREFIX}{run}")]
        assert left == [], f"namespaces left behind: {left}"


def _bots(root: Path) -> list[Path]:
    """The three bots; both Python ones (one of them in every game) wait at the gate
    (``root/gate/open``) in games of deal GATED_FROM_DEAL on, and python-greedy writes
    to stderr."""
    root.mkdir(exist_ok=True)
    make_public(root)
    (root / "gate").mkdir()
    dirs = []
    for name in BOTS:
        dest = root / "bots" / name
        shutil.copytree(REPO / "bots" / name, dest, ignore=shutil.ignore_patterns("bot"))
        dirs.append(dest)
    gate = f"GATE = {str(_gate(root))!r}\nGATED_FROM = {GATED_FROM_DEAL}\n{GATE_CODE}"
    for name in ("python-greedy", "python-random"):
        source = root / "bots" / name / "bot.py"
        text = source.read_text().replace("import sys\n", f"import sys\n{gate}\n", 1)
        decide = '        elif kind == "decide":\n'
        assert decide in text, name
        text = text.replace(decide, f"{decide}            wait_at_gate(msg)\n", 1)
        if name == "python-greedy":  # a bot that writes to stderr
            text = text.replace("import sys\n", f"import sys\n\n{STDERR_LINE}\n", 1)
        source.write_text(text)
    make_public(root / "bots")
    return dirs


def _gate(root: Path) -> Path:
    return root / "gate" / "open"


def _open_gate(root: Path) -> None:
    _gate(root).write_text("open\n")


def _waiting_at_gate(host: Host) -> set[str]:
    """Games whose bot waits at the gate on ``host`` (its node's stderr logs say so): a
    batch in flight there that cannot finish until the gate opens."""
    waiting = set()
    for log in (host.root / "tmp" / "azul-arena-node-logs").glob("*.stderr.log*"):
        try:  # a bot started again rotates its log: listed, then renamed before this read
            text = log.read_text(errors="replace")
        except FileNotFoundError:
            continue  # its lines are in the rotated copy, listed too or read next time
        for line in text.splitlines():
            if line.startswith(GATE_WAITING):
                waiting.add(line.removeprefix(GATE_WAITING).strip())
    return waiting


def _stored_games(out: Path) -> dict[str, tuple[int, str]]:
    """Each stored game's id: (its deal index, the host that played it)."""
    if stored(out) == 0:
        return {}
    with Store(out / STORE_NAME, readonly=True) as store:
        return {str(r[1]): (int(r[4]), str(r[-1]).split(":")[0]) for r in store.game_rows()}


def _tournament(bots: list[Path], out: Path, *extra: str, seeds: int = SEEDS) -> list[str]:
    gate = bots[0].parents[1] / "gate"
    return [
        sys.executable, "-m", "arena.cli", "tournament", "--quiet",
        "--bots", *map(str, bots), "--seeds", str(seeds), "--out", str(out),
        "--python-env", str(gate), "--time-per-move", MOVE_MS, *extra,
    ]  # fmt: skip


def _games_per_host(out: Path) -> Counter[str]:
    with Store(out / STORE_NAME, readonly=True) as store:
        return Counter(str(row[-1]).split(":")[0] for row in store.game_rows())


def _start_run(
    cluster: Cluster, bots: list[Path], out: Path, seeds: int = SEEDS, *, weak: bool = False
) -> subprocess.Popen[bytes]:
    """A head, two worker hosts, and the tournament on a driver host of its own; with
    ``weak``, a third worker host without bubblewrap and the tournament at ``--sandbox
    strict``."""
    head = cluster.start_node("head", 0)  # the head only coordinates
    cluster.wait_started(head)
    workers = [cluster.start_node(name, 1) for name in ("w1", "w2")]
    cluster.add_host("driver")  # made now: the hosts keep their addresses on a restart
    if weak:
        workers.append(cluster.start_node("weak", 1, without_bwrap=True))
    for host in workers:
        cluster.wait_started(host)
    return _drive(cluster, bots, out, seeds, *(("--sandbox", "strict") if weak else ()))


def _drive(
    cluster: Cluster, bots: list[Path], out: Path, seeds: int = SEEDS, *extra: str
) -> subprocess.Popen[bytes]:
    """The driver host: a 0-CPU Ray node, then the tournament as the parent (store writer)."""
    driver = cluster.hosts.get("driver") or cluster.add_host("driver")
    join = " ".join(driver.ray_start(0)).replace("--block ", "")
    ray = ("--executor", "ray", "--ray-address", f"{HEAD}:{PORT}", *extra)
    play = " ".join(_tournament(bots, out, *ray, seeds=seeds))
    driver.proc = subprocess.Popen(
        driver.command(["sh", "-c", f"{join} >/dev/null && exec {play}"]),
        cwd=REPO, env={**driver.env(cluster.token), **cluster.extra_env},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    return driver.proc


def _wait_for(run: subprocess.Popen[bytes], what: str, ready: Any, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if ready():
            return
        if run.poll() is not None:
            assert run.stdout is not None
            pytest.fail(
                f"the tournament ended before {what}:\n{run.stdout.read().decode()[-3000:]}"
            )
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_tournament_across_namespace_hosts_survives_a_killed_worker_host(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Every batch stops at its first game past the gate, so both worker hosts end up
    holding one in flight: w1 is killed then (provably mid-batch), w3 joins and takes the
    lost games (w2's one CPU is held), the gate opens, and every game is stored once."""
    started = time.monotonic()
    bots = _bots(tmp_path)
    # The local pool's reference run, at once and alongside: its own copy of the bots,
    # whose gate is open from the start.
    local_bots = _bots(tmp_path / "local")
    _open_gate(tmp_path / "local")
    local_out = tmp_path / "local" / "out"
    local = subprocess.Popen(
        _tournament(local_bots, local_out, "--workers", "2"), cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    out = tmp_path / "ray"
    run = _start_run(cluster, bots, out, weak=True)
    w1, w2 = cluster.hosts["w1"], cluster.hosts["w2"]

    def wait_for(what: str, ready: Any, limit_s: float = 120) -> None:
        _wait_for(run, what, ready, limit_s)

    both = "a game at the gate on w1 and on w2"
    wait_for(both, lambda: _waiting_at_gate(w1) and _waiting_at_gate(w2))
    at_gate_s = time.monotonic() - started
    in_flight_on_w1 = _waiting_at_gate(w1)
    at_kill = _stored_games(out)
    assert all(deal < GATED_FROM_DEAL for deal, _ in at_kill.values())  # the gate holds
    assert set(at_kill).isdisjoint(in_flight_on_w1)
    assert _kill_namespace(w1.ns)
    w3 = cluster.start_node("w3", 1)
    cluster.wait_started(w3)
    wait_for("a batch on w3", lambda: _waiting_at_gate(w3))
    retaken_s = time.monotonic() - started
    _open_gate(tmp_path)

    output, _ = run.communicate(timeout=240)
    assert run.returncode == 0, output.decode()[-3000:]
    ray_s = time.monotonic() - started
    local_output, _ = local.communicate(timeout=240)
    assert local.returncode == 0, local_output.decode()[-3000:]

    ray_rows, local_rows = results(out), results(local_out)
    assert len({row[0] for row in ray_rows}) == TOTAL  # 0 lost
    assert ray_rows == local_rows  # 0 duplicated, the same games and outcomes
    assert ratings(out) == ratings(local_out)

    games = _stored_games(out)
    # The games w1 held when it died were played again, on a host still alive.
    assert all(games[game][1] in {"w2", "w3"} for game in in_flight_on_w1)
    per_host = Counter(host for _, host in games.values())
    assert set(per_host) <= {"w1", "w2", "w3"}  # every game ran on a worker host
    # The host without bubblewrap was refused at the start-up check: it played no game,
    # got no bundle, and the driver said why in one line.
    assert "weak" not in per_host and not any((cluster.hosts["weak"].root / "bundles").iterdir())
    refusals = [line for line in output.decode().splitlines() if "refused" in line]
    assert len(refusals) == 1, output.decode()[-3000:]
    assert "node weak (10.77.0.5" in refusals[0] and "bubblewrap (bwrap not found" in refusals[0]
    assert per_host["w2"] > 0 and per_host["w3"] > 0
    # Bots travelled as bundles and were built on each host that played, in its own cache.
    for name in per_host:
        host = cluster.hosts[name]
        assert any((host.root / "bundles").iterdir()), f"{name} unpacked no bundle"
        assert any((host.root / "build-cache").iterdir()), f"{name} built nothing"
    # Its stderr came back from the hosts that ran it, into the parent's log folder.
    for name in per_host:
        log = out / "logs" / f"python-greedy.{name}.stderr.log"
        assert "python-greedy: started" in log.read_text(), name
    print(
        f"\nnamespace cluster: {time.monotonic() - started:.0f} s, games per host "
        f"{dict(sorted(per_host.items()))}, {len(at_kill)} stored when w1 was killed "
        f"holding {sorted(in_flight_on_w1)}; both hosts at the gate at {at_gate_s:.0f} s, "
        f"w1's games on w3 at {retaken_s:.0f} s, the Ray run done at {ray_s:.0f} s"
    )


def test_a_dead_head_stops_the_driver_and_the_same_command_resumes(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Ray's own rule: a process that cannot reach the head (its GCS) for
    ``gcs_rpc_server_reconnect_timeout_s`` (60 s; 10 here) exits. The driver then stops
    with status 1 and Ray's one-line reason, no traceback; the store keeps every game
    finished before; with a head and workers back, the same command plays only the rest.
    The head dies while a worker host holds a game at the gate (so games are owed); 60
    games (10 deals), the last 30 past the gate."""
    started = time.monotonic()
    total = 3 * 2 * HEAD_TEST_SEEDS
    cluster.extra_env["RAY_gcs_rpc_server_reconnect_timeout_s"] = "10"
    bots = _bots(tmp_path)
    out = tmp_path / "ray"
    run = _start_run(cluster, bots, out, HEAD_TEST_SEEDS)
    workers = [cluster.hosts["w1"], cluster.hosts["w2"]]
    _wait_for(run, "a game at the gate", lambda: any(_waiting_at_gate(host) for host in workers))
    in_flight = set().union(*(_waiting_at_gate(host) for host in workers))
    at_gate_s = time.monotonic() - started
    _kill_namespace(cluster.hosts["head"].ns)
    output, _ = run.communicate(timeout=120)
    stopped_s = time.monotonic() - started
    text = output.decode(errors="replace")
    assert run.returncode == 1, text[-3000:]
    assert "Traceback" not in text
    assert "Failed to connect to GCS" in text
    before = _stored_games(out)
    assert 0 < len(before) < total and set(before).isdisjoint(in_flight)
    assert all(deal < GATED_FROM_DEAL for deal, _ in before.values())
    # The cluster comes back (the worker hosts restarted too), the same command resumes.
    for name in ("w1", "w2", "driver"):
        _kill_namespace(cluster.hosts[name].ns)
    _open_gate(tmp_path)
    head = cluster.start_node("head", 0)
    cluster.wait_started(head)
    for name in ("w1", "w2"):
        cluster.wait_started(cluster.start_node(name, 1))
    back_s = time.monotonic() - started
    again = _drive(cluster, bots, out, HEAD_TEST_SEEDS)
    output, _ = again.communicate(timeout=240)
    assert again.returncode == 0, output.decode()[-3000:]
    rows = results(out)  # checks the store's integrity too
    assert len(rows) == len(set(rows)) and len({row[0] for row in rows}) == total
    assert in_flight <= set(_stored_games(out))
    print(
        f"\nhead killed with {len(before)} of {total} games stored; resumed to {total} "
        f"in {time.monotonic() - started:.0f} s (a game at the gate at {at_gate_s:.0f} s, "
        f"the driver stopped at {stopped_s:.0f} s, the cluster back at {back_s:.0f} s)"
    )


def test_a_dead_runs_namespaces_and_folders_are_swept_a_live_runs_kept() -> None:
    """A run killed before its finalizers leaves namespaces: the next run removes them
    (named after a pid that no longer runs), never another live run's."""
    _require()
    dead = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has it
    stale, live = f"{PREFIX}{dead}-0000-w1", f"{PREFIX}{os.getpid()}-0000-w1"
    folder = Path("/tmp") / f"{PREFIX}{dead}-0000"
    try:
        for ns in (stale, live):
            _ip("netns", "add", ns)
        folder.mkdir()
        _sweep_stale()
        assert stale not in _namespaces() and not folder.exists()
        assert live in _namespaces()
    finally:
        for ns in (stale, live):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
