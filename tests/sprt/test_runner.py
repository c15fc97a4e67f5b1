"""The SPRT loop, its ledger and resume, with a scripted player (no processes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from arena.sprt import Pentanomial, SprtBounds, SprtConfig, SprtError, Verdict, run_sprt
from arena.sprt.play import Leg
from arena.sprt.runner import load_specs
from arena.store.sprt import STORE_NAME, LegResult

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "bots" / "c-greedy"
RANDOM = ROOT / "bots" / "python-random"


class ScriptedPlayer:
    """Plays a leg by asking ``points(pair, leg)``; can stop (like Ctrl-C) after N games."""

    def __init__(self, points: Callable[[int, int], float], stop_after: int | None = None):
        self.points = points
        self.stop_after = stop_after
        self.played: list[tuple[int, int]] = []
        self.closed = False

    def play(self, legs: Sequence[Leg]) -> Iterator[LegResult]:
        for leg in legs:
            if self.stop_after is not None and len(self.played) >= self.stop_after:
                raise KeyboardInterrupt
            self.played.append((leg.pair, leg.leg))
            yield LegResult(
                leg.pair,
                leg.leg,
                leg.game_id,
                leg.variant,
                leg.deal_seed,
                self.points(leg.pair, leg.leg),
                50,
                40,
                "normal",
                "",
                b"{}",
            )

    def close(self, abort: bool = False) -> None:
        self.closed = True


def config(tmp_path: Path, **kw: object) -> SprtConfig:
    base: dict[str, object] = {
        "new": GREEDY,
        "old": RANDOM,
        "bounds": SprtBounds(0, 100),
        "output": tmp_path / "t",
        "workers": 1,  # one leg at a time: where a test stops does not depend on the machine
    }
    base.update(kw)
    return SprtConfig(**base)  # type: ignore[arg-type]


def test_a_sweep_accepts_h1_and_stops_there(tmp_path: Path) -> None:
    player = ScriptedPlayer(lambda p, g: 1.0)
    status = run_sprt(config(tmp_path), player=player)
    assert status.verdict is Verdict.H1
    assert status.penta.ww == status.penta.pairs == len(player.played) // 2
    assert status.penta.pairs <= 13  # log(19) / log(s1/s0) ~ 12.1 pairs
    assert status.llr >= status.bounds.upper
    assert player.closed


def test_equal_bots_accept_h0_never_h1(tmp_path: Path) -> None:
    """Each pair is split (win one seat, lose the other): a pair score of exactly 1."""
    status = run_sprt(config(tmp_path), player=ScriptedPlayer(lambda p, g: float(g == 0)))
    assert status.verdict is Verdict.H0
    assert status.penta.wl_dd == status.penta.pairs


def test_each_pair_shares_its_deal_and_swaps_seats(tmp_path: Path) -> None:
    cfg = config(tmp_path, variants=("coloured", "gray"))
    legs = [cfg.leg(p, g) for p in range(4) for g in (0, 1)]
    for a, b in zip(legs[::2], legs[1::2], strict=True):
        assert (a.pair, a.deal_seed, a.variant) == (b.pair, b.deal_seed, b.variant)
        assert (a.leg, b.leg) == (0, 1)
    assert [leg.variant for leg in legs[::2]] == ["coloured", "gray", "coloured", "gray"]
    assert len({leg.deal_seed for leg in legs}) == 4


def test_max_pairs_stops_without_a_verdict_and_a_rerun_continues(tmp_path: Path) -> None:
    outcome = lambda p, g: 1.0 if (p + g) % 3 else 0.5  # noqa: E731
    first = ScriptedPlayer(outcome)
    status = run_sprt(config(tmp_path, max_pairs=3), player=first)
    assert status.verdict is Verdict.CONTINUE and status.stopped == "max_pairs"
    assert first.played == [(p, g) for p in range(3) for g in (0, 1)]
    second = ScriptedPlayer(outcome)
    resumed = run_sprt(config(tmp_path, max_pairs=50), player=second)
    assert second.played[:2] == [(3, 0), (3, 1)]  # nothing replayed
    fresh = run_sprt(config(tmp_path / "fresh", max_pairs=50), player=ScriptedPlayer(outcome))
    assert (resumed.penta, resumed.llr, resumed.verdict) == (fresh.penta, fresh.llr, fresh.verdict)


def test_an_interrupted_run_resumes_with_only_the_missing_legs(tmp_path: Path) -> None:
    outcome = lambda p, g: [1.0, 0.5, 0.0][(3 * p + g) % 3]  # noqa: E731
    with pytest.raises(KeyboardInterrupt):
        run_sprt(config(tmp_path, max_pairs=6), player=ScriptedPlayer(outcome, stop_after=5))
    second = ScriptedPlayer(outcome)
    resumed = run_sprt(config(tmp_path, max_pairs=6), player=second)
    assert second.played == [(2, 1), (3, 0), (3, 1), (4, 0), (4, 1), (5, 0), (5, 1)]
    assert resumed.games == 12 and resumed.games_before == 5
    fresh = run_sprt(config(tmp_path / "fresh", max_pairs=6), player=ScriptedPlayer(outcome))
    assert resumed.penta == fresh.penta


def test_a_decided_test_rerun_plays_nothing(tmp_path: Path) -> None:
    run_sprt(config(tmp_path), player=ScriptedPlayer(lambda p, g: 1.0))
    again = ScriptedPlayer(lambda p, g: 0.0)
    status = run_sprt(config(tmp_path), player=again)
    assert again.played == [] and status.verdict is Verdict.H1


def test_changed_settings_are_refused_with_an_explanation(tmp_path: Path) -> None:
    run_sprt(config(tmp_path, max_pairs=2), player=ScriptedPlayer(lambda p, g: 1.0))
    with pytest.raises(SprtError, match=r"elo1.*stored 100\.0, now 50\.0"):
        run_sprt(config(tmp_path, bounds=SprtBounds(0, 50)), player=ScriptedPlayer(lambda p, g: 1))
    # max_pairs and workers may change
    run_sprt(config(tmp_path, max_pairs=3, workers=2), player=ScriptedPlayer(lambda p, g: 1.0))


def test_a_damaged_ledger_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / STORE_NAME).write_bytes(b"this is not a database" * 100)
    from arena.store.sprt import SprtStoreError

    with pytest.raises(SprtStoreError, match="not a usable SPRT ledger: damaged"):
        run_sprt(config(tmp_path), player=ScriptedPlayer(lambda p, g: 1.0))


def test_same_named_bots_are_told_apart(tmp_path: Path) -> None:
    new, old = load_specs(config(tmp_path, new=GREEDY, old=GREEDY))
    assert (new.name, old.name) == ("c-greedy.new", "c-greedy.old")
    new, old = load_specs(config(tmp_path))
    assert (new.name, old.name) == ("c-greedy", "python-random")
    with pytest.raises(SprtError, match="not a folder"):
        load_specs(config(tmp_path, new=tmp_path / "missing"))


def test_summary_gives_the_interval_and_what_to_do_next(tmp_path: Path) -> None:
    from arena.sprt import SprtStatus
    from arena.sprt.command import summary

    status = SprtStatus(SprtBounds(0, 10), "new-bot", "old-bot")
    points = [1.0, 0.5, 0.0, 1.0, 0.5, 1.0, 0.0, 1.0]
    status.update({(i // 2, i % 2): x for i, x in enumerate(points)})
    assert status.penta == Pentanomial(0, 0, 2, 2, 0) and status.verdict is Verdict.CONTINUE
    text = "\n".join(summary(status, config(tmp_path), "arena sprt a b"))
    assert "95% CI" in text and "No decision" in text and "--max-pairs 4000" in text
    assert "leans towards H1" in text
    assert "W 4  D 2  L 2" in text
    assert "draw ratio 25.0% of games" in text and "LOS " in text
    assert status.to_json()["draw_ratio"] == 0.25 and 0.5 < status.los < 1.0


def test_each_ab_test_gets_its_own_default_folder(tmp_path: Path) -> None:
    """A second test of the same bots with other bounds needs no --out; a rerun of
    either finds its own folder and resumes it."""
    from arena.sprt.runner import default_output

    root = tmp_path / "results" / "sprt"
    first = config(tmp_path, max_pairs=2, bounds=SprtBounds(0, 100))
    first = replace(first, output=default_output(first, root))
    assert first.output == (root / "c-greedy-vs-python-random").resolve()
    run_sprt(first, player=ScriptedPlayer(lambda p, g: 1.0))
    second = config(tmp_path, max_pairs=2, bounds=SprtBounds(0, 50))
    second = replace(second, output=default_output(second, root))
    assert second.output == (root / "c-greedy-vs-python-random-2").resolve()
    run_sprt(second, player=ScriptedPlayer(lambda p, g: 1.0))
    again = config(tmp_path, max_pairs=3, bounds=SprtBounds(0, 100))
    assert default_output(again, root) == first.output
    player = ScriptedPlayer(lambda p, g: 1.0)
    resumed = run_sprt(replace(again, output=default_output(again, root)), player=player)
    assert resumed.games_before == 4 and player.played == [(2, 0), (2, 1)]


def test_a_changed_bot_is_flagged_on_resume(tmp_path: Path) -> None:
    import shutil

    bot = tmp_path / "mybot"
    shutil.copytree(RANDOM, bot, ignore=shutil.ignore_patterns("__pycache__"))
    cfg = config(tmp_path, new=bot, max_pairs=2)
    first = run_sprt(cfg, player=ScriptedPlayer(lambda p, g: 0.5))
    assert first.warnings == []
    (bot / "bot.py").write_text((bot / "bot.py").read_text() + "\n# tweak\n")
    resumed = run_sprt(
        config(tmp_path, new=bot, max_pairs=3), player=ScriptedPlayer(lambda p, g: 0.5)
    )
    assert len(resumed.warnings) == 1 and resumed.warnings[0].startswith("NEW's files changed")
    again = run_sprt(
        config(tmp_path, new=bot, max_pairs=4), player=ScriptedPlayer(lambda p, g: 0.5)
    )
    assert again.warnings == []  # the new version is the one on record now


def test_summary_points_a_faulting_bot_to_check_bot(tmp_path: Path) -> None:
    from arena.sprt import SprtStatus
    from arena.sprt.command import summary

    status = SprtStatus(SprtBounds(0, 10), "new-bot", "old-bot")
    status.update({(0, 0): 0.0, (0, 1): 0.0})
    status.faults = {"new:timeout": 2}
    text = "\n".join(summary(status, config(tmp_path), "arena sprt a b"))
    assert "new:timeout ×2" in text and f"arena check-bot {GREEDY}" in text
    assert "OLD faulted" not in text
