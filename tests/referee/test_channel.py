"""The channel's fault evidence: what a bot writes after the line that faulted."""

from __future__ import annotations

import os
import time

from arena.referee.channel import Channel


def test_trailing_returns_the_next_line_and_keeps_it_for_reading() -> None:
    from_bot_r, from_bot_w = os.pipe()
    to_bot_r, to_bot_w = os.pipe()
    try:
        chan = Channel(to_bot_w, from_bot_r, max_line=1 << 16)
        os.write(from_bot_w, b"#\n")
        assert chan.read_line(time.monotonic() + 5) == b"#"
        os.write(from_bot_w, b'# There is insufficient memory\n{"type": "move"}\n')
        more = chan.trailing(time.monotonic() + 5)
        assert more.startswith(b"# There is insufficient memory\n")
        # Nothing is lost: the game may go on reading this bot (strikes policy).
        assert chan.read_line(time.monotonic() + 5) == b"# There is insufficient memory"
        assert chan.read_line(time.monotonic() + 5) == b'{"type": "move"}'
    finally:
        for fd in (from_bot_r, from_bot_w, to_bot_r, to_bot_w):
            os.close(fd)


def test_trailing_gives_up_at_its_deadline_when_the_bot_is_silent() -> None:
    from_bot_r, from_bot_w = os.pipe()
    to_bot_r, to_bot_w = os.pipe()
    try:
        chan = Channel(to_bot_w, from_bot_r, max_line=1 << 16)
        os.write(from_bot_w, b"partial")
        assert chan.trailing(time.monotonic()) == b"partial"
        os.close(from_bot_w)
        from_bot_w = -1
        assert chan.trailing(time.monotonic() + 5) == b"partial"  # EOF ends the wait
    finally:
        for fd in (from_bot_r, from_bot_w, to_bot_r, to_bot_w):
            if fd >= 0:
                os.close(fd)
