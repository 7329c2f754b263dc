"""Resources: GPU memory (peak vs capacity, leaks, jumps), attention-entropy collapse, straggler ranks."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.gradient_layers import require_one_run
from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import autocorrelation_time, mann_whitney_p, quiet_numpy, rolling_median, thin
from tanalyze.analysis.throughput_series import detect_warmup
from tanalyze.curves import Curve

__all__ = [
    "MEMORY_UNITS",
    "MemoryJump",
    "MemoryStats",
    "AttentionHead",
    "RankTiming",
    "ResourceHealth",
    "analyze_resources",
]

#: Bytes per unit of a memory curve; "percent" means percent of the device's capacity.
MEMORY_UNITS: dict[str, float] = {
    "bytes": 1.0,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "KiB": 2.0**10,
    "MiB": 2.0**20,
    "GiB": 2.0**30,
    "percent": math.nan,
}


@dataclass(frozen=True)
class MemoryJump(ResultMixin):
    """A sudden lasting rise of memory between two logged points."""

    step: int
    before: float  # median level before, in MemoryStats.unit
    after: float  # median level after
    increase: float


@dataclass(frozen=True)
class MemoryStats(ResultMixin):
    """GPU memory over the run; all levels in ``unit`` ("bytes" or "%" of capacity)."""

    tag: str
    unit: str
    n_points: int
    warmup_end_step: int
    peak: float
    peak_step: int
    capacity: float | None
    peak_fraction: float | None  # peak / capacity
    capacity_threshold: float  # fraction of capacity that counts as "near"
    start_level: float  # median of the first tenth after warm-up
    end_level: float  # median of the last tenth
    slope_per_step: float | None  # Theil–Sen slope after warm-up, unit per step
    slope_ci: (
        tuple[float, float] | None
    )  # 95% CI of the slope, on samples thinned by the autocorrelation time
    growth_total: float | None  # slope × steps after warm-up
    growth_fraction: float | None  # growth_total / start_level
    steps_to_capacity: float | None  # at the current slope, from the last point
    jumps: tuple[MemoryJump, ...]


@dataclass(frozen=True)
class AttentionHead(ResultMixin):
    """One attention-entropy series (a layer, a head or the model average), in the logged unit (nats)."""

    tag: str
    layer: int | None
    head: int | None
    n_points: int
    early: float  # median of the first tenth
    late: float  # median of the last tenth
    minimum: float
    ratio: float  # late / early
    collapsed: bool
    collapse_step: int | None  # first step from which the smoothed entropy stays below the threshold


@dataclass(frozen=True)
class RankTiming(ResultMixin):
    """Steady step time of one rank against the others (in the unit of the per-rank curves)."""

    rank: int
    n_points: int
    unit: str  # of median/reference, as given by ``rank_time_unit``
    median: float
    reference: float  # median of the other ranks' medians
    lag_pct: float  # (median / reference - 1) × 100
    p_value: float | None
    method: str  # "paired per-step ratios (sign test)" or "Mann-Whitney U"
    straggler: bool


@dataclass(frozen=True)
class ResourceHealth(ResultMixin):
    memory: MemoryStats | None
    attention: tuple[AttentionHead, ...]
    ranks: tuple[RankTiming, ...]
    findings: tuple[Finding, ...]


def _finding(code: str, severity: Severity, message: str, **kw) -> Finding:
    return Finding(code, severity, message, recommend(code), **kw)


def _fmt_mem(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value / 2**30:.2f} GiB"


def _theil_sen(steps: np.ndarray, values: np.ndarray, max_points: int = 1500) -> tuple[float, float, float]:
    """Theil–Sen slope and its 95% CI, on points thinned by the residuals' autocorrelation time."""
    from scipy.stats import theilslopes

    slope0 = float(theilslopes(values, steps)[0]) if values.size <= max_points else None
    if slope0 is None:
        idx = np.linspace(0, values.size - 1, max_points).astype(int)
        slope0 = float(theilslopes(values[idx], steps[idx])[0])
    resid = values - slope0 * steps
    stride = max(1, math.ceil(autocorrelation_time(resid)), math.ceil(values.size / max_points))
    xs, ys = thin(steps, stride), thin(values, stride)
    if ys.size < 3:
        return slope0, -math.inf, math.inf
    slope, _, lo, hi = theilslopes(ys, xs, alpha=0.95)
    return float(slope0), float(lo), float(hi)


