"""`arena submit`: packing, the upload, --wait, and one clear sentence per refusal.

The happy path runs against a tiny fake of the web contract (design-14: POST
/api/submissions, GET /api/submissions/{id}) served by uvicorn on a loopback port, so
the real multipart upload travels over real HTTP and the server side unpacks it with
``unpack_upload``; refusals use ``httpx.MockTransport``.
"""

from __future__ import annotations

import os
import shutil
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx", reason="the server extra is not installed")
starlette = pytest.importorskip("starlette", reason="the server extra is not installed")
uvicorn = pytest.importorskip("uvicorn", reason="the server extra is not installed")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from arena.cli import main  # noqa: E402
from arena.server.client import SubmitError, pack_folder, submit, wait_for_verdict  # noqa: E402
from arena.server.uploads import UploadRejected, unpack_upload  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TOKEN = "tok-" + "a" * 40


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    """A copy of bots/python-random with junk a real folder has (VCS, caches)."""
    folder = tmp_path / "my-bot"
    shutil.copytree(REPO / "bots" / "python-random", folder)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "bot.cpython-311.pyc").write_bytes(b"\0" * 100)
    (folder / ".DS_Store").write_bytes(b"junk")
    (folder / "lib").mkdir()
    (folder / "lib" / "util.py").write_text("X = 1\n")
    os.symlink("lib/util.py", folder / "util.py")
    return folder


# ---------------------------------------------------------------- packing


def test_pack_leaves_out_junk_and_unpacks_on_the_server(bot: Path, tmp_path: Path) -> None:
    packed = pack_folder(bot)
    assert packed.name == "python-random"
    assert set(packed.left_out) == {".git", "__pycache__", ".DS_Store"}
    archive = tmp_path / "upload"
    archive.write_bytes(packed.file.read())
    folder = unpack_upload(archive, tmp_path / "server-side")
    assert folder.name == "python-random"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "bot.py",
        "bot.toml",
        "lib",
        "util.py",
    ]
    assert os.readlink(folder / "util.py") == "lib/util.py"


def test_pack_is_reproducible(bot: Path) -> None:
    first = pack_folder(bot).file.read()
    os.utime(bot / "bot.py", (1, 1))
    assert pack_folder(bot).file.read() == first


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda f: os.symlink("/etc/passwd", f / "passwd"), "symlink that leaves the folder"),
        (lambda f: os.mkfifo(f / "pipe"), "not a regular file"),
        (lambda f: (f / "bot.toml").write_text('name = "x"\n'), "command"),
        (lambda f: (f / "bot.toml").unlink(), "no bot.toml"),
    ],
)
def test_pack_refuses_what_the_server_would(
    bot: Path, setup: Any, words: str, tmp_path: Path
) -> None:
    setup(bot)
    with pytest.raises(SubmitError, match=words):
        pack_folder(bot)


# ---------------------------------------------------------------- a fake server on loopback


