"""What the pages and the JSON API show, gathered once: each page renders the same data
its ``/api/...`` twin returns, already redacted for the viewer.

A viewer is an :class:`Author` or None (the public). Private to a bot's author (and the
organiser): the build log, the verdict of a version that did not make it, and the bot's
stderr in games.
"""

from __future__ import annotations

import re
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast
from urllib.parse import quote

from arena.server.app import WebSettings
from arena.server.redact import redact_record
from arena.store.competition import (
    CompetitionStore,
    bot_faults_topic,
    bot_results_topic,
    bot_topic,
)
from arena.store.competition_models import (
    Author,
    Bot,
    FaultGroup,
    FrozenRanking,
    GameRow,
    HeadToHead,
    LeaderRow,
    LossRow,
    Member,
    PhaseLogRow,
    RatingPoint,
    Version,
)

RECENT_GAMES = 20
HISTORY_POINTS = 500
"""A bot page's rating chart: each version's latest ratings, at most this many."""
OWN_STDERR_GAMES = 10
LOSSES_SHOWN = 20
"""Rows of the loss triage on ``/me``."""
SUBMISSIONS_PER_PAGE = 20
"""Submissions on one page of ``/me`` (each may carry a 64 KiB build log)."""
T = TypeVar("T")


BOARD_MAX_AGE_S = 1.0
"""Longest a computed leaderboard is reused (writes by another process)."""
_boards: weakref.WeakKeyDictionary[
    CompetitionStore, dict[bool, tuple[int, float, list[LeaderRow]]]
] = weakref.WeakKeyDictionary()


def board_rows(store: CompetitionStore, *, staff_in_prizes: bool = False) -> list[LeaderRow]:
    """``store.leaderboard()``, computed once per store generation: the leaderboard and
    every bot page need it, and it aggregates every rated game."""
    generation, now = store.generation, time.monotonic()  # before reading the store
    memo = _boards.setdefault(store, {})
    kept = memo.get(staff_in_prizes)
    if kept is not None and kept[0] == generation and now - kept[1] <= BOARD_MAX_AGE_S:
        return kept[2]
    rows = store.leaderboard(staff_in_prizes=staff_in_prizes)
    memo[staff_in_prizes] = (generation, now, rows)
    return rows


PART_MAX_AGE_S = 1.0
"""Longest a part of a bot page is reused (writes by another process bump no stamp)."""
PARTS_KEPT = 4096
"""Parts kept per store; when full, they start over (bot names come from the URL)."""
_parts: weakref.WeakKeyDictionary[
    CompetitionStore, dict[tuple[str, str], tuple[int, float, Any]]
] = weakref.WeakKeyDictionary()


def _kept(store: CompetitionStore, part: str, name: str, topic: str, make: Callable[[], T]) -> T:
    """``make()``, reused while the store's stamp of ``topic`` is the one read before it
    was made (at most ``PART_MAX_AGE_S``): a bot page is made of parts that change at
    different times (its games list with each game scheduled, its ratings and head-to-head
    when one of its games ends, its faults when one ends with a fault), and remaking every
    part on each landed game was most of a bot page's time at 100,000 games."""
    stamp, now = store.stamp((topic,)), time.monotonic()  # before reading the store
    memo = _parts.setdefault(store, {})
    kept = memo.get((part, name))
    if kept is not None and kept[0] == stamp and now - kept[1] <= PART_MAX_AGE_S:
        return cast(T, kept[2])
    value = make()
    if len(memo) >= PARTS_KEPT:
        memo.clear()
    memo[(part, name)] = (stamp, now, value)
    return value


def may_see_private(viewer: Author | None, author_id: int) -> bool:
    """Build logs, verdicts, stderr: the owner's and the organiser's eyes only."""
    return viewer is not None and (viewer.organiser or viewer.id == author_id)


