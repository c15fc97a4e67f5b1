"""Figures for the HTML report, as inline SVG text (no files, no network).

Uses ``matplotlib.figure.Figure`` directly (no pyplot): no global figure state and no GUI
backend, so it is safe inside the tournament runner. Output is byte-stable: fixed SVG id
salt and no date metadata.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

# Bot names are plain text ("$" is not maths); SVG text stays text (smaller, searchable);
# a fixed salt makes element ids reproducible.
_RC = {"text.parse_math": False, "svg.fonttype": "none", "svg.hashsalt": "azul-arena"}


_drawn: dict[str, str] = {}
"""Figures drawn in this process, by a hash of their inputs: report.html and the site's
index show the same rating plot, drawn once."""


def rating_history_svg(history: pd.DataFrame, order: Sequence[str]) -> str:
    """Conservative rating (mu - 3 sigma) of each bot after each game, schedule order."""
    history = thin(history)
    key = _content_key("history", history, list(order))
    if key not in _drawn:
        _drawn.clear()  # one report at a time: keep only the newest
        _drawn[key] = _rating_history_svg(history, order)
    return _drawn[key]


def _content_key(kind: str, frame: pd.DataFrame, extra: object) -> str:
    digest = hashlib.sha256(kind.encode())
    digest.update(repr((list(frame.columns), extra)).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return digest.hexdigest()


def _rating_history_svg(history: pd.DataFrame, order: Sequence[str]) -> str:
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
            _score_histograms(ax, seats)
        ax.set_xlabel("final score")
        ax.set_ylabel("games")
        ax.grid(alpha=0.3)
        return _svg(fig)


class BotFigures:
    """The two plots of every bot page, drawn on two figures set up once and reused.

    Setting up a figure (axes, ticks, labels, a constrained layout) is most of the cost of
    a small plot, which a report pays twice per bot; reusing them draws a bot's pair in
    about a third of the time. Same content as a fresh figure: one rating line with its
    legend inside the axes, score histograms per player count.
    """

    def __init__(self) -> None:
        self._rating: tuple[Figure, Any, Any] | None = None
        self._scores: tuple[Figure, Any] | None = None

    def rating_svg(self, history: pd.DataFrame, bot: str) -> str:
        """``bot``'s conservative rating after each game (``history`` already thinned)."""
        with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # stubs want literal keys
            if self._rating is None:
                fig = Figure(figsize=(9, 4.5))
                fig.subplots_adjust(left=0.08, right=0.98, bottom=0.12, top=0.96)
                ax = fig.add_subplot()
                (line,) = ax.plot([], [], linewidth=1.4, color=matplotlib.colormaps["tab10"](0))
                ax.set_xlabel("games rated (schedule order)")
                ax.set_ylabel("rating μ − 3σ")
                ax.grid(alpha=0.3)
                self._rating = (fig, ax, line)
            fig, ax, line = self._rating
            line.set_data(history["game"].to_numpy(), history[bot].to_numpy())
            line.set_label(bot)
            ax.relim()
            ax.autoscale_view()
            legend = ax.get_legend()
            if legend is not None:
                legend.remove()
            if len(history):
                ax.legend(loc="upper left", fontsize="small", frameon=False)
            return _svg(fig)

    def scores_svg(self, seats: pd.DataFrame) -> str:
        """Histogram of one bot's final scores, one series per player count."""
        if not len(seats):
            return score_distribution_svg(seats)
        with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # stubs want literal keys
            if self._scores is None:
                fig = Figure(figsize=(7, 3.2))
                fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.96)
                ax = fig.add_subplot()
                ax.set_xlabel("final score")
                ax.set_ylabel("games")
                ax.grid(alpha=0.3)
                self._scores = (fig, ax)
            fig, ax = self._scores
            for patch in list(ax.patches):
                patch.remove()
            ax.set_prop_cycle(None)  # the first series blue again
            _score_histograms(ax, seats)
            ax.relim()
            ax.autoscale_view()
            return _svg(fig)


def _score_histograms(ax: Any, seats: pd.DataFrame) -> None:
    top = max(int(seats["score"].max()), 1)
    bins = list(range(0, top + 6, max(1, (top + 5) // 30)))
    for n, group in seats.groupby("n_players"):
        ax.hist(group["score"], bins=bins, alpha=0.6, label=f"{n} players", histtype="stepfilled")
    ax.legend(fontsize="small", frameon=False)


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
