"""Throughput within a run (warm-up, steady level, drops, periodic dips, stalls) and against a baseline.

Every throughput kind is turned into one internal orientation, *time per unit of
work* ("slowness": seconds per step, or 1 / samples-per-second), so that "larger
is worse" everywhere inside; results are reported back in the metric's own unit.
Medians commute with this monotone transform, so a median ratio means the same
in either orientation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import (
    autocorrelation_time,
    binary_segmentation,
    block_bootstrap_medians,
    mann_whitney_p,
    min_attainable_p,
    quiet_numpy,
    robust_sigma,
    rolling_median,
    thin,
)
from tanalyze.curves import Curve

__all__ = [
    "KINDS",
    "Stall",
    "ChangePoint",
    "PeriodicDips",
    "ThroughputResult",
    "ThroughputComparison",
    "analyze_throughput",
    "compare_throughput",
    "detect_warmup",
    "slowness_series",
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


def _kind(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown throughput kind {kind!r}; expected one of {sorted(KINDS)}") from None


@dataclass(frozen=True)
class _Series:
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


def _series(curve: Curve | None, kind: str, wall_time_curve: Curve | None = None) -> _Series:
    """The valid points of a throughput curve (finite and positive), or step times derived from wall time."""
    _kind(kind)
    if curve is not None and kind != "wall_time":
        steps, values = _dedupe_last(curve.steps, curve.values)
        ok = np.isfinite(values) & (values > 0)
        steps, values = steps[ok], values[ok]
        gaps = np.diff(steps).astype(np.float64)
        # the first point's interval is unknown: assume the usual logging interval
        gaps = np.r_[np.median(gaps) if gaps.size else 1.0, gaps] if steps.size else gaps
        return _Series(steps, values, gaps, int((~ok).sum()), "values", kind)
    source_curve = curve if curve is not None else wall_time_curve
    if source_curve is None:
        return _Series(np.array([], dtype=np.int64), np.array([]), np.array([]), 0, "none", "wall_time")
    steps, values, gaps, dropped = _from_wall_time(source_curve)
    return _Series(steps, values, gaps, dropped, f"wall-time gaps of {source_curve.tag!r}", "wall_time")


def slowness_series(
    curve: Curve | None, kind: str, wall_time_curve: Curve | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, time-per-work)`` of a throughput curve: larger is slower for every kind."""
    s = _series(curve, kind, wall_time_curve)
    return s.steps, _slow(s.values, s.kind)


def _slow(values: np.ndarray, kind: str) -> np.ndarray:
    return 1.0 / values if KINDS[kind].higher_is_better else values


def _slow_value(level: float, kind: str) -> float:
    return 1.0 / level if KINDS[kind].higher_is_better else level


def _unslow(slowness: float, kind: str) -> float:
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


@dataclass(frozen=True)
class Stall(ResultMixin):
    """One isolated very slow logged point (checkpoint save, evaluation, a hung collective)."""

    step: int
    value: float  # in the curve's unit
    times_median: float  # slowness relative to the steady median (5.0 = five times slower)
    seconds_lost: float | None  # over the steady pace; None for rate kinds (unknown work per point)


@dataclass(frozen=True)
class ChangePoint(ResultMixin):
    """A lasting change of the throughput level, found by binary segmentation."""

    step: int  # first step of the new level
    before: float  # median level before, in the curve's unit
    after: float  # median level after, in the curve's unit
    slowdown_pct: float  # +25 = each unit of work takes 25% longer; negative = faster


@dataclass(frozen=True)
class PeriodicDips(ResultMixin):
    """Slow points that recur every ``period_steps`` steps (data loading, evaluation, logging)."""

    period_steps: int
    phase: int  # step % period_steps of the dips
    n_dips: int
    coverage: float  # fraction of logged steps with that phase that are slow
    steps: tuple[int, ...]
    median_slowdown_pct: float  # of the dip points against the pace around them
    p_value: float  # chance of so regular a pattern from as many randomly placed slow points


@dataclass(frozen=True)
class ThroughputResult(ResultMixin):
    """Throughput of one run: warm-up, steady level, stalls, periodic dips and lasting drops.

    ``unit`` is the unit of every level (``steady_median``, change-point levels,
    stall values); ``seconds_*`` are in seconds.
    """

    tag: str | None
    kind: str
    unit: str
    higher_is_better: bool
    source: str  # "values" or "wall-time gaps of '<tag>'"
    n_points: int  # valid points used
    n_invalid: int  # non-finite, zero or negative values (or non-increasing wall times) skipped
    warmup_end_step: int | None  # first step of the steady state
    n_warmup_points: int
    steady_median: float | None
    steady_p25: float | None
    steady_p75: float | None
    steady_cv: float | None  # robust coefficient of variation (1.4826·MAD / median) of time per work
    final_median: float | None  # median of the last level (after the last change point)
    autocorrelation_time: float | None  # in logged points
    stalls: tuple[Stall, ...]
    stall_seconds_lost: float | None
    change_points: tuple[ChangePoint, ...]
    dips: PeriodicDips | None
    findings: tuple[Finding, ...]


