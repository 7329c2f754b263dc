"""Ranks of one distributed run: a straggler, a rank that stopped logging early, unsynchronised metrics.

Input is one run's curves split by its ``rank`` column (DeepSpeed's ``[Rank N]`` lines, per-rank
event-file folders). Three questions:

- **Straggler**: a rank that is the slowest in most steps and slower than the others by
  ``straggler_fraction``. Its step time comes from a step-time tag when the ranks log one (their
  own work, before they wait for each other), else from when each rank logged the same step (a
  synchronous job: the rank that gets there last makes the others wait by its lag; this
  assumes the ranks' clocks agree). ``wait_share`` is the share of the step the others wait.
- **Stopped rank**: a rank whose last logged step is short of the others' (a crash or a hang of
  that rank), with its last step and time against theirs.
- **Disagreement**: every rank logs its own loss and the values differ at the same step: the
  logged metric is one shard's, not reduced across ranks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import quiet_numpy
from tanalyze.curves import Curve

__all__ = ["RankStats", "Straggler", "StoppedRank", "Disagreement", "RankAnalysis", "analyze_ranks"]


@dataclass(frozen=True)
class RankStats(ResultMixin):
    """One rank's extent and steady step time (seconds; None when it cannot be told)."""

    rank: int
    points: int
    first_step: int
    last_step: int
    last_wall_time: float | None
    step_seconds: float | None


@dataclass(frozen=True)
class Straggler(ResultMixin):
    """The rank the others wait for, and what it costs them."""

    rank: int
    method: str  # "step-time tag <tag>" or "wall time of the same step"
    median_seconds: float  # its step time (tag) or its lag behind the first rank (wall time)
    others_seconds: float  # the other ranks' median step time (tag) or 0 (wall time)
    slower_pct: float  # (median / others - 1) × 100 for a tag; lag / step period × 100 for wall time
    slowest_share: float  # share of the compared steps in which it was the slowest
    wait_share: float  # share of the step time the other ranks spend waiting for it
    steps_compared: int


@dataclass(frozen=True)
class StoppedRank(ResultMixin):
    """A rank whose logs end before the others'."""

    rank: int
    last_step: int
    last_wall_time: float | None
    others_last_step: int
    others_last_wall_time: float | None
    seconds_before_others: float | None  # how much longer the others went on logging


@dataclass(frozen=True)
class Disagreement(ResultMixin):
    """One tag logged by every rank with values that differ at the same step."""

    tag: str
    steps_compared: int
    median_relative_spread: float  # (max - min) / |mean| over ranks, median over steps
    max_relative_spread: float


@dataclass(frozen=True)
class RankAnalysis(ResultMixin):
    ranks: tuple[RankStats, ...]
    straggler: Straggler | None
    stopped: tuple[StoppedRank, ...]
    disagreement: Disagreement | None
    findings: tuple[Finding, ...]


def _series(curve: Curve, field: str) -> pd.Series:
    values = curve.values if field == "value" else curve.wall_time
    series = pd.Series(values, index=curve.steps, dtype=np.float64)
    series = series[~series.index.duplicated(keep="last")]
    return series[np.isfinite(series.to_numpy())]


def _stats(rank: int, curve: Curve, step_time: Curve | None) -> RankStats:
    wall = _series(curve, "wall")
    seconds = None
    if step_time is not None:
        values = _series(step_time, "value")
        values = values[values > 0]
        seconds = float(values.median()) if len(values) else None
    elif len(wall) >= 3:
        per_step = np.diff(wall.to_numpy()) / np.diff(wall.index.to_numpy())
        per_step = per_step[np.isfinite(per_step) & (per_step > 0)]
        seconds = float(np.median(per_step)) if per_step.size else None
    return RankStats(rank, int(len(curve.steps)), int(curve.steps.min()), int(curve.steps.max()),
                     float(wall.iloc[-1]) if len(wall) else None, seconds)


def _slowest(wide: pd.DataFrame) -> tuple[int, float] | None:
    """The rank slowest at most steps of ``wide`` (columns: ranks), and that share of the steps."""
    slowest = wide.idxmax(axis=1)
    counts = slowest.value_counts()
    if counts.empty:
        return None
    return int(counts.index[0]), float(counts.iloc[0] / len(wide))


def _jitter(wait: float, steps: pd.Index, min_wait: tuple[float, float]) -> bool:
    """True when the others' wait is timing jitter: under ``min_wait[0]`` seconds a step and under ``min_wait[1]``
    seconds over the steps compared (a rank 0.3 ms slower on a shared CPU is no straggler)."""
    span = float(steps.max() - steps.min() + 1) if len(steps) else 0.0
    return wait < min_wait[0] and wait * span < min_wait[1]


