"""The ladder of ``arena serve`` in a process of its own.

In the web server's process the ladder shared one interpreter lock with the web threads:
under a page load its thread, and the pool's task and result threads beside it, waited
behind the routes at every store call and pipe read, so the game workers idled waiting
for their next game (``arena bench serve``: 0.59-0.70 of the games/min alone;
docs/benchmarks.md). Here the ladder, its store connection and its pool of game workers
live in a child process, a fresh interpreter (``python -m arena.server.ladder_process``:
nothing of the web server's threads or database connections is inherited). The store
stays the ledger between the two; the rest is two pipes of plain bytes:

- the server writes a byte to the child's stdin for *look again* (a new version, a phase
  change, a scheduled event); end of file means the server is gone: the child stops;
- the child writes lines to its stdout: ``build`` (a version's build is missing: wake
  the build worker) and, as it stops, ``requeued N``.

SIGTERM stops the child (its running games are abandoned, their bots killed, and
scheduled again). If it dies on its own the server starts another after a pause.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from arena.errors import ArenaError

_log = logging.getLogger("arena.server")

RESTART_PAUSE_S = 5.0
"""How long the server waits before starting a ladder process that died on its own."""
STOP_WAIT_S = 60.0
"""How long a stopping ladder process gets to abandon its games and store what it holds."""
POLL_S = 0.5
"""How often the server's side looks at its stop flag while the child says nothing."""


class LadderProcess:
    """The server's side of the ladder process: what :class:`arena.server.service.Service`
    runs on its ladder thread (:meth:`run`) and wakes, as it would a
    :class:`arena.competition.ladder.Ladder`."""

    def __init__(self, toml: Path) -> None:
        self.toml = toml
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._requeued = 0
        self.wake_builder: Callable[[], None] = lambda: None
        """Called when the ladder found a version's build missing (set by the service)."""

    def wake(self) -> None:
        """Something changed (a new version, a phase, a scheduled game): look again now."""
        with self._lock:
            process = self._process
        if process is not None and process.stdin is not None:
            with contextlib.suppress(OSError, ValueError):  # full, stopping or gone
                os.write(process.stdin.fileno(), b"w")

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()

    def _start_child(self) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "arena.server.ladder_process",
                    str(self.toml),
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            assert self._process.stdin is not None
            # A wake-up never blocks the web thread that sends it: a full pipe has
            # enough of them already.
            os.set_blocking(self._process.stdin.fileno(), False)
            return self._process

    def _listen(self, process: subprocess.Popen[bytes]) -> None:
        """Until the child exits: act on what it says."""
        assert process.stdout is not None
        fd, pending = process.stdout.fileno(), b""
        while True:
            ready, _, _ = select.select([fd], [], [], POLL_S)
            if not ready:
                continue
            data = os.read(fd, 4096)
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line == b"build":
                    self.wake_builder()
                elif line.startswith(b"requeued "):
                    self._requeued = int(line.split()[1])

    def run(self) -> None:
        """Until :meth:`stop`: keep the ladder process running; pass its build-missing
        news on to the build worker."""
        while not self._stopping.is_set():
            try:
                process = self._start_child()
            except OSError as exc:  # no process to be had (a limit, memory)
                _log.error(
                    "cannot start the ladder process: %s; trying again in %g s",
                    exc.strerror or exc,
                    RESTART_PAUSE_S,
                )
                self._stopping.wait(RESTART_PAUSE_S)
                continue
            if process is None:
                return
            self._listen(process)
            code = process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
            if self._stopping.is_set():
                return
            _log.error(
                "the ladder process stopped (exit code %s); starting it again in %g s",
                code,
                RESTART_PAUSE_S,
            )
            self._stopping.wait(RESTART_PAUSE_S)

    def shutdown(self, abort: bool = True) -> int:
        """Stop the ladder process: its running games are abandoned (their bots killed)
        and scheduled again; how many were. ``abort`` is always so: the store plays any
        game cut short again."""
        self.stop()
        with self._lock:
            process = self._process
        if process is None:
            return 0
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            _log.error("the ladder process did not stop within %g s: killed", STOP_WAIT_S)
            process.kill()
            process.wait(5)
        return self._requeued


