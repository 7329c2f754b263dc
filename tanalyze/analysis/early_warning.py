"""Early warning of a gradual divergence: which signals fired before the loss blew up, and a causal score.

For a run that diverged (``onset_step`` from :mod:`tanalyze.analysis.divergence`), each precursor is
located as the first step where it fired before the onset, with its lead in steps and as a share of the
run:

* ``loss_rise`` — the loss's recent median (last ``w`` points) above the running minimum of that median
  by ``loss_factor`` (a slow climb starts well before the half-way point the divergence analysis calls its
  onset);
* ``grad_norm_growth`` — the gradient norm's recent median ``grad_factor`` times the median of the
  ``history`` × ``w`` points before it (its own trailing history);
* ``loss_scale_drop`` — an fp16 dynamic loss scale that fell ``loss_scale_drop`` times below its
  earlier peak and did not come back before the onset;
* ``spike_rate`` — transient loss spikes crowding in before the onset (at least two, at three times the
  earlier rate);
* the learning rate at the onset and its ratio to the run's median learning rate before it.

The warning score is computed point by point from trailing data only (no look-ahead: the score at a
step is the same when the points after it are removed): ``max(log(loss ratio) / log(loss_factor),
log(grad ratio) / log(grad_factor))``; it *fires* at the first point where it has been at or above
``threshold`` for ``persist`` points in a row. The window ``w`` grows with the points seen so far
(a twentieth of them, odd, 5..25), never with the points to come. (One thing is the whole curve's: whether the loss
is scored in log space, which needs all of its finite values positive.)

The same score on a run that has not diverged raises ``divergence_warning`` when it fired in the run's
last ``recent_share`` and is still at or above the threshold at the last point: what ``tanalyze watch``
shows before the loss blows up. An instantaneous divergence (a step jump of the learning rate, a bad
batch) gives no signal beforehand and is not claimed to have been foreseen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve, loss_space

__all__ = ["Precursor", "EarlyWarningResult", "warning_scores", "analyze_early_warning"]

MIN_POINTS = 30  # no score before this many points: the first descent says nothing about divergence


@dataclass(frozen=True)
class Precursor(ResultMixin):
    """One signal that fired before a divergence's onset."""

    signal: str  # "loss_rise" | "grad_norm_growth" | "loss_scale_drop" | "spike_rate"
    step: int  # first step it fired
    lead_steps: int  # onset_step - step (> 0)
    lead_share: float  # lead_steps / the run's span in steps
    ratio: float | None  # the growth (or drop) factor when it fired
    detail: str


@dataclass(frozen=True)
class EarlyWarningResult(ResultMixin):
    """Precursors of a divergence and the causal warning score of one run."""

    tag: str
    first_step: int
    last_step: int
    onset_step: int | None  # None: the run did not diverge
    precursors: tuple[Precursor, ...]  # those that fired before the onset, earliest first
    lr_at_onset: float | None
    lr_ratio_at_onset: float | None  # lr at the onset / median lr before it
    threshold: float
    warning_step: int | None  # first step the score fired (for a diverged run: before the onset only)
    warning_lead_steps: int | None
    warning_lead_share: float | None
    max_score: float  # highest score before the onset (whole run when it did not diverge)
    score_at_end: float  # score at the last point scored (before the onset for a diverged run)
    findings: tuple[Finding, ...]

    @property
    def warned(self) -> bool:
        """Whether the score fired before the onset (diverged) or raised a warning (not diverged)."""
        return self.warning_step is not None


