"""``GET /metrics``: the server's health in Prometheus' text format, for the organiser.

Each app has its own :class:`~prometheus_client.CollectorRegistry` (no global state, so
two apps in one process, or two tests, never share counts). The competition's numbers are
read from the store at scrape time by :class:`StoreCollector`, so they are right after a
restart and agree across processes sharing one PostgreSQL store; only the HTTP request
counter lives in the process. Rates (games per second) are Prometheus' job:
``rate(arena_games_finished_total[5m])``.

The endpoint needs the organiser's token (``Authorization: Bearer``, which Prometheus'
``authorization`` scrape setting sends): the counts are not secret, but a public scrape
costs queries anyone could repeat.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.server.auth import require_organiser
from arena.server.pagecache import REFRESH
from arena.store.competition import CompetitionStore, StoreError

BUILD_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Upper bounds (seconds) of the build-time histogram: a script bot to a slow compile."""


class StoreCollector(Collector):
    """The competition's counts, one grouped query per family, at each scrape."""

    def __init__(self, store: CompetitionStore) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("arena_store_up", "1 when the store answered this scrape.")
        try:
            snap = self.store.operations()
        except StoreError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield CounterMetricFamily(
            "arena_games_finished", "Games played to a result.", value=snap.games["finished"]
        )
        yield CounterMetricFamily(
            "arena_games_void", "Games the arena could not play (errors).", value=snap.games["void"]
        )
        yield GaugeMetricFamily(
            "arena_games_in_flight", "Games being played now.", value=snap.games["running"]
        )
        yield GaugeMetricFamily(
            "arena_games_scheduled", "Games waiting for a worker.", value=snap.games["scheduled"]
        )
        yield CounterMetricFamily(
            "arena_game_seconds", "Summed play time of finished games.", value=snap.game_seconds
        )
        yield GaugeMetricFamily(
            "arena_builds_queued", "Submissions waiting for a build.", value=snap.versions["queued"]
        )
        versions = GaugeMetricFamily("arena_versions", "Bot versions by status.", labels=["status"])
        for status, count in snap.versions.items():
            versions.add_metric([status], count)
        yield versions
        faults = CounterMetricFamily(
            "arena_faults", "Bot faults in games (timeouts, crashes, ...).", labels=["kind"]
        )
        for kind, count in sorted(snap.faults.items()):
            faults.add_metric([kind], count)
        yield faults
        yield _histogram(
            "arena_build_seconds", "Sandboxed build time of each built version.", snap.build_seconds
        )


def _histogram(name: str, documentation: str, values: tuple[float, ...]) -> Metric:
    cumulative = [(str(bound), sum(1 for v in values if v <= bound)) for bound in BUILD_BUCKETS]
    cumulative.append(("+Inf", len(values)))
    return HistogramMetricFamily(name, documentation, buckets=cumulative, sum_value=sum(values))


class RequestCounter:
    """ASGI middleware counting HTTP responses by method and status code (not by path: a
    path is client-chosen, and one label per path would let anyone grow the registry)."""

    def __init__(self, app: ASGIApp, requests: Counter) -> None:
        self.app = app
        self.requests = requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(REFRESH):
            await self.app(scope, receive, send)
            return
        method = scope["method"] if scope["method"] in _METHODS else "other"

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.requests.labels(method, str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counted)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def registry_for(store: CompetitionStore) -> tuple[CollectorRegistry, Counter, Counter]:
    """A fresh registry with the store's collector, the HTTP request counter and the page
    cache's counter in it."""
    registry = CollectorRegistry()
    registry.register(StoreCollector(store))
    requests = Counter(
        "arena_http_requests",
        "HTTP responses by method and status code.",
        ["method", "status"],
        registry=registry,
    )
    page_cache = Counter(
        "arena_page_cache",
        "Public pages answered from the page cache (hit), outdated while it is made anew "
        "(stale) or made for the request (miss).",
        ["result"],
        registry=registry,
    )
    return registry, requests, page_cache


def router(store: CompetitionStore, registry: CollectorRegistry) -> APIRouter:
    routes = APIRouter()

    @routes.get("/metrics", include_in_schema=False)
    def metrics(request: Request) -> Response:
        require_organiser(request, store)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return routes
