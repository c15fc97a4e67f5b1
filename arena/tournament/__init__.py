"""Tournaments: config, schedule, the results store, resume. Games run in arena.play; no ratings."""

from arena.store.tournament import STORE_NAME, Store, StoreError
from arena.tournament.config import ConfigError, TournamentConfig, load_config
from arena.tournament.runner import Progress, run_tournament, store_path
from arena.tournament.schedule import build_schedule

__all__ = [
    "STORE_NAME",
    "ConfigError",
    "Progress",
    "Store",
    "StoreError",
    "TournamentConfig",
    "build_schedule",
    "load_config",
    "run_tournament",
    "store_path",
]
