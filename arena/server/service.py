"""``arena serve competition.toml``: the web server with a build worker, the ladder in a
process of its own, and ``arena token``.

The web app (``create_app``) runs under uvicorn in the main thread; the build worker, the
phase timer and the events run on threads beside it and share one
:class:`CompetitionStore`. The ladder (:class:`arena.competition.ladder.Ladder`) and its
game workers run in a child process with a store connection of its own
(:mod:`arena.server.ladder_process`), so a page load does not slow its games. SIGTERM or
Ctrl-C stops the web server, abandons the running games (their bots are killed) and
schedules them again; a kill -9 loses nothing either: finished games are in the store,
and at the next start the games that were running are scheduled again and cut-short
builds queued again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from arena.competition.config import CompetitionConfig, ServerSection, load_competition
from arena.competition.events import Events, EventsThread
from arena.competition.ladder import BOTS_FOLDER, Ladder, make_executor
from arena.competition.phases import EventStarter, Phases, PhaseTimer
from arena.engine import Variant
from arena.errors import ArenaError
from arena.play.executors import Executor
from arena.server.ladder_process import LadderProcess
from arena.server.logs import configure_logging
from arena.server.pagemaker import PageMaker
from arena.store.competition import CompetitionStore, Conflict
from arena.store.competition_models import Version

_log = logging.getLogger("arena.server")

ORGANISER_NAME = "organiser"
BUILD_CACHE_ENV = "ARENA_BUILD_CACHE"


class ServeError(ArenaError):
    """The server cannot start (port taken, data folder unusable, ...)."""


# ---------------------------------------------------------------- builds


@dataclass(frozen=True)
class BuildVerdict:
    """What the build worker stores for a version."""

    ok: bool
    verdict: str
    log: str
    built_path: str | None
    content_hash: str | None
    meta: dict[str, Any]
    stored_bytes: int | None = None
    """Disk the version holds now (archive, unpacked source, build copy), when measured."""


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (a file: its size; missing: 0); links not followed."""
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size if path.exists() or path.is_symlink() else 0
    except OSError:
        return 0
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def build_submission(version: Version, archive: Path, config: CompetitionConfig) -> BuildVerdict:
    """Unpack, build and check one upload (``arena.server.uploads``/``submissions``):
    never raises for a bot's problem."""
    from arena.server.submissions import process_submission
    from arena.server.uploads import UploadRejected, unpack_upload

    if not archive.is_file():  # lost from data_dir/uploads: no retry can bring it back
        reason = "the server no longer has this version's uploaded archive; submit the bot again"
        return BuildVerdict(False, f"rejected: {reason}", reason, None, None, {})
    dest = config.data_dir / "submissions" / str(version.id)
    shutil.rmtree(dest, ignore_errors=True)  # a build cut short by a restart
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder = unpack_upload(archive, dest, config.limits)
    except UploadRejected as exc:
        return BuildVerdict(False, f"rejected: {exc}", str(exc), None, None, {})
    kept_bytes = tree_bytes(archive) + tree_bytes(dest)
    # One author's bot keeps one compiler cache across its versions (its own, no one else's).
    identity = f"server bot {version.bot_id}"
    ladder = config.ladder
    outcome = process_submission(
        folder,
        config.play,
        config.limits,
        identity=identity,
        player_counts=tuple(sorted(n for n, share in ladder.players.items() if share > 0)),
        walls=tuple(Variant(w) for w, share in ladder.variants.items() if share > 0),
    )
    meta = dict(outcome.meta)
    built_path = None
    if outcome.ok and outcome.built is not None:
        manifest = outcome.built.spec.manifest
        meta["manifest"] = manifest.model_dump(mode="json")
        meta.setdefault("language", manifest.language)
        meta["source"] = str(folder)
        built_path = str(keep_build(outcome.built.spec.folder, config.data_dir, version.id))
        kept_bytes += tree_bytes(Path(built_path))
    return BuildVerdict(
        bool(outcome.ok and built_path),
        outcome.verdict,
        outcome.log,
        built_path,
        outcome.content_hash,
        meta,
        kept_bytes,
    )


BUILD_BACKOFF_S = (5.0, 300.0)
"""After the arena (not the bot) failed a build: wait this long before the next build,
doubling up to the maximum, so a broken sandbox neither rejects authors nor spins."""


