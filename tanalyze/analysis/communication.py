"""Communication overhead: the share of each step a distributed job spends communicating, and its trend.

Input is the timers the frameworks report per logging interval, under one naming scheme
(:func:`timer_curves`): a console timer line becomes tags ``time (ms)/<timer name as printed>`` (Megatron's
``time (ms) | forward-compute: … | backward-params-all-reduce: … | optimizer: …``, DeepSpeed's
``time (ms) | fwd: … | bwd: … | bwd_allreduce: … | step: …`` in the same line shape), and Megatron's
TensorBoard timers (``--log-timers-to-tensorboard``: ``<timer name>-time`` in seconds, beside
``iteration-time``) are read as the same timers in milliseconds. A timer is **communication** when its name says so (:func:`is_communication_timer`:
all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, send/recv, ``*-grads-sync``, ``comm``); nested
timers are counted once (DeepSpeed's ``*_microstep`` timers only when the step timers are absent, Megatron's
``*-grads-all-reduce`` not beside their parent ``all-grads-sync``).

The step time is, in order: the run's per-iteration step time (Megatron's ``elapsed time per iteration (ms)``),
DeepSpeed's ``fwd + bwd + step``, else the sum of the top-level timers (those not nested in another by name);
``step_source`` says which. Frameworks time the communication that the step waits for (not what overlaps
with compute), so the share is time the step could not compute.

Finding ``communication_bound`` (warning) when the median share is at least ``bound_share`` (0.5): from then on
a step spends more time communicating than computing, faster compute cannot speed it up by more than 2×, and
the interconnect, the parallel layout or a straggler the others wait for in the collective is the bottleneck.
``communication_rising`` (info) when the Theil–Sen trend of the share rises by ``rising_change`` (0.10) or more
over the run. A rank that is slow makes the others' all-reduce timers long: read it with the rank analysis.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import quiet_numpy
from tanalyze.curves import Curve, bin_medians, theil_sen

__all__ = ["TIMER_PREFIX", "RankShare", "CommunicationResult", "analyze_communication", "compute_time_by_rank",
           "is_communication_timer", "timer_curves"]

#: The tag prefix of a framework timer (milliseconds per iteration): ``time (ms)/<timer name>``.
TIMER_PREFIX = "time (ms)/"
#: Points kept of the share series for a chart.
SERIES_POINTS = 200

_COMM = re.compile(
    r"all[-_ ]?reduce|all[-_ ]?gather|reduce[-_ ]?scatter|all[-_ ]?to[-_ ]?all|alltoall|broadcast"
    r"|(?:^|[-_ ])(?:send|recv|comms?|p2p)(?:$|[-_ ])|grads?[-_ ]sync|params?[-_ ]sync", re.IGNORECASE)
_DS_STEP = ("fwd", "bwd", "step")
_MICRO = "_microstep"


def is_communication_timer(name: str) -> bool:
    """True for a timer that measures communication, by its name (``backward-params-all-reduce``,
    ``bwd_allreduce``, ``forward-send-backward-recv``, ``all-grads-sync``, ``params-all-gather`` …)."""
    return bool(_COMM.search(name))


#: Megatron's TensorBoard timer tags: ``<timer name>-time`` (seconds per iteration); ``iteration-time`` is the step.
_TB_TIMER = re.compile(r"^([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)-time$")
_TB_STEP = "iteration-time"


def timer_curves(curves: Mapping[str, Curve]) -> dict[str, Curve]:
    """The framework timers among ``curves`` by timer name, in milliseconds: ``time (ms)/<name>`` tags as they
    are; Megatron's TensorBoard ``<name>-time`` tags (seconds) times 1000, when there are at least two of them
    besides ``iteration-time`` (one lone ``…-time`` tag is not taken for a timer)."""
    out = {tag[len(TIMER_PREFIX):]: c for tag, c in curves.items() if tag.startswith(TIMER_PREFIX) and len(c.steps)}
    if out:
        return out
    board = {m.group(1): c for tag, c in curves.items()
             if tag != _TB_STEP and len(c.steps) and (m := _TB_TIMER.match(tag))}
    if len(board) < 2:
        return {}
    return {name: Curve(c.tag, c.steps, c.values * 1000.0, c.wall_time) for name, c in board.items()}


def compute_time_by_rank(timers_by_rank: Mapping[int, Mapping[str, Curve]],
                         step_time_by_rank: Mapping[int, Curve] | None = None) -> dict[int, Curve]:
    """Each rank's step time less its communication timers, in seconds: the rank's own work, before it waits
    for the others in a collective (what the rank analysis compares to find a straggler)."""
    out = {}
    for rank, timers in timers_by_rank.items():
        found = _shares(timers, (step_time_by_rank or {}).get(rank))
        if found is None:
            continue
        _, source, _, comm_ms, step_ms = found
        work = (step_ms - comm_ms).clip(lower=0.0) / 1000.0
        out[int(rank)] = Curve.from_arrays(work.index.to_numpy(), work.to_numpy(),
                                           tag=f"compute time ({source} less communication)")
    return out


@dataclass(frozen=True)
class RankShare(ResultMixin):
    """One rank's median communication share (when each rank logs its own timers)."""

    rank: int
    median_share: float
    median_comm_ms: float
    median_step_ms: float
    steps_compared: int