def _empty(curve: Curve | None, kind: str, series: _Series, why: str) -> ThroughputResult:
    k = KINDS[kind]
    finding = Finding(
        "insufficient_data",
        Severity.INFO,
        f"Throughput: {why}.",
        recommend("insufficient_data"),
    )
    return ThroughputResult(
        tag=curve.tag if curve is not None else None,
        kind=kind,
        unit=k.unit,
        higher_is_better=k.higher_is_better,
        source=series.source,
        n_points=int(series.values.size),
        n_invalid=series.n_invalid,
        warmup_end_step=None,
        n_warmup_points=0,
        steady_median=None,
        steady_p25=None,
        steady_p75=None,
        steady_cv=None,
        final_median=None,
        autocorrelation_time=None,
        stalls=(),
        stall_seconds_lost=None,
        change_points=(),
        dips=None,
        findings=(finding,),
    )


def _find_period(
    outlier_steps: np.ndarray,
    all_steps: np.ndarray,
    *,
    min_dips: int,
    min_coverage: float,
    alpha: float,
    max_candidates: int = 12,
) -> tuple[int, int, float, np.ndarray, float] | None:
    """The period whose phase class holds the most slow points, most of that class slow, unlikely by chance.

    Candidates are the most common gaps between slow points and their gcd. Chance
    level: with a fraction ``q`` of all points slow, two slow points fix a period
    and phase, and the other ``k - 2`` hits among the ``m - 2`` other steps of that
    phase have binomial tail probability ``P(X >= k - 2)``; Bonferroni over the
    candidates tried. Returns (period, phase, coverage, hit steps, p-value).
    """
    from scipy.stats import binom

    if outlier_steps.size < max(min_dips, 3) or all_steps.size < 2:
        return None
    gaps = np.diff(outlier_steps)
    gaps = gaps[gaps > 0]
    if gaps.size == 0:
        return None
    values, counts = np.unique(gaps, return_counts=True)
    candidates = {int(v) for v in values[np.argsort(-counts, kind="stable")][:max_candidates]}
    candidates.add(int(np.gcd.reduce(gaps)))
    spacing = max(int(np.median(np.diff(all_steps))), 1)
    span = all_steps[-1] - all_steps[0]
    candidates = {c for c in candidates if 2 * spacing <= c <= span / 2}
    q = outlier_steps.size / all_steps.size
    best = None
    for period in sorted(candidates):
        phases = outlier_steps % period
        ph_values, ph_counts = np.unique(phases, return_counts=True)
        phase = int(ph_values[np.argmax(ph_counts)])
        hits = outlier_steps[phases == phase]
        in_class = all_steps[(all_steps % period) == phase]
        # only the part of the run the dips span: a pattern that starts late still counts
        in_class = in_class[(in_class >= hits[0]) & (in_class <= hits[-1])]
        coverage = hits.size / max(in_class.size, 1)
        p_value = min(1.0, float(binom.sf(hits.size - 3, in_class.size - 2, q)) * len(candidates))
        if hits.size >= min_dips and coverage >= min_coverage and p_value < alpha:
            if best is None or hits.size > best[3].size:
                best = (period, phase, coverage, hits, p_value)
    return best


