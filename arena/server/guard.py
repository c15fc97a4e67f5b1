"""Connection limits of ``arena serve``: slow clients are dropped, and no address holds
more than its share of connections.

Uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``) and the size of
incomplete headers (``h11_max_incomplete_event_size``), but it has no deadline for a
request's headers or body and no per-client cap: a few clients trickling a byte a
second hold connections open forever (slowloris). :func:`guarded_protocol` is uvicorn's
own h11 protocol with three rules added (settings in ``[server]`` of competition.toml):

- the request line and headers must all arrive within ``header_timeout_s`` of the
  connection opening, or of the previous response (else 408 and close);
- once that time has passed in the body, the body must have come at
  ``body_min_kib_s`` on average since the headers (else close); time the server
  itself stopped reading (back-pressure while the app is busy) is not held against
  the client;
- each client address holds at most ``client_connections`` connections (more are
  answered 429 and closed at once).

Each connection checks itself on a timer a few times per ``header_timeout_s``.

Its responses also leave in one socket write where uvicorn makes two (the head, then the
body): :class:`HeadWithBody`. And a request the page cache answers at once
(:meth:`arena.server.pagecache.PageCache.answer_at_once`: a kept public page) is answered
as soon as h11 has read it, with no task, no ASGI call and no framework: h11 still frames
the answer from the same status and headers uvicorn would send (its ``date`` and ``server``,
then the kept ones), so the bytes are the same; everything else goes to uvicorn unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import h11
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from arena.competition.config import ServerSection
from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.server.pagecache import Entry, PageCache

_log = logging.getLogger("arena.server")

KIB = 1024
MAX_KEPT_HEADS = 2048
"""Prebuilt heads kept (about one per kept page)."""


def _raw_response(status: int, phrase: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class HeadWithBody:
    """The transport as one response cycle sees it: the response's head (the cycle's first
    write) is held and sent with the first chunk of its body, so a page made by the app
    leaves in one socket call and one wake-up of the client instead of two (on a busy server
    each socket call also hands the GIL to another thread,
    :data:`arena.server.service.SWITCH_INTERVAL_S`).
    A head whose body has not come by the loop's next turn goes out alone (streamed
    answers); bytes and their order are unchanged."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None
        self._head_seen = False

    def write(self, data: bytes) -> None:
        if not self._head_seen:
            self._head_seen = True
            self._head = data
            self._loop.call_soon(self._send_head)
            return
        if self._head is not None:
            data, self._head = self._head + data, None
        self._transport.write(data)

    def _send_head(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            self._transport.write(head)

    def close(self) -> None:
        self._send_head()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)


class PutBackConnection(h11.Connection):
    """h11's server connection, with events handed back: the guard reads a request to see
    whether the page cache answers it, and puts back the ones it leaves to uvicorn."""

    def __init__(self, max_incomplete_event_size: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size)
        self.put_back: list[Any] = []

    def next_event(self) -> Any:
        if self.put_back:
            return self.put_back.pop(0)
        return super().next_event()


UNCACHEABLE_HEADERS = frozenset(
    {b"content-length", b"transfer-encoding", b"connection", b"upgrade", b"expect"}
)
"""Request headers that leave a request to uvicorn: a body, a connection to close or
upgrade, a 100-continue (uvicorn's own handling of each stays the only one)."""

Prebuilt = tuple["Entry", list[tuple[bytes, bytes]], bytes, h11.Response, h11.Data]
"""A kept answer's h11 head and body, valid for its entry, uvicorn's default headers and
its age."""
END = h11.EndOfMessage()
"""The end of every kept answer (h11's events are immutable)."""

TOO_MANY = _raw_response(429, "Too Many Requests", "too many connections from your address\n")
TIMED_OUT = _raw_response(408, "Request Timeout", "the request's headers came too slowly\n")