def keep_build(built: Path, data_dir: Path, version_id: int) -> Path:
    """A read-only copy of a version's built bot in ``data_dir/bots/<version id>``: what
    the ladder launches. The build cache it came from collects entries unused for a day
    (past its bounds), and a long-idle active version must never lose its build under
    the ladder; the ladder deletes it once the version can no longer play
    (:meth:`Ladder.collect_builds`). ArenaError (disk full): the build is
    retried, never held against the author."""
    from arena.sandbox.stage import make_read_only, remove_tree

    home = data_dir / BOTS_FOLDER
    kept = home / str(version_id)
    work = home / f"tmp-{version_id}-{os.getpid()}"
    try:
        home.mkdir(parents=True, exist_ok=True)
        home.chmod(0o755)  # the per-bot uids run from here
        remove_tree(work)
        shutil.copytree(built, work, symlinks=True)
        make_read_only(work)
        remove_tree(kept)  # a build cut short by a restart, done again
        work.rename(kept)
    except OSError as exc:
        remove_tree(work)
        raise ArenaError(f"cannot keep the build in {home}: {exc.strerror or exc}") from None
    return kept


Builder = Callable[[Version, Path, CompetitionConfig], BuildVerdict]


COLLECT_FILES_EVERY_S = 60.0
"""How often a build worker deletes the archives and sources of spent versions."""


class BuildWorker:
    """Takes queued versions and records their verdicts; ``[limits] build_workers``
    threads run :meth:`run` on one instance. The store hands out work fairly
    (:meth:`CompetitionStore.claim_queued_version`: authors take turns, one build per
    author at a time, a build-time budget per author per hour)."""

    def __init__(
        self,
        store: CompetitionStore,
        config: CompetitionConfig,
        on_active: Callable[[], None],
        build: Builder = build_submission,
    ) -> None:
        self.store = store
        self.config = config
        self.on_active = on_active
        self.build = build
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.backoff = 0.0
        """Seconds to wait before the next build after the arena failed one (0: none)."""

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def claim(self) -> Version | None:
        return self.store.claim_queued_version(budget_s=self.config.limits.build_budget_s)

    def collect_files(self) -> int:
        """Delete the uploaded archives and unpacked sources of versions that can never
        build or play again (rejected; replaced or disqualified, with no game left to
        play); how many versions. Only files this server made are deleted: archives in
        ``data_dir/uploads``, folders ``data_dir/submissions/<version id>``."""
        from arena.sandbox.stage import remove_tree

        data_dir = self.config.data_dir.resolve()
        uploads = data_dir / "uploads"
        done = 0
        for version_id, archive in self.store.spent_files():
            still_built = data_dir / BOTS_FOLDER / str(version_id)
            if not self.store.forget_files(version_id, tree_bytes(still_built)):
                continue
            if archive and Path(archive).resolve().parent == uploads:
                with contextlib.suppress(OSError):
                    Path(archive).unlink(missing_ok=True)
            remove_tree(data_dir / "submissions" / str(version_id))
            done += 1
        if done:
            _log.info("deleted the archives and sources of %d spent version(s)", done)
        return done

    def _collect_quietly(self) -> None:
        try:
            self.collect_files()
        except (ArenaError, OSError) as exc:
            _log.error("build worker: cannot delete spent files: %s", exc)

    def run(self) -> None:
        next_collect = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= next_collect:
                next_collect = time.monotonic() + COLLECT_FILES_EVERY_S
                self._collect_quietly()
            try:
                version = self.claim()
            except ArenaError as exc:
                _log.error("build worker: %s", exc)
                version = None
            if version is None:
                self._wake.wait(2.0)
                self._wake.clear()
                continue
            try:
                self.build_one(version)
            except ArenaError as exc:  # the store is away: queued again at the next start
                _log.error("build worker: %s", exc)
                self._stop.wait(2.0)
            if self.backoff:
                self._stop.wait(self.backoff)

    def build_one(self, version: Version) -> Version:
        archive = self.store.archive_of(version.id)
        assert archive is not None
        fields = {"bot": version.bot_name, "version": version.number, "submission": version.id}
        _log.info("building %s v%d", version.bot_name, version.number, extra=fields)
        try:
            verdict = self.build(version, Path(archive[0]), self.config)
        except ArenaError as exc:
            # The arena's side (no free sandbox uid, a layer missing under strict, the
            # cache or disk unusable): not the author's fault, so never their verdict.
            # The version goes back to the queue and is tried again after a back-off.
            self.backoff = min(BUILD_BACKOFF_S[1], max(BUILD_BACKOFF_S[0], self.backoff * 2))
            _log.error(
                "build of %s v%d: the arena could not build it (%s); queued again, "
                "next try in %g s",
                version.bot_name,
                version.number,
                exc,
                self.backoff,
                extra=fields,
            )
            return self.store.return_to_queue(version.id)
        except Exception as exc:  # a bug must not stop the worker: record it, go on
            _log.exception("build of submission %d failed", version.id, extra=fields)
            verdict = BuildVerdict(
                False, f"internal error: {type(exc).__name__}", "", None, None, {}
            )
        done = self.store.finish_build(
            version.id,
            verdict.ok,
            verdict.verdict,
            verdict.log,
            verdict.built_path,
            verdict.content_hash,
            verdict.meta,
            verdict.stored_bytes,
        )
        self.backoff = 0.0
        _log.info(
            "%s v%d: %s",
            version.bot_name,
            version.number,
            done.status,
            extra={**fields, "status": done.status},
        )
        if done.status == "active":
            self.on_active()
        self._collect_quietly()  # a rejected version, or the one this one replaced
        return done


