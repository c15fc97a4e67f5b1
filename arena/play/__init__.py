"""The one way games are played: a game job in, one game result out.

Executors (inline, a local process pool, a Ray cluster in batches) run
:class:`~arena.play.job.GameJob`\\ s with the worker state private to this package
(persistent bot processes, least recently used closed first) and hand back
:class:`~arena.play.job.GameResult`\\ s in any order. Tournaments, SPRT runs and the
server's ladder are callers; none of them runs a game itself.
"""

from arena.play.job import Announcement, FaultRow, GameJob, GameResult, ScheduledGame, SeatRow

__all__ = ["Announcement", "FaultRow", "GameJob", "GameResult", "ScheduledGame", "SeatRow"]
