"""`arena bench serve` measures what it says (no timing thresholds: speed lives in the
benchmark's output, never in tests)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.bench.serve import Sample, TreeCpu, percentiles, routes, summarise, tree_cpu
from arena.errors import ArenaError


def test_percentiles_and_halves_from_known_samples() -> None:
    samples = [Sample("GET /", i / 100, (i + 1) / 1000, None) for i in range(100)]
    samples.append(Sample("GET /api/health", 0.99, 0.5, "HTTP 500"))
    result = summarise(samples, seconds=1.0)
    assert result["requests"] == 101 and result["errors"] == 1
    assert result["error_examples"] == ["GET /api/health: HTTP 500"]
    assert result["routes"]["GET /"]["p50_ms"] == pytest.approx(50.5)
    assert result["routes"]["GET /"]["p99_ms"] == pytest.approx(99.01)
    assert result["routes"]["GET /api/health"]["max_ms"] == 500
    assert result["first_half"]["requests"] == 50 and result["second_half"]["requests"] == 51
    assert result["requests_per_s"] == 101
    assert percentiles([]) == {"p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}


BURN = """
import os, sys, time
if sys.argv[1] == "child":  # start a grandchild that burns CPU, reap it, then wait
    os.waitpid(os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, __file__, "burn"]), 0)
    print("reaped", flush=True)
    sys.stdin.read()
else:
    while time.process_time() < 0.3:
        pass