# ---------------------------------------------------------------- the service


def make_pool(config: CompetitionConfig) -> Executor:
    """Where the ladder's games run: a local process pool, or a Ray cluster (batched)."""
    return make_executor(
        config.ladder.executor,
        config.ladder.worker_count,
        one_core=config.play.pins_core,
        ray_address=config.ladder.ray_address,
        level=config.play.sandbox,
    )


def open_store(config: CompetitionConfig) -> CompetitionStore:
    _make_data_dir(config.data_dir)
    store = CompetitionStore.open(config.store_url)
    for store_file in config.data_dir.glob("competition.sqlite*"):
        with contextlib.suppress(OSError):
            store_file.chmod(0o600)  # token hashes, logs, every record
    return store


PRIVATE_FOLDERS = ("uploads", "submissions")
"""Authors' code as uploaded and unpacked: for the server only (bots run from
``data_dir/bots``, never from here)."""


def _make_data_dir(folder: Path) -> None:
    """The data folder: traversable but not listable by the per-bot uids (they reach the
    built bots inside it), with the uploads, submissions and SQLite store private."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in PRIVATE_FOLDERS:
            (folder / name).mkdir(exist_ok=True)
            (folder / name).chmod(0o700)
        folder.chmod(0o711)
        for store_file in folder.glob("competition.sqlite*"):
            store_file.chmod(0o600)
    except PermissionError:
        pass  # not our folder to tighten: fine if we can write it (checked below)
    except OSError as exc:
        raise ServeError(f"cannot create the data folder {folder}: {exc.strerror}") from None
    if not os.access(folder, os.W_OK):
        raise ServeError(f"the data folder {folder} is not writable")


def clear_partial_uploads(data_dir: Path) -> int:
    """At start: remove what a killed server left in ``data_dir/uploads`` (bodies cut
    short, ``incoming-*.part``, and upload checks cut short, ``checking-*``); how many.
    Stored archives are never touched."""
    from arena.sandbox.stage import remove_tree

    uploads = data_dir / "uploads"
    left = [*uploads.glob("incoming-*.part"), *uploads.glob("checking-*")]
    for path in left:
        remove_tree(path)
    return len(left)


def ensure_organiser(store: CompetitionStore, config: CompetitionConfig, out: TextIO) -> str | None:
    """On first start: create the organiser, print the token once, keep it in
    ``data_dir/organiser.token`` (mode 0600). The token, or None if one existed."""
    if store.has_organiser():
        return None
    _, token = store.create_author(ORGANISER_NAME, organiser=True)
    path = config.organiser_token_file
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        os.chmod(path, 0o600)
    except OSError as exc:
        out.write(f"warning: could not write {path}: {exc.strerror}\n")
    out.write(
        f"Organiser token (shown once; also in {path}, mode 0600):\n{token}\n"
        "Issue author tokens with: arena token COMPETITION.toml NAME\n"
    )
    out.flush()
    return token


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise ServeError(
                f"cannot listen on {host}:{port}: {exc.strerror}",
                hint="another server may be running; set [server] port in competition.toml",
            ) from None


def _check_sandbox(config: CompetitionConfig, out: TextIO) -> None:
    """``sandbox = "strict"`` refuses to start without every layer; ``auto`` warns."""
    from arena.sandbox import SandboxUnavailable, check_level

    try:
        warning = check_level(config.play.sandbox)
    except SandboxUnavailable as exc:
        raise ServeError(str(exc)) from None
    if warning:
        out.write(f"{warning}\n")


def _default_app_factory(ctx: Any) -> Any:
    from arena.server.app import create_app

    return create_app(ctx)


def _context(service: Service, page_maker: PageMaker | None = None) -> Any:
    from arena.server.app import ServerContext

    return ServerContext(
        service.config,
        service.store,
        service.config.data_dir,
        service.builder.wake,
        service.ladder.wake,
        service.phases,
        events=service.events,
        page_maker=page_maker,
    )


@dataclass
class Service:
    """The parts of a running server (tests drive them directly)."""

    config: CompetitionConfig
    store: CompetitionStore
    ladder: Ladder | LadderProcess
    """In this process (tests), or in a process of its own (``arena serve``)."""
    builder: BuildWorker
    threads: list[threading.Thread]
    phases: Phases
    timer: PhaseTimer
    events: Events | None = None
    """Finals and scheduled rounds (:mod:`arena.competition.events`), ticked on a thread
    (None: a finals runner of the caller's is wired into ``phases``)."""
    _events_timer: EventsThread | None = None

    def start(self) -> None:
        recovered = self.store.requeue_running()
        rebuilt = self.store.requeue_builds()
        if recovered or rebuilt:
            _log.info(
                "resumed: %d running game(s) scheduled again, %d build(s) queued again",
                recovered,
                rebuilt,
            )
        self.threads = [
            threading.Thread(target=self.ladder.run, name="ladder", daemon=True),
            *(
                threading.Thread(target=self.builder.run, name=f"builder-{n}", daemon=True)
                for n in range(self.config.limits.build_workers)
            ),
        ]
        if self.phases.enabled:
            self.threads.append(threading.Thread(target=self.timer.run, name="phases", daemon=True))
        if self.events is not None:
            self._events_timer = EventsThread(self.events)
            self.threads.append(
                threading.Thread(target=self._events_timer.run, name="events", daemon=True)
            )
        for t in self.threads:
            t.start()

    def stop(self) -> int:
        """Stop the ladder and the builder; running games are scheduled again."""
        self.builder.stop()
        self.timer.stop()
        if self._events_timer is not None:
            self._events_timer.stop()
        requeued = self.ladder.shutdown(abort=True)
        self.threads[0].join(timeout=30)
        return requeued


def make_service(
    config: CompetitionConfig,
    store: CompetitionStore,
    games: Executor | LadderProcess,
    build: Builder = build_submission,
    events: EventStarter | None = None,
) -> Service:
    """The service's parts; ``games``: the executor of a ladder run on a thread here, or
    the ladder's own process (:mod:`arena.server.ladder_process`); ``events`` starts the
    finals and rounds (default: this arena's events, :mod:`arena.competition.events`,
    told of the phases)."""
    own = Events(store, config) if events is None else None
    phases = Phases(store, config.phases, own.runner() if own is not None else events)
    if own is not None:
        own.phases = phases
    ladder = (
        games
        if isinstance(games, LadderProcess)
        else Ladder(
            store, config.ladder, config.play, config.data_dir, games, phases.ladder_allowed
        )
    )
    phases.on_change = ladder.wake
    builder = BuildWorker(store, config, ladder.wake, build)
    ladder.wake_builder = builder.wake
    if own is not None:
        own.wake_ladder = ladder.wake
    return Service(config, store, ladder, builder, [], phases, PhaseTimer(phases), own)


def serve(
    toml: Path,
    out: TextIO = sys.stdout,
    app_factory: Callable[[Any], Any] = _default_app_factory,
) -> int:
    """Run the competition of ``toml`` until SIGTERM/SIGINT."""
    import uvicorn

    config = load_competition(toml)
    _make_data_dir(config.data_dir)
    os.environ.setdefault(BUILD_CACHE_ENV, str(config.data_dir / "build-cache"))
    _check_port(config.server.host, config.server.port)
    clear_partial_uploads(config.data_dir)
    _check_sandbox(config, out)
    configure_logging(config.server.log_format)
    store = open_store(config)
    # The ladder and its game workers run in a process of their own, started by the
    # service (Service.start, after the games a previous run left are requeued).
    ladder = LadderProcess(toml)
    service = make_service(config, store, ladder)
    # [server] page_process: the public pages made in a process of their own (its module)
    page_maker = PageMaker(toml, lambda: store.generation) if config.server.page_process else None
    try:
        ensure_organiser(store, config, out)
        if page_maker is not None:
            page_maker.start()
        app = app_factory(_context(service, page_maker))
        service.start()
        out.write(
            f"Serving {config.competition.name!r} on http://{config.server.host}:"
            f"{config.server.port}/ (store: {_shown_store(config)}); Ctrl-C stops\n"
        )
        out.flush()
        server = uvicorn.Server(uvicorn_config(app, config))
        tune_interpreter_for_serving()
        previous = signal.signal(signal.SIGTERM, _raise_stop)
        try:
            server.run()  # re-raises a caught SIGTERM/SIGINT once it has stopped serving
        except (_Stop, KeyboardInterrupt):
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        requeued = 0
        if page_maker is not None:
            page_maker.stop()
        if service.threads:
            requeued = service.stop()
        store.close()
        out.write(f"Stopped: {requeued} running game(s) will be played again at the next start\n")
        out.flush()
    return 0


SWITCH_INTERVAL_S = 0.0005
"""How long a thread may keep the GIL while another waits for it (CPython's default: 5 ms).
The event loop gives the GIL up at every socket call; with the default it then waits up
to 5 ms behind a route thread making a page or the ladder storing a game, several times a
request, and those waits are the tail of a cached answer's latency. 0.1 ms measured no
better than 0.5 ms (more forced switches, more CPU) (docs/benchmarks.md)."""


def tune_interpreter_for_serving() -> None:
    """The GIL handed back to the event loop sooner (:data:`SWITCH_INTERVAL_S`), and the
    objects of start-up (modules, templates, the app) moved out of the collector's sight
    (``gc.freeze``), so that a full collection under load walks only what requests made."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()


def uvicorn_config(app: Any, config: CompetitionConfig) -> Any:
    """How uvicorn serves ``app``: its h11 protocol with the slow-client deadlines and the
    per-address connection cap of ``[server]``, answering kept pages at once
    (:mod:`arena.server.guard`)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=config.server.host,
        port=config.server.port,
        http=http_protocol(app, config.server),
        log_level="info",
        access_log=False,
        # json: uvicorn's own lines go through the root handler, in the same format
        log_config=None if config.server.log_format == "json" else uvicorn.config.LOGGING_CONFIG,
        timeout_graceful_shutdown=10,
    )