def _straggler_from_tag(step_time: Mapping[int, Curve], fraction: float, share: float, min_steps: int,
                        period: float | None, min_wait: tuple[float, float]) -> Straggler | None:
    wide = pd.DataFrame({r: _series(c, "value") for r, c in step_time.items()}).dropna()
    wide = wide[(wide > 0).all(axis=1)]
    if len(wide) < min_steps or wide.shape[1] < 2:
        return None
    found = _slowest(wide)
    if found is None:
        return None
    rank, slowest_share = found
    others = [r for r in wide.columns if r != rank]
    mine = float(wide[rank].median())
    reference = float(wide[others].median(axis=1).median())
    if slowest_share < share or reference <= 0 or mine < reference * (1 + fraction):
        return None
    waits = wide[rank].to_numpy()[:, None] - wide[others].to_numpy()  # each other rank's wait at each step
    wait = float(np.median(np.clip(waits, 0, None).mean(axis=1)))
    if _jitter(wait, wide.index, min_wait):
        return None
    step = max(period or 0.0, mine)  # the step lasts at least the straggler's own work
    return Straggler(rank, f"step-time tag {next(iter(step_time.values())).tag}", mine, reference,
                     float((mine / reference - 1) * 100), slowest_share, float(min(wait / step, 1.0)), len(wide))


def _straggler_from_wall(by_rank: Mapping[int, Curve], fraction: float, share: float,
                         min_steps: int, min_wait: tuple[float, float]) -> Straggler | None:
    wide = pd.DataFrame({r: _series(c, "wall") for r, c in by_rank.items()}).dropna()
    if len(wide) < min_steps or wide.shape[1] < 2:
        return None
    lag = wide.sub(wide.min(axis=1), axis=0)
    first = wide.min(axis=1)
    per_step = (np.diff(first.to_numpy()) / np.diff(first.index.to_numpy()))
    per_step = per_step[np.isfinite(per_step) & (per_step > 0)]
    if not per_step.size:
        return None
    period = float(np.median(per_step))
    found = _slowest(lag)
    if found is None:
        return None
    rank, slowest_share = found
    mine = float(lag[rank].median())
    if slowest_share < share or mine < fraction * period:
        return None
    others = [r for r in lag.columns if r != rank]
    waits = lag[rank].to_numpy()[:, None] - lag[others].to_numpy()
    wait = float(np.median(np.clip(waits, 0, None).mean(axis=1)))
    if _jitter(wait, lag.index, min_wait):
        return None
    return Straggler(rank, "wall time of the same step", mine, 0.0, float(mine / period * 100), slowest_share,
                     float(min(wait / period, 1.0)), len(wide))


def _stopped(stats: list[RankStats], by_rank: Mapping[int, Curve]) -> list[StoppedRank]:
    furthest = max(s.last_step for s in stats)
    out = []
    for s in stats:
        if s.last_step >= furthest:
            continue
        steps = np.unique(by_rank[s.rank].steps)
        interval = int(np.median(np.diff(steps))) if steps.size > 1 else 1
        if furthest - s.last_step < interval:  # short of the others by less than one of its logging intervals
            continue
        others = [o for o in stats if o.rank != s.rank]
        last = max(others, key=lambda o: (o.last_step, o.last_wall_time or 0.0))
        gone = (last.last_wall_time - s.last_wall_time
                if last.last_wall_time is not None and s.last_wall_time is not None else None)
        out.append(StoppedRank(s.rank, s.last_step, s.last_wall_time, last.last_step, last.last_wall_time, gone))
    return out


def _disagreement(by_rank: Mapping[int, Curve], tolerance: float, min_steps: int) -> Disagreement | None:
    wide = pd.DataFrame({r: _series(c, "value") for r, c in by_rank.items()}).dropna()
    if len(wide) < min_steps or wide.shape[1] < 2:
        return None
    values = wide.to_numpy()
    scale = np.abs(values.mean(axis=1))
    spread = (values.max(axis=1) - values.min(axis=1)) / np.where(scale > 0, scale, np.nan)
    spread = spread[np.isfinite(spread)]
    if not spread.size or float(np.median(spread)) <= tolerance:
        return None
    return Disagreement(next(iter(by_rank.values())).tag, int(spread.size), float(np.median(spread)),
                        float(spread.max()))


