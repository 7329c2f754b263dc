"""Mixed precision: the dynamic fp16 loss scale and the optimizer steps skipped on overflow.

A scale that falls to its floor (or collapses late in the run) and many skipped steps after the start
mean overflowing gradients; a skip now and then is how dynamic loss scaling probes for a larger scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve

__all__ = ["LossScaleStats", "SkippedSteps", "loss_scale_finding", "loss_scale_stats", "skipped_finding",
           "skipped_steps"]


@dataclass(frozen=True)
class LossScaleStats(ResultMixin):
    """The dynamic fp16 loss scale (a plain factor, e.g. 65536)."""

    initial: float
    final: float
    minimum: float
    minimum_step: int
    n_decreases: int
    n_decreases_late: int  # in the second half of the run
    collapsed: bool


@dataclass(frozen=True)
class SkippedSteps(ResultMixin):
    """Optimizer steps skipped because of overflow/NaN."""

    total: int
    late: int  # after the first ``early_fraction`` of the run
    late_fraction: float  # late / steps after the first ``early_fraction``
    fraction: float  # total / steps covered by the curve
    steps: tuple[int, ...]  # logged steps at which skips were counted (first 100)
    interpretation: str  # "indicator" | "cumulative" | "per-interval"


def loss_scale_stats(curve: Curve, *, floor: float, late_drop: float) -> LossScaleStats | None:
    """The loss scale's levels and decreases; collapsed when it fell to ``floor`` or by ``late_drop``x in the
    second half of the run."""
    part = curve.finite_part()
    if len(part) == 0:
        return None
    v, s = part.values, part.steps
    drops = np.diff(v) < 0
    half = s[0] + (s[-1] - s[0]) / 2
    late = drops & (s[1:] > half)
    second = v[s >= half]
    late_collapse = second.size > 1 and np.max(second) / max(second[-1], 1e-300) >= late_drop
    j = int(np.argmin(v))
    return LossScaleStats(
        initial=float(v[0]),
        final=float(v[-1]),
        minimum=float(v[j]),
        minimum_step=int(s[j]),
        n_decreases=int(drops.sum()),
        n_decreases_late=int(late.sum()),
        collapsed=bool(v[j] <= floor or late_collapse),
    )


def skipped_steps(curve: Curve, *, cumulative: bool | None, early_fraction: float) -> SkippedSteps | None:
    """Skipped optimizer steps from an indicator, a cumulative counter or per-interval counts (see
    :func:`~tanalyze.analysis.gradients.analyze_gradients`)."""
    part = curve.finite_part()
    if len(part) == 0:
        return None
    last = np.r_[part.steps[1:] != part.steps[:-1], True]  # last write wins for a repeated step
    v, s = part.values[last], part.steps[last]
    if cumulative is None:
        if np.isin(v, (0.0, 1.0)).all():
            mode = "indicator"
        elif v.size > 1 and (np.diff(v) >= 0).all():
            mode = "cumulative"
        else:
            mode = "per-interval"
    else:
        mode = "cumulative" if cumulative else "per-interval"
    if mode == "cumulative":
        counts = np.diff(v, prepend=0.0).clip(min=0)
    else:
        counts = v.clip(min=0)
    # steps covered: from step 0 (a counter counts from the start) or the first logged step
    first = 0 if s[0] >= 0 and mode != "indicator" else s[0]
    span = max(int(s[-1] - first), 1)
    early_end = first + early_fraction * (s[-1] - first)
    total = int(round(counts.sum()))
    late = int(round(counts[s > early_end].sum()))
    late_span = max(float(s[-1] - early_end), 1.0)
    return SkippedSteps(
        total=total,
        late=late,
        late_fraction=float(late / late_span),
        fraction=float(total / span),
        steps=tuple(int(x) for x in s[counts > 0][:100]),
        interpretation=mode,
    )


def loss_scale_finding(scale: LossScaleStats, floor: float) -> Finding | None:
    """``loss_scale_collapse`` when the scale collapsed: an error when it reached ``floor``."""
    if not scale.collapsed:
        return None
    return Finding(
        "loss_scale_collapse",
        Severity.ERROR if scale.minimum <= floor else Severity.WARNING,
        f"fp16 loss scale fell from {scale.initial:g} to {scale.minimum:g} (step {scale.minimum_step}), "
        f"final {scale.final:g}; {scale.n_decreases} decreases, {scale.n_decreases_late} in the second half.",
        recommend("loss_scale_collapse"),
        step=scale.minimum_step,
        evidence=scale.to_dict(),
    )


def skipped_finding(skips: SkippedSteps, early_fraction: float, warn_fraction: float) -> Finding | None:
    """``skipped_steps``: a warning when more than 5 and ``warn_fraction`` of the later steps were skipped."""
    if skips.total <= 0:
        return None
    many_late = skips.late > 5 and skips.late_fraction >= warn_fraction
    return Finding(
        "skipped_steps",
        Severity.WARNING if many_late else Severity.INFO,
        f"{skips.total} optimizer step(s) skipped ({skips.fraction:.2%} of the steps covered), "
        f"{skips.late} ({skips.late_fraction:.2%}) after the first {early_fraction:.0%} of the run; "
        f"first at step {skips.steps[0] if skips.steps else '?'}.",
        recommend("skipped_steps"),
        step=skips.steps[0] if skips.steps else None,
        step_end=skips.steps[-1] if skips.steps else None,
        evidence=skips.to_dict(),
    )
