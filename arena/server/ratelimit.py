"""Sliding-window rate limits: challenges and uploads per author per hour, registrations
and failed sign-ins per client address.

Every limit survives a restart. Challenges: the store's count of recent challenges is the
ledger, and the window kept here says *when* the next is allowed (``Retry-After``) and
closes the gap between two simultaneous requests. The others are events in the store
(:class:`StoredWindow`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from arena.textsafe import visible

if TYPE_CHECKING:
    from arena.store.competition import CompetitionStore

_log = logging.getLogger("arena.server")

WINDOW_SECONDS = 3600.0


class SlidingWindow:
    """At most ``limit`` events per key in any ``window`` seconds."""

    def __init__(
        self,
        limit: int,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._events: dict[Hashable, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, key: Hashable, already: int = 0) -> float | None:
        """Count one event for ``key`` and return None, or refuse it and return the seconds
        until one is allowed. ``already``: events in the window known elsewhere (the store),
        counted when larger than what this process saw."""
        now = self.clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and events[0] <= now - self.window:
                events.popleft()
            if max(len(events), already) >= self.limit:
                if len(events) >= self.limit:
                    wait = events[len(events) - self.limit] + self.window - now
                elif events:
                    wait = events[0] + self.window - now
                else:
                    wait = self.window / max(self.limit, 1)
                return float(max(1, math.ceil(wait)))
            events.append(now)
            return None

    def give_back(self, key: Hashable) -> None:
        """Forget the last event of ``key`` (the request it allowed did not happen)."""
        with self._lock:
            events = self._events.get(key)
            if events:
                events.pop()


class RateLimited(Exception):
    """Refused with HTTP 429: too many ``what``; ``wait`` seconds until the next is allowed."""

    def __init__(self, what: str, wait: float) -> None:
        super().__init__(f"too many {what}; retry in {int(wait)} s")
        self.what = what
        self.wait = int(wait)


class StoredWindow:
    """At most ``limit`` events per key in any ``window`` seconds, counted in the store
    (:meth:`CompetitionStore.take_event`), so a restart forgets nothing."""

    def __init__(
        self, store: CompetitionStore, kind: str, limit: int, window: float = WINDOW_SECONDS
    ) -> None:
        self.store = store
        self.kind = kind
        self.limit = limit
        self.window = window

    def take(self, key: Hashable) -> float | None:
        """Count one event for ``key`` and return None, or refuse it: the seconds to wait."""
        return self.store.take_event(self.kind, str(key), self.limit, self.window)

    def wait(self, key: Hashable) -> float | None:
        """Like :meth:`take` without counting: is ``key`` refused now?"""
        return self.store.take_event(self.kind, str(key), self.limit, self.window, record=False)

    def give_back(self, key: Hashable) -> None:
        self.store.give_back_event(self.kind, str(key))


class FailedSignins:
    """Bad tokens per client address (the sign-in form and the API's Bearer header):
    each is logged with the address; past ``limit`` an hour, every sign-in from that
    address is refused (429) until older failures leave the window, so guessing costs
    an hour per ``limit`` tries."""

    def __init__(self, store: CompetitionStore, limit: int) -> None:
        self.window = StoredWindow(store, "signin-failure", limit)

    def check(self, client: str) -> None:
        wait = self.window.wait(client)
        if wait is not None:
            raise RateLimited("failed sign-ins from this address", wait)

    def failed(self, client: str, how: str) -> None:
        _log.warning("failed sign-in (%s) from %s", how, visible(client))
        self.window.take(client)
