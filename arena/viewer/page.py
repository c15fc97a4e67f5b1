"""HTML pages around the viewer script: one self-contained file, or a page that links
the shared script (the report site, where thousands of replays share one copy).

Game data goes into ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u003c`` etc., so no bot-controlled string can close the element or
be read as markup; the script reads it with ``JSON.parse`` and only ever sets text.
"""

from __future__ import annotations

import html
from functools import cache
from importlib import resources
from typing import Any

import orjson

from arena.textsafe import visible

_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` at all).

    >>> script_json({"name": "</script><b>"})
    '{"name":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e"}'
    """
    text = orjson.dumps(data).decode()
    for char, escaped in _ESCAPES:  # str.replace: ~10x faster than str.translate here
        if char in text:
            text = text.replace(char, escaped)
    return text


_BYTE_ESCAPES = tuple((c.encode(), e.encode()) for c, e in _ESCAPES)


def script_safe(json_text: bytes) -> str:
    """JSON text made safe inside a ``<script>`` element, as :func:`script_json` makes
    its output (for JSON already written, e.g. spliced from stored parts)."""
    for char, escaped in _BYTE_ESCAPES:
        if char in json_text:
            json_text = json_text.replace(char, escaped)
    return json_text.decode()


@cache
def asset(name: str) -> str:
    """The text of a file shipped in ``arena/viewer/static`` (package data)."""
    return resources.files("arena.viewer").joinpath("static", name).read_text(encoding="utf-8")


def _inline_script(text: str) -> str:
    # The shipped script never contains "</script"; keep it that way even if edited.
    return text.replace("</script", "<\\/script")


def page(
    title: str,
    body: str,
    *,
    data: list[Any] | None = None,
    asset_prefix: str | None = None,
    extra_script: str = "",
    viewer: bool = True,
) -> str:
    """A complete HTML page.

    ``body`` is trusted HTML (callers escape what they put in it); ``data`` are the viewer
    data of the games to mount (element ids ``azul-viewer``, ``azul-viewer-1``...).
    With ``asset_prefix`` the page links ``{prefix}viewer.css`` and ``{prefix}viewer.js``;
    without, both are inlined and the file stands alone. ``viewer=False``: styles only.
    """
    if asset_prefix is None:
        head_assets = f"<style>{asset('viewer.css')}</style>"
        script = f"<script>{_inline_script(asset('viewer.js'))}</script>"
    else:
        prefix = html.escape(asset_prefix, quote=True)
        head_assets = f'<link rel="stylesheet" href="{prefix}viewer.css">'
        script = f'<script src="{prefix}viewer.js"></script>'
    if not viewer:
        script = ""
    blobs = "".join(
        f'<script type="application/json" class="azul-game" data-mount="{mount_id(i)}">'
        f"{script_json(item)}</script>"
        for i, item in enumerate(data or [])
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>{head_assets}</head>"
        f'<body class="az-body">{body}{blobs}{script}{extra_script}</body></html>\n'
    )


def mount_id(index: int) -> str:
    return "azul-viewer" if index == 0 else f"azul-viewer-{index}"


def replay_page(data: dict[str, Any], *, asset_prefix: str | None = None, nav: str = "") -> str:
    """``nav``: trusted HTML put above the viewer (the report site's links)."""
    # The replay of one game (``data`` from :func:`arena.viewer.frames.viewer_data`).
    record = data["record"]
    title = " vs ".join(visible(str(p)) for p in record["players"]) + " — Azul Arena replay"
    body = f'{nav}<main id="{mount_id(0)}" class="az-viewer">Loading the replay…</main>'
    return page(title, body, data=[data], asset_prefix=asset_prefix)


def replay_block_page(
    games: list[tuple[str, str]], *, asset_prefix: str, nav: str = "", title: str = ""
) -> str:
    """One page holding the viewer data of several games (``(game id, data as
    :func:`script_json` text)``), of which the viewer shows the one the address names
    (``#g=GAME_ID``, URL-encoded; the first without): a report site writes one such page
    per block of games instead of one file per game (creating a file costs more than
    writing a replay's data)."""
    prefix = html.escape(asset_prefix, quote=True)
    blobs = "".join(
        f'<script type="application/json" class="azul-game" data-mount="{mount_id(0)}" '
        f'data-game="{html.escape(game_id, quote=True)}">{data}</script>'
        for game_id, data in games
    )
    body = f'{nav}<main id="{mount_id(0)}" class="az-viewer">Loading the replay…</main>'
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title or 'Azul Arena replay')}</title>"
        f'<link rel="stylesheet" href="{prefix}viewer.css"></head>'
        f'<body class="az-body">{body}{blobs}<script src="{prefix}viewer.js"></script>'
        "</body></html>\n"
    )
