"""`arena serve` and `arena token` as a user runs them: competition.toml errors, tokens,
and the real server restarted by SIGTERM and by kill -9 without losing a finished game."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
httpx = pytest.importorskip("httpx", reason="the server extra is not installed")

from arena.competition.config import CompetitionConfigError, load_competition  # noqa: E402
from arena.play.build import build_bot  # noqa: E402
from arena.referee.manifest import load_bot  # noqa: E402
from arena.store.competition import CompetitionStore  # noqa: E402
from tests.server.procs import alive, children_with  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "arena.cli"]
PATIENCE = 240.0  # seconds; generous for a loaded CI machine


def _arena(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ARENA, *args], capture_output=True, text=True, timeout=120, cwd=cwd or REPO
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- competition.toml


def test_defaults_just_work(tmp_path: Path) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text("")
    config = load_competition(toml)
    assert config.data_dir == tmp_path / "cup-data"
    assert config.store_url == f"sqlite:///{tmp_path / 'cup-data' / 'competition.sqlite'}"
    assert config.server.host == "127.0.0.1"
    assert config.ladder.players == {2: 0.5, 4: 0.5}
    assert config.ladder.variants == {"coloured": 0.8, "gray": 0.2}


def test_environment_overrides_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text('[competition]\nstore = "sqlite"\n')
    monkeypatch.setenv("ARENA_SERVER_STORE", "postgresql+psycopg://u:p@db/cup")
    assert load_competition(toml).store_url == "postgresql+psycopg://u:p@db/cup"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[ladder]\nplayers = {5 = 1.0}\n", "ladder.players: Value error"),
        ("[ladder]\nvariants = {pink = 1.0}\n", "walls are 'coloured' or 'gray'"),
        ("[ladder]\nplayers = {2 = 0.0}\n", "not all zero"),
        ("[server]\nprot = 80\n", "server.prot: unknown setting; did you mean `port`?"),
        ("[play]\nfault_policy = 'sometimes'\n", "play.fault_policy"),
        ("[limits]\nupload_mb = 0\n", "limits.upload_mb"),
        ("[competition\n", "not valid TOML"),
    ],
)
def test_config_errors_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text(text)
    with pytest.raises(CompetitionConfigError) as info:
        load_competition(toml)
    assert message.replace("Value error", "") in str(info.value)
    assert str(toml) in str(info.value)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    done = _arena("serve", str(tmp_path / "nope.toml"))
    assert done.returncode == 2
    assert "no such file" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- arena token


def test_token_command(tmp_path: Path) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text("")
    first = _arena("token", str(toml), "alice")
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip().splitlines()[-1]
    again = _arena("token", str(toml), "alice")
    assert again.returncode == 2 and "exists" in again.stderr and "--renew" in again.stderr
    like = _arena("token", str(toml), "AL1CE")
    assert like.returncode == 2 and "looks like 'alice'" in like.stderr, like.stderr
    assert "--renew" not in like.stderr and "Traceback" not in like.stderr
    mixed = _arena("token", str(toml), "bоb")  # a Cyrillic о
    assert mixed.returncode != 0 and "mixes scripts" in mixed.stderr, mixed.stderr
    assert "Traceback" not in mixed.stderr
    store = CompetitionStore.open(load_competition(toml).store_url)
    try:
        alice = store.author_by_token(token)
        assert alice is not None and alice.name == "alice" and not alice.organiser
    finally:
        store.close()
    renewed = _arena("token", str(toml), "alice", "--renew")
    assert renewed.returncode == 0
    boss = _arena("token", str(toml), "boss", "--organiser")
    store = CompetitionStore.open(load_competition(toml).store_url)
    try:
        assert store.author_by_token(token) is None  # the old token stopped working
        new = store.author_by_token(renewed.stdout.strip().splitlines()[-1])
        assert new is not None and new.name == "alice"
        org = store.author_by_token(boss.stdout.strip().splitlines()[-1])
        assert org is not None and org.organiser
    finally:
        store.close()


# ---------------------------------------------------------------- the real server


class Server:
    """``arena serve`` in its own process group, output to a file."""

    def __init__(self, toml: Path, port: int, log: Path) -> None:
        self.toml, self.port, self.log = toml, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*ARENA, "serve", str(self.toml)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                start_new_session=True,
            )
        self.wait(lambda h: True, "healthy")

    def health(self) -> dict[str, object] | None:
        try:
            reply = httpx.get(f"http://127.0.0.1:{self.port}/api/health", timeout=10)
        except httpx.HTTPError:
            return None
        return reply.json() if reply.status_code == 200 else None

    def wait(self, ok: object, what: str) -> dict[str, object]:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                pytest.fail(f"arena serve exited ({self.proc.returncode}):\n{self.tail()}")
            health = self.health()
            if health is not None and ok(health):  # type: ignore[operator]
                return health
            time.sleep(0.2)
        pytest.fail(f"arena serve: not {what} after {PATIENCE:.0f} s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self, sig: int) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


def _seed_store(config_toml: Path, tmp_path: Path) -> None:
    """Three built bots on the ladder, as the build worker would leave them."""
    config = load_competition(config_toml)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    store = CompetitionStore.open(config.store_url)
    try:
        author, _ = store.create_author("alice")
        for name in ("python-greedy", "python-random", "js-random"):
            spec = load_bot(REPO / "bots" / name)
            built = build_bot(spec, cache=tmp_path / "cache")
            store.add_submission(author.id, name, "/dev/null", "0" * 64)
            version = store.claim_queued_version()
            assert version is not None
            manifest = built.spec.manifest.model_dump(mode="json")
            store.finish_build(
                version.id,
                True,
                "ok",
                "",
                str(built.spec.folder),
                built.version,
                {"manifest": manifest},
            )
    finally:
        store.close()


def _finished_ids(url: str) -> set[str]:
    store = CompetitionStore.open(url)
    try:
        return {g.id for g in store.games(status="finished", limit=500)}
    finally:
        store.close()


def _competition(tmp_path: Path, store: str) -> tuple[Path, int]:
    """A competition with three bots on the ladder on ``store`` ("sqlite": the default,
    a file in the data folder)."""
    tmp_path.chmod(0o755)  # the per-bot uid reads the built bots
    port = _free_port()
    toml = tmp_path / "cup.toml"
    toml.write_text(
        f"""[competition]
