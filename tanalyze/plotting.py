"""Drawing helpers shared by the ``plot(ax=None)`` methods: axes, safe labels, overlays.

Plotting only draws what a result already holds ("compute once, plot many"):
nothing here reads logs or runs an analyzer. matplotlib is imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tanalyze.curves import debiased_ema
from tanalyze.text import safe_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["PLOTTABLE_LIMIT", "axes", "label", "overlay", "plottable"]

#: Beyond this magnitude a value is drawn as a gap, as an infinity is: an axis around it (its margins) would
#: overflow to infinity, a log axis well before (a loss that blows up to 1e302 before it reaches inf).
PLOTTABLE_LIMIT = 1e100


def plottable(values: np.ndarray) -> np.ndarray:
    """Which values a figure can draw: finite and within :data:`PLOTTABLE_LIMIT`."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (np.abs(values) < PLOTTABLE_LIMIT)


def axes(ax: Axes | None, figsize: tuple[float, float] = (8, 4)) -> Axes:
    """``ax``, or a new figure's axes when None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def label(text: object, limit: int = 80) -> str:
    """Log text made safe for a matplotlib label or title.

    ``$`` would start mathtext (and an unbalanced one fails at draw time), and a
    legend silently drops labels that start with ``_``.
    """
    value = safe_text(text, limit).replace("$", r"\$")
    return "\u200b" + value if value.startswith("_") else value


def overlay(
    ax: Axes,
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    smooth: float = 0.0,
    colors: Sequence[Any] | None = None,
) -> Axes:
    """Draw one line per name from ``(steps, values)``; with ``smooth`` > 0 the raw points
    are drawn faint and TensorBoard's debiased EMA on top. Non-finite points (and any beyond
    :data:`PLOTTABLE_LIMIT`) are gaps."""
    palette = colors or [f"C{i % 10}" for i in range(len(curves))]
    for (name, (steps, values)), color in zip(curves.items(), palette, strict=False):
        values = np.where(plottable(values), values, np.nan)
        if smooth > 0:
            ax.plot(steps, values, color=color, alpha=0.25, linewidth=0.8)
            ax.plot(steps, debiased_ema(values, smooth), color=color, linewidth=1.4, label=label(name))
        else:
            ax.plot(steps, values, color=color, linewidth=1.2, label=label(name))
    return ax
