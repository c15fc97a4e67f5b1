"""The API's JSON is encoded by the standard library in one pass: byte for byte what
JSONResponse made of jsonable_encoder's output before (dataclasses, datetimes, sets)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from arena.server import views
from arena.server.api import json
from tests.server.web_helpers import make_site


@dataclass
class _Odd:
    when: datetime
    tags: frozenset[str]
    path: Path  # not known to the plain encoder: jsonable_encoder's way


def _same(data: object) -> None:
    assert json(data).body == JSONResponse(jsonable_encoder(data)).body


def test_the_views_encode_as_jsonable_encoder_did(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    store = site.store
    bot = views.bot_page(store, "alpha", None)
    game = views.game_page(store, site.games[0], None)
    assert bot is not None and game is not None
    _same(bot.api())
    _same(game.api())
    _same({"games": [views.game_api(g) for g in store.games(limit=5)]})
    _same({"nan-free": 1.5, "unicode": "é 名", "none": None, "nested": [{"a": (1, 2)}]})
    _same(_Odd(datetime(2026, 12, 1, tzinfo=UTC), frozenset({"x"}), Path("/tmp/x")))
