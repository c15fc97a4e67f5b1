"""`arena bench serve`'s wrk client: what wrk reports is read back faithfully (requests,
errors, percentiles of two runs added), against a real HTTP server when wrk is installed."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from arena.bench.wrkload import WrkRun, available, lua_string, parse, run_wrk


def _line(requests: int, quantiles: list[int], status: int = 0) -> str:
    data = {
        "requests": requests,
        "duration_us": 2_000_000,
        "connect": 0,
        "read": 0,
        "write": 0,
        "status": status,
        "timeout": 0,
        "max": max(quantiles),
        "quantiles": quantiles,
    }
    return "Running 2s test\nWRK-RESULT " + json.dumps(data) + "\n"


def test_two_runs_add_up_to_the_percentiles_of_their_union() -> None:
    fast = parse(_line(3000, [1000] * 1000))  # every request 1 ms
    slow = parse(_line(1000, [9000] * 990 + [50000] * 10, status=7))
    whole = fast.plus(slow)
    assert whole.requests == 4000 and whole.seconds == 4.0
    block = whole.block()
    assert block["errors"] == 7 and block["max_ms"] == 50.0
    assert block["p50_ms"] == 1.0  # three quarters of the requests took 1 ms
    assert block["p95_ms"] == 9.0 and block["p99_ms"] == 9.0
    assert WrkRun().block()["p50_ms"] is None


def test_paths_are_quoted_for_lua() -> None:
    assert lua_string("/bots/a b") == '"/bots/a b"'
    assert lua_string('/x"]..os.exit()') == '"/x\\034\\093..os.exit\\040\\041"'
    assert lua_string("/é") == '"/\\195\\169"'


def test_a_reply_without_a_result_is_a_clear_error() -> None:
    from arena.errors import ArenaError

    with pytest.raises(ArenaError, match="no result"):
        parse("wrk: connection refused\n")


@pytest.fixture
def tiny_server() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Cookie")))
            self.send_response(404 if self.path == "/missing" else 200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    seen: list[tuple[str, str | None]] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not available(), reason="wrk is not installed")
def test_wrk_walks_the_paths_and_counts_failures(
    tiny_server: tuple[str, list[tuple[str, str | None]]],
) -> None:
    url, seen = tiny_server
    run = run_wrk(url, ["/a", "/missing"], connections=2, seconds=1, cookie="c=1")
    block = run.block()
    assert run.requests > 10
    assert 0 < block["errors"] < run.requests  # the 404s, about half
    assert 0 < block["p50_ms"] <= block["p99_ms"] <= block["max_ms"]
    assert {path for path, _ in seen} == {"/a", "/missing"}
    assert {cookie for _, cookie in seen} == {"c=1"}


def test_a_rate_is_refused_unless_positive() -> None:
    from arena.errors import ArenaError

    for rate in (0.0, -5.0):
        with pytest.raises(ArenaError, match="positive rate"):
            run_wrk("http://127.0.0.1:9", ["/"], connections=2, seconds=1, rate=rate)


@pytest.mark.skipif(not available(), reason="wrk is not installed")
def test_a_paced_wrk_sends_the_rate_it_is_given_not_as_much_as_it_can(
    tiny_server: tuple[str, list[tuple[str, str | None]]],
) -> None:
    """The same connections asking as soon as answered send hundreds of requests a second to
    this server; paced at 20 a second for 2 s, about 40 (wrk's timers are in whole ms and
    its run stops on a whole second: a margin, no timing threshold on the machine)."""
    url, _ = tiny_server
    free = run_wrk(url, ["/a"], connections=4, seconds=1)
    paced = run_wrk(url, ["/a"], connections=4, seconds=2, rate=20)
    assert free.requests > 150
    assert 10 <= paced.requests <= 60
    assert paced.block()["errors"] == 0
