"""The SPEC's "bot in 20 lines" really is a bot: it passes check-bot."""

from __future__ import annotations

from pathlib import Path

from arena.play.checkbot import check_bot
from arena.referee import SandboxSettings, TimeControl, load_bot

SPEC = Path(__file__).resolve().parents[2] / "protocol" / "SPEC.md"


def test_the_twenty_line_bot_passes_check_bot(tmp_path: Path) -> None:
    text = SPEC.read_text()
    section = text[text.index("## 13. A bot in 20 lines") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    assert len(code.strip().splitlines()) <= 20
    tmp_path.chmod(0o755)
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "bot.py").write_text(code)
    (folder / "bot.toml").write_text('name = "tiny"\ncommand = "/usr/bin/python3 bot.py"\n')
    folder.chmod(0o755)
    report = check_bot(load_bot(folder), SandboxSettings(), TimeControl(), games_per_setting=1)
    assert report.ok, report.faults
    assert report.reported["name"] == "tiny"