def visible_seats(store: CompetitionStore, game: GameRow, viewer: Author | None) -> set[int]:
    """Seats whose stderr ``viewer`` may read."""
    if viewer is None:
        return set()
    if viewer.organiser:
        return {seat.seat for seat in game.seats}
    owners: dict[str, int | None] = {}
    for seat in game.seats:
        if seat.bot_name not in owners:
            bot = store.bot(seat.bot_name)
            owners[seat.bot_name] = None if bot is None else bot.author_id
    return {seat.seat for seat in game.seats if owners[seat.bot_name] == viewer.id}


@dataclass
class VersionView:
    version: Version
    verdict: str | None
    """None when the viewer may not see it."""
    log_visible: bool

    def api(self) -> dict[str, Any]:
        v = self.version
        return {
            "id": v.id,
            "bot": v.bot_name,
            "number": v.number,
            "status": v.status,
            "submitted": v.submitted,
            "language": v.language,
            "content_hash": v.content_hash,
            "ready_author": v.ready_author,
            "ready_version": v.ready_version,
            "verdict": self.verdict,
            "build_log_available": v.build_log_available and self.log_visible,
        }


def version_view(version: Version, owner_id: int, viewer: Author | None) -> VersionView:
    private = may_see_private(viewer, owner_id)
    public_verdict = version.status in ("active", "retired")
    verdict = version.verdict if (private or public_verdict) else None
    return VersionView(version, verdict, private)


@dataclass
class Leaderboard:
    name: str
    paused: bool
    frozen: FrozenRanking | None
    games_finished: int
    rows: list[LeaderRow]

    def api(self) -> dict[str, Any]:
        return {
            "competition": self.name,
            "paused": self.paused,
            "games_finished": self.games_finished,
            "frozen": None
            if self.frozen is None
            else {"frozen": self.frozen.frozen, "rows": self.frozen.rows},
            "rows": self.rows,
        }


def leaderboard(store: CompetitionStore, settings: WebSettings) -> Leaderboard:
    with store.reading():
        return _leaderboard(store, settings)


def _leaderboard(store: CompetitionStore, settings: WebSettings) -> Leaderboard:
    return Leaderboard(
        name=settings.name,
        paused=store.paused(),
        frozen=store.frozen(),
        games_finished=store.games_finished(),
        rows=board_rows(store, staff_in_prizes=settings.staff_in_prizes),
    )


@dataclass
class BotPage:
    bot: Bot
    row: LeaderRow | None
    versions: list[VersionView]
    history: dict[int, list[RatingPoint]]
    """Rating after each game, per version number."""
    head_to_head: list[HeadToHead]
    recent: list[GameRow]
    faults: list[FaultGroup]
    private: bool

    def api(self) -> dict[str, Any]:
        b = self.bot
        return {
            "bot": {
                "name": b.name,
                "author": b.author_name,
                "language": b.language,
                "disqualified": b.disqualified,
                "staff": b.staff,
            },
            "leaderboard": self.row,
            "versions": [v.api() for v in self.versions],
            "rating_history": {str(k): v for k, v in self.history.items()},
            "head_to_head": self.head_to_head,
            "recent_games": [game_api(g) for g in self.recent],
            "faults": self.faults,
        }


def bot_page(
    store: CompetitionStore, name: str, viewer: Author | None, *, staff_in_prizes: bool = False
) -> BotPage | None:
    with store.reading():
        return _bot_page(store, name, viewer, staff_in_prizes)


def _bot_page(
    store: CompetitionStore, name: str, viewer: Author | None, staff_in_prizes: bool
) -> BotPage | None:
    games, results = bot_topic(name), bot_results_topic(name)
    bot, versions = _kept(
        store, "bot", name, games, lambda: (store.bot(name), store.versions_of(name))
    )
    if bot is None:
        return None
    board = board_rows(store, staff_in_prizes=staff_in_prizes)
    rows = [r for r in board if r.bot_name == name]

    def history() -> dict[int, list[RatingPoint]]:
        return {
            v.number: store.rating_history(v.id, last=HISTORY_POINTS)
            for v in versions
            if v.status in ("active", "retired", "disqualified")
        }

    return BotPage(
        bot=bot,
        row=rows[0] if rows else None,
        versions=[version_view(v, bot.author_id, viewer) for v in versions],
        history=_kept(store, "history", name, results, history),
        head_to_head=_kept(store, "head_to_head", name, results, lambda: store.head_to_head(name)),
        recent=_kept(
            store, "recent", name, games, lambda: store.games(bot=name, limit=RECENT_GAMES)
        ),
        faults=_kept(
            store, "faults", name, bot_faults_topic(name), lambda: store.faults_by_kind(name)
        ),
        private=may_see_private(viewer, bot.author_id),
    )


