"""Figures for the HTML report, as inline SVG text (no files, no network).

Uses ``matplotlib.figure.Figure`` directly (no pyplot): no global figure state and no GUI
backend, so it is safe inside the tournament runner. Output is byte-stable: fixed SVG id
salt and no date metadata.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

# Bot names are plain text ("$" is not maths); SVG text stays text (smaller, searchable);
# a fixed salt makes element ids reproducible.
_RC = {"text.parse_math": False, "svg.fonttype": "none", "svg.hashsalt": "azul-arena"}


def rating_history_svg(history: pd.DataFrame, order: Sequence[str]) -> str:
    """Conservative rating (mu - 3 sigma) of each bot after each game, schedule order."""
    history = thin(history)
    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # stubs want literal keys
        fig = Figure(figsize=(9, 4.5), layout="constrained")
        ax = fig.add_subplot()
        # Beyond 10 bots the default colour cycle repeats; tab20 keeps 20 apart.
        colours = matplotlib.colormaps["tab20" if len(order) > 10 else "tab10"]
        for i, bot in enumerate(order):
            ax.plot(history["game"], history[bot], label=bot, linewidth=1.4, color=colours(i % 20))
        ax.set_xlabel("games rated (schedule order)")
        ax.set_ylabel("rating μ − 3σ")
        ax.grid(alpha=0.3)
        if len(order) and len(history):
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        return _svg(fig)


def score_distribution_svg(seats: pd.DataFrame) -> str:
    """Histogram of one bot's final scores (``seats`` rows of that bot), one series per
    player count."""
    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # stubs want literal keys
        # A fixed layout and one filled outline per series (not a patch per bin): a third
        # of the drawing time, which a report pays once per bot.
        fig = Figure(figsize=(7, 3.2))
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.96)
        ax = fig.add_subplot()
        if len(seats):
            top = max(int(seats["score"].max()), 1)
            bins = list(range(0, top + 6, max(1, (top + 5) // 30)))
            for n, group in seats.groupby("n_players"):
                ax.hist(
                    group["score"],
                    bins=bins,
                    alpha=0.6,
                    label=f"{n} players",
                    histtype="stepfilled",
                )
            ax.legend(fontsize="small", frameon=False)
        ax.set_xlabel("final score")
        ax.set_ylabel("games")
        ax.grid(alpha=0.3)
        return _svg(fig)


_NO_METADATA: dict[str, str | None] = {"Creator": None, "Date": None, "Format": None, "Type": None}


MAX_POINTS = 1500


def thin(history: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """At most ~``max_points`` evenly spaced rows (always the last), so the inline SVG of a
    long tournament stays small; the CSV keeps every game."""
    if len(history) <= max_points:
        return history
    step = -(-len(history) // max_points)
    keep = list(range(0, len(history), step))
    if keep[-1] != len(history) - 1:
        keep.append(len(history) - 1)
    return history.iloc[keep]


def _svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element for an HTML page.

    The XML prolog, DOCTYPE, RDF metadata and namespace declarations go: an HTML parser
    puts inline ``<svg>`` (and ``xlink:href``) in the right namespaces itself, and the page
    then contains no URL at all.
    """
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=_NO_METADATA)
    text = re.sub(r"^.*?(?=<svg)", "", buffer.getvalue(), count=1, flags=re.DOTALL)
    return re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", text)
