"""A person at a seat: the terminal (:class:`TerminalSeat`) or a local browser page
(:class:`BrowserSeat`), both plain :class:`arena.referee.Seat` implementations, so the
referee, its clocks and the record treat a human like any bot (``arena play``)."""

from arena.human.browser import BrowserSeat
from arena.human.terminal import TerminalSeat, move_text

__all__ = ["BrowserSeat", "TerminalSeat", "move_text"]
