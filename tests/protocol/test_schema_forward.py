"""SPEC §10: bots must ignore unknown fields, so the schemas of messages *to* bots accept a
message from a later referee that carries new fields, at any depth."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from arena.protocol import Hello

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "protocol" / "schemas"
TRANSCRIPT = REPO / "protocol" / "transcripts" / "python-greedy-gray-seat0.txt"
TO_BOT = ["hello", "game_start", "decide", "game_end", "quit", "observation"]


def _real_messages() -> dict[str, list[dict[str, Any]]]:
    """Referee lines of a committed transcript (real referee output), by type; the
    observation is that of each ``decide``."""
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in TO_BOT}
    for line in TRANSCRIPT.read_text().splitlines():
        if line.startswith("> "):
            message = json.loads(line[2:])
            found[message["type"]].append(message)
            if message["type"] == "decide":
                found["observation"].append(message["observation"])
    # one draft and one place decision: both kinds of options
    decides = found["decide"]
    found["decide"] = [next(d for d in decides if d["decision"] == k) for k in ("draft", "place")]
    return found


def _from_the_future(value: Any) -> Any:
    """``value`` with a new field in every object, at every depth."""
    if isinstance(value, dict):
        grown = {k: _from_the_future(v) for k, v in value.items()}
        grown["added_in_v1_7"] = {"note": "bots must ignore me", "n": [1, 2]}
        return grown
    if isinstance(value, list):
        return [_from_the_future(v) for v in value]
    return value


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The schemas as ``arena schema --dir`` writes them."""
    folder = tmp_path_factory.mktemp("schemas")
    run = subprocess.run(
        [sys.executable, "-m", "arena.cli", "schema", "--dir", str(folder)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return folder


@pytest.mark.parametrize("name", TO_BOT)
@pytest.mark.parametrize("where", ["generated", "committed"])
def test_every_to_bot_schema_accepts_a_future_message(
    name: str, where: str, generated: Path
) -> None:
    folder = generated if where == "generated" else COMMITTED
    schema = json.loads((folder / f"{name}.json").read_text())
    validator = Draft202012Validator(schema)
    messages = _real_messages()[name]
    assert messages, name
    for message in messages:
        validator.validate(message)  # today's message
        future = _from_the_future(message)
        errors = [e.message for e in validator.iter_errors(future)]
        assert errors == [], (name, errors)
        broken = copy.deepcopy(future)
        broken["type" if name != "observation" else "round"] = ["not", "valid"]
        assert not validator.is_valid(broken)  # the schema still checks what it knows


def test_the_referee_still_writes_only_the_fields_it_documents() -> None:
    """The models behind the schemas stay strict: an unknown field in what the referee
    builds is a bug, caught here, not a field sent to bots."""
    hello = _real_messages()["hello"][0]
    assert Hello.model_validate(hello).persistent is False
    with pytest.raises(ValueError, match="Extra inputs"):
        Hello.model_validate({**hello, "typo": 1})
