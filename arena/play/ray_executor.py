"""A Ray executor: games go to a Ray cluster in batches, results come back one by one.

Why batches: one Azul game takes 10-200 ms, far too little to pay Ray's per-task
scheduling; a batch is sized (from measured game durations) to ``batch_seconds`` of
work. Each batch is a streaming generator task that yields a result per game, so a node
that dies mid-batch loses only its unfinished games: those are re-queued. The parent
stays the only store writer; the store inserts a game's result only if absent, so a
game delivered twice is stored once. At most ``2 x cluster CPUs`` batches are in flight
(``ray.wait`` back-pressure), so a huge tournament is never all submitted at once.

Bots travel as content-addressed bundles (:mod:`arena.play.bundles`); every node
checks its sandbox (``arena doctor``'s layer detection) before its first game and
refuses work when it is weaker than the tournament's ``sandbox`` setting: the parent
logs one line naming it and the missing layers, sends it no further batch (a Ray label
selector leaves its node id out), and plays the run on the other nodes; only when no
node can give the sandbox does the run stop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.play.bundles import build_on_node, pack
from arena.play.executors import POLL_S
from arena.play.job import GameJob, GameResult
from arena.play.worker import STDERR_TAIL_BYTES, WorkerState, run_job, tag_failure
from arena.referee.manifest import Built
from arena.sandbox import DEFAULT_LEVEL, Level
from arena.textsafe import visible

log = logging.getLogger(__name__)

MAX_BATCH = 200
MAX_ATTEMPTS = 3
"""A game whose batch was lost this many times (its node kept dying) stops the run."""


class RayUnavailable(ArenaError):
    """Ray is not installed, or the cluster cannot be reached."""


class NodeRefused(ArenaError):
    """A node's sandbox is weaker than the tournament asks for (``node_id``: its Ray
    node, so the parent can keep batches off it)."""

    def __init__(self, message: str, *, node_id: str = "") -> None:
        super().__init__(message)
        self.node_id = node_id


NODE_ID_LABEL = "ray.io/node-id"
"""The label Ray gives every node: its id (what the batches' label selector excludes)."""


def layers_off_line(node: str, layers: Sequence[tuple[str, bool, str]]) -> str:
    """The one line that says why ``node`` is refused: each layer off and why."""
    off = "; ".join(f"{name} ({why})" for name, on, why in layers if not on)
    return f"node {visible(node)}: sandbox layers off: {off}"


class ClusterLost(ArenaError):
    """The Ray cluster failed under the run; finished games are stored, so it resumes."""

    resumable = True


@dataclass(frozen=True)
class NodeJob:
    """A game as it travels: the job plus the bundle digest of each seat's bot."""

    job: GameJob
    digests: tuple[str, ...]


# ---------------------------------------------------------------- on the node

_NODE: dict[str, Any] = {}
"""Per Ray worker process: the node check result and the built bundles."""


def node_check(level: Level) -> None:
    """Refuse work (once per worker process) when this node cannot give ``level``."""
    if level is not Level.STRICT or _NODE.get("checked"):
        return
    from arena.sandbox import SandboxUnavailable, check_level, layers

    found = layers.detect_layers()
    try:
        check_level(level, found)
    except SandboxUnavailable:
        off = [(x.name, x.on, x.reason) for x in found]
        raise NodeRefused(layers_off_line(os.uname().nodename, off)) from None
    _NODE["checked"] = True


def node_doctor() -> tuple[str, list[tuple[str, bool, str]]]:
    """``arena doctor``'s layer detection on this node: (node name, [(layer, on, why)])."""
    from arena.sandbox import layers

    return os.uname().nodename, [(x.name, x.on, x.reason) for x in layers.detect_layers()]


def play_batch(items: list[NodeJob], bundles: dict[str, Any]) -> Any:
    """Play a batch on this node, yielding each game's result as soon as it is done.
    ``bundles``: the object reference of each bundle by digest (fetched once per node
    worker, the first time one of its games needs it)."""
    import ray

    first = items[0].job
    try:
        node_check(first.settings.sandbox)
    except NodeRefused as exc:
        exc.node_id = ray.get_runtime_context().get_node_id()
        raise
    built: dict[str, Built] = _NODE.setdefault("built", {})
    log_dir = Path(tempfile.gettempdir()) / "azul-arena-node-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    state = _NODE.get("state")
    if state is None:
        state = _NODE["state"] = WorkerState(worker_id=os.getpid() % 97)
    try:
        for item in items:
            bots = []
            for digest in item.digests:
                if digest not in built:
                    bundle = ray.get(bundles[digest])
                    built[digest] = build_on_node(bundle, item.job.settings)
                bots.append(built[digest])
            job = dataclasses.replace(item.job, bots=tuple(bots), log_dir=log_dir)
            try:
                result = run_job(state, job)
            except Exception as exc:
                tag_failure(exc, job)
                raise
            if not job.collect_stderr:
                result = dataclasses.replace(result, stderr=_new_stderr(state, job))
            yield result
    finally:
        state.close()  # no bot outlives its batch (Ray may kill idle workers)
        _NODE.pop("state", None)


def _new_stderr(state: WorkerState, job: GameJob) -> tuple[tuple[int, str], ...]:
    """What each seat's (persistent) bot wrote to its node log since the last game this
    worker process played: sent back with the result, so the logs reach the parent's
    log folder instead of staying on the node."""
    read: dict[Path, tuple[int, int]] = _NODE.setdefault("stderr_read", {})
    """Per log: (its inode, bytes already sent); a restarted bot rotates its log, so a
    new inode starts from 0."""
    found = []
    for seat, bot in enumerate(job.bots):
        path = state.stderr_log(job, bot)
        try:
            with path.open("rb") as log:
                inode = os.fstat(log.fileno()).st_ino
                end = log.seek(0, 2)
                seen_inode, sent = read.get(path, (inode, 0))
                start = min(sent, end) if seen_inode == inode else 0
                start = max(start, end - STDERR_TAIL_BYTES)
                log.seek(start)
                text = log.read(end - start)
        except OSError:
            continue
        read[path] = (inode, end)
        if text:
            found.append((seat, text.decode("utf-8", "replace")))
    return tuple(found)


# ---------------------------------------------------------------- in the parent


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("the ray executor needs Ray: pip install 'azul-arena[ray]'") from None
    return ray


@dataclass
class _Batch:
    items: dict[int, NodeJob]
    """Games not yet delivered, by game index."""
    gen: Any


class RayExecutor:
    """Runs games on a Ray cluster (see the module docstring)."""

    def __init__(
        self,
        bots: Sequence[Built] = (),
        *,
        address: str | None = None,
        level: Level = DEFAULT_LEVEL,
        batch_seconds: float = 3.0,
        num_cpus: int | None = None,
    ) -> None:
        ray = _ray()
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = address or "(a new local instance)"
                raise RayUnavailable(
                    f"cannot start or join the Ray cluster {where}: {exc}"
                ) from None
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._digest_of: dict[Path, str] = {}
        """Each bot's submitted folder → its bundle's digest (packed once)."""
        self._bundle_refs: dict[str, Any] = {}
        for bot in bots:
            self._digest(bot)
        self._play = ray.remote(num_cpus=1, max_retries=0)(play_batch)
        self._remote = self._play
        self.refused: dict[str, str] = {}
        """Ray node id -> why it was refused (it gets no batch)."""
        self.batch_seconds = batch_seconds
        self.batch_size = 2
        self._mean_s: float | None = None
        self._queue: deque[NodeJob] = deque()
        self._batches: list[_Batch] = []
        self._ready: deque[GameResult] = deque()
        self._attempts: dict[int, int] = {}
        self.tasks = 0
        """Batches sent (one Ray task each): far fewer than games once durations are known."""
        self.lost_batches = 0
        self.nodes_gone = 0
        """Nodes listed alive at the start that left before their sandbox check."""
        self.doctor = self._doctor_every_node(level)

    def _doctor_every_node(self, level: Level) -> dict[str, list[tuple[str, bool, str]]]:
        """Run the sandbox check on every node with CPUs now (nodes that join later check
        before their first game); with ``strict``, refuse the run if one falls short.

        A node can be listed alive for a few seconds after it died (until Ray's health
        check notices); its check then fails and it is left out: it will run no game."""
        from ray import exceptions as rx
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        nodes = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]
        task = ray.remote(num_cpus=0, max_retries=0)(node_doctor)
        refs = [
            task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote()
            for n in nodes
        ]
        found: dict[str, list[tuple[str, bool, str]]] = {}
        weak: dict[str, str] = {}
        for n, ref in zip(nodes, refs, strict=True):
            try:
                name, layers = ray.get(ref)
            except rx.RayError:
                self.nodes_gone += 1
                continue
            node = f"{name} ({n['NodeManagerAddress']}, node {n['NodeID'][:8]})"
            found[node] = layers
            if level is Level.STRICT and not all(on for _, on, _ in layers):
                weak[n["NodeID"]] = layers_off_line(node, layers)
                self.cpus = max(1, self.cpus - int(n["Resources"].get("CPU", 0)))
        if not found:
            self.close()
            raise RayUnavailable(
                "no node of the Ray cluster with CPUs answered its sandbox check "
                f"({len(nodes)} listed); check the cluster with `ray status`"
            )
        if len(weak) == len(found):
            self.close()
            raise NodeRefused(
                "sandbox = 'strict' but no Ray node can give every layer "
                "(run `arena doctor` on them):\n" + "\n".join(weak.values())
            )
        for node_id, why in weak.items():
            self._refuse(node_id, why)
        return found

    def _refuse(self, node_id: str, why: str) -> None:
        """Send ``node_id`` no further batch (logged once, with why)."""
        if node_id in self.refused:
            return
        self.refused[node_id] = why
        log.warning("Ray %s: refused, it plays no game (sandbox = 'strict')", why)
        self._remote = self._play.options(
            label_selector={NODE_ID_LABEL: "!in(" + ",".join(self.refused) + ")"}
        )

    def _refused_batch(self, batch: _Batch, exc: NodeRefused) -> None:
        """A node that joined after the start-up check refused a batch: its games go back
        to the queue (no attempt counted) for the nodes that can give the sandbox."""
        self._refuse(exc.node_id, str(exc))
        self._queue.extendleft(reversed(batch.items.values()))
        able = [
            n
            for n in self._ray.nodes()
            if n.get("Alive")
            and n["Resources"].get("CPU", 0) > 0
            and n["NodeID"] not in self.refused
        ]
        if not able:
            raise NodeRefused(
                "sandbox = 'strict' but no Ray node left can give every layer "
                "(run `arena doctor` on them):\n" + "\n".join(self.refused.values())
            )

    @property
    def workers(self) -> int:
        """Games the runner keeps submitted: about one batch per CPU, twice over."""
        return self.cpus * self.batch_size

    def _digest(self, bot: Built) -> str:
        """Pack ``bot``'s submitted folder the first time it plays; put it in the cluster's
        object store once (a node fetches it when one of its games first needs it)."""
        digest = self._digest_of.get(bot.source)
        if digest is None:
            bundle = pack(bot.spec.name, bot.source)
            digest = self._digest_of[bot.source] = bundle.digest
            if digest not in self._bundle_refs:
                self._bundle_refs[digest] = self._ray.put(bundle)
        return digest

    def submit(self, job: GameJob) -> None:
        digests = tuple(self._digest(bot) for bot in job.bots)
        self._queue.append(NodeJob(job, digests))
        # A CPU idles: share out what is queued now. A full batch made here could take a
        # whole event (a finals of batch-size games) onto one node while the others idle.
        self._dispatch(flush=len(self._batches) < self.cpus)

    def _dispatch(self, flush: bool) -> None:
        """Send the queue in batches of ``batch_size``; ``flush`` (a CPU would idle): what
        is queued now, shared out over every CPU, so that the last games of a run (a
        finals) play on all nodes at once, not as one node's batch while the others idle."""
        size = self.batch_size
        if flush:
            size = min(size, -(-len(self._queue) // self.cpus))
        while self._queue and len(self._batches) < 2 * self.cpus:
            if not flush and len(self._queue) < size:
                return
            items = [self._queue.popleft() for _ in range(min(size, len(self._queue)))]
            refs = {d: self._bundle_refs[d] for item in items for d in item.digests}
            gen = self._remote.remote(items, refs)
            self.tasks += 1
            self._batches.append(_Batch({i.job.game.game_index: i for i in items}, gen))

    def _learn(self, result: GameResult) -> None:
        d = max(result.duration_s, 0.001)
        self._mean_s = d if self._mean_s is None else 0.9 * self._mean_s + 0.1 * d
        self.batch_size = max(1, min(MAX_BATCH, round(self.batch_seconds / self._mean_s)))

    def _lost(self, batch: _Batch) -> None:
        """A node died (or its worker crashed): re-queue the games it had not delivered."""
        self.lost_batches += 1
        for index, item in batch.items.items():
            self._attempts[index] = self._attempts.get(index, 0) + 1
            if self._attempts[index] >= MAX_ATTEMPTS:
                raise ClusterLost(
                    f"game {index}: its Ray worker died {MAX_ATTEMPTS} times; stopping"
                )
            self._queue.appendleft(item)

    def _poll(self, batch: _Batch) -> None:
        ray = self._ray
        from ray import exceptions as rx

        try:
            result: GameResult = ray.get(next(batch.gen))
        except StopIteration:
            self._batches.remove(batch)
            if batch.items:  # ended without delivering every game: never drop one
                self._lost(batch)
            return
        except rx.RayTaskError as exc:
            self._batches.remove(batch)
            cause = getattr(exc, "cause", None)
            if isinstance(cause, NodeRefused) and cause.node_id:
                self._refused_batch(batch, cause)
                return
            if isinstance(cause, ArenaError):
                raise cause from None
            raise ClusterLost(
                f"a batch of games failed on a Ray node: {type(cause).__name__}: {cause}"
            ) from exc
        except rx.RayError:
            self._batches.remove(batch)
            self._lost(batch)
            return
        batch.items.pop(result.game_index, None)
        self._learn(result)
        self._ready.append(result)

    def poll(self, timeout: float) -> GameResult | None:
        ray = self._ray
        if not self._ready:
            # A short batch only when a CPU would idle: a caller that submits one game per
            # result (the server's ladder) must not turn every game into a task of its own.
            self._dispatch(flush=len(self._batches) < self.cpus)
            if not self._batches:
                return None
            try:
                ready, _ = ray.wait([b.gen for b in self._batches], num_returns=1, timeout=timeout)
            except ray.exceptions.RayError as exc:
                raise ClusterLost(f"lost the Ray cluster: {exc}") from exc
            for gen in ready:
                batch = next(b for b in self._batches if b.gen is gen)
                self._poll(batch)
        return self._ready.popleft() if self._ready else None

    def next_result(self) -> GameResult:
        while True:
            if not self._ready and not self._queue and not self._batches:
                raise RuntimeError("next_result() with no game submitted")
            result = self.poll(POLL_S)
            if result is not None:
                return result

    def close(self, abort: bool = False) -> None:
        ray = self._ray
        if abort:
            for batch in self._batches:
                with contextlib.suppress(Exception):
                    ray.cancel(batch.gen, force=True)
        self._batches.clear()
        if self._started:
            ray.shutdown()


def make_ray_executor(
    bots: Sequence[Built], level: Level, address: str | None, workers: int | None
) -> RayExecutor:
    """Connect to (or start) a cluster; ``bots`` are packed now (others as they first play)."""
    return RayExecutor(bots, address=address, level=level, num_cpus=workers)
