"""The load of `arena bench serve` through ``wrk``: a C load generator, so that the clients
are not what bounds the figure.

The bench's own httpx clients cost about as much CPU per request as a cached answer does
on the server (entry 26 of docs/benchmarks.md: 355 requests/s, the 50 clients using most of
the 2 cores), so they cannot show a server answering a thousand requests a second. ``wrk``
keeps N connections busy with a Lua script (:data:`SCRIPT`) that walks the given paths in
turn and, when done, prints its latency distribution (1,000 quantiles) as JSON; the
percentiles are computed here, so that the runs of a load's two halves can be added
(each quantile standing for a thousandth of its run's requests).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import ArenaError

SCRIPT = r"""
%(pacing)s
local paths = {%(paths)s}
local cookie = %(cookie)s
local counter = 0
function init(args)
  counter = tonumber(wrk.thread:get("offset")) or 0
end
function setup(thread)
  setup_count = (setup_count or 0) + 1
  thread:set("offset", tostring(setup_count * 7))
end
function request()
  counter = counter + 1
  local headers = {}
  if cookie ~= "" then headers["Cookie"] = cookie end
  return wrk.format("GET", paths[(counter %% #paths) + 1], headers)
end
function done(summary, latency, requests)
  local parts = {}
  for i = 1, 1000 do
    parts[#parts + 1] = string.format("%%d", latency:percentile((i - 0.5) / 10))
  end
  local e = summary.errors
  io.write(string.format(
    '\nWRK-RESULT {"requests":%%d,"duration_us":%%d,"connect":%%d,"read":%%d,' ..
    '"write":%%d,"status":%%d,"timeout":%%d,"max":%%d,"quantiles":[%%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency.max, table.concat(parts, ",")))
end
"""
"""Walks ``paths`` (each thread from its own offset), sends ``cookie``; prints the
summary, the largest latency and the latency at each 0.1 % of the requests (microseconds)
on a ``WRK-RESULT`` line (wrk's Lua gives percentiles, not the samples)."""

PACING = r"""
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } arena_timespec;
int clock_gettime(int clk_id, arena_timespec *tp);
]]
local clock_reading = ffi.new("arena_timespec")
local interval_ms = %(interval_ms)r
local due = nil
function delay()
  ffi.C.clock_gettime(1, clock_reading)
  local now = tonumber(clock_reading.tv_sec) * 1000 + tonumber(clock_reading.tv_nsec) / 1e6
  if due == nil or due < now - %(backlog_ms)d then due = now end
  due = due + interval_ms
  if due <= now then return 0 end
  return math.floor(due - now)
end
"""
"""With a rate: wrk calls ``delay()`` before each request of a thread's connections and
waits that many milliseconds, so each thread sends on a schedule of its own (one request
every ``interval_ms``, CLOCK_MONOTONIC through LuaJIT's ffi) whatever the answers' speed:
a constant offered load, as visitors who each refresh now and then make it, instead of
connections that ask again the moment they are answered. A thread more than
``backlog_ms`` behind its schedule (every connection waiting on the server) starts a new
one rather than sending the missed requests in a burst; then fewer requests are sent than
offered, which the achieved rate shows."""

BACKLOG_MS = 1000


def available() -> bool:
    return shutil.which("wrk") is not None


@dataclass
class WrkRun:
    """What one or more ``wrk`` runs measured (added with :meth:`plus`)."""

    requests: int = 0
    seconds: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)
    histogram: dict[int, float] = field(default_factory=dict)
    """Latency in microseconds → requests (fractions: each quantile's share of a run)."""
    longest_us: int = 0

    def plus(self, other: WrkRun) -> WrkRun:
        return WrkRun(
            self.requests + other.requests,
            self.seconds + other.seconds,
            self.errors + other.errors,
            merged(self.histogram, other.histogram),
            max(self.longest_us, other.longest_us),
        )

    def percentile(self, q: float) -> float | None:
        """The smallest latency (ms) at or below which ``q`` of the requests were answered."""
        total = sum(self.histogram.values())
        if not total:
            return None
        wanted, seen = q * total, 0.0
        for value in sorted(self.histogram):
            seen += self.histogram[value]
            if seen >= wanted:
                return round(value / 1000, 2)
        return round(max(self.histogram) / 1000, 2)

    def block(self) -> dict[str, Any]:
        """The figures in the shape of :func:`arena.bench.serve.summarise`'s blocks."""
        return {
            "requests": self.requests,
            "errors": sum(self.errors.values()),
            "p50_ms": self.percentile(0.50),
            "p95_ms": self.percentile(0.95),
            "p99_ms": self.percentile(0.99),
            "max_ms": round(self.longest_us / 1000, 2) if self.histogram else None,
        }


def merged(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    out = dict(a)
    for value, share in b.items():
        out[value] = out.get(value, 0) + share
    return out


def lua_string(text: str) -> str:
    """``text`` as a Lua string literal (the paths and cookie are ours, but quote them)."""
    safe = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/?=&-_.;:% ")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03d}" for b in text.encode()) + '"'


def parse(stdout: str) -> WrkRun:
    line = next((x for x in stdout.splitlines() if x.startswith("WRK-RESULT ")), None)
    if line is None:
        raise ArenaError(f"wrk printed no result:\n{stdout[-2000:]}")
    data = json.loads(line.removeprefix("WRK-RESULT "))
    errors = Counter(
        {k: int(data[k]) for k in ("connect", "read", "write", "status", "timeout") if data[k]}
    )
    histogram: dict[int, float] = {}
    requests = int(data["requests"])
    for value in data["quantiles"]:
        histogram[int(value)] = histogram.get(int(value), 0) + requests / len(data["quantiles"])
    seconds = data["duration_us"] / 1e6
    return WrkRun(requests, seconds, errors, histogram, int(data["max"]))


def run_wrk(
    url: str,
    paths: list[str],
    connections: int,
    seconds: float,
    cookie: str = "",
    threads: int = 2,
    rate: float | None = None,
) -> WrkRun:
    """``wrk`` with ``connections`` connections over ``paths`` for ``seconds``: each asks
    again as soon as it is answered, or, with ``rate``, the requests are sent at ``rate``
    a second in all (:data:`PACING`)."""
    threads = min(threads, connections)
    pacing = ""
    if rate is not None:
        if rate <= 0:
            raise ArenaError(f"a paced load needs a positive rate, not {rate:g}")
        pacing = PACING % {"interval_ms": 1000.0 * threads / rate, "backlog_ms": BACKLOG_MS}
    script = SCRIPT % {
        "pacing": pacing,
        "paths": ", ".join(lua_string(p) for p in paths),
        "cookie": lua_string(cookie),
    }
    with tempfile.TemporaryDirectory(prefix="arena-wrk-") as tmp:
        lua = Path(tmp) / "walk.lua"
        lua.write_text(script)
        command = ["wrk", f"-t{threads}", f"-c{connections}"]
        command += [f"-d{max(1, round(seconds))}s", "--timeout", "30s", "-s", str(lua), url]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=seconds + 120, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ArenaError(f"wrk failed: {exc}") from None
    if done.returncode != 0:
        raise ArenaError(f"wrk exited with status {done.returncode}: {done.stderr.strip()}")
    return parse(done.stdout)