def _memory(
    curve: Curve,
    *,
    capacity_bytes: float | None,
    memory_unit: str,
    capacity_fraction: float,
    warmup_fraction: float,
    growth_min_fraction: float,
    jump_fraction: float,
) -> tuple[MemoryStats | None, list[Finding]]:
    if memory_unit not in MEMORY_UNITS:
        raise ValueError(f"unknown memory unit {memory_unit!r}; expected one of {sorted(MEMORY_UNITS)}")
    part = curve.finite_part()
    if len(part) < 2:
        return None, []
    if memory_unit == "percent":
        unit, values, capacity = "%", part.values, 100.0
    else:
        unit, values = "bytes", part.values * MEMORY_UNITS[memory_unit]
        capacity = capacity_bytes
    steps = part.steps
    findings: list[Finding] = []
    j = int(np.argmax(values))
    peak = float(values[j])
    frac = peak / capacity if capacity else None
    if frac is not None and frac >= capacity_fraction:
        findings.append(
            _finding(
                "memory_near_capacity",
                Severity.ERROR if frac >= 0.98 else Severity.WARNING,
                f"GPU memory peaked at {_fmt_mem(peak, unit)} at step {int(steps[j])}: {frac:.0%} of the "
                f"{_fmt_mem(capacity, unit)} capacity (threshold {capacity_fraction:.0%}).",  # type: ignore[arg-type]
                step=int(steps[j]),
                evidence={"peak": peak, "capacity": capacity, "unit": unit, "fraction": frac},
            )
        )

    start = int(warmup_fraction * values.size)
    w_steps, w_vals = steps[start:], values[start:]
    tenth = max(1, w_vals.size // 10)
    start_level = float(np.median(w_vals[:tenth]))
    end_level = float(np.median(w_vals[-tenth:]))

    # jumps: a rise between consecutive points that lasts (the next points stay up)
    jumps: list[MemoryJump] = []
    scale = capacity if capacity else max(float(np.median(w_vals)), 1e-300)
    threshold = jump_fraction * scale
    diffs = np.diff(w_vals)
    last_jump = -10
    for i in np.flatnonzero(diffs > threshold):
        if i - last_jump < 5:  # one jump spread over a few consecutive points
            continue
        last_jump = i
        before = float(np.median(w_vals[max(0, i - 4) : i + 1]))
        after = float(np.median(w_vals[i + 1 : i + 6]))
        if after - before > threshold / 2:
            jumps.append(MemoryJump(int(w_steps[i + 1]), before, after, after - before))
    for jump in jumps[:5]:
        findings.append(
            _finding(
                "memory_jump",
                Severity.WARNING
                if capacity and jump.after >= capacity_fraction * capacity
                else Severity.INFO,
                f"GPU memory jumped at step {jump.step}: {_fmt_mem(jump.before, unit)} → "
                f"{_fmt_mem(jump.after, unit)} (+{_fmt_mem(jump.increase, unit)}) and stayed up.",
                step=jump.step,
                evidence=jump.to_dict() | {"unit": unit},
            )
        )

    slope = lo = hi = growth = growth_frac = to_capacity = None
    if w_vals.size >= 10 and np.ptp(w_vals) > 0:
        slope, lo, hi = _theil_sen(w_steps.astype(np.float64), w_vals)
        span = float(w_steps[-1] - w_steps[0])
        growth = slope * span
        growth_frac = growth / start_level if start_level > 0 else None
        if capacity and slope > 0:
            to_capacity = max(0.0, (capacity - float(w_vals[-1])) / slope)
        quarters = [np.median(q) for q in np.array_split(w_vals, 4)]
        steady_rise = (
            all(b >= a for a, b in zip(quarters[:-1], quarters[1:], strict=True))
            and quarters[-1] > quarters[0]
        )
        largest_jump = float(max(diffs.max(), 0.0)) if diffs.size else 0.0
        spread = growth > 0 and largest_jump < 0.5 * growth
        if (
            lo > 0
            and growth_frac is not None
            and growth_frac >= growth_min_fraction
            and steady_rise
            and spread
        ):
            when = (
                f"; at this rate it reaches capacity in ~{to_capacity:,.0f} steps"
                if to_capacity is not None
                else ""
            )
            scale_unit, per_unit = (2**20, "MiB/step") if unit == "bytes" else (1.0, "%/step")
            per = f"{slope / scale_unit:.3g} {per_unit} (95% CI {lo / scale_unit:.3g}-{hi / scale_unit:.3g})"
            findings.append(
                _finding(
                    "memory_growth",
                    Severity.WARNING,
                    f"GPU memory grows steadily after warm-up: {per}, "
                    f"{_fmt_mem(start_level, unit)} → {_fmt_mem(end_level, unit)} "
                    f"(+{growth_frac:.0%} over {span:,.0f} steps){when}.",
                    step=int(w_steps[0]),
                    step_end=int(w_steps[-1]),
                    evidence={
                        "slope_per_step": slope,
                        "slope_ci": [lo, hi],
                        "unit": unit,
                        "growth_fraction": growth_frac,
                    },
                )
            )
    stats = MemoryStats(
        tag=curve.tag,
        unit=unit,
        n_points=int(values.size),
        warmup_end_step=int(w_steps[0]),
        peak=peak,
        peak_step=int(steps[j]),
        capacity=capacity,
        peak_fraction=frac,
        capacity_threshold=capacity_fraction,
        start_level=start_level,
        end_level=end_level,
        slope_per_step=slope,
        slope_ci=(lo, hi) if lo is not None else None,
        growth_total=growth,
        growth_fraction=growth_frac,
        steps_to_capacity=to_capacity,
        jumps=tuple(jumps),
    )
    return stats, findings


_LAYER = re.compile(r"(?:layers?|blocks?|(?<![a-z])h)[_.\-/]?(\d+)", re.IGNORECASE)
_HEAD = re.compile(r"head[_.\-/]?(\d+)", re.IGNORECASE)


def _attention(curve: Curve, *, collapse_fraction: float, persist: int) -> AttentionHead | None:
    part = curve.finite_part()
    if len(part) < 3:
        return None
    v, s = part.values, part.steps
    tenth = max(1, v.size // 10)
    early = float(np.median(v[:tenth]))
    late = float(np.median(v[-tenth:]))
    ratio = late / early if early > 0 else math.nan
    collapsed = bool(early > 0 and late <= collapse_fraction * early)
    step = None
    if collapsed:
        smooth = rolling_median(v, 5)
        below = smooth <= collapse_fraction * early
        # first point of the final run of "below" points (it stays collapsed), at least `persist` long
        above_idx = np.flatnonzero(~below)
        first = int(above_idx[-1] + 1) if above_idx.size else 0
        if v.size - first >= min(persist, v.size):
            step = int(s[first])
    layer = _LAYER.search(curve.tag)
    head = _HEAD.search(curve.tag)
    return AttentionHead(
        tag=curve.tag,
        layer=int(layer.group(1)) if layer else None,
        head=int(head.group(1)) if head else None,
        n_points=int(v.size),
        early=early,
        late=late,
        minimum=float(v.min()),
        ratio=ratio,
        collapsed=collapsed,
        collapse_step=step,
    )


def _histogram_curves(frame: pd.DataFrame) -> list[Curve]:
    """Mean per step (sum / num) of each histogram tag, as curves."""
    require_one_run(frame, "attention_histograms")
    curves = []
    for tag, part in frame.groupby("tag", sort=True):
        part = part.sort_values("step", kind="stable").drop_duplicates("step", keep="last")
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = part["sum"].to_numpy(dtype=np.float64) / part["num"].to_numpy(dtype=np.float64)
        curves.append(Curve.from_arrays(part["step"].to_numpy(), mean, tag=str(tag)))
    return curves


def _ranks(
    by_rank: Mapping[int, Curve], *, straggler_fraction: float, alpha: float, min_points: int, unit: str
) -> list[RankTiming]:
    steady: dict[int, pd.Series] = {}
    for rank, curve in by_rank.items():
        part = curve.finite_part()
        ok = part.values > 0
        steps, values = part.steps[ok], part.values[ok]
        start = detect_warmup(values)
        series = pd.Series(values[start:], index=steps[start:])
        steady[int(rank)] = series[~series.index.duplicated(keep="last")]
    steady = {r: s for r, s in steady.items() if len(s) >= 1}
    if len(steady) < 2:
        return []
    medians = {r: float(s.median()) for r, s in steady.items()}
    wide = pd.DataFrame(steady)
    out = []
    for rank, series in sorted(steady.items()):
        others = [r for r in steady if r != rank]
        reference = float(np.median([medians[r] for r in others]))
        lag = medians[rank] / reference - 1
        # paired: per-step ratio to the median of the other ranks at the same step
        other_at_step = wide[others].median(axis=1)
        paired = (wide[rank] / other_at_step).dropna()
        if len(paired) >= min_points:
            from scipy.stats import binomtest

            logs = np.log(paired.to_numpy(dtype=np.float64))
            stride = math.ceil(autocorrelation_time(logs))
            sample = thin(logs, stride)
            nonzero = sample[sample != 0]
            p = float(binomtest(int((nonzero > 0).sum()), nonzero.size, 0.5).pvalue) if nonzero.size else 1.0
            method = "paired per-step ratios (sign test)"
        else:
            mine = series.to_numpy(dtype=np.float64)
            rest = np.concatenate([steady[r].to_numpy(dtype=np.float64) for r in others])
            stride = max(math.ceil(autocorrelation_time(mine)), 1)
            p = (
                mann_whitney_p(thin(mine, stride), thin(rest, stride))
                if len(mine) >= min_points
                else math.nan
            )
            method = "Mann-Whitney U"
        straggler = bool(lag >= straggler_fraction and np.isfinite(p) and p < alpha)
        out.append(
            RankTiming(
                rank=rank,
                n_points=int(len(series)),
                unit=unit,
                median=medians[rank],
                reference=reference,
                lag_pct=float(lag * 100),
                p_value=float(p) if np.isfinite(p) else None,
                method=method,
                straggler=straggler,
            )
        )
    return out


@quiet_numpy
def analyze_resources(
    *,
    gpu_memory: Curve | None = None,
    capacity_bytes: float | None = None,
    attention_entropy: Sequence[Curve] = (),
    attention_histograms: pd.DataFrame | None = None,
    step_time_by_rank: Mapping[int, Curve] | None = None,
    memory_unit: str = "bytes",
    capacity_fraction: float = 0.9,
    warmup_fraction: float = 0.1,
    growth_min_fraction: float = 0.05,
    jump_fraction: float = 0.1,
    collapse_fraction: float = 0.2,
    collapse_persist: int = 3,
    straggler_fraction: float = 0.10,
    straggler_alpha: float = 0.01,
    min_points: int = 10,
    rank_time_unit: str = "s/step",
) -> ResourceHealth:
    """GPU memory, attention entropy and per-rank step times of one run.

    - memory (``memory_unit``: one of :data:`MEMORY_UNITS`; "percent" = percent of
      capacity): peak against ``capacity_fraction`` of ``capacity_bytes``; after the
      first ``warmup_fraction`` of points, a leak is a Theil–Sen slope whose 95% CI
      (on samples thinned by the autocorrelation time) is above 0, growing the level
      by ``growth_min_fraction`` or more, with quarter medians that never fall and no
      single jump carrying half the growth; a jump is a rise of ``jump_fraction`` of
      capacity (or of the median level when capacity is unknown) that lasts;
    - attention entropy (scalars, or histograms reduced to their per-step mean):
      collapsed when the median of the last tenth is at most ``collapse_fraction``
      of the first tenth; the step is where the smoothed entropy goes below that for good;
    - stragglers: a rank whose steady median step time is ``straggler_fraction``
      above the median of the other ranks, and significantly so (p < ``straggler_alpha``;
      a sign test on thinned per-step ratios when ranks log the same steps, else
      Mann–Whitney U on thinned samples).
    """
    findings: list[Finding] = []
    memory = None
    if gpu_memory is not None:
        memory, mem_findings = _memory(
            gpu_memory,
            capacity_bytes=capacity_bytes,
            memory_unit=memory_unit,
            capacity_fraction=capacity_fraction,
            warmup_fraction=warmup_fraction,
            growth_min_fraction=growth_min_fraction,
            jump_fraction=jump_fraction,
        )
        findings += mem_findings

    curves = list(attention_entropy)
    if attention_histograms is not None and len(attention_histograms):
        curves += _histogram_curves(attention_histograms)
    heads = [
        h
        for h in (
            _attention(c, collapse_fraction=collapse_fraction, persist=collapse_persist) for c in curves
        )
        if h
    ]
    bad = sorted(
        (h for h in heads if h.collapsed), key=lambda h: (h.collapse_step is None, h.collapse_step or 0)
    )
    if bad:
        names = ", ".join(
            f"{h.tag} ({h.early:.3g} → {h.late:.3g}"
            + (f", from step {h.collapse_step})" if h.collapse_step is not None else ")")
            for h in bad[:6]
        )
        findings.append(
            _finding(
                "attention_collapse",
                Severity.WARNING,
                f"Attention entropy collapsed in {len(bad)} of {len(heads)} series (late level ≤ "
                f"{collapse_fraction:.0%} of the early one): {names}" + (" …" if len(bad) > 6 else "") + ".",
                step=bad[0].collapse_step,
                evidence={"series": [h.to_dict() for h in bad[:50]]},
            )
        )

    ranks = (
        _ranks(
            step_time_by_rank,
            straggler_fraction=straggler_fraction,
            alpha=straggler_alpha,
            min_points=min_points,
            unit=rank_time_unit,
        )
        if step_time_by_rank
        else []
    )
    for r in ranks:
        if r.straggler:
            findings.append(
                _finding(
                    "straggler_rank",
                    Severity.WARNING,
                    f"Rank {r.rank} is {r.lag_pct:.0f}% slower than the other ranks (median step time "
                    f"{r.median:.4g} vs {r.reference:.4g} {r.unit}; p = {r.p_value:.2g}, {r.method}).",
                    evidence=r.to_dict(),
                )
            )
    return ResourceHealth(memory=memory, attention=tuple(heads), ranks=tuple(ranks), findings=tuple(findings))