class FakeServer:
    """The web contract's two submission routes, over real HTTP."""

    def __init__(self, tmp: Path, verdict_after: int = 2, status: str = "active") -> None:
        self.tmp = tmp
        self.polls = 0
        self.verdict_after = verdict_after
        self.final = status
        self.received: list[Path] = []
        self.app = Starlette(
            routes=[
                Route("/api/submissions", self.post, methods=["POST"]),
                Route("/api/submissions/{sid:int}", self.get, methods=["GET"]),
            ]
        )

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {TOKEN}"

    async def post(self, request: Request) -> JSONResponse:
        if not self.authorised(request):
            return JSONResponse({"error": "unknown token"}, status_code=401)
        form = await request.form()
        upload = form["archive"]
        assert not isinstance(upload, str)
        path = self.tmp / f"upload-{len(self.received)}"
        path.write_bytes(await upload.read())
        try:
            folder = unpack_upload(path, self.tmp / f"unpacked-{len(self.received)}")
        except UploadRejected as exc:
            return JSONResponse({"error": exc.reason}, status_code=400)
        self.received.append(folder)
        return JSONResponse(
            {"submission": 7, "bot": folder.name, "version": 1, "status": "queued"},
            status_code=202,
        )

    async def get(self, request: Request) -> JSONResponse:
        if not self.authorised(request):
            return JSONResponse({"error": "unknown token"}, status_code=401)
        self.polls += 1
        if self.polls <= self.verdict_after:
            return JSONResponse({"submission": 7, "status": "building", "verdict": None})
        verdict = (
            "accepted: passed check-bot" if self.final == "active" else "rejected: exit status 2"
        )
        return JSONResponse(
            {
                "submission": 7,
                "status": self.final,
                "verdict": verdict,
                "log": "build FAILED\nbot.c:1: error: \x1b[31mexpected ;",
            }
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class FakeApp:
    """Wraps any ASGI app for ``serve``."""

    app: Any


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[tuple[Any, threading.Thread]] = []

    def start(fake: FakeServer | FakeApp) -> str:
        port = free_port()
        config = uvicorn.Config(fake.app, host="127.0.0.1", port=port, log_level="error")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the fake server did not start"
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def test_submit_and_wait_end_to_end_over_http(
    bot: Path, tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeServer(tmp_path)
    url = serve(fake)
    status = main(["submit", str(bot), "--server", url, "--token", TOKEN, "--wait"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "submitted python-random version 1 as submission 7: queued" in out
    assert "status: building" in out and "status: active — accepted" in out
    assert "left out: .DS_Store, .git, __pycache__" in out
    (folder,) = fake.received
    assert (folder / "bot.py").read_bytes() == (REPO / "bots/python-random/bot.py").read_bytes()


def test_a_rejected_verdict_exits_1_and_shows_the_log_safely(
    bot: Path, tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    url = serve(FakeServer(tmp_path, verdict_after=0, status="rejected"))
    monkeypatch.setenv("ARENA_TOKEN", TOKEN)  # the token from the environment
    assert main(["submit", str(bot), "--server", url, "--wait"]) == 1
    out = capsys.readouterr().out
    assert "status: rejected — rejected: exit status 2" in out
    assert "error: \\x1b[31mexpected ;" in out and "\x1b" not in out


def test_without_wait_it_says_what_to_do_next(
    bot: Path, tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve(FakeServer(tmp_path))
    assert main(["submit", str(bot), "--server", url, "--token", TOKEN]) == 0
    assert f"Next: arena submit --status 7 --server {url} --wait" in capsys.readouterr().out


def test_connection_refused_is_one_clear_line(
    bot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert main(["submit", str(bot), "--server", url, "--token", TOKEN]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to" in err and "is `arena serve` running there" in err
    assert "Traceback" not in err


def test_no_token_is_a_clear_error(
    bot: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert main(["submit", str(bot), "--server", "http://127.0.0.1:9"]) == 2
    assert "no token" in capsys.readouterr().err


# ---------------------------------------------------------------- refusals (MockTransport)


def refusing(status: int, body: Any, headers: dict[str, str] | None = None) -> Any:
    def handler(request: Any) -> Any:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("status", "body", "headers", "words"),
    [
        (401, {"error": "unknown token"}, None, "does not accept this token (401"),
        (403, {"error": "organisers only"}, None, "not allowed (403): organisers only"),
        (409, {"error": "bot name 'x' is taken"}, None, "rename your bot"),
        (413, {"error": "more than 16 MiB"}, None, "larger than this server accepts (413"),
        (429, {"error": "slow down"}, {"Retry-After": "30"}, "retry after 30 s"),
        (400, {"error": "'../x': zip-slip"}, None, "refused the request (400): '../x'"),
        (500, "<html>Internal Server Error</html>", None, "the server failed (500)"),
        (404, {"detail": "Not Found"}, None, "Is this an Azul Arena server"),
    ],
)
def test_every_refusal_is_explained(
    bot: Path, status: int, body: Any, headers: dict[str, str] | None, words: str
) -> None:
    with pytest.raises(SubmitError) as info:
        submit(bot, "http://arena.test", TOKEN, transport=refusing(status, body, headers))
    assert words in str(info.value)


def test_a_413_names_the_archive_size(bot: Path) -> None:
    (bot / "data.bin").write_bytes(os.urandom(3 << 20))
    with pytest.raises(SubmitError, match=r"archive \(3\.0 MiB\) is larger"):
        submit(bot, "http://arena.test", TOKEN, transport=refusing(413, {"error": "too big"}))


def test_wait_backs_off_and_times_out(bot: Path) -> None:
    slept: list[float] = []
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, json={"submission": 3, "status": "queued"})
    )
    with pytest.raises(SubmitError, match="no verdict after 20 s"):
        wait_for_verdict(
            3,
            "http://arena.test",
            TOKEN,
            timeout_s=20,
            transport=transport,
            sleep=slept.append,
            clock=lambda: sum(slept),  # time passes only while it sleeps
        )
    assert slept[0] == 1.0 and max(slept) == 5.0 and slept == sorted(slept)
    assert 15 <= sum(slept) <= 20


def test_wait_honours_429_retry_after(bot: Path) -> None:
    answers = iter(
        [
            httpx.Response(429, json={"error": "slow"}, headers={"Retry-After": "7"}),
            httpx.Response(200, json={"status": "active", "verdict": "accepted"}),
        ]
    )
    slept: list[float] = []
    state = wait_for_verdict(
        1,
        "http://arena.test",
        TOKEN,
        transport=httpx.MockTransport(lambda request: next(answers)),
        sleep=slept.append,
    )
    assert state["status"] == "active" and slept == [7.0]


def test_a_non_http_server_url_is_refused(bot: Path) -> None:
    with pytest.raises(SubmitError, match="give a URL such as"):
        submit(bot, "127.0.0.1:8000", TOKEN)


def test_the_archive_is_a_tar_gz_under_the_bot_name(bot: Path, tmp_path: Path) -> None:
    packed = pack_folder(bot)
    path = tmp_path / "a.tgz"
    path.write_bytes(packed.file.read())
    with tarfile.open(path) as tf:
        names = tf.getnames()
        assert all(n == "python-random" or n.startswith("python-random/") for n in names)
        assert all(m.mtime == 0 and m.uid == 0 for m in tf.getmembers())


# ---------------------------------------------------------------- the real app and builder


def test_submit_against_the_real_app_and_build_worker(
    tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`arena submit --wait` through the real web app (create_app) and the real build
    worker: a good bot becomes active, a broken one is rejected with its build log."""
    from arena.competition.config import CompetitionConfig
    from arena.server.app import ServerContext, WebSettings, create_app
    from arena.server.service import BuildWorker
    from arena.store.competition import CompetitionStore, sqlite_url

    config = CompetitionConfig.model_validate(
        {
            "competition": {"data_dir": tmp_path / "data"},
            "play": {"time": {"init_ms": 5000, "move_ms": 400}},
        }
    )
    (tmp_path / "data" / "uploads").mkdir(parents=True)
    store = CompetitionStore.open(sqlite_url(tmp_path / "data" / "store.db"))
    _carol, token = store.create_author("carol")
    worker = BuildWorker(store, config, on_active=lambda: None)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    ctx = ServerContext(
        config=config, store=store, data_dir=tmp_path / "data", wake_builder=worker.wake
    )
    url = serve(FakeApp(create_app(ctx, WebSettings.of(config))))
    try:
        good = tmp_path / "good"
        shutil.copytree(REPO / "bots" / "python-random", good)
        assert main(["submit", str(good), "--server", url, "--token", token, "--wait"]) == 0
        out = capsys.readouterr().out
        verdict = "accepted: passed check-bot (4 games, 2 and 4 players, both walls"
        assert verdict in out, out

        broken = tmp_path / "broken"
        broken.mkdir()
        (broken / "bot.toml").write_text(
            'name = "broken"\ncommand = "./bot"\nbuild = "gcc -o bot bot.c"\n'
        )
        (broken / "bot.c").write_text("int main( { return 0; }\n")
        assert main(["submit", str(broken), "--server", url, "--token", token, "--wait"]) == 1
        out = capsys.readouterr().out
        assert "status: rejected — rejected: building broken failed" in out, out
        assert "bot.c" in out and "error" in out  # the compiler's message, from the log
        assert main(["submit", str(good), "--server", url, "--token", "forged", "--wait"]) == 2
        assert "does not accept this token (401" in capsys.readouterr().err
    finally:
        worker.stop()
        thread.join(timeout=30)
