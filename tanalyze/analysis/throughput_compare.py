"""Throughput against a baseline: is the candidate's steady-state pace slower (or faster)?

The within-run analysis is :mod:`tanalyze.analysis.throughput`; both read their
points through :mod:`tanalyze.analysis.throughput_series`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import (
    autocorrelation_time,
    block_bootstrap_medians,
    mann_whitney_p,
    min_attainable_p,
    quiet_numpy,
    thin,
)
from tanalyze.analysis.throughput_series import (
    detect_warmup,
    from_slowness,
    kind_info,
    read_series,
    to_slowness,
)
from tanalyze.curves import Curve

__all__ = ["ThroughputComparison", "compare_throughput"]



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
    series = read_series(curve, kind)
    slow = to_slowness(series.values, kind)
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
    k = kind_info(kind)
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
    base_level, cand_level = from_slowness(base_med, kind), from_slowness(cand_med, kind)
    run_meds = tuple(from_slowness(float(np.median(r)), kind) for r in base_runs)
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
