"""Finished games written straight into a competition store, for `arena bench serve
--games N`: the bot and leaderboard pages of a competition that has played for weeks.

Playing 100,000 games through the ladder takes hours on this machine; the pages only read
rows, so the filler writes the rows a finished ladder game leaves (the game, its seats
with scores and ranks, each seat's rating point, a fault now and then) in batches of
plain INSERTs. The games are 2-player games among the store's active versions, as the
bench's ladder plays them; they carry no record (a game page of one says so), and the
stored ratings are left as the ladder made them.
"""

from __future__ import annotations

import random
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from arena.errors import ArenaError
from arena.store.competition import faults, games, rating_history, seats, versions
from arena.store.engine import make_engine

BATCH = 5000
"""Games per INSERT batch (and per transaction)."""
FAULT_EVERY = 200
"""One game in this many has a timeout fault (the bot page groups them)."""


def fill_competition(url: str, count: int, seed: int = 0) -> int:
    """Write ``count`` finished 2-player games among the active versions of the store at
    ``url``; the number of games now finished there."""
    rng = random.Random(seed)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            active = [
                int(v)
                for v in conn.execute(
                    sa.select(versions.c.id).where(versions.c.status == "active")
                ).scalars()
            ]
            if len(active) < 2:
                raise ArenaError("the store needs two active versions to fill in games")
            seq = conn.execute(sa.select(sa.func.coalesce(sa.func.max(games.c.finish_seq), 0)))
            next_seq = int(seq.scalar_one()) + 1
        start = datetime.now(UTC) - timedelta(seconds=count)
        mu = {v: 25.0 for v in active}
        for first in range(0, count, BATCH):
            game_rows: list[dict[str, Any]] = []
            seat_rows: list[dict[str, Any]] = []
            point_rows: list[dict[str, Any]] = []
            fault_rows: list[dict[str, Any]] = []
            for i in range(first, min(count, first + BATCH)):
                game_id = secrets.token_hex(6)
                when = start + timedelta(seconds=i)
                pair = rng.sample(active, 2)
                scores = [rng.randint(0, 80), rng.randint(0, 80)]
                game_rows.append(_game(game_id, rng, when, next_seq + i))
                for seat, version in enumerate(pair):
                    rank = 1 + sum(other > scores[seat] for other in scores)
                    seat_rows.append(
                        {
                            "game_id": game_id,
                            "seat": seat,
                            "version_id": version,
                            "score": scores[seat],
                            "rank": rank,
                            "forfeit": False,
                        }
                    )
                    mu[version] += (0.05 if rank == 1 else -0.05) * rng.random()
                    point_rows.append(
                        {
                            "version_id": version,
                            "game_id": game_id,
                            "finished": when,
                            "mu": mu[version],
                            "sigma": 1.0,
                        }
                    )
                if i % FAULT_EVERY == 0:
                    fault_rows.append(
                        {
                            "game_id": game_id,
                            "seat": 1,
                            "kind": "timeout",
                            "round": 3,
                            "message": "no reply within 2000 ms",
                            "forfeit": False,
                        }
                    )
            with engine.begin() as conn:
                conn.execute(sa.insert(games), game_rows)
                conn.execute(sa.insert(seats), seat_rows)
                conn.execute(sa.insert(rating_history), point_rows)
                if fault_rows:
                    conn.execute(sa.insert(faults), fault_rows)
        with engine.begin() as conn:
            finished = conn.execute(
                sa.select(sa.func.count()).select_from(games).where(games.c.status == "finished")
            ).scalar_one()
        return int(finished)
    finally:
        engine.dispose()


def _game(game_id: str, rng: random.Random, when: datetime, seq: int) -> dict[str, Any]:
    return {
        "id": game_id,
        "kind": "ladder",
        "players": 2,
        "variant": rng.choice(("coloured", "gray")),
        "seed": rng.randrange(2**31),
        "status": "finished",
        "rated": True,
        "created": when,
        "started": when,
        "finished": when,
        "finish_seq": seq,
        "end_reason": "normal",
        "rounds": rng.randint(5, 7),
        "duration_s": 0.3,
    }
