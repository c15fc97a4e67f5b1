"""Show bot-controlled text safely: control characters made visible, never obeyed.

A bot's stderr, its last line, its self-reported ``author``/``version``: all are bytes
chosen by an untrusted program.  Printed raw to a terminal, ``ESC [ 2 J`` clears the
screen, ``ESC ] 52`` writes the organiser's clipboard, ``ESC ] 0`` retitles the window.
Every place that *shows* bot text (terminal via rich, Markdown, HTML) passes it through
:func:`visible` first; machine-readable outputs (CSV, JSON, the record files) keep the
raw text, which their own quoting makes harmless.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (tab and newline are handled below), DEL, C1
    "\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidi overrides ("Trojan source")
)
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character (C0, DEL, C1, bidi overrides) shown as an
    escape such as ``\\x1b``.  ``multiline`` keeps newlines and tabs (a stderr tail
    printed line by line); otherwise they are escaped too (one-line fields)."""
    pattern = _CONTROL if multiline else _CONTROL_ALL
    return pattern.sub(_escape, text)
