"""Throughput series: every throughput kind in one orientation, and where the warm-up ends.

Every kind is turned into *time per unit of work* ("slowness": seconds per step, or
1 / samples-per-second), so that "larger is worse" everywhere inside; results are
reported back in the metric's own unit. Medians commute with this monotone transform,
so a median ratio means the same in either orientation. Shared by the within-run
analysis (:mod:`tanalyze.analysis.throughput`) and the comparison against a baseline
(:mod:`tanalyze.analysis.throughput_compare`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.curves import Curve

__all__ = [
    "KINDS",
    "Kind",
    "Series",
    "detect_warmup",
    "from_slowness",
    "kind_info",
    "read_series",
    "slowness_of",
    "slowness_series",
    "to_slowness",
]


@dataclass(frozen=True)
class Kind:
    unit: str
    higher_is_better: bool
    to_seconds: float | None  # factor turning one value into seconds (time kinds only)


#: The throughput kinds: unit of the values, whether larger is better, seconds per unit.
KINDS: dict[str, Kind] = {
    "samples_per_s": Kind("samples/s", True, None),
    "tokens_per_s": Kind("tokens/s", True, None),
    "step_time_s": Kind("s/step", False, 1.0),
    "step_time_ms": Kind("ms/step", False, 1e-3),
    # derived from the wall-clock time between logged steps
    "wall_time": Kind("s/step", False, 1.0),
}


def kind_info(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown throughput kind {kind!r}; expected one of {sorted(KINDS)}") from None


@dataclass(frozen=True)
class Series:
    """Valid throughput points in the unit of ``kind``, their steps, and step gaps to the previous point."""

    steps: np.ndarray
    values: np.ndarray
    gaps: np.ndarray
    n_invalid: int
    source: str
    kind: str


def _dedupe_last(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the last written value of each step (curves are sorted by step, write order kept)."""
    if steps.size == 0:
        return steps, values
    last = np.r_[steps[1:] != steps[:-1], True]
    return steps[last], values[last]


def _from_wall_time(curve: Curve) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Seconds per step from wall-clock gaps between logged steps (or the values, if no wall times)."""
    stamps = curve.wall_time
    if np.isfinite(stamps).sum() < 2:
        stamps = curve.values  # e.g. a `_runtime` / `_timestamp` curve
    steps, stamps = _dedupe_last(curve.steps, stamps)
    keep = np.isfinite(stamps)
    dropped = int((~keep).sum())
    steps, stamps = steps[keep], stamps[keep]
    if steps.size < 2:
        return np.array([], dtype=np.int64), np.array([]), np.array([]), dropped
    dt = np.diff(stamps)
    ds = np.diff(steps).astype(np.float64)
    ok = (ds > 0) & (dt > 0)
    dropped += int((~ok).sum())
    return steps[1:][ok], dt[ok] / ds[ok], ds[ok], dropped


def read_series(curve: Curve | None, kind: str, wall_time_curve: Curve | None = None) -> Series:
    """The valid points of a throughput curve (finite and positive), or step times derived from wall time."""
    kind_info(kind)
    if curve is not None and kind != "wall_time":
        steps, values = _dedupe_last(curve.steps, curve.values)
        ok = np.isfinite(values) & (values > 0)
        steps, values = steps[ok], values[ok]
        gaps = np.diff(steps).astype(np.float64)
        # the first point's interval is unknown: assume the usual logging interval
        gaps = np.r_[np.median(gaps) if gaps.size else 1.0, gaps] if steps.size else gaps
        return Series(steps, values, gaps, int((~ok).sum()), "values", kind)
    source_curve = curve if curve is not None else wall_time_curve
    if source_curve is None:
        return Series(np.array([], dtype=np.int64), np.array([]), np.array([]), 0, "none", "wall_time")
    steps, values, gaps, dropped = _from_wall_time(source_curve)
    return Series(steps, values, gaps, dropped, f"wall-time gaps of {source_curve.tag!r}", "wall_time")


def slowness_series(
    curve: Curve | None, kind: str, wall_time_curve: Curve | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, time-per-work)`` of a throughput curve: larger is slower for every kind."""
    s = read_series(curve, kind, wall_time_curve)
    return s.steps, to_slowness(s.values, s.kind)


def to_slowness(values: np.ndarray, kind: str) -> np.ndarray:
    return 1.0 / values if KINDS[kind].higher_is_better else values


def slowness_of(level: float, kind: str) -> float:
    return 1.0 / level if KINDS[kind].higher_is_better else level


def from_slowness(slowness: float, kind: str) -> float:
    return 1.0 / slowness if KINDS[kind].higher_is_better else slowness


def detect_warmup(
    slowness: np.ndarray,
    *,
    tolerance: float = 0.10,
    window: int | None = None,
    max_fraction: float = 0.5,
) -> int:
    """Index of the first point after warm-up (0 when there is none to see).

    Warm-up ends at the first point ``i`` from which, for ``window`` consecutive
    points, the forward rolling median over ``window`` points stays within
    ``tolerance`` (relative) of the level that follows it (the median of the next
    ``max(3·window, min(n/10, 1000))`` points). Comparing with the level that *follows* rather
    than with the end of the run keeps a later lasting drop from being mistaken
    for warm-up. Leading points that are themselves outside the band are skipped
    too (a slow first iteration: compilation, autotuning, cold caches). Only
    slowness counts: a start *faster* than what follows is not warm-up but the
    first level of a drop. Never more than ``max_fraction`` of the points; a run
    that never settles has no warm-up.
    """
    x = np.asarray(slowness, dtype=np.float64)
    n = x.size
    if n < 6:
        return 0
    w = int(window or min(50, max(3, n // 20)))
    span = max(3 * w, min(n // 10, 1000))
    limit = int(max_fraction * n)
    head = x[: limit + span + w]  # warm-up is only looked for in the first max_fraction of points
    forward = _forward_median(head, w)
    level = _forward_median(head, span)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = forward / level - 1.0 <= tolerance  # one-sided: a fast start is not warm-up
    settled = np.flatnonzero(np.convolve(inside.astype(np.int64), np.ones(w, dtype=np.int64), "valid") == w)
    if settled.size == 0 or settled[0] > limit:
        return 0
    start = int(settled[0])
    while start < limit and not x[start] / level[start] - 1.0 <= tolerance:
        start += 1
    return int(start)


def _forward_median(x: np.ndarray, window: int) -> np.ndarray:
    """Element i is the median of ``x[i : i + window]`` (the window shrinks at the end)."""
    return pd.Series(x[::-1]).rolling(window, min_periods=1).median().to_numpy()[::-1]
