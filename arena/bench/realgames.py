"""Real games for ``arena bench report``: played by the engine through the referee, with
simple in-process players (no bot processes), turned into store rows by the same code a
tournament worker uses (:func:`arena.play.worker.game_result`: seats, faults, the
record, the replay frames).

A pool of distinct games is played once; a store of any size is filled from it, each
stored game a pool game under a fresh game id with fresh bots in its seats (a bot of the
same policy as the one that played the seat, so skill is real: the greedy players win).
Every stored record is a real, verifiable game of its size, with faults (a bot that sends
malformed replies and is forfeited, with its last message and stderr) and per-decision
stderr (a chatty bot), as a tournament leaves them.

Beyond the first :data:`BASE_GAMES`, game ``i`` is game ``i % BASE_GAMES`` again (same
deal, bots, moves and rows) under its own position and game id: what lets
``arena.bench.report`` grow a store to a million games by copying rows in SQL
(:func:`copy_games`) in minutes instead of storing each game through the store API.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import sqlalchemy as sa

from arena.engine import Game, Variant
from arena.engine.tables import FLOOR, AnyMove, Move
from arena.play.job import Announcement, GameResult, ScheduledGame
from arena.play.worker import game_result
from arena.protocol.messages import GameEnd, GameStart
from arena.referee.faults import Fault
from arena.referee.referee import GameSettings, play_game
from arena.referee.seats import Choice
from arena.store.engine import is_url

POLICIES = ("greedy", "random", "chatty", "faulty")
"""Players of the pool: ``greedy`` fills pattern lines and avoids the floor; ``random``;
``chatty`` plays at random and writes a line of stderr at every decision; ``faulty``
plays at random but sends a malformed reply in one game out of three (forfeited)."""
BASE_GAMES = 10_000
"""Distinct stored games (pool game and seating); later positions repeat them in turn."""
PLACEHOLDER = "seat-{}-player"
"""The name a pool game's seat plays under, replaced by a real bot name when stored."""


class PolicySeat:
    """An in-process :class:`arena.referee.seats.Seat` playing one of :data:`POLICIES`."""

    def __init__(self, name: str, policy: str) -> None:
        self.name = name
        self.policy = policy
        self._rng = random.Random()
        self._fault_at = -1
        self._decisions = 0

    def begin(self, start: GameStart) -> Fault | None:
        self._rng.seed(f"{start.game_id}:{start.seat}:{self.policy}")
        self._decisions = 0
        self._fault_at = self._rng.randrange(5, 40) if self._rng.random() < 1 / 3 else -1
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        self._decisions += 1
        think = round(self._rng.uniform(0.2, 3.0), 3)
        if self.policy == "faulty" and self._decisions == self._fault_at:
            return Fault(
                "malformed",
                "reply is not valid JSON: Expecting value: line 1 column 1 (char 0)",
                last_message="oops, this is not json",
                stderr_tail="\n".join(f"debug: thinking about move {i}" for i in range(20)),
            )
        if self.policy == "greedy":
            return Choice(self._greedy(options), think)
        index = self._rng.randrange(len(options))
        if self.policy == "chatty":
            note = f"decision {self._decisions}: {len(options)} options, picked {options[index]}"
            return Choice(index, think, stderr=note + "\n")
        return Choice(index, think)

    def _greedy(self, options: list[AnyMove]) -> int:
        def value(option: AnyMove) -> tuple[int, int, float]:
            if isinstance(option, Move):
                return (option.line != FLOOR, option.line, self._rng.random())
            return (1, -option.column, self._rng.random())

        return max(range(len(options)), key=lambda i: value(options[i]))

    def end(self, end: GameEnd) -> None:
        return None

    def abandon(self) -> None:
        return None


@dataclass(frozen=True)
class PoolGame:
    """A real game played with placeholder names: its policies by seat and store rows."""

    policies: tuple[str, ...]
    deal_seed: int
    variant: str
    result: GameResult


