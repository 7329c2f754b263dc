"""System metrics: GPU utilisation drops, thermal throttling, memory near capacity.

Series come from :func:`tanalyze.roles.resource_kind` (W&B ``system/*``, Lightning
``DeviceStatsMonitor``). W&B samples them on a timer: their ``step`` is seconds since
the run started and ``wall_time`` the sample's time; Lightning's are logged at
training steps. Times below are on each series' own axis (``clock``: ``"wall"`` →
seconds since the start, ``"step"`` → training steps). A training step is put
beside a wall-clock time by interpolating the run's own (wall time, step) pairs
(``step_clock``: a training curve with wall times), never outside them.

- ``gpu_util_drops``: on a GPU busy most of the run (median utilisation ≥
  ``busy_util``), drops below ``drop_fraction`` of its busy level that recur at
  regular intervals (≥ ``min_drops`` drops, coefficient of variation of the
  intervals between drop starts ≤ ``max_period_cv``) and take ≥ ``min_drop_share``
  of the busy span; drops lining up with evaluations are not reported.
- ``thermal_throttling``: the temperature rises by ≥ ``min_rise_c`` to a plateau of
  ≥ ``hot_c``, and after it reached the plateau the clock, the throughput (or step
  time) or, at unchanged high utilisation, the power fell by ≥ ``min_fall`` against
  before (Mann–Whitney p < ``alpha``).
- ``memory_near_capacity``: GPU or host memory at or above ``capacity_fraction`` of
  capacity in ≥ ``min_samples_above`` samples; capacity from a percent metric (W&B's
  ``memoryAllocated``, ``system/memory``), else for GPU memory in bytes ``gpu_capacity_bytes``
  (where a percent metric exists, it is used and the bytes one is not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import mann_whitney_p, quiet_numpy, rolling_median
from tanalyze.curves import Curve

__all__ = ["SystemSeries", "ResourceStats", "UtilDrops", "Throttling", "MemoryPressure", "SystemHealth",
           "analyze_system"]


@dataclass(frozen=True)
class SystemSeries:
    """One system-metric curve and what it measures (see :class:`tanalyze.roles.ResourceKind`)."""

    kind: str
    device: str
    unit: str
    clock: str  # "wall": step = seconds since the start; "step": training steps
    curve: Curve


@dataclass(frozen=True)
class ResourceStats(ResultMixin):
    kind: str
    device: str
    tag: str
    unit: str
    clock: str
    points: int
    median: float
    minimum: float
    maximum: float
    first: int  # first x (seconds or step)
    last: int


@dataclass(frozen=True)
class UtilDrops(ResultMixin):
    """Low-utilisation episodes of one GPU within its busy span."""

    device: str
    tag: str
    busy_level: float  # median utilisation (%) within the busy span
    threshold: float  # below this a sample is a drop
    drops: int
    starts: tuple[int, ...]  # x of each drop's first sample
    steps: tuple[int | None, ...]  # the training step at each start (None when it cannot be placed)
    period: float | None  # median interval between drop starts, in x units
    period_cv: float | None  # coefficient of variation of those intervals
    share: float  # share of the busy span spent in drops
    at_evaluation: float | None  # share of drops within one sample of an evaluation (None: none known)
    periodic: bool


@dataclass(frozen=True)
class Throttling(ResultMixin):
    device: str
    tag: str
    cool: float  # °C before the rise
    plateau: float  # °C, median after the onset
    onset: int  # x where the plateau was reached
    onset_step: int | None
    signal: str | None  # "clock", "throughput", "step time", "power"; None when none could be compared
    signal_tag: str | None
    before: float | None
    after: float | None
    change: float | None  # relative change of the performance signal (negative: slower)
    p_value: float | None
    detected: bool


@dataclass(frozen=True)
class MemoryPressure(ResultMixin):
    kind: str  # "gpu_memory" or "host_memory"
    device: str
    tag: str
    peak_percent: float
    peak_at: int
    peak_step: int | None
    share_above: float  # share of samples at or above the threshold
    samples_above: int
    capacity_bytes: float | None


@dataclass(frozen=True)
class SystemHealth(ResultMixin):
    series: tuple[ResourceStats, ...]
    alignment: str  # how wall-clock samples were placed at training steps
    #: (seconds since the start, training step) pairs across the run (≤ 40): where the wall clock meets the steps
    step_at: tuple[tuple[int, int], ...]
    drops: tuple[UtilDrops, ...]
    throttling: tuple[Throttling, ...]
    memory: tuple[MemoryPressure, ...]
    findings: tuple[Finding, ...]


def _finding(code: str, severity: Severity, message: str, **kw) -> Finding:
    return Finding(code, severity, message, recommend(code), **kw)


def _axis(s: SystemSeries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, values, wall) of the finite points, x sorted (one point per x)."""
    c = s.curve.collapse_steps().finite_part()
    return c.steps.astype(np.float64), c.values.astype(np.float64), c.wall_time.astype(np.float64)


