"""Generate the JSON Schemas in ``protocol/schemas/`` from the pydantic models.

The committed schema files are generated, never edited: ``arena schema`` rewrites
them and ``arena schema --check`` (run by the tests) fails when they are stale.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from arena.engine.observation import Observation
from arena.engine.record import GameRecord
from arena.protocol.messages import Decide, GameEnd, GameStart, Hello, MoveReply, Quit, Ready

SCHEMAS: dict[str, type[BaseModel]] = {
    "hello": Hello,
    "ready": Ready,
    "game_start": GameStart,
    "decide": Decide,
    "move": MoveReply,
    "game_end": GameEnd,
    "quit": Quit,
    "observation": Observation,
    "game_record": GameRecord,
}

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "protocol" / "schemas"


def render_schemas() -> dict[str, str]:
    """File name -> JSON text of every schema."""
    out = {}
    for name, model in SCHEMAS.items():
        schema = model.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"azul-arena/protocol/v1/{name}.json"
        out[f"{name}.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def write_schemas(folder: Path = DEFAULT_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_schemas().items():
        path = folder / name
        path.write_text(text)
        written.append(path)
    return written


def stale_schemas(folder: Path = DEFAULT_DIR) -> list[str]:
    """Names of schema files that are missing or differ from the models."""
    stale = []
    for name, text in render_schemas().items():
        path = folder / name
        if not path.exists() or path.read_text() != text:
            stale.append(name)
    return stale
