"""The tournament store lives in :mod:`arena.store.tournament` (the only SQL of arena);
its names are here for the tournament's modules and older imports."""

from arena.store.tournament import (
    LEGACY_VERSION,
    LOCK_NAME,
    SCHEMA_VERSION,
    STORE_NAME,
    BotEntry,
    BotStats,
    GameSummary,
    Store,
    StoredRating,
    StoreError,
    StoreLocked,
    Tally,
    Totals,
    iter_records,
    store_file,
    upgrade_store,
)

__all__ = [
    "LEGACY_VERSION",
    "LOCK_NAME",
    "SCHEMA_VERSION",
    "STORE_NAME",
    "BotEntry",
    "BotStats",
    "GameSummary",
    "Store",
    "StoreError",
    "StoreLocked",
    "StoredRating",
    "Tally",
    "Totals",
    "iter_records",
    "store_file",
    "upgrade_store",
]