def _window(count: int) -> int:
    return int(np.clip(count // 20, 5, 25))


def _medians(y: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Median of ``y[end - length : end]`` for each (end, length); NaN where the slice would start before 0."""
    from numpy.lib.stride_tricks import sliding_window_view
    from scipy.ndimage import median_filter  # imported on use: scipy is slow to import

    out = np.full(len(ends), np.nan)
    for length in np.unique(lengths):
        pick = np.flatnonzero((lengths == length) & (ends - length >= 0))
        if length <= 0 or not pick.size or length > len(y):
            continue
        if length % 2 and pick.size > 4 * length:  # many windows of one odd length: one C pass
            trailing = median_filter(y, size=int(length), mode="nearest", origin=int(length) // 2)
            out[pick] = trailing[ends[pick] - 1]
        else:
            views = sliding_window_view(y, int(length))
            out[pick] = np.median(views[ends[pick] - length], axis=1)
    return out


def _windows(n: int) -> np.ndarray:
    return np.clip(np.arange(1, n + 1) // 20, 5, 25) | 1  # odd: a median is a data value


def _loss_component(values: np.ndarray, loss_factor: float, trend_z: float, trend_gate: float,
                    noise_floor: float = 6.0) -> tuple[np.ndarray, np.ndarray]:
    """(loss component of the score, rise of the recent median over its running minimum in log units)."""
    y, is_log = loss_space(values)
    n = len(y)
    ends = np.arange(1, n + 1)
    w = _windows(n)
    recent = _medians(y, ends, w)
    low = np.fmin.accumulate(np.where(np.isnan(recent), np.inf, recent))
    if is_log:
        rise = recent - low
    else:
        rise = np.log1p(np.maximum(recent - low, 0.0) / np.maximum(np.abs(low), 1e-12))
    rise = np.maximum(np.nan_to_num(rise, nan=0.0, posinf=0.0, neginf=0.0), 0.0)
    # the point-to-point noise (robust, trailing): on a noisy loss the running minimum of the medians sits
    # a few of their standard errors low, so the rise that counts is at least ``noise_floor`` of those
    diffs = np.abs(np.diff(y, prepend=y[0]))
    noise = np.nan_to_num(_medians(diffs, ends, np.minimum(8 * w + 1, ends)), nan=0.0) * 1.4826 / np.sqrt(2)
    if not is_log:
        noise = noise / np.maximum(np.abs(low), 1e-12)
    out = rise / np.maximum(np.log(loss_factor), noise_floor * 1.2533 * noise / np.sqrt(w))
    if trend_z > 0 and is_log:
        # a sustained climb: the recent median above the one ``4w`` points earlier, in units of its noise,
        # counted only once the loss is ``trend_gate`` above its running minimum
        earlier = _medians(y, ends - 4 * w, w)
        z = (recent - earlier) / np.maximum(noise / np.sqrt(w) * np.sqrt(2), 1e-6)
        gated = np.where(rise >= np.log(trend_gate), np.nan_to_num(z, nan=0.0) / trend_z, 0.0)
        out = np.maximum(out, gated)
    out[:MIN_POINTS] = 0.0
    rise[:MIN_POINTS] = 0.0
    return out, rise


def _grad_ratios(values: np.ndarray, history: int) -> np.ndarray:
    """Recent median of the gradient norm over the median of its trailing history (1 when unknown)."""
    g = np.log(np.maximum(values, 1e-30))
    n = len(g)
    w = _windows(n)
    ends = np.arange(1, n + 1)
    recent = _medians(g, ends, w)
    past = _medians(g, ends - w, history * w)
    out = np.exp(recent - past)
    out[:MIN_POINTS] = 1.0
    return np.where(np.isfinite(out), out, 1.0)


def warning_scores(
    loss: Curve,
    grad_norm: Curve | None = None,
    *,
    loss_factor: float = 1.5,
    grad_factor: float = 4.0,
    history: int = 5,
    trend_z: float = 4.0,
    trend_gate: float = 1.1,
) -> tuple[np.ndarray, ...]:
    """The causal warning score at each finite loss point:
    ``(steps, score, loss_ratio, grad_ratio, loss_component, grad_component)``.

    Every value at a step uses only the points logged at or before that step (of both curves).
    """
    part = loss.collapse_steps().finite_part()
    steps, values = part.steps, part.values
    loss_part, rise = (_loss_component(values, loss_factor, trend_z, trend_gate) if len(values)
                       else (np.zeros(0), np.zeros(0)))
    grad_ratio = np.ones(len(steps))
    if grad_norm is not None:
        g = grad_norm.collapse_steps().finite_part()
        positive = g.values > 0
        gsteps, gvals = g.steps[positive], g.values[positive]
        if len(gvals):
            ratios = _grad_ratios(gvals, history)
            index = np.searchsorted(gsteps, steps, side="right") - 1
            grad_ratio = np.where(index >= 0, ratios[np.clip(index, 0, None)], 1.0)
    grad_part = np.maximum(np.log(grad_ratio), 0.0) / np.log(grad_factor)
    score = np.maximum(loss_part, grad_part)
    return steps, score, np.exp(rise), grad_ratio, loss_part, grad_part


def _first_fire(score: np.ndarray, threshold: float, persist: int) -> int | None:
    """Index where the score has been >= threshold for ``persist`` points in a row (first time)."""
    run = 0
    for i, s in enumerate(score):
        run = run + 1 if s >= threshold else 0
        if run >= persist:
            return i
    return None


def _final_fire(score: np.ndarray, threshold: float, persist: int) -> int | None:
    """Index where the last stretch of points at or above ``threshold`` (the one reaching the last point)
    has lasted ``persist`` points; None when the last point is below or the stretch is shorter."""
    below = np.flatnonzero(score < threshold)
    start = int(below[-1]) + 1 if below.size else 0
    if len(score) - start < persist:
        return None
    return start + persist - 1


def _loss_scale_drop(scale: Curve, onset: int, factor: float) -> tuple[int, float] | None:
    """First step of the final fall of the loss scale before the onset, and how far it fell."""
    part = scale.finite_part().between(None, onset)
    if len(part) < 3:
        return None
    values = part.values
    peak = int(np.argmax(values))
    below = values[peak:] < values[peak]
    if not below.any():
        return None
    drop = float(values[peak] / max(values[-1], 1e-30))
    if drop < factor:
        return None
    return int(part.steps[peak + int(np.argmax(below))]), drop


def _spike_rate(spike_steps: tuple[int, ...], first: int, onset: int, min_spikes: int = 2) -> tuple[int, float] | None:
    """First spike of a cluster before the onset whose rate is 3x the rate of the whole run before the onset."""
    before = sorted(s for s in spike_steps if first <= s < onset)
    overall = len(before) / max(onset - first, 1)
    for k, s in enumerate(before):
        later = len(before) - k
        if later < min_spikes:
            return None
        rate_after = later / max(onset - s, 1)
        if rate_after >= 3 * overall:
            return s, rate_after / overall
    return None


def analyze_early_warning(
    loss: Curve,
    *,
    onset_step: int | None = None,
    grad_norm: Curve | None = None,
    loss_scale: Curve | None = None,
    learning_rate: Curve | None = None,
    spike_steps: tuple[int, ...] = (),
    threshold: float = 1.0,
    persist: int = 5,
    loss_factor: float = 1.5,
    grad_factor: float = 4.0,
    history: int = 5,
    loss_scale_drop: float = 4.0,
    recent_share: float = 0.2,
    trend_z: float = 4.0,
    trend_gate: float = 1.1,
    finished: bool = False,
) -> EarlyWarningResult:
    """How early a divergence could be seen (``onset_step`` given), or whether one is coming (not given).

    Args:
        loss: the training loss (its finite points are scored).
        onset_step: the divergence's onset (``Divergence.onset_step``); None for a run that did not diverge.
        grad_norm, loss_scale, learning_rate: the run's curves of those roles, when logged.
        spike_steps: onsets of the transient loss spikes found in the run.
        threshold, persist: the score fires after ``persist`` points in a row at or above ``threshold``.
        loss_factor, grad_factor, history: see the module doc.
        loss_scale_drop: the fall of the fp16 loss scale that counts as a precursor.
        recent_share: on a run that did not diverge, the last share of it where a firing score warns.
        finished: the run is known to have reached its end: a score firing at the end is information (no
            blow-up can follow a run that is over; it matters to whoever trains on from its last checkpoint).
    """
    steps, score, loss_ratio, grad_ratio, loss_part, grad_part = warning_scores(
        loss, grad_norm, loss_factor=loss_factor, grad_factor=grad_factor, history=history, trend_z=trend_z,
        trend_gate=trend_gate)
    tag = loss.tag
    if not len(steps):
        return EarlyWarningResult(tag, 0, 0, onset_step, (), None, None, threshold, None, None, None, 0.0, 0.0, ())
    first, last = int(steps[0]), int(steps[-1])
    end = last if onset_step is None else onset_step
    span = max(end - first, 1) if onset_step is not None else max(last - first, 1)
    before = steps < onset_step if onset_step is not None else np.ones(len(steps), dtype=bool)
    scored = score[before]
    max_score = float(scored.max()) if scored.size else 0.0
    score_at_end = float(scored[-1]) if scored.size else 0.0
    fire = _final_fire(scored, threshold, persist)  # the stretch that leads into the onset
    warning_step = int(steps[before][fire]) if fire is not None and onset_step is not None else None

    if onset_step is None:
        # warn on a fire within the run's last part that still holds at the last point
        tail = np.flatnonzero(steps >= last - recent_share * span)
        late = _first_fire(score[tail], threshold, persist) if tail.size else None
        warns = late is not None and score_at_end >= threshold
        warning_step = int(steps[tail][late]) if warns and late is not None else None
        findings = ()
        if warns:
            i = int(np.flatnonzero(steps == warning_step)[0])
            findings = (_warning_finding(tag, warning_step, float(loss_ratio[-1]), float(grad_ratio[-1]),
                                         float(score[i]), threshold, grad_norm is not None,
                                         climbing=float(loss_ratio[-1]) < loss_factor and float(grad_ratio[-1]) < grad_factor,
                                         finished=finished),)
        return EarlyWarningResult(tag, first, last, None, (), None, None, threshold,
                                  warning_step if warns else None, None, None, max_score, score_at_end, findings)

    precursors: list[Precursor] = []

    def add(signal: str, step: int, ratio: float | None, detail: str) -> None:
        if step < onset_step:
            lead = int(onset_step - step)
            precursors.append(Precursor(signal, int(step), lead, round(lead / span, 4), ratio, detail))

    sb = steps[before]
    for signal, part, ratios, what in (("loss_rise", loss_part[before], loss_ratio[before], "its running minimum"),
                                       ("grad_norm_growth", grad_part[before], grad_ratio[before],
                                        "its trailing median")):
        if signal == "grad_norm_growth" and grad_norm is None:
            continue
        # the fire that leads into the onset: the last stretch of points at or above the threshold
        at = _final_fire(part, threshold, persist)
        if at is None:
            continue
        ratio = float(ratios[-1]) if ratios.size else None
        add(signal, int(sb[at]), ratio, f"{ratio:.3g}x {what} at the onset" if ratio is not None else what)
    if loss_scale is not None:
        dropped = _loss_scale_drop(loss_scale, onset_step, loss_scale_drop)
        if dropped is not None:
            add("loss_scale_drop", dropped[0], dropped[1], f"the loss scale fell {dropped[1]:.3g}x from its peak")
    rate = _spike_rate(tuple(spike_steps), first, onset_step)
    if rate is not None:
        n = sum(1 for s in spike_steps if rate[0] <= s < onset_step)
        add("spike_rate", rate[0], rate[1], f"{n} spikes from then to the onset, {rate[1]:.3g}x the run's rate")
    precursors.sort(key=lambda p: p.step)

    lr_at = lr_ratio = None
    if learning_rate is not None:
        lr_part = learning_rate.collapse_steps().finite_part()
        prior = lr_part.values[lr_part.steps < onset_step]
        value = lr_part.value_at(onset_step)
        if np.isfinite(value):
            lr_at = float(value)
            if prior.size and np.median(prior) > 0:
                lr_ratio = float(value / np.median(prior))
    lead = onset_step - warning_step if warning_step is not None else None
    findings = (_precursor_finding(tag, onset_step, span, precursors),) if precursors else ()
    return EarlyWarningResult(tag, first, last, onset_step, tuple(precursors), lr_at, lr_ratio, threshold,
                              warning_step, lead, round(lead / span, 4) if lead is not None else None,
                              max_score, score_at_end, findings)


_WHAT = {"loss_rise": "the loss rose {r:.3g}x above its running minimum",
         "grad_norm_growth": "the gradient norm grew {r:.3g}x over its trailing median",
         "loss_scale_drop": "the fp16 loss scale fell {r:.3g}x",
         "spike_rate": "loss spikes came {r:.3g}x as often as before"}


def _precursor_finding(tag: str, onset: int, span: int, precursors: list[Precursor]) -> Finding:
    first = precursors[0]
    what = _WHAT[first.signal].format(r=first.ratio or 0.0)
    others = ", ".join(p.signal.replace("_", " ") for p in precursors[1:])
    message = (f"{what} {first.lead_steps:,} steps ({first.lead_share:.0%} of the run) before {tag} diverged "
               f"at step {onset:,}" + (f"; also before it: {others}" if others else ""))
    return Finding("divergence_precursor", Severity.INFO, message, recommend("divergence_precursor"),
                   step=first.step, step_end=onset,
                   evidence={"precursors": [p.to_dict() for p in precursors], "onset_step": onset, "span": span})


def _warning_finding(tag: str, step: int, loss_ratio: float, grad_ratio: float, score: float, threshold: float,
                     has_grad: bool, climbing: bool, finished: bool = False) -> Finding:
    parts = [f"{tag} is {loss_ratio:.3g}x its running minimum" + (" and climbing steadily" if climbing else "")]
    if has_grad:
        parts.append(f"the gradient norm is {grad_ratio:.3g}x its trailing median")
    if finished:
        message = (f"divergence warning since step {step:,}: " + " and ".join(parts)
                   + f" (warning score {score:.2f} ≥ {threshold:g}) when the run finished, without diverging")
        return Finding("divergence_warning", Severity.INFO, message, recommend("divergence_warning_finished"),
                       step=step, evidence={"loss_ratio": loss_ratio, "grad_ratio": grad_ratio, "score": score,
                                            "threshold": threshold, "finished": True})
    message = (f"divergence warning since step {step:,}: " + " and ".join(parts)
               + f" (warning score {score:.2f} ≥ {threshold:g}); the run has not diverged yet")
    return Finding("divergence_warning", Severity.WARNING, message, recommend("divergence_warning"), step=step,
                   evidence={"loss_ratio": loss_ratio, "grad_ratio": grad_ratio, "score": score,
                             "threshold": threshold})
