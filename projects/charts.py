"""Small charts drawn on the server as SVG (no chart library, nothing from a CDN).

Each chart scales with its container (a viewBox, width 100%), names itself for screen readers
(role="img" with a title) and is always shown beside a table of the same numbers, which is
what assistive technology reads (the template puts it there). Colours come from CSS classes
(static/css/portal.css), and every series also has a legend in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 28


@dataclass(frozen=True)
class Series:
    name: str
    css: str  # a class of static/css/portal.css: chart-ok, chart-bad, chart-muted, chart-line
    values: Sequence[float | None]


def stacked_bars(title: str, labels: Sequence[str], series: Sequence[Series]) -> SafeString:
    """One bar per label, its series stacked bottom-up (counts)."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(labels))]
    top = _nice_ceiling(max(totals, default=0))
    slot = _plot_width() / max(1, len(labels))
    shapes = []
    for i in range(len(labels)):
        base = 0.0
        for s in series:
            value = s.values[i] or 0
            if value:
                shapes.append(_rect(LEFT + i * slot + slot * 0.15, _y(base + value, top),
                                    slot * 0.7, _y(base, top) - _y(base + value, top), s.css,
                                    f"{labels[i]}: {value:g} {s.name.lower()}"))
            base += value
    return _svg(title, [*_y_axis(top, percent=False), *shapes, *_x_labels(labels, slot)])


def lines(title: str, labels: Sequence[str], series: Sequence[Series],
          targets: Sequence[tuple[str, float]] = ()) -> SafeString:
    """Rates (0 to 1) as lines with dots, targets as dashed lines; a week without data leaves
    a gap."""
    slot = _plot_width() / max(1, len(labels))
    shapes = []
    for name, target in targets:
        y = _y(target, 1.0)
        shapes.append(f'<line class="chart-target" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
                      f'y1="{y:.1f}" y2="{y:.1f}"><title>{escape(name)}: target {target:.0%}'
                      "</title></line>")
    for s in series:
        points = [(LEFT + (i + 0.5) * slot, _y(v, 1.0), v) for i, v in enumerate(s.values)]
        for run in _unbroken(points):
            if len(run) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in run)
                shapes.append(f'<polyline class="{s.css}" points="{path}" fill="none"/>')
        shapes.extend(f'<circle class="{s.css}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
                      f"<title>{escape(labels[i])}: {escape(s.name)} {v:.0%}</title></circle>"
                      for i, (x, y, v) in enumerate(points) if v is not None)
    return _svg(title, [*_y_axis(1.0, percent=True), *shapes, *_x_labels(labels, slot)])


def horizontal_bars(title: str, items: Sequence[tuple[str, int]]) -> SafeString:
    """One labelled bar per item (counts), longest first as given."""
    row = 26
    height = TOP + row * max(1, len(items)) + 8
    top = max((value for _, value in items), default=0) or 1
    label_width = 170
    span = WIDTH - RIGHT - label_width - 40
    shapes = []
    for i, (label, value) in enumerate(items):
        y = TOP + i * row
        width = span * value / top
        shapes.append(f'<text class="chart-label" x="{label_width - 6}" y="{y + 16}" '
                      f'text-anchor="end">{escape(label)}</text>')
        shapes.append(_rect(label_width, y + 4, width, row - 8, "chart-muted",
                            f"{label}: {value}"))
        shapes.append(f'<text class="chart-label" x="{label_width + width + 6:.1f}" '
                      f'y="{y + 16}">{value}</text>')
    return _svg(title, shapes, height=height)


def _svg(title: str, shapes: list[str], height: int = HEIGHT) -> SafeString:
    body = "".join(shapes)
    return mark_safe(  # noqa: S308  every text inside was escaped above
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'preserveAspectRatio="xMidYMid meet"><title>{escape(title)}</title>{body}</svg>')


def _rect(x: float, y: float, width: float, height: float, css: str, tip: str) -> str:
    return (f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{max(width, 0):.1f}" '
            f'height="{max(height, 0):.1f}"><title>{escape(tip)}</title></rect>')


def _y_axis(top: float, *, percent: bool) -> list[str]:
    shapes = []
    for step in range(5):
        value = top * step / 4
        y = _y(value, top)
        text = f"{value:.0%}" if percent else f"{value:g}"
        shapes.append(f'<line class="chart-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
                      f'y1="{y:.1f}" y2="{y:.1f}"/>')
        shapes.append(f'<text class="chart-label" x="{LEFT - 6}" y="{y + 4:.1f}" '
                      f'text-anchor="end">{text}</text>')
    return shapes


def _x_labels(labels: Sequence[str], slot: float) -> list[str]:
    # At most about eight labels fit; the table below has every one.
    every = max(1, round(len(labels) / 8))
    return [f'<text class="chart-label" x="{LEFT + (i + 0.5) * slot:.1f}" '
            f'y="{HEIGHT - 8}" text-anchor="middle">{escape(label)}</text>'
            for i, label in enumerate(labels) if i % every == 0]


def _unbroken(points: list[tuple[float, float, float | None]]
              ) -> list[list[tuple[float, float, float | None]]]:
    runs: list[list[tuple[float, float, float | None]]] = [[]]
    for point in points:
        if point[2] is None:
            runs.append([])
        else:
            runs[-1].append(point)
    return runs


def _y(value: float | None, top: float) -> float:
    plot = HEIGHT - TOP - BOTTOM
    return TOP + plot * (1 - (value or 0) / (top or 1))


def _plot_width() -> float:
    return WIDTH - LEFT - RIGHT


def _nice_ceiling(value: float) -> float:
    """The axis top: 4, 8, 20, 40... so the four grid lines fall on whole numbers."""
    if value <= 4:
        return 4
    step = 1
    while step * 4 < value:
        step = step * 2 if str(step)[0] in "15" else step * 5 // 2
    return step * 4
