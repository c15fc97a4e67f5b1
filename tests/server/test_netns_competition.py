"""A competition across several hosts: the namespace cluster of
tests/tournament/test_netns_cluster.py (a Ray head, two 1-CPU worker hosts) plus a
database host running PostgreSQL (a private cluster made with Debian's initdb, listening
on that host's address only), a web host running `arena serve` (its store on that
PostgreSQL, ``[ladder] executor = "ray"`` on the cluster, a 0-CPU Ray node of its own)
and an office host, the organiser's machine, from which this test talks HTTP. Three
bundled bots are uploaded through the API, the ladder plays on the worker hosts, the
organiser starts the finals, and the finals' games are played on the worker hosts and
their results published.

Root only; skipped like the tournament cluster test (ARENA_REQUIRE_RAY=1 fails instead),
and without PostgreSQL's server binaries.
"""

from __future__ import annotations

import contextlib
import ctypes
import gzip
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
httpx = pytest.importorskip("httpx", reason="the server extra is not installed")

from arena.bench.serve import arena_command, pack_bot  # noqa: E402
from tests.tournament.test_netns_cluster import (  # noqa: E402
    HEAD,
    PORT,
    REPO,
    STDERR_LINE,
    SUBNET,
    Cluster,
    Host,
    _unavailable,
    cluster,  # noqa: F401 (the fixture)
)

pytestmark = pytest.mark.slow

PG_BIN = Path("/usr/lib/postgresql/15/bin")
BOTS = ("python-greedy", "python-random", "c-greedy")
WEB_PORT = 8080
LADDER_GAMES = 6
"""Ladder games to wait for before the organiser starts the finals."""
FINALS_DEALS = 2
FINALS_GAMES = 3 * 2 * FINALS_DEALS  # 3 pairs, both seatings
PATIENCE_S = 150
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


