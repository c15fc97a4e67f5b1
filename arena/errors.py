"""One error family: every arena-side problem a user can fix derives from ``ArenaError``.

The CLI catches ``ArenaError`` and prints its message as one clear line (no traceback);
anything else is a bug. Subclasses say where the problem is (config, store, manifest...).
"""

from __future__ import annotations


class ArenaError(Exception):
    """A problem with the user's input or environment, with a message for the user.

    ``hint`` (optional) says what to do next, e.g. the command that resumes a run.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
