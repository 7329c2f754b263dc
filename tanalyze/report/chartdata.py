"""What the page's script draws each run's interactive charts from: compact curves and the diagnosis' markers.

The page embeds this as JSON data (never markup) next to each run's section; the
script draws it with the vendored uPlot when the section comes into view. Lines
are downsampled with M4 for drawing only (every number shown as text comes from
the full data), values are rounded to :data:`DIGITS` significant digits and
non-finite points are left out of the lines (they are markers). Smoothing is
done by the script (the same debiased EMA as :func:`tanalyze.curves.debiased_ema`),
so the reader can change its weight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tanalyze.report.downsample import m4
from tanalyze.report.model import (
    AUX_ROLES,
    LOSS_ROLES,
    ROLE_TITLES,
    RunView,
    Series,
    device_order,
    number,
    resource_marks,
    resource_panels,
)
from tanalyze.text import safe_text

__all__ = ["run_chart", "wants_log_scale", "LOG_SCALE_DECADES", "chart_columns", "decode_steps", "early_stop_step", "spike_points", "aux_roles", "DIGITS", "COLUMNS", "STATIC_FIGURES_MAX_RUNS",
           "explosion_cap", "blowup_step"]

#: Significant digits kept of each drawn value (more than a chart can show, a third of the bytes of full floats).
DIGITS = 6
#: M4 pixel columns of a run's lines: at most four points a column (a chart is about 700 pixels wide).
COLUMNS = 360
#: With many runs, fewer columns (and digits) per run keep the page small (a 2,000-run report under 30 MB).
COLUMNS_MANY = 40
DIGITS_MANY = 4
MANY_RUNS = 200
#: Over this many runs, runs' static (SVG) figures are left out: the page's script draws each run's charts from
#: its embedded data when its section is shown, which keeps a 2,000-run page small and quick to open.
STATIC_FIGURES_MAX_RUNS = MANY_RUNS
#: Roles whose panels are smoothed like the loss (the others, e.g. the learning rate, are schedules).
SMOOTHED_AUX = ("reward", "policy_entropy", "grad_norm", "throughput", "step_time", "gpu_memory")
LOG_ROLES = ("learning_rate", "grad_norm", "loss_scale")
LOG_SCALE_DECADES = 1.5


def chart_columns(runs: int) -> int:
    """Downsampling columns for a report of ``runs`` runs."""
    return COLUMNS if runs <= MANY_RUNS else COLUMNS_MANY


def aux_roles(run: RunView) -> list[str]:
    """The small panels a run gets: its learning rate, gradient norm, throughput (or step time) …"""
    roles = [r for r in AUX_ROLES if r in run.series]
    if "throughput" in roles and "step_time" in roles:
        roles.remove("step_time")
    return roles  # (W&B's system metrics, sampled on a clock, take no role: the resources panel draws them)


def early_stop_step(early: Any) -> float | None:
    """The step where early stopping stopped (or would have), from the diagnosis' ``early_stopping``."""
    if not isinstance(early, Mapping):
        return None
    for key in ("stop_step", "would_stop_step", "stopped_step", "step"):
        value = number(early.get(key))
        if value is not None:
            return value
    return None


