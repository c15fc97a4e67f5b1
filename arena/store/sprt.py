"""The SPRT ledger: one store per test, one row per finished game, keyed by pair.

A game is written in one transaction when it finishes, so an interrupted test loses
at most the games in flight; on resume only the missing legs are played. The test's
definition is stored too: resuming with different settings is refused. The store is a
SQLite file (``sprt.sqlite`` in the test's folder) or a database URL.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from arena.gz import gzip_small
from arena.store.engine import (
    DB_ERRORS,
    StoreError,
    describe_url,
    explain,
    is_url,
    make_engine,
    sqlite_url,
)
from arena.store.sql import upsert

STORE_NAME = "sprt.sqlite"

metadata = sa.MetaData()
meta_table = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
legs_table = sa.Table(
    "legs",
    metadata,
    sa.Column("pair", sa.Integer, primary_key=True, autoincrement=False),  # both legs: one deal
    sa.Column("leg", sa.Integer, primary_key=True, autoincrement=False),  # 0: NEW in seat 0
    sa.Column("game_id", sa.Text, nullable=False),
    sa.Column("variant", sa.Text, nullable=False),
    sa.Column("deal_seed", sa.BigInteger, nullable=False),
    sa.Column("new_points", sa.Float, nullable=False),  # 1 win, 0.5 draw, 0 loss (for NEW)
    sa.Column("new_score", sa.Integer, nullable=False),
    sa.Column("old_score", sa.Integer, nullable=False),
    sa.Column("end_reason", sa.Text, nullable=False),
    sa.Column("faults", sa.Text, nullable=False),  # e.g. "old:timeout", "" when none
    sa.Column("record", sa.LargeBinary, nullable=False),  # gzip of the game record JSON
)


class SprtStoreError(StoreError):
    """The ledger cannot be opened or written (a damaged file, a read-only folder)."""


@dataclass(frozen=True)
class LegResult:
    pair: int
    leg: int
    game_id: str
    variant: str
    deal_seed: int
    new_points: float
    new_score: int
    old_score: int
    end_reason: str
    faults: str
    record_json: bytes


class SprtStore:
    """One SPRT test's ledger at a path (SQLite) or a database URL."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.where = describe_url(str(path)) if is_url(path) else str(path)
        url = str(path) if is_url(path) else sqlite_url(Path(path))
        try:
            self.engine = make_engine(url)
            with self.engine.begin() as conn:
                metadata.create_all(conn)
        except StoreError as exc:
            raise SprtStoreError(str(exc), hint=exc.hint) from None
        except DB_ERRORS as exc:
            message = explain(
                exc,
                self.where,
                "cannot open the SPRT ledger",
                what="SPRT ledger",
                afresh="another --out",
            )
            raise SprtStoreError(message) from None

    def close(self) -> None:
        self.engine.dispose()

    def _fail(self, exc: BaseException, doing: str) -> SprtStoreError:
        return SprtStoreError(
            explain(exc, self.where, doing, what="SPRT ledger", afresh="another --out")
        )

    def get_meta(self, key: str) -> str | None:
        try:
            with self.engine.connect() as conn:
                value = conn.execute(
                    sa.select(meta_table.c.value).where(meta_table.c.key == key)
                ).scalar_one_or_none()
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot read") from None
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(upsert(conn, meta_table, {"key": key, "value": value}, ["key"]))
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot write") from None

    def add(self, leg: LegResult) -> None:
        """Idempotent: a leg stored twice keeps its first result."""
        row = {
            "pair": leg.pair,
            "leg": leg.leg,
            "game_id": leg.game_id,
            "variant": leg.variant,
            "deal_seed": leg.deal_seed,
            "new_points": leg.new_points,
            "new_score": leg.new_score,
            "old_score": leg.old_score,
            "end_reason": leg.end_reason,
            "faults": leg.faults,
            "record": gzip_small(leg.record_json, 9),
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(upsert(conn, legs_table, row, ["pair", "leg"], update=False))
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot store a game") from None

    def legs(self) -> dict[tuple[int, int], float]:
        """(pair, leg) -> NEW's points, for every stored game."""
        t = legs_table.c
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(t.pair, t.leg, t.new_points)).all()
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot read") from None
        return {(int(p), int(g)): float(x) for p, g, x in rows}

    def fault_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    sa.select(legs_table.c.faults).where(legs_table.c.faults != "")
                ).all()
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot read") from None
        for (faults,) in rows:
            for item in str(faults).split(","):
                counts[item] = counts.get(item, 0) + 1
        return counts

    def record_json(self, pair: int, leg: int) -> bytes | None:
        t = legs_table.c
        try:
            with self.engine.connect() as conn:
                blob = conn.execute(
                    sa.select(t.record).where(t.pair == pair, t.leg == leg)
                ).scalar_one_or_none()
        except DB_ERRORS as exc:
            raise self._fail(exc, "cannot read") from None
        return None if blob is None else gzip.decompress(blob)
