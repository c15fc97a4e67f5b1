"""The stores: the only SQL of arena, on SQLAlchemy Core.

Tournaments (:mod:`arena.store.tournament`), SPRT tests (:mod:`arena.store.sprt`) and
competitions (:mod:`arena.store.competition`) each keep their games in a SQLite file
(embedded, the default) or a PostgreSQL database (deployed), opened by
:func:`arena.store.engine.make_engine`. Every write is one transaction and a result is
inserted if absent, keyed by its game: delivered twice, it is stored once.
"""

from arena.store.engine import StoreError, StoreLocked, is_url, sqlite_url

__all__ = ["StoreError", "StoreLocked", "is_url", "sqlite_url"]
