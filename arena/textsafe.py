"""Show bot-controlled text safely: control and format characters made visible, never obeyed.

A bot's stderr, its last line, its self-reported ``author``/``version``, its name: all
are chosen by an untrusted program.  Printed raw to a terminal, ``ESC [ 2 J`` clears the
screen, ``ESC ] 52`` writes the organiser's clipboard, ``ESC ] 0`` retitles the window;
in any sink (terminal, HTML, Markdown, logs), a right-to-left override or isolate
reorders what follows ("Trojan Source"), and zero-width characters, a BOM or the
invisible tag characters make two different strings look alike.  One rule covers them
all: every character of the Unicode categories Cc (controls), Cf (format: bidi controls
and isolates, zero-width space/joiners, BOM, tags...), Zl and Zp (line and paragraph
separators) and Cs (lone surrogates from undecodable bytes) is shown as an escape such
as ``\\x1b`` or ``\\u200b``.  Every place that *shows* bot text (terminal via rich,
Markdown, HTML, the server's pages, the replay viewer, whose script applies the same
rule) passes it through :func:`visible`; machine-readable outputs (CSV, JSON, the record
files) keep the raw text, which their own quoting makes harmless.
"""

from __future__ import annotations

import unicodedata

NEUTRALISED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""The Unicode general categories :func:`visible` escapes."""
_KEPT_MULTILINE = frozenset("\n\t")


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control, format and separator character (categories Cc, Cf,
    Zl, Zp; lone surrogates) shown as an escape such as ``\\x1b`` or ``\\u202e``.
    ``multiline`` keeps newlines and tabs (a stderr tail printed line by line);
    otherwise they are escaped too (one-line fields)."""
    if text.isprintable():  # fast path: no Cc/Cf/Z*/Cs at all (spaces aside)
        return text
    kept = _KEPT_MULTILINE if multiline else frozenset()
    return "".join(
        _escape(c) if c not in kept and unicodedata.category(c) in NEUTRALISED else c for c in text
    )
