"""How ``arena serve`` puts its answers on the wire: uvicorn's protocol with the connection
guards (:mod:`arena.server.guard`) answers a kept page as soon as it has read the request
(no task, no ASGI call), sends each answer in one socket write where plain uvicorn sends
two (the head, then the body), and its bytes are plain uvicorn's for the same request (the
``date`` header aside, and ``age`` for kept pages)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import h11
import pytest
from uvicorn import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from arena.competition.config import ServerSection
from arena.server.service import http_protocol
from tests.server.web_helpers import csrf_of, make_site

pytestmark = pytest.mark.usefixtures("pages_outlive_the_clock")  # kept pages stay kept

DATE = (b"date", b"Wed, 02 Dec 2026 03:00:00 GMT")

VARYING = {b"date", b"age"}
"""Headers that differ between two answers of the same page (clock time, seconds kept)."""


class RecordingTransport(asyncio.Transport):
    """A connection's server side that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if data:
            self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )


def _complete(raw: bytes) -> bool:
    """Whether ``raw`` holds a whole HTTP response."""
    if not raw:
        return False  # h11 reads no bytes as the end of the connection
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(raw)
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            return False
        if isinstance(event, h11.EndOfMessage):
            return True


def _parts(raw: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers but the varying ones, body) of one response."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(raw)
    head = client.next_event()
    assert isinstance(head, h11.Response)
    body = b""
    while isinstance(event := client.next_event(), h11.Data):
        body += event.data
    assert isinstance(event, h11.EndOfMessage)
    headers = [(k, v) for k, v in head.headers.raw_items() if k.lower() not in VARYING]
    return head.status_code, headers, body


def _serving(app: Any) -> type[asyncio.Protocol]:
    """The protocol ``arena serve`` runs ``app`` with."""
    return http_protocol(app, ServerSection())


class Answers(list[list[bytes]]):
    """The writes of each answer; ``at_once``: how many were written before the request's
    ``data_received`` returned (no task ran)."""

    at_once: list[int]


def _answers(app: Any, protocol_class: type[asyncio.Protocol], requests: list[bytes]) -> Answers:
    """The writes of each answer to ``requests``, sent one after another on one
    keep-alive connection of ``protocol_class``."""

    async def run() -> Answers:
        config = Config(app, http=protocol_class, log_level="warning", lifespan="off")
        config.load()
        state = ServerState()
        state.default_headers = [DATE, (b"server", b"uvicorn")]
        transport = RecordingTransport()
        protocol: Any = protocol_class(config=config, server_state=state, app_state={})  # type: ignore[call-arg]
        protocol.connection_made(transport)
        answers = Answers()
        answers.at_once = []
        for request in requests:
            transport.writes.clear()
            protocol.data_received(request)
            answers.at_once.append(len(transport.writes))
            for _ in range(1000):
                await asyncio.sleep(0.001)
                if _complete(b"".join(transport.writes)) and not state.tasks:
                    break
            await asyncio.sleep(0.01)  # a head held for the loop's next turn has gone out
            answers.append(list(transport.writes))
        protocol.connection_lost(None)
        return answers

    return asyncio.run(run())


def _get(path: str, cookie: str = "") -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: testserver"]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("path", ["/api/leaderboard", "/bots/alpha", "/api/health"])
def test_a_kept_page_leaves_in_one_write_with_uvicorns_bytes(tmp_path: Path, path: str) -> None:
    site = make_site(tmp_path)
    cookie = f"arena_csrf={csrf_of(site.client)}"
    requests = [_get(path, cookie)] * 3  # made, then kept, then kept
    guarded = _answers(site.client.app, _serving(site.client.app), requests)
    plain = _answers(site.client.app, H11Protocol, requests)

    assert [len(writes) for writes in guarded] == [1, 1, 1]
    assert guarded.at_once == [0, 1, 1]  # made by the app, then answered as it was read
    assert plain.at_once == [0, 0, 0]
    assert [len(writes) for writes in plain] == [2, 2, 2]  # what the guard saves
    for mine, theirs in zip(guarded, plain, strict=True):
        status, headers, body = _parts(b"".join(mine))
        assert status == 200
        assert (status, headers, body) == _parts(b"".join(theirs))
        assert (b"content-security-policy", b"") in [(k, b"") for k, _ in headers]