class Office:
    """The organiser's machine: HTTP from a thread that lives in the office host's
    network namespace (``setns`` moves only the calling thread), so the test's own
    process needs no route into the cluster."""

    def __init__(self, host: Host, url: str) -> None:
        self.url = url
        self._pool = ThreadPoolExecutor(1, initializer=_enter_netns, initargs=(host.ns,))

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        return self._pool.submit(fn, *args).result()

    def get(self, path: str, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}

        def get() -> Any:
            reply = httpx.get(self.url + path, headers=headers, timeout=30)
            assert reply.status_code == 200, (path, reply.status_code, reply.text[:500])
            return reply.json()

        return self.call(get)

    def post(self, path: str, token: str, **kwargs: Any) -> Any:
        def post() -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            return httpx.post(self.url + path, headers=headers, timeout=60, **kwargs)

        return self.call(post)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _enter_netns(ns: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {ns}")
    finally:
        os.close(fd)


def _wait(
    what: str, probe: Callable[[], Any], hosts: list[Host], limit_s: float = PATIENCE_S
) -> Any:
    """Poll ``probe`` until truthy; fail at once if a host's service (PostgreSQL, the
    server) exits, with the hosts' logs."""
    deadline = time.monotonic() + limit_s
    while True:
        with contextlib.suppress(httpx.HTTPError):
            value = probe()
            if value:
                return value
        dead = [h.name for h in hosts if h.proc is not None and h.proc.poll() is not None]
        if dead or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    tails = "\n".join(f"--- {h.name}\n{_log_tail(h)}" for h in hosts)
    why = f"{dead} exited" if dead else f"timed out after {limit_s:.0f} s"
    pytest.fail(f"{why} waiting for {what}\n{tails}")


def _log_tail(host: Host) -> str:
    try:
        return (host.root.parent / f"{host.name}.log").read_text(errors="replace")[-2500:]
    except OSError:
        return "(no log)"


def _start_postgres(hosts: Cluster, host: Host) -> str:
    """A private PostgreSQL cluster in ``host``'s folder, listening on its address only
    (trust auth: nothing outside this machine's test bridge can reach it); its URL."""
    if not (PG_BIN / "initdb").exists():
        _unavailable(f"no PostgreSQL server binaries in {PG_BIN} (apt-get install postgresql)")
    # Not under pytest's tmp_path: any pytest starting on this machine makes
    # /tmp/pytest-of-root private again, and the postgres user must reach its folder.
    data = hosts.short / host.name / "pgdata"
    data.mkdir(parents=True)
    for folder in (hosts.short, data.parent):
        os.chmod(folder, 0o755)
    subprocess.run(["chown", "postgres:postgres", str(data)], check=True)
    made = subprocess.run(
        ["runuser", "-u", "postgres", "--", str(PG_BIN / "initdb"), "-D", str(data),
         "-U", "arena", "--auth=trust", "-E", "UTF8", "--no-sync"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    with (data / "pg_hba.conf").open("a") as hba:
        hba.write(f"host all arena {SUBNET}.0/24 trust\n")
    log = hosts.root / f"{host.name}.log"
    with log.open("wb") as out:
        host.proc = subprocess.Popen(
            host.command(
                ["runuser", "-u", "postgres", "--", str(PG_BIN / "postgres"), "-D", str(data),
                 "-c", f"listen_addresses={host.address}", "-c", f"unix_socket_directories={data}",
                 "-c", "fsync=off", "-p", "5432"]
            ),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    _wait(
        "PostgreSQL to accept connections",
        lambda: "ready to accept connections" in log.read_text(errors="replace"),
        [host],
        60,
    )
    return f"postgresql+psycopg://arena@{host.address}:5432/postgres"


def _competition_toml(root: Path, web: Host, store: str) -> str:
    deadline = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"""\
[competition]
name = "across hosts"
data_dir = "{root / "data"}"
store = "{store}"

[server]
host = "{web.address}"
port = {WEB_PORT}
registration = "tokens"

[ladder]
players = {{2 = 1.0}}
variants = {{coloured = 1.0}}
games_in_flight = 2
executor = "ray"
ray_address = "{HEAD}:{PORT}"

[play]
sandbox = "auto"
fault_policy = "forfeit"

[play.time]
init_ms = 20000
move_ms = 2000

[phases]
deadline = {deadline}
finals = "at-deadline"
publish = "auto"
ladder = "until-deadline"

[finals]
entrants = "all"
schedule = "round-robin"
deals = {FINALS_DEALS}
master_seed = 2026
"""


def _start_server(hosts: Cluster, web: Host, toml: Path) -> None:
    """The web host: a 0-CPU Ray node (as any Ray driver needs), then `arena serve`."""
    join = " ".join(web.ray_start(0)).replace("--block ", "")
    serve = " ".join([*arena_command(), "serve", str(toml)])
    log = (hosts.root / f"{web.name}.log").open("wb")
    web.proc = subprocess.Popen(
        web.command(["sh", "-c", f"{join} >/dev/null && exec {serve}"]),
        cwd=REPO, env=web.env(hosts.token), stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def _games(office: Office, store: str) -> list[tuple[bool, str, str]]:
    """Every game in the competition store: (of an event, status, the host that played)."""
    import sqlalchemy as sa

    def read() -> list[tuple[bool, str, str]]:
        engine = sa.create_engine(store)
        try:
            with engine.connect() as db:
                rows = db.execute(sa.text("SELECT event_id, status, worker FROM games"))
                return [(e is not None, str(s), str(w or "").split(":")[0]) for e, s, w in rows]
        finally:
            engine.dispose()

    return office.call(read)


def _stderr_by_host(office: Office, store: str) -> dict[str, str]:
    """The bots' stderr the competition store keeps, joined per host that played the game."""
    import sqlalchemy as sa

    def read() -> dict[str, str]:
        engine = sa.create_engine(store)
        query = "SELECT g.worker, s.text FROM stderr_logs s JOIN games g ON g.id = s.game_id"
        try:
            with engine.connect() as db:
                found: dict[str, str] = {}
                for worker, text in db.execute(sa.text(query)):
                    host = str(worker or "").split(":")[0]
                    text = gzip.decompress(bytes(text)).decode("utf-8", "replace")  # as stored
                    found[host] = found.get(host, "") + text
                return found
        finally:
            engine.dispose()

    return office.call(read)


def _greedy_writing_stderr() -> dict[str, str]:
    """python-greedy's bot.py, writing a line to stderr as it starts (every game)."""
    text = (REPO / "bots" / "python-greedy" / "bot.py").read_text()
    return {"bot.py": text.replace("import sys\n", f"import sys\n\n{STDERR_LINE}\n", 1)}


@pytest.fixture
def office_of(cluster: Cluster) -> Iterator[Callable[[str], Office]]:  # noqa: F811
    made: list[Office] = []

    def make(url: str) -> Office:
        made.append(Office(cluster.add_host("office"), url))
        return made[-1]

    yield make
    for office in made:
        office.close()


def test_a_competition_across_namespace_hosts_plays_its_ladder_and_finals_on_the_workers(
    cluster: Cluster,  # noqa: F811
    office_of: Callable[[str], Office],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    head = cluster.start_node("head", 0)
    cluster.wait_started(head)
    workers = [cluster.start_node(name, 1) for name in ("w1", "w2")]
    db = cluster.add_host("db")
    web = cluster.add_host("web")
    office = office_of(f"http://{web.address}:{WEB_PORT}")
    store = _start_postgres(cluster, db)
    for host in workers:
        cluster.wait_started(host)
    root = tmp_path / "competition"
    root.mkdir()
    os.chmod(root, 0o755)
    toml = root / "competition.toml"
    toml.write_text(_competition_toml(root, web, store))
    _start_server(cluster, web, toml)
    watched = [web, db, *workers]
    _wait("arena serve to answer /api/health", lambda: office.get("/api/health"), watched)
    organiser = (root / "data" / "organiser.token").read_text().strip()

    for name in BOTS:
        extra = _greedy_writing_stderr() if name == "python-greedy" else None
        archive = pack_bot(REPO / "bots" / name, extra=extra)
        files = {"archive": (f"{name}.tar.gz", archive, "application/gzip")}
        reply = office.post("/api/submissions", organiser, files=files)
        assert reply.status_code == 202, reply.text
        sid = reply.json()["submission"]

        def settled(sid: int = sid) -> str | None:
            status = str(office.get(f"/api/submissions/{sid}", organiser)["status"])
            return status if status in ("active", "rejected") else None

        assert _wait(f"{name}'s build and check", settled, watched) == "active"
    ladder_s = time.monotonic()

    def ladder_games() -> list[str]:
        games = _games(office, store)
        return [h for event, status, h in games if not event and status == "finished"]

    _wait(f"{LADDER_GAMES} ladder games", lambda: len(ladder_games()) >= LADDER_GAMES, watched)
    ladder_s = time.monotonic() - ladder_s

    finals_s = time.monotonic()
    reply = office.post("/api/admin/phase/start-finals", organiser)
    assert reply.status_code == 200, reply.text
    events = office.get("/api/events", organiser)["events"]
    finals = [e for e in events if e["kind"] == "finals"]
    assert len(finals) == 1

    def finished() -> Any:
        shown = office.get(f"/api/events/{finals[0]['id']}", organiser)
        return shown if shown["status"] == "finished" and shown["results"] else None

    shown = _wait("the finals to finish", finished, watched)
    finals_s = time.monotonic() - finals_s
    assert shown["games"] == {"finished": FINALS_GAMES}
    assert office.get("/api/phase", organiser)["phase"] == "published"
    public = office.get(f"/api/events/{finals[0]['id']}")  # anyone: published
    assert public["visible"] and len(public["results"]["rows"]) == len(BOTS)

    games = _games(office, store)
    finals_hosts = Counter(h for event, status, h in games if event and status == "finished")
    ladder_hosts = Counter(ladder_games())
    # Every game, ladder and finals, ran on a worker host: none on the web or db host.
    assert sum(finals_hosts.values()) == FINALS_GAMES
    assert set(finals_hosts) <= {"w1", "w2"} and set(ladder_hosts) <= {"w1", "w2"}
    # Bot stderr written on the worker hosts reached the store, and the author's /me.
    stderr = _stderr_by_host(office, store)
    assert set(stderr) <= {"w1", "w2"}
    assert any("python-greedy: started" in text for text in stderr.values()), stderr
    own = office.get("/api/me", organiser)["games"]
    assert any("python-greedy: started" in t for g in own for t in g["stderr"].values()), own
    print(
        f"\ncompetition across hosts: {time.monotonic() - started:.0f} s "
        f"(ladder's first {LADDER_GAMES} games {ladder_s:.0f} s, finals {finals_s:.0f} s); "
        f"ladder games per host {dict(sorted(ladder_hosts.items()))}, "
        f"finals games per host {dict(sorted(finals_hosts.items()))}"
    )
