"""One logged curve as arrays, and the robust statistics analyzers share.

Analyzers take :class:`Curve` objects (every logged point, never a downsampled
copy) and return frozen results. Smoothing here is a feature for detection,
never a way to hide points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Curve", "mad", "robust_z", "debiased_ema"]

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
    as in TensorBoard's scalar dashboard.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    out = np.empty_like(values, dtype=np.float64)
    last = 0.0
    count = 0
    for i, value in enumerate(values):
        if not np.isfinite(value):
            out[i] = value
            continue
        last = last * weight + (1 - weight) * value
        count += 1
        out[i] = last / (1 - weight**count) if weight > 0 else value
    return out