def test_an_error_and_a_redirect_keep_their_bytes(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    cookie = f"arena_csrf={csrf_of(site.client)}"  # else each answer sets a new one
    requests = [_get(path, cookie) for path in ("/bots/nobody", "/me", "/api/games/nope")]
    guarded = _answers(site.client.app, _serving(site.client.app), requests)
    plain = _answers(site.client.app, H11Protocol, requests)
    assert [len(writes) for writes in guarded] == [1, 1, 1]
    assert guarded.at_once == [0, 0, 0]  # nothing kept: the app answers each
    statuses = []
    for mine, theirs in zip(guarded, plain, strict=True):
        parts = _parts(b"".join(mine))
        assert parts == _parts(b"".join(theirs))
        statuses.append(parts[0])
    assert statuses[0] == 404 and statuses[1] in (303, 401) and statuses[2] == 404


def test_pipelined_requests_are_answered_in_order_kept_or_not(tmp_path: Path) -> None:
    """Four requests in one read: two kept pages, one the app must make (a signed-in
    viewer's), a kept one again; each answer in its request's order, the kept ones first
    at once and the last after the app's answer."""
    site = make_site(tmp_path)
    cookie = f"arena_csrf={csrf_of(site.client)}"
    warm = [_get("/api/health", cookie), _get("/api/leaderboard", cookie)]
    signed_in = (
        f"GET /api/health HTTP/1.1\r\nHost: testserver\r\n"
        f"Authorization: Bearer {site.tokens['alice']}\r\n\r\n"
    ).encode()
    pipelined = b"".join([*warm, signed_in, warm[1]])
    guarded = _answers(site.client.app, _serving(site.client.app), [*warm, pipelined])
    plain = _answers(site.client.app, H11Protocol, [*warm, pipelined])
    assert guarded.at_once[-1] == 2  # the two kept pages before the signed-in request
    mine, theirs = (_split(b"".join(answers[-1])) for answers in (guarded, plain))
    assert len(mine) == 4
    assert [_parts(raw) for raw in mine] == [_parts(raw) for raw in theirs]
    assert [b'"games_finished"' in _parts(raw)[2] for raw in mine] == [True] * 4


def _split(raw: bytes) -> list[bytes]:
    """The responses in ``raw``, one after another on one connection."""
    client = h11.Connection(h11.CLIENT)
    client.receive_data(raw)
    responses = []
    while True:
        client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
        client.send(h11.EndOfMessage())
        start = len(raw) - len(client.trailing_data[0])
        while not isinstance(client.next_event(), h11.EndOfMessage):
            pass
        end = len(raw) - len(client.trailing_data[0])
        responses.append(raw[start:end])
        if end == len(raw):
            return responses
        client.start_next_cycle()


def test_a_client_that_does_not_read_is_answered_by_uvicorn(tmp_path: Path) -> None:
    """With the connection's writes paused (the client's buffer full), a kept page waits
    for uvicorn's flow control instead of piling up in the server's memory."""
    site = make_site(tmp_path)
    cookie = f"arena_csrf={csrf_of(site.client)}"
    request = _get("/api/health", cookie)

    serving = _serving(site.client.app)

    class NotReading(serving):  # type: ignore[misc, valid-type]
        def data_received(self, data: bytes) -> None:
            self.flow.write_paused = True  # as pause_writing() leaves it
            super().data_received(data)
            self.flow.write_paused = False
            self.flow._is_writable_event.set()

    answers = _answers(site.client.app, NotReading, [request, request])
    assert answers.at_once == [0, 0]
    assert [len(writes) for writes in answers] == [1, 1]
