"""Line plots as inline SVG, written here: axes with ticks and labels, a legend, an accessible
``<title>`` and ``<desc>``, and each point's value as a tooltip.

A line is told apart by colour (the Okabe–Ito palette, distinct for the common colour-vision
deficiencies), by dash pattern and by marker shape, so it stays readable in grey print. A NaN
value breaks its line. Every text is escaped here (:func:`ragjudge.report.text.html_text`);
the SVG uses presentation attributes only (no ``style``), so a page's Content-Security-Policy
needs no exception for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragjudge.report.text import exact, fmt, html_text

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#7F7F7F")
DASHES = ("", "7 4", "2 3", "9 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond", "cross")

WIDTH = 640
PLOT_HEIGHT = 280
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 20, 52
LEGEND_ROW = 22
LEGEND_COLUMNS = 3


@dataclass(frozen=True)
class Axis:
    label: str
    low: float
    high: float
    ticks: tuple[float, ...]
    digits: int


def nice_step(span: float, target: int = 5) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about ``target`` ticks over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def value_axis(label: str, values: Sequence[float]) -> Axis:
    """From 0 to 1, or to the next tick above the largest value when one exceeds 1 (DCG)."""
    finite = [v for v in values if math.isfinite(v)]
    top = max([1.0, *finite])
    bottom = min([0.0, *finite])
    step = nice_step(top - bottom)
    low = math.floor(bottom / step) * step
    high = math.ceil(top / step) * step
    ticks = tuple(round(low + i * step, 10) for i in range(int(round((high - low) / step)) + 1))
    return Axis(label, low, high, ticks, _digits(step))


def cutoff_axis(label: str, xs: Sequence[float]) -> Axis:
    """K from the smallest to the largest cutoff, ticks on whole numbers."""
    low, high = min(xs), max(xs)
    if high == low:
        low, high = low - 1, high + 1
    step = max(1.0, float(math.ceil(nice_step(high - low, 10))))
    first = math.ceil(low / step) * step
    ticks = tuple(first + i * step for i in range(int((high - first) // step) + 1))
    pad = (high - low) * 0.03  # the first and last points clear of the frame
    return Axis(label, low - pad, high + pad, ticks, 0)


def unit_axis(label: str) -> Axis:
    """0 to 1 in tenths (the recall levels), the first and last points clear of the frame."""
    return Axis(label, -0.03, 1.03, tuple(i / 10 for i in range(11)), 1)


def _digits(step: float) -> int:
    return max(0, -math.floor(math.log10(step))) if step < 1 else 0


def line_plot(plot_id: str, *, title: str, desc: str, x: Axis, y: Axis, xs: Sequence[float],
              series: Mapping[str, Sequence[float]]) -> str:
    """An SVG plot of each series (name -> y per x) against ``xs``; ``plot_id`` makes the ids of
    its title and description unique on the page."""
    names = list(series)
    rows = max(1, math.ceil(len(names) / LEGEND_COLUMNS))
    height = TOP + PLOT_HEIGHT + BOTTOM + rows * LEGEND_ROW + 8
    inner_w = WIDTH - LEFT - RIGHT

    def px(value: float) -> float:
        return LEFT + (value - x.low) / (x.high - x.low) * inner_w

    def py(value: float) -> float:
        return TOP + PLOT_HEIGHT - (value - y.low) / (y.high - y.low) * PLOT_HEIGHT

    pid = html_text(plot_id)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-labelledby="{pid}-title {pid}-desc" '
        f'id="{pid}">',
        f'<title id="{pid}-title">{html_text(title)}</title>',
        f'<desc id="{pid}-desc">{html_text(desc)}</desc>',
        f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{PLOT_HEIGHT}" fill="#ffffff" '
        'stroke="#bbbbbb"/>',
    ]
    parts += _grid(x, y, px, py)
    for i, name in enumerate(names):
        parts += _series(i, name, xs, series[name], x, px, py)
    parts += _legend(names, TOP + PLOT_HEIGHT + BOTTOM)
    parts.append("</svg>")
    return "\n".join(parts)


def _grid(x: Axis, y: Axis, px, py) -> list[str]:  # noqa: ANN001 - the plot's scales
    bottom, left = TOP + PLOT_HEIGHT, LEFT
    out = ['<g class="axes" font-size="12" fill="#222222">']
    for tick in y.ticks:
        at = py(tick)
        out.append(f'<line x1="{left}" x2="{WIDTH - RIGHT}" y1="{at:.1f}" y2="{at:.1f}" '
                   'stroke="#e6e6e6"/>')
        out.append(f'<line x1="{left - 5}" x2="{left}" y1="{at:.1f}" y2="{at:.1f}" stroke="#222222"/>')
        out.append(f'<text x="{left - 8}" y="{at + 4:.1f}" text-anchor="end">{tick:.{y.digits}f}</text>')
    for tick in x.ticks:
        at = px(tick)
        out.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{bottom}" y2="{bottom + 5}" stroke="#222222"/>')
        out.append(f'<text x="{at:.1f}" y="{bottom + 18}" text-anchor="middle">{tick:.{x.digits}f}</text>')
    out.append(f'<line x1="{left}" x2="{WIDTH - RIGHT}" y1="{bottom}" y2="{bottom}" stroke="#222222"/>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{TOP}" y2="{bottom}" stroke="#222222"/>')
    out.append(f'<text x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.1f}" y="{bottom + 38}" '
               f'text-anchor="middle" font-weight="bold">{html_text(x.label)}</text>')
    out.append(f'<text transform="translate(16 {TOP + PLOT_HEIGHT / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle" font-weight="bold">{html_text(y.label)}</text>')
    out.append("</g>")
    return out


def _marker(kind: str, cx: float, cy: float, color: str) -> str:
    if kind == "circle":
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{color}"'
    if kind == "square":
        return f'<rect x="{cx - 3.2:.1f}" y="{cy - 3.2:.1f}" width="6.4" height="6.4" fill="{color}"'
    if kind == "triangle":
        return (f'<polygon points="{cx:.1f},{cy - 4.2:.1f} {cx + 4:.1f},{cy + 3.2:.1f} '
                f'{cx - 4:.1f},{cy + 3.2:.1f}" fill="{color}"')
    if kind == "diamond":
        return (f'<polygon points="{cx:.1f},{cy - 4.5:.1f} {cx + 4.5:.1f},{cy:.1f} {cx:.1f},'
                f'{cy + 4.5:.1f} {cx - 4.5:.1f},{cy:.1f}" fill="{color}"')
    return (f'<path d="M{cx - 4:.1f},{cy - 4:.1f}L{cx + 4:.1f},{cy + 4:.1f}M{cx - 4:.1f},'
            f'{cy + 4:.1f}L{cx + 4:.1f},{cy - 4:.1f}" stroke="{color}" stroke-width="2" fill="none"')


def _look(i: int) -> tuple[str, str, str]:
    return (PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE) + i) % len(DASHES)],
            MARKERS[i % len(MARKERS)])


def _series(i: int, name: str, xs: Sequence[float], ys: Sequence[float], x: Axis,
            px, py) -> list[str]:  # noqa: ANN001 - the plot's scales
    color, dash, marker = _look(i)
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    out = [f'<g class="series" data-run="{html_text(name)}">']
    segment: list[str] = []
    for xv, yv in [*zip(xs, ys), (math.nan, math.nan)]:
        if math.isfinite(yv):
            segment.append(f"{px(xv):.1f},{py(yv):.1f}")
            continue
        if len(segment) > 1:
            out.append(f'<polyline points="{" ".join(segment)}" fill="none" stroke="{color}" '
                       f'stroke-width="2"{dashed}/>')
        segment = []
    label = html_text(name)
    for xv, yv in zip(xs, ys):
        if not math.isfinite(yv):
            continue
        where = f"{x.label} {xv:.{x.digits}f}" if x.digits else f"{x.label} {xv:g}"
        out.append(f'{_marker(marker, px(xv), py(yv), color)} data-x="{exact(xv)}" '
                   f'data-y="{exact(yv)}"><title>{label}: {html_text(where)}, {fmt(yv)}</title>'
                   f'</{_tag(marker)}>')
    out.append("</g>")
    return out


def _tag(marker: str) -> str:
    return {"circle": "circle", "square": "rect", "triangle": "polygon", "diamond": "polygon"}.get(marker, "path")


def _legend(names: Sequence[str], top: float) -> list[str]:
    out = ['<g class="legend" font-size="12" fill="#222222">']
    width = (WIDTH - LEFT - RIGHT) / LEGEND_COLUMNS
    for i, name in enumerate(names):
        color, dash, marker = _look(i)
        row, col = divmod(i, LEGEND_COLUMNS)
        x0 = LEFT + col * width
        y0 = top + row * LEGEND_ROW
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x0:.1f}" x2="{x0 + 28:.1f}" y1="{y0:.1f}" y2="{y0:.1f}" '
                   f'stroke="{color}" stroke-width="2"{dashed}/>')
        out.append(f"{_marker(marker, x0 + 14, y0, color)}/>")
        shown = name if len(name) <= 28 else name[:27] + "…"
        out.append(f'<text x="{x0 + 34:.1f}" y="{y0 + 4:.1f}">{html_text(shown)}</text>')
    out.append("</g>")
    return out


__all__ = ["Axis", "cutoff_axis", "line_plot", "nice_step", "unit_axis", "value_axis"]