class Terminated:
    """SIGTERM, noted for the main loop (:func:`wait_for_stop`) to see.

    The handler only appends to a list. A handler runs on the main thread wherever that
    thread is, inside ``threading.Event.wait()`` too, holding the Event's lock: setting
    that Event from the handler waited for ever when a second SIGTERM came inside the
    first one's handler. Several come when the server is killed: the parent-death signal
    fires as each of the server's threads exits."""

    def __init__(self) -> None:
        self._signals: list[int] = []
        signal.signal(signal.SIGTERM, self._note)

    def _note(self, signum: int, _frame: object) -> None:
        self._signals.append(signum)

    def __bool__(self) -> bool:
        return bool(self._signals)


def wait_for_stop(
    terminated: Terminated, stopping: threading.Event, ladder: threading.Thread | None
) -> None:
    """Until SIGTERM, the server's end (``stopping``) or the ``ladder`` thread's."""
    while not terminated and not stopping.wait(POLL_S):
        if ladder is not None and not ladder.is_alive():  # Ladder.run survives its errors
            _log.error("ladder process: the ladder stopped on its own")
            return


def main(toml: str, server_pid: int) -> int:
    """The child: the ladder, its store connection and its game workers, until SIGTERM
    or the end of stdin (the server is gone)."""
    from arena.competition.config import load_competition
    from arena.competition.ladder import Ladder
    from arena.competition.phases import Phases
    from arena.play.worker import die_with_parent
    from arena.server.logs import configure_logging
    from arena.server.service import make_pool, open_store

    # The two pipes move to descriptors of our own: a library may use or close 0 and 1 (a
    # Ray driver does), and anything printed must not reach the server as a line.
    wake_fd, say_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    stopping = threading.Event()  # set by the wake thread when the server is gone
    terminated = Terminated()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    die_with_parent(signal.SIGTERM, server_pid)  # (the server may be pid 1 of a namespace)

    def say(line: str) -> None:
        with contextlib.suppress(OSError):  # the server is gone
            os.write(say_fd, line.encode() + b"\n")

    try:
        config = load_competition(Path(toml))
    except ArenaError as exc:  # changed on disk since the server read it
        _log.error("the ladder process cannot start: %s", exc)
        return 1
    configure_logging(config.server.log_format)
    if config.ladder.executor == "local":  # Ray plays elsewhere: its driver keeps pace
        os.nice(config.ladder.nice)  # games yield to the web server; the workers inherit it
    try:
        pool = make_pool(config)  # forks its workers before this process has threads
    except ArenaError as exc:
        _log.error("the ladder process cannot start its game workers: %s", exc)
        return 1
    try:
        store = open_store(config)
    except ArenaError as exc:  # the database is away: the server starts us again
        pool.close(abort=True)
        _log.error("the ladder process cannot open the store: %s", exc)
        return 1
    try:
        # Games a ladder process that died left running are scheduled again (one ladder
        # process at a time: the server starts the next once this one has exited).
        requeued = store.requeue_running()
        if requeued:
            _log.info("ladder process: %d running game(s) scheduled again", requeued)
        phases = Phases(store, config.phases)
        ladder = Ladder(
            store, config.ladder, config.play, config.data_dir, pool, phases.ladder_allowed
        )
        ladder.wake_builder = lambda: say("build")

        def listen() -> None:
            """Wake the ladder on each byte from the server; its end: stop (waits, then
            reads: robust to a descriptor made non-blocking)."""
            while True:
                try:
                    select.select([wake_fd], [], [])
                    data = os.read(wake_fd, 4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    _log.info("ladder process: the server is gone; stopping")
                    stopping.set()
                    return
                ladder.wake()

        threading.Thread(target=listen, name="ladder-wake", daemon=True).start()
        thread = threading.Thread(target=ladder.run, name="ladder", daemon=True)
        thread.start()
        wait_for_stop(terminated, stopping, thread)
        say(f"requeued {ladder.shutdown(abort=True)}")
        thread.join(STOP_WAIT_S)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
