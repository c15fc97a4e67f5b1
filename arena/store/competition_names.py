"""Names people see on the server (authors, bots): one script each, and never confusable
with a name someone else holds.

Two names are confusable when their *skeletons* match: NFKC, then every character
replaced by one representative of its class of look-alikes, then case-folded. The
classes come from the Unicode confusables table (TR39 data) as shipped by the
maintained ``confusable_homoglyphs`` package, closed under "looks like" and, for ASCII
letters, under case (other letters are folded after the mapping: folding them first
chains unrelated classes together). So ``I``, ``l`` and ``1`` share a class, so do
``O`` and ``0``, and Cyrillic ``а`` is Latin ``a``. A mix of scripts (Latin with
Cyrillic, say) is refused outright; Common and Inherited characters (digits, ``_``,
combining accents) mix with any script.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable

ALLOWED_MIX = ("COMMON", "INHERITED")
_MARKS = str.maketrans("", "", "\u200e\u200f")
"""The table wraps right-to-left characters in direction marks: not part of them."""


@functools.cache
def _classes() -> dict[str, str]:
    """Character -> its class representative (ASCII when the class has one)."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def find(ch: str) -> str:
        parent.setdefault(ch, ch)
        while parent[ch] != ch:
            parent[ch] = parent[parent[ch]]
            ch = parent[ch]
        return ch

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            keep, drop = sorted((ra, rb), key=lambda c: (not c.isascii(), c))
            parent[drop] = keep

    for ch, homoglyphs in confusables_data.items():
        for entry in homoglyphs:
            other = str(entry["c"]).translate(_MARKS)
            if len(ch) == 1 and len(other) == 1:
                union(ch, other)
    for code in range(0x21, 0x7F):
        ch = chr(code)
        if ch.isalpha():
            union(ch, ch.casefold())
    return {ch: find(ch) for ch in parent}


def skeleton(name: str) -> str:
    """What ``name`` looks like: equal skeletons, confusable names."""
    classes = _classes()
    text = unicodedata.normalize("NFKC", name)
    return "".join(classes.get(ch, ch) for ch in text).casefold()


def mixes_scripts(name: str) -> bool:
    from confusable_homoglyphs import confusables

    return bool(confusables.is_mixed_script(name, allowed_aliases=list(ALLOWED_MIX)))


def confusable_with(name: str, existing: Iterable[str]) -> str | None:
    """The first of ``existing`` that ``name`` could be mistaken for (itself excluded)."""
    mine = skeleton(name)
    for other in existing:
        if other != name and skeleton(other) == mine:
            return other
    return None