store = "{store}"
[server]
port = {port}
[ladder]
players = {{2 = 0.5, 3 = 0.5}}
games_in_flight = 2
[play]
fault_policy = "forfeit"
[play.time]
init_ms = 20000
move_ms = 3000
"""
    )
    _seed_store(toml, tmp_path)
    return toml, port


@pytest.fixture
def competition(tmp_path: Path, store_url: str) -> tuple[Path, int]:
    """The competition on each database."""
    return _competition(tmp_path, "sqlite" if store_url.startswith("sqlite") else store_url)


@pytest.fixture
def sqlite_competition(tmp_path: Path) -> tuple[Path, int]:
    """The competition on SQLite only (what is checked does not depend on the store)."""
    return _competition(tmp_path, "sqlite")


@pytest.mark.slow
def test_restart_by_sigterm_and_kill9_loses_no_finished_game(
    competition: tuple[Path, int], tmp_path: Path
) -> None:
    toml, port = competition
    config = load_competition(toml)
    server = Server(toml, port, tmp_path / "serve.log")
    server.start()
    token_file = config.organiser_token_file
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.read_text().strip() in server.tail()  # printed once, on first start

    server.wait(lambda h: h["games_finished"] >= 4, "4 games finished")
    assert server.stop(signal.SIGTERM) == 0
    assert "will be played again" in server.tail()
    before = _finished_ids(config.store_url)
    store = CompetitionStore.open(config.store_url)
    try:
        assert store.game_counts().get("running", 0) == 0  # re-queued on the way out
    finally:
        store.close()

    server.start()
    server.wait(lambda h: h["games_finished"] >= len(before) + 3, "3 more games")
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    after_kill = _finished_ids(config.store_url)
    assert before <= after_kill and len(after_kill) >= len(before) + 3

    store = CompetitionStore.open(config.store_url)
    try:
        cut_short = store.game_counts().get("running", 0)
    finally:
        store.close()
    server.start()  # resumes: the games running at the kill are played again
    if cut_short:
        assert f"resumed: {cut_short} running game(s) scheduled again" in server.tail()
    health = server.wait(lambda h: h["games_finished"] >= len(after_kill) + 3, "resumed")
    assert server.stop(signal.SIGINT) == 0
    final = _finished_ids(config.store_url)
    assert after_kill <= final and int(health["games_finished"]) <= len(final)  # type: ignore[call-overload]
    assert server.tail().count("Organiser token") == 1  # only on the first start
    store = CompetitionStore.open(config.store_url)
    try:
        board = store.leaderboard()
        assert sum(r.games for r in board) >= 2 * len(final)
        counts = store.game_counts()
        assert counts.get("running", 0) == 0 and counts.get("void", 0) == 0
        for game in store.games(status="finished", limit=500):
            assert store.record(game.id) is not None
    finally:
        store.close()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        toml = tmp_path / "cup.toml"
        toml.write_text(f"[server]\nport = {port}\n")
        done = _arena("serve", str(toml))
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr


def _ladder_processes(server_pid: int) -> list[int]:
    """The server's ladder process (its game workers are that process's children)."""
    return children_with(server_pid, b"arena.server.ladder_process")


@pytest.mark.slow
def test_the_ladder_process_is_started_again_and_dies_with_the_server(
    sqlite_competition: tuple[Path, int], tmp_path: Path
) -> None:
    """The ladder runs in a process of its own: killed, the server starts another, which
    plays on (the games it had running scheduled again); the server killed with -9, the
    ladder process and its game workers exit on their own."""
    import arena.server.ladder_process

    toml, port = sqlite_competition
    server = Server(toml, port, tmp_path / "serve.log")
    server.start()
    assert server.proc is not None
    server.wait(lambda h: h["games_finished"] >= 2, "2 games finished")
    first = _ladder_processes(server.proc.pid)
    assert len(first) == 1
    # [ladder] nice (default 10) over the server's own niceness: visitors first
    server_nice = os.getpriority(os.PRIO_PROCESS, server.proc.pid)
    assert os.getpriority(os.PRIO_PROCESS, first[0]) == min(19, server_nice + 10)
    os.kill(first[0], signal.SIGKILL)
    played = len(_finished_ids(load_competition(toml).store_url))
    server.wait(lambda h: h["games_finished"] >= played + 2, "2 games by a new ladder process")
    assert "the ladder process stopped (exit code -9)" in server.tail()
    second = _ladder_processes(server.proc.pid)
    assert len(second) == 1 and second != first
    workers = [
        int(s.parent.name)
        for s in Path("/proc").glob("[0-9]*/stat")
        if alive(int(s.parent.name))
        and s.read_text().rsplit(")", 1)[1].split()[1] == str(second[0])
    ]
    assert workers  # the ladder process's game workers
    assert {os.getpriority(os.PRIO_PROCESS, w) for w in workers} == {min(19, server_nice + 10)}
    server.proc.kill()  # kill -9 of the server alone, not its process group
    server.proc.wait(30)
    deadline = time.monotonic() + 30 + arena.server.ladder_process.STOP_WAIT_S
    while any(alive(pid) for pid in (*second, *workers)):
        assert time.monotonic() < deadline, "the ladder process outlived the server"
        time.sleep(0.2)
    store = CompetitionStore.open(load_competition(toml).store_url)
    try:
        assert store.game_counts().get("running", 0) == 0  # re-queued on its way out
    finally:
        store.close()


def _page_makers(server_pid: int) -> list[int]:
    """The server's page-making process (``arena.server.pagemaker``: a ``spawn`` worker)."""
    return children_with(server_pid, b"multiprocessing.spawn")


