"""The axis layer of the report's SVG figures: grid, tick marks, tick labels and axis labels.

matplotlib draws the data (lines, markers, bands, spines, titles) and chooses the
tick values (its locators, on the final view limits, through the axes'
transforms); this module writes those ticks as a few SVG primitives. Laying out
every tick label with FreeType is most of what an SVG save costs in matplotlib
(four fifths of a three-panel figure, measured); the browser lays out text for
free. Figures embedded as PNG keep matplotlib's own ticks (:func:`matplotlib_ticks`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.ticker import (
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
    NullLocator,
    ScalarFormatter,
)

__all__ = ["AxisSpec", "prepare", "layer", "matplotlib_ticks", "compact", "log_label", "linear_labels"]

GRID, TICK, LABEL, AXIS_LABEL = "#e5e7eb", "#9ca3af", "#6b7280", "#4b5563"
TICK_SIZE, TICK_FONT, LABEL_FONT = 3.0, 8.0, 9.0
#: Average advance of a tick-label character at ``TICK_FONT``, to keep the y-axis label clear of them.
CHAR_WIDTH = 0.6 * TICK_FONT


@dataclass
class AxisSpec:
    """What the axis layer draws for one axes: tick counts, scale, labels (text from logs allowed: escaped)."""

    ax: object
    log: bool = False
    xticks: int = 6
    yticks: int = 5
    xlabel: str = ""
    ylabel: str = ""


def compact(value: float, _pos: int | None = None) -> str:
    """Tick label for steps: 950, 12k, 1.5M."""
    magnitude = abs(value)
    for threshold, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= threshold:
            return f"{value / threshold:.4g}{suffix}"
    return f"{value:.4g}"


def log_label(value: float, _pos: int | None = None) -> str:
    """Tick label on a log axis, as plain text: 0.001, 1, 100, 1e6."""
    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = math.log10(value)
    return f"1e{int(round(exponent))}" if abs(exponent - round(exponent)) < 1e-9 else f"{value:.2g}"


def linear_labels(values: Sequence[float]) -> list[str]:
    """Labels for evenly spaced ticks, all with the decimals their spacing needs (0.6, 1.2, 1.8 …)."""
    values = [float(v) for v in values]
    if not values:
        return []
    span = max(abs(v) for v in values)
    step = min((b - a for a, b in zip(values, values[1:], strict=False) if b > a), default=span or 1.0)
    if span >= 1e5:
        return [compact(v) for v in values]
    if 0 < span < 1e-3:
        return [f"{v:.3g}" if v else "0" for v in values]
    tolerance = 1e-9 * max(span, step)
    decimals = next((d for d in range(10) if all(abs(round(v, d) - v) <= tolerance for v in values)), 10)
    labels = [f"{v:.{decimals}f}" for v in values]
    return ["0" if label.lstrip("-").strip("0.") == "" else label for label in labels]


def prepare(spec: AxisSpec) -> None:
    """Switch matplotlib's own ticks off for ``spec.ax`` (the layer draws them) and set its scale."""
    ax = spec.ax
    if spec.log:
        ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(NullLocator())
        axis.set_minor_locator(NullLocator())
    ax.margins(x=0.01)


def _x_locator(spec: AxisSpec) -> MaxNLocator:
    return MaxNLocator(nbins=spec.xticks, integer=True)


def _y_locator(spec: AxisSpec):
    return LogLocator(base=10, numticks=spec.yticks + 1) if spec.log else MaxNLocator(nbins=spec.yticks)


def matplotlib_ticks(spec: AxisSpec) -> None:
    """Give ``spec.ax`` matplotlib's own ticks, grid and labels (for a figure saved as PNG)."""
    ax = spec.ax
    ax.xaxis.set_major_locator(_x_locator(spec))
    ax.xaxis.set_major_formatter(FuncFormatter(compact))
    ax.yaxis.set_major_locator(_y_locator(spec))
    ax.yaxis.set_major_formatter(FuncFormatter(log_label) if spec.log else ScalarFormatter(useOffset=False))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, color=GRID, linewidth=0.6)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)


