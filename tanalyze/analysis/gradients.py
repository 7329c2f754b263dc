"""Gradient health: the global norm (band, explosions, collapses, clipping, non-finite values), with
fp16 loss scaling and skipped steps (:mod:`tanalyze.analysis.loss_scale`) and per-layer gradients from
histograms (:mod:`tanalyze.analysis.gradient_layers`) gathered into one result.

Norms are in the units the framework logs (the L2 norm of the gradient of all
parameters, usually before clipping: HF Trainer, Megatron and DeepSpeed log the
pre-clip norm); loss scales are plain factors; per-layer RMS is
``sqrt(sum_squares / num)`` of the logged gradient values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.analysis.gradient_layers import LayerGradients, analyze_layers, layer_findings, layer_name
from tanalyze.analysis.loss_scale import (
    LossScaleStats,
    SkippedSteps,
    loss_scale_finding,
    loss_scale_stats,
    skipped_finding,
    skipped_steps,
)
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
    "layer_name",  # from gradient_layers, as LayerGradients; LossScaleStats and SkippedSteps from loss_scale
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


def _finding(code: str, severity: Severity, message: str, recommendation: str | None = None, **kw) -> Finding:
    return Finding(code, severity, message, recommendation or recommend(code), **kw)


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


@quiet_numpy
def analyze_gradients(
    grad_norm: Curve | None,
    *,
    histograms: pd.DataFrame | None = None,
    max_norm: float | None = None,
    max_norm_assumed: bool = False,
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
    loss: Curve | None = None,
    loss_follow_ratio: float = 1.25,
) -> GradientHealth:
    """Gradient health of one run from its global grad-norm curve, histograms, loss scale and skips.

    - band: the fraction of norms outside ``healthy_band``. Norms above 1 are normal
      for large models clipped at 1.0, so "above" is ``info`` unless the median is
      over 10× the upper edge with no clipping known; "below" is a ``warning``
      when most norms are below it;
    - explosions: a norm above ``explosion_factor`` × the median of the previous
      ``window`` norms (at least ``min_history`` of them; a median, not a mean, so
      earlier spikes do not hide later ones); with the training ``loss`` given, transient explosions the loss
      did not follow (it stayed below ``loss_follow_ratio`` × its level before each, around each) are
      information: a bad batch the optimizer absorbed;
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
    scale = loss_scale_stats(loss_scale, floor=loss_scale_floor, late_drop=loss_scale_late_drop) if loss_scale else None
    stats, findings = _norm_health(
        grad_norm, max_norm=max_norm, max_norm_assumed=max_norm_assumed, band=(lo_band, hi_band),
        handled_by_scaling=scale is not None and not scale.collapsed,
        window=window, min_history=min_history, explosion_factor=explosion_factor,
        collapse_factor=collapse_factor, collapse_min_points=collapse_min_points, settle_fraction=settle_fraction,
        clip_rate_warn=clip_rate_warn, loss=loss, loss_follow_ratio=loss_follow_ratio,
    )
    skips = skipped_steps(skipped, cumulative=skipped_cumulative, early_fraction=early_fraction) if skipped else None
    layers: list[LayerGradients] = []
    ignored = 0
    if histograms is not None and len(histograms):
        layers, ignored = analyze_layers(histograms, vanish_rms=layer_vanish_rms, vanish_factor=layer_vanish_factor,
                                         explode_factor=layer_explode_factor, persist=layer_persist)
    findings += [f for f in (
        loss_scale_finding(scale, loss_scale_floor) if scale is not None else None,
        skipped_finding(skips, early_fraction, skipped_warn_fraction) if skips is not None else None,
    ) if f is not None]
    findings += layer_findings(layers)
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


