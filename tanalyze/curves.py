"""One logged curve as arrays, and the robust statistics analyzers share.

Analyzers take :class:`Curve` objects (every logged point, never a downsampled
copy) and return frozen results. Smoothing here is a feature for detection,
never a way to hide points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "Curve",
    "mad",
    "robust_z",
    "debiased_ema",
    "noise_sigma",
    "theil_sen",
    "bin_medians",
    "trailing_median",
    "loss_space",
    "segment_medians",
    "quantum",
]

#: Scale factor that makes the MAD a consistent estimator of the standard deviation for normal data.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True, eq=False)
class Curve:
    """The points of one tag of one run, sorted by step (write order kept for equal steps)."""

    tag: str
    steps: np.ndarray
    values: np.ndarray
    wall_time: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, tag: str) -> Curve:
        """The curve of ``tag`` from a tidy table holding one run."""
        rows = frame[frame["tag"] == tag]
        order = np.argsort(rows["step"].to_numpy(), kind="stable")
        return cls(
            tag=tag,
            steps=rows["step"].to_numpy(dtype=np.int64)[order],
            values=rows["value"].to_numpy(dtype=np.float64)[order],
            wall_time=rows["wall_time"].to_numpy(dtype=np.float64)[order],
        )

    @classmethod
    def from_arrays(cls, steps, values, tag: str = "value", wall_time=None) -> Curve:
        steps_arr = np.asarray(steps, dtype=np.int64)
        values_arr = np.asarray(values, dtype=np.float64)
        if steps_arr.shape != values_arr.shape:
            raise ValueError(f"steps and values differ in length: {steps_arr.shape} vs {values_arr.shape}")
        wall = (
            np.full(len(steps_arr), np.nan) if wall_time is None else np.asarray(wall_time, dtype=np.float64)
        )
        order = np.argsort(steps_arr, kind="stable")
        return cls(tag=tag, steps=steps_arr[order], values=values_arr[order], wall_time=wall[order])

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        span = f"steps {self.steps[0]}..{self.steps[-1]}" if len(self) else "empty"
        return f"<Curve {self.tag!r}: {len(self)} points, {span}>"

    @property
    def finite(self) -> np.ndarray:
        """Boolean mask of finite values."""
        return np.isfinite(self.values)

    def finite_part(self) -> Curve:
        mask = self.finite
        return Curve(self.tag, self.steps[mask], self.values[mask], self.wall_time[mask])

    def between(self, first_step: int | None = None, last_step: int | None = None) -> Curve:
        """The points with ``first_step <= step <= last_step``."""
        mask = np.ones(len(self), dtype=bool)
        if first_step is not None:
            mask &= self.steps >= first_step
        if last_step is not None:
            mask &= self.steps <= last_step
        return Curve(self.tag, self.steps[mask], self.values[mask], self.wall_time[mask])

    @property
    def duplicate_steps(self) -> int:
        """How many points share their step with an earlier point (steps are sorted)."""
        return int(np.count_nonzero(np.diff(self.steps) == 0)) if len(self) > 1 else 0

    def collapse_steps(self) -> Curve:
        """One point per step: the mean of the points logged at that step.

        Some loggers write every batch with ``step = epoch`` (e.g. Ultralytics);
        the mean keeps every point's contribution. A step with a non-finite
        point stays non-finite (it is evidence).
        """
        if not self.duplicate_steps:
            return self
        start = np.flatnonzero(np.concatenate([[True], np.diff(self.steps) != 0]))
        counts = np.diff(np.append(start, len(self.steps)))
        with np.errstate(invalid="ignore", over="ignore"):
            values = np.add.reduceat(self.values, start) / counts
        wall = np.maximum.reduceat(np.nan_to_num(self.wall_time, nan=-np.inf), start)
        wall = np.where(np.isneginf(wall), np.nan, wall)
        return Curve(self.tag, self.steps[start], values, wall)

    def value_at(self, step: float) -> float:
        """The last value logged at or before ``step`` (NaN when none)."""
        index = int(np.searchsorted(self.steps, step, side="right")) - 1
        return float(self.values[index]) if index >= 0 else float("nan")


def mad(values: np.ndarray) -> float:
    """Median absolute deviation (unscaled) of the finite values; NaN when there are none."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan")
    return float(np.median(np.abs(finite - np.median(finite))))


def robust_z(values: np.ndarray, center: float, spread_mad: float) -> np.ndarray:
    """Robust z-scores ``(x - median) / (1.4826 · MAD)``; a zero MAD gives inf for any deviation."""
    scale = MAD_TO_SIGMA * spread_mad
    with np.errstate(divide="ignore", invalid="ignore"):
        return (
            (values - center) / scale
            if scale > 0
            else np.where(values == center, 0.0, np.inf * np.sign(values - center))
        )


