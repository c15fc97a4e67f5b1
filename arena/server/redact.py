"""What each viewer may see of a game record: stderr is private to the bot's author.

A bot's stderr can hold anything its author printed (debug dumps of its search, secrets it
read from its folder...). The public sees no stderr of any seat; an author sees the stderr
of the seats their own bots held; the organiser sees everything. Everything else in a
record (moves, scores, fault messages, the bot's last protocol line) is public.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

ALL_SEATS = None
"""``seats`` value for the organiser: nothing redacted."""


def redact_record(record: dict[str, Any], seats: Collection[int] | None) -> dict[str, Any]:
    """A copy of ``record`` (JSON of a game record) with the stderr of every seat not in
    ``seats`` removed (``None``: keep all)."""
    out = copy.deepcopy(record)
    if seats is ALL_SEATS:
        return out
    for rnd in out.get("rounds") or []:
        for decision in rnd.get("decisions") or []:
            if decision.get("seat") not in seats:
                decision.pop("stderr", None)
    for fault in out.get("faults") or []:
        if fault.get("seat") not in seats:
            fault["stderr_tail"] = None
    return out
