"""`arena bench serve`: a live competition server under load.

Starts the real ``arena serve`` on a loopback port with a temporary competition (bundled
bots uploaded through the HTTP API, the ladder playing), then runs N concurrent clients
(httpx, async) that walk a fixed mix of pages and API routes for T seconds. Reports
requests, errors, latency percentiles overall, per route and per half of the run (stable
latency: the second half is no slower than the first), and the games the ladder finished
meanwhile; and, measured just before in the same run, the ladder for T seconds with no
page load (the baseline for its games/min) and one client alone (the baseline for
throughput and latency ratios). Each route is requested once before the clock starts (a
cold template cache is not what a visitor of a running competition meets). Exit status 1
on any error.

``LiveServer`` and the helpers below are also what the end-to-end tests drive the server
with, so the benchmark and the tests exercise the same thing a user runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import ArenaError

REPO = Path(__file__).resolve().parents[2]
BENCH_BOTS = ("python-greedy", "python-random", "c-greedy")
SETTLED = ("active", "rejected", "retired", "disqualified")
"""Submission states after the build worker is done with a version."""
TOKEN = re.compile(r"[A-Za-z0-9_-]{40,}")


def arena_command() -> list[str]:
    """The ``arena`` CLI of this very installation (no reliance on PATH)."""
    return [sys.executable, "-m", "arena.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def competition_toml(
    data_dir: Path,
    port: int,
    *,
    name: str = "bench",
    games_in_flight: int = 2,
    sandbox: str = "auto",
    move_ms: int = 2000,
    init_ms: int = 20000,
    store: str = "sqlite",
    client_connections: int = 16,
) -> str:
    """A small competition: 2-player games on both walls, generous clocks (the machine
    may be loaded; a false timeout would make a fault the bot did not commit)."""
    return f"""\
[competition]
name = "{name}"
data_dir = "{data_dir}"
store = "{store}"

[server]
host = "127.0.0.1"
port = {port}
registration = "tokens"
client_connections = {client_connections}

[ladder]
players = {{2 = 1.0}}
variants = {{coloured = 0.5, gray = 0.5}}
games_in_flight = {games_in_flight}

[play]
sandbox = "{sandbox}"
fault_policy = "forfeit"

