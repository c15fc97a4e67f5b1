"""The referee: drives bot processes through one game under the engine's rules."""

from arena.engine.record import FAULT_KINDS
from arena.referee.clock import TimeControl
from arena.referee.faults import Fault, FaultPolicy
from arena.referee.manifest import BotManifest, BotSpec, ManifestError, load_bot
from arena.referee.referee import GameOutcome, GameSettings, ThinkStats, play_game
from arena.referee.seats import BotSeat, Choice, RandomSeat, SandboxSettings, Seat

__all__ = [
    "FAULT_KINDS",
    "BotManifest",
    "BotSeat",
    "BotSpec",
    "Choice",
    "Fault",
    "FaultPolicy",
    "GameOutcome",
    "GameSettings",
    "ManifestError",
    "RandomSeat",
    "SandboxSettings",
    "Seat",
    "ThinkStats",
    "TimeControl",
    "load_bot",
    "play_game",
]
