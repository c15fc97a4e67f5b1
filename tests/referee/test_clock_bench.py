"""`arena bench clocks --json` end to end, small: the document's shape and what CPU clocks
guarantee whatever the host's load (no assertion on any duration)."""

from __future__ import annotations

import json

import pytest

from arena.cli import main

KEYS = {"false_timeouts", "decisions", "over_budget_timeouts", "over_budget_decisions"}


@pytest.mark.slow
def test_bench_clocks_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "clocks", "--json", "--oversubscription", "2", "--decisions", "2"]
    status = main([*argv, "--move-ms", "300"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["oversubscription"] == 2
    for clock in ("wall", "cpu"):
        tally = doc[clock]
        assert set(tally) >= KEYS
        assert tally["decisions"] == 2 * 1 and tally["over_budget_decisions"] == 2
        # 120 % of its time: over on either clock, every time (CPU <= wall for one thread).
        assert tally["over_budget_timeouts"] == tally["over_budget_decisions"]
        assert set(doc["baseline"][clock]) >= KEYS
    assert doc["cpu"]["false_timeouts"] == 0  # the harness's load is never the bot's fault
    assert doc["goal_met"] is True and status == 0


def test_bench_clocks_refuses_a_move_time_the_grace_would_swallow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "clocks", "--move-ms", "200"]) == 2
    assert "--time-per-move: a decision's time must be at least 300 ms" in capsys.readouterr().err
