"""Protocol v1: committed schemas are generated, and the fast encoder matches the models."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from arena.engine import Game
from arena.protocol import Decide, MoveReply, Ready
from arena.protocol.encode import encode_decide
from arena.protocol.schema import render_schemas, stale_schemas


def test_committed_schemas_are_not_stale() -> None:
    assert stale_schemas() == [], "regenerate with: arena schema"


def test_schema_check_detects_a_stale_file(tmp_path: Path) -> None:
    for name, text in render_schemas().items():
        (tmp_path / name).write_text(text)
    assert stale_schemas(tmp_path) == []
    (tmp_path / "move.json").write_text("{}")
    assert stale_schemas(tmp_path) == ["move.json"]


@pytest.mark.parametrize("variant", ["coloured", "gray"])
def test_fast_decide_encoding_is_a_valid_decide_message(variant: str) -> None:
    rng = random.Random(4)
    game = Game.new(players=3, variant=variant, seed=9)
    checked = 0
    while not game.is_over():
        options = game.legal_moves()
        line = encode_decide(7, "g", game.current_player, game, options, 500)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        message = Decide.model_validate_json(line)
        assert message.decision == game.decision.value
        assert len(message.options) == len(options)
        assert message.observation == game.observation()
        assert json.loads(line)["options"][0] == message.options[0].model_dump()
        checked += 1
        game.apply(rng.choice(options))
    assert checked > 50


def test_bot_messages_ignore_unknown_fields_and_reject_bad_types() -> None:
    reply = MoveReply.model_validate({"type": "move", "id": 3, "index": 1, "future": [1]})
    assert reply.index == 1
    with pytest.raises(ValidationError):
        MoveReply.model_validate({"type": "move", "id": 3, "index": "one"})
    with pytest.raises(ValidationError):
        Ready.model_validate({"type": "ready", "protocol": 1, "name": ""})


def test_committed_transcripts_follow_the_protocol() -> None:
    from pydantic import TypeAdapter

    from arena.protocol import BotMessage, RefereeMessage

    referee = TypeAdapter(RefereeMessage)
    bot = TypeAdapter(BotMessage)
    folder = Path(__file__).resolve().parents[2] / "protocol" / "transcripts"
    transcripts = sorted(folder.glob("*.txt"))
    assert transcripts
    for path in transcripts:
        kinds = []
        for line in path.read_text().splitlines():
            direction, text = line[:2], line[2:]
            message = (referee if direction == "> " else bot).validate_json(text)
            assert direction in ("> ", "< ")
            kinds.append(message.type)
        assert kinds[:2] == ["hello", "ready"] and kinds[-2:] == ["game_end", "quit"]
        assert kinds.count("decide") == kinds.count("move") > 0
