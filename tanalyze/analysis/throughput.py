"""Throughput within one run: warm-up, steady level, stalls, pauses to evaluate, periodic dips, lasting drops.

Values are read through :mod:`tanalyze.analysis.throughput_series` (every kind as time per unit of
work, "slowness", larger is worse). Comparing a run against a baseline is
:mod:`tanalyze.analysis.throughput_compare`; its names are re-exported here for older imports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import (
    autocorrelation_time,
    binary_segmentation,
    quiet_numpy,
    robust_sigma,
    rolling_median,
)
from tanalyze.analysis.throughput_compare import ThroughputComparison, compare_throughput
from tanalyze.analysis.throughput_series import (
    KINDS,
    Series,
    detect_warmup,
    from_slowness,
    read_series,
    slowness_series,
    to_slowness,
)
from tanalyze.curves import Curve

__all__ = [
    "KINDS",
    "Stall",
    "ChangePoint",
    "PeriodicDips",
    "ThroughputResult",
    "ThroughputComparison",  # from throughput_compare
    "analyze_throughput",
    "compare_throughput",  # from throughput_compare
    "detect_warmup",  # from throughput_series
    "slowness_series",  # from throughput_series
]


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


def _empty(curve: Curve | None, kind: str, series: Series, why: str) -> ThroughputResult:
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
    - a stall, or a lasting drop, that cost under ``min_finding_seconds`` in all (timing jitter) is no finding.
    """
    series = read_series(curve, kind, wall_time_curve)
    if series.values.size < 3:
        return _empty(curve or wall_time_curve, series.kind, series,
                      f"{series.values.size} valid point(s), need at least 3")
    pace = _pace(series, curve if curve is not None else wall_time_curve, warmup, warmup_tolerance, interval_means)

    def costly(seconds: float | None) -> bool:
        """A time cost worth a warning (always, for rate kinds whose cost in seconds is unknown)."""
        if seconds is None or pace.run_seconds is None:
            return True
        return seconds >= min_cost_seconds and seconds >= min_cost_share * pace.run_seconds

    rel = np.log(pace.slow / pace.level)
    stalls = [_stall(pace, i) for i in np.flatnonzero(pace.slow >= stall_factor * pace.level)]
    marks = [np.asarray(m, dtype=np.int64) for m in (eval_steps, epoch_steps) if m is not None and len(m)]
    pauses, stalls = _split_pauses(stalls, pace.steps, marks)
    slow_mask, dips = _periodic_dips(pace.steps, rel, dip_z, dip_min_slowdown, dip_min_count, dip_min_coverage,
                                     dip_alpha)
    if dips is not None:
        pauses = _with_dips_at_marks(pace, dips, pauses, marks)
    c_steps, c_log = pace.steps[~slow_mask], np.log(pace.slow[~slow_mask])
    change_points, final_slowness, tau = _level_changes(c_steps, c_log, penalty_scale, max_change_points, min_drop)
    final_median = from_slowness(final_slowness if final_slowness is not None else pace.median, pace.kind)

    stall_steps = {st.step for st in stalls}
    period = None
    if dips is not None and sum(d in stall_steps for d in dips.steps) >= 0.8 * dips.n_dips:
        # pauses at one period (evaluation, checkpoint or epoch end): time spent, not stalls
        period = dips.period_steps
        pauses, stalls = sorted(pauses + stalls, key=lambda st: st.step), []
    stall_lost = None if pace.seconds_factor is None else float(sum(st.seconds_lost or 0.0 for st in stalls))

    findings: list[Finding] = []
    # timing jitter: a stall that costs nothing is no finding (it stays in the result's stalls)
    if stalls and not (stall_lost is not None and stall_lost < min_finding_seconds):
        findings.append(_stall_finding(pace, stalls, stall_lost, stall_factor, interval_means, costly))
    pause_finding = _pause_finding(pace, pauses, period, bool(marks), eval_steps is not None and len(eval_steps) > 0,
                                   epoch_steps, min_finding_seconds,
                                   large_pause_share)
    if pause_finding is not None:
        findings.append(pause_finding)
    dip_steps = set(dips.steps) if dips is not None else set()
    dips_at_pauses = bool(pauses) and len(dip_steps & {st.step for st in pauses}) >= 0.8 * len(dip_steps)
    if dips is not None and period is None and not dips_at_pauses:
        findings.append(_dip_finding(pace, dips, costly))
    findings += _drop_findings(pace, change_points, c_steps, c_log, min_drop, costly, min_finding_seconds)

    p25, p75 = np.percentile(pace.values, [25, 75])
    return ThroughputResult(
        tag=(curve or wall_time_curve).tag,  # type: ignore[union-attr]
        kind=pace.kind,
        unit=pace.unit,
        higher_is_better=KINDS[pace.kind].higher_is_better,
        source=series.source,
        n_points=int(series.values.size),
        n_invalid=series.n_invalid,
        warmup_end_step=int(pace.steps[0]),
        n_warmup_points=pace.start,
        steady_median=pace.steady,
        steady_p25=float(p25),
        steady_p75=float(p75),
        steady_cv=float(robust_sigma(pace.slow) / pace.median) if pace.median > 0 else None,
        final_median=float(final_median),
        autocorrelation_time=float(tau),
        stalls=tuple(stalls),
        stall_seconds_lost=stall_lost,
        change_points=tuple(_in_unit(change_points, pace.kind)),
        dips=dips,
        findings=tuple(findings),
    )