@pytest.mark.slow
def test_pages_come_from_the_page_process_and_from_the_server_while_it_is_down(
    sqlite_competition: tuple[Path, int], tmp_path: Path
) -> None:
    """``arena serve`` makes its public pages in a process of its own; killed, the server
    says so and answers the pages itself; the server killed with -9, it exits too."""
    toml, port = sqlite_competition
    toml.write_text(toml.read_text().replace("[server]\n", "[server]\npage_process = true\n"))
    server = Server(toml, port, tmp_path / "serve.log")
    server.start()
    assert server.proc is not None
    server.wait(lambda h: h["games_finished"] >= 1, "a game finished")
    url = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{url}/api/bots/python-greedy", timeout=30).status_code == 200
    makers = _page_makers(server.proc.pid)
    assert len(makers) == 1
    os.kill(makers[0], signal.SIGKILL)
    # a page the cache has not kept yet: made by the server, the failure said in one line
    answer = httpx.get(f"{url}/api/bots/python-random", timeout=30)
    assert answer.status_code == 200 and "python-random" in answer.text
    log = server.tail()
    assert "the page-making process failed (BrokenProcessPool)" in log
    assert "Traceback" not in log
    server.proc.kill()
    server.proc.wait(30)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in makers + _page_makers(server.proc.pid)):
        assert time.monotonic() < deadline, "the page process outlived the server"
        time.sleep(0.2)
