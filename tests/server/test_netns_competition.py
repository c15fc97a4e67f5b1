"""A competition across several hosts: the namespace cluster of
tests/tournament/test_netns_cluster.py (a Ray head, two 1-CPU worker hosts) plus a
database host running PostgreSQL (a private cluster made with Debian's initdb, listening
on that host's address only), a web host running `arena serve` (its store on that
PostgreSQL, ``[ladder] executor = "ray"`` on the cluster, a 0-CPU Ray node of its own)
and an office host, the organiser's machine, from which this test talks HTTP. Three
bundled bots are uploaded through the API, the ladder plays on the worker hosts, the
organiser starts the finals, and the finals' games are played on the worker hosts and
their results published. On the way, in phases of the same cluster: the database host
dies and comes back, the web host dies and `arena serve` starts again, and a worker host
dies holding finals games. The uploaded Python bots wait before a move while the test
holds a gate (a hold file per kind of game, in a folder the sandbox shows read-only), so
each death provably hits games in flight.

Root only; skipped like the tournament cluster test (ARENA_REQUIRE_RAY=1 fails instead),
and without PostgreSQL's server binaries.
"""

from __future__ import annotations

import contextlib
import ctypes
import gzip
import os
import shutil
import subprocess
import sys
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
    GATE_WAITING,
    HEAD,
    PORT,
    RAY,
    REPO,
    STDERR_LINE,
    SUBNET,
    Cluster,
    Host,
    _ip,
    _kill_namespace,
    _pids_in,
    _unavailable,
    cluster,  # noqa: F401 (the fixture)
)

# Ray clusters of their own: one at a time under pytest-xdist (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("netns")]

PG_BIN = Path("/usr/lib/postgresql/15/bin")
BOTS = ("python-greedy", "python-random", "c-greedy")
WEB_PORT = 8080
LADDER_GAMES = 6
"""Ladder games to wait for before the organiser starts the finals."""
FINALS_DEALS = 2
FINALS_GAMES = 3 * 2 * FINALS_DEALS  # 3 pairs, both seatings
PATIENCE_S = 150
MOVE_MS = 60000
"""A held game waits at the gate costing no CPU time; the idle ceiling (5x the time per
move) must outlast the wait, or the waiting bot would forfeit."""
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


EXPLAIN: list[Callable[[], str]] = []
"""What a failed wait adds to the hosts' logs (set once the store and hosts exist)."""


@pytest.fixture(autouse=True)
def _explain_this_test_only() -> Iterator[None]:
    yield
    EXPLAIN.clear()


def _wait(
    what: str, probe: Callable[[], Any], hosts: list[Host], limit_s: float = PATIENCE_S
) -> Any:
    """Poll ``probe`` until truthy; fail at once if a host's service (PostgreSQL, the
    server) exits, with the hosts' logs (and :data:`EXPLAIN`'s findings)."""
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
    for explain in EXPLAIN:
        try:
            tails += "\n" + explain()
        except Exception as exc:  # a diagnosis must not hide the failure it explains
            tails += f"\n(cannot explain: {type(exc).__name__}: {exc})"
    why = f"{dead} exited" if dead else f"timed out after {limit_s:.0f} s"
    pytest.fail(f"{why} waiting for {what}\n{tails}")