def _ticks(locator, lo: float, hi: float) -> np.ndarray:
    values = np.asarray(locator.tick_values(lo, hi), dtype=np.float64)
    tolerance = 1e-9 * max(abs(hi - lo), 1e-300)
    return values[(values >= lo - tolerance) & (values <= hi + tolerance)]


def _f(value: float) -> str:
    return f"{value:.1f}"


def layer(height: float, specs: Sequence[AxisSpec]) -> tuple[str, str]:
    """SVG for the grid (to go under the data) and for ticks and labels (to go over it).

    ``height`` is the figure's height in points; the figure must have been drawn
    at 72 dpi so that display coordinates are SVG user units (y pointing up).
    """
    grid: list[str] = []
    marks: list[str] = []
    texts: list[str] = []
    for spec in specs:
        ax = spec.ax
        if not ax.get_visible():
            continue
        x0, y0, x1, y1 = ax.bbox.extents
        top, bottom = height - y1, height - y0
        xlo, xhi = sorted(ax.get_xlim())
        ylo, yhi = sorted(ax.get_ylim())
        xs = _ticks(_x_locator(spec), xlo, xhi)
        if xs.size:
            px = ax.transData.transform(np.column_stack([xs, np.full(xs.size, ylo if not spec.log else max(ylo, 1e-300))]))[:, 0]
            for value, x in zip(xs, px, strict=True):
                grid.append(f"M{_f(x)} {_f(top)}V{_f(bottom)}")
                marks.append(f"M{_f(x)} {_f(bottom)}v{TICK_SIZE:g}")
                texts.append(f'<text x="{_f(x)}" y="{_f(bottom + TICK_SIZE + TICK_FONT + 1)}" '
                             f'text-anchor="middle">{html.escape(compact(value))}</text>')
        ys = _ticks(_y_locator(spec), ylo, yhi)
        if spec.log:
            ys = ys[ys > 0]
        widest = 0
        if ys.size:
            py = height - ax.transData.transform(np.column_stack([np.full(ys.size, xlo), ys]))[:, 1]
            labels = [log_label(v) for v in ys] if spec.log else linear_labels(ys)
            for label, y in zip(labels, py, strict=True):
                grid.append(f"M{_f(x0)} {_f(y)}H{_f(x1)}")
                marks.append(f"M{_f(x0)} {_f(y)}h{-TICK_SIZE:g}")
                texts.append(f'<text x="{_f(x0 - TICK_SIZE - 2)}" y="{_f(y + TICK_FONT * 0.35)}" '
                             f'text-anchor="end">{html.escape(label)}</text>')
                widest = max(widest, len(label))
        if spec.xlabel:
            texts.append(f'<text class="axis-label" x="{_f((x0 + x1) / 2)}" '
                         f'y="{_f(bottom + TICK_SIZE + TICK_FONT + LABEL_FONT + 5)}" text-anchor="middle">'
                         f"{html.escape(spec.xlabel)}</text>")
        if spec.ylabel:
            x = x0 - TICK_SIZE - 6 - widest * CHAR_WIDTH
            y = (top + bottom) / 2
            texts.append(f'<text class="axis-label" x="{_f(x)}" y="{_f(y)}" text-anchor="middle" '
                         f'transform="rotate(-90 {_f(x)} {_f(y)})">{html.escape(spec.ylabel)}</text>')
    under = (f'<path d="{"".join(grid)}" style="fill: none; stroke: {GRID}; stroke-width: 0.6"/>' if grid else "")
    over = ""
    if marks:
        over += f'<path d="{"".join(marks)}" style="fill: none; stroke: {TICK}; stroke-width: 0.6"/>'
    if texts:
        over += (f'<g style="font-size: {TICK_FONT:g}px; fill: {LABEL}">' + "".join(texts) + "</g>")
    over = over.replace('class="axis-label"', f'style="font-size: {LABEL_FONT:g}px; fill: {AXIS_LABEL}"')
    return under, over