@dataclass(frozen=True)
class _Pace:
    """One run's pace after warm-up (as slowness) and what turns extra slowness into seconds."""

    kind: str
    unit: str
    start: int  # warm-up points dropped
    steps: np.ndarray
    slow: np.ndarray
    gaps: np.ndarray
    values: np.ndarray
    level: np.ndarray  # the local level: a centred rolling median, so a stall is judged against the pace around it
    median: float
    seconds_factor: np.ndarray | None  # seconds per unit of slowness at each point (time kinds)
    run_seconds: float | None  # the time after warm-up
    rate_seconds: float | None  # rate kinds: seconds per unit of slowness, from the wall clock
    source_values: bool  # the values are the logged pace (not wall-clock gaps)

    @property
    def steady(self) -> float:
        return from_slowness(self.median, self.kind)

    def extra_seconds(self, i: int) -> float | None:
        """Seconds point ``i`` took beyond the local pace (time kinds only)."""
        if self.seconds_factor is None:
            return None
        return float((self.slow[i] - self.level[i]) * self.seconds_factor[i])

    def seconds_of(self, extra_slowness: float) -> float | None:
        """Seconds taken by extra slowness summed over points (rate kinds: from the wall clock)."""
        return None if self.rate_seconds is None else float(extra_slowness * self.rate_seconds)


