"""What the play layer moves: a game job in, one game result out (plain picklable data).

Every caller that plays games (a tournament, an SPRT run, the server's ladder, a single
match) describes a game as a :class:`GameJob` and receives a :class:`GameResult`; the
store keeps results as they are, so there is one shape of a finished game.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.gz import gzip_small
from arena.referee.manifest import Built
from arena.referee.settings import PlaySettings


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the schedule: a deal and a seating. ``bots`` are names by seat;
    ``versions`` (same length, or empty for unversioned test data) their versions."""

    game_index: int
    game_id: str
    n_players: int
    variant: str
    seed_index: int
    deal_seed: int
    rotation: int
    bots: tuple[str, ...]
    versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class SeatRow:
    seat: int
    bot: str
    score: int
    round_score: int
    bonus_rows: int
    bonus_columns: int
    bonus_colours: int
    rank: int
    full_rows: int
    forfeit: bool
    fault: str | None
    decisions: int
    think_mean_ms: float
    think_p95_ms: float
    think_max_ms: float
    cpu_mean_ms: float | None = None
    """CPU time of the bot's process tree per decision (think times are wall time)."""
    cpu_max_ms: float | None = None
    warnings: int = 0
    """Decisions over the soft time limit, within the hard one (``TimeControl.warnings``).
    Kept in the record; a store keeps it where it has a column for it."""


@dataclass(frozen=True)
class FaultRow:
    seat: int
    bot: str
    kind: str
    round: int
    message: str
    forfeit: bool


@dataclass(frozen=True)
class Announcement:
    """What a bot said about itself in its ``ready`` message (bot-controlled, raw)."""

    name: str
    author: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class GameResult:
    """A finished game as a worker reports it (picklable, no live objects).

    Seats are stored against the scheduled line-up of ``game_index`` (``SeatRow.bot`` is
    the name the record shows)."""

    game_index: int
    duration_s: float
    end_reason: str
    rounds: int
    worker: str
    record_json: bytes
    seats: tuple[SeatRow, ...]
    faults: tuple[FaultRow, ...]
    announced: tuple[Announcement | None, ...] = ()
    """By seat: the bot's ``ready`` (None where it never handshook, or for a human)."""
    replay_json: bytes | None = None
    """The replay's frames (``arena.viewer.frames.replay_frames`` as JSON), drawn once when
    the game is played; None: a report draws them (older workers, unverifiable records)."""
    stderr: tuple[tuple[int, str], ...] = ()
    """(seat, the tail of its stderr in this game) where it wrote any, when the job asked
    (:attr:`GameJob.collect_stderr`)."""
    record_gz: bytes | None = None
    """``record_json`` compressed as the tournament store keeps it, when the job asked
    (:attr:`GameJob.compress`): done in the worker, off the store's one serial loop."""
    replay_gz: bytes | None = None
    """``replay_json`` compressed likewise."""

    def stored_record(self) -> bytes:
        """The record as the tournament store keeps it."""
        return self.record_gz if self.record_gz is not None else gzip_record(self.record_json)

    def stored_frames(self) -> bytes | None:
        """The replay's frames as the tournament store keeps them (None: none drawn)."""
        if self.replay_gz is not None:
            return self.replay_gz
        return gzip_frames(self.replay_json) if self.replay_json is not None else None


STORED_GZIP_LEVEL = 3
"""The tournament store's gzip level for records and frames. A game's two (~10 KB of JSON)
took 258 µs at the former levels (9 and 6: 1,869 bytes) and take 147 µs at 3 (2,191
bytes): a tenth of a millisecond of a game's ~10 ms of CPU, for 17 % more bytes; with a
window sized to each (:func:`arena.gz.gzip_small`), 100 against 228 µs on a slower machine,
the same bytes."""


def gzip_record(record_json: bytes) -> bytes:
    """A record as the tournament store keeps it (gzip, no timestamp)."""
    return gzip_small(record_json, STORED_GZIP_LEVEL)


def gzip_frames(replay_json: bytes) -> bytes:
    """Replay frames as the tournament store keeps them (gzip, no timestamp)."""
    return gzip_small(replay_json, STORED_GZIP_LEVEL)


@dataclass(frozen=True)
class GameJob:
    """One game to play: plain picklable data (what any executor moves)."""

    game: ScheduledGame
    bots: tuple[Built, ...]
    """By seat: the built bots to launch (see :mod:`arena.play.bots`)."""
    settings: PlaySettings
    persistent: bool
    """Keep each bot's process for its next game in this worker (a tournament); False:
    a fresh process per game."""
    log_dir: Path
    replay_frames: bool = True
    """Draw the replay's frames for the store (a tournament's report uses them; the
    server and SPRT, which keep no frames, save ~5 ms a game)."""
    compress: bool = False
    """Hand back the record and frames compressed for the tournament store too
    (:attr:`GameResult.record_gz`): a tournament's parent stores every game in one loop,
    which bounds the speed-up of more workers; the worker compresses in parallel."""
    collect_stderr: bool = False
    """Hand back each seat's stderr of this game in :attr:`GameResult.stderr` (fresh bot
    processes, logs of this game only, deleted afterwards: the server keeps them in its
    store, so they reach it from any Ray node)."""


SHARED_PARTS_KEPT = 4096
"""Pickled (parent) or unpickled (worker) shared parts of jobs kept; when full, a cache
starts over."""


class JobPickler:
    """Pickles jobs for a pool of worker processes, as :class:`JobUnpickler` reads them.

    A tournament's jobs differ in their game and share the rest: the settings, the log
    folder, each bot. Those parts are pickled once per object (kept by identity) and each
    job is a small pickle of its game and the parts' bytes, so a worker unpickles a part
    once too (kept by its bytes). A whole job took ~55 µs to pickle and ~80 µs to unpickle,
    the settings and bots most of it."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[object, bytes]] = {}
        """id(object) -> (the object, kept alive so that its id is not reused; its pickle)."""

    def _part(self, obj: object) -> bytes:
        kept = self._parts.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        if len(self._parts) >= SHARED_PARTS_KEPT:
            self._parts.clear()
        self._parts[id(obj)] = (obj, data)
        return data

    def dumps(self, job: GameJob) -> bytes:
        shared = (
            self._part(job.settings),
            self._part(job.log_dir),
            tuple(self._part(bot) for bot in job.bots),
        )
        rest = dict(job.__dict__)  # the other fields, by name
        del rest["settings"], rest["log_dir"], rest["bots"]
        return pickle.dumps((shared, rest), pickle.HIGHEST_PROTOCOL)


class JobUnpickler:
    """Reads :class:`JobPickler`'s jobs, each shared part unpickled once."""

    def __init__(self) -> None:
        self._parts: dict[bytes, object] = {}

    def _part(self, data: bytes) -> Any:
        obj = self._parts.get(data)
        if obj is None:
            obj = pickle.loads(data)
            if len(self._parts) >= SHARED_PARTS_KEPT:
                self._parts.clear()
            self._parts[data] = obj
        return obj

    def loads(self, data: bytes) -> GameJob:
        (settings, log_dir, bots), rest = pickle.loads(data)
        return GameJob(
            settings=self._part(settings),
            log_dir=self._part(log_dir),
            bots=tuple([self._part(bot) for bot in bots]),
            **rest,
        )
