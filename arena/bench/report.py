"""`arena bench report`: how `arena report` grows with the number of finished games.

Fills a tournament store with real games (:mod:`arena.bench.realgames`: played by the
engine through the referee, stored through the store's own write methods with what a
tournament worker stores: seats, faults, the record, the replay frames; then the ratings a
tournament keeps), growing it from 1k to 100k games, and at each size times ``arena
report OUTDIR`` in a fresh process exactly as a user runs it (start-up, imports, load,
ratings with the default bootstrap, every table, the files and the site with its
replays), with that process's peak memory and the site's size on disk: a first report
(no site, no ratings cache: what ``arena tournament`` ends with) and the same command
again (pages and cache kept). On the sizes up to 5,000 the same games are also stored
without replay frames, as stores were before frames were stored, so the report draws
every replay with the engine (path "frames drawn"); the old ratings path (the
``trueskill`` library once per resample) runs on the baseline size, and ``--before SRC``
runs another arena source tree's report on every size: speed-ups are ratios measured on
this machine, in one run.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.bench.realgames import BASE_GAMES, PoolGame, copy_games, play_pool, stored_games
from arena.store.engine import is_url
from arena.store.tournament import (
    STORE_NAME,
    Store,
    StoreError,
    remember_location,
    store_location,
)

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
DEFAULT_BOTS = 16
DEFAULT_BASELINE_GAMES = 1_000
RATINGS_CACHE = ".ratings-cache"  # arena.report.build.RATINGS_CACHE (not imported: pandas)


@dataclass(frozen=True)
class ReportRun:
    """One timed ``arena report`` run."""

    games: int
    seconds: float
    peak_mb: float
    path: str
    """"first" (no site, no ratings cache), "again" (both kept), "frames drawn" (a first
    report of the same games stored without replay frames), "old" (ratings by the library
    per resample) or "before" (the --before source tree, a first report)."""
    cpu_seconds: float = 0.0  # user + system CPU of the report process (and its workers)
    ratings_seconds: float = 0.0  # of which rating (point ratings, history, bootstrap)
    site_mb: float = 0.0  # OUTDIR/report/ on disk after the run (files, replays included)

    def as_json(self) -> dict[str, object]:
        return {
            "games": self.games,
            "seconds": round(self.seconds, 3),
            "peak_mb": round(self.peak_mb, 1),
            "path": self.path,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "ratings_seconds": round(self.ratings_seconds, 3),
            "site_mb": round(self.site_mb, 1),
        }


POOL_GAMES = 2_000
"""Distinct real games played for the stores (each stored game is one of them, under its
own game id and bots); fewer when every size asked is smaller."""
COPY_STEP = 100_000
"""Games copied per transaction when a store grows past its base."""
DRAWN_UP_TO = 5_000
"""Sizes up to this are also timed with the games stored without replay frames."""


class GrowingStore:
    """A tournament folder whose store grows to each size asked (games appended, stored
    ratings advanced), from a pool of real games; ``frames=False`` stores them as a store
    from before replay frames were stored. The first ``base`` games go through the store
    API as a tournament worker stores them; later ones are copies of those rows made in
    SQL (:func:`arena.bench.realgames.copy_games`), ``COPY_STEP`` games a transaction.
    ``url``: the games go in that (empty) PostgreSQL database, named in the folder's
    ``store.url`` as ``arena tournament --store URL`` leaves it."""

    def __init__(
        self,
        outdir: Path,
        pool: Sequence[PoolGame],
        bots: int,
        *,
        frames: bool,
        base: int = BASE_GAMES,
        url: str | None = None,
    ):
        self.outdir, self.pool, self.bots, self.frames = outdir, pool, bots, frames
        self.base = base
        self.games = 0
        self.location: Path | str = outdir / STORE_NAME
        if url is not None:
            remember_location(outdir, url)
            self.location = url

    def grow(self, games: int) -> None:
        stored = min(games, self.base)
        if stored > self.games:
            self._store(self.games, stored)
        for start in range(max(self.games, self.base), games, COPY_STEP):
            copy_games(self.location, start, min(games, start + COPY_STEP), self.base)
            self._advance_ratings()
        self.games = max(self.games, games)

    def _store(self, start: int, stop: int) -> None:
        with Store(self.location) as store:
            for first in range(start, stop, 2_000):
                batch = list(
                    stored_games(
                        self.pool, first, min(stop, first + 2_000), self.bots, base=self.base
                    )
                )
                store.schedule_games([scheduled for scheduled, _ in batch])
                for _, result in batch:
                    store.add_result(result if self.frames else replace(result, replay_json=None))
        self._advance_ratings()

    def _advance_ratings(self) -> None:
        """The stored ratings, as a tournament leaves its store (rated by the compiled
        kernel here: bit for bit the ledger's own, a million games in seconds)."""
        from arena.tournament.ledger import RatingLedger

        with Store(self.location) as store:
            ledger = RatingLedger(store)
            ledger.state.compiled = True
            ledger.advance()


def time_report(
    outdir: Path,
    path: str,
    *,
    old: bool = False,
    again: bool = False,
    source: Path | None = None,
) -> ReportRun:
    """Wall time and peak memory of one ``arena report OUTDIR`` in a fresh process;
    ``again``: the site and ratings cache of the run before are kept, else both are
    removed first; ``source``: another arena source tree's report."""
    if not again:
        shutil.rmtree(outdir / RATINGS_CACHE, ignore_errors=True)
        shutil.rmtree(outdir / "report", ignore_errors=True)
    env = dict(os.environ)
    root = str(source.resolve() if source else Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena.bench.report_child",
            *(["--old"] if old else []),
            "report",
            str(outdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=root,  # ``-m`` puts the working folder first on the path: the tree measured
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"arena report {outdir} failed ({proc.returncode}): {err[-2000:]}")
    games = sum(1 for _ in _finished(outdir))
    cpu = usage.ru_utime + usage.ru_stime
    rating = sum(
        float(line.split("=", 1)[1])
        for line in err.splitlines()
        if line.startswith("ratings_seconds=")
    )
    site = sum(f.stat().st_size for f in (outdir / "report").rglob("*") if f.is_file())
    return ReportRun(games, seconds, usage.ru_maxrss / 1024, path, cpu, rating, site / 2**20)


def _finished(outdir: Path) -> Iterable[int]:
    with Store(store_location(outdir), readonly=True) as store:
        yield from store.finished_indices()


@contextlib.contextmanager
def scratch_database(server: str | None) -> Iterator[str | None]:
    """A new, empty database on the PostgreSQL server of ``server`` (a database URL whose
    user may create databases), dropped afterwards; ``None``: none (SQLite files)."""
    if server is None:
        yield None
        return
    import sqlalchemy as sa

    from arena.store.engine import DB_ERRORS, describe_url, make_engine

    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    name = f"arena_bench_report_{secrets.token_hex(4)}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except DB_ERRORS as exc:
        admin.dispose()
        raise StoreError(
            f"cannot create a scratch database on {describe_url(server)}: "
            f"{str(getattr(exc, 'orig', exc)).strip().splitlines()[0]}",
            hint="give the URL of a PostgreSQL user allowed to create databases (CREATEDB)",
        ) from None
    try:
        yield sa.engine.make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        _drop_scratch(admin, name)


DROP_ATTEMPTS = 30
"""Tries to drop a scratch database, a second apart: the server's autovacuum may still be
working in it (after a million inserted games), and only a superuser may end that."""


def _drop_scratch(admin: Any, name: str) -> None:
    """Drop a scratch database; if it cannot be dropped, say so in one line (the bench's
    figures are not lost for it)."""
    from arena.store.engine import DB_ERRORS

    error = ""
    for _ in range(DROP_ATTEMPTS):
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            break
        except DB_ERRORS as exc:
            error = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            time.sleep(1.0)
    else:
        print(
            f"warning: could not drop the scratch database {name} ({error}); "
            f'drop it with DROP DATABASE "{name}"',
            file=sys.stderr,
        )
    admin.dispose()


def bench_report(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    bots: int = DEFAULT_BOTS,
    baseline_games: int = DEFAULT_BASELINE_GAMES,
    on_step: Callable[[str], None] = lambda _: None,
    before: Path | None = None,
    store: str | None = None,
) -> list[ReportRun]:
    """At every size: a first report and the same again; up to ``DRAWN_UP_TO`` games,
    the same games without stored frames; the old ratings path on ``baseline_games``
    (0: skip); with ``before``, that source tree's first report on the same store;
    ``store``: the games in scratch databases on that PostgreSQL server, not SQLite."""
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="arena-bench-report-") as tmp,
        scratch_database(store) as stored_url,
        scratch_database(store) as drawn_url,
    ):
        pool_games = min(POOL_GAMES, max(sizes))  # a store never holds more distinct ones
        on_step(f"playing {pool_games:,} real games for the stores")
        pool = play_pool(pool_games)
        stored = GrowingStore(Path(tmp) / "stored", pool, bots, frames=True, url=stored_url)
        drawn = GrowingStore(Path(tmp) / "drawn", pool, bots, frames=False, url=drawn_url)
        for games in sorted(set(sizes) | ({baseline_games} if baseline_games else set())):
            on_step(f"storing {games:,} games")
            stored.grow(games)
            if games in sizes:
                on_step(f"arena report on {games:,} games (first)")
                runs.append(time_report(stored.outdir, "first"))
                on_step(f"arena report on {games:,} games (again)")
                runs.append(time_report(stored.outdir, "again", again=True))
                if before is not None:
                    on_step(f"arena report on {games:,} games, {before}")
                    runs.append(time_report(stored.outdir, "before", source=before))
                if games <= DRAWN_UP_TO:
                    on_step(f"storing {games:,} games without replay frames")
                    drawn.grow(games)
                    on_step(f"arena report on {games:,} games, replays drawn by the report")
                    runs.append(time_report(drawn.outdir, "frames drawn"))
            if games == baseline_games:
                if games not in sizes:
                    runs.append(time_report(stored.outdir, "first"))
                on_step(f"arena report on {games:,} games, old ratings path")
                runs.append(time_report(stored.outdir, "old", old=True))
    return runs


