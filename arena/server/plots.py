"""A bot's rating over its games as a small inline SVG (no script, no bot text in it)."""

from __future__ import annotations

from arena.store.competition_models import RatingPoint

WIDTH, HEIGHT = 640, 200
PAD_LEFT, PAD_RIGHT, PAD_Y = 44, 12, 14
COLOURS = ("#1f5fbf", "#c2571a", "#2e8540", "#8e44ad", "#b8860b")


def rating_svg(history: dict[int, list[RatingPoint]]) -> str:
    """μ of each version after each of its games (line) with μ ± 2σ (band), versions one
    after another along the x axis in the order they played.

    >>> from datetime import datetime, UTC
    >>> p = RatingPoint("g1", datetime(2026, 1, 1, tzinfo=UTC), 25.0, 8.3)
    >>> rating_svg({1: [p]}).startswith("<svg")
    True
    """
    series = [(number, points) for number, points in sorted(history.items()) if points]
    total = sum(len(points) for _, points in series)
    if total == 0:
        return ""
    lows = [p.mu - 2 * p.sigma for _, points in series for p in points]
    highs = [p.mu + 2 * p.sigma for _, points in series for p in points]
    low, high = min(lows), max(highs)
    if high - low < 1e-9:
        high = low + 1
    span_x = max(total - 1, 1)

    def x(i: int) -> float:
        return PAD_LEFT + (WIDTH - PAD_LEFT - PAD_RIGHT) * i / span_x

    def y(v: float) -> float:
        return HEIGHT - PAD_Y - (HEIGHT - 2 * PAD_Y) * (v - low) / (high - low)

    parts = [
        f'<svg class="az-plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="rating after each game" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{PAD_LEFT}" y1="{PAD_Y}" x2="{PAD_LEFT}" y2="{HEIGHT - PAD_Y}" '
        'stroke="#999" stroke-width="1"/>',
    ]
    for value in (low, (low + high) / 2, high):
        parts.append(
            f'<text x="{PAD_LEFT - 4}" y="{y(value) + 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#555">{value:.0f}</text>'
        )
    start = 0
    for k, (number, points) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        xs = [x(start + i) for i in range(len(points))]
        pairs = list(zip(xs, points, strict=True))
        upper = " ".join(f"{a:.1f},{y(p.mu + 2 * p.sigma):.1f}" for a, p in pairs)
        lower = " ".join(f"{a:.1f},{y(p.mu - 2 * p.sigma):.1f}" for a, p in reversed(pairs))
        line = " ".join(f"{a:.1f},{y(p.mu):.1f}" for a, p in pairs)
        parts.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.15"/>')
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(
            f'<text x="{xs[0] + 3:.1f}" y="{PAD_Y + 10}" font-size="11" '
            f'fill="{colour}">v{number}</text>'
        )
        start += len(points)
    parts.append("</svg>")
    return "".join(parts)