def guarded_protocol(
    settings: ServerSection, kept: Callable[[], PageCache | None] = lambda: None
) -> type[asyncio.Protocol]:
    """Uvicorn's h11 protocol with the limits of ``settings`` (``uvicorn.Config(http=...)``)
    that answers what the page cache ``kept()`` answers at once; each call has its own
    per-address counts (one per server)."""
    open_per_client: Counter[str] = Counter()
    found: list[PageCache] = []  # the server's one cache, once its app has made it
    heads: dict[int, Prebuilt] = {}
    """The h11 head of each kept answer (by its entry's id), made again when uvicorn's
    date or the answer's age has changed (once a second at most)."""
    header_timeout = settings.header_timeout_s
    min_rate = settings.body_min_kib_s * KIB
    cap = settings.client_connections
    tick = max(0.05, min(1.0, header_timeout / 4))

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            limit = self.config.h11_max_incomplete_event_size
            self._conn = PutBackConnection(
                DEFAULT_MAX_INCOMPLETE_EVENT_SIZE if limit is None else limit
            )
            self.conn = self._conn
            self._address = ""
            self._waiting_since = time.monotonic()
            """When it began waiting for a request's headers (None: not waiting)."""
            self._body_since: float | None = None
            self._body_bytes = 0
            self._paused_s = 0.0
            self._timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._address = self.client[0] if self.client else "?"
            open_per_client[self._address] += 1
            if cap and open_per_client[self._address] > cap:
                _log.info("refused a connection from %s: %d open", visible(self._address), cap)
                transport.write(TOO_MANY)
                transport.close()
                return
            self._waiting_since = time.monotonic()
            self._timer = self.loop.call_later(tick, self._check)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            open_per_client[self._address] -= 1
            if open_per_client[self._address] <= 0:
                del open_per_client[self._address]
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            in_body = self.conn.their_state is h11.SEND_BODY
            super().data_received(data)
            if in_body:
                self._body_bytes += len(data)
            elif self.conn.their_state is h11.SEND_BODY and self._body_since is None:
                self._body_since = time.monotonic()  # the headers just completed
                self._body_bytes = 0
                self._paused_s = 0.0

        def handle_events(self) -> None:
            if not found and (cache := kept()) is not None:
                found.append(cache)
            if found and self._answer_kept(found[0]):
                self._unset_keepalive_if_required()
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self.timeout_keep_alive_handler
                )
            super().handle_events()
            cycle = self.cycle  # the request just read, if any: its task has not run yet
            if cycle is not None and not isinstance(cycle.transport, HeadWithBody):
                cycle.transport = HeadWithBody(self.transport, self.loop)  # type: ignore[assignment]

        def _answer_kept(self, cache: PageCache) -> bool:
            """Answer the requests read so far that ``cache`` answers at once, in order,
            until one it does not (put back for uvicorn); whether any was answered."""
            conn = self._conn
            answered = False
            while self._between_requests():
                try:
                    event = conn.next_event()
                except h11.RemoteProtocolError:
                    return answered  # uvicorn reads the error again and answers 400
                if event is h11.NEED_DATA:
                    return answered
                entry = self._kept_entry(cache, event)
                if entry is None:
                    conn.put_back.append(event)
                    return answered
                end = conn.next_event()  # no body: the end of the request follows
                if not isinstance(end, h11.EndOfMessage):
                    conn.put_back += [event, end]  # not reached (no framing header)
                    return answered
                head, body = self._prebuilt(cache, entry)
                self.transport.write(conn.send(head) + conn.send(body) + conn.send(END))
                answered = True
                self.server_state.total_requests += 1
                self._waiting_since = time.monotonic()
                if conn.states != {h11.CLIENT: h11.DONE, h11.SERVER: h11.DONE}:
                    self.transport.close()  # not reached: keep-alive requests only
                    return answered
                conn.start_next_cycle()
            return answered

        def _between_requests(self) -> bool:
            """Whether the next request may be answered here: nothing under way on the
            connection, and the client reads what it was sent (else uvicorn waits)."""
            return (
                self._conn.our_state is h11.IDLE
                and self._conn.their_state is h11.IDLE
                and (self.cycle is None or self.cycle.response_complete)
                and not self.flow.write_paused
                and not self.transport.is_closing()
            )

        def _kept_entry(self, cache: PageCache, event: Any) -> Entry | None:
            """The kept answer to ``event`` if it is a plain keep-alive GET the cache
            answers at once."""
            if not isinstance(event, h11.Request) or event.http_version != b"1.1":
                return None
            if any(name in UNCACHEABLE_HEADERS for name, _ in event.headers):
                return None
            raw_path, _, query_string = event.target.partition(b"?")
            scope = {
                "type": "http",
                "method": event.method.decode("ascii"),
                "path": self.root_path + unquote(raw_path.decode("ascii")),
                "query_string": query_string,
                "headers": list(event.headers),
            }
            return cache.answer_at_once(scope)

        def _prebuilt(self, cache: PageCache, entry: Entry) -> tuple[h11.Response, h11.Data]:
            """The h11 head uvicorn would send for ``entry`` now (its default headers,
            then the kept ones) and its body, made once per entry, date and age."""
            defaults = self.server_state.default_headers
            headers = cache.headers_of(entry)
            age = headers[-1][1]
            known = heads.get(id(entry))
            if known and known[0] is entry and known[1] is defaults and known[2] == age:
                return known[3], known[4]
            if len(heads) > 4 * MAX_KEPT_HEADS:
                heads.clear()
            status = int(entry.start["status"])
            head = h11.Response(
                status_code=status, headers=defaults + headers, reason=STATUS_PHRASES[status]
            )
            body = h11.Data(data=entry.body)
            heads[id(entry)] = (entry, defaults, age, head, body)
            return head, body

        def on_response_complete(self) -> None:
            self._waiting_since = time.monotonic()
            self._body_since = None
            super().on_response_complete()

        def _check(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            now = time.monotonic()
            state = self.conn.their_state
            if state is h11.IDLE:
                if now - self._waiting_since > header_timeout:
                    self._drop("its headers did not arrive in %g s", header_timeout)
                    return
            elif state is h11.SEND_BODY and self._body_since is not None and min_rate > 0:
                if self.flow.read_paused:  # we stopped reading, not the client
                    self._paused_s += tick
                reading = now - self._body_since - self._paused_s
                if reading > header_timeout and self._body_bytes < min_rate * reading:
                    self._drop("its body came slower than %g KiB/s", min_rate / KIB)
                    return
            self._timer = self.loop.call_later(tick, self._check)

        def _drop(self, why: str, value: float) -> None:
            _log.info("closed a slow connection from %s: " + why, visible(self._address), value)
            if self.cycle is None or self.cycle.response_complete:
                self.transport.write(TIMED_OUT)
            self.transport.close()

    return GuardedH11Protocol
