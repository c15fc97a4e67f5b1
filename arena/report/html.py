"""``report.html``: one self-contained page (inline CSS and SVG; no scripts, no links out).

Tables are pandas HTML (escaped); the head-to-head heatmap is a pandas Styler with a
background gradient, whose CSS is inlined in a ``<style>`` block.
"""

from __future__ import annotations

import re

import jinja2
import pandas as pd
from markupsafe import Markup

from arena.report.build import Report
from arena.report.format import MISSING, leaderboard_display, percent
from arena.report.markdown import TITLE
from arena.report.plots import rating_history_svg
from arena.report.sections import overview_lines, sections

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 90rem; padding: 0 1rem; color: #1d232a; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; }
p.note { color: #4a5560; max-width: 60rem; font-size: 0.92rem; }
ul.overview { padding-left: 1.2rem; }
.status-incomplete { color: #a15c00; font-weight: 600; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0; }
th, td { border: 1px solid #d6dbe0; padding: 0.2rem 0.4rem; text-align: right;
         white-space: nowrap; }
th { background: #f1f4f7; white-space: normal; vertical-align: bottom; }
th.text, td.text { text-align: left; }
td.text { white-space: normal; min-width: 4rem; }
td.text:first-child, td.text:nth-child(2) { white-space: nowrap; }
@media (max-width: 600px) {
  body { margin: 1rem auto; padding: 0 0.6rem; }
  h1 { font-size: 1.3rem; }
  table { font-size: 0.78rem; }
  th, td { padding: 0.15rem 0.3rem; }
}
table.heatmap th.row_heading { text-align: left; }
.scroll { overflow-x: auto; }
details summary { cursor: pointer; color: #1f5fbf; margin: 0.4rem 0; }
.sticky td:nth-child(2) { position: sticky; left: 0; background: #fff; }
.sticky th:nth-child(2) { position: sticky; left: 0; }
figure { margin: 0.5rem 0; } figure svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<ul class="overview">
{% for line in overview %}<li{% if loop.first and incomplete %} class="status-incomplete"{%
 endif %}>{{ line }}</li>
{% endfor %}</ul>
{% for section in sections %}
<h2 id="{{ section.key }}">{{ section.title }}</h2>
<p class="note">{{ section.note }}</p>
{% if section.fold %}<details><summary>Show all {{ section.rows }} rows</summary>
<div class="scroll">{{ section.html }}</div></details>{%
 elif section.rows %}<div class="scroll{% if section.key == "leaderboard" %} sticky{%
 endif %}">{{ section.html }}</div>{% endif %}
{% if section.key == "leaderboard" %}
<h2 id="rating_history">Rating over games</h2>
<p class="note">Conservative rating μ − 3σ of each bot after each finished game, in
schedule order (the order ratings are computed in).</p>
<figure>{{ plot }}</figure>
{% endif %}
{% endfor %}
</body>
</html>
"""


FOLD_ROWS = 40
"""A table with more rows is folded (``<details>``), so the page stays a readable summary
(an empty table is left out: its note says why)."""
UNFOLDED = ("leaderboard", "head_to_head")

_NUMERIC_CELL = re.compile(r"^(—|[-+−]?[\d.,]+%?|\d+–\d+)( ≈)?$")


def _table_html(frame: pd.DataFrame) -> Markup:
    """A display frame (all text) as an escaped HTML table; numbers right, text left."""
    environment = jinja2.Environment(autoescape=True)
    numeric = [all(_NUMERIC_CELL.match(str(v)) for v in frame[column]) for column in frame.columns]
    return Markup(
        environment.from_string(_TABLE).render(
            columns=[str(c) for c in frame.columns],
            align=["num" if n else "text" for n in numeric],
            rows=[[str(v) for v in row] for row in frame.itertuples(index=False)],
        )
    )


def heatmap_html(matrix: pd.DataFrame) -> Markup:
    """The head-to-head matrix coloured red (loses) to green (wins), as percentages."""
    if matrix.empty:
        return _table_html(pd.DataFrame())
    matrix = matrix.rename_axis(index=None, columns=None)
    styler = (
        matrix.style.background_gradient(cmap="RdYlGn", vmin=0.0, vmax=1.0, axis=None)
        .format(percent, na_rep=MISSING)
        .format_index(escape="html", axis=0)
        .format_index(escape="html", axis=1)
        .set_table_attributes('class="heatmap"')
    )
    styler = styler.highlight_null(color="#f1f4f7").set_uuid("h2h")
    return Markup(styler.to_html())


_TABLE = """<table>
<thead><tr>{% for c in columns %}<th class="{{ align[loop.index0] }}">{{ c }}</th>{%
 endfor %}</tr></thead>
<tbody>
{% for row in rows %}<tr>{% for v in row %}<td class="{{ align[loop.index0] }}">{{ v }}</td>{%
 endfor %}</tr>
{% endfor %}</tbody>
</table>"""


def render_html(report: Report) -> str:
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = environment.from_string(_TEMPLATE)
    rendered = []
    for section in sections(report):
        if section.key == "head_to_head":
            html = heatmap_html(report.head_to_head)
        elif section.key == "leaderboard":  # faults in one column: fits 1280 px
            html = _table_html(leaderboard_display(report.leaderboard, merge_faults=True))
        else:
            html = _table_html(section.table)
        rendered.append(
            {
                "key": section.key,
                "title": section.title,
                "note": section.note,
                "html": html,
                "rows": len(section.table),
                "fold": len(section.table) > FOLD_ROWS and section.key not in UNFOLDED,
            }
        )
    order = list(report.leaderboard["bot"])
    return template.render(
        title=TITLE,
        overview=overview_lines(report),
        incomplete=not report.summary["complete"],
        sections=rendered,
        plot=Markup(rating_history_svg(report.ratings.history, order)),
    )
