"""The Node.js kits read stdin with blocking reads (``fs.readSync``), not ``readline``: their
own line splitting must hold wherever the pipe splits the bytes: two requests in one read,
one request over several reads, a character split between two reads, and end of input."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from arena.kits import BOTS_DIR, kit_for

from .conftest import require_toolchain

DECIDE = {
    "type": "decide",
    "id": 7,
    "game_id": "g-\u00e9\u00e8\u20ac",  # multi-byte characters, split below
    "seat": 0,
    "decision": "draft",
    "time_left_ms": 1000,
    "options": [
        {"source": -1, "colour": c, "line": line} for c in range(5) for line in range(-1, 5)
    ],
}
"""js-random seeds its choice from ``game_id``: a character garbled by a split read would
change the index it plays."""


def _node_bot(language: str, tmp_path: Path) -> list[str]:
    kit = kit_for(language)
    require_toolchain(kit)
    folder = tmp_path / kit.folder
    shutil.copytree(BOTS_DIR / kit.folder, folder, ignore=shutil.ignore_patterns("build"))
    if language == "typescript":
        subprocess.run(["tsc", "-p", "tsconfig.json"], cwd=folder, check=True, timeout=120)
        return ["node", str(folder / "build" / "bot.js")]
    return ["node", str(folder / "bot.js")]


def _replies(command: list[str], writes: list[bytes], count: int) -> list[dict[str, object]]:
    """The bot's first ``count`` replies to ``writes`` (each its own write, read apart),
    then its exit status on end of input (it must exit by itself, with 0)."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for part in writes:
        proc.stdin.write(part)
        proc.stdin.flush()
        time.sleep(0.05)  # separate reads on the bot's side
    replies = [json.loads(proc.stdout.readline()) for _ in range(count)]
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    return replies


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_lines_are_split_on_bytes_wherever_the_pipe_splits_them(
    language: str, tmp_path: Path
) -> None:
    command = _node_bot(language, tmp_path)
    hello = json.dumps({"type": "hello", "protocol": 1}).encode() + b"\n"
    decide = json.dumps(DECIDE, ensure_ascii=False).encode() + b"\n"
    again = decide.replace(b'"id": 7', b'"id": 8')
    whole = _replies(command, [hello, decide, again, again], 4)
    assert whole[0]["type"] == "ready" and whole[0]["protocol"] == 1
    assert [r["id"] for r in whole[1:]] == [7, 8, 8]
    euro = decide.index("\u20ac".encode())
    # hello and the first bytes of a request in one write; the rest in two more writes,
    # the second starting inside the three bytes of the euro sign; then two requests in
    # one write.
    split = [hello + decide[:10], decide[10 : euro + 1], decide[euro + 1 :], again + again]
    assert _replies(command, split, 4) == whole
