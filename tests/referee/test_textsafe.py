"""One sanitiser for every place bot text is shown."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from arena.textsafe import NEUTRALISED, visible


def test_control_characters_become_visible_escapes() -> None:
    nasty = "a\x1b]52;c;eA==\x07b\x9b2Jc\x7fd\u202ee\r"
    shown = visible(nasty)
    assert shown == "a\\x1b]52;c;eA==\\x07b\\x9b2Jc\\x7fd\\u202ee\\x0d"
    assert all(ch.isprintable() for ch in shown)


def test_newlines_and_tabs_are_kept_only_when_asked() -> None:
    assert visible("x\ny\tz") == "x\\x0ay\\x09z"
    assert visible("x\ny\tz\r", multiline=True) == "x\ny\tz\\x0d"


def test_ordinary_text_is_unchanged() -> None:
    text = "c-greedy v1.2 — «Zoë» 東京 ✓"
    assert visible(text) == text


TROJAN_SOURCE = [
    # (shown raw, as it would display) -- the examples of the Trojan Source paper and
    # invisible-text spoofing: bidi overrides, embeddings, isolates, marks, zero-width
    # characters, BOM, tag characters (invisible ASCII), separators, soft hyphen.
    'access_level != \u202e\u2066// Check if admin\u2069\u2066 "user"',
    "c-greedy\u200b",
    "c\u200dgreedy\u200c",
    "\ufeffpython-greedy",
    "admin\U000e0061\U000e0064\U000e006d\U000e0069\U000e006e",
    "line\u2028break\u2029para",
    "soft\u00adhyphen \u061c \u180e \u2060 \u2061 \u206a",
    "\u202a\u202b\u202c\u202d\u200e\u200f",
]


def test_trojan_source_and_invisible_characters_are_all_made_visible() -> None:
    """Issue 22: a zero-width space passed through raw; one rule now covers every
    control and format character (and the line/paragraph separators)."""
    for text in TROJAN_SOURCE:
        shown = visible(text)
        assert all(unicodedata.category(c) not in NEUTRALISED for c in shown), repr(shown)
        assert shown.isprintable(), repr(shown)
    assert visible("c-greedy\u200b") == "c-greedy\\u200b"
    assert visible("\ufeffx\U000e0061") == "\\ufeffx\\U000e0061"
    assert visible("a\u2028b", multiline=True) == "a\\u2028b"


@given(st.text(st.characters(categories=("Cc", "Cf", "Zl", "Zp", "Cs", "Lu", "Nd", "Zs"))))
def test_no_neutralised_character_survives(text: str) -> None:
    for multiline in (False, True):
        shown = visible(text, multiline=multiline)
        kept = {"\n", "\t"} if multiline else set()
        assert all(c in kept or unicodedata.category(c) not in NEUTRALISED for c in shown)
    if all(unicodedata.category(c) not in NEUTRALISED for c in text):
        assert visible(text) == text
