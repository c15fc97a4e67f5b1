"""The replay viewer's data and pages, without a browser."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.cli import main
from arena.engine import Game, parse_move, replay
from arena.recordio import save_record
from arena.viewer import position, replay_page, script_json, viewer_data
from arena.viewer.command import ViewError, replay_html

from .helpers import HOSTILE, random_record

REPO = Path(__file__).resolve().parents[2]


def expand(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The viewer script's expandFrames, in Python."""
    out = [frames[0]]
    for d in frames[1:]:
        nxt = copy.deepcopy(out[-1])
        for key, value in d.items():
            if key == "f":
                for i, tiles in value.items():
                    nxt["f"][int(i)] = tiles
            elif key == "p":
                for seat, changes in value.items():
                    nxt["p"][int(seat)].update(changes)
            else:
                nxt[key] = value
        out.append(nxt)
    return out


@pytest.mark.parametrize(("players", "variant"), [(2, "coloured"), (3, "gray"), (4, "gray")])
def test_one_position_per_decision_plus_the_end(players: int, variant: str) -> None:
    record = random_record(players, variant, seed=players)
    data = viewer_data(record, "g1")
    assert data["frames_encoding"] == "delta"
    data["frames"] = expand(data["frames"])
    decisions = [d for r in record.rounds for d in r.decisions]
    assert len(data["frames"]) == len(decisions) + 1
    first, last = data["frames"][0], data["frames"][-1]
    assert first["r"] == 1 and first["cp"] == 0 and first["m"] is True
    assert sum(len(f) for f in first["f"]) == 4 * {2: 5, 3: 7, 4: 9}[players]
    assert last["d"] == "over"
    assert [p["s"] for p in last["p"]] == [f.rounds for f in record.final]
    final_game = replay(record)
    walls = ["".join("." if c < 0 else "BYRKW"[c] for c in b.wall) for b in final_game.boards]
    assert [p["w"] for p in last["p"]] == walls
    if variant == "gray":
        assert any(f["d"] == "place" for f in data["frames"])
    # every position is the engine's own
    game = Game.new(players=players, variant=variant, seed=players)
    moves = [parse_move(d.move) for r in record.rounds for d in r.decisions]
    for step, move in enumerate(moves):
        assert data["frames"][step] == position(game), step
        game.apply(move)
    assert data["frames"][-1] == position(game)


@pytest.mark.parametrize(
    ("players", "variant", "seed"),
    [(2, "coloured", 7), (3, "coloured", 8), (4, "gray", 7), (2, "gray", 9), (4, "coloured", 3)],
)
def test_snapshots_taken_during_play_encode_the_positions_deltas(
    players: int, variant: str, seed: int
) -> None:
    """Snapshots taken during play and drawn after it, part by part where they differ: the
    frames are the first position drawn in full, then each next one's delta, and expand
    back into every position."""
    from arena.viewer.frames import delta, encode_frames, snapshot

    record = random_record(players, variant, seed=seed)
    game = Game.new(players=players, variant=variant, seed=seed)
    fresh, taken = [], []
    for move in [parse_move(d.move) for r in record.rounds for d in r.decisions]:
        fresh.append(position(game))
        taken.append(snapshot(game))
        game.apply(move)
    fresh.append(position(game))
    taken.append(snapshot(game))
    frames = encode_frames(taken)
    assert frames == [fresh[0], *(delta(a, b) for a, b in itertools.pairwise(fresh))]
    assert expand(frames) == fresh


def test_the_reproduce_line_has_seed_seats_and_variant() -> None:
    record = random_record(2, "gray", seed=7, names=["c-greedy", "js random"])
    assert viewer_data(record)["reproduce"] == (
        "arena match c-greedy 'js random' --variant gray --seed 7"
    )


def test_script_json_never_contains_markup_characters() -> None:
    text = script_json({"a": HOSTILE, "b": "\u2028"})
    assert not set("<>&") & set(text)
    assert json.loads(text) == {"a": HOSTILE, "b": "\u2028"}


def test_hostile_names_and_stderr_cannot_escape_the_data_element() -> None:
    record = random_record(2, seed=3, names=[HOSTILE, "b"], stderr=True, fault_seat=1)
    text = replay_page(viewer_data(record))
    assert "<img" not in text
    assert text.count("</script>") == 2  # the data element and the inlined viewer script
    assert "&lt;/script&gt;" in text  # the <title> is escaped HTML
    data = re.search(r'class="azul-game"[^>]*>(.*?)</script>', text, re.S)
    assert data is not None
    assert json.loads(data.group(1))["record"]["players"][0] == HOSTILE


def test_the_standalone_page_needs_no_network() -> None:
    text = replay_html(random_record(2, seed=5))
    assert "http://" not in text and "https://" not in text
    assert "<link" not in text and " src=" not in text


def test_a_record_that_does_not_verify_is_refused() -> None:
    record = random_record(2, seed=5)
    final = [f.model_copy(update={"total": f.total + 1}) for f in record.final]
    with pytest.raises(ViewError, match="does not verify"):
        replay_html(record.model_copy(update={"final": final}))


def test_old_records_without_stderr_still_view(tmp_path: Path) -> None:
    record = random_record(2, seed=9)
    raw = json.loads(record.model_dump_json())
    assert all("stderr" not in d for r in raw["rounds"] for d in r["decisions"])
    path = tmp_path / "old.json"
    path.write_text(json.dumps(raw))
    assert main(["view", str(path)]) == 0
    assert (tmp_path / "old.html").stat().st_size > 10_000


def test_arena_view_of_a_record_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "game.json.gz"
    save_record(random_record(3, "gray", seed=2), path)
    assert main(["view", str(path), "--out", str(tmp_path / "x.html")]) == 0
    assert "x.html" in capsys.readouterr().out
    assert "azul-game" in (tmp_path / "x.html").read_text()


def test_arena_view_explains_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["view", str(bad)]) == 2
    assert main(["view", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "not JSON" in err and "no such file" in err
    assert "Traceback" not in err


def test_arena_view_of_several_records_opens_each(tmp_path: Path) -> None:
    """``arena view results/matches/*/record.json --open`` as a user types it, two matches in."""
    matches = tmp_path / "results" / "matches"
    for i, name in enumerate(["20260101-120000", "20260101-120500"]):
        (matches / name).mkdir(parents=True)
        save_record(random_record(2, seed=20 + i), matches / name / "record.json")
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys\nopen({str(opened)!r}, 'a').write(sys.argv[1] + '\\n')\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s"}
    records = sorted(str(p) for p in matches.glob("*/record.json"))
    run = subprocess.run(
        [sys.executable, "-m", "arena.cli", "view", *records, "--open"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    pages = sorted(p for p in matches.glob("*/record.html"))
    assert len(pages) == 2 and all("azul-game" in p.read_text() for p in pages)
    assert run.stdout.splitlines() == [f"replay: {p}" for p in pages]
    assert sorted(opened.read_text().split()) == [p.resolve().as_uri() for p in pages]


def test_several_records_into_one_out_folder_must_not_collide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a" / "record.json", tmp_path / "b" / "record.json"
    for i, path in enumerate([a, b]):
        path.parent.mkdir()
        save_record(random_record(2, seed=30 + i), path)
    c = tmp_path / "other.json"
    save_record(random_record(2, seed=40), c)
    assert main(["view", str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "would both be written to" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert main(["view", str(a), str(c), "--out", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["other.html", "record.html"]
    assert main(["view", str(a), str(c), "--out", str(tmp_path / "one.html")]) == 2
