"""The bot pages' plots: reused figures and the worker pool draw what fresh figures do."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.report import build_report, load_results
from arena.report import site as site_module
from arena.report.plots import BotFigures, thin

from .helpers import game, make_store

BOTS = ("ann", "bob", "cat", "dan", "eve")


def _outdir(tmp_path: Path) -> Path:
    games = [
        game(i, (BOTS[i % 5], 30 + i, 1), (BOTS[(i + 1) % 5], 20 + 2 * i, 2)) for i in range(12)
    ]
    games.append(game(12, ("ann", 10, 2), ("bob", 15, 1), ("cat", 9, 3), ("dan", 9, 3)))
    return make_store(tmp_path, games)


def test_reused_figures_draw_each_bot_as_a_fresh_figure_does(tmp_path: Path) -> None:
    report = build_report(load_results(_outdir(tmp_path)), bootstrap=0)
    history = thin(report.ratings.history)
    reused = BotFigures()
    drawn = [
        (reused.rating_svg(history, b), reused.scores_svg(report.results.bot_scores(b)))
        for b in BOTS
    ]
    for bot, (rating, scores) in zip(BOTS, drawn, strict=True):
        fresh = BotFigures()
        assert fresh.rating_svg(history, bot) == rating
        assert fresh.scores_svg(report.results.bot_scores(bot)) == scores
        assert f">{bot}<" in rating and "players" in scores
    assert len({r for r, _ in drawn}) == len(BOTS)  # each bot its own line


@pytest.mark.parametrize("parallel_from", [1, 100])
def test_bot_plots_in_workers_equal_the_inline_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel_from: int
) -> None:
    report = build_report(load_results(_outdir(tmp_path)), bootstrap=0)
    monkeypatch.setattr(site_module, "PLOTS_PARALLEL_FROM", parallel_from)
    with site_module.BotPlots(report, list(BOTS)) as plots:
        drawn = plots.result()
    inline = BotFigures()
    history = thin(report.ratings.history)
    assert drawn == {
        b: (inline.rating_svg(history, b), inline.scores_svg(report.results.bot_scores(b)))
        for b in BOTS
    }
