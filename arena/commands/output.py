"""Where commands print, and the one error a command raises for a user's mistake."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from arena.engine.record import FaultRecord
from arena.errors import ArenaError
from arena.play.verdict import fault_evidence
from arena.textsafe import visible


def _console(stderr: bool = False) -> Console:
    """Tables stay readable when output goes to a file or CI log (rich assumes 80 columns):
    160 columns there, unless the user says otherwise with ``COLUMNS``."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal or _columns() else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


def _columns() -> int | None:
    """``COLUMNS`` when it is a usable width (rich reads it itself)."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and int(text) >= 20 else None


console = _console()
err_console = _console(stderr=True)


class UserError(ArenaError):
    """A mistake in the user's input: printed as one clear line, exit status 2."""


def shown(text: str) -> str:
    """Bot-controlled text for the terminal: control characters visible, no rich markup."""
    return escape(visible(text))


def print_evidence(fault: FaultRecord, indent: str) -> None:
    """A fault's last line and stderr tail (bot-controlled text: made visible and safe)."""
    for line in fault_evidence(fault, indent, terminal=True):
        console.print(line)
