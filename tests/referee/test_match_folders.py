"""``arena match`` never overwrites an earlier record."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.cli import main
from arena.play.match import new_match_folder


def test_same_second_matches_get_distinct_folders(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        folders = list(pool.map(lambda _: new_match_folder(tmp_path, "20260101-120000"), range(20)))
    assert len(set(folders)) == 20
    assert sorted(p.name for p in folders)[:3] == [
        "20260101-120000",
        "20260101-120000-10",
        "20260101-120000-11",
    ]
    assert all(p.is_dir() and not any(p.iterdir()) for p in folders)


def test_an_out_folder_with_a_record_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "record.json").write_text("{}")
    repo = Path(__file__).resolve().parents[2]
    bots = [str(repo / "bots" / "python-random"), str(repo / "bots" / "python-greedy")]
    assert main(["match", *bots, "--out", str(tmp_path)]) == 2
    assert "already holds a game record" in capsys.readouterr().err
    assert (tmp_path / "record.json").read_text() == "{}"
