"""process_submission: an uploaded archive, unpacked, built in the build sandbox under the
competition's limits and checked with check-bot, ends in a readable verdict and a log.

Real builds and real games (the machine's sandbox, default build cache), as the server
runs them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from arena.competition.config import UploadLimits
from arena.engine import Variant
from arena.errors import ArenaError
from arena.referee.clock import TimeControl
from arena.referee.settings import PlaySettings
from arena.sandbox import Level
from arena.server.submissions import process_submission
from arena.server.uploads import unpack_upload
from tests.kits.comp90054_standin import write_framework

from .upload_corpus import Member, make_tgz

REPO = Path(__file__).resolve().parents[2]
FAST = PlaySettings(time=TimeControl(init_ms=5000, move_ms=400))

GARBAGE_BOT = b"""\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        print(json.dumps({"type": "ready", "protocol": 1, "name": "garbage"}), flush=True)
    elif msg.get("type") == "decide":
        print("my move is \\x1b[31mthe\\u200b best\\u202e one", flush=True)
"""


def upload(tmp_path: Path, members: list[Member]) -> Path:
    """Members -> .tar.gz -> unpack_upload: the folder the server would process."""
    archive = make_tgz(tmp_path / "upload.tgz", members)
    return unpack_upload(archive, tmp_path / "unpacked", UploadLimits())


def manifest(name: str, command: str, build: str | None = None) -> Member:
    text = f'name = "{name}"\nlanguage = "python"\ncommand = "{command}"\n'
    if build:
        text += f"build = {json.dumps(build)}\n"  # a JSON string is a TOML basic string
    return Member("bot.toml", text.encode())


def test_the_check_covers_what_the_competition_plays_and_the_bot_declares(
    tmp_path: Path,
) -> None:
    src = REPO / "bots" / "python-random"
    files = [Member(f"two/{p.name}", p.read_bytes()) for p in sorted(src.iterdir())]
    files = [f for f in files if not f.name.endswith("bot.toml")]
    files.append(
        Member(
            "two/bot.toml",
            b'name = "two"\ncommand = "/usr/bin/python3 bot.py"\nplayers = [2]\n'
            b'walls = ["coloured"]\n',
        )
    )
    folder = upload(tmp_path, files)
    outcome = process_submission(
        folder, FAST, UploadLimits(), player_counts=(2, 4), walls=(Variant.COLOURED, Variant.GRAY)
    )
    assert outcome.ok, outcome.log
    assert "2p coloured" in outcome.log
    assert not [w for w in ("4p", "2p gray") if w in outcome.log], outcome.log
    (tmp_path / "again").mkdir()
    only4 = upload(tmp_path / "again", files)
    refused = process_submission(only4, FAST, UploadLimits(), player_counts=(4,))
    assert not refused.ok
    assert "declares players = [2]" in refused.verdict and "plays none" in refused.verdict


def test_a_course_agent_through_the_adapter_kit_is_accepted(tmp_path: Path) -> None:
    """The organiser declares the course framework as a python_env; the ladder plays 2 and
    4 players on both walls; the adapter kit declares 2 players, coloured."""
    tmp_path.chmod(0o755)
    framework = write_framework(tmp_path / "framework")
    src = REPO / "bots" / "comp90054-adapter"
    files = [Member(f"team/{p.name}", p.read_bytes()) for p in sorted(src.iterdir())]
    folder = upload(tmp_path, files)
    settings = FAST.model_copy(update={"python_env": (str(framework),)})
    outcome = process_submission(
        folder, settings, UploadLimits(), player_counts=(2, 4), walls=tuple(Variant)
    )
    assert outcome.ok, outcome.log
    assert "2p coloured" in outcome.log and "4p" not in outcome.log


def test_a_good_python_bot_is_accepted(tmp_path: Path) -> None:
    src = REPO / "bots" / "python-random"
    folder = upload(
        tmp_path,
        [Member(f"python-random/{p.name}", p.read_bytes()) for p in sorted(src.iterdir())],
    )
    outcome = process_submission(folder, FAST, UploadLimits())
    assert outcome.ok, outcome.log
    assert outcome.verdict.startswith("accepted: passed check-bot (6 games")
    assert outcome.built is not None and outcome.built.spec.name == "python-random"
    assert outcome.content_hash == outcome.built.version and len(outcome.content_hash) == 12
    assert outcome.meta["games"] == 6 and outcome.meta["faults"] == []
    assert "handshake" in outcome.log and "games 6 vs random" in outcome.log


def test_a_bot_that_fails_to_build_is_rejected_with_the_build_log_tail(tmp_path: Path) -> None:
    build = "echo compiling bot.c; echo 'bot.c:3:1: error: expected ; before }' >&2; exit 3"
    folder = upload(
        tmp_path, [manifest("broken-build", "./bot", build), Member("bot.c", b"int main(\n")]
    )
    outcome = process_submission(folder, FAST, UploadLimits())
    assert not outcome.ok and outcome.built is None
    assert outcome.verdict.startswith("rejected: building broken-build failed")
    assert "exit status 3" in outcome.verdict
    assert "error: expected ; before }" in outcome.log and "build FAILED" in outcome.log


def test_the_competitions_build_time_limit_applies(tmp_path: Path) -> None:
    folder = upload(tmp_path, [manifest("slow-build", "./bot", "sleep 30"), Member("x", b"")])
    outcome = process_submission(folder, FAST, UploadLimits(build_seconds=1))
    assert not outcome.ok
    assert "time limit of 1 s" in outcome.verdict, outcome.verdict


def test_a_bot_that_answers_garbage_is_rejected_by_check_bot(tmp_path: Path) -> None:
    folder = upload(
        tmp_path,
        [manifest("garbage", "/usr/bin/python3 bot.py"), Member("bot.py", GARBAGE_BOT)],
    )
    outcome = process_submission(folder, FAST, UploadLimits())
    assert not outcome.ok and outcome.built is not None
    assert outcome.verdict.startswith("rejected by check-bot: malformed in the 2-player")
    assert "how to fix malformed" in outcome.log
    # The bot's own line is shown, its escape sequence made visible, never raw.
    assert "\\x1b[31mthe\\u200b best\\u202e one" in outcome.log
    for raw in ("\x1b", "\u200b", "\u202e"):  # nor zero-width or bidi (issue 22)
        assert raw not in outcome.log and raw not in outcome.verdict


def test_a_bad_manifest_is_a_verdict_not_an_exception(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "x"\n')
    outcome = process_submission(folder, FAST, UploadLimits())
    assert not outcome.ok and "command" in outcome.verdict and str(tmp_path) not in outcome.log


def test_a_missing_sandbox_layer_under_strict_is_the_arenas_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.sandbox.spec import LayerStatus

    def missing() -> list[LayerStatus]:
        return [LayerStatus("bubblewrap", False, "not installed (apt-get install bubblewrap)")]

    import arena.sandbox.layers

    monkeypatch.setattr(arena.sandbox.layers, "detect_layers", missing)
    folder = tmp_path / "bot"
    shutil.copytree(REPO / "bots" / "python-random", folder)
    with pytest.raises(ArenaError, match="bubblewrap"):
        process_submission(folder, PlaySettings(sandbox=Level.STRICT), UploadLimits())