@quiet_numpy
def analyze_throughput(
    curve: Curve | None,
    *,
    kind: str,
    wall_time_curve: Curve | None = None,
    warmup: int | str | None = "auto",
    warmup_tolerance: float = 0.10,
    stall_factor: float = 5.0,
    dip_z: float = 3.5,
    dip_min_slowdown: float = 0.10,
    dip_min_count: int = 4,
    dip_min_coverage: float = 0.7,
    dip_alpha: float = 0.05,
    min_drop: float = 0.10,
    max_change_points: int = 5,
    penalty_scale: float = 2.0,
    interval_means: bool = False,
    eval_steps: np.ndarray | None = None,
    epoch_steps: np.ndarray | None = None,
    min_cost_seconds: float = 60.0,
    min_cost_share: float = 0.05,
    min_finding_seconds: float = 1.0,
    large_pause_share: float = 0.10,
) -> ThroughputResult:
    """Warm-up, steady-state level, stalls, periodic dips and lasting drops of one run's throughput.

    ``kind`` is the unit of ``curve`` (see :data:`KINDS`). With ``kind="wall_time"``
    or ``curve=None`` step times come from wall-clock gaps between logged steps of
    ``wall_time_curve`` (e.g. the training loss): gap seconds / gap steps.

    - warm-up: ``"auto"`` (:func:`detect_warmup` with ``warmup_tolerance``), a step
      (points before it are warm-up) or ``None``;
    - stalls: points at least ``stall_factor`` × slower than the steady median;
      seconds lost = extra time over the steady pace (× the step gap when
      ``interval_means`` says each value averages the steps since the last log,
      as Megatron's "elapsed time per iteration" does; always so for wall-time gaps);
    - dips: points slower by ``dip_min_slowdown`` and ``dip_z`` robust z-scores,
      periodic when ``dip_min_count`` of them share one phase of a period, that
      phase is slow in ``dip_min_coverage`` of its logged steps, and so regular a
      pattern has chance probability below ``dip_alpha`` (see :func:`_find_period`);
    - drops: binary segmentation of log time-per-work (stalls and dips removed),
      penalty ``penalty_scale · σ²_long-run · ln n`` (see :func:`_segment`); only level
      changes of at least ``min_drop`` (relative) are kept, and a ``throughput_drop``
      finding needs the new level to be ``min_drop`` slower than the first steady
      level too (a fast episode that ends is not a drop);
    - cost: for time kinds, a stall, dip or drop finding is a ``warning`` only when the time it
      cost is at least ``min_cost_seconds`` and ``min_cost_share`` of the run's time after warm-up
      (a stall of milliseconds is information, not a problem);
    - evaluations and epochs: with ``eval_steps`` (the steps of the validation curve) or ``epoch_steps``
      (the first step of each epoch), stalls whose logging interval starts or ends at one of them are the
      time spent evaluating (or at the epoch's end: a validation pass, a checkpoint, the data loader's
      restart); so are stalls that recur at one period when neither is known. They are reported as one
      ``evaluation_time`` information with their share of the wall time (advice to evaluate less often
      when it is at least ``large_pause_share``), never as a throughput stall;
    - a stall that cost under ``min_finding_seconds`` in all (timing jitter) is no finding.
    """
    series = _series(curve, kind, wall_time_curve)
    kind_used = series.kind
    k = KINDS[kind_used]
    if series.values.size < 3:
        return _empty(
            curve or wall_time_curve,
            kind_used,
            series,
            f"{series.values.size} valid point(s), need at least 3",
        )

    steps, values, gaps = series.steps, series.values, series.gaps
    slow = _slow(values, kind_used)
    if warmup == "auto":
        start = detect_warmup(slow, tolerance=warmup_tolerance)
    elif warmup is None:
        start = 0
    else:
        start = int(np.searchsorted(steps, int(warmup), side="left"))
    start = min(start, slow.size - 1)
    s_steps, s_slow, s_gaps, s_values = steps[start:], slow[start:], gaps[start:], values[start:]
    med = float(np.median(s_slow))
    sigma = robust_sigma(s_slow)
    per_point_seconds = k.to_seconds
    seconds_factor = None
    if per_point_seconds is not None:
        is_gap_total = series.source != "values" or interval_means
        seconds_factor = per_point_seconds * (s_gaps if is_gap_total else np.ones_like(s_gaps))

    findings: list[Finding] = []

    # local level: a centred rolling median, so stalls and dips are judged against
    # the pace around them even when the level changes during the run
    level = rolling_median(s_slow, max(11, min(101, s_slow.size // 20 * 2 + 1)))
    rel = np.log(s_slow / level)
    rel_sigma = robust_sigma(rel)

    # --- stalls
    stall_mask = s_slow >= stall_factor * level
    stalls = []
    for i in np.flatnonzero(stall_mask):
        lost = None if seconds_factor is None else float((s_slow[i] - level[i]) * seconds_factor[i])
        stalls.append(Stall(int(s_steps[i]), float(s_values[i]), float(s_slow[i] / level[i]), lost))
    eval_pauses: list[Stall] = []
    marks = [np.asarray(m, dtype=np.int64) for m in (eval_steps, epoch_steps) if m is not None and len(m)]
    if marks and stalls:
        evals = np.unique(np.concatenate(marks))
        at_eval = []
        for st in stalls:  # an evaluation at either end of the stall's interval [previous logged step, its step]
            i = int(np.searchsorted(s_steps, st.step))
            previous = int(s_steps[i - 1]) if i > 0 else st.step - 1
            j = int(np.searchsorted(evals, previous, side="left"))
            at_eval.append(j < evals.size and evals[j] <= st.step)
        eval_pauses = [st for st, hit in zip(stalls, at_eval, strict=True) if hit]
        stalls = [st for st, hit in zip(stalls, at_eval, strict=True) if not hit]
    run_seconds = float(np.sum(s_slow * seconds_factor)) if seconds_factor is not None else None
    # Rate kinds (samples/s …): seconds from the wall clock of the logged points, shared out by slowness.
    rate_seconds = None
    source_curve = curve if curve is not None else wall_time_curve
    if run_seconds is None and source_curve is not None:
        stamps = source_curve.wall_time[np.isin(source_curve.steps, s_steps)]
        stamps = stamps[np.isfinite(stamps)]
        if stamps.size >= 2 and np.ptp(stamps) > 0:
            run_seconds = float(np.ptp(stamps))
            rate_seconds = run_seconds / float(np.sum(s_slow))

    def seconds_of(extra_slowness: float) -> float | None:
        """Seconds taken by extra slowness summed over points (rate kinds: from the wall clock)."""
        return None if rate_seconds is None else float(extra_slowness * rate_seconds)

    def costly(seconds: float | None) -> bool:
        """A time cost worth a warning (always, for rate kinds whose cost in seconds is unknown)."""
        if seconds is None or run_seconds is None:
            return True
        return seconds >= min_cost_seconds and seconds >= min_cost_share * run_seconds

    # --- dips (slow outliers, including stalls) and their period
    z = rel / rel_sigma if rel_sigma > 0 else np.where(rel > 0, np.inf, 0.0)
    slow_mask = (rel >= math.log1p(dip_min_slowdown)) & (z >= dip_z)
    dips = None
    period = _find_period(
        s_steps[slow_mask], s_steps, min_dips=dip_min_count, min_coverage=dip_min_coverage, alpha=dip_alpha
    )
    if period is not None:
        p, phase, coverage, hits, p_dips = period
        hit_rel = rel[np.isin(s_steps, hits)]
        dips = PeriodicDips(
            period_steps=int(p),
            phase=int(phase),
            n_dips=int(hits.size),
            coverage=float(coverage),
            steps=tuple(int(h) for h in hits),
            median_slowdown_pct=float(np.expm1(np.median(hit_rel)) * 100),
            p_value=p_dips,
        )

    # --- lasting changes of level
    keep = ~slow_mask
    c_steps, c_log = s_steps[keep], np.log(s_slow[keep])
    change_points: list[ChangePoint] = []
    final_median = _unslow(med, kind_used)
    # residuals about a wide rolling median: removes level changes, keeps short-range dependence
    resid = c_log - rolling_median(c_log, 101)
    tau = autocorrelation_time(resid)
    if c_log.size >= 20:
        cuts, tau = _segment(c_log, resid, tau, penalty_scale, max_change_points, min_drop)
        if cuts is not None:
            bounds = [0, *cuts, c_log.size]
            levels = [
                float(np.exp(np.median(c_log[a:b]))) for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            ]
            for j, cut in enumerate(cuts[:max_change_points]):
                before, after = levels[j], levels[j + 1]
                change_points.append(
                    ChangePoint(
                        step=int(c_steps[cut]),
                        before=_unslow(before, kind_used),
                        after=_unslow(after, kind_used),
                        slowdown_pct=float((after / before - 1) * 100),
                    )
                )
            final_median = _unslow(levels[-1], kind_used)

    # --- findings
    unit = k.unit
    steady = _unslow(med, kind_used)
    stall_steps = {st.step for st in stalls}
    periodic_stalls = dips is not None and sum(d in stall_steps for d in dips.steps) >= 0.8 * dips.n_dips
    pause_period = None
    if periodic_stalls:  # pauses at one period (evaluation, checkpoint or epoch end): time spent, not stalls
        pause_period = dips.period_steps  # type: ignore[union-attr]
        eval_pauses = sorted(eval_pauses + stalls, key=lambda st: st.step)
        stalls = []
    stall_lost = None if seconds_factor is None else float(sum(s.seconds_lost or 0.0 for s in stalls))
    # timing jitter: a stall that costs nothing is no finding (it stays in the result's stalls)
    if stalls and not (stall_lost is not None and stall_lost < min_finding_seconds):
        worst = max(stalls, key=lambda st: st.times_median)
        lost_txt = ""
        if stall_lost is not None and seconds_factor is not None:
            # time after warm-up: exact for interval totals; for sampled step times, each
            # logged pace stands for its whole interval and a stall's extra time counts once
            if series.source != "values" or interval_means:
                total = float(np.sum(s_slow * seconds_factor))
            else:
                total = float(np.sum(level * s_gaps) * per_point_seconds) + stall_lost  # type: ignore[operator]
            lost_txt = (
                f"; {stall_lost:.1f} s lost in total ({stall_lost / total:.1%} of the time after warm-up)"
            )
        shown = ", ".join(str(st.step) for st in stalls[:8]) + (" …" if len(stalls) > 8 else "")
        findings.append(
            Finding(
                "throughput_stall",
                Severity.WARNING if (len(stalls) > 1 or (stall_lost or 0) > 60)
                and costly(stall_lost if stall_lost is not None else seconds_of(
                    float(sum((st.times_median - 1) * level[np.searchsorted(s_steps, st.step)] for st in stalls))))
                else Severity.INFO,
                f"{len(stalls)} stall(s) at least {stall_factor:g}x slower than the steady "
                f"{steady:.4g} {unit} (steps {shown}); worst at step {worst.step}: "
                f"{worst.value:.4g} {unit}, {worst.times_median:.1f}x the pace around it{lost_txt}.",
                recommend("throughput_stall"),
                step=stalls[0].step,
                step_end=stalls[-1].step,
                evidence={
                    "steps": [st.step for st in stalls],
                    "seconds_lost": stall_lost,
                    "steady_median": steady,
                    "unit": unit,
                },
            )
        )
    eval_lost = None if seconds_factor is None else float(sum(st.seconds_lost or 0.0 for st in eval_pauses))
    if eval_pauses and not (eval_lost is not None and eval_lost < min_finding_seconds):
        share = eval_lost / run_seconds if eval_lost is not None and run_seconds else None
        share_txt = (f"; {eval_lost:.1f} s in all, {share:.1%} of the wall time after warm-up"
                     if share is not None else "")
        where = (f"every {pause_period} steps" if pause_period is not None and not marks
                 else "at evaluation steps" if epoch_steps is None or not len(epoch_steps)
                 else "at evaluation or epoch steps")
        advice = (" A large share: evaluate less often (or on a subset, or asynchronously) to train faster."
                  if share is not None and share >= large_pause_share else "")
        findings.append(
            Finding(
                "evaluation_time",
                Severity.INFO,
                f"{len(eval_pauses)} pause(s) {where} (first at step {eval_pauses[0].step}): the time spent "
                f"evaluating{share_txt}.{advice}",
                recommend("evaluation_time"),
                step=eval_pauses[0].step,
                step_end=eval_pauses[-1].step,
                evidence={"steps": [st.step for st in eval_pauses], "seconds": eval_lost, "share": share,
                          "period_steps": pause_period},
            )
        )
    dip_steps = set(dips.steps) if dips is not None else set()
    dips_at_eval = bool(eval_pauses) and dips is not None and len(dip_steps & {st.step for st in eval_pauses}) >= \
        0.8 * len(dip_steps)
    if dips is not None and not periodic_stalls and not dips_at_eval:
        hit = np.isin(s_steps, np.array(sorted(dip_steps)))
        if seconds_factor is not None:
            dip_cost = float(np.sum((s_slow[hit] - level[hit]) * seconds_factor[hit]))
        else:
            dip_cost = seconds_of(float(np.sum(s_slow[hit] - level[hit])))
        findings.append(
            Finding(
                "throughput_dips",
                Severity.WARNING if dips.median_slowdown_pct >= 25 and costly(dip_cost) else Severity.INFO,
                f"Throughput dips every {dips.period_steps} steps ({dips.n_dips} dips, first at step "
                f"{dips.steps[0]}): those steps are {_slower(dips.median_slowdown_pct)} (median) than the "
                f"steady {steady:.4g} {unit}.",
                recommend("throughput_dips"),
                step=dips.steps[0],
                step_end=dips.steps[-1],
                evidence={"period_steps": dips.period_steps, "phase": dips.phase, "steps": list(dips.steps)},
            )
        )
    first_level = change_points[0].before if change_points else None
    for cp in change_points:
        # a drop is slower than before AND than the first steady level: the end of a
        # fast episode (back to the usual pace) is not a drop
        vs_first = (_slow_value(cp.after, kind_used) / _slow_value(first_level, kind_used) - 1) * 100
        if cp.slowdown_pct < min_drop * 100 or vs_first < min_drop * 100:
            continue
        later = c_steps >= cp.step
        extra = float(np.sum(np.exp(c_log[later]) - _slow_value(cp.before, kind_used)))
        drop_cost = extra * float(np.median(seconds_factor)) if seconds_factor is not None else seconds_of(extra)
        findings.append(
            Finding(
                "throughput_drop",
                Severity.WARNING if cp.slowdown_pct >= 25 and costly(drop_cost) else Severity.INFO,
                f"Throughput dropped at step {cp.step}: {cp.before:.4g} → {cp.after:.4g} {unit} "
                f"({cp.slowdown_pct:.0f}% more time per unit of work), and stayed there"
                + (
                    f" ({vs_first:.0f}% slower than the first steady level)."
                    if cp is not change_points[0]
                    else "."
                ),
                recommend("throughput_drop"),
                step=cp.step,
                evidence={
                    "before": cp.before,
                    "after": cp.after,
                    "slowdown_pct": cp.slowdown_pct,
                    "slowdown_vs_first_level_pct": vs_first,
                    "unit": unit,
                },
            )
        )

    p25, p75 = np.percentile(s_values, [25, 75])
    return ThroughputResult(
        tag=(curve or wall_time_curve).tag,  # type: ignore[union-attr]
        kind=kind_used,
        unit=unit,
        higher_is_better=k.higher_is_better,
        source=series.source,
        n_points=int(values.size),
        n_invalid=series.n_invalid,
        warmup_end_step=int(s_steps[0]),
        n_warmup_points=int(start),
        steady_median=steady,
        steady_p25=float(p25),
        steady_p75=float(p75),
        steady_cv=float(sigma / med) if med > 0 else None,
        final_median=float(final_median),
        autocorrelation_time=float(tau),
        stalls=tuple(stalls),
        stall_seconds_lost=stall_lost,
        change_points=tuple(change_points),
        dips=dips,
        findings=tuple(findings),
    )


def _segment(
    x: np.ndarray, resid: np.ndarray, tau: float, penalty_scale: float, max_changes: int, min_change: float
) -> tuple[list[int] | None, float]:
    """Change points of ``x`` (log time per work), with the long-run variance re-estimated from the fit.

    The penalty needs the long-run variance σ²·τ of the noise. A first guess comes
    from residuals about a wide rolling median; then τ and σ are re-estimated from
    the residuals about the fitted piecewise-constant levels and the segmentation
    is repeated until τ stops growing. A level that merely wanders (strongly
    autocorrelated noise) keeps long-range dependence in those residuals, so its
    penalty grows and it is not cut into spurious "drops"; a real step leaves white
    residuals and keeps its change point.
    """
    cuts: list[int] | None = None
    sig = robust_sigma(resid)
    for _ in range(4):
        long_run_var = sig * sig * max(tau, 1.0)
        if not long_run_var > 0:
            return cuts, tau
        cuts = binary_segmentation(
            x,
            penalty=penalty_scale * long_run_var * math.log(x.size),
            min_size=max(5, x.size // 50),
            max_changes=max_changes * 2,
        )
        cuts = _merge_small_changes(x, cuts, min_change)
        bounds = [0, *cuts, x.size]
        fitted = np.concatenate(
            [np.full(b - a, np.median(x[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        )
        fit_resid = x - fitted
        new_tau = autocorrelation_time(fit_resid)
        new_sig = robust_sigma(fit_resid)
        if new_tau * new_sig**2 <= 1.1 * tau * sig**2:
            break
        tau, sig = max(tau, new_tau), max(sig, new_sig)
    return cuts, tau


def _slower(pct: float) -> str:
    return f"{1 + pct / 100:.1f}x slower" if pct >= 100 else f"{pct:.0f}% slower"


def _merge_small_changes(x: np.ndarray, cuts: list[int], min_change: float) -> list[int]:
    """Drop change points whose neighbouring segment medians differ by less than ``min_change``."""
    cuts = sorted(cuts)
    threshold = math.log1p(min_change)
    while cuts:
        bounds = [0, *cuts, x.size]
        meds = [float(np.median(x[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        diffs = [abs(meds[j + 1] - meds[j]) for j in range(len(cuts))]
        j = int(np.argmin(diffs))
        if diffs[j] >= threshold:
            break
        del cuts[j]
    return cuts


# ---------------------------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class ThroughputComparison(ResultMixin):
    """Candidate against baseline throughput, ready for a CI status.

    Levels are in ``unit``; ``ratio`` = candidate / baseline median in that unit;
    ``slowdown_pct`` > 0 means the candidate needs more time per unit of work
    (whatever the kind); ``ci_low``/``ci_high`` bound the time-per-work ratio.
    """

    kind: str
    unit: str
    higher_is_better: bool
    verdict: str  # "regression" | "improvement" | "no_change" | "inconclusive"
    reason: str  # why this verdict, with the numbers
    message: str  # one line for a CI log: the verdict and its reason
    baseline_median: float | None
    candidate_median: float | None
    ratio: float | None
    change_pct: float | None  # (ratio - 1) × 100, in the metric's own direction
    slowdown_pct: float | None  # time-per-work change in %, + = slower
    p_value: float | None  # two-sided Mann–Whitney U on thinned samples (max over baseline runs)
    ci_low: float | None  # bootstrap CI of the time-per-work ratio candidate/baseline
    ci_high: float | None
    ci_level: float
    n_baseline: int  # points after warm-up, all baseline runs
    n_candidate: int
    n_baseline_effective: int  # after thinning by the autocorrelation time
    n_candidate_effective: int
    thinning_stride: int
    baseline_run_medians: tuple[float, ...]
    baseline_band: tuple[float, float] | None  # min/max run median (≥ 2 baseline runs), in unit
    min_change: float
    alpha: float
    method: str
    findings: tuple[Finding, ...]


def _steady(curve: Curve, kind: str, warmup: int | float | str | None, tolerance: float) -> np.ndarray:
    series = _series(curve, kind)
    slow = _slow(series.values, kind)
    if slow.size == 0:
        return slow
    if warmup == "auto":
        start = detect_warmup(slow, tolerance=tolerance)
    elif warmup is None:
        start = 0
    elif isinstance(warmup, float) and 0 <= warmup < 1:
        start = int(warmup * slow.size)
    else:
        start = int(np.searchsorted(series.steps, int(warmup), side="left"))
    return slow[start:]


@quiet_numpy
def compare_throughput(
    baseline: Sequence[Curve] | Curve,
    candidate: Curve,
    *,
    kind: str,
    min_change: float = 0.15,
    alpha: float = 0.002,
    warmup: int | float | str | None = "auto",
    warmup_tolerance: float = 0.10,
    min_points: int = 10,
    ci_level: float = 0.99,
    n_boot: int = 2000,
    seed: int = 0,
) -> ThroughputComparison:
    """Is the candidate's steady-state throughput slower (or faster) than the baseline's?

    The rule, after dropping each run's warm-up (``"auto"``, a step, a fraction of
    the points in [0, 1) as a float, or ``None``):

    1. fewer than ``min_points`` points on a side, or too few independent samples
       for any rank test to reach ``alpha`` → ``inconclusive``;
    2. the median time per unit of work changed by less than ``min_change``
       (default 15%: training steps are noisier than micro-benchmarks; asv flags at
       its default ``--factor 1.1``) → ``no_change``;
    3. with two or more baseline runs, a candidate median inside the band of the
       baseline run medians is run-to-run noise → ``no_change``; outside it, the
       p-value is the largest of the tests against each baseline run (the
       candidate must differ from every one of them);
    4. otherwise ``regression``/``improvement`` when the change is statistically
       clear: Mann–Whitney U p < ``alpha`` (asv's ``is_different`` uses the same
       test and p < 0.002) **and** the moving-block bootstrap ``ci_level`` interval of
       the median ratio excludes 1; else ``inconclusive``.

    Consecutive step times are autocorrelated, which makes a rank test on raw
    points far too confident. Each series is therefore thinned to every
    ``ceil(τ)``-th point (τ = the larger integrated autocorrelation time of the
    two sides), and the bootstrap resamples blocks of length ``ceil(τ)``. The
    bootstrap uses a fixed ``seed``: the same inputs give the same verdict.
    """
    k = _kind(kind)
    baselines = [baseline] if isinstance(baseline, Curve) else list(baseline)
    base_runs = [_steady(c, kind, warmup, warmup_tolerance) for c in baselines]
    base_runs = [r for r in base_runs if r.size]
    cand = _steady(candidate, kind, warmup, warmup_tolerance)
    n_base = int(sum(r.size for r in base_runs))
    n_cand = int(cand.size)
    method = (
        "medians after warm-up; Mann-Whitney U on samples thinned by the integrated autocorrelation time; "
        f"moving-block bootstrap {ci_level:.0%} CI of the median ratio"
        + ("; baseline-run band as noise floor" if len(base_runs) > 1 else "")
    )

    def result(verdict: str, reason: str, **kw) -> ThroughputComparison:
        fields = dict(
            kind=kind,
            unit=k.unit,
            higher_is_better=k.higher_is_better,
            verdict=verdict,
            reason=reason,
            message=f"throughput {verdict.replace('_', ' ')}: {reason}",
            baseline_median=None,
            candidate_median=None,
            ratio=None,
            change_pct=None,
            slowdown_pct=None,
            p_value=None,
            ci_low=None,
            ci_high=None,
            ci_level=ci_level,
            n_baseline=n_base,
            n_candidate=n_cand,
            n_baseline_effective=0,
            n_candidate_effective=0,
            thinning_stride=1,
            baseline_run_medians=(),
            baseline_band=None,
            min_change=min_change,
            alpha=alpha,
            method=method,
            findings=(),
        )
        fields.update(kw)
        return ThroughputComparison(**fields)

    if n_base == 0 or n_cand == 0:
        return result(
            "inconclusive", f"no valid points after warm-up (baseline {n_base}, candidate {n_cand})"
        )

    pooled = np.concatenate(base_runs)
    base_med = float(np.median(pooled))
    cand_med = float(np.median(cand))
    time_ratio = cand_med / base_med
    base_level, cand_level = _unslow(base_med, kind), _unslow(cand_med, kind)
    run_meds = tuple(_unslow(float(np.median(r)), kind) for r in base_runs)
    band = (min(run_meds), max(run_meds)) if len(run_meds) > 1 else None
    common = dict(
        baseline_median=base_level,
        candidate_median=cand_level,
        ratio=cand_level / base_level,
        change_pct=(cand_level / base_level - 1) * 100,
        slowdown_pct=(time_ratio - 1) * 100,
        baseline_run_medians=run_meds,
        baseline_band=band,
    )

    tau = max([autocorrelation_time(r) for r in base_runs] + [autocorrelation_time(cand)])
    stride = max(1, math.ceil(tau))
    base_thin = np.concatenate([thin(r, stride) for r in base_runs])
    cand_thin = thin(cand, stride)
    common.update(
        n_baseline_effective=int(base_thin.size),
        n_candidate_effective=int(cand_thin.size),
        thinning_stride=stride,
    )
    if len(base_runs) > 1:
        # several baseline runs: the candidate must differ from every one of them,
        # so the reported p is the least significant of the per-run tests
        p = max(mann_whitney_p(thin(r, stride), cand_thin) for r in base_runs)
    else:
        p = mann_whitney_p(base_thin, cand_thin)
    common["p_value"] = p

    boots_b = block_bootstrap_medians(base_runs, block=stride, n_boot=n_boot, seed=seed)
    boots_c = block_bootstrap_medians([cand], block=stride, n_boot=n_boot, seed=seed + 1)
    ratios = boots_c / boots_b
    tail = (1 - ci_level) / 2
    lo, hi = (float(v) for v in np.quantile(ratios, [tail, 1 - tail]))
    common.update(ci_low=lo, ci_high=hi)

    change_txt = (
        f"candidate median {cand_level:.4g} {k.unit} vs baseline {base_level:.4g} {k.unit} "
        f"({(time_ratio - 1) * 100:+.1f}% time per unit of work)"
    )
    if n_cand < min_points or n_base < min_points:
        return result(
            "inconclusive",
            f"too few points after warm-up (baseline {n_base}, candidate {n_cand}; need {min_points}); {change_txt}",
            **common,
        )
    if min_attainable_p(base_thin.size, cand_thin.size) >= alpha:
        return result(
            "inconclusive",
            f"only {base_thin.size} and {cand_thin.size} roughly independent samples (thinned every {stride}): "
            f"no rank test could reach p < {alpha:g}; {change_txt}",
            **common,
        )
    slower = time_ratio >= 1 + min_change
    faster = time_ratio <= 1 / (1 + min_change)
    if not (slower or faster):
        return result("no_change", f"change below {min_change:.0%}: {change_txt}", **common)
    if band is not None and band[0] <= cand_level <= band[1]:
        return result(
            "no_change",
            f"candidate inside the band of baseline run medians [{band[0]:.4g}, {band[1]:.4g}] {k.unit}: {change_txt}",
            **common,
        )
    clear = p < alpha and (lo > 1 if slower else hi < 1)
    if not clear:
        return result(
            "inconclusive",
            f"{change_txt}, but not statistically clear (p = {p:.2g}, {ci_level:.0%} CI of the ratio {lo:.3f}-{hi:.3f})",
            **common,
        )
    verdict = "regression" if slower else "improvement"
    reason = f"{change_txt}; p = {p:.2g} < {alpha:g}, {ci_level:.0%} CI of the time ratio {lo:.3f}-{hi:.3f}"
    findings: tuple[Finding, ...] = ()
    if slower:
        findings = (
            Finding(
                "throughput_regression",
                Severity.ERROR,
                f"Throughput regressed: {reason}.",
                recommend("throughput_regression"),
                evidence={
                    "baseline_median": base_level,
                    "candidate_median": cand_level,
                    "unit": k.unit,
                    "slowdown_pct": (time_ratio - 1) * 100,
                    "p_value": p,
                },
            ),
        )
    return result(verdict, reason, findings=findings, **common)