"""


def test_tree_cpu_counts_the_descendants_and_what_they_reaped(tmp_path: Path) -> None:
    """A grandchild's CPU counts once its parent reaped it: the ladder's bots are
    grandchildren of ``arena serve`` (its game workers start them)."""
    script = tmp_path / "burn.py"
    script.write_text(BURN)
    child = subprocess.Popen(
        [sys.executable, str(script), "child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "reaped\n"
        mine = tree_cpu(os.getpid())
        assert mine.descendants >= 0.29  # the grandchild's 0.3 s (a tick is 10 ms)
        assert tree_cpu(child.pid).descendants >= 0.29
        assert tree_cpu(child.pid).own < 0.29  # the child itself only waited
    finally:
        child.communicate("", timeout=30)
    assert tree_cpu(2**22 + 7) == TreeCpu(0.0, 0.0)  # no such process


def test_the_route_mix_covers_pages_and_api_of_every_bot_and_game() -> None:
    mix = dict(routes(["a", "b"], ["g1"]))
    paths = [path for _, path in routes(["a", "b"], ["g1"])]
    assert {"/", "/games", "/bots/a", "/bots/b", "/games/g1"} <= set(paths)
    assert {"/api/health", "/api/leaderboard", "/api/bots/a", "/api/games/g1"} <= set(paths)
    assert "GET /bots/{name}" in mix


@pytest.mark.slow
def test_bench_serve_json_against_the_real_server(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from arena.cli import main

    status = main(["bench", "serve", "--clients", "4", "--seconds", "3", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 0, data["error_examples"]
    assert data["errors"] == 0 and data["requests"] > 10
    assert data["server_alive"] and data["server_exit_status"] == 0
    assert data["games_finished_before"] >= 1
    base = data["baseline"]
    assert base["clients"] == 1 and base["errors"] == 0 and base["requests"] >= 1
    assert base["requests_per_s"] > 0 and 0 < base["p50_ms"] <= base["p99_ms"]
    assert {"GET /", "GET /games/{id}", "GET /api/leaderboard"} <= set(data["routes"])
    assert 0 <= data["page_cache_hit_ratio"] <= 1 and data["server_cpu_ms_per_request"] > 0
    assert data["ladder_games_per_min_alone"] >= 0 and data["ladder_games_per_min_loaded"] >= 0
    for block in (data, *data["routes"].values()):
        assert 0 < block["p50_ms"] <= block["p95_ms"] <= block["p99_ms"] <= block["max_ms"]
    assert data["client"] == ("wrk" if shutil.which("wrk") else "httpx")
    made = data["bot_page_made"]
    assert made["errors"] == 0 and made["requests"] >= 1 and made["p50_ms"] > 0
    assert len(data["load_average"]) == 3 and data["games_stored"] >= 1
    # Where the cores went: a ladder that played games alone kept the machine busy (its
    # process, workers and bots); the page load runs in the server process itself.
    cores = data["cores"]
    assert cores["machine"] == os.cpu_count()
    assert cores["alone"]["busy"] >= cores["alone"]["ladder_games"] > 0
    assert cores["loaded"]["busy"] >= cores["loaded"]["server"] > 0
    assert cores["loaded"]["clients"] > 0
    if data["ladder_games_per_min_alone"] > 0:
        assert cores["ladder_cpu_ms_per_game_alone"] > 0
    # The paced load (default 1,000 requests/s), the ladder alone and the idle burners in
    # turn: all measured, the burners spinning what the load used.
    paced = data["paced"]
    assert paced["offered_per_s"] == 1000 and paced["errors"] == 0 and paced["requests"] > 10
    assert 0 < paced["p50_ms"] <= paced["p99_ms"] <= paced["max_ms"]
    assert paced["server_cores"] > 0 and paced["clients_cores"] >= 0
    assert paced["burner_cores"] >= 0  # idle-class: what they get depends on the machine
    assert paced["ladder_games_alone"] >= 0 and paced["ladder_games_beside_burners"] >= 0
    if paced["ladder_games_alone"]:
        assert (
            paced["ladder_ratio"] is not None and paced["ladder_ratio_beside_burners"] is not None
        )


def test_bench_serve_refuses_a_tree_without_arena_and_a_missing_wrk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One clear line and a non-zero exit, before any server is started."""
    command = [sys.executable, "-m", "arena.cli", "bench", "serve", "--seconds", "1"]
    done = subprocess.run(
        [*command, "--server-tree", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no arena/cli.py there" in done.stderr
    env = {**os.environ, "PATH": str(tmp_path)}  # no wrk on this PATH
    done = subprocess.run(
        [*command, "--client", "wrk"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "wrk is not on PATH" in done.stderr


def test_any_error_fails_the_benchmark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import arena.bench.serve as bench

    samples = [Sample("GET /", 0.1, 0.01, None), Sample("GET /", 0.6, 0.02, "HTTP 500")]
    result = {
        "clients": 2,
        "seconds": 1.0,
        "store": "sqlite",
        **summarise(samples, 1.0),
        "baseline": {"errors": 0},
        "server_alive": True,
    }
    monkeypatch.setattr(bench, "bench_serve", lambda *args, **kwargs: result)
    assert bench.run(2, 1.0, True, None) == 1
    assert json.loads(capsys.readouterr().out)["error_examples"] == ["GET /: HTTP 500"]
    result.update(summarise(samples[:1], 1.0))
    assert bench.run(2, 1.0, True, None) == 0
    result["paced"] = {"errors": 0}
    assert bench.run(2, 1.0, True, None) == 0
    result["paced"] = {"errors": 3}  # an error under the paced load fails it too
    assert bench.run(2, 1.0, True, None) == 1
    result["paced"] = None
    with pytest.raises(ArenaError, match="--rate"):
        bench.run(2, 1.0, True, None, rate=-1)
    result["server_alive"] = False
    assert bench.run(2, 1.0, True, None) == 1


def test_the_server_tree_is_the_code_that_serves(tmp_path: Path) -> None:
    """``--server-tree`` runs that tree's arena, even when the bench runs from inside
    another tree (``python -m`` puts the working directory first on the path)."""
    from arena.bench.serve import LiveServer
    from arena.errors import ArenaError

    tree = tmp_path / "other"
    (tree / "arena").mkdir(parents=True)
    (tree / "arena" / "__init__.py").write_text("")
    marker = tmp_path / "ran"
    (tree / "arena" / "cli.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__file__)\nraise SystemExit(3)\n"
    )
    server = LiveServer(tmp_path / "c.toml", 1, tmp_path, tmp_path / "serve.log", tree)
    with pytest.raises(ArenaError, match="status 3"):
        server.start(timeout=60)
    assert marker.read_text() == str(tree / "arena" / "cli.py")


def test_a_bot_page_that_never_comes_is_an_error_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    from arena.bench import serve

    with socket.socket() as listener:  # accepts, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        monkeypatch.setattr(serve, "BOT_PAGE_TIMEOUT_S", 0.2)
        made = serve.bot_page_made(f"http://127.0.0.1:{listener.getsockname()[1]}", "x", 0.1)
    assert made["requests"] == made["errors"] == 1


def test_a_server_that_ignores_sigterm_is_killed_and_said(tmp_path: Path) -> None:
    from arena.bench.serve import LiveServer

    server = LiveServer(tmp_path / "c.toml", 1, tmp_path, tmp_path / "serve.log")
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1"
    server.process = subprocess.Popen(
        [sys.executable, "-c", stubborn + ", flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert server.process.stdout is not None and server.process.stdout.readline()  # ignoring
    assert server.terminate(timeout=0.5) == -9


def test_idle_burners_spin_their_share_at_the_idle_class_and_die_with_the_bench() -> None:
    """The machine's bound beside the paced load: CPU spent only when nothing else wants
    it (so how much they get depends on the machine: not asserted), as much as the load
    used, split over one burner per core; none outlives the process that started it."""
    from arena.bench.serve import BURNER, idle_burners

    cores = os.cpu_count() or 1
    with idle_burners(0.5) as pids:
        assert len(pids) == cores
        for pid in pids:
            if hasattr(os, "SCHED_IDLE"):
                assert os.sched_getscheduler(pid) == os.SCHED_IDLE
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert float(argv[-2]) == pytest.approx(min(1.0, 0.5 / cores), abs=1e-4)
    for pid in pids:  # stopped and reaped at the end of the block
        assert not Path(f"/proc/{pid}").exists()
    with idle_burners(0.0) as none:
        assert none == []
    # A burner whose parent dies (the bench killed with kill -9) stops on its own.
    orphaner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; "
            f"p = subprocess.Popen([sys.executable, '-c', {BURNER!r}, '0.1'], "
            "stdout=subprocess.PIPE); p.stdout.readline(); print(p.pid, flush=True)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert orphaner.stdout is not None
    burner = int(orphaner.stdout.readline())
    orphaner.wait(timeout=30)
    deadline = time.monotonic() + 30
    try:
        while Path(f"/proc/{burner}").exists() and time.monotonic() < deadline:
            stat = Path(f"/proc/{burner}/stat").read_text(errors="replace")
            if stat.rsplit(")", 1)[-1].split()[0] == "Z":
                break  # exited, waiting to be reaped by whoever adopted it
            time.sleep(0.05)
        else:
            assert not Path(f"/proc/{burner}").exists(), "the orphaned burner kept spinning"
    finally:
        with contextlib.suppress(OSError):
            os.kill(burner, signal.SIGKILL)


def test_paced_httpx_clients_send_the_rate_they_are_given() -> None:
    """The fallback client paces too: 4 clients sharing 20 requests/s for 2 s."""
    import asyncio
    import http.server
    import threading

    from arena.bench.serve import _load

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        mix = [("GET /", "/"), ("GET /api/health", "/api/health")]
        samples = asyncio.run(_load(url, 4, 2.0, mix, rate=20))
    finally:
        server.shutdown()
        server.server_close()
    assert 20 <= len(samples) <= 50 and not any(s.error for s in samples)
    assert max(s.started for s in samples) < 2.0
