"""``report.md``: the report as Markdown tables (no extra dependency such as tabulate)."""

from __future__ import annotations

import pandas as pd

from arena.report.build import Report
from arena.report.sections import overview_lines, sections
from arena.textsafe import visible

TITLE = "Azul Arena tournament report"


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of a display frame (cells as text)."""

    def cell(value: object) -> str:
        return visible(str(value).replace("\n", " ")).replace("|", "\\|")

    if frame.columns.empty:
        return "_(nothing yet)_"
    lines = [
        "| " + " | ".join(cell(c) for c in frame.columns) + " |",
        "| " + " | ".join("---" for _ in frame.columns) + " |",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    if frame.empty:
        lines.append("| " + " | ".join("" for _ in frame.columns) + " |")
    return "\n".join(lines)


def render_markdown(report: Report) -> str:
    parts = [f"# {TITLE}", "", *(f"- {line}" for line in overview_lines(report)), ""]
    for section in sections(report):
        parts += [f"## {section.title}", "", section.note, "", markdown_table(section.table), ""]
    return "\n".join(parts)
