"""``arena sprt``: A/B tests of two bots on game pairs (pentanomial GSPRT). Knows no ratings."""

from arena.sprt.runner import SprtConfig, SprtError, SprtStatus, run_sprt
from arena.sprt.stats import Pentanomial, SprtBounds, Verdict, elo_estimate, llr_logistic

__all__ = [
    "Pentanomial",
    "SprtBounds",
    "SprtConfig",
    "SprtError",
    "SprtStatus",
    "Verdict",
    "elo_estimate",
    "llr_logistic",
    "run_sprt",
]
