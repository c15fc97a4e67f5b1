"""Points formulas: the grammar is enforced, hostile text is refused, never evaluated."""

from __future__ import annotations

import math

import pytest

from arena.ratings.points import NAMES, FormulaError, parse_formula

VALUES = {"wins": 3, "ties": 2, "losses": 5, "points": 400, "faults": 4, "failed": 1, "games": 10}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50*wins + 20*ties + points", 590.0),
        ("3*wins + ties", 11.0),
        ("points / games", 40.0),
        ("-(wins - losses) * 2", 4.0),
        ("- -wins + +1.5", 4.5),
        ("(wins + ties) / (games - failed) - faults / 4", 5 / 9 - 1),
        ("10*failed", 10.0),
        ("  games  ", 10.0),
    ],
)
def test_formulas_of_the_grammar_evaluate(text: str, expected: float) -> None:
    assert parse_formula(text).evaluate(VALUES) == pytest.approx(expected)


def test_division_by_zero_is_no_value_not_an_error() -> None:
    assert math.isnan(parse_formula("points / games").evaluate(dict(VALUES, games=0)))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("__import__('os').system('true')", "__import__"),
        ("wins.__class__", "wins.__class__"),
        ("().__class__.__bases__[0]", "__class__"),
        ("abs(wins)", "abs(wins)"),
        ("open('/etc/passwd')", "open"),
        ("9**9**9", "**"),
        ("wins ** 2", "**"),
        ("lambda: 1", "lambda"),
        ("wins if ties else losses", "if"),
        ("wins < 3", "<"),
        ("wins and ties", "and"),
        ("[wins]", "[wins]"),
        ("'text'", "'text'"),
        ("score", "'score'"),
        ("True", "True"),
        ("2j", "2j"),
        ("~wins", "~wins"),
        ("wins // 2", "FloorDiv"),
        ("wins % 2", "Mod"),
        ("1" + "0" * 400, "too large"),
        ("1e999", "too large"),
        ("(wins", "not valid"),
        ("wins; import os", "not valid"),
        ("", "empty"),
        ("(" * 300 + "1" + ")" * 300, "longer than"),
        ("1+" * 80 + "1", "more than"),
    ],
)
def test_hostile_or_foreign_formulas_are_refused_naming_the_part(text: str, named: str) -> None:
    with pytest.raises(FormulaError) as caught:
        parse_formula(text)
    assert named in str(caught.value)


def test_unknown_name_lists_the_allowed_names() -> None:
    with pytest.raises(FormulaError, match="wins, ties, losses, points, faults, failed, games"):
        parse_formula("50*wins + bonus")
    assert set(NAMES) == set(VALUES)


def test_nothing_is_evaluated_by_python(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec used")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    assert parse_formula("2*wins").evaluate(VALUES) == 6.0