def to_json(runs: Sequence[ReportRun]) -> str:
    return json.dumps([r.as_json() for r in runs], indent=2)


TARGET_GAMES, TARGET_SECONDS = 5_000, 5.0
BIG_GAMES, BIG_SECONDS = 100_000, 60.0
MILLION_GAMES, MILLION_FIRST_SECONDS, MILLION_AGAIN_SECONDS = 1_000_000, 60.0, 20.0
MILLION_PEAK_MB = 1024.0
TARGETS = (
    (TARGET_GAMES, TARGET_SECONDS, TARGET_SECONDS),
    (BIG_GAMES, BIG_SECONDS, BIG_SECONDS),
    (MILLION_GAMES, MILLION_FIRST_SECONDS, MILLION_AGAIN_SECONDS),
)
"""(games, first report's limit, again's limit): issue 24 asks 60 s / 20 s at a million."""


def run_bench_report(
    sizes: Sequence[int],
    bots: int,
    baseline_games: int,
    as_json: bool,
    console: Console,
    before: Path | None = None,
    store: str | None = None,
) -> int:
    """The ``arena bench report`` command: runs, then a table (or ``--json``)."""
    from rich.table import Table

    if any(n < 1 for n in sizes) or bots < 2 or baseline_games < 0:
        console.print("[red]error:[/red] sizes must be positive, --bots at least 2")
        return 2
    if store is not None and not store.startswith("postgresql"):
        from rich.markup import escape

        from arena.store.engine import describe_url

        shown = escape(repr(describe_url(store) if is_url(store) else store))
        console.print(f"[red]error:[/red] --store {shown}: not a PostgreSQL URL")
        return 2
    if before is not None and not (before / "arena" / "bench" / "report_child.py").is_file():
        console.print(f"[red]error:[/red] --before {before}: not an arena source tree")
        return 2
    if as_json:
        runs = bench_report(
            sizes, bots=bots, baseline_games=baseline_games, before=before, store=store
        )
        print(to_json(runs))
        return 0
    with console.status("…") as status:
        runs = bench_report(
            sizes,
            bots=bots,
            baseline_games=baseline_games,
            on_step=status.update,
            before=before,
            store=store,
        )
    table = Table(
        title=f"arena report (the default bootstrap: 100 resamples, 50 at 1M games; the "
        f"site's replays), {bots} bots, real 2p and 4p games, "
        f"{'PostgreSQL' if store else 'SQLite'}; seconds = wall time of the "
        "whole command; CPU s = its user + system time (workers included)"
    )
    for col in ("games", "path", "seconds", "of which rating", "CPU s", "peak MB", "site MB"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(
            f"{r.games:,}",
            r.path,
            f"{r.seconds:.2f}",
            f"{r.ratings_seconds:.2f}",
            f"{r.cpu_seconds:.2f}",
            f"{r.peak_mb:.0f}",
            f"{r.site_mb:.0f}",
        )
    console.print(table)
    first = {r.games: r for r in runs if r.path == "first"}
    again = {r.games: r for r in runs if r.path == "again"}
    small, large = min(first), max(first)
    if large > small:
        for name, by_size in (("first report", first), ("again", again)):
            growth = by_size[large].seconds / by_size[small].seconds
            shape = "no worse than" if growth <= large / small else "WORSE than"
            console.print(
                f"growth {small:,} -> {large:,} games, {name}: {growth:.1f}x time for "
                f"{large / small:.0f}x games ({shape} linear)"
            )
    for games, first_limit, again_limit in TARGETS:
        for name, by_size, limit in (
            ("first report", first, first_limit),
            ("again", again, again_limit),
        ):
            if games in by_size:
                run = by_size[games]
                verdict = "meets" if run.seconds <= limit else "MISSES"
                memory = ""
                if games == MILLION_GAMES:
                    fits = "meets" if run.peak_mb <= MILLION_PEAK_MB else "MISSES"
                    memory = f", {fits} the {MILLION_PEAK_MB:.0f} MB target"
                console.print(
                    f"{games:,} games, {name}: {run.seconds:.2f} s, peak {run.peak_mb:.0f} MB "
                    f"({verdict} the {limit:.0f} s target{memory})"
                )
    for label, path in (("replays drawn by the report", "frames drawn"), ("before", "before")):
        for then in (r for r in runs if r.path == path):
            now = first[then.games]
            console.print(
                f"{label} -> now, first report on {then.games:,} games: {then.seconds:.2f} s "
                f"-> {now.seconds:.2f} s ({then.seconds / now.seconds:.2f}x), CPU "
                f"{then.cpu_seconds:.2f} -> {now.cpu_seconds:.2f} s, peak "
                f"{then.peak_mb:.0f} -> {now.peak_mb:.0f} MB"
            )
    for baseline in (r for r in runs if r.path == "old"):
        now = first[baseline.games]
        note = " (measured on fewer games: the old path takes minutes at 5,000)"
        console.print(
            f"old ratings path on {baseline.games:,} games: arena report "
            f"{baseline.seconds:.1f} s -> {now.seconds:.2f} s "
            f"({baseline.seconds / now.seconds:.0f}x faster); rating alone "
            f"{baseline.ratings_seconds:.1f} s -> {now.ratings_seconds:.2f} s "
            f"({baseline.ratings_seconds / max(now.ratings_seconds, 1e-9):.0f}x faster)"
            + (note if baseline.games < TARGET_GAMES else "")
        )
    return 0