def _pace(series: Series, source_curve: Curve | None, warmup: int | str | None, warmup_tolerance: float,
          interval_means: bool) -> _Pace:
    """The points after warm-up, their local level and their time in seconds."""
    kind = series.kind
    slow = to_slowness(series.values, kind)
    if warmup == "auto":
        start = detect_warmup(slow, tolerance=warmup_tolerance)
    elif warmup is None:
        start = 0
    else:
        start = int(np.searchsorted(series.steps, int(warmup), side="left"))
    start = min(start, slow.size - 1)
    steps, s_slow, gaps = series.steps[start:], slow[start:], series.gaps[start:]
    per_point_seconds = KINDS[kind].to_seconds
    seconds_factor = None
    if per_point_seconds is not None:
        is_gap_total = series.source != "values" or interval_means
        seconds_factor = per_point_seconds * (gaps if is_gap_total else np.ones_like(gaps))
    run_seconds = float(np.sum(s_slow * seconds_factor)) if seconds_factor is not None else None
    # Rate kinds (samples/s …): seconds from the wall clock of the logged points, shared out by slowness.
    rate_seconds = None
    if run_seconds is None and source_curve is not None:
        stamps = source_curve.wall_time[np.isin(source_curve.steps, steps)]
        stamps = stamps[np.isfinite(stamps)]
        if stamps.size >= 2 and np.ptp(stamps) > 0:
            run_seconds = float(np.ptp(stamps))
            rate_seconds = run_seconds / float(np.sum(s_slow))
    level = rolling_median(s_slow, max(11, min(101, s_slow.size // 20 * 2 + 1)))
    return _Pace(kind, KINDS[kind].unit, int(start), steps, s_slow, gaps, series.values[start:], level,
                 float(np.median(s_slow)), seconds_factor, run_seconds, rate_seconds, series.source == "values")


def _stall(pace: _Pace, index: int) -> Stall:
    """The logged point at ``index`` as a slow point: its step, value, slowdown and the seconds it cost."""
    return Stall(int(pace.steps[index]), float(pace.values[index]), float(pace.slow[index] / pace.level[index]),
                 pace.extra_seconds(index))


def _with_dips_at_marks(pace: _Pace, dips: PeriodicDips, pauses: list[Stall], marks: list[np.ndarray]) -> list[Stall]:
    """``pauses`` with the periodic dips added when they are at evaluations or epoch starts (at least 80% of them,
    by the rule of :func:`_split_pauses`): a loop that times its step with the evaluation before it is slower at
    every evaluation, which is time spent evaluating, not a throughput problem. Marks at most of the logged steps
    tell nothing apart: then the dips stay dips."""
    if not marks or np.unique(np.concatenate(marks)).size * 2 > pace.steps.size:
        return pauses
    points = [_stall(pace, i) for i in np.flatnonzero(np.isin(pace.steps, np.asarray(dips.steps)))]
    at_marks, _ = _split_pauses(points, pace.steps, marks)
    if not points or len(at_marks) < 0.8 * len(points):
        return pauses
    known = {st.step for st in pauses}
    return sorted(pauses + [st for st in at_marks if st.step not in known], key=lambda st: st.step)


def _split_pauses(stalls: list[Stall], steps: np.ndarray, marks: list[np.ndarray]) -> tuple[list[Stall], list[Stall]]:
    """(pauses, other stalls): a stall whose logging interval [previous logged step, its step] holds an
    evaluation or epoch start of ``marks`` is time spent evaluating."""
    if not marks or not stalls:
        return [], stalls
    evals = np.unique(np.concatenate(marks))
    at_eval = []
    for st in stalls:
        i = int(np.searchsorted(steps, st.step))
        previous = int(steps[i - 1]) if i > 0 else st.step - 1
        j = int(np.searchsorted(evals, previous, side="left"))
        at_eval.append(j < evals.size and evals[j] <= st.step)
    return ([st for st, hit in zip(stalls, at_eval, strict=True) if hit],
            [st for st, hit in zip(stalls, at_eval, strict=True) if not hit])


def _periodic_dips(steps: np.ndarray, rel: np.ndarray, dip_z: float, dip_min_slowdown: float, dip_min_count: int,
                   dip_min_coverage: float, dip_alpha: float) -> tuple[np.ndarray, PeriodicDips | None]:
    """The slow outliers (log slowness over the local level, robust z) and their period, if they have one."""
    rel_sigma = robust_sigma(rel)
    z = rel / rel_sigma if rel_sigma > 0 else np.where(rel > 0, np.inf, 0.0)
    slow_mask = (rel >= math.log1p(dip_min_slowdown)) & (z >= dip_z)
    period = _find_period(steps[slow_mask], steps, min_dips=dip_min_count, min_coverage=dip_min_coverage,
                          alpha=dip_alpha)
    if period is None:
        return slow_mask, None
    p, phase, coverage, hits, p_dips = period
    hit_rel = rel[np.isin(steps, hits)]
    return slow_mask, PeriodicDips(
        period_steps=int(p),
        phase=int(phase),
        n_dips=int(hits.size),
        coverage=float(coverage),
        steps=tuple(int(h) for h in hits),
        median_slowdown_pct=float(np.expm1(np.median(hit_rel)) * 100),
        p_value=p_dips,
    )


def _level_changes(c_steps: np.ndarray, c_log: np.ndarray, penalty_scale: float, max_change_points: int,
                   min_drop: float) -> tuple[list[ChangePoint], float | None, float]:
    """Lasting changes of the log slowness (outliers removed), the last level's slowness (None without a
    change) and the autocorrelation time of the residuals. ChangePoint levels are slowness here."""
    change_points: list[ChangePoint] = []
    final = None
    # residuals about a wide rolling median: removes level changes, keeps short-range dependence
    resid = c_log - rolling_median(c_log, 101)
    tau = autocorrelation_time(resid)
    if c_log.size >= 20:
        cuts, tau = _segment(c_log, resid, tau, penalty_scale, max_change_points, min_drop)
        if cuts is not None:
            bounds = [0, *cuts, c_log.size]
            levels = [float(np.exp(np.median(c_log[a:b]))) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            for j, cut in enumerate(cuts[:max_change_points]):
                before, after = levels[j], levels[j + 1]
                change_points.append(ChangePoint(step=int(c_steps[cut]), before=before, after=after,
                                                 slowdown_pct=float((after / before - 1) * 100)))
            final = levels[-1]
    return change_points, final, tau


def _stall_finding(pace: _Pace, stalls: list[Stall], stall_lost: float | None, stall_factor: float,
                   interval_means: bool, costly: Callable[[float | None], bool]) -> Finding:
    worst = max(stalls, key=lambda st: st.times_median)
    lost_txt = ""
    if stall_lost is not None and pace.seconds_factor is not None:
        # time after warm-up: exact for interval totals; for sampled step times, each
        # logged pace stands for its whole interval and a stall's extra time counts once
        if not pace.source_values or interval_means:
            total = float(np.sum(pace.slow * pace.seconds_factor))
        else:
            total = float(np.sum(pace.level * pace.gaps) * KINDS[pace.kind].to_seconds) + stall_lost  # type: ignore[operator]
        lost_txt = f"; {stall_lost:.1f} s lost in total ({stall_lost / total:.1%} of the time after warm-up)"
    shown = ", ".join(str(st.step) for st in stalls[:8]) + (" …" if len(stalls) > 8 else "")
    cost = stall_lost if stall_lost is not None else pace.seconds_of(
        float(sum((st.times_median - 1) * pace.level[np.searchsorted(pace.steps, st.step)] for st in stalls)))
    warn = (len(stalls) > 1 or (stall_lost or 0) > 60) and costly(cost)
    return Finding(
        "throughput_stall",
        Severity.WARNING if warn else Severity.INFO,
        f"{len(stalls)} stall(s) at least {stall_factor:g}x slower than the steady "
        f"{pace.steady:.4g} {pace.unit} (steps {shown}); worst at step {worst.step}: "
        f"{worst.value:.4g} {pace.unit}, {worst.times_median:.1f}x the pace around it{lost_txt}.",
        recommend("throughput_stall"),
        step=stalls[0].step,
        step_end=stalls[-1].step,
        evidence={"steps": [st.step for st in stalls], "seconds_lost": stall_lost, "steady_median": pace.steady,
                  "unit": pace.unit},
    )


def _pause_finding(pace: _Pace, pauses: list[Stall], period: int | None, marked: bool, has_evals: bool,
                   epoch_steps: np.ndarray | None, min_seconds: float, large_share: float) -> Finding | None:
    """The time spent in pauses at evaluations, epoch starts or one period, as a share of the wall time."""
    if not pauses:
        return None
    lost = None if pace.seconds_factor is None else float(sum(st.seconds_lost or 0.0 for st in pauses))
    if lost is not None and lost < min_seconds:
        return None
    share = lost / pace.run_seconds if lost is not None and pace.run_seconds else None
    share_txt = f"; {lost:.1f} s in all, {share:.1%} of the wall time after warm-up" if share is not None else ""
    by_epoch = epoch_steps is not None and len(epoch_steps) > 0
    where = (f"every {period} steps" if period is not None and not marked
             else "at evaluation steps or epoch starts" if by_epoch and has_evals
             else "at epoch starts" if by_epoch else "at evaluation steps")
    advice = (" A large share: evaluate less often (or on a subset, or asynchronously) to train faster."
              if share is not None and share >= large_share else "")
    return Finding(
        "evaluation_time",
        Severity.INFO,
        f"{len(pauses)} pause(s) {where} (first at step {pauses[0].step}): the time spent "
        f"evaluating{share_txt}.{advice}",
        recommend("evaluation_time"),
        step=pauses[0].step,
        step_end=pauses[-1].step,
        evidence={"steps": [st.step for st in pauses], "seconds": lost, "share": share, "period_steps": period},
    )


def _dip_finding(pace: _Pace, dips: PeriodicDips, costly: Callable[[float | None], bool]) -> Finding:
    hit = np.isin(pace.steps, np.array(dips.steps))
    extra = pace.slow[hit] - pace.level[hit]
    cost = float(np.sum(extra * pace.seconds_factor[hit])) if pace.seconds_factor is not None else \
        pace.seconds_of(float(np.sum(extra)))
    return Finding(
        "throughput_dips",
        Severity.WARNING if dips.median_slowdown_pct >= 25 and costly(cost) else Severity.INFO,
        f"Throughput dips every {dips.period_steps} steps ({dips.n_dips} dips, first at step "
        f"{dips.steps[0]}): those steps are {_slower(dips.median_slowdown_pct)} (median) than the "
        f"steady {pace.steady:.4g} {pace.unit}.",
        recommend("throughput_dips"),
        step=dips.steps[0],
        step_end=dips.steps[-1],
        evidence={"period_steps": dips.period_steps, "phase": dips.phase, "steps": list(dips.steps)},
    )


def _drop_findings(pace: _Pace, slow_changes: list[ChangePoint], c_steps: np.ndarray, c_log: np.ndarray,
                   min_drop: float, costly: Callable[[float | None], bool], min_seconds: float) -> list[Finding]:
    """A finding per lasting slowdown (``slow_changes``: levels as slowness) that is also ``min_drop`` slower
    than the first steady level (the end of a fast episode, back to the usual pace, is not a drop), and that
    cost at least ``min_seconds`` when its cost in time is known (a millisecond-step run's jitter is none)."""
    findings = []
    first = slow_changes[0].before if slow_changes else None
    for raw, cp in zip(slow_changes, _in_unit(slow_changes, pace.kind), strict=True):
        vs_first = (raw.after / first - 1) * 100  # type: ignore[operator]
        if cp.slowdown_pct < min_drop * 100 or vs_first < min_drop * 100:
            continue
        extra = float(np.sum(np.exp(c_log[c_steps >= cp.step]) - raw.before))
        cost = extra * float(np.median(pace.seconds_factor)) if pace.seconds_factor is not None else \
            pace.seconds_of(extra)
        if cost is not None and cost < min_seconds:
            continue
        findings.append(Finding(
            "throughput_drop",
            Severity.WARNING if cp.slowdown_pct >= 25 and costly(cost) else Severity.INFO,
            f"Throughput dropped at step {cp.step}: {cp.before:.4g} → {cp.after:.4g} {pace.unit} "
            f"({cp.slowdown_pct:.0f}% more time per unit of work), and stayed there"
            + (f" ({vs_first:.0f}% slower than the first steady level)." if raw is not slow_changes[0] else "."),
            recommend("throughput_drop"),
            step=cp.step,
            evidence={"before": cp.before, "after": cp.after, "slowdown_pct": cp.slowdown_pct,
                      "slowdown_vs_first_level_pct": vs_first, "unit": pace.unit},
        ))
    return findings


def _in_unit(slow_changes: list[ChangePoint], kind: str) -> list[ChangePoint]:
    """Change points with their levels in the metric's own unit."""
    return [ChangePoint(cp.step, from_slowness(cp.before, kind), from_slowness(cp.after, kind), cp.slowdown_pct)
            for cp in slow_changes]


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