[play.time]
init_ms = {init_ms}
move_ms = {move_ms}
"""


def pack_bot(folder: Path, name: str | None = None, extra: dict[str, str] | None = None) -> bytes:
    """``folder`` as the .tar.gz an author uploads; ``name`` renames the bot in its
    bot.toml, ``extra`` adds (or replaces) files."""
    files: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and "__pycache__" not in rel.parts and rel.parts[0] != "bot":
            files[rel.as_posix()] = path.read_bytes()
    if name is not None:
        manifest = files["bot.toml"].decode()
        manifest, n = re.subn(r'(?m)^name\s*=\s*".*"$', f'name = "{name}"', manifest)
        if n != 1:
            raise ArenaError(f"{folder}/bot.toml: no name line to rename")
        files["bot.toml"] = manifest.encode()
    for rel_name, text in (extra or {}).items():
        files[rel_name] = text.encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for rel_name, data in files.items():
            info = tarfile.TarInfo(rel_name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


class LiveServer:
    """``arena serve TOML`` as a subprocess in its own process group, log to a file."""

    def __init__(
        self, toml: Path, port: int, data_dir: Path, log: Path, tree: Path | None = None
    ) -> None:
        self.toml = toml
        self.tree = tree
        """Another source tree to run the server from (its ``arena`` package first on
        PYTHONPATH): the before of a before/after measured in one run."""
        self.url = f"http://127.0.0.1:{port}"
        self.data_dir = data_dir
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> None:
        with self.log.open("ab") as log:
            env = None
            if self.tree is not None:
                env = {**os.environ, "PYTHONPATH": str(self.tree)}
            self.process = subprocess.Popen(
                [*arena_command(), "serve", str(self.toml)],
                env=env,
                # `python -m` puts the working directory before PYTHONPATH: from this tree's
                # folder the other tree's server would import this tree's arena
                cwd=self.tree,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.wait_healthy(timeout)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_healthy(self, timeout: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ArenaError(
                    f"arena serve exited with status {self.process.returncode}:\n" + self.log_tail()
                )
            try:
                if httpx.get(self.url + "/api/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ArenaError(
                    f"arena serve not healthy after {timeout:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def health(self) -> dict[str, Any]:
        """``/api/health`` as it is now: signed in, so that the page cache, which may answer
        a visitor with a page up to ``stale_seconds`` old, does not (the bench counts the
        ladder's games in windows of seconds)."""
        import httpx

        reply = httpx.get(
            self.url + "/api/health",
            headers={"Authorization": f"Bearer {self.organiser_token()}"},
            timeout=30,
        )
        reply.raise_for_status()
        data: dict[str, Any] = reply.json()
        return data

    def page_cache_counts(self) -> dict[str, float]:
        """The page cache's hits and misses so far, from ``/metrics`` (empty: a server
        without the cache)."""
        import httpx

        reply = httpx.get(
            self.url + "/metrics",
            headers={"Authorization": f"Bearer {self.organiser_token()}"},
            timeout=30,
        )
        reply.raise_for_status()
        found = re.findall(r'^arena_page_cache_total\{result="(\w+)"\} (\S+)$', reply.text, re.M)
        return {result: float(value) for result, value in found}

    def organiser_token(self) -> str:
        return (self.data_dir / "organiser.token").read_text().strip()

    def issue_token(self, author: str) -> str:
        """``arena token TOML AUTHOR``, as the organiser runs it."""
        done = subprocess.run(
            [*arena_command(), "token", str(self.toml), author],
            capture_output=True,
            text=True,
            timeout=120,
        )
        found = TOKEN.findall(done.stdout)
        if done.returncode != 0 or not found:
            raise ArenaError(f"arena token {author} failed ({done.returncode}): {done.stderr}")
        return str(found[-1])

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM, as a service manager stops it; the exit status (-9: it had not stopped
        after ``timeout`` s and was killed, as a service manager does next)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(30)
        finally:
            self.kill_group()

    def kill(self) -> None:
        """``kill -9 PID``, as a user (or the OOM killer) does: the server gets no chance
        to clean up; what it started is left to die on its own."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def stragglers(self) -> list[int]:
        """Live processes of the current server's process group."""
        if self.process is None:
            return []
        return group_members(self.process.pid)

    def kill_group(self) -> None:
        """Kill what is left of the current server's process group. Only while the group
        has members: an empty group's id may since belong to someone else."""
        if self.process is not None and self.stragglers():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        self.kill_group()


@dataclass(frozen=True)
class TreeCpu:
    """CPU seconds so far of a process and of everything it started (Linux /proc)."""

    own: float
    """The process itself (``arena serve``: its web, ladder and build threads) and its
    page-making process (:mod:`arena.server.pagemaker`: the server's work, moved out of
    its interpreter lock)."""
    descendants: float
    """Its live descendants (their children reaped included) and the children it has
    reaped: for ``arena serve``, the ladder's game workers and their bots."""


def tree_cpu(root: int) -> TreeCpu:
    """What :class:`TreeCpu` says of ``root``, read now. A process that exited and was
    reaped counts in its parent's children time, so nothing the tree ran is lost; one that
    exited since its last read and whose parent has not reaped it yet is read as a zombie."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    times: dict[int, tuple[int, int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            parent[pid] = int(fields[1])
            # utime + stime, cutime + cstime (proc(5): fields 14-17)
            times[pid] = (int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
        except (OSError, IndexError, ValueError):
            continue
    if root not in times:
        return TreeCpu(0.0, 0.0)
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    own, reaped = times[root]
    below, stack = 0, []
    for pid in children.get(root, []):
        if _is_page_maker(pid):
            own += sum(times[pid])
        else:
            stack.append(pid)
    while stack:
        pid = stack.pop()
        below += sum(times[pid])
        stack.extend(children.get(pid, []))
    return TreeCpu(own / tick, (below + reaped) / tick)


def _is_page_maker(pid: int) -> bool:
    """Whether ``pid`` is a child the server spawned through ``multiprocessing`` (its
    page-making process, :mod:`arena.server.pagemaker`, and that module's resource
    tracker); the ladder is ``python -m arena.server.ladder_process``."""
    try:
        return b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy so far, all cores (``/proc/stat``: user,
    nice, system, irq, softirq, steal). The ladder's bots run in sandboxes whose
    processes are not reaped into the server's tree (their PID namespace ends with them),
    so only the machine's total counts them."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (``wrk`` runs, once waited for)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group ``pgid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(stat.parent.name))
    return found


def submit_archive(url: str, token: str, archive: bytes, filename: str) -> dict[str, Any]:
    """POST /api/submissions; the 202 reply."""
    import httpx

    reply = httpx.post(
        url + "/api/submissions",
        headers={"Authorization": f"Bearer {token}"},
        files={"archive": (filename, archive, "application/gzip")},
        timeout=60,
    )
    if reply.status_code != 202:
        raise ArenaError(f"upload of {filename}: HTTP {reply.status_code} {reply.text[:500]}")
    data: dict[str, Any] = reply.json()
    return data


def wait_for(
    what: str, probe: Callable[[], Any], timeout: float, server: LiveServer | None = None
) -> Any:
    """Poll ``probe`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if server is not None and server.process is not None and server.process.poll() is not None:
            raise ArenaError(f"the server died while waiting for {what}:\n{server.log_tail()}")
        if time.monotonic() > deadline:
            tail = server.log_tail() if server else ""
            raise ArenaError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")
        time.sleep(0.5)


def submission(url: str, token: str, submission_id: Any) -> dict[str, Any]:
    import httpx

    reply = httpx.get(
        f"{url}/api/submissions/{submission_id}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    reply.raise_for_status()
    data: dict[str, Any] = reply.json()
    return data


def wait_settled(
    server: LiveServer, token: str, submission_id: Any, timeout: float = 300
) -> dict[str, Any]:
    """The submission once built and checked (active or rejected)."""

    def probe() -> dict[str, Any] | None:
        data = submission(server.url, token, submission_id)
        return data if data.get("status") in SETTLED else None

    result: dict[str, Any] = wait_for(f"submission {submission_id}", probe, timeout, server)
    return result


# ---------------------------------------------------------------- the load


@dataclass(frozen=True)
class Sample:
    route: str
    started: float
    """Seconds since the load began."""
    seconds: float
    error: str | None


def routes(bots: Iterable[str], games: Iterable[str]) -> list[tuple[str, str]]:
    """The mix each client walks: (route label, path), pages and API alike."""
    bots, games = list(bots), list(games)
    mix = [("GET /", "/"), ("GET /api/health", "/api/health")]
    mix += [("GET /api/leaderboard", "/api/leaderboard"), ("GET /games", "/games")]
    mix += [("GET /api/games", "/api/games?limit=20")]
    for name in bots:
        mix += [
            ("GET /bots/{name}", f"/bots/{name}"),
            ("GET /api/bots/{name}", f"/api/bots/{name}"),
        ]
    for game in games:
        mix += [
            ("GET /games/{id}", f"/games/{game}"),
            ("GET /api/games/{id}", f"/api/games/{game}"),
        ]
    return mix


async def _client(
    client: Any,
    offset: int,
    mix: list[tuple[str, str]],
    start: float,
    seconds: float,
    interval: float | None = None,
    first: float = 0.0,
) -> list[Sample]:
    """One client walking ``mix`` until ``seconds`` are over: asking again as soon as it
    is answered or, with ``interval``, once every ``interval`` seconds from ``first``
    seconds in (a schedule of its own, restarted when it falls :data:`BACKLOG_S` behind,
    as wrk's pacing does)."""
    import httpx

    samples = []
    k = offset
    due = start + first
    while (now := time.perf_counter()) < start + seconds:
        if interval is not None:
            if due > now:
                await asyncio.sleep(due - now)
                now = time.perf_counter()
                if now >= start + seconds:
                    break
            due = max(due, now - BACKLOG_S) + interval
        label, path = mix[k % len(mix)]
        k += 1
        error = None
        try:
            reply = await client.get(path)
            if reply.status_code >= 400:
                error = f"HTTP {reply.status_code}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]
        samples.append(Sample(label, now - start, time.perf_counter() - now, error))
    return samples


BACKLOG_S = 1.0
"""A paced client this far behind its schedule starts a new one (no burst of missed
requests; the achieved rate then shows fewer than offered)."""


async def _load(
    url: str,
    clients: int,
    seconds: float,
    mix: list[tuple[str, str]],
    rate: float | None = None,
) -> list[Sample]:
    """Every client is made and connected before the clock starts: making 50 httpx clients
    blocks the event loop for seconds on a loaded machine, which would be charged to the
    first requests as server latency. With ``rate``, the clients share it evenly."""
    import httpx

    interval = clients / rate if rate else None
    async with contextlib.AsyncExitStack() as stack:
        pool = [
            await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=30))
            for _ in range(clients)
        ]
        for _, path in mix:  # one pass first (not counted): templates, caches
            await pool[0].get(path)
        await asyncio.gather(*(client.get("/api/health") for client in pool))  # connected
        start = time.perf_counter()
        runs = [
            _client(client, i * 7, mix, start, seconds, interval, (interval or 0) * i / clients)
            for i, client in enumerate(pool)
        ]
        return [s for run in await asyncio.gather(*runs) for s in run]


def percentiles(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    cuts = statistics.quantiles(seconds, n=100, method="inclusive") if len(seconds) > 1 else None

    def ms(x: float) -> float:
        return round(x * 1000, 2)

    return {
        "p50_ms": ms(cuts[49] if cuts else seconds[0]),
        "p95_ms": ms(cuts[94] if cuts else seconds[0]),
        "p99_ms": ms(cuts[98] if cuts else seconds[0]),
        "max_ms": ms(max(seconds)),
    }


def summarise(samples: list[Sample], seconds: float) -> dict[str, Any]:
    def block(group: list[Sample]) -> dict[str, Any]:
        return {
            "requests": len(group),
            "errors": sum(1 for s in group if s.error),
            **percentiles([s.seconds for s in group]),
        }

    per_route = {}
    for label in dict.fromkeys(s.route for s in samples):
        per_route[label] = block([s for s in samples if s.route == label])
    half = seconds / 2
    errors = [f"{s.route}: {s.error}" for s in samples if s.error]
    return {
        **block(samples),
        "requests_per_s": round(len(samples) / seconds, 1),
        "first_half": block([s for s in samples if s.started < half]),
        "second_half": block([s for s in samples if s.started >= half]),
        "routes": per_route,
        "error_examples": list(dict.fromkeys(errors))[:10],
    }


# ---------------------------------------------------------------- the benchmark


def prepare(
    root: Path,
    bots: list[Path],
    progress: Callable[[str], None],
    *,
    games_in_flight: int = 2,
    store: str = "sqlite",
    filled_games: int = 0,
    tree: Path | None = None,
) -> tuple[LiveServer, list[str], list[str]]:
    """A running server whose ladder has finished a game: (server, bot names, game ids);
    with ``filled_games``, that many finished games among the bots are written into the
    store (server stopped meanwhile) before the ladder goes on."""
    import httpx

    root.chmod(0o755)  # readable by the per-bot uid
    data_dir = root / "data"
    port = free_port()
    toml = root / "competition.toml"
    # every client stands for another visitor, but on loopback they all share one address
    toml.write_text(
        competition_toml(
            data_dir, port, games_in_flight=games_in_flight, store=store, client_connections=0
        )
    )
    server = LiveServer(toml, port, data_dir, root / "serve.log", tree)
    progress("starting arena serve…")
    server.start()
    token = server.organiser_token()
    names = []
    ids = []
    for folder in bots:
        progress(f"uploading {folder.name}…")
        reply = submit_archive(server.url, token, pack_bot(folder), f"{folder.name}.tar.gz")
        ids.append(reply["submission"])
        names.append(str(reply["bot"]))
    for name, sid in zip(names, ids, strict=True):
        progress(f"building and checking {name}…")
        verdict = wait_settled(server, token, sid)
        if verdict["status"] != "active":
            server.close()
            raise ArenaError(f"bundled bot {name} was rejected: {verdict.get('verdict')}")
    progress("waiting for the ladder's first game…")

    def finished_games() -> list[str]:
        reply = httpx.get(server.url + "/api/games?limit=10", timeout=30).json()
        rows = reply["games"] if isinstance(reply, dict) else reply
        return [str(g["id"]) for g in rows if g.get("status") == "finished"]

    games = wait_for("the first finished game", finished_games, 600, server)
    if filled_games:
        from arena.bench.fill import fill_competition

        server.terminate()
        progress(f"storing {filled_games:,} finished games…")
        fill_competition(competition_store_url(data_dir, store), filled_games)
        server.start()
    return server, names, games[:3]


def competition_store_url(data_dir: Path, store: str) -> str:
    """The store URL ``arena serve`` opens for ``store`` in competition.toml."""
    from arena.competition.config import load_competition

    return load_competition(data_dir.parent / "competition.toml").store_url


DEFAULT_RATE = 1000.0
"""The paced load's requests a second: the rate a deadline night's visitors must be served
at (issue 25), the ladder's games/min beside it the figure that load must leave alone."""


BASELINE_KEYS = ("requests", "errors", "p50_ms", "p95_ms", "p99_ms", "max_ms")


def bench_serve(
    clients: int,
    seconds: float,
    bots: list[Path] | None = None,
    progress: Callable[[str], None] = lambda _: None,
    store: str = "sqlite",
    client: str = "auto",
    games: int = 0,
    tree: Path | None = None,
    rate: float | None = DEFAULT_RATE,
) -> dict[str, Any]:
    """The figures of one run; ``client`` is ``wrk``, ``httpx`` or ``auto`` (wrk when on
    PATH); ``games`` finished games are put in the store (SQL, :mod:`arena.bench.fill`)
    before the server starts; ``rate`` (None: not measured): the requests a second of the
    paced load, measured before the clients that ask as fast as they are answered."""
    from arena.bench import wrkload

    if client == "auto":
        client = "wrk" if wrkload.available() else "httpx"
    if client == "wrk" and not wrkload.available():
        raise ArenaError("--client wrk: wrk is not on PATH (Debian: apt-get install wrk)")
    folders = bots or [REPO / "bots" / name for name in BENCH_BOTS]
    baseline_s = min(5.0, seconds / 3)
    with tempfile.TemporaryDirectory(prefix="arena-bench-serve-") as tmp:
        server, names, game_ids = prepare(
            Path(tmp), folders, progress, store=store, filled_games=games, tree=tree
        )
        mix = routes(names, game_ids)
        try:
            progress(f"the ladder alone for {seconds:g} s…")
            assert server.process is not None
            pid = server.process.pid
            quiet = server.health()["games_finished"]
            tree_alone, busy_alone = tree_cpu(pid), machine_busy_s()
            time.sleep(seconds)
            tree_alone = _tree_delta(tree_alone, tree_cpu(pid))
            busy_alone = machine_busy_s() - busy_alone
            quiet = server.health()["games_finished"] - quiet
            progress(f"baseline: 1 client for {baseline_s:g} s…")
            warm(server.url, mix)
            if client == "wrk":
                alone_block = wrk_figures(server.url, mix, 1, baseline_s, per_route_s=0)
            else:
                alone = asyncio.run(_load(server.url, 1, baseline_s, mix))
                alone_block = summarise(alone, baseline_s)
            paced = None
            if rate is not None:
                # (one spinner line: it fits 80 columns)
                progress(f"paced load, {rate:g} requests/s, in turn with the ladder alone…")
                paced = _paced_load(server, client, mix, clients, seconds, rate)
            before = server.health()
            cache_before = server.page_cache_counts()
            progress(f"{clients} clients ({client}) for {seconds:g} s…")
            mine = time.process_time()
            tree_loaded, wrk_cpu = tree_cpu(pid), _children_cpu_s()
            busy_loaded = machine_busy_s()
            if client == "wrk":
                loaded = wrk_figures(server.url, mix, clients, seconds, per_route_s=0)
            else:
                samples = asyncio.run(_load(server.url, clients, seconds, mix))
                loaded = summarise(samples, seconds)
            tree_loaded = _tree_delta(tree_loaded, tree_cpu(pid))
            cpu = time.process_time() - mine, tree_loaded.own
            busy_loaded = machine_busy_s() - busy_loaded
            wrk_cpu = _children_cpu_s() - wrk_cpu
            after = server.health()
            cache_after = server.page_cache_counts()
            if client == "wrk":  # per route: each alone, all connections, after the mix
                progress("each route alone…")
                loaded["routes"] = wrk_figures(
                    server.url, mix, clients, seconds, per_route_s=max(1.0, min(3.0, seconds / 10))
                )["routes"]
            progress("the bot page as made for a visitor without the cache…")
            made = bot_page_made(server.url, names[0], baseline_s)
            alive = server.process is not None and server.process.poll() is None
            status = server.terminate()
        finally:
            server.close()
    result = {
        "client": client,
        "server_tree": str(tree) if tree else str(REPO),
        "clients": clients,
        "seconds": seconds,
        "bots": names,
        "store": store.split(":", 1)[0],
        "games_stored": before["games_finished"],
        **loaded,
        "baseline": {
            "clients": 1,
            "seconds": baseline_s,
            "requests_per_s": round(alone_block["requests"] / baseline_s, 1),
            **{k: v for k, v in alone_block.items() if k in BASELINE_KEYS},
        },
        "bot_page_made": made,
        "games_finished_before": before["games_finished"],
        "games_finished_during": after["games_finished"] - before["games_finished"],
        "ladder_games_per_min_alone": round(60 * quiet / seconds, 1),
        "ladder_games_per_min_loaded": round(
            60 * (after["games_finished"] - before["games_finished"]) / seconds, 1
        ),
        "ladder_ratio_loaded": _ratio(after["games_finished"] - before["games_finished"], quiet),
        "paced": paced,
        "client_cpu_s": round(cpu[0], 2) if client == "httpx" else None,
        "server_cpu_s": round(cpu[1], 2),
        "server_cpu_ms_per_request": round(1000 * cpu[1] / max(1, loaded["requests"]), 2),
        "cores": cores_used(
            tree_alone,
            tree_loaded,
            clients_s=cpu[0] if client == "httpx" else wrk_cpu,
            busy_s=(busy_alone, busy_loaded),
            seconds=seconds,
            games_alone=quiet,
            games_loaded=after["games_finished"] - before["games_finished"],
        ),
        "page_cache_hit_ratio": hit_ratio(cache_before, cache_after),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "server_alive": alive,
        "server_exit_status": status,
    }
    return result


def _paced_load(
    server: LiveServer,
    client: str,
    mix: list[tuple[str, str]],
    clients: int,
    seconds: float,
    rate: float,
) -> dict[str, Any]:
    """``clients`` clients sending ``rate`` requests a second in all (the load the targets
    speak of, not as much as the clients can get) for ``seconds``, in two halves. Each half
    comes after as long with no load and before as long beside idle burners
    (:data:`BURNER`) using the CPU that half's load used (server and clients): the ladder's
    games beside the load against its games alone, alternating so that a drift of the
    ladder's own rate (which bots its games pair) lands on every side, and against what
    the machine leaves it beside the same CPU used only when the ladder does not want it."""
    from arena.bench.wrkload import WrkRun, run_wrk

    assert server.process is not None
    pid = server.process.pid
    half = seconds / 2
    paths, cookie = [path for _, path in mix], browser_cookie(server.url)
    games = {"alone": 0, "load": 0, "burners": 0}
    lasted = {"alone": 0.0, "load": 0.0, "burners": 0.0}
    """Per kind of window, the ladder's games and the seconds they were counted over (a
    window is a little longer than ``half``: starting wrk, the health requests)."""
    wrk_runs, samples = WrkRun(), []
    own = busy = clients_cpu = burned = 0.0

    def window(kind: str, run: Callable[[], None]) -> None:
        start, before = time.monotonic(), server.health()["games_finished"]
        run()
        games[kind] += server.health()["games_finished"] - before
        lasted[kind] += time.monotonic() - start

    def load() -> None:
        nonlocal wrk_runs, samples, own, busy, clients_cpu
        tree, busy_at = tree_cpu(pid), machine_busy_s()
        mine, children = time.process_time(), _children_cpu_s()
        if client == "wrk":
            wrk_runs = wrk_runs.plus(run_wrk(server.url, paths, clients, half, cookie, rate=rate))
        else:
            samples += asyncio.run(_load(server.url, clients, half, mix, rate))
        spent = _tree_delta(tree, tree_cpu(pid)).own
        own += spent
        busy += machine_busy_s() - busy_at
        used = _children_cpu_s() - children if client == "wrk" else time.process_time() - mine
        clients_cpu += used
        wanted[0] = (spent + used) / half

    wanted = [0.0]
    """The cores the last load used (server and clients): what the burners spin next."""
    for _ in range(2):
        window("alone", lambda: time.sleep(half))
        window("load", load)
        before = _children_cpu_s()
        with idle_burners(wanted[0]):
            window("burners", lambda: time.sleep(half))
        burned += _children_cpu_s() - before

    def per_s(kind: str) -> float:
        return games[kind] / lasted[kind] if lasted[kind] else 0.0

    if client == "wrk":
        block = {
            **wrk_runs.block(),
            "error_examples": [f"{kind}: {n}" for kind, n in wrk_runs.errors.items()],
        }
    else:
        block = summarise(samples, seconds)
    requests = block["requests"]
    beside_load = _ratio(per_s("load"), per_s("alone"))
    beside_burners = _ratio(per_s("burners"), per_s("alone"))
    return {
        "offered_per_s": rate,
        "requests_per_s": round(requests / seconds, 1),
        **{k: block[k] for k in BASELINE_KEYS},
        "error_examples": block["error_examples"],
        "server_cpu_ms_per_request": round(1000 * own / max(1, requests), 2),
        "server_cores": round(own / seconds, 2),
        "clients_cores": round(clients_cpu / seconds, 2),
        "machine_busy_cores": round(busy / seconds, 2),
        "burner_cores": round(burned / seconds, 2),
        "ladder_games": games["load"],
        "ladder_games_alone": games["alone"],
        "ladder_games_beside_burners": games["burners"],
        "ladder_games_per_min": round(60 * per_s("load"), 1),
        "ladder_games_per_min_alone": round(60 * per_s("alone"), 1),
        "ladder_games_per_min_beside_burners": round(60 * per_s("burners"), 1),
        "ladder_ratio": beside_load,
        "ladder_ratio_beside_burners": beside_burners,
        "ladder_ratio_of_machine_bound": (
            round(beside_load / beside_burners, 3) if beside_load and beside_burners else None
        ),
    }


BURNER = r"""
import os, sys, time
try:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
except (AttributeError, OSError):
    os.nice(19)
duty, period, clock = float(sys.argv[1]), 0.01, time.perf_counter
parent = os.getppid()
sys.stdout.write("ready\n")
sys.stdout.flush()
while os.getppid() == parent:  # the bench gone (kill -9 too): stop
    start = clock()
    while clock() - start < duty * period:
        pass
    time.sleep((1 - duty) * period)
"""
"""A process that spins ``duty`` of every 10 ms and sleeps the rest, at the idle
scheduling class (nice 19 where there is none), until its parent is gone (a bench killed
with ``kill -9`` leaves no spinner behind): it runs only on CPU nothing else wants,
so what the ladder loses beside it is what using that much CPU costs on this machine
whatever the priority (vCPUs sharing a host core or its power budget: see
docs/benchmarks.md)."""


@contextlib.contextmanager
def idle_burners(cores: float) -> Iterator[list[int]]:
    """Idle-class burners (:data:`BURNER`) spinning ``cores`` of CPU in all, one per core
    each a share, from when all have started until the block ends (their pids); none when
    ``cores`` is 0."""
    count = os.cpu_count() or 1
    duty = min(1.0, max(0.0, cores / count))
    if duty <= 0:
        yield []
        return
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            burners.append(
                subprocess.Popen(
                    [sys.executable, "-c", BURNER, f"{duty:.4f}"],
                    stdout=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                )
            )
        for burner in burners:
            assert burner.stdout is not None
            if burner.stdout.readline() != b"ready\n":
                raise ArenaError("an idle burner of bench serve did not start")
        yield [burner.pid for burner in burners]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _ratio(games: float, games_alone: float) -> float | None:
    """The ladder's games under a load over its games alone (in windows of one length, or
    both a second)."""
    return round(games / games_alone, 3) if games_alone else None


def _tree_delta(before: TreeCpu, after: TreeCpu) -> TreeCpu:
    return TreeCpu(after.own - before.own, after.descendants - before.descendants)


def cores_used(
    alone: TreeCpu,
    loaded: TreeCpu,
    *,
    clients_s: float,
    busy_s: tuple[float, float],
    seconds: float,
    games_alone: int,
    games_loaded: int,
) -> dict[str, Any]:
    """Where the machine's cores went with the ladder alone and under the page load, and
    the ladder's CPU a game in each. ``busy_s``: the whole machine's busy CPU seconds in
    each phase; what the server process and the clients did not use there is the
    ladder's games (workers and sandboxed bots; anything else running on the machine too,
    so run the bench on a quiet one). When that CPU a game stays the same and the
    machine is full under the load, the ladder lost games to the cores the page load
    took, not to a lock or a wait it shares with the web threads."""

    def games_cpu(tree: TreeCpu, busy: float, clients: float) -> float:
        return max(0.0, busy - tree.own - clients)

    def per_game(cpu_s: float, games: int) -> float | None:
        return round(1000 * cpu_s / games, 2) if games else None

    games_alone_s = games_cpu(alone, busy_s[0], 0.0)
    games_loaded_s = games_cpu(loaded, busy_s[1], clients_s)
    return {
        "machine": os.cpu_count(),
        "alone": {
            "busy": round(busy_s[0] / seconds, 2),
            "server": round(alone.own / seconds, 2),
            "ladder_games": round(games_alone_s / seconds, 2),
        },
        "loaded": {
            "busy": round(busy_s[1] / seconds, 2),
            "server": round(loaded.own / seconds, 2),
            "ladder_games": round(games_loaded_s / seconds, 2),
            "clients": round(clients_s / seconds, 2),
        },
        "ladder_cpu_ms_per_game_alone": per_game(games_alone_s, games_alone),
        "ladder_cpu_ms_per_game_loaded": per_game(games_loaded_s, games_loaded),
    }


def warm(url: str, mix: list[tuple[str, str]]) -> None:
    """Each route once before any clock (templates, caches)."""
    import httpx

    with httpx.Client(base_url=url, timeout=30) as client:
        for _, path in mix:
            client.get(path)


def browser_cookie(url: str) -> str:
    """The Cookie header of a browser that has seen a page (its CSRF cookie): the pages a
    returning visitor is shown, which the page cache may answer."""
    import httpx

    reply = httpx.get(url + "/", timeout=30)
    return "; ".join(f"{k}={v}" for k, v in reply.cookies.items())


def wrk_figures(
    url: str, mix: list[tuple[str, str]], clients: int, seconds: float, per_route_s: float
) -> dict[str, Any]:
    """The mix through ``wrk`` in two halves of ``seconds`` (or, with ``per_route_s``, each
    route alone for that long): the blocks :func:`summarise` gives for httpx samples."""
    from arena.bench.wrkload import run_wrk

    cookie = browser_cookie(url)
    if per_route_s:
        by_label: dict[str, list[str]] = {}
        for label, path in mix:
            by_label.setdefault(label, []).append(path)
        blocks = {}
        for label, paths in by_label.items():
            run = run_wrk(url, paths, clients, per_route_s, cookie)
            blocks[label] = {**run.block(), "requests_per_s": round(run.requests / run.seconds, 1)}
        return {"routes": blocks}
    paths = [path for _, path in mix]
    first = run_wrk(url, paths, clients, seconds / 2, cookie)
    second = run_wrk(url, paths, clients, seconds / 2, cookie)
    whole = first.plus(second)
    return {
        **whole.block(),
        "requests_per_s": round(whole.requests / whole.seconds, 1),
        "first_half": first.block(),
        "second_half": second.block(),
        "routes": {},
        "error_examples": [f"{kind}: {n}" for kind, n in whole.errors.items()],
    }


BOT_PAGE_TIMEOUT_S = 30.0
"""A bot page made in longer than this counts as an error (main made one at 100,000 games
in more than 30 s under the load)."""


def bot_page_made(url: str, name: str, seconds: float) -> dict[str, Any]:
    """``/bots/NAME`` requested by one visitor with no cookie for ``seconds``: the cache
    never answers it, so this is the time to make the page from the store."""
    import httpx

    times = []
    errors = 0
    with httpx.Client(base_url=url, timeout=BOT_PAGE_TIMEOUT_S) as client:
        end = time.perf_counter() + seconds
        while (start := time.perf_counter()) < end:
            client.cookies.clear()
            try:
                failed = client.get(f"/bots/{name}").status_code >= 400
            except httpx.TimeoutException:  # a page that takes this long is an error
                failed = True
            times.append(time.perf_counter() - start)
            errors += failed
    return {"requests": len(times), "errors": errors, **percentiles(times)}


def hit_ratio(before: dict[str, float], after: dict[str, float]) -> float | None:
    """Answers from the page cache (fresh or stale) among its requests between two
    ``/metrics`` readings (None: no cache, or nothing asked of it)."""
    hits = sum(after.get(k, 0) - before.get(k, 0) for k in ("hit", "stale"))
    misses = after.get("miss", 0) - before.get("miss", 0)
    return round(hits / (hits + misses), 3) if hits + misses else None


def run(
    clients: int,
    seconds: float,
    as_json: bool,
    console: Any,
    store: str = "sqlite",
    client: str = "auto",
    games: int = 0,
    tree: Path | None = None,
    rate: float = DEFAULT_RATE,
) -> int:
    import json

    if clients < 1 or seconds <= 0:
        raise ArenaError("--clients must be at least 1 and --seconds positive")
    if not rate >= 0 or rate == float("inf"):
        raise ArenaError(f"--rate must be 0 (no paced load) or a positive number, not {rate:g}")
    if games < 0:
        raise ArenaError("--games must not be negative")
    if tree is not None and not (tree / "arena" / "cli.py").is_file():
        raise ArenaError(f"--server-tree {tree}: no arena/cli.py there (a source tree's root)")
    if as_json:
        result = bench_serve(
            clients, seconds, store=store, client=client, games=games, tree=tree, rate=rate or None
        )
        print(json.dumps(result, indent=2))
    else:
        with console.status("preparing…") as status:
            result = bench_serve(
                clients,
                seconds,
                None,
                status.update,
                store=store,
                client=client,
                games=games,
                tree=tree,
                rate=rate or None,
            )
        print_result(result, console)
    failed = result["errors"] or result["baseline"]["errors"] or not result["server_alive"]
    failed = failed or (result.get("paced") or {}).get("errors")
    failed = failed or result.get("bot_page_made", {}).get("errors")
    failed = failed or result.get("server_exit_status") == -signal.SIGKILL
    return 1 if failed else 0


def _share(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.0%}"


def print_result(result: dict[str, Any], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=f"{result['clients']} {result['client']} clients for {result['seconds']:g} s on "
        f"loopback, {result['store']} store, {result['games_stored']:,} games "
        f"({result['requests_per_s']} requests/s)"
    )
    for col in ("route", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(col, justify="left" if col == "route" else "right")

    def row(label: str, b: dict[str, Any]) -> None:
        table.add_row(
            escape(label),
            str(b["requests"]),
            str(b["errors"]),
            *(
                f"{b[k]:.1f}" if b[k] is not None else "-"
                for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")
            ),
        )

    for label, b in result["routes"].items():
        row(label, b)
    row("all (first half)", result["first_half"])
    row("all (second half)", result["second_half"])
    row("all", result)
    console.print(table)
    if result.get("client") == "wrk":
        console.print("route rows: each route alone with all the connections, after the mix")
    base = result["baseline"]
    speedup = result["requests_per_s"] / base["requests_per_s"]
    console.print(
        f"baseline, 1 client alone for {base['seconds']:.1f} s just before: "
        f"{base['requests_per_s']} requests/s, p50 {base['p50_ms']} ms, p99 {base['p99_ms']} ms; "
        f"with {result['clients']} clients: {speedup:.1f}x "
        f"the throughput, p50 {result['p50_ms'] / base['p50_ms']:.1f}x"
    )
    clients_cpu = (
        f"these clients {result['client_cpu_s']} s" if result["client_cpu_s"] is not None else "wrk"
    )
    console.print(
        f"CPU during the load: server (its page process included) {result['server_cpu_s']} s "
        f"({result['server_cpu_ms_per_request']} ms a request), "
        f"{clients_cpu} (of {result['seconds']:g} s); "
        f"page cache hits: {result['page_cache_hit_ratio']}; "
        f"load average {' '.join(map(str, result['load_average']))}"
    )
    made = result["bot_page_made"]
    console.print(
        f"bot page made for a visitor the cache does not answer (1 client): "
        f"p50 {made['p50_ms']} ms, p99 {made['p99_ms']} ms over {made['requests']} requests"
    )
    console.print(
        f"ladder: {result['games_finished_during']} games finished during the load "
        f"({result['games_finished_before']} before): "
        f"{result['ladder_games_per_min_loaded']} games/min against "
        f"{result['ladder_games_per_min_alone']} with no page load just before "
        f"({_share(result['ladder_ratio_loaded'])} of it)"
    )
    paced = result.get("paced")
    if paced:
        console.print(
            f"paced load, {result['clients']} clients sending {paced['offered_per_s']:g} "
            f"requests/s in all for {result['seconds']:g} s in two halves (before the load "
            f"above): {paced['requests_per_s']} requests/s answered, {paced['errors']} "
            f"errors, p50 {paced['p50_ms']} ms, p99 {paced['p99_ms']} ms; server "
            f"{paced['server_cpu_ms_per_request']} ms of CPU a request ({paced['server_cores']} "
            f"of a core), clients {paced['clients_cores']}, machine "
            f"{paced['machine_busy_cores']} cores busy"
        )
        console.print(
            f"the ladder in turn alone, beside the paced load and beside idle-class burners "
            f"spinning what the load used ({paced['burner_cores']} cores): "
            f"{paced['ladder_games_per_min_alone']}, {paced['ladder_games_per_min']} and "
            f"{paced['ladder_games_per_min_beside_burners']} games/min: beside the load "
            f"{_share(paced['ladder_ratio'])} of its rate alone, beside CPU it never had to "
            f"yield {_share(paced['ladder_ratio_beside_burners'])} (the machine's bound), the "
            f"load {_share(paced['ladder_ratio_of_machine_bound'])} of that bound"
        )
        for example in paced["error_examples"]:
            console.print(f"[red]error (paced)[/red] {escape(example)}")
    cores = result.get("cores")
    if cores:
        alone, loaded = cores["alone"], cores["loaded"]
        console.print(
            f"cores busy (of {cores['machine']}): {alone['busy']} alone, {loaded['busy']} under "
            f"the load; the ladder's games (workers and bots) {alone['ladder_games']} alone, "
            f"{loaded['ladder_games']} under the load, beside the server (and its page process) "
            f"{alone['server']} → {loaded['server']} and the clients {loaded['clients']}; "
            f"the ladder's CPU a game {cores['ladder_cpu_ms_per_game_alone']} ms alone, "
            f"{cores['ladder_cpu_ms_per_game_loaded']} ms under the load"
        )
    for example in result["error_examples"]:
        console.print(f"[red]error[/red] {escape(example)}")
    if not result["server_alive"]:
        console.print("[red]the server died during the load[/red]")
    if result.get("server_exit_status") == -signal.SIGKILL:
        console.print("[red]the server did not stop within 60 s of SIGTERM: killed[/red]")