def debiased_ema(values: np.ndarray, weight: float = 0.6) -> np.ndarray:
    """TensorBoard's smoothing: exponential moving average with zero-debiasing.

    Non-finite points are passed through unchanged and do not poison the average,
    as in TensorBoard's scalar dashboard. Vectorised with a linear filter.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    mask = np.isfinite(values)
    finite = values[mask]
    if weight == 0 or finite.size == 0:
        return out
    from scipy.signal import lfilter  # scipy.signal is slow to import; only smoothing needs it

    ema = lfilter([1 - weight], [1, -weight], finite)
    count = np.arange(1, finite.size + 1, dtype=np.float64)
    out[mask] = ema / (1 - weight**count)
    return out


def noise_sigma(values: np.ndarray) -> float:
    """Robust point-to-point noise level of a curve, blind to its trend.

    Uses second differences, which cancel any locally linear trend: for white
    noise of standard deviation s, ``Var(Δ²y) = 6 s²``, so
    ``s ≈ 1.4826 · MAD(Δ²y) / √6``. NaN with fewer than 4 finite points.
    """
    finite = values[np.isfinite(values)]
    if finite.size < 4:
        return float("nan")
    return MAD_TO_SIGMA * mad(np.diff(finite, 2)) / np.sqrt(6.0)


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Theil–Sen line ``(slope, intercept)``: the median of pairwise slopes, robust to outliers
    (:func:`scipy.stats.theilslopes`, intercept ``median(y - slope·x)``).

    Meant for at most a few hundred points (bin long curves first with
    :func:`bin_medians`); returns ``(nan, nan)`` for fewer than 2 distinct x.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < 2 or np.all(x == x[0]):
        return float("nan"), float("nan")
    from scipy.stats import theilslopes  # scipy.stats is slow to import; only trend fits need it

    fit = theilslopes(y, x, method="joint")
    return float(fit.slope), float(fit.intercept)


def bin_medians(x: np.ndarray, y: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Medians of ``x`` and ``y`` over ``bins`` consecutive groups of (nearly) equal point count.

    Every point contributes; this is a robust smoother for trend features, not a
    replacement for the points.
    """
    n = len(x)
    if n == 0:
        return np.empty(0), np.empty(0)
    bins = max(1, min(bins, n))
    if bins == n:
        return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    edges = np.linspace(0, n, bins + 1).round().astype(np.int64)
    starts, ends = edges[:-1], edges[1:]
    return segment_medians(np.asarray(x, dtype=np.float64), starts, ends), segment_medians(
        np.asarray(y, dtype=np.float64), starts, ends
    )


def trailing_median(values: np.ndarray, window: int, *, include_current: bool = False) -> np.ndarray:
    """For each point, the median of the ``window`` points before it (NaN for the first point).

    With ``include_current`` the window ends at the point itself (no NaN). Near
    the start the window is shorter: it is padded with the first value.
    ``values`` must be finite.
    """
    n = len(values)
    size = max(1, int(window)) | 1  # an odd size keeps the median a data value
    if n == 0:
        return np.empty(0)
    from scipy.ndimage import median_filter  # imported on use: scipy is slow to import

    including = median_filter(np.asarray(values, dtype=np.float64), size=size, mode="nearest", origin=size // 2)
    if include_current:
        return including
    out = np.full(n, np.nan)
    out[1:] = including[:-1]
    return out


def loss_space(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """Values in the space where a loss is analysed: ``log`` when all finite values are positive.

    Losses shrink over orders of magnitude and their noise scales with their
    level, so ratios (log differences) are the natural unit. Some losses can be
    zero or negative (ELBO, rewards, regression with offsets): those are kept
    linear. Returns the transformed values and whether the log was taken.
    """
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size and (finite > 0).all():
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(values), True
    return values.copy(), False


def segment_medians(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Median of ``values[starts[i]:ends[i]]`` for every segment (NaN for an empty one), in one sort.

    Segments must not overlap and must be in order. No Python loop over points or segments.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    sizes = ends - starts
    out = np.full(len(starts), np.nan)
    if len(starts) == 0 or sizes.sum() == 0:
        return out
    ok = sizes > 0
    width = int(sizes.max())
    if width * len(starts) <= 4 * int(sizes.sum()) + 64:
        # Nearly equal segments: sort a padded 2-D block row-wise (+inf pads sort last).
        column = np.arange(width)
        inside = column[None, :] < sizes[:, None]
        index = np.where(inside, starts[:, None] + column[None, :], 0)
        block = np.sort(np.where(inside, values[index], np.inf), axis=1)
        rows = np.flatnonzero(ok)
        lo, hi = (sizes[ok] - 1) // 2, sizes[ok] // 2
        out[ok] = (block[rows, lo] + block[rows, hi]) / 2
        return out
    # Very uneven segments: one sort of (segment, value) pairs.
    seg = np.repeat(np.arange(len(starts)), sizes)
    offset = np.cumsum(sizes) - sizes
    covered = np.repeat(starts, sizes) + (np.arange(sizes.sum()) - np.repeat(offset, sizes))
    order = np.lexsort((values[covered], seg))
    ranked = values[covered][order]
    lo = offset[ok] + (sizes[ok] - 1) // 2
    hi = offset[ok] + sizes[ok] // 2
    out[ok] = (ranked[lo] + ranked[hi]) / 2
    return out


def quantum(values: np.ndarray, max_decimals: int = 6) -> float:
    """The rounding step of values logged with a fixed number of decimals (HF Trainer 4.x rounds the loss to
    4: quantum 1e-4), or 0.0 when they are not rounded. Values stored as float32 count as rounded when they
    are within a thousandth of a quantum of a multiple of it."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size < 10:
        return 0.0
    for decimals in range(0, max_decimals + 1):
        scaled = finite * 10.0**decimals
        if np.abs(scaled).max() > 1e12:
            return 0.0
        if (np.abs(scaled - np.round(scaled)) < 1e-3).all():
            return 10.0**-decimals
    return 0.0