@quiet_numpy
def analyze_ranks(
    by_rank: Mapping[int, Curve],
    *,
    step_time_by_rank: Mapping[int, Curve] | None = None,
    straggler_fraction: float = 0.10,
    slowest_share: float = 0.75,
    costly_wait_share: float = 0.10,
    disagreement_tolerance: float = 1e-3,
    min_steps: int = 5,
    check_disagreement: bool = True,
    min_wait_seconds: float = 0.005,
    min_total_wait_seconds: float = 1.0,
) -> RankAnalysis:
    """Stragglers, stopped ranks and unsynchronised metrics of one run.

    ``by_rank``: the run's training loss (or its main tag) per rank, with wall times.
    ``step_time_by_rank``: a step-time tag per rank in seconds, when the ranks log one.
    A straggler is the slowest rank in ``slowest_share`` of the compared steps and
    ``straggler_fraction`` slower; its finding is a warning when the others wait more than
    ``costly_wait_share`` of the step. Losses whose median relative spread across ranks at one
    step exceeds ``disagreement_tolerance`` are each rank's own (not all-reduced);
    ``check_disagreement=False`` when ``by_rank`` is not a metric whose values should agree.
    A wait under ``min_wait_seconds`` per step that adds up to under ``min_total_wait_seconds`` over the steps
    compared is timing jitter, not a straggler.
    """
    by_rank = {int(r): c for r, c in by_rank.items() if len(c.steps)}
    step_time_by_rank = {int(r): c for r, c in (step_time_by_rank or {}).items() if len(c.steps)}
    if len(by_rank) < 2:
        return RankAnalysis((), None, (), None, ())
    stats = [_stats(r, by_rank[r], step_time_by_rank.get(r)) for r in sorted(by_rank)]
    stopped = _stopped(stats, by_rank)
    # speed is compared over the steps every rank logged (a stopped rank's missing steps are not slow ones)
    straggler = None
    if len(step_time_by_rank) >= 2:
        periods = [p for p in (_stats(r, by_rank[r], None).step_seconds for r in by_rank) if p]
        period = float(np.median(periods)) if periods else None
        straggler = _straggler_from_tag(step_time_by_rank, straggler_fraction, slowest_share, min_steps, period,
                                        (min_wait_seconds, min_total_wait_seconds))
    if straggler is None:
        straggler = _straggler_from_wall(by_rank, straggler_fraction, slowest_share, min_steps,
                                         (min_wait_seconds, min_total_wait_seconds))
    disagreement = _disagreement(by_rank, disagreement_tolerance, min_steps) if check_disagreement else None
    findings = []
    if straggler is not None:
        costly = straggler.wait_share > costly_wait_share
        how = (f"median step time {straggler.median_seconds:.4g} s against {straggler.others_seconds:.4g} s on "
               f"the others ({straggler.slower_pct:.0f}% slower)" if straggler.method.startswith("step-time")
               else f"it logs each step a median {straggler.median_seconds:.4g} s after the first rank "
                    f"({straggler.slower_pct:.0f}% of a step)")
        findings.append(Finding(
            "straggler_rank", Severity.WARNING if costly else Severity.INFO,
            f"Rank {straggler.rank} is a straggler: the slowest rank in {straggler.slowest_share:.0%} of "
            f"{straggler.steps_compared} steps, {how}; the other ranks wait about "
            f"{straggler.wait_share:.0%} of each step for it (from the {straggler.method}).",
            recommend("straggler_rank"), evidence=straggler.to_dict()))
    for s in stopped:
        after = (f", {s.seconds_before_others:.4g} s before the others' last log"
                 if s.seconds_before_others is not None else "")
        findings.append(Finding(
            "rank_stopped", Severity.WARNING,
            f"Rank {s.rank} stopped logging at step {s.last_step:,}{after}; the other ranks go on to step "
            f"{s.others_last_step:,} (a crash or a hang of that rank).",
            recommend("rank_stopped"), step=s.last_step, step_end=s.others_last_step, evidence=s.to_dict()))
    if disagreement is not None:
        findings.append(Finding(
            "rank_metrics_unsynced", Severity.INFO,
            f"Every rank logs its own {disagreement.tag}: at the same step the ranks' values differ by a median "
            f"{disagreement.median_relative_spread:.2%} (at most {disagreement.max_relative_spread:.2%}, "
            f"{disagreement.steps_compared} steps); the run is judged on their mean.",
            recommend("rank_metrics_unsynced"), evidence=disagreement.to_dict()))
    return RankAnalysis(tuple(stats), straggler, tuple(stopped), disagreement, tuple(findings))