def _unfinished_and_stacks(hosts: Cluster, office: Office, store: str, web: Host) -> str:
    """The games not finished (in the store), the Ray cluster's use and demands, and the
    Python stacks of the web host's arena processes (py-spy, when installed): where a
    stalled ladder waits."""
    rows = _query(office, store, "SELECT id, status, worker FROM games WHERE status <> 'finished'")
    found = [f"--- games not finished: {rows}"]
    status = subprocess.run(
        web.command([RAY, "status", f"--address={HEAD}:{PORT}", "-v"]),
        env=web.env(hosts.token), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    found.append(f"--- ray status\n{(status.stdout + status.stderr)[-6000:]}")
    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    for pid in _pids_in(web.ns) if spy else []:
        with contextlib.suppress(OSError):
            if b"arena" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
        dump = subprocess.run(
            [str(spy), "dump", "--locals", "--pid", str(pid)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        found.append(f"--- py-spy dump --locals {pid}\n{(dump.stdout + dump.stderr)[-20000:]}")
    return "\n".join(found)


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
    data = _pg_data(hosts, host)
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
    _run_postgres(hosts, host)
    return f"postgresql+psycopg://arena@{host.address}:5432/postgres"


def _pg_data(hosts: Cluster, host: Host) -> Path:
    return hosts.short / host.name / "pgdata"


def _run_postgres(hosts: Cluster, host: Host) -> None:
    """PostgreSQL on ``host`` (again, after a crash: it recovers from its WAL)."""
    data = _pg_data(hosts, host)
    log = hosts.root / f"{host.name}.log"
    ready = "ready to accept connections"
    before = log.read_text(errors="replace").count(ready) if log.exists() else 0
    with log.open("ab") as out:
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
        lambda: log.read_text(errors="replace").count(ready) > before,
        [host],
        60,
    )


def _competition_toml(root: Path, web: Host, store: str, gate: Path) -> str:
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
python_env = ["{gate}"]

[play.time]
init_ms = 20000
move_ms = {MOVE_MS}

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
    log = (hosts.root / f"{web.name}.log").open("ab")  # kept across a restart
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


HOLD_CODE = """
import os as _os
import time as _time


def wait_at_gate(msg):
    \"\"\"Test bot: while the test's hold file for this kind of game (finals, ladder)
    exists, wait before a move (in a folder the sandbox shows read-only: a python_env).\"\"\"
    game = str(msg.get("game_id"))
    hold = _os.path.join(HOLDS, "finals" if game.startswith("finals") else "ladder")
    if not _os.path.exists(hold):
        return
    print("waiting at the gate: " + game, file=sys.stderr, flush=True)
    while _os.path.exists(hold):
        _time.sleep(0.05)
"""


def _bot_files(name: str, holds: Path) -> dict[str, str] | None:
    """The uploaded Python bots wait at the test's gate (every game seats one of them),
    and python-greedy writes a line to stderr as it starts (every game)."""
    if not name.startswith("python-"):
        return None
    text = (REPO / "bots" / name / "bot.py").read_text()
    gate = f"HOLDS = {str(holds)!r}\n{HOLD_CODE}"
    text = text.replace("import sys\n", f"import sys\n{gate}\n", 1)
    decide = '        elif kind == "decide":\n'
    assert decide in text, name
    text = text.replace(decide, f"{decide}            wait_at_gate(msg)\n", 1)
    if name == "python-greedy":
        text = text.replace("import sys\n", f"import sys\n\n{STDERR_LINE}\n", 1)
    return {"bot.py": text}


def _hold(holds: Path, kind: str) -> None:
    (holds / kind).write_text("hold\n")


def _release(holds: Path, kind: str) -> None:
    (holds / kind).unlink(missing_ok=True)


def _held(host: Host, finals: bool = False) -> set[str]:
    """Games (finals or ladder) whose bot waits at the gate on ``host``, as its bots'
    stderr logs of games in flight say: games that cannot finish until released."""
    waiting = set()
    for log in (host.root / "tmp" / "azul-arena-node-logs").glob("*/*.stderr.log*"):
        with contextlib.suppress(OSError):  # a finished game's folder is deleted
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith(GATE_WAITING):
                    game = line.removeprefix(GATE_WAITING).strip()
                    if game.startswith("finals") == finals:
                        waiting.add(game)
    return waiting


def _query(office: Office, store: str, *sql: str) -> Any:
    """Rows of ``sql`` on the competition store (from the office host); several
    statements see one snapshot of it (the ladder plays on meanwhile) and give a list of
    results."""
    import sqlalchemy as sa

    def read() -> Any:
        engine = sa.create_engine(store, isolation_level="REPEATABLE READ")
        try:
            with engine.connect() as db, db.begin():
                found = [list(db.execute(sa.text(one))) for one in sql]
                return found[0] if len(found) == 1 else found
        finally:
            engine.dispose()

    return office.call(read)


def _status(office: Office, store: str) -> dict[str, str]:
    """Each game's status in the store."""
    return dict(_query(office, store, "SELECT id, status FROM games"))


def _assert_each_game_stored_once(office: Office, store: str) -> None:
    """Exactly once by game id: every finished rated game is rated once (one rating step
    per seat), nothing else is rated, and the ratings count every rated game once."""
    steps, counted = _query(
        office,
        store,
        "SELECT g.id, g.status, g.players, count(r.id) FROM games g LEFT JOIN "
        "rating_history r ON r.game_id = g.id WHERE g.rated GROUP BY g.id, g.status, g.players",
        "SELECT coalesce(sum(games), 0) FROM ratings",
    )
    wrong = [
        row for row in steps if row[3] != (row[2] if row[1] == "finished" else 0)
    ]  # fmt: skip
    assert wrong == [], wrong
    rated = sum(row[2] for row in steps if row[1] == "finished")
    assert counted == [(rated,)]


def _answer(office: Office, path: str) -> tuple[int, str, float]:
    """A GET from the office: its status, the start of its body, seconds it took."""

    def get() -> tuple[int, str, float]:
        started = time.monotonic()
        reply = httpx.get(office.url + path, timeout=60)
        return reply.status_code, reply.text[:2000], time.monotonic() - started

    return office.call(get)


def _web_log(hosts: Cluster, web: Host) -> str:
    return (hosts.root / f"{web.name}.log").read_text(errors="replace")


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
    """One cluster, in phases: the ladder plays on the worker hosts; the database host
    dies (every process SIGKILLed, its link down) while ladder games are held in flight,
    and comes back; the web host dies the same way and `arena serve` starts again; the
    finals start, and a worker host dies holding finals games. No phase relies on timing:
    the uploaded Python bots wait at a gate while the test holds it."""
    started = time.monotonic()
    # Ray notices a dead node after 5 failed health checks, one a second here (3 s by
    # default): the finals wait 5 s, not 15 s, for the games of the killed worker host.
    cluster.extra_env["RAY_health_check_period_ms"] = "1000"
    head = cluster.start_node("head", 0)
    cluster.wait_started(head)
    workers = [cluster.start_node(name, 1) for name in ("w1", "w2")]
    db = cluster.add_host("db")
    web = cluster.add_host("web")
    office = office_of(f"http://{web.address}:{WEB_PORT}")
    store = _start_postgres(cluster, db)
    holds = cluster.short / "holds"
    holds.mkdir()
    os.chmod(holds, 0o755)
    for host in workers:
        cluster.wait_started(host)
    root = tmp_path / "competition"
    root.mkdir()
    os.chmod(root, 0o755)
    toml = root / "competition.toml"
    toml.write_text(_competition_toml(root, web, store, holds))
    _start_server(cluster, web, toml)
    EXPLAIN[:] = [lambda: _unfinished_and_stacks(cluster, office, store, web)]
    watched = [web, db, *workers]
    _wait("arena serve to answer /api/health", lambda: office.get("/api/health"), watched)
    organiser = (root / "data" / "organiser.token").read_text().strip()

    for name in BOTS:
        archive = pack_bot(REPO / "bots" / name, extra=_bot_files(name, holds))
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

    db_s = time.monotonic()
    db_outage = _database_host_dies(cluster, office, store, holds, ladder_games)
    db_s = time.monotonic() - db_s
    web_s = time.monotonic()
    _web_host_dies(cluster, office, store, holds, toml)
    web_s = time.monotonic() - web_s

    finals_s = time.monotonic()
    _hold(holds, "finals")
    reply = office.post("/api/admin/phase/start-finals", organiser)
    assert reply.status_code == 200, reply.text
    events = office.get("/api/events", organiser)["events"]
    finals = [e for e in events if e["kind"] == "finals"]
    assert len(finals) == 1
    w1, w2 = workers
    both = "a finals game held on w1 and one on w2"
    _wait(both, lambda: _held(w1, finals=True) and _held(w2, finals=True), watched)
    on_w1 = _held(w1, finals=True)
    finals_where = f"FROM games WHERE event_id = {int(finals[0]['id'])}"
    assert _query(office, store, f"SELECT count(*) {finals_where} AND status = 'finished'") == [
        (0,)
    ]  # the gate holds every finals game: the kill provably hits games in flight
    assert _kill_namespace(w1.ns)
    _release(holds, "finals")

    def finished() -> Any:
        shown = office.get(f"/api/events/{finals[0]['id']}", organiser)
        return shown if shown["status"] == "finished" and shown["results"] else None

    shown = _wait("the finals to finish", finished, [web, db, w2])
    finals_s = time.monotonic() - finals_s
    assert shown["games"] == {"finished": FINALS_GAMES}
    assert office.get("/api/phase", organiser)["phase"] == "published"
    public = office.get(f"/api/events/{finals[0]['id']}")  # anyone: published
    assert public["visible"] and len(public["results"]["rows"]) == len(BOTS)
    # Every scheduled finals game stored exactly once, with a result; the ones w1 held
    # when it died were played again on w2.
    played = dict(_query(office, store, f"SELECT id, worker {finals_where}"))
    assert sorted(played) == [f"finals1-{i:04d}" for i in range(FINALS_GAMES)]
    assert all(str(played[game]).startswith("w2:") for game in on_w1)
    # The published results count exactly those games.
    seats = _query(
        office,
        store,
        "SELECT s.version_id, s.score, s.rank, s.game_id FROM seats s JOIN games g "
        f"ON g.id = s.game_id WHERE g.event_id = {int(finals[0]['id'])}",
    )
    best = {game: min(rank for _, _, rank, g in seats if g == game) for game in played}
    for row in public["results"]["rows"]:
        mine = [(score, rank, game) for v, score, rank, game in seats if v == row["version_id"]]
        assert row["games"] == len(mine) == 2 * FINALS_GAMES // len(BOTS)
        assert row["points"] == sum(score for score, _, _ in mine)
        assert row["wins"] + row["ties"] == sum(rank == best[game] for _, rank, game in mine)
    _assert_each_game_stored_once(office, store)

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
        f"(ladder's first {LADDER_GAMES} games {ladder_s:.0f} s, the database host's death "
        f"{db_s:.0f} s ({db_outage}), the web host's {web_s:.0f} s, finals {finals_s:.0f} s "
        f"with w1 killed holding {sorted(on_w1)}); "
        f"ladder games per host {dict(sorted(ladder_hosts.items()))}, "
        f"finals games per host {dict(sorted(finals_hosts.items()))}"
    )


def _database_host_dies(
    hosts: Cluster,
    office: Office,
    store: str,
    holds: Path,
    ladder_games: Callable[[], list[str]],
) -> str:
    """The database host dies while ladder games are held in flight on the worker hosts:
    pages and the API answer 503 in bounded time, the held games finish and the ladder
    keeps their results; PostgreSQL comes back and the ladder stores them, once, and
    plays on by itself. What the pages took, for the report."""
    db, web = hosts.hosts["db"], hosts.hosts["web"]
    workers = [hosts.hosts["w1"], hosts.hosts["w2"]]
    _hold(holds, "ladder")
    in_flight = _wait(
        "a ladder game held on a worker host",
        lambda: set().union(*(_held(host) for host in workers)),
        [web, db, *workers],
    )
    status = _status(office, store)
    assert all(status[game] == "running" for game in in_flight), (in_flight, status)
    finished = {game for game, s in status.items() if s == "finished"}
    log_at_kill = len(_web_log(hosts, web))
    assert _kill_namespace(db.ns)  # a power cut: every process, then its network
    _ip("-n", db.ns, "link", "set", "eth0", "down")
    took = []
    for path in ("/api/leaderboard?outage", "/", "/api/health?outage"):  # not cached
        code, body, seconds = _answer(office, path)
        assert code == 503, (path, code, body)
        assert "the store is unavailable" in body and "Traceback" not in body, body
        took.append(f"{path} {seconds:.0f} s")
    _release(holds, "ladder")
    alive = [web, *workers]
    unsaved = [f"game {game}: result not stored yet" for game in in_flight]
    _wait(
        "the ladder to keep a result it cannot store",
        lambda: any(line in _web_log(hosts, web) for line in unsaved),
        alive,
    )
    _wait(
        "the ladder to log that it waits for the store",
        lambda: "ladder: cannot " in _web_log(hosts, web)[log_at_kill:],
        alive,
    )
    _ip("-n", db.ns, "link", "set", "eth0", "up")
    _ip("-n", db.ns, "route", "replace", "default", "dev", "eth0")
    _run_postgres(hosts, db)
    _wait(
        "the held games stored",
        lambda: all(_status(office, store).get(game) == "finished" for game in in_flight),
        [web, db, *workers],
    )
    now = len(finished) + len(in_flight)
    _wait("the ladder to play on", lambda: len(ladder_games()) > now, [web, db, *workers])
    assert finished <= {g for g, s in _status(office, store).items() if s == "finished"}
    _assert_each_game_stored_once(office, store)
    # The web server reconnects on its own (the ladder, in a process of its own, does
    # not share its connections): its pages answer again within a connect timeout or two.
    _wait(
        "the pages to answer again",
        lambda: _answer(office, "/api/leaderboard")[0] == 200,
        [web, db, *workers],
        limit_s=60,
    )
    assert office.get("/api/leaderboard")["rows"] is not None
    # An environment problem: logged in lines that say what, never a traceback.
    assert "Traceback" not in _web_log(hosts, web)[log_at_kill:]
    return "503 in " + ", ".join(took)


def _web_host_dies(hosts: Cluster, office: Office, store: str, holds: Path, toml: Path) -> None:
    """The web host dies (`arena serve` and its Ray node SIGKILLed) while ladder games
    are held in flight; `arena serve` started again plays them again, each stored once,
    and every game finished before is still there."""
    db, web = hosts.hosts["db"], hosts.hosts["web"]
    workers = [hosts.hosts["w1"], hosts.hosts["w2"]]
    _hold(holds, "ladder")
    in_flight = _wait(
        "a ladder game held on a worker host",
        lambda: set().union(*(_held(host) for host in workers)),
        [web, db, *workers],
    )
    status = _status(office, store)
    finished = {game for game, s in status.items() if s == "finished"}
    assert _kill_namespace(web.ns)
    assert web.proc is not None
    web.proc.wait(30)
    _release(holds, "ladder")
    _start_server(hosts, web, toml)
    _wait("arena serve to answer again", lambda: office.get("/api/health"), [web, db, *workers])
    _wait(
        "the games in flight at the kill played again",
        lambda: all(_status(office, store).get(game) == "finished" for game in in_flight),
        [web, db, *workers],
    )
    assert finished <= {g for g, s in _status(office, store).items() if s == "finished"}
    _assert_each_game_stored_once(office, store)