def game_api(game: GameRow) -> dict[str, Any]:
    return {
        "id": game.id,
        "kind": game.kind,
        "players": game.players,
        "variant": game.variant,
        "seed": game.seed,
        "status": game.status,
        "rated": game.rated,
        "created": game.created,
        "finished": game.finished,
        "end_reason": game.end_reason,
        "rerun_of": game.rerun_of,
        "seats": game.seats,
    }


@dataclass
class GamePage:
    game: GameRow
    record: dict[str, Any] | None
    """Redacted for the viewer; None until the game finished."""
    stderr: dict[int, str] = field(default_factory=dict)
    """Whole-game stderr of the seats the viewer may read."""

    def api(self) -> dict[str, Any]:
        return {
            "game": game_api(self.game),
            "record": self.record,
            "stderr": {str(k): v for k, v in self.stderr.items()},
            "downloads": self.downloads(),
        }

    def downloads(self) -> dict[str, Any]:
        """Where the viewer can download this game's record and their own stderr."""
        base = f"/games/{quote(self.game.id, safe='')}"
        return {
            "record": f"{base}/record.json" if self.record is not None else None,
            "stderr": {str(seat): f"{base}/stderr/{seat}.txt" for seat in self.stderr},
        }


def download_name(game_id: str, what: str) -> str:
    """A file name for a download of a game (the id reduced to safe characters)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", game_id)[:80]
    return f"game-{safe}-{what}"


def own_stderr(
    store: CompetitionStore, game_id: str, seat: int, viewer: Author | None
) -> str | None:
    """The whole-game stderr of ``seat`` if ``viewer`` may read it (their own bot's seat,
    or the organiser); None when there is none. Raises :class:`PermissionError` when the
    viewer may not read that seat, LookupError when there is no such game."""
    game = store.game(game_id)
    if game is None:
        raise LookupError(game_id)
    if seat not in visible_seats(store, game, viewer):
        raise PermissionError(seat)
    return store.seat_stderr(game_id, seat)


def game_page(store: CompetitionStore, game_id: str, viewer: Author | None) -> GamePage | None:
    with store.reading():
        return _game_page(store, game_id, viewer)


def _game_page(store: CompetitionStore, game_id: str, viewer: Author | None) -> GamePage | None:
    game = store.game(game_id)
    if game is None:
        return None
    seats = visible_seats(store, game, viewer)
    record = store.record(game_id)
    stderr: dict[int, str] = {}
    for seat in sorted(seats):
        text = store.seat_stderr(game_id, seat)
        if text:
            stderr[seat] = text
    return GamePage(
        game=game,
        record=None if record is None else redact_record(record, seats),
        stderr=stderr,
    )


@dataclass
class Submission:
    view: VersionView
    log: str | None

    def api(self) -> dict[str, Any]:
        return {**self.view.api(), "log": self.log}


def submission(store: CompetitionStore, version_id: int, viewer: Author | None) -> Submission:
    """Raises LookupError when there is no such submission (or, for a private one, when
    the viewer may not know of it: queued and rejected versions are their author's)."""
    version = store.version(version_id)
    if version is None:
        raise LookupError(version_id)
    bot = store.bot(version.bot_name)
    owner = bot.author_id if bot is not None else version.author_id
    view = version_view(version, owner, viewer)
    if not view.log_visible and version.status not in ("active", "retired", "disqualified"):
        raise LookupError(version_id)
    log = store.submission_log(version_id) if view.log_visible else None
    return Submission(view, log)


@dataclass
class OwnGame:
    game: GameRow
    seats: list[int]
    stderr: dict[int, str]


@dataclass
class MePage:
    author: Author
    submissions: list[Submission]
    bots: list[Bot]
    games: list[OwnGame]
    page: int = 1
    """This page of the submissions (newest first), 1 to ``pages``."""
    pages: int = 1
    total: int = 0
    """Every submission of the author."""
    losses: list[LossRow] = field(default_factory=list)
    """Triage: lost or faulted games of the author's bots, faults first."""
    members: list[Member] = field(default_factory=list)
    """The team's members (who share its bots, logs and this page)."""

    def api(self) -> dict[str, Any]:
        return {
            "author": {
                "id": self.author.id,
                "name": self.author.name,
                "organiser": self.author.organiser,
                "staff": self.author.staff,
                "created": self.author.created,
            },
            "team": {
                "name": self.author.name,
                "members": [{"name": m.name, "email": m.email} for m in self.members],
            },
            "member": self.author.member_name,
            "bots": [b.name for b in self.bots],
            "losses": [loss_api(row) for row in self.losses],
            "submissions": [s.api() for s in self.submissions],
            "page": self.page,
            "pages": self.pages,
            "submissions_total": self.total,
            "games": [
                {
                    "game": game_api(g.game),
                    "own_seats": g.seats,
                    "stderr": {str(k): v for k, v in g.stderr.items()},
                }
                for g in self.games
            ],
        }


def me_page(store: CompetitionStore, author: Author, page: int = 1) -> MePage:
    """The author's page; ``page`` picks their submissions (newest first, clamped to the
    pages there are): only that page's build logs are read."""
    versions = store.submissions_of(author.id)
    pages = max(1, -(-len(versions) // SUBMISSIONS_PER_PAGE))
    page = min(max(1, page), pages)
    shown = versions[(page - 1) * SUBMISSIONS_PER_PAGE : page * SUBMISSIONS_PER_PAGE]
    submissions = [
        Submission(version_view(v, author.id, author), store.submission_log(v.id)) for v in shown
    ]
    bots = [b for b in store.bots() if b.author_id == author.id]
    seen: dict[str, GameRow] = {}
    for bot in bots:
        for game in store.games(bot=bot.name, limit=OWN_STDERR_GAMES):
            seen.setdefault(game.id, game)
    recent = sorted(seen.values(), key=lambda g: g.created, reverse=True)[:OWN_STDERR_GAMES]
    names = {b.name for b in bots}
    games = []
    for game in recent:
        seats = [s.seat for s in game.seats if s.bot_name in names]
        stderr: dict[int, str] = {}
        for seat in seats:
            text = store.seat_stderr(game.id, seat)
            if text:
                stderr[seat] = text
        games.append(OwnGame(game, seats, stderr))
    losses = store.losses_of(author.id, LOSSES_SHOWN)
    members = store.members(author.name)
    return MePage(author, submissions, bots, games, page, pages, len(versions), losses, members)


def loss_api(row: LossRow) -> dict[str, Any]:
    base = f"/games/{quote(row.game.id, safe='')}"
    return {
        "game": row.game.id,
        "bot": row.bot_name,
        "version": row.version_number,
        "seat": row.seat,
        "score": row.score,
        "rank": row.rank,
        "best_score": row.best_score,
        "margin": row.margin,
        "faults": row.faults,
        "replay": base,
        "stderr": f"{base}/stderr/{row.seat}.txt" if row.has_stderr else None,
    }


def phase_log_api(row: PhaseLogRow) -> dict[str, Any]:
    """One phase change as ``GET /api/phase`` gives it to the organiser."""
    return {
        "id": row.id,
        "at": row.at.isoformat(),
        "action": row.action,
        "phase_from": row.phase_from,
        "phase_to": row.phase_to,
        "actor": row.actor,
        "detail": row.detail,
    }
