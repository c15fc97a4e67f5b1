"""The server's shared vocabulary: small frozen value types the store returns.

The store (the only code that speaks SQL) turns rows into these; the web layer, the
ladder and the service only ever see them. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

VersionStatus = Literal["queued", "building", "rejected", "active", "retired", "disqualified"]
GameKind = Literal["ladder", "challenge", "finals", "round"]
GameStatus = Literal["scheduled", "running", "finished", "void"]

VERSION_STATUSES: tuple[VersionStatus, ...] = (
    "queued",
    "building",
    "rejected",
    "active",
    "retired",
    "disqualified",
)
GAME_STATUSES: tuple[GameStatus, ...] = ("scheduled", "running", "finished", "void")


@dataclass(frozen=True)
class OperationsSnapshot:
    """What ``/metrics`` reports, read from the store in one go at scrape time."""

    games: dict[str, int]
    """Games by status (every status in :data:`GAME_STATUSES`, zero when none)."""
    versions: dict[str, int]
    """Versions by status (every status in :data:`VERSION_STATUSES`)."""
    faults: dict[str, int]
    """Faults of finished games by kind."""
    game_seconds: float
    """Summed play time of the finished games."""
    build_seconds: tuple[float, ...]
    """The build time of every version built so far."""


@dataclass(frozen=True)
class Author:
    """Who owns bots, pages and logs: a person or a team (then its members sign in as it),
    or the organiser, who runs the competition. ``member_id``/``member_name``: which member
    of the team is asking (None when the team's own token was used)."""

    id: int
    name: str
    organiser: bool
    created: datetime
    staff: bool = False
    """A staff team: its bots are baselines, badged and left out of prize ranks."""
    member_id: int | None = None
    member_name: str | None = None

    @property
    def who(self) -> str:
        """How logs name the caller: ``alice (team Foo)``, or the team's name."""
        if self.member_name is None:
            return self.name
        return f"{self.member_name} (team {self.name})"


@dataclass(frozen=True)
class Member:
    """A member of a team: holds a token of their own that signs in as the team."""

    id: int
    author_id: int
    team: str
    name: str
    email: str | None
    created: datetime


@dataclass(frozen=True)
class Bot:
    """A bot name, owned by the first author that submitted it."""

    id: int
    name: str
    author_id: int
    author_name: str
    language: str | None
    disqualified: bool
    staff: bool = False


@dataclass(frozen=True)
class Version:
    """One submission of a bot. ``number`` counts 1, 2, ... per bot; a new active
    version retires the previous one (its games stay with it)."""

    id: int
    bot_id: int
    bot_name: str
    number: int
    content_hash: str | None
    status: VersionStatus
    submitted: datetime
    verdict: str | None
    language: str | None
    ready_author: str | None
    """What the bot said about itself in its handshake (check-bot), if it said."""
    ready_version: str | None
    build_log_available: bool
    author_id: int = 0
    author_name: str = ""


@dataclass(frozen=True)
class SeatRow:
    """One seat of a game: which version sat there and how it did (None until finished)."""

    seat: int
    version_id: int
    bot_name: str
    version_number: int
    score: int | None = None
    rank: int | None = None
    faults: list[str] = field(default_factory=list)
    """Fault kinds, in the order they happened."""
    forfeit: bool = False
    """The seat lost the game to a fault (a crash, a timeout, an illegal move)."""


@dataclass(frozen=True)
class GameRow:
    """A game of the ladder or a challenge, from scheduling to its result."""

    id: str
    kind: GameKind
    players: int
    variant: str
    seed: int
    status: GameStatus
    created: datetime
    finished: datetime | None
    end_reason: str | None
    seats: list[SeatRow]
    rated: bool = True
    requested_by: int | None = None
    """The author who asked for a challenge (None for ladder games)."""
    rerun_of: str | None = None
    event_id: int | None = None
    """The finals or round this game belongs to (None: a ladder game or a challenge)."""


@dataclass(frozen=True)
class LeaderRow:
    """One line of the leaderboard: a bot's active version, ranked by ``conservative``
    (mu - 3 sigma); ``low``/``high`` is the rating interval mu -/+ 2 sigma."""

    rank: int
    bot_name: str
    version_number: int
    author_name: str
    language: str | None
    mu: float
    sigma: float
    conservative: float
    low: float
    high: float
    games: int
    win_rate: float | None
    faults: int
    staff: bool = False
    """A staff bot (a baseline): badged, and without a prize rank unless staff count."""
    prize_rank: int | None = None
    """The rank among the bots that compete for prizes (None for staff bots when they
    do not count, see ``[competition] staff_in_prizes``)."""


@dataclass(frozen=True)
class RatingPoint:
    """A version's rating right after one of its games finished."""

    game_id: str
    finished: datetime
    mu: float
    sigma: float


@dataclass(frozen=True)
class HeadToHead:
    """How a bot fared against one opponent bot, over all their shared rated games."""

    opponent: str
    games: int
    wins: int
    """Games where the bot ranked better than the opponent."""
    losses: int
    draws: int


@dataclass(frozen=True)
class FaultGroup:
    """A bot's faults of one kind: how many, and one example to look at."""

    kind: str
    count: int
    example_game_id: str
    example_text: str


@dataclass(frozen=True)
class FrozenRanking:
    """The final ranking the organiser froze, and when."""

    frozen: datetime
    rows: list[LeaderRow]


@dataclass(frozen=True)
class LossRow:
    """One seat of an author's bot that lost a finished game or faulted in it: what the
    author's triage lists, faults first, then the largest margin."""

    game: GameRow
    seat: int
    bot_name: str
    version_number: int
    score: int | None
    rank: int | None
    best_score: int | None
    """The winning score of the game."""
    faults: list[str]
    """The seat's fault kinds (timeout, crash, forfeit, ...), in order."""
    has_stderr: bool

    @property
    def margin(self) -> int:
        """Points behind the winner (0 when unknown)."""
        if self.best_score is None or self.score is None:
            return 0
        return self.best_score - self.score


EventKind = Literal["round", "finals"]
EventStatus = Literal["scheduled", "running", "finished"]


@dataclass(frozen=True)
class EventRow:
    """A finals or a scheduled round: a tournament over a snapshot of versions (taken as
    of ``cutoff``), played as unrated games of the store. ``scheduled``: waiting for its
    entrants' builds; ``running``: its games are scheduled; ``finished``: every game
    finished or void, and ``results`` computed once."""

    id: int
    kind: EventKind
    number: int
    status: EventStatus
    cutoff: datetime
    created: datetime
    started: datetime | None
    finished: datetime | None
    settings: dict[str, Any]
    created_by: str | None
    entrants: tuple[int, ...]
    """Version ids, ascending (empty until the event starts)."""
    games: dict[str, int]
    """The event's games by status."""
    results: dict[str, Any] | None = None

    @property
    def title(self) -> str:
        if self.kind == "finals":
            return "Finals" if self.number == 1 else f"Finals (run {self.number})"
        return f"Round {self.number}"

    @property
    def total_games(self) -> int:
        return sum(self.games.values())


@dataclass(frozen=True)
class PhaseLogRow:
    """One phase change: what was done, from which phase to which, by whom (an
    organiser's name, or ``schedule`` for the deadline's timer), and its details."""

    id: int
    at: datetime
    action: str
    phase_from: str
    phase_to: str
    actor: str
    detail: dict[str, object]