@dataclass(frozen=True)
class CommunicationResult(ResultMixin):
    comm_timers: tuple[str, ...]
    step_source: str
    steps_compared: int
    first_step: int
    last_step: int
    median_share: float
    last_share: float
    median_comm_ms: float
    median_step_ms: float
    #: Theil–Sen slope of the share per 1,000 steps, and the fitted share at the last step minus at the first
    trend_per_1k_steps: float | None
    change: float | None
    per_rank: tuple[RankShare, ...]
    #: the share per step (thinned to at most :data:`SERIES_POINTS`), for a chart
    series_steps: tuple[int, ...]
    series_share: tuple[float, ...]
    findings: tuple[Finding, ...]


def _series(curve: Curve) -> pd.Series:
    s = pd.Series(curve.values, index=curve.steps, dtype=np.float64)
    s = s[~s.index.duplicated(keep="last")]
    return s[np.isfinite(s.to_numpy())]


def _chosen(timers: Mapping[str, Curve]) -> dict[str, Curve]:
    """The timers counted once: DeepSpeed's microstep timers only without the step timers."""
    names = set(timers)
    out = {}
    for name, curve in timers.items():
        if name.endswith(_MICRO) and name[: -len(_MICRO)] in names:
            continue
        out[name] = curve
    return out


def _comm_names(timers: Mapping[str, Curve]) -> tuple[list[str], set[str]]:
    """The communication timers counted, and those left out as nested in one of them."""
    names = [n for n in timers if is_communication_timer(n)]
    nested: set[str] = set()
    if any(n.endswith("all-grads-sync") for n in names):  # Megatron-LM: it holds the grads' all-reduces
        nested = {n for n in names if not n.endswith("all-grads-sync") and "grads-all-reduce" in n}
    return sorted(n for n in names if n not in nested), nested


def _step_total(timers: Mapping[str, Curve], step_time: Curve | None,
                nested: set[str]) -> tuple[pd.Series, str] | None:
    if step_time is not None and len(step_time.steps):
        return _series(step_time), f"step time tag {step_time.tag}"
    for suffix in ("", _MICRO):
        parts = [p + suffix for p in _DS_STEP]
        if all(p in timers for p in parts):
            frame = pd.DataFrame({p: _series(timers[p]) for p in parts}).dropna()
            return frame.sum(axis=1), " + ".join(parts)
    names = [n for n in timers if n not in nested]
    top = [n for n in names if not any(n != o and n.startswith(o + "-") for o in names)]
    if "forward-backward" in top:  # Megatron-LM: it holds the forward and backward compute and pipeline p2p
        top = [n for n in top if n == "forward-backward" or not n.startswith(("forward-", "backward-"))]
    if len(top) < 2:
        return None
    frame = pd.DataFrame({n: _series(timers[n]) for n in top}).dropna()
    return frame.sum(axis=1), "sum of the top-level timers (" + ", ".join(sorted(top)) + ")"


def _shares(timers: Mapping[str, Curve], step_time: Curve | None
            ) -> tuple[list[str], str, pd.Series, pd.Series, pd.Series] | None:
    timers = _chosen(timers)
    comm, nested = _comm_names(timers)
    if not comm:
        return None
    total = _step_total(timers, step_time, nested)
    if total is None:
        return None
    step, source = total
    comm_ms = pd.DataFrame({n: _series(timers[n]) for n in comm}).dropna().sum(axis=1)
    both = pd.DataFrame({"comm": comm_ms, "step": step}).dropna()
    both = both[both["step"] > 0].sort_index()
    if both.empty:
        return None
    share = (both["comm"] / both["step"]).clip(0.0, 1.0)
    return comm, source, share, both["comm"], both["step"]


def _steady(n: int) -> slice:
    """Leave out the first logged interval (warm-up: the first steps compile, allocate and fill caches)."""
    return slice(1 if n >= 3 else 0, None)