def http_protocol(app: Any, settings: ServerSection) -> type[asyncio.Protocol]:
    """The protocol uvicorn serves ``app`` with: h11 with the guards of ``settings``, the
    kept pages of ``app``'s page cache answered at once (:mod:`arena.server.guard`)."""
    from arena.server.app import page_cache_of
    from arena.server.guard import guarded_protocol

    return guarded_protocol(settings, lambda: page_cache_of(app))


class _Stop(Exception):
    """SIGTERM, once the web server has stopped: shut the rest down cleanly."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _shown_store(config: CompetitionConfig) -> str:
    url = config.store_url
    if url.startswith("sqlite:"):
        return url.removeprefix("sqlite:///")
    from arena.store.engine import describe_url

    return describe_url(url)


# ---------------------------------------------------------------- arena token


def token_command(
    toml: Path,
    name: str,
    organiser: bool,
    renew: bool,
    out: TextIO,
    *,
    member: str | None = None,
    staff: bool = False,
) -> int:
    """``arena token``: issue a token to a new author (or a new one to an existing
    author, or to a member of a team, with ``--renew``); prints it once. ``staff`` makes
    a new author a staff team, or marks an existing one."""
    if member is not None and not renew:
        raise ServeError("--member needs --renew (new members: arena roster add-member or import)")
    config = load_competition(toml)
    store = open_store(config)
    try:
        if member is not None:
            token = store.new_member_token(name, member)
            what = "new token for"
            name = f"{member} (team {name})"
        elif renew:
            token = store.new_token(name)
            what = "new token for"
            if staff:
                store.set_staff(name, True)
        else:
            try:
                _, token = store.create_author(name, organiser=organiser, staff=staff)
            except Conflict as exc:
                if store.author_by_name(name.strip()) is None:  # a look-alike of another
                    raise ServeError(str(exc)) from None
                if staff:
                    store.set_staff(name.strip(), True)
                    out.write(f"{name} is now a staff team (its token is unchanged)\n")
                    return 0
                raise ServeError(
                    f"an author named {name!r} exists",
                    hint=f"arena token {toml} {name} --renew issues a new token "
                    "(the old one stops working)",
                ) from None
            what = "organiser token for" if organiser else "token for"
            if staff:
                what = "staff team token for"
    finally:
        store.close()
    out.write(f"{what} {name} (shown once; give it to them privately):\n{token}\n")
    return 0
