"""Inline SVG plots drawn on the server: a dynamic table's freshness lag against its target, and its run durations.

SVG made here rather than by a JavaScript library: the page shows its plots with scripts off,
needs nothing beyond the daemon, and has no asset to build. Every text in a plot is made from
numbers (times, durations) or escaped; a hover shows each point's values (``<title>``).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence

from markupsafe import Markup, escape

__all__ = ["bars", "lag_plot"]

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 60, 12, 12, 34


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s" if seconds >= 10 or seconds == 0 else f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _clock(epoch: float, span: float) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    return moment.strftime("%H:%M:%S" if span < 86400 else "%m-%d %H:%M")


#: Tick steps of a duration axis, in seconds: round in the unit they are shown in.
_STEPS = (0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200,
          86400, 172800, 604800)
#: The narrowest time axis drawn (seconds): a lone point or two close runs still get a readable axis.
MIN_SPAN = 120.0


def _nice_max(value: float) -> float:
    """The top of a duration axis of four ticks: four times the first round step that reaches ``value``."""
    for step in _STEPS:
        if value <= 4 * step:
            return 4.0 * step
    return 4.0 * _STEPS[-1] * math.ceil(value / (4 * _STEPS[-1]))


class _Frame:
    def __init__(self, x0: float, x1: float, y1: float) -> None:
        # Widened to the left (the newest point stays at the right edge).
        self.x0, self.x1 = min(x0, x1 - MIN_SPAN), x1
        self.y1 = _nice_max(y1)

    def x(self, value: float) -> float:
        return LEFT + (value - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        return HEIGHT - BOTTOM - value / self.y1 * (HEIGHT - TOP - BOTTOM)

    def axes(self, unit_label: str) -> list[str]:
        parts = [f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>',
                 f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>']
        for i in range(5):
            value = self.y1 * i / 4
            y = self.y(value)
            parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
            parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                         f'{_duration(value)}</text>')
        span = self.x1 - self.x0
        for i in range(5):
            t = self.x0 + span * i / 4
            anchor = "start" if i == 0 else "end" if i == 4 else "middle"
            parts.append(f'<text class="tick" x="{self.x(t):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="{anchor}">'
                         f'{_clock(t, span)}</text>')
        parts.append(f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 4}" text-anchor="end">'
                     f'{escape(unit_label)}</text>')
        return parts


def _svg(label: str, parts: list[str], css_class: str) -> Markup:
    return Markup(f'<svg class="plot {css_class}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
                  f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(parts) + "</svg>")


def lag_plot(points: Sequence[tuple[float, float]], target: float | None) -> Markup:
    """The freshness lag over time (a sawtooth), its target as a dashed line; a point per change."""
    if not points:
        return Markup('<p class="empty" id="lag-plot-empty">No successful run yet: no lag to plot.</p>')
    top = max([lag for _, lag in points] + ([target] if target is not None else []))
    frame = _Frame(points[0][0], points[-1][0], top)
    parts = frame.axes("time (UTC) / lag")
    if target is not None:
        y = frame.y(target)
        parts.append(f'<line class="target" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        parts.append(f'<text class="target-label" x="{WIDTH - RIGHT - 4}" y="{y - 4:.1f}" text-anchor="end">'
                     f'target {_duration(target)}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{frame.x(t):.1f},{frame.y(lag):.1f}" for i, (t, lag) in enumerate(points))
    parts.append(f'<path class="lag" d="{path}"/>')
    span = frame.x1 - frame.x0
    for t, lag in points:
        over = target is not None and lag > target
        parts.append(f'<circle class="point{" over" if over else ""}" cx="{frame.x(t):.1f}" cy="{frame.y(lag):.1f}" '
                     f'r="3"><title>{_clock(t, span)}: lag {_duration(lag)}</title></circle>')
    return _svg("freshness lag over time against the target", parts, "lag-plot")


def bars(points: Sequence[tuple[float, float, bool]], label: str) -> Markup:
    """Run durations: (start time, seconds, succeeded) as dots on stems, failures marked."""
    if not points:
        return Markup('<p class="empty">No finished run yet.</p>')
    first, last = min(p[0] for p in points), max(p[0] for p in points)
    pad = max((last - first) * 0.03, MIN_SPAN / 2)
    frame = _Frame(first - pad, last + pad, max(p[1] for p in points))
    parts = frame.axes("run start (UTC) / duration")
    span = frame.x1 - frame.x0
    for t, seconds, ok in points:
        x, y = frame.x(t), frame.y(seconds)
        state = "ok" if ok else "failed"
        parts.append(f'<line class="stem {state}" x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<circle class="point {state}" cx="{x:.1f}" cy="{y:.1f}" r="3.5"><title>{_clock(t, span)}: '
                     f'{_duration(seconds)} {state}</title></circle>')
    return _svg(label, parts, "duration-plot")
