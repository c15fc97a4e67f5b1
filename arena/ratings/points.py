"""Custom points formulas, e.g. ``50*wins + 20*ties + points``, parsed safely.

The organiser's text is parsed with ``ast`` and only this grammar is accepted::

    formula := term (("+" | "-") term)*
    term    := factor (("*" | "/") factor)*
    factor  := NUMBER | NAME | "-" factor | "+" factor | "(" formula ")"
    NAME    := wins | ties | losses | points | faults | failed | games

Anything else (calls, attributes, subscripts, ``**``, comparisons, lambdas, strings, ...)
is refused with a message naming the offending part. The text is never given to
``eval`` or ``exec``: the checked tree is walked here. Division by zero gives "no value"
(NaN), shown as a dash, rather than an error for one bot.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

NAMES = ("wins", "ties", "losses", "points", "faults", "failed", "games")
"""What a formula may use, per bot: outright wins (sole first place), ties (a shared first
place), losses (every other game), points (the sum of its final scores), faults (every
fault recorded), failed (games lost to crashes, timeouts or forfeits), games (played)."""
MAX_LENGTH = 500
MAX_NODES = 200

_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b if b != 0 else math.nan,
}


class FormulaError(ValueError):
    """A formula outside the grammar (the message says which part, for the organiser)."""


@dataclass(frozen=True)
class Formula:
    """A checked points formula; ``evaluate`` gives one bot's points."""

    text: str
    tree: ast.expr

    def evaluate(self, values: Mapping[str, float]) -> float:
        """The formula's value for ``values`` (every name of ``NAMES``); NaN where it
        divides by zero, and for an overflow."""
        try:
            result = _walk(self.tree, values)
        except OverflowError:
            return math.nan
        return result if math.isfinite(result) else math.nan


def parse_formula(text: str) -> Formula:
    """Check ``text`` against the grammar; raises ``FormulaError`` naming what is refused.

    >>> parse_formula("50*wins + 20*ties + points").evaluate(
    ...     dict(wins=2, ties=1, losses=0, points=90, faults=0, failed=0, games=3))
    210.0
    """
    if not text.strip():
        raise FormulaError("the points formula is empty")
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"the points formula is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"the points formula is not valid: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError):
        raise FormulaError("the points formula is not valid") from None
    nodes = list(ast.walk(tree.body))
    if len(nodes) > MAX_NODES:
        raise FormulaError(f"the points formula has more than {MAX_NODES} parts")
    for node in nodes:
        _check(node, text)
    return Formula(text.strip(), tree.body)


def _check(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _OPERATORS:
            symbol = "**" if isinstance(node.op, ast.Pow) else type(node.op).__name__
            raise FormulaError(
                f"the points formula may not use {symbol!r} (only + - * / and parentheses)"
            )
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise FormulaError(f"the points formula may not use {_part(node, text)!r}")
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormulaError(f"the points formula may not use {_part(node, text)!r}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise FormulaError(f"the number {_part(node, text)[:20]!r}... is too large")
    elif isinstance(node, ast.Name):
        if node.id not in NAMES:
            raise FormulaError(
                f"the points formula may not use {node.id!r}: the names are {', '.join(NAMES)}"
            )
    elif not isinstance(node, ast.operator | ast.unaryop | ast.expr_context):
        raise FormulaError(f"the points formula may not use {_part(node, text)!r}")


def _part(node: ast.AST, text: str) -> str:
    """The source text of ``node`` (cut short), for the error message."""
    segment = ast.get_source_segment(text.strip(), node) or type(node).__name__
    return segment if len(segment) <= 40 else segment[:37] + "..."


def _walk(node: ast.expr, values: Mapping[str, float]) -> float:
    if isinstance(node, ast.BinOp):
        return _OPERATORS[type(node.op)](_walk(node.left, values), _walk(node.right, values))
    if isinstance(node, ast.UnaryOp):
        inner = _walk(node.operand, values)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(values[node.id])
    raise FormulaError(f"unexpected part {type(node).__name__}")  # pragma: no cover
