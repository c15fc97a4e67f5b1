"""A PostgreSQL server that cannot be reached: bounded waits, and a competition store that
fails at once while it stays unreachable (the namespace cluster's database host death,
tests/server/test_netns_competition.py, is the end-to-end check)."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from arena.store import competition
from arena.store.competition import CompetitionStore
from arena.store.engine import StoreError, make_engine


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    yield port


def _connect_params(url: str) -> dict[str, Any]:
    """What the engine for ``url`` hands libpq on connecting (the attempt is stopped)."""
    engine = make_engine(url)
    seen: dict[str, Any] = {}

    @sa.event.listens_for(engine, "do_connect")
    def capture(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        seen.update(params)
        raise ConnectionAbortedError("stopped by the test")

    with pytest.raises(ConnectionAbortedError):
        engine.connect()
    engine.dispose()
    return seen


def test_a_postgresql_connection_gives_up_on_a_dead_host(closed_port: int) -> None:
    """A host that drops packets (powered off) never refuses: libpq is told to give up
    on connecting and on unacknowledged data after 10 s, unless the URL says otherwise."""
    params = _connect_params(f"postgresql+psycopg://arena@127.0.0.1:{closed_port}/db")
    assert params["connect_timeout"] == 10
    assert params["tcp_user_timeout"] == 10_000
    assert params["keepalives"] == 1
    own = _connect_params(
        f"postgresql+psycopg://arena@127.0.0.1:{closed_port}/db?connect_timeout=3"
    )
    assert own["connect_timeout"] == "3"


def test_a_store_whose_server_is_unreachable_fails_at_once_until_it_tries_again(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql+psycopg://arena@127.0.0.1:{closed_port}/db"
    store = CompetitionStore(make_engine(url, threads=True), url)
    attempts = []
    sa.event.listen(store.engine, "do_connect", lambda *_: attempts.append(1))
    try:
        with pytest.raises(StoreError, match="cannot read the store: connection failed"):
            store.games_finished()
        assert len(attempts) == 1
        # Within the retry window: every call, read or write, fails without connecting.
        with pytest.raises(StoreError, match="cannot read the store: connection failed"):
            store.games_finished()
        with pytest.raises(StoreError, match="cannot write the store: connection failed"):
            store.requeue_running()
        assert len(attempts) == 1
        # Past the window, the next call tries the server again.
        monkeypatch.setattr(competition, "UNREACHABLE_RETRY_S", 0.0)
        store._unreachable = None
        with pytest.raises(StoreError):
            store.games_finished()
        with pytest.raises(StoreError):
            store.games_finished()
        assert len(attempts) == 3
    finally:
        store.close()


def test_the_events_timer_logs_a_store_outage_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from arena.competition.events import EventsThread

    ticked = threading.Event()

    class Away:
        def tick(self) -> None:
            ticked.set()
            raise StoreError("cannot read the store: connection timeout expired")

    timer = EventsThread(Away(), every_s=0.01)  # type: ignore[arg-type]
    thread = threading.Thread(target=timer.run)
    with caplog.at_level(logging.ERROR, logger="arena.competition.events"):
        thread.start()
        assert ticked.wait(30)
        timer.stop()
        thread.join(30)
    logged = [r for r in caplog.records if r.name == "arena.competition.events"]
    assert logged and all(r.exc_info is None for r in logged)
    assert "connection timeout expired" in logged[0].getMessage()
