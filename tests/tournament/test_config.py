"""Tournament definitions: TOML and flags, with errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.tournament import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return path


def test_toml_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "b1").mkdir()
    (tmp_path / "b2").mkdir()
    cfg = load_config(
        write(tmp_path, 'bots = ["b1", "b2"]\nplayers = [2]\nseeds = 3\n[time]\nmove_ms = 200\n'),
        {},
    )
    assert cfg.bots == [tmp_path / "b1", tmp_path / "b2"]
    assert cfg.seeds == 3 and cfg.time.move_ms == 200
    assert cfg.output == (Path.cwd() / "results" / "tournament").resolve()


def test_flags_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'bots = ["a", "b"]\nseeds = 3\n')
    cfg = load_config(path, {"seeds": 7, "time": {"move_ms": 50, "bank_ms": None}})
    assert cfg.seeds == 7 and cfg.time.move_ms == 50


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('bots = ["a", "b"]\nseeds = 0', "seeds"),
        ('bots = ["a", "b"]\nplayers = [5]', "players"),
        ('bots = ["a", "b"]\nplayers = [3]', "players"),
        ('bots = ["a", "b"]\nvariants = ["purple"]', "variants"),
        ('bots = ["a", "b"]\nfault_policy = "sometimes"', "fault_policy"),
        ('bots = ["a", "b"]\ncolour = "blue"', "colour"),
        ('bots = ["a"]', "bots"),
        ('bots = ["a", "b"]\n[time]\nmove_ms = -5', "time.move_ms"),
    ],
)
def test_invalid_configs_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), {})
    assert f": {field}" in str(info.value)


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "bots = [\n"), {})
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.toml", {})
    with pytest.raises(ConfigError, match="no bot folders"):
        load_config(None, {})


def test_the_documented_example_config_is_valid(tmp_path: Path) -> None:
    """docs/tournaments.md's tournament file (tests/docs loads every TOML example too)."""
    doc = (REPO / "docs" / "tournaments.md").read_text()
    start = doc.index("```toml\nbots = [")
    text = doc[start + len("```toml\n") : doc.index("```", start + 7)]
    cfg = load_config(write(tmp_path, text), {})
    assert cfg.players == [2, 3] and cfg.variants == ["coloured", "gray"]
    assert cfg.time.move_ms == 1000 and cfg.persistent


def test_clock_from_file_and_flag(tmp_path: Path) -> None:
    from arena.referee.clock import DEFAULT_CLOCK, ClockKind

    assert load_config(None, {"bots": ["a", "b"]}).time.clock is DEFAULT_CLOCK
    path = write(tmp_path, 'bots = ["a", "b"]\n[time]\nclock = "wall"\n')
    cfg = load_config(path, {})
    assert cfg.time.clock is ClockKind.WALL
    cfg = load_config(path, {"time": {"clock": "cpu", "move_ms": None}})
    assert cfg.time.clock is ClockKind.CPU and cfg.time.wall_ceiling == 5
    with pytest.raises(ConfigError, match=r"time\.clock"):
        load_config(write(tmp_path, 'bots = ["a", "b"]\n[time]\nclock = "sundial"\n'), {})