@quiet_numpy
def analyze_communication(
    timers: Mapping[str, Curve],
    *,
    step_time: Curve | None = None,
    timers_by_rank: Mapping[int, Mapping[str, Curve]] | None = None,
    step_time_by_rank: Mapping[int, Curve] | None = None,
    bound_share: float = 0.5,
    rising_change: float = 0.10,
    min_trend_points: int = 5,
) -> CommunicationResult | None:
    """The communication share of a run's steps from its framework timers (None: no communication timer, or
    nothing to divide it by).

    ``timers``: timer name → curve in milliseconds (see :func:`timer_curves`); ``step_time``: the per-iteration
    step time in milliseconds when the run logs one. ``timers_by_rank`` / ``step_time_by_rank``: the same per
    rank, when each rank logs its own.
    """
    ranks = {}
    for rank in sorted(timers_by_rank or {}):
        mine = _shares(timers_by_rank[rank], (step_time_by_rank or {}).get(rank))
        if mine is not None:
            ranks[int(rank)] = mine
    found = _shares(timers, step_time)
    if len(ranks) >= 2:  # the job's share: the ranks' mean at each step (the run's own curves mix the ranks)
        first = next(iter(ranks.values()))
        parts = [pd.DataFrame({f"{k}{r}": v for k, v in zip(("share", "comm", "step"), found_r[2:], strict=True)})
                 for r, found_r in ranks.items()]
        wide = pd.concat(parts, axis=1).dropna()
        if not wide.empty:
            found = (first[0], first[1] + f", mean of {len(ranks)} ranks",
                     wide.filter(like="share").mean(axis=1), wide.filter(like="comm").mean(axis=1),
                     wide.filter(like="step").mean(axis=1))
    if found is None:
        return None
    comm, source, share, comm_ms, step_ms = found
    keep = _steady(len(share))
    steady, steady_comm, steady_step = share.iloc[keep], comm_ms.iloc[keep], step_ms.iloc[keep]
    steps = steady.index.to_numpy(dtype=np.float64)
    slope = change = None
    if len(steady) >= min_trend_points and np.ptp(steps) > 0:
        x, y = (bin_medians(steps, steady.to_numpy(), 300) if len(steady) > 300 else (steps, steady.to_numpy()))
        fitted, _ = theil_sen(x, y)
        if np.isfinite(fitted):
            slope, change = float(fitted * 1000), float(fitted * np.ptp(steps))
    per_rank = []
    for rank, (_, _, r_share, r_comm, r_step) in ranks.items():
        k = _steady(len(r_share))
        per_rank.append(RankShare(int(rank), float(r_share.iloc[k].median()), float(r_comm.iloc[k].median()),
                                  float(r_step.iloc[k].median()), int(len(r_share.iloc[k]))))
    median = float(steady.median())
    idx = np.unique(np.linspace(0, len(share) - 1, min(len(share), SERIES_POINTS)).astype(int))
    findings = []
    evidence = {"comm_timers": list(comm), "step_source": source, "median_share": median,
                "steps_compared": int(len(steady)), "first_step": int(share.index[0]),
                "last_step": int(share.index[-1]), "median_comm_ms": float(steady_comm.median()),
                "median_step_ms": float(steady_step.median()), "threshold": bound_share}
    if median >= bound_share:
        findings.append(Finding(
            "communication_bound", Severity.WARNING,
            f"Communication takes {median:.0%} of each step (median over {len(steady)} logged steps: "
            f"{steady_comm.median():.4g} ms of {steady_step.median():.4g} ms in {', '.join(comm)}); at "
            f"{bound_share:.0%} or more a step waits longer for communication than it computes.",
            recommend("communication_bound"), step=int(share.index[0]), step_end=int(share.index[-1]),
            evidence=evidence))
    if change is not None and change >= rising_change:
        findings.append(Finding(
            "communication_rising", Severity.INFO,
            f"The communication share rises over the run: {change:+.0%} from step {int(steps[0]):,} to "
            f"{int(steps[-1]):,} (Theil–Sen trend, {slope:+.2%} per 1,000 steps), to {float(share.iloc[-1]):.0%} "
            f"at the last logged step.",
            recommend("communication_rising"), step=int(steps[0]), step_end=int(steps[-1]),
            evidence={**evidence, "change": change, "trend_per_1k_steps": slope}))
    return CommunicationResult(
        comm_timers=tuple(comm), step_source=source, steps_compared=int(len(steady)),
        first_step=int(share.index[0]), last_step=int(share.index[-1]), median_share=median,
        last_share=float(share.iloc[-1]), median_comm_ms=float(steady_comm.median()),
        median_step_ms=float(steady_step.median()), trend_per_1k_steps=slope, change=change,
        per_rank=tuple(per_rank), series_steps=tuple(int(s) for s in share.index.to_numpy()[idx]),
        series_share=tuple(float(v) for v in share.to_numpy()[idx]), findings=tuple(findings))