def _when(x: float, clock: str) -> str:
    if clock == "step":
        return f"step {x:,.0f}"
    return f"{x / 60:.1f} min" if x >= 120 else f"{x:.0f} s"


class _Clock:
    """Training step at a wall time, from (wall, step) pairs of a training curve; x of a wall time per series."""

    def __init__(self, step_clock: Curve | None):
        self.walls = self.steps = None
        if step_clock is not None:
            c = step_clock.collapse_steps()
            ok = np.isfinite(c.wall_time)
            walls, steps = c.wall_time[ok], c.steps[ok].astype(np.float64)
            if walls.size >= 2:
                order = np.argsort(walls, kind="stable")
                walls, steps = walls[order], np.maximum.accumulate(steps[order])
                self.walls, self.steps = walls, steps

    @property
    def known(self) -> bool:
        return self.walls is not None

    def step_at(self, wall: float) -> int | None:
        if self.walls is None or not np.isfinite(wall) or wall < self.walls[0] or wall > self.walls[-1]:
            return None
        return int(round(float(np.interp(wall, self.walls, self.steps))))

    def wall_at(self, steps: np.ndarray) -> np.ndarray:
        """Wall times of training steps (NaN outside the known span)."""
        if self.walls is None:
            return np.full(len(steps), np.nan)
        out = np.interp(steps, self.steps, self.walls)
        return np.where((steps >= self.steps[0]) & (steps <= self.steps[-1]), out, np.nan)


def _step_of(s: SystemSeries, x: float, clock: _Clock, x_vals: np.ndarray, walls: np.ndarray) -> int | None:
    if s.clock == "step":
        return int(x)
    i = int(np.clip(np.searchsorted(x_vals, x), 0, len(x_vals) - 1))
    return clock.step_at(float(walls[i]))


def _offset(x: np.ndarray, walls: np.ndarray) -> float | None:
    """wall − x of a wall-clock series (its start time), when its samples carry wall times."""
    ok = np.isfinite(walls)
    return float(np.median(walls[ok] - x[ok])) if ok.any() else None


def _busy_span(values: np.ndarray, busy: float) -> tuple[int, int] | None:
    idx = np.flatnonzero(values >= busy)
    return (int(idx[0]), int(idx[-1])) if idx.size else None


