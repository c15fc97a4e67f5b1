"""Organiser toolchains in a tournament: one setting (``PlaySettings.toolchains``) that
reaches the builds, the workers' sandboxes, and the build-failure explanation."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.play.bots import ready_bot
from arena.play.job import GameJob, ScheduledGame
from arena.play.worker import WorkerState
from arena.tournament import ConfigError, load_config, run_tournament

REPO = Path(__file__).resolve().parents[2]
BOTS = [REPO / "bots" / "python-greedy", REPO / "bots" / "python-random"]


def config_with(tmp_path: Path, toolchains: list[str], bots: list[Path] = BOTS) -> Path:
    path = tmp_path / "t.toml"
    listed = ", ".join(f'"{b}"' for b in bots)
    declared = ", ".join(f'"{t}"' for t in toolchains)
    path.write_text(f'bots = [{listed}]\ntoolchains = [{declared}]\nsandbox = "off"\nseeds = 1\n')
    return path


def test_toolchains_are_validated_and_reach_the_play_settings(tmp_path: Path) -> None:
    tool = tmp_path / "jdk"
    tool.mkdir()
    cfg = load_config(config_with(tmp_path, [str(tool), "/usr/lib"]), {})
    assert cfg.toolchains == (str(tool),)  # /usr is visible anyway
    assert cfg.play.toolchains == (str(tool),)
    assert "toolchains" not in cfg.identity()  # may change on resume, like the sandbox level
    with pytest.raises(ConfigError, match=r"toolchains: .*must be absolute"):
        load_config(config_with(tmp_path, ["opt/jdk"]), {})
    with pytest.raises(ConfigError, match=r"toolchains: .*would shadow"):
        load_config(config_with(tmp_path, ["/proc/self"]), {})


def test_worker_sandboxes_show_the_toolchains(tmp_path: Path) -> None:
    tool = tmp_path / "go"
    tool.mkdir()
    cfg = load_config(config_with(tmp_path, [str(tool)]), {"output": str(tmp_path / "out")})
    bot = ready_bot(BOTS[0])
    game = ScheduledGame(0, "g0", 2, "coloured", 0, 1, 0, (bot.spec.name, bot.spec.name))
    job = GameJob(game=game, bots=(bot, bot), settings=cfg.play, persistent=True, log_dir=tmp_path)
    state = WorkerState(worker_id=0)
    try:
        seat = state.seat_for(job, 0, set())
        assert seat.sandbox.toolchains == (str(tool),)
    finally:
        state.close()


def test_a_build_program_missing_inside_is_explained(tmp_path: Path) -> None:
    bot = tmp_path / "needs-tool"
    bot.mkdir()
    (bot / "bot.toml").write_text(
        'name = "needs-tool"\ncommand = "./bot"\nbuild = "arena-no-such-compiler bot.c"\n'
    )
    tool = tmp_path / "tool"
    tool.mkdir()
    path = config_with(tmp_path, [str(tool)], bots=[bot, BOTS[1]])
    cfg = load_config(path, {"output": str(tmp_path / "out")})
    with pytest.raises(ConfigError) as caught:
        run_tournament(cfg)
    text = str(caught.value)
    assert "'arena-no-such-compiler' is not found inside the sandbox" in text
    assert f"the organiser's toolchains {tool}" in text
