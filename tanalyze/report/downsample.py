"""Downsampling for drawing only: M4 (first, last, min and max of every pixel column).

A line drawn from the M4 points of each pixel column is pixel-identical to the
line drawn from every point (Jugel et al., "M4: A Visualization-Oriented Time
Series Data Aggregation", VLDB 2014): spikes survive, unlike with striding or
averaging. Numbers shown as text never come from here; they come from the full data.
"""

from __future__ import annotations

import numpy as np

__all__ = ["m4", "METHOD"]

#: How the page names the method in its footnote.
METHOD = "M4: first, last, minimum and maximum point of every pixel column"


def m4(x: np.ndarray, y: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep, for each of ``columns`` equal-width x bins, its first, last, lowest and highest point.

    ``x`` must be sorted ascending; ``y`` must be finite (drop non-finite points
    before, they are drawn as markers, not as line points). Returns at most
    ``4 * columns`` points in x order; short inputs come back unchanged.
    """
    x = np.asarray(x)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.shape} vs {y.shape}")
    if columns < 1:
        raise ValueError(f"columns must be positive, got {columns}")
    n = len(x)
    if n <= 4 * columns:
        return x, y
    x0, x1 = float(x[0]), float(x[-1])
    if x1 <= x0:
        bins = np.zeros(n, dtype=np.int64)
    else:
        bins = ((x.astype(np.float64) - x0) * (columns / (x1 - x0))).astype(np.int64)
        np.clip(bins, 0, columns - 1, out=bins)
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    counts = np.diff(np.r_[starts, n])
    keep = [starts, starts + counts - 1]
    # The first lowest and first highest point of each bin, in one pass (bins are contiguous: x is sorted).
    for extreme in (np.minimum, np.maximum):
        at = np.flatnonzero(y == np.repeat(extreme.reduceat(y, starts), counts))
        first = np.r_[True, bins[at][1:] != bins[at][:-1]]
        keep.append(at[first])
    keep = np.unique(np.concatenate(keep))
    return x[keep], y[keep]
