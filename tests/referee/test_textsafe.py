"""One sanitiser for every place bot text is shown."""

from __future__ import annotations

from arena.textsafe import visible


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