def spike_points(spikes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Steps of the spikes (their peak) and their peak values (NaN when the diagnosis gives none)."""
    steps, peaks = [], []
    for spike in spikes or []:
        if isinstance(spike, Mapping):
            step, peak = number(spike.get("step")), number(spike.get("peak_value"))
        else:
            step, peak = number(spike), None
        if step is not None and np.isfinite(step):
            steps.append(step)
            peaks.append(np.nan if peak is None else peak)
    return np.asarray(steps, dtype=np.float64), np.asarray(peaks, dtype=np.float64)


def explosion_cap(before: Sequence[np.ndarray], everything: Sequence[np.ndarray], log: bool) -> tuple[float, float] | None:
    """(cap, highest value) when a blow-up reaches far beyond the part of the run worth reading, else None.

    The cap leaves three decades (log) or twice the range (linear) above the
    highest value before the blow-up.
    """
    pre = np.concatenate([v[np.isfinite(v)] for v in before]) if before else np.empty(0)
    full = np.concatenate([v[np.isfinite(v)] for v in everything]) if everything else np.empty(0)
    if pre.size < 5 or full.size == 0:
        return None
    top_pre, top = float(pre.max()), float(full.max())
    if log and top_pre > 0:
        cap = top_pre * 1e3
    else:
        cap = top_pre + 2 * max(top_pre - float(pre.min()), abs(top_pre) * 0.1, 1e-12)
    return (cap, top) if top > cap else None


def blowup_step(diagnosis: Mapping[str, Any]) -> float | None:
    """Where a diverged run's loss started to blow up (None when it did not diverge)."""
    divergence = diagnosis.get("divergence")
    if not isinstance(divergence, Mapping):
        return None
    onset, step = number(divergence.get("onset_step")), number(divergence.get("step"))
    return onset if onset is not None else step


def _caps(run: RunView, loss: Mapping[str, Series]) -> dict[str, float] | None:
    """The y-axis caps (log and linear) that keep a blow-up from flattening the rest of the run."""
    start = blowup_step(run.diagnosis)
    if start is None:
        return None
    before = [s.values[s.steps < start] for s in loss.values()]
    everything = [s.values for s in loss.values()]
    out = {}
    for name, log in (("log", True), ("linear", False)):
        found = explosion_cap(before, everything, log)
        if found is not None:
            out[name], out["top"] = float(f"{found[0]:.4g}"), float(f"{found[1]:.4g}")
    return out or None


def _nonfinite(loss: Mapping[str, Series]) -> list[float]:
    """Steps where a loss was NaN or infinite (at most 200, evenly picked), drawn as crosses along the top."""
    steps = np.unique(np.concatenate([s.steps[~s.finite] for s in loss.values()]))
    if len(steps) > 200:
        steps = steps[np.linspace(0, len(steps) - 1, 200).astype(int)]
    return [int(x) for x in steps.tolist()]


def _round(values: np.ndarray, digits: int = DIGITS) -> list[float]:
    return [float(f"{v:.{digits}g}") for v in values.tolist()]


def _step_deltas(steps: np.ndarray) -> list[int]:
    """Steps as the first one then the differences (integers; about half the digits of the steps)."""
    steps = steps.astype(np.int64)
    return np.diff(steps, prepend=np.int64(0)).tolist()


def decode_steps(deltas: Sequence[int]) -> list[int]:
    """The steps of a line from its ``dx`` (as the page's script does)."""
    return np.cumsum(np.asarray(deltas, dtype=np.int64)).tolist() if len(deltas) else []


def _line(series: Series, columns: int) -> dict[str, Any]:
    finite = series.finite
    x, y = m4(series.steps[finite], series.values[finite], columns)
    return {"dx": _step_deltas(x), "y": _round(y, DIGITS if columns > COLUMNS_MANY else DIGITS_MANY)}


def wants_log_scale(values: Sequence[np.ndarray]) -> bool:
    """Draw on a log axis: every finite value positive and spanning more than LOG_SCALE_DECADES decades."""
    finite = [v[np.isfinite(v)] for v in values]
    finite = [v for v in finite if v.size]
    if not finite:
        return False
    lo = min(float(v.min()) for v in finite)
    hi = max(float(v.max()) for v in finite)
    return lo > 0 and hi / lo > 10**LOG_SCALE_DECADES


def _marks(run: RunView) -> list[dict[str, Any]]:
    """Vertical markers: divergence (and its blow-up onset), overfitting onset, early stop."""
    d = run.diagnosis
    out: list[dict[str, Any]] = []
    divergence = d.get("divergence")
    if isinstance(divergence, Mapping) and number(divergence.get("step")) is not None:
        step = number(divergence["step"])
        out.append({"kind": "diverged", "step": step,
                    "label": f"diverged ({safe_text(divergence.get('kind') or '?', 30)}) at step {step:,.0f}"})
        onset = number(divergence.get("onset_step"))
        if onset is not None and onset != step:
            out.append({"kind": "blowup", "step": onset, "label": f"blow-up onset {onset:,.0f}"})
        restart = divergence.get("restart")
        resume = number(restart.get("resume_at_or_before_step")) if isinstance(restart, Mapping) else None
        if resume is not None:
            out.append({"kind": "resume", "step": resume, "label": f"resume at or before {resume:,.0f}"})
    overfitting = d.get("overfitting")
    if isinstance(overfitting, Mapping) and number(overfitting.get("onset_step")) is not None:
        onset = number(overfitting["onset_step"])
        out.append({"kind": "onset", "step": onset, "label": f"overfitting onset {onset:,.0f}"})
    stop = early_stop_step(d.get("early_stopping"))
    if stop is not None:
        out.append({"kind": "early", "step": stop, "label": f"early stop {stop:,.0f}"})
    return [m for m in out if m["step"] is not None and np.isfinite(m["step"])]


def _spikes(run: RunView, series: Mapping[str, Series]) -> dict[str, list[float]] | None:
    steps, peaks = spike_points(run.diagnosis.get("spikes"))
    base = series.get("train_loss") or series.get("val_loss")
    if not steps.size or base is None or not len(base.steps):
        return None
    idx = np.clip(np.searchsorted(base.steps, steps), 0, len(base.steps) - 1)
    values = np.where(np.isfinite(peaks), peaks, base.values[idx])
    ok = np.isfinite(values)
    return {"x": _round(steps[ok]), "y": _round(values[ok])} if ok.any() else None


def _best(val: Series | None) -> list[float] | None:
    """The lowest validation loss and its step (from every point), drawn as a dot."""
    if val is None:
        return None
    stats = val.stats()
    return None if stats["best"] is None else [stats["best_step"], _round(np.array([stats["best"]]))[0]]


def run_chart(run: RunView, columns: int = COLUMNS) -> dict[str, Any] | None:
    """The chart data of one run (None when it has no curve to draw): loss lines, markers, aux panels."""
    loss = {role: run.series[role] for role in LOSS_ROLES if role in run.series and run.series[role].finite.any()}
    aux = [r for r in aux_roles(run) if run.series[r].finite.any()]
    resources = resource_panels(run)
    if not loss and not aux and not resources:
        return None
    out: dict[str, Any] = {"run": safe_text(run.name, 300)}
    if loss:
        out["loss"] = {
            "series": [{"key": "train" if role == "train_loss" else "val", "tag": safe_text(s.tag, 200),
                        **_line(s, columns)} for role, s in loss.items()],
            "log": wants_log_scale([s.values for s in loss.values()]),
            "marks": _marks(run),
            "spikes": _spikes(run, loss),
            "best": _best(loss.get("val_loss")),
            "cap": _caps(run, loss),
            "nonfinite": _nonfinite(loss),
        }
    panels = []
    for role in aux:
        s = run.series[role]
        panels.append({"role": role, "title": ROLE_TITLES.get(role, role), "tag": safe_text(s.tag, 200),
                       "smooth": role in SMOOTHED_AUX, "log": role in LOG_ROLES and wants_log_scale([s.values]),
                       **_line(s, max(COLUMNS_MANY // 2, columns // 2))})
    if panels:
        out["aux"] = panels
    if resources:  # system metrics: x is seconds since the start ("seconds") or the training step ("step")
        devices = device_order(resources)
        marks = resource_marks(run)
        out["resources"] = [
            {"kind": p.kind, "title": p.title, "unit": p.unit, "axis": p.axis,
             "marks": [{"kind": "onset" if kind == "throttle" else "drop",
                        "step": x / 60.0 if p.axis == "seconds" else x, "label": safe_text(label, 80)}
                       for kind, x, label in marks.get(p.kind, ()) if kind != "limit"],
             "series": [{"device": safe_text(device, 40), "tag": safe_text(s.tag, 200), "color": devices.index(device),
                         **_line(s, max(COLUMNS_MANY // 2, columns // 3))} for device, s in p.lines]}
            for p in resources]
        system = run.diagnosis.get("system")
        pairs = system.get("step_at") if isinstance(system, Mapping) else None
        if pairs:  # seconds since the start → training step, for the read-out of the wall-clock panels
            out["resource_steps"] = [[int(a), int(b)] for a, b in pairs
                                     if isinstance(a, int | float) and isinstance(b, int | float)]
    return out