def _drops(s: SystemSeries, clock: _Clock, eval_x: np.ndarray | None, *, busy_util: float, drop_fraction: float,
           min_drops: int, max_period_cv: float, min_drop_share: float, min_points: int) -> UtilDrops | None:
    x, v, walls = _axis(s)
    if v.size < min_points or float(np.median(v)) < busy_util:
        return None
    span = _busy_span(v, busy_util)
    if span is None:
        return None
    a, b = span
    xs, vs, ws = x[a:b + 1], v[a:b + 1], walls[a:b + 1]
    level = float(np.median(vs))
    threshold = drop_fraction * level
    low = vs < threshold
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(np.int8)])) == 1)
    # time-weighted share: each sample stands for the interval up to the next one
    dt = np.diff(xs, append=xs[-1] + (np.median(np.diff(xs)) if xs.size > 1 else 1.0))
    share = float(dt[low].sum() / dt.sum()) if dt.sum() > 0 else 0.0
    starts = xs[edges]
    period = cv = None
    if starts.size >= 3:
        gaps = np.diff(starts)
        period = float(np.median(gaps))
        cv = float(np.std(gaps) / np.mean(gaps)) if np.mean(gaps) > 0 else None
    at_eval = None
    if eval_x is not None and eval_x.size and starts.size:
        step_dt = float(np.median(np.diff(xs))) if xs.size > 1 else 1.0
        ends = []
        for e in edges:
            j = e
            while j + 1 < low.size and low[j + 1]:
                j += 1
            ends.append(xs[j])
        hits = [bool(np.any((eval_x >= st - step_dt) & (eval_x <= en + step_dt))) for st, en in zip(starts, ends, strict=True)]
        at_eval = float(np.mean(hits))
    periodic = bool(starts.size >= min_drops and cv is not None and cv <= max_period_cv and share >= min_drop_share)
    return UtilDrops(
        device=s.device, tag=s.curve.tag, busy_level=level, threshold=threshold, drops=int(starts.size),
        starts=tuple(int(t) for t in starts),
        steps=tuple(_step_of(s, float(t), clock, xs, ws) for t in starts[:50]),
        period=period, period_cv=cv, share=share, at_evaluation=at_eval, periodic=periodic,
    )