def _norm_health(
    grad_norm: Curve | None,
    *,
    max_norm: float | None,
    max_norm_assumed: bool = False,
    band: tuple[float, float],
    handled_by_scaling: bool,
    window: int,
    min_history: int,
    explosion_factor: float,
    collapse_factor: float,
    collapse_min_points: int,
    settle_fraction: float,
    clip_rate_warn: float,
    loss: Curve | None = None,
    loss_follow_ratio: float = 1.25,
) -> tuple[dict, list[Finding]]:
    """The global norm's statistics (``GradientHealth`` fields) and findings: non-finite values, the band,
    explosions, collapses and clipping."""
    stats: dict = dict(
        tag=None, n_points=0, n_nonfinite=0, first_nonfinite_step=None, nonfinite_steps=(), minimum=None,
        p05=None, median=None, p95=None, maximum=None, fraction_above_band=None, fraction_below_band=None,
        explosions=(), collapses=(), clip_rate=None, n_clipped=None,
    )
    findings: list[Finding] = []
    if grad_norm is None or not len(grad_norm):
        return stats, findings
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
        findings.append(_nonfinite_finding(steps, nonfinite, handled_by_scaling,
                                           loss_went_on=_loss_went_on(loss, steps[nonfinite])))
    if not fin.size:
        return stats, findings
    unmeasured = _unmeasured_finding(fin, loss)
    if unmeasured is not None:  # (zeros the logger wrote: nothing to judge a band, explosions or clipping by)
        findings.append(unmeasured)
        return stats, findings
    q = np.percentile(fin, [5, 50, 95])
    above, below = float(np.mean(fin > band[1])), float(np.mean(fin < band[0]))
    stats.update(minimum=float(fin.min()), p05=float(q[0]), median=float(q[1]), p95=float(q[2]),
                 maximum=float(fin.max()), fraction_above_band=above, fraction_below_band=below)
    band_finding = _band_finding(fin, q, above, below, band, max_norm, max_norm_assumed)
    if band_finding is not None:
        findings.append(band_finding)

    # explosions and collapses against the trailing median of finite norms
    f_steps = steps[~nonfinite]
    trail = pd.Series(fin).rolling(window, min_periods=min_history).median().shift(1).to_numpy(dtype=np.float64)
    settle = max(min_history, int(settle_fraction * fin.size))
    explosions = _events(fin, f_steps, trail, factor=explosion_factor, high=True)
    collapses = _events(fin, f_steps, trail, factor=collapse_factor, high=False, first=settle,
                        min_points=collapse_min_points)
    stats.update(explosions=tuple(explosions), collapses=tuple(collapses))
    if explosions:
        # The run's own early level: after the norm has fallen (a converging, memorising run), a jump back
        # to where it was at the start is no explosion worth a warning.
        early = float(np.median(fin[: max(min_history, fin.size // 5)]))
        ceiling = explosion_factor * max(early, max_norm or 0.0)
        findings.append(_explosion_finding(explosions, int(f_steps[-1]), ceiling, explosion_factor, window,
                                           _loss_rise(loss, explosions, f_steps), loss_follow_ratio,
                                           max_norm, max_norm_assumed))
    if collapses:
        findings.append(_collapse_finding(collapses, int(f_steps[-1]), collapse_factor, collapse_min_points,
                                          _loss_fall(loss, collapses[-1])))
    if max_norm is not None:
        clipped = fin > max_norm
        rate = float(clipped.mean())
        stats.update(clip_rate=rate, n_clipped=int(clipped.sum()))
        if rate >= clip_rate_warn:
            findings.append(_finding(
                "grad_clipping_frequent",
                # clipped most of the time is how many fine-tunes run; a warning when clipping
                # cuts the typical update tenfold or more
                Severity.WARNING if q[1] > 10 * max_norm else Severity.INFO,
                f"Gradients clipped at {rate:.0%} of {fin.size} logged steps (norm > max norm "
                f"{_clip_text(max_norm, max_norm_assumed)}; median norm {q[1]:.3g}).",
                evidence={"clip_rate": rate, "max_norm": max_norm, "median": float(q[1])},
            ))
    return stats, findings


#: at most this share of the logged norms NaN/Inf, isolated, with the loss finite throughout: skipped steps
_SKIPPED_SHARE = 0.1


def _loss_went_on(loss: Curve | None, bad_steps: np.ndarray) -> bool:
    """Whether the loss stayed finite from the first NaN/Inf norm to the end, with points after the last one:
    training went on past each (what a mixed-precision scaler's skipped steps look like)."""
    if loss is None or not len(bad_steps):
        return False
    after = loss.steps >= bad_steps[0]
    return bool(after.any() and np.isfinite(loss.values[after]).all() and loss.steps[-1] > bad_steps[-1])


def _nonfinite_finding(steps: np.ndarray, nonfinite: np.ndarray, handled_by_scaling: bool,
                       loss_went_on: bool = False) -> Finding:
    """NaN/Inf norms: an error when at the end or above 1 % of steps; information when they are what dynamic
    loss scaling skips (a loss scale is logged and did not collapse: the scaler halves it at every overflow, so
    it stays up only while overflows are occasional; a value averaged over steps, as an epoch's mean, is Inf
    when one of its steps overflowed), or, with no loss scale logged (the HF Trainer's state), when they are few
    (``_SKIPPED_SHARE``), none is the last, and the loss stayed finite and went on past them."""
    n_bad, n = int(nonfinite.sum()), nonfinite.size
    tail_bad = bool(nonfinite[-1])
    severity = Severity.ERROR if tail_bad or n_bad > 0.01 * n else Severity.WARNING
    skipped = not handled_by_scaling and loss_went_on and not tail_bad and n_bad <= _SKIPPED_SHARE * n
    if handled_by_scaling or skipped:
        severity = Severity.INFO
    bad_steps = steps[nonfinite]
    why = (" The loss scale stayed up: steps with an fp16 overflow that the scaler skipped (a norm averaged over "
           "steps is Inf when one of them overflowed), not a gradient problem." if handled_by_scaling else
           " The loss stayed finite and training went on past each: steps a mixed-precision loss scaler skipped "
           "(an fp16 overflow; the optimizer did not step), not a failing run." if skipped else "")
    return _finding(
        "grad_nonfinite",
        severity,
        f"Gradient norm was NaN/Inf at {n_bad} of {n} logged steps, first at step {int(bad_steps[0])}"
        + (" and at the last step." if tail_bad else ".") + why,
        step=int(bad_steps[0]),
        step_end=int(bad_steps[-1]),
        evidence={"steps": [int(s) for s in bad_steps[:100]], "count": n_bad},
    )


def _clip_text(max_norm: float, assumed: bool) -> str:
    """``1``, or ``1 (assumed: the trainer's default; the log does not record it)``."""
    return f"{max_norm:g}" + (" (assumed: the trainer's default; the log does not record it)" if assumed else "")


def _band_finding(fin: np.ndarray, q: np.ndarray, above: float, below: float, band: tuple[float, float],
                  max_norm: float | None, max_norm_assumed: bool = False) -> Finding | None:
    """Most norms below the band: a warning; above it: information only (large models and fine-tunes run
    above 1 all the time; what matters is the norm against its own history and the clip value)."""
    lo_band, hi_band = band
    band_txt = f"[{lo_band:g}, {hi_band:g}]"
    if below > 0.5:
        return _finding(
            "grad_out_of_band",
            Severity.WARNING,
            f"Gradient norm below the healthy band {band_txt} at {below:.0%} of steps "
            f"(median {q[1]:.3g}, min {fin.min():.3g}).",
            evidence={"fraction_below": below, "median": float(q[1]), "band": [lo_band, hi_band]},
        )
    if above > 0.2 and (max_norm is None or q[1] > max_norm):
        # (with clipping on and the median norm within it, the norms above the band are the clip's to handle:
        # nothing to say, as for most fine-tunes the Trainer clips at 1)
        return _finding(
            "grad_out_of_band",
            Severity.INFO,
            f"Gradient norm above the healthy band {band_txt} at {above:.0%} of steps "
            f"(median {q[1]:.3g}, 95th percentile {q[2]:.3g}, max {fin.max():.3g})"
            + (f"; clipping at {_clip_text(max_norm, max_norm_assumed)} is on, norms above 1 are common for large "
               "models."
               if max_norm is not None else "."),
            recommendation=None if max_norm is None else (
                "Nothing to do for the band: clipping bounds the updates; what matters is the norm against its own "
                "history (explosions) and how often it is clipped."),
            evidence={"fraction_above": above, "median": float(q[1]), "band": [lo_band, hi_band]},
        )
    return None


def _explosion_finding(explosions: list[GradEvent], last_step: int, ceiling: float, factor: float,
                       window: int, loss_rise: float | None = None, follow_ratio: float = 1.25,
                       max_norm: float | None = None, max_norm_assumed: bool = False) -> Finding:
    """Never recovered, or two orders of magnitude: an error; a transient spike: a warning, unless no norm
    went above ``ceiling`` (``factor`` x the run's early level or the clip value), or the loss did not follow
    any (its largest rise around them, ``loss_rise``, below ``follow_ratio``): information. With clipping on
    (``max_norm``), the advice is not to enable it: the norms logged are the ones before it."""
    first = explosions[0]
    worst = max(explosions, key=lambda e: e.ratio)
    lasting = explosions[-1].step_end == last_step
    unfollowed = loss_rise is not None and loss_rise < follow_ratio
    severity = (Severity.ERROR if worst.ratio >= 100 or lasting
                else Severity.WARNING if max(e.value for e in explosions) > ceiling and not unfollowed
                else Severity.INFO)
    around = ""
    if loss_rise is not None:
        around = (f" The loss did not follow: around them it stayed within {loss_rise - 1:+.1%} of its level before."
                  if unfollowed else f" Around them the loss rose up to {loss_rise:.3g}x its level before.")
    evidence: dict[str, Any] = {"events": [e.to_dict() for e in explosions[:20]], "count": len(explosions)}
    if loss_rise is not None:
        evidence["loss_rise"] = loss_rise
    return _finding(
        "grad_explosion",
        severity,
        f"{len(explosions)} gradient-norm explosion(s) above {factor:g}x the trailing "
        f"median of {window} steps; first at step {first.step} (norm {first.value:.3g}, "
        f"{first.ratio:.1f}x the trailing {first.reference:.3g}); worst at step {worst.step} "
        f"({worst.value:.3g}, {worst.ratio:.1f}x).{around}",
        step=first.step,
        step_end=explosions[-1].step_end,
        evidence=evidence,
        recommendation=None if max_norm is None else _CLIPPED_EXPLOSION.format(_clip_text(max_norm, max_norm_assumed)),
    )


#: what to do about explosions of a norm that is clipped: the norm logged is the one before clipping
_CLIPPED_EXPLOSION = ("Clipping at {} is on and these are the norms before it, so the updates stayed bounded; if the "
                      "loss followed the spikes, lower the learning rate (or warm it up longer) and look for bad "
                      "batches at those steps, else nothing needs doing.")


def _unmeasured_finding(fin: np.ndarray, loss: Curve | None, zero_share: float = 0.9,
                        moved: float = 0.01) -> Finding | None:
    """A norm logged as exactly 0 at ``zero_share`` or more of its steps while the training loss moved (by
    ``moved`` or more of its first level): gradients of zero change no weight, so such zeros are a norm the loop
    did not measure (sharded or offloaded gradients: DeepSpeed ZeRO under some trainers logs 0), not vanishing
    gradients. None otherwise (a loss that did not move may have had no gradient indeed)."""
    zeros = float(np.mean(fin == 0))
    if zeros < zero_share or loss is None:
        return None
    values = loss.collapse_steps().finite_part().values
    if len(values) < 2:
        return None
    first, last = float(values[0]), float(values[-1])
    if not abs(last - first) >= moved * max(abs(first), 1e-12):
        return None
    return _finding(
        "grad_norm_unmeasured",
        Severity.INFO,
        f"The gradient norm is exactly 0 at {zeros:.0%} of {fin.size} logged steps while the loss went from "
        f"{first:.4g} to {last:.4g}: gradients of zero change no weight, so these zeros are a norm the training "
        "loop did not measure, not vanishing gradients.",
        evidence={"zero_share": zeros, "points": int(fin.size), "loss_first": first, "loss_last": last},
    )


def _loss_rise(loss: Curve | None, explosions: list[GradEvent], grad_steps: np.ndarray,
               reach: int = 3, history: int = 20) -> float | None:
    """The largest rise of the training loss around the explosions: per event, the loss's maximum from
    ``reach`` logged intervals (of the loss or of the norm, the longer) before the event to as many after
    it, over the median of its ``history`` points before that; None when that cannot be told (no loss, a loss
    that is not positive, an event without loss points around it or before it)."""
    if loss is None:
        return None
    curve = loss.collapse_steps().finite_part()
    steps, values = curve.steps, curve.values
    if len(values) < 2 or (values <= 0).any():
        return None
    spacing = max(float(np.median(np.diff(steps))), float(np.median(np.diff(grad_steps))) if len(grad_steps) > 1
                  else 1.0)
    margin = reach * spacing
    worst = 0.0
    for event in explosions:
        low = int(np.searchsorted(steps, event.step - margin, side="left"))
        high = int(np.searchsorted(steps, event.step_end + margin, side="right"))
        if high <= low or low == 0:
            return None
        level = float(np.median(values[max(0, low - history):low]))
        worst = max(worst, float(values[low:high].max()) / level)
    return worst


def _loss_fall(loss: Curve | None, collapse: GradEvent, history: int = 20) -> float | None:
    """How many times lower the training loss sits from a gradient collapse on than over the ``history`` points
    before it (None when that cannot be told: no positive loss, no points before or after)."""
    if loss is None:
        return None
    curve = loss.collapse_steps().finite_part()
    if len(curve) < 2 or (curve.values <= 0).any():
        return None
    at = int(np.searchsorted(curve.steps, collapse.step, side="left"))
    before, after = curve.values[max(0, at - history):at], curve.values[at:]
    if not len(before) or not len(after):
        return None
    return float(np.median(before) / np.median(after))


def _collapse_finding(collapses: list[GradEvent], last_step: int, factor: float, min_points: int = 3,
                      loss_fall: float | None = None, converged_fall: float = 5.0) -> Finding:
    """A dip that recovered is information; gradients that stay collapsed are a problem, unless the collapse is
    too short to tell (fewer than ``min_points`` points at the end of the log) or the loss fell with it
    (``converged_fall`` times or more: a model that fits its data has little gradient left)."""
    first, last = collapses[0], collapses[-1]
    stays = last.step_end == last_step and last.n_points >= min_points
    converged = loss_fall is not None and loss_fall >= converged_fall
    text = (f"Gradient norm collapsed below {factor:g}x its trailing median at step "
            f"{first.step} ({first.reference:.3g} → {first.value:.3g}, {first.n_points} points"
            + (" until the end" if first.step_end == last_step else f", until step {first.step_end}")
            + f"); {len(collapses)} collapse(s) in total.")
    if stays and converged:
        text += f" The training loss fell {loss_fall:.3g}x with it: the model fits its data, so little gradient is left."
    return _finding(
        "grad_collapse",
        Severity.WARNING if stays and not converged else Severity.INFO,
        text,
        step=first.step,
        step_end=first.step_end,
        evidence={"events": [e.to_dict() for e in collapses[:20]], "count": len(collapses), "loss_fall": loss_fall},
    )