def play_pool(count: int, seed: int = 1) -> list[PoolGame]:
    """``count`` distinct real games, 2- and 4-player (alternately), coloured and gray."""
    rng = random.Random(seed)
    pool = []
    for index in range(count):
        n = 4 if index % 2 else 2
        variant = "gray" if index % 5 == 4 else "coloured"
        policies = tuple(rng.choice(POLICIES) for _ in range(n))
        seats = [PolicySeat(PLACEHOLDER.format(i), p) for i, p in enumerate(policies)]
        deal_seed = rng.randrange(2**31)
        settings = GameSettings(variant=Variant(variant), seed=deal_seed)
        outcome = play_game(seats, settings, f"pool-{index}")
        result = game_result(
            index, outcome, duration_s=0.02 * len(outcome.record.rounds), worker="bench"
        )
        pool.append(PoolGame(policies, deal_seed, variant, result))
    return pool


def bot_names(bots: int) -> dict[str, list[str]]:
    """``bots`` bot names, dealt round-robin over the policies (at least 4 per policy, so
    a 4-player game can seat 4 distinct bots of one policy)."""
    per = max(4, -(-bots // len(POLICIES)))
    return {p: [f"{p}-{i:02d}" for i in range(per)] for p in POLICIES}


def game_id_of(n_players: int, variant: str, index: int) -> str:
    """The id a stored game gets at schedule position ``index`` (one owner: the SQL copy
    in :func:`copy_games` builds the same text)."""
    return f"{n_players}p-{variant}-g{index:06d}"


def stored_games(
    pool: Sequence[PoolGame],
    start: int,
    stop: int,
    bots: int,
    seed: int = 1,
    base: int = BASE_GAMES,
) -> Iterator[tuple[ScheduledGame, GameResult]]:
    """Games ``start`` to ``stop`` of a store filled from ``pool`` (the same games for the
    same arguments, whatever the sizes asked before); from ``base`` on, game ``i`` is game
    ``i % base`` again under its own position and id."""
    names = bot_names(bots)
    for index in range(start, stop):
        rng = random.Random(f"{seed}:{index % base}")
        game = pool[rng.randrange(len(pool))]
        seated: list[str] = []
        for policy in game.policies:
            seated.append(rng.choice([b for b in names[policy] if b not in seated]))
        scheduled = ScheduledGame(
            game_index=index,
            game_id=game_id_of(len(seated), game.variant, index),
            n_players=len(seated),
            variant=game.variant,
            seed_index=index // 8,
            deal_seed=game.deal_seed,
            rotation=0,
            bots=tuple(seated),
        )
        yield scheduled, _renamed(game.result, index, seated)


def _renamed(result: GameResult, index: int, seated: list[str]) -> GameResult:
    record = result.record_json
    for seat, name in enumerate(seated):
        record = record.replace(
            json.dumps(PLACEHOLDER.format(seat)).encode(), json.dumps(name).encode()
        )
    return replace(
        result,
        game_index=index,
        record_json=record,
        seats=tuple(replace(s, bot=seated[s.seat]) for s in result.seats),
        faults=tuple(replace(f, bot=seated[f.seat]) for f in result.faults),
        announced=tuple(Announcement(name, "bench", "1.0") for name in seated),
    )


COPIED_TABLES = ("schedule", "lineup", "games", "seats", "faults", "replays")
"""The per-game tables of a tournament store (``arena.store.tournament.SCHEMA``), in the
order their foreign keys need."""
DEFERRED_INDEXES = ("lineup_bot", "seats_bot", "faults_game")
"""Secondary indexes dropped while copying and built again after (one sort each, not a
b-tree insert per row)."""


def copy_games(location: Path | str, start: int, stop: int, base: int = BASE_GAMES) -> None:
    """Store games ``start`` to ``stop`` (``start >= base``, every game below ``start``
    stored) as :func:`stored_games` defines them, by copying the rows of game ``i % base``
    in SQL: every column as stored, but the position, the game id (from the position),
    the deal's ``seed_index`` and ``finished_at`` (the time of the copy). One transaction;
    the store (a SQLite file or a PostgreSQL URL) must not be open for writing elsewhere."""
    if start < base:
        raise ValueError(f"copies start at the base ({base}), not {start}")
    if is_url(location):
        _copy_games_postgres(str(location), start, stop, base)
    else:
        _copy_games_sqlite(Path(location), start, stop, base)


def _passes(start: int, stop: int, base: int) -> Iterator[dict[str, float]]:
    """One copy pass per repetition of the base games: the offset and the source range."""
    first = start
    while first < stop:
        off = first - first % base
        lo, hi = first - off, min(stop, off + base) - off
        first = off + hi
        yield {"off": off, "lo": lo, "hi": hi, "now": time.time()}


def _copy_games_sqlite(store_file: Path, start: int, stop: int, base: int) -> None:
    db = sqlite3.connect(store_file, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        schemas = {
            name: sql
            for name, sql in db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
            if name in DEFERRED_INDEXES
        }
        for name in schemas:
            db.execute(f"DROP INDEX {name}")
        columns = {
            table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            for table in COPIED_TABLES
        }
        computed = {
            "game_index": "game_index + :off",
            "game_id": "n_players || 'p-' || variant || '-g' || printf('%06d', game_index + :off)",
            "seed_index": "(game_index + :off) / 8",
            "finished_at": ":now",
        }
        for params in _passes(start, stop, base):
            for table in COPIED_TABLES:
                names = columns[table]
                values = ", ".join(computed.get(c, c) for c in names)
                db.execute(
                    f"INSERT INTO {table} ({', '.join(names)}) SELECT {values} FROM {table} "
                    "WHERE game_index >= :lo AND game_index < :hi ORDER BY game_index, rowid",
                    params,
                )
        for sql in schemas.values():
            db.execute(sql)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        db.close()


def _copy_games_postgres(url: str, start: int, stop: int, base: int) -> None:
    """The same copy in PostgreSQL: the tables of :data:`arena.store.tournament.metadata`
    (``faults.id`` numbered anew, in the order of the rows copied), the deferred indexes
    dropped and built again, the planner's statistics refreshed after (by ``ANALYZE``: the
    tables' autovacuum is off, since a worker of it busy in a million copied rows keeps the
    bench from dropping its scratch database, and only a superuser may end it)."""
    from arena.store.engine import make_engine
    from arena.store.tournament import metadata

    number = "(game_index + :off)"
    computed = {
        "game_index": number,
        "game_id": f"n_players || 'p-' || variant || '-g' || "
        f"lpad({number}::text, greatest(6, length({number}::text)), '0')",
        "seed_index": f"{number} / 8",
        "finished_at": ":now",
    }
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            indexes = [
                index
                for table in COPIED_TABLES
                for index in metadata.tables[table].indexes
                if index.name in DEFERRED_INDEXES
            ]
            for index in indexes:
                index.drop(conn)
            for name in COPIED_TABLES:  # a bench store: no autovacuum keeps it from a DROP
                conn.exec_driver_sql(f"ALTER TABLE {name} SET (autovacuum_enabled = false)")
            for params in _passes(start, stop, base):
                for name in COPIED_TABLES:
                    table = metadata.tables[name]
                    names = [c.name for c in table.columns if c.name != "id"]
                    values = ", ".join(computed.get(c, c) for c in names)
                    order = "game_index, id" if "id" in table.columns else "game_index"
                    conn.execute(
                        sa.text(
                            f"INSERT INTO {name} ({', '.join(names)}) SELECT {values} "
                            f"FROM {name} WHERE game_index >= :lo AND game_index < :hi "
                            f"ORDER BY {order}"
                        ),
                        params,
                    )
            for index in indexes:
                index.create(conn)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql(f"ANALYZE {', '.join(COPIED_TABLES)}")
    finally:
        engine.dispose()