def _signal_points(signal: SystemSeries | Curve, s_temp: SystemSeries, clock: _Clock,
                   temp_offset: float | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(x on the temperature's axis, value) of a performance signal."""
    if isinstance(signal, SystemSeries):
        x, v, walls = _axis(signal)
        if signal.clock == s_temp.clock:
            return x, v
        return None
    c = signal.collapse_steps().finite_part()
    if s_temp.clock == "step":
        return c.steps.astype(np.float64), c.values
    if temp_offset is None:
        return None
    walls = c.wall_time.astype(np.float64)
    missing = ~np.isfinite(walls)
    if missing.any():
        walls = np.where(missing, clock.wall_at(c.steps.astype(np.float64)), walls)
    ok = np.isfinite(walls)
    return (walls[ok] - temp_offset), c.values[ok]


def _throttling(temp: SystemSeries, *, util: SystemSeries | None, clock_series: SystemSeries | None,
                power: SystemSeries | None, speed: Curve | None, speed_higher_is_better: bool, clock: _Clock,
                hot_c: float, min_rise_c: float, min_fall: float, alpha: float, busy_util: float,
                min_points: int) -> Throttling | None:
    x, v, walls = _axis(temp)
    if v.size < min_points:
        return None
    half = v[v.size // 2:]
    plateau = float(np.median(half))
    if plateau < hot_c:
        return None
    smooth = rolling_median(v, 3)
    reached = np.flatnonzero(smooth >= plateau - 2.0)
    if not reached.size or reached[0] < 2:
        return None
    onset_i = int(reached[0])
    cool = float(np.min(smooth[:onset_i]))
    if plateau - cool < min_rise_c:
        return None
    onset = float(x[onset_i])
    start = float(x[0])
    offset = _offset(x, walls)
    busy_mask = None
    if util is not None and util.clock == temp.clock:
        ux, uv, _ = _axis(util)
        busy_mask = (ux, uv >= busy_util)

    def busy(xs: np.ndarray) -> np.ndarray:
        if busy_mask is None:
            return np.ones(xs.size, dtype=bool)
        ux, ub = busy_mask
        i = np.clip(np.searchsorted(ux, xs), 0, len(ux) - 1)
        return ub[i]

    candidates: list[tuple[str, str, tuple[np.ndarray, np.ndarray] | None, bool]] = []
    if clock_series is not None:
        candidates.append(("clock", clock_series.curve.tag, _signal_points(clock_series, temp, clock, offset), True))
    if speed is not None:
        name = "throughput" if speed_higher_is_better else "step time"
        candidates.append((name, speed.tag, _signal_points(speed, temp, clock, offset), speed_higher_is_better))
    if power is not None and busy_mask is not None:
        candidates.append(("power", power.curve.tag, _signal_points(power, temp, clock, offset), True))
    chosen = None
    for name, tag, pts, higher in candidates:
        if pts is None:
            continue
        px, pv = pts
        keep = busy(px) if name in ("clock", "power") else np.ones(px.size, dtype=bool)
        before = pv[(px >= start) & (px < onset) & keep]
        after = pv[(px >= onset) & keep]
        if before.size < 3 or after.size < 3:
            continue
        b, a = float(np.median(before)), float(np.median(after))
        if b <= 0 or a <= 0:  # a rate or a time is positive; anything else is not a signal to compare
            continue
        change = (a / b - 1.0) if higher else (b / a - 1.0)  # as speed: negative = slower
        p = mann_whitney_p(before, after)
        chosen = (name, tag, b, a, change, p)
        break
    detected = False
    if chosen is not None:
        detected = bool(chosen[4] <= -min_fall and np.isfinite(chosen[5]) and chosen[5] < alpha)
    return Throttling(
        device=temp.device, tag=temp.curve.tag, cool=cool, plateau=plateau, onset=int(onset),
        onset_step=_step_of(temp, onset, clock, x, walls),
        signal=chosen[0] if chosen else None, signal_tag=chosen[1] if chosen else None,
        before=chosen[2] if chosen else None, after=chosen[3] if chosen else None,
        change=chosen[4] if chosen else None,
        p_value=float(chosen[5]) if chosen and np.isfinite(chosen[5]) else None, detected=detected,
    )


def _memory(s: SystemSeries, clock: _Clock, *, capacity_bytes: float | None,
            capacity_fraction: float) -> MemoryPressure | None:
    x, v, walls = _axis(s)
    if not v.size:
        return None
    capacity = None
    if s.unit == "%":
        pct = v
    elif s.unit in ("bytes", "MB") and capacity_bytes:
        capacity = capacity_bytes
        pct = v * (1.0 if s.unit == "bytes" else 2.0**20) / capacity * 100.0
    else:
        return None
    above = pct >= capacity_fraction * 100.0
    j = int(np.argmax(pct))
    return MemoryPressure(
        kind=s.kind, device=s.device, tag=s.curve.tag, peak_percent=float(pct[j]), peak_at=int(x[j]),
        peak_step=_step_of(s, float(x[j]), clock, x, walls), share_above=float(above.mean()),
        samples_above=int(above.sum()), capacity_bytes=capacity,
    )


def _pick(series: Sequence[SystemSeries], kind: str, device: str, unit: str | None = None) -> SystemSeries | None:
    for s in series:
        if s.kind == kind and s.device == device and (unit is None or s.unit == unit):
            return s
    return None


def _stats(s: SystemSeries) -> ResourceStats | None:
    x, v, _ = _axis(s)
    if not v.size:
        return None
    return ResourceStats(kind=s.kind, device=s.device, tag=s.curve.tag, unit=s.unit, clock=s.clock, points=int(v.size),
                         median=float(np.median(v)), minimum=float(v.min()), maximum=float(v.max()),
                         first=int(x[0]), last=int(x[-1]))


def _step_text(step: int | None) -> str:
    return f" (step ≈ {step:,})" if step is not None else ""


@quiet_numpy
def analyze_system(
    series: Sequence[SystemSeries],
    *,
    step_clock: Curve | None = None,
    speed: Curve | None = None,
    speed_higher_is_better: bool = True,
    eval_steps: np.ndarray | None = None,
    gpu_capacity_bytes: float | None = None,
    busy_util: float = 50.0,
    drop_fraction: float = 0.5,
    min_drops: int = 3,
    max_period_cv: float = 0.35,
    min_drop_share: float = 0.05,
    hot_c: float = 80.0,
    min_rise_c: float = 10.0,
    min_fall: float = 0.08,
    alpha: float = 0.01,
    capacity_fraction: float = 0.9,
    min_samples_above: int = 2,
    min_points: int = 10,
) -> SystemHealth:
    """Resource use of one run from its system-metric series (one per kind and device, preferred tag first).

    Args:
        series: the run's system metrics (see the module doc for what is judged).
        step_clock: a training curve with wall times: places wall-clock samples at training steps.
        speed: throughput (``speed_higher_is_better``) or step time of the run, at training steps.
        eval_steps: training steps of the evaluations (drops at them are not a loading bottleneck).
        gpu_capacity_bytes: a GPU's memory, for GPU memory logged in bytes without a percent companion.
    """
    clock = _Clock(step_clock)
    stats = [st for st in (_stats(s) for s in series) if st is not None]
    findings: list[Finding] = []

    # --- periodic utilisation drops ------------------------------------------------------------------
    drops: list[UtilDrops] = []
    for s in series:
        if s.kind != "gpu_util":
            continue
        eval_x = None
        if eval_steps is not None and len(eval_steps):
            if s.clock == "step":
                eval_x = np.asarray(eval_steps, dtype=np.float64)
            else:
                x, _, walls = _axis(s)
                off = _offset(x, walls)
                w = clock.wall_at(np.asarray(eval_steps, dtype=np.float64))
                eval_x = (w[np.isfinite(w)] - off) if off is not None else None
        found = _drops(s, clock, eval_x, busy_util=busy_util, drop_fraction=drop_fraction, min_drops=min_drops,
                       max_period_cv=max_period_cv, min_drop_share=min_drop_share, min_points=min_points)
        if found is not None:
            drops.append(found)
    flagged = [d for d in drops if d.periodic and not (d.at_evaluation is not None and d.at_evaluation >= 0.5)]
    if flagged:
        worst = max(flagged, key=lambda d: d.share)
        s = _pick(series, "gpu_util", worst.device)
        clock_kind = s.clock if s else "wall"
        every = _when(worst.period or 0.0, clock_kind).replace("step ", "") + (" steps" if clock_kind == "step" else "")
        devices = ", ".join(d.device for d in flagged)
        findings.append(_finding(
            "gpu_util_drops", Severity.WARNING if worst.share >= 0.1 else Severity.INFO,
            f"GPU utilisation drops below {worst.threshold:.0f}% (half its busy level of {worst.busy_level:.0f}%) "
            f"{worst.drops} times, about every {every} (interval CV {worst.period_cv:.2f}), "
            f"{worst.share:.0%} of the busy time on {worst.device}"
            + (f"; also on {len(flagged) - 1} other GPU(s)" if len(flagged) > 1 else "")
            + ". Regular idle gaps like these usually mean the GPU waits for the next batch.",
            step=next((st for st in worst.steps if st is not None), None),
            evidence={"devices": devices, **worst.to_dict(), "starts": list(worst.starts[:50]),
                      "steps": list(worst.steps[:50]), "axis": "step" if clock_kind == "step" else "seconds"},
        ))

    # --- thermal throttling -------------------------------------------------------------------------
    throttling: list[Throttling] = []
    for s in series:
        if s.kind != "gpu_temp":
            continue
        found = _throttling(
            s, util=_pick(series, "gpu_util", s.device), clock_series=_pick(series, "gpu_clock", s.device),
            power=_pick(series, "gpu_power", s.device, "W"), speed=speed,
            speed_higher_is_better=speed_higher_is_better, clock=clock, hot_c=hot_c, min_rise_c=min_rise_c,
            min_fall=min_fall, alpha=alpha, busy_util=busy_util, min_points=min_points)
        if found is not None:
            throttling.append(found)
    hot = [t for t in throttling if t.detected]
    if hot:
        t = max(hot, key=lambda t: -(t.change or 0.0))
        s = _pick(series, "gpu_temp", t.device)
        unit = {"clock": " MHz", "power": " W", "throughput": "", "step time": ""}.get(t.signal or "", "")
        findings.append(_finding(
            "thermal_throttling", Severity.WARNING,
            f"{t.device} heated from {t.cool:.0f}°C to a plateau of {t.plateau:.0f}°C, reached at "
            f"{_when(t.onset, s.clock if s else 'wall')}{_step_text(t.onset_step)}; after that its {t.signal} "
            f"({t.signal_tag}) went "
            f"from {t.before:.4g}{unit} to {t.after:.4g}{unit} ({-(t.change or 0.0):.0%} slower, "
            f"p = {t.p_value:.2g}): the GPU is likely throttling its clocks to stay under its temperature limit."
            + (f" Also on {len(hot) - 1} other GPU(s)." if len(hot) > 1 else ""),
            step=t.onset_step, evidence={**t.to_dict(), "devices": ", ".join(h.device for h in hot)},
        ))

    # --- memory near capacity ---------------------------------------------------------------------------
    memory: list[MemoryPressure] = []
    seen: set[tuple[str, str]] = set()
    for s in series:
        if s.kind not in ("gpu_memory", "host_memory") or (s.kind, s.device) in seen:
            continue
        found = _memory(s, clock, capacity_bytes=gpu_capacity_bytes if s.kind == "gpu_memory" else None,
                        capacity_fraction=capacity_fraction)
        if found is not None:
            memory.append(found)
            seen.add((s.kind, s.device))
    for kind, what in (("gpu_memory", "GPU memory"), ("host_memory", "Host memory")):
        full = [m for m in memory if m.kind == kind and m.samples_above >= min_samples_above]
        if not full:
            continue
        worst = max(full, key=lambda m: m.peak_percent)
        s = _pick(series, kind, worst.device)
        of = sum(1 for m in memory if m.kind == kind)
        where = f" on {len(full)} of {of} GPUs" if kind == "gpu_memory" and of > 1 else ""
        severe = worst.peak_percent >= 98.0 or kind == "host_memory"
        findings.append(_finding(
            "memory_near_capacity", Severity.WARNING if severe else Severity.INFO,
            f"{what} at or above {capacity_fraction:.0%} of capacity{where}: peak {worst.peak_percent:.1f}% on "
            f"{worst.device} at {_when(worst.peak_at, s.clock if s else 'wall')}{_step_text(worst.peak_step)}, "
            f"above the threshold in {worst.share_above:.0%} of its samples.",
            step=worst.peak_step,
            evidence={"devices": [m.to_dict() for m in full[:16]], "threshold": capacity_fraction,
                      "unit": "percent of capacity"},
        ))

    step_at: list[tuple[int, int]] = []
    timed = [s for s in series if s.clock == "wall"]
    if clock.known and timed:
        x, _, walls = _axis(timed[0])
        off = _offset(x, walls) if x.size else None
        if off is not None:
            for t in np.unique(np.linspace(x[0], x[-1], 40).round()):
                step = clock.step_at(off + float(t))
                if step is not None:
                    step_at.append((int(t), step))
    alignment = ("wall-clock samples placed at training steps by interpolating the run's (wall time, step) pairs"
                 if clock.known else "wall-clock samples are on seconds since the start (no step wall times)")
    if series and all(s.clock == "step" for s in series):
        alignment = "logged at training steps"
    return SystemHealth(series=tuple(stats), alignment=alignment, step_at=tuple(step_at), drops=tuple(drops),
                        throttling=tuple(throttling),
                        memory=tuple(memory), findings=tuple(findings))
