"""Gradient health: the global norm (band, explosions, collapses, clipping, non-finite values),
fp16 loss scaling and skipped steps, and per-layer gradients from histograms.

Norms are in the units the framework logs (the L2 norm of the gradient of all
parameters, usually before clipping: HF Trainer, Megatron and DeepSpeed log the
pre-clip norm); loss scales are plain factors; per-layer RMS is
``sqrt(sum_squares / num)`` of the logged gradient values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.analysis.serial import quiet_numpy
from tanalyze.curves import Curve

__all__ = [
    "GradEvent",
    "LossScaleStats",
    "SkippedSteps",
    "LayerGradients",
    "GradientHealth",
    "analyze_gradients",
    "layer_name",
]


@dataclass(frozen=True)
class GradEvent(ResultMixin):
    """A run of consecutive logged points where the norm left its trailing level."""

    step: int  # first step of the event
    step_end: int  # last step of the event
    n_points: int
    value: float  # the most extreme norm in the event
    reference: float  # trailing median before the event
    ratio: float  # value / reference


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


@dataclass(frozen=True)
class LayerGradients(ResultMixin):
    """Per-layer gradient RMS over steps, from gradient histograms."""

    layer: str
    tag: str
    n_points: int
    first_step: int
    last_step: int
    rms_first: float
    rms_last: float
    rms_median: float
    rms_min: float
    rms_max: float
    status: str  # "ok" | "vanishing" | "exploding"
    onset_step: int | None  # first step of the vanishing/exploding condition
    reason: str


@dataclass(frozen=True)
class GradientHealth(ResultMixin):
    """Health of the gradients of one run. Norms in the logged unit (L2 norm); fractions in [0, 1]."""

    tag: str | None
    n_points: int
    n_nonfinite: int
    first_nonfinite_step: int | None
    nonfinite_steps: tuple[int, ...]  # first 100
    minimum: float | None
    p05: float | None
    median: float | None
    p95: float | None
    maximum: float | None
    healthy_band: tuple[float, float]
    fraction_above_band: float | None
    fraction_below_band: float | None
    explosions: tuple[GradEvent, ...]
    collapses: tuple[GradEvent, ...]
    max_norm: float | None
    clip_rate: float | None  # fraction of finite norms above max_norm (pre-clip norms)
    n_clipped: int | None
    loss_scale: LossScaleStats | None
    skipped: SkippedSteps | None
    layers: tuple[LayerGradients, ...]
    n_histogram_tags_ignored: int  # histogram tags that are not gradients (weights, activations)
    findings: tuple[Finding, ...]


def _finding(code: str, severity: Severity, message: str, **kw) -> Finding:
    return Finding(code, severity, message, recommend(code), **kw)


def _events(
    values: np.ndarray,
    steps: np.ndarray,
    trail: np.ndarray,
    *,
    factor: float,
    high: bool,
    first: int = 0,
    min_points: int = 1,
) -> list[GradEvent]:
    """Runs of points beyond ``factor`` × the trailing level, the level frozen at each run's onset.

    Freezing matters for collapses: the trailing median follows a lasting fall, so
    without it a collapse would look over after ``window / 2`` points. A run
    shorter than ``min_points`` that does not reach the end is ignored.
    """
    with np.errstate(invalid="ignore"):
        flagged = np.isfinite(trail) & ((values > factor * trail) if high else (values < factor * trail))
    flagged[:first] = False
    events: list[GradEvent] = []
    n = values.size
    i = 0
    for onset in np.flatnonzero(flagged):
        if onset < i:
            continue
        ref = float(trail[onset])
        end = _run_end(values, onset, factor * ref, high)
        if end - onset < min_points and end < n:
            continue
        group = np.arange(onset, end)
        j = group[int(np.argmax(values[group]) if high else np.argmin(values[group]))]
        value = float(values[j])
        ratio = value / ref if ref > 0 else math.inf
        events.append(GradEvent(int(steps[onset]), int(steps[end - 1]), int(end - onset), value, ref, ratio))
        i = end
    return events


def _run_end(values: np.ndarray, start: int, limit: float, high: bool) -> int:
    """End (exclusive) of the run from ``start`` beyond ``limit``; looks ahead in growing chunks (O(run length))."""
    pos, chunk = start, 64
    while pos < values.size:
        part = values[pos : pos + chunk]
        beyond = part > limit if high else part < limit
        stop = np.flatnonzero(~beyond)
        if stop.size:
            return pos + int(stop[0])
        pos += part.size
        chunk *= 4
    return int(values.size)


def _sustained(mask: np.ndarray, min_points: int) -> np.ndarray:
    """Keep only runs of at least ``min_points`` consecutive True (or runs reaching the end)."""
    out = np.zeros_like(mask)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return out
    for group in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
        if group.size >= min_points or group[-1] == mask.size - 1:
            out[group] = True
    return out


def _loss_scale(curve: Curve, *, floor: float, late_drop: float) -> LossScaleStats | None:
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


def _skipped(curve: Curve, *, cumulative: bool | None, early_fraction: float) -> SkippedSteps | None:
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


_GRAD_PART = re.compile(r"^(grad|grads|gradient|gradients)$", re.IGNORECASE)
_GRAD_SUFFIX = re.compile(r"^(?P<layer>.+?)[._-](grad|grads|gradient|gradients)$", re.IGNORECASE)


def layer_name(tag: str) -> str | None:
    """The layer of a gradient-histogram tag, or None when the tag is not a gradient.

    Recognises ``grad/<layer>``, ``<layer>/grad``, ``gradients/<layer>`` (W&B's
    ``wandb.watch``), ``<prefix>/grad/<layer>`` and ``<layer>.grad`` / ``<layer>_grad``.
    """
    parts = tag.split("/")
    rest = [p for p in parts if not _GRAD_PART.match(p)]
    if len(rest) < len(parts):
        return "/".join(rest) or None
    m = _GRAD_SUFFIX.match(parts[-1])
    if m:
        return "/".join([*parts[:-1], m.group("layer")])
    return None


def _one_run(frame: pd.DataFrame, what: str) -> None:
    """Analyzers look at one run: refuse a table that mixes several (a programming error upstream)."""
    if "run" in frame.columns:
        runs = pd.unique(frame["run"])
        if len(runs) > 1:
            raise ValueError(f"{what} hold {len(runs)} runs; pass the rows of one run")


def _num(frame: pd.DataFrame) -> np.ndarray:
    """Values per histogram row: the ``num`` column, or the sum of the bucket counts."""
    if "num" in frame.columns:
        return pd.to_numeric(frame["num"], errors="coerce").to_numpy(dtype=np.float64)
    if "bucket_counts" in frame.columns:
        return np.array([float(np.sum(c)) for c in frame["bucket_counts"]], dtype=np.float64)
    raise ValueError("histograms need a 'num' or a 'bucket_counts' column")


def _rms(frame: pd.DataFrame) -> np.ndarray:
    """RMS per histogram row: sqrt(sum_squares / num), or from bucket mid-points when sum_squares is missing."""
    num = _num(frame)
    ss = (
        frame["sum_squares"].to_numpy(dtype=np.float64)
        if "sum_squares" in frame
        else np.full(len(frame), np.nan)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        rms = np.sqrt(ss / num)
    missing = np.isnan(ss)  # absent; an infinite sum of squares is a real overflow
    if missing.any() and "bucket_limits" in frame and "bucket_counts" in frame:
        for i in np.flatnonzero(missing):
            limits = np.asarray(frame["bucket_limits"].iloc[i], dtype=np.float64)
            counts = np.asarray(frame["bucket_counts"].iloc[i], dtype=np.float64)
            if limits.size == 0 or counts.sum() <= 0:
                continue
            lo = np.r_[frame["min"].iloc[i] if "min" in frame else limits[0], limits[:-1]]
            mids = np.where(np.isfinite(lo), (lo + limits) / 2, limits)
            mids = np.where(np.isfinite(mids), mids, 0.0)
            rms[i] = math.sqrt(float(np.sum(counts * mids * mids) / counts.sum()))
    return rms


def _first_onset(steps: np.ndarray, mask: np.ndarray, persist: int) -> int | None:
    sustained = _sustained(mask, persist)
    idx = np.flatnonzero(sustained)
    return int(steps[idx[0]]) if idx.size else None


def _layers(
    histograms: pd.DataFrame,
    *,
    vanish_rms: float,
    vanish_factor: float,
    explode_factor: float,
    persist: int,
) -> tuple[list[LayerGradients], int]:
    _one_run(histograms, "histograms")
    histograms = histograms[_num(histograms) > 0]  # empty histograms carry no gradient
    tags = list(pd.unique(histograms["tag"]))
    grad_tags = {t: layer_name(str(t)) for t in tags}
    ignored = sum(1 for v in grad_tags.values() if v is None)
    rows = []
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for tag, layer in grad_tags.items():
        if layer is None:
            continue
        part = histograms[histograms["tag"] == tag].sort_values("step", kind="stable")
        part = part.drop_duplicates("step", keep="last")
        steps = part["step"].to_numpy(dtype=np.int64)
        rms = _rms(part)
        series[str(tag)] = (steps, rms)
        rows.append((str(tag), layer))
    # cross-layer reference: the median RMS over layers at each step
    if len(series) >= 3:
        wide = pd.DataFrame({t: pd.Series(r, index=s) for t, (s, r) in series.items()})
        cross = wide.replace([np.inf, -np.inf], np.nan).median(axis=1)
    else:
        cross = None
    out = []
    for tag, layer in rows:
        steps, rms = series[tag]
        if steps.size == 0:
            continue
        finite = np.isfinite(rms)
        head = rms[finite][: max(3, int(0.1 * finite.sum()))]
        early = float(np.median(head)) if head.size else math.nan
        with np.errstate(invalid="ignore"):
            vanishing = finite & (rms < vanish_rms)
            reasons = []
            if np.isfinite(early) and early > 0:
                vanishing |= finite & (rms < early * vanish_factor)
            if cross is not None:
                ref = cross.reindex(steps).to_numpy(dtype=np.float64)
                vanishing |= finite & (rms < ref * vanish_factor)
            exploding = ~finite
            if np.isfinite(early) and early > 0:
                exploding |= finite & (rms > early * explode_factor)
        v_on = _first_onset(steps, vanishing, persist)
        e_on = _first_onset(steps, exploding, persist)
        status, onset = "ok", None
        if e_on is not None and (v_on is None or e_on <= v_on):
            status, onset = "exploding", e_on
            i = int(np.searchsorted(steps, e_on))
            reasons.append(
                f"RMS {rms[i]:.3g} at step {e_on}"
                + (
                    f", {rms[i] / early:.3g}x its early level {early:.3g}"
                    if np.isfinite(rms[i])
                    else " (non-finite)"
                )
            )
        elif v_on is not None:
            status, onset = "vanishing", v_on
            i = int(np.searchsorted(steps, v_on))
            ref_txt = ""
            if cross is not None:
                ref_txt = f", median layer {float(cross.get(v_on, math.nan)):.3g}"
            reasons.append(f"RMS {rms[i]:.3g} at step {v_on} (early level {early:.3g}{ref_txt})")
        fin = rms[finite]
        out.append(
            LayerGradients(
                layer=layer,
                tag=tag,
                n_points=int(steps.size),
                first_step=int(steps[0]),
                last_step=int(steps[-1]),
                rms_first=float(rms[0]),
                rms_last=float(rms[-1]),
                rms_median=float(np.median(fin)) if fin.size else math.nan,
                rms_min=float(fin.min()) if fin.size else math.nan,
                rms_max=float(fin.max()) if fin.size else math.nan,
                status=status,
                onset_step=onset,
                reason="; ".join(reasons),
            )
        )
    return out, ignored


@quiet_numpy
def analyze_gradients(
    grad_norm: Curve | None,
    *,
    histograms: pd.DataFrame | None = None,
    max_norm: float | None = None,
    healthy_band: tuple[float, float] = (1e-5, 1.0),
    loss_scale: Curve | None = None,
    skipped: Curve | None = None,
    window: int = 50,
    min_history: int = 10,
    explosion_factor: float = 5.0,
    collapse_factor: float = 0.2,
    collapse_min_points: int = 3,
    settle_fraction: float = 0.05,
    clip_rate_warn: float = 0.5,
    loss_scale_floor: float = 1.0,
    loss_scale_late_drop: float = 2.0**4,
    skipped_cumulative: bool | None = None,
    early_fraction: float = 0.1,
    skipped_warn_fraction: float = 0.05,
    layer_vanish_rms: float = 1e-8,
    layer_vanish_factor: float = 1e-3,
    layer_explode_factor: float = 1e2,
    layer_persist: int = 2,
) -> GradientHealth:
    """Gradient health of one run from its global grad-norm curve, histograms, loss scale and skips.

    - band: the fraction of norms outside ``healthy_band``. Norms above 1 are normal
      for large models clipped at 1.0, so "above" is ``info`` unless the median is
      over 10× the upper edge with no clipping known; "below" is a ``warning``
      when most norms are below it;
    - explosions: a norm above ``explosion_factor`` × the median of the previous
      ``window`` norms (at least ``min_history`` of them; a median, not a mean, so
      earlier spikes do not hide later ones);
    - collapses: below ``collapse_factor`` × that trailing median for at least
      ``collapse_min_points`` consecutive points, after the first
      ``settle_fraction`` of the run (the fast early fall of the norm is normal);
    - clipping: with ``max_norm``, the fraction of (pre-clip) norms above it;
      ``clip_rate_warn`` or more → ``grad_clipping_frequent``;
    - loss scale: collapsed when it falls to ``loss_scale_floor`` or falls by
      ``loss_scale_late_drop``× within the second half of the run;
    - skipped steps: a 0/1 indicator, a cumulative counter or per-interval counts
      (``skipped_cumulative=None`` guesses: only 0/1 → indicator, non-decreasing →
      cumulative, else per-interval; a repeated step keeps its last value); a
      ``warning`` when more than 5 and at least ``skipped_warn_fraction`` of the
      steps after the first ``early_fraction`` of the run were skipped (a skip now
      and then is how dynamic loss scaling probes for a larger scale), else ``info``;
    - layers (histogram tags recognised by :func:`layer_name`): RMS per step;
      vanishing below ``layer_vanish_rms``, or ``layer_vanish_factor`` × its early
      level or × the median layer at that step; exploding above
      ``layer_explode_factor`` × its early level, or non-finite; the onset is the
      first step of ``layer_persist`` consecutive flagged points.
    """
    lo_band, hi_band = healthy_band
    if not 0 <= lo_band < hi_band:
        raise ValueError(f"healthy_band must be (low, high) with 0 <= low < high, got {healthy_band}")
    findings: list[Finding] = []
    stats: dict = dict(
        tag=None,
        n_points=0,
        n_nonfinite=0,
        first_nonfinite_step=None,
        nonfinite_steps=(),
        minimum=None,
        p05=None,
        median=None,
        p95=None,
        maximum=None,
        fraction_above_band=None,
        fraction_below_band=None,
        explosions=(),
        collapses=(),
        clip_rate=None,
        n_clipped=None,
    )
    if grad_norm is not None and len(grad_norm):
        steps, values = grad_norm.steps, grad_norm.values
        nonfinite = ~np.isfinite(values)
        fin = values[~nonfinite]
        stats.update(
            tag=grad_norm.tag,
            n_points=int(values.size),
            n_nonfinite=int(nonfinite.sum()),
            first_nonfinite_step=int(steps[nonfinite][0]) if nonfinite.any() else None,
            nonfinite_steps=tuple(int(s) for s in steps[nonfinite][:100]),
        )
        if nonfinite.any():
            n_bad = int(nonfinite.sum())
            tail_bad = bool(nonfinite[-1])
            handled = loss_scale is not None and not tail_bad and n_bad <= max(3, 0.01 * values.size)
            severity = Severity.ERROR if tail_bad or n_bad > 0.01 * values.size else Severity.WARNING
            if handled:
                severity = Severity.INFO
            findings.append(
                _finding(
                    "grad_nonfinite",
                    severity,
                    f"Gradient norm was NaN/Inf at {n_bad} of {values.size} logged steps, first at step "
                    f"{stats['first_nonfinite_step']}" + (" and at the last step." if tail_bad else "."),
                    step=stats["first_nonfinite_step"],
                    step_end=int(steps[nonfinite][-1]),
                    evidence={"steps": list(stats["nonfinite_steps"]), "count": n_bad},
                )
            )
        if fin.size:
            q = np.percentile(fin, [5, 50, 95])
            above = float(np.mean(fin > hi_band))
            below = float(np.mean(fin < lo_band))
            stats.update(
                minimum=float(fin.min()),
                p05=float(q[0]),
                median=float(q[1]),
                p95=float(q[2]),
                maximum=float(fin.max()),
                fraction_above_band=above,
                fraction_below_band=below,
            )
            band_txt = f"[{lo_band:g}, {hi_band:g}]"
            if below > 0.5:
                findings.append(
                    _finding(
                        "grad_out_of_band",
                        Severity.WARNING,
                        f"Gradient norm below the healthy band {band_txt} at {below:.0%} of steps "
                        f"(median {q[1]:.3g}, min {fin.min():.3g}).",
                        evidence={"fraction_below": below, "median": float(q[1]), "band": [lo_band, hi_band]},
                    )
                )
            elif above > 0.2:
                # Information only: large models and fine-tunes run above 1 all the time; what matters is the
                # norm against its own history (explosions below) and the clip value (clipping below).
                clipping = max_norm is not None
                findings.append(
                    _finding(
                        "grad_out_of_band",
                        Severity.INFO,
                        f"Gradient norm above the healthy band {band_txt} at {above:.0%} of steps "
                        f"(median {q[1]:.3g}, 95th percentile {q[2]:.3g}, max {fin.max():.3g})"
                        + (
                            f"; clipping at {max_norm:g} is on, norms above 1 are common for large models."
                            if clipping
                            else "."
                        ),
                        evidence={"fraction_above": above, "median": float(q[1]), "band": [lo_band, hi_band]},
                    )
                )

            # explosions and collapses against the trailing median of finite norms
            f_steps = steps[~nonfinite]
            trail = (
                pd.Series(fin)
                .rolling(window, min_periods=min_history)
                .median()
                .shift(1)
                .to_numpy(dtype=np.float64)
            )
            settle = max(min_history, int(settle_fraction * fin.size))
            explosions = _events(fin, f_steps, trail, factor=explosion_factor, high=True)
            collapses = _events(
                fin,
                f_steps,
                trail,
                factor=collapse_factor,
                high=False,
                first=settle,
                min_points=collapse_min_points,
            )
            stats.update(explosions=tuple(explosions), collapses=tuple(collapses))
            # The run's own early level: after the norm has fallen (a converging, memorising run), a jump back
            # to where it was at the start is no explosion worth a warning.
            early = float(np.median(fin[: max(min_history, fin.size // 5)]))
            ceiling = explosion_factor * max(early, max_norm or 0.0)
            if explosions:
                first = explosions[0]
                worst = max(explosions, key=lambda e: e.ratio)
                lasting = explosions[-1].step_end == int(f_steps[-1])
                findings.append(
                    _finding(
                        "grad_explosion",
                        # never recovered, or two orders of magnitude: an error; a transient spike: a warning,
                        # unless no norm went explosion_factor x above the run's early level (or the clip value)
                        Severity.ERROR
                        if worst.ratio >= 100 or lasting
                        else Severity.WARNING if max(e.value for e in explosions) > ceiling else Severity.INFO,
                        f"{len(explosions)} gradient-norm explosion(s) above {explosion_factor:g}x the trailing "
                        f"median of {window} steps; first at step {first.step} (norm {first.value:.3g}, "
                        f"{first.ratio:.1f}x the trailing {first.reference:.3g}); worst at step {worst.step} "
                        f"({worst.value:.3g}, {worst.ratio:.1f}x).",
                        step=first.step,
                        step_end=explosions[-1].step_end,
                        evidence={"events": [e.to_dict() for e in explosions[:20]], "count": len(explosions)},
                    )
                )
            if collapses:
                first = collapses[0]
                findings.append(
                    _finding(
                        "grad_collapse",
                        # a dip that recovered is information; gradients that stay collapsed are a problem
                        Severity.WARNING if collapses[-1].step_end == int(f_steps[-1]) else Severity.INFO,
                        f"Gradient norm collapsed below {collapse_factor:g}x its trailing median at step "
                        f"{first.step} ({first.reference:.3g} → {first.value:.3g}, {first.n_points} points"
                        + (
                            " until the end"
                            if first.step_end == int(f_steps[-1])
                            else f", until step {first.step_end}"
                        )
                        + f"); {len(collapses)} collapse(s) in total.",
                        step=first.step,
                        step_end=first.step_end,
                        evidence={"events": [e.to_dict() for e in collapses[:20]], "count": len(collapses)},
                    )
                )
            if max_norm is not None:
                clipped = fin > max_norm
                rate = float(clipped.mean())
                stats.update(clip_rate=rate, n_clipped=int(clipped.sum()))
                if rate >= clip_rate_warn:
                    findings.append(
                        _finding(
                            "grad_clipping_frequent",
                            # clipped most of the time is how many fine-tunes run; a warning when clipping
                            # cuts the typical update tenfold or more
                            Severity.WARNING if q[1] > 10 * max_norm else Severity.INFO,
                            f"Gradients clipped at {rate:.0%} of {fin.size} logged steps (norm > max norm "
                            f"{max_norm:g}; median norm {q[1]:.3g}).",
                            evidence={"clip_rate": rate, "max_norm": max_norm, "median": float(q[1])},
                        )
                    )

    scale = (
        _loss_scale(loss_scale, floor=loss_scale_floor, late_drop=loss_scale_late_drop)
        if loss_scale
        else None
    )
    if scale is not None and scale.collapsed:
        findings.append(
            _finding(
                "loss_scale_collapse",
                Severity.ERROR if scale.minimum <= loss_scale_floor else Severity.WARNING,
                f"fp16 loss scale fell from {scale.initial:g} to {scale.minimum:g} (step {scale.minimum_step}), "
                f"final {scale.final:g}; {scale.n_decreases} decreases, {scale.n_decreases_late} in the second half.",
                step=scale.minimum_step,
                evidence=scale.to_dict(),
            )
        )
    skips = (
        _skipped(skipped, cumulative=skipped_cumulative, early_fraction=early_fraction) if skipped else None
    )
    if skips is not None and skips.total > 0:
        many_late = skips.late > 5 and skips.late_fraction >= skipped_warn_fraction
        findings.append(
            _finding(
                "skipped_steps",
                Severity.WARNING if many_late else Severity.INFO,
                f"{skips.total} optimizer step(s) skipped ({skips.fraction:.2%} of the steps covered), "
                f"{skips.late} ({skips.late_fraction:.2%}) after the first {early_fraction:.0%} of the run; "
                f"first at step "
                f"{skips.steps[0] if skips.steps else '?'}.",
                step=skips.steps[0] if skips.steps else None,
                step_end=skips.steps[-1] if skips.steps else None,
                evidence=skips.to_dict(),
            )
        )

    layers: list[LayerGradients] = []
    ignored = 0
    if histograms is not None and len(histograms):
        layers, ignored = _layers(
            histograms,
            vanish_rms=layer_vanish_rms,
            vanish_factor=layer_vanish_factor,
            explode_factor=layer_explode_factor,
            persist=layer_persist,
        )
        for status, code in (("vanishing", "layer_grad_vanishing"), ("exploding", "layer_grad_exploding")):
            bad = sorted((lg for lg in layers if lg.status == status), key=lambda lg: lg.onset_step or 0)
            if not bad:
                continue
            names = ", ".join(f"{lg.layer} (step {lg.onset_step})" for lg in bad[:8]) + (
                " …" if len(bad) > 8 else ""
            )
            findings.append(
                _finding(
                    code,
                    Severity.WARNING,
                    f"{len(bad)} of {len(layers)} layer(s) with {status} gradients: {names}; "
                    f"first: {bad[0].layer}: {bad[0].reason}.",
                    step=bad[0].onset_step,
                    evidence={"layers": [lg.to_dict() for lg in bad[:50]]},
                )
            )

    return GradientHealth(
        healthy_band=(float(lo_band), float(hi_band)),
        max_norm=max_norm,
        loss_scale=scale,
        skipped=skips,
        layers=tuple(layers),
        n_histogram_tags_ignored=ignored,
        findings=tuple(findings),
        **stats,
    )
