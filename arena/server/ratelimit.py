"""Sliding-window rate limits (challenges per author per hour, registrations per address).

The store's count of recent challenges is the ledger (it survives a restart); the window
kept here says *when* the next request will be allowed (the ``Retry-After`` header) and
closes the gap between two simultaneous requests.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

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
