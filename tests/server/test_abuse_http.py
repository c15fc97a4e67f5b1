"""Hostile clients against the real ``arena serve`` on loopback: slow headers and bodies
(slowloris) are dropped within the configured time while a normal client keeps its
latency, and one address cannot hold more than its share of connections."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="the server extra is not installed")
pytestmark = pytest.mark.slow  # the real server, seconds of trickling (CI runs it)

REPO = Path(__file__).resolve().parents[2]
HEADER_TIMEOUT_S = 2.0
CONNECTION_CAP = 30
SLOW_CLIENTS = 25
PATIENCE_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    port: int
    log: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``arena serve`` with short deadlines, as a user starts it."""
    folder = tmp_path_factory.mktemp("abuse")
    port = _free_port()
    toml = folder / "cup.toml"
    toml.write_text(
        f"""[server]
port = {port}
header_timeout_s = {HEADER_TIMEOUT_S}
body_min_kib_s = 8
client_connections = {CONNECTION_CAP}
[ladder]
workers = 1
"""
    )
    log = folder / "serve.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "serve", str(toml)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"arena serve exited:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"arena serve not up:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield Served(port, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def _latencies(served: Served, count: int) -> list[float]:
    """Seconds per request of a normal client (a new connection each time)."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        reply = httpx.get(served.url("/api/health"), timeout=30)
        times.append(time.perf_counter() - started)
        assert reply.status_code == 200
    return times


def _p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98]


class Trickler:
    """Slow clients: each socket sends one more byte every ``every`` seconds, never
    finishing its headers (``headers``) or its declared body (``body``); records when
    the server closed each one (seconds after it opened)."""

    def __init__(self, served: Served, headers: int, body: int, every: float = 0.25) -> None:
        self.every = every
        self.socks: list[tuple[socket.socket, float, str]] = []
        self.closed_after: dict[int, float] = {}
        for n in range(headers + body):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            if n < headers:
                s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
                self.socks.append((s, time.monotonic(), "headers"))
            else:
                s.sendall(
                    b"POST /login HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Type: application/x-www-form-urlencoded\r\n"
                    b"Content-Length: 60000\r\n\r\ntoken="
                )
                self.socks.append((s, time.monotonic(), "body"))
            s.setblocking(False)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.closed_after) < len(self.socks):
            for n, (s, opened, kind) in enumerate(self.socks):
                if n in self.closed_after:
                    continue
                try:
                    readable, _, _ = select.select([s], [], [], 0)
                    if readable and not s.recv(4096):
                        raise ConnectionResetError
                    s.send(b"X-a: b\r\n" if kind == "headers" else b"a")
                except OSError:
                    self.closed_after[n] = time.monotonic() - opened
            self._stop.wait(self.every)

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while len(self.closed_after) < len(self.socks) and time.monotonic() < deadline:
            time.sleep(0.1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for s, _, _ in self.socks:
            s.close()


def test_slow_clients_are_dropped_and_others_keep_their_latency(served: Served) -> None:
    _latencies(served, 10)  # warm up
    baseline = _p99(_latencies(served, 100))
    slow = Trickler(served, headers=SLOW_CLIENTS // 2, body=SLOW_CLIENTS - SLOW_CLIENTS // 2)
    try:
        under_attack = _p99(_latencies(served, 100))
        slow.wait(HEADER_TIMEOUT_S * 10)
    finally:
        slow.close()
    kinds = [kind for _, _, kind in slow.socks]
    still_open = [kinds[n] for n in range(len(kinds)) if n not in slow.closed_after]
    assert not still_open, f"{len(still_open)} slow connections still open: {still_open}"
    # Closed once the deadline passed (a check runs a few times per deadline), not before.
    slowest = max(slow.closed_after.values())
    assert slowest <= HEADER_TIMEOUT_S + 3.0, slow.closed_after
    assert min(slow.closed_after.values()) >= HEADER_TIMEOUT_S * 0.9, slow.closed_after
    print(f"normal p99: {baseline * 1e3:.1f} ms alone, {under_attack * 1e3:.1f} ms under attack")
    assert under_attack <= 10 * baseline, (baseline, under_attack)
    assert "closed a slow connection from 127.0.0.1" in served.log.read_text()


def test_one_address_holds_at_most_its_share_of_connections(served: Served) -> None:
    held = [
        socket.create_connection(("127.0.0.1", served.port), timeout=10)
        for _ in range(CONNECTION_CAP)
    ]
    try:
        time.sleep(0.2)  # the server has accepted them all
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as extra:
            extra.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = extra.recv(4096)
        assert answer.startswith(b"HTTP/1.1 429"), answer
        # Another address is served meanwhile (all of 127/8 is loopback on Linux).
        with socket.socket() as other:
            other.bind(("127.0.0.2", 0))
            other.settimeout(10)
            other.connect(("127.0.0.1", served.port))
            other.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert other.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        for s in held:
            s.close()
    time.sleep(0.2)
    assert httpx.get(served.url("/api/health"), timeout=10).status_code == 200


def test_a_slow_but_steady_body_is_not_dropped(served: Served) -> None:
    """16 KB/s, twice the floor, for about twice the deadline: answered, not closed."""
    body = b"token=" + b"a" * 59994
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as s:
        s.sendall(
            b"POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        started = time.monotonic()
        for at in range(0, len(body), 4000):
            s.sendall(body[at : at + 4000])
            time.sleep(0.25)
        assert time.monotonic() - started > HEADER_TIMEOUT_S * 1.5
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 403"), answer  # the form's CSRF check, as usual
