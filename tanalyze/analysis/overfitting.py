"""Overfitting: the validation loss stops improving and rises while the training loss keeps falling.

Onset is the validation minimum — not a lone low draw of a noisy curve (an evaluation
whose neighbours lie well above it): then the lowest evaluation where the median of three
neighbouring ones is lowest; the *window* is every evaluation within
``tolerance`` (1 %) of it, because on a noisy or flat bottom any of them could
be called the minimum. Prechelt's generalisation loss at the end,
``GL = 100 · (E_va(end) / min E_va − 1)`` (L. Prechelt, "Early Stopping — But
When?", 1998), measures how much was given up.

A rise counts only when it persists beyond noise: most of the later half of
the evaluations after the minimum lie above ``min + band`` (band = the larger of
``tolerance`` and ``noise_sigmas`` × the second-difference noise of the curve
from a little before the minimum to the end), their median is above it too, the Theil–Sen trend after the minimum is upward, and
the training loss did not rise along with it (that would be degradation, not
overfitting; a rise of its level counts only beyond what the noise of a per-step
loss moves the two medians it is read from). And it must be more than the minimum being a low draw of the noise:
at least ``min_points_rising`` evaluations after the minimum, spanning
``min_span_share`` of the run, and either a one-sided Kendall trend test on
them (the minimum itself left out: its selection biases any test) at
``trend_alpha``, or a tail ``clear_rise`` (15 %) and ``clear_sigmas`` (6)
noise sigmas above the minimum's level, or a ``large_rise`` (50 %) and 3 sigmas that ``large_share`` (80 %) of the
later evaluations share (a short Keras or fastai run whose wild first epochs widen the noise); with only 3 or 4
evaluations after the minimum, a rise of ``clear_rise`` and twice the band that climbs at every one of them, or
from 4 on, a rise of ``steady_sigmas`` (4) noise sigmas that climbs at every one of them. On 300 healthy synthetic runs
(validation = training x 1.1 + i.i.d. noise) this calls none overfitting
(``tests/analysis/test_overfitting.py``).

A second pattern with the same cause: the validation loss has stalled at its
minimum for a good part of the run while the training loss kept falling by
``gap_min_train_drop`` or more — the train–validation gap widens and the extra
steps only memorise. A flat validation curve is not a rise, so this is called
overfitting only when the stall is established: ``gap_min_evals`` (20) or more
evaluations after the minimum (longer than early-stopping patience is set in
practice), the gap between the validation loss and the training level rising
with a one-sided Kendall trend test at ``trend_alpha``, and the validation noise
band under half the training drop. A shorter stall while the training loss falls
is an INFO finding ``val_plateau`` (the steps after it gain nothing on
validation), not a problem: on the healthy-sweep benchmark
(``bench/bench_specificity.py``) healthy runs whose validation loss levels off
while the noisy training loss keeps falling are common.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve, bin_medians, loss_space, noise_sigma, theil_sen, trailing_median

__all__ = ["OverfittingResult", "analyze_overfitting", "train_level_at"]


@dataclass(frozen=True)
class OverfittingResult(ResultMixin):
    """Whether and where the run started to overfit, with the numbers."""

    detected: bool
    pattern: str | None  # "rising" (val rises) | "widening_gap" (val stalls, train keeps falling) | None
    confidence: float
    reason: str
    val_tag: str
    train_tag: str | None
    val_points: int
    onset_step: int | None  # the validation minimum
    min_window: tuple[int, int] | None  # first and last step within `tolerance` of the minimum
    val_min: float | None
    val_end: float | None
    val_tail: float | None  # median of the later half of the evaluations after the minimum
    rise_abs: float | None  # val_tail - val_min
    rise_rel: float | None  # rise_abs / |val_min|
    gl_end: float | None  # Prechelt's generalisation loss at the last evaluation
    points_after_min: int
    share_above: float | None  # share of those later evaluations above min + band
    trend_after_min: float | None  # Theil-Sen change over the steps after the minimum (log units when positive)
    band: float | None
    noise: float | None
    train_at_onset: float | None
    train_end: float | None
    train_change_rel: float | None  # train_end / train_at_onset - 1
    gap_at_onset: float | None
    gap_end: float | None
    gap_trend: str | None  # "growing" | "stable" | "shrinking" | None (not comparable / no train)
    losses_comparable: bool
    findings: tuple[Finding, ...]


def train_level_at(train: Curve, steps: np.ndarray, strip_points: int) -> np.ndarray:
    """The training loss around each of ``steps``: the median of the last ``strip_points`` train points
    at or before it (NaN before the first train point)."""
    level = trailing_median(train.values, strip_points, include_current=True)
    index = np.searchsorted(train.steps, steps, side="right") - 1
    out = np.where(index >= 0, level[np.clip(index, 0, None)], np.nan)
    return out


def _empty(reason: str, val: Curve | None, train: Curve | None, points: int, comparable: bool) -> OverfittingResult:
    return OverfittingResult(
        detected=False, pattern=None, confidence=0.0, reason=reason, val_tag=val.tag if val else "",
        train_tag=train.tag if train else None, val_points=points, onset_step=None, min_window=None,
        val_min=None, val_end=None, val_tail=None, rise_abs=None, rise_rel=None, gl_end=None,
        points_after_min=0, share_above=None, trend_after_min=None, band=None, noise=None,
        train_at_onset=None, train_end=None, train_change_rel=None, gap_at_onset=None, gap_end=None,
        gap_trend=None, losses_comparable=comparable, findings=(),
    )


def analyze_overfitting(
    val: Curve | None,
    train: Curve | None = None,
    *,
    losses_comparable: bool = True,
    tolerance: float = 0.01,
    noise_sigmas: float = 2.0,
    min_points: int = 4,
    min_points_after: int = 2,
    min_share_above: float = 0.7,
    min_rise: float = 0.02,
    gap_min_train_drop: float = 0.2,
    gap_min_stall: float = 0.25,
    min_points_rising: int = 5,
    min_span_share: float = 0.1,
    trend_alpha: float = 0.001,
    gap_min_evals: int = 20,
    clear_rise: float = 0.15,
    clear_sigmas: float = 6.0,
    lone_draw: float = 0.0025,
    large_rise: float = 0.5,
    large_share: float = 0.8,
    steady_sigmas: float = 4.0,
) -> OverfittingResult:
    """Detect overfitting from the validation curve (and the training curve when given).

    Args:
        val: validation loss. train: training loss (any logging interval).
        losses_comparable: train and validation measure the same quantity (else no gap is computed).
        tolerance: relative width of the minimum window and the smallest band (1 %).
        noise_sigmas: the band is at least this many noise standard deviations.
        min_points: validation points needed at all; min_points_after: after the minimum.
        min_share_above: share of the later post-minimum evaluations that must lie above the band.
        min_rise: smallest relative rise of the validation loss worth calling overfitting (2 %).
        gap_min_train_drop: for the widening-gap pattern, how much the training loss must fall after
            the validation minimum (20 %).
        gap_min_stall: and the share of the validation span spent after the minimum (25 %).
        gap_min_evals: and the evaluations after the minimum (20); shorter stalls are an INFO ``val_plateau``.
        min_points_rising, min_span_share, trend_alpha, clear_rise, clear_sigmas: the persistence test of a
            rise (see the module doc).
        large_rise, large_share: a rise of ``large_rise`` (50 %) and 3 noise sigmas above the minimum's level that
            ``large_share`` of the later evaluations share persists without a trend test (see the module doc).
        steady_sigmas: a rise of this many noise sigmas that climbs at every one of four or more evaluations after
            the minimum persists too.
        lone_draw: the lowest evaluation is the minimum unless the median of it and its neighbours lies more
            than this (0.25 %) above the lowest such median: then it is a lone low draw of the noise, and the
            minimum is sought around that lowest median.
    """
    if val is None or len(val) == 0:
        return _empty("no validation loss: overfitting cannot be judged", val, train, 0, losses_comparable)
    v = val.collapse_steps().finite_part()
    n = len(v)
    if n < min_points:
        return _empty(f"only {n} finite validation point(s); need {min_points}", val, train, n, losses_comparable)
    y, is_log = loss_space(v.values)
    imin = _lowest(y, np.log1p(lone_draw) if is_log else lone_draw * max(float(np.min(np.abs(y))), 1e-12))
    vmin = float(v.values[imin])
    limit = vmin * (1 + tolerance) if vmin > 0 else vmin + tolerance * abs(vmin)
    near = np.flatnonzero(v.values <= limit)
    window = (int(v.steps[near[0]]), int(v.steps[near[-1]]))
    post = y[imin + 1 :]
    m = len(post)
    # Noise where it matters: around and after the minimum (early epochs are often wilder).
    sigma = noise_sigma(y[max(0, imin - max(m, 4)) :])
    if not np.isfinite(sigma):
        sigma = noise_sigma(y)
    sigma = 0.0 if not np.isfinite(sigma) else float(sigma)
    scale = 1.0 if is_log else max(abs(vmin), 1e-12)
    band = max(np.log1p(tolerance) if is_log else tolerance * scale, noise_sigmas * sigma)
    onset_step = int(v.steps[imin])
    val_end = float(v.values[-1])
    gl_end = 100.0 * (val_end / vmin - 1) if vmin > 0 else None

    t_onset = t_end = t_change = None
    gap_onset = gap_end = None
    quoted = None  # the training level at the onset and at the end as reported, and the gaps they give
    gap_trend = None
    t_curve = train.collapse_steps().finite_part() if train is not None else None
    train_log_change = train_later_change = train_rise_noise = 0.0
    train_still_falling = False  # the training loss fell over the later half of the evaluations after the minimum
    p_gap = 1.0  # one-sided Kendall p of the gap widening over the evaluations after the minimum
    if t_curve is not None and len(t_curve) >= 2:
        strip = int(np.clip(round(len(t_curve) / max(n, 1)), 1, 501))
        levels = train_level_at(t_curve, v.steps, strip)
        t_onset = float(levels[imin]) if np.isfinite(levels[imin]) else float(t_curve.values[0])
        t_end = float(trailing_median(t_curve.values, strip, include_current=True)[-1])
        # the training level over the later half of the evaluations after the minimum, where the validation
        # rise is read: a training loss that climbed there and came down by the end also degraded
        later_steps = t_curve.steps >= v.steps[n - max(2, int(np.ceil((n - imin - 1) / 2)))]
        t_later = float(np.median(t_curve.values[later_steps])) if later_steps.any() else t_end
        if t_onset > 0 and t_end > 0 and t_later > 0:
            train_log_change = float(np.log(t_end / t_onset))
            t_change = float(t_end / t_onset - 1)
            train_later_change = float(np.log(t_later / t_onset))
        else:
            span = max(abs(t_onset), 1e-12)
            train_log_change = (t_end - t_onset) / span
            t_change = train_log_change
            train_later_change = (t_later - t_onset) / span
        train_rise_noise = _level_change_noise(t_curve.values, strip, max(abs(t_onset), 1e-12))
        quoted = _quoted_levels(t_curve, v, imin, len(t_curve) / max(n, 1), losses_comparable)
        t_middle = float(levels[imin + (n - imin) // 2])
        if t_middle > 0 and t_end > 0 and train_log_change < 0:
            # (a tenth of the fall since the minimum, at least: a loss that fell in the first evaluations after
            # it and has stood still since did not keep falling while the validation loss stalled)
            train_still_falling = np.log(t_end / t_middle) <= 0.1 * train_log_change
        if losses_comparable:
            gaps = v.values - levels
            ok = np.isfinite(gaps)
            gap_onset = float(gaps[imin]) if ok[imin] else None
            gap_end = float(v.values[-1] - t_end)
            after = gaps[imin:][ok[imin:]]
            if len(after) >= 3:
                p_gap = kendall_increasing_p(after)
            if gap_onset is not None:
                grow = gap_end - gap_onset
                unit = band * (abs(vmin) if is_log else 1.0)
                gap_trend = "growing" if grow > unit else ("shrinking" if grow < -unit else "stable")

    share = tail_rise = trend = rise_abs = rise_rel = val_tail = bottom = None
    pattern = None
    plateau = False
    unconfirmed = False  # a rise its noise cannot yet tell from chance
    confidence = 0.0
    if m < min_points_after:
        reason = f"validation minimum at step {onset_step} is at or next to the end: still improving"
    else:
        k = max(2, int(np.ceil(m / 2)))
        later = post[-k:]
        # The raw minimum of a noisy curve is biased low: measure the rise from the level around it.
        # (the first evaluation's level is itself, as for :func:`_lowest`: a median of it and the next one is
        # their mean, which a jump right after the minimum drags up)
        bottom = float(np.median(y[imin - 1 : imin + 2])) if imin > 0 else float(y[0])
        share = float(np.mean(later > bottom + band))
        tail_y = float(np.median(later))
        tail_rise = tail_y - bottom
        val_tail = float(np.exp(tail_y)) if is_log else tail_y
        xs, ys = v.steps[imin:].astype(np.float64), y[imin:]
        if len(xs) > 200:
            xs, ys = bin_medians(xs, ys, 100)
        slope, _ = theil_sen(xs, ys)
        trend = float(slope * (v.steps[-1] - onset_step)) if np.isfinite(slope) else 0.0
        rise_abs = val_tail - vmin
        rise_rel = rise_abs / abs(vmin) if vmin != 0 else None
        min_rise_units = np.log1p(min_rise) if is_log else min_rise * scale
        bar = max(band, min_rise_units)
        # (a rise of the training loss's level beyond what its noise moves the two medians it is read from)
        rise = max(train_log_change, train_later_change)
        train_rising = rise > max(band, tail_rise / 2, 2 * train_rise_noise) and rise > 0
        span = v.steps[-1] - v.steps[0]
        stalled_share = (v.steps[-1] - onset_step) / span if span > 0 else 0.0
        dropped = -train_log_change >= -np.log1p(-gap_min_train_drop)
        after_span = (v.steps[-1] - onset_step) / span if span > 0 else 0.0
        p_trend = kendall_increasing_p(post)
        clear = tail_rise >= max(np.log1p(clear_rise) if is_log else clear_rise * scale, clear_sigmas * sigma)
        # few evaluations after the minimum: only a clear rise that climbs at every one of them (or, from four on, a
        # climb at every one of them well beyond the noise: one order in 24 and a draw of four sigmas)
        steady_climb = m >= 3 and bool((np.diff(y[imin:]) > 0).all())
        big = tail_rise >= max(np.log1p(clear_rise) if is_log else clear_rise * scale, 2 * band)
        # (a rise of half the minimum's level or more, beyond three sigmas of the noise from the minimum on, that
        # most later evaluations share: no draw of the noise, though wild first epochs widen the band and the
        # trend test of a short run cannot tell)
        after_sigma = noise_sigma(y[imin:]) if m >= 3 else np.nan
        after_sigma = float(after_sigma) if np.isfinite(after_sigma) else sigma
        large_units = max(np.log1p(large_rise) if is_log else large_rise * scale, 3 * after_sigma)
        large_share_above = float(np.mean(later > bottom + large_units / 2))
        large = (m >= min_points_rising and after_span >= min_span_share and tail_rise >= large_units
                 and large_share_above >= large_share)
        # (or the validation loss's whole level moved up: the median of the evaluations after the minimum half again
        # above the median of those up to it, beyond three standard errors of that difference, with most later
        # evaluations above it — a lone low minimum drawn between wild evaluations cannot hide such a rise)
        ahead = y[: imin + 1]
        shift = float(np.median(post) - np.median(ahead)) if m else 0.0
        shifted = (len(ahead) >= 3 and m >= min_points_rising and after_span >= min_span_share
                   and shift >= max(np.log1p(large_rise) if is_log else large_rise * scale,
                                    3 * 1.2533 * after_sigma * np.sqrt(1 / len(ahead) + 1 / m))
                   and float(np.mean(post > np.median(ahead))) >= large_share)
        persistent = after_span >= min_span_share and (
            (m >= min_points_rising and (p_trend < trend_alpha or clear)) or (big and steady_climb)
            or (m >= 4 and steady_climb and tail_rise >= steady_sigmas * sigma))
        # (a clear rise that came at once after the minimum and has eased a little since still stands, while the
        # training loss ends below where it was at the minimum: trending down by under a quarter of the rise is no
        # return to the minimum)
        holding = trend > 0 or (clear and trend > -tail_rise / 4 and train_log_change < 0)
        # (and a training loss that ends clearly above its level at the minimum rose with it: degradation)
        train_ended_higher = train_log_change > max(2 * train_rise_noise, band)
        if (share >= min_share_above and tail_rise >= bar and holding and not train_rising and not train_ended_higher
                and persistent):
            pattern = "rising"
            confidence = (1 - 0.5 * bar / tail_rise) * (0.5 + 0.5 * share) * (m / (m + 1))
            reason = (f"validation loss rose {100 * (rise_rel or 0):.1f}% above its minimum at step {onset_step} "
                      f"and stayed up ({share:.0%} of the later evaluations above the {_pct(band, is_log)} band)")
        elif large and trend > 0 and not train_rising and not train_ended_higher:
            pattern = "rising"
            confidence = (1 - 0.5 * large_units / tail_rise) * (0.5 + 0.5 * large_share_above) * (m / (m + 1))
            reason = (f"validation loss rose {100 * (rise_rel or 0):.1f}% above its minimum at step {onset_step} "
                      f"and stayed up ({large_share_above:.0%} of the later evaluations more than "
                      f"{_pct(large_units / 2, is_log)} above it)")
        elif shifted and trend > 0 and not train_rising and not train_ended_higher:
            pattern = "rising"
            level = np.expm1(shift) if is_log else shift / scale
            confidence = (0.5 + 0.5 * min(1.0, float(np.mean(post > np.median(ahead))))) * (m / (m + 1)) * 0.9
            reason = (f"validation loss after its minimum at step {onset_step} sits {100 * level:.0f}% above its level "
                      f"up to there (medians of the {len(ahead)} evaluations before and the {m} after), most later "
                      "evaluations above it")
        elif (stalled_share >= gap_min_stall and m >= 3 and dropped and train_still_falling and gap_trend == "growing"
              and tail_rise >= 0 and not train_rising and band < -train_log_change / 2):
            stall = (f"validation loss has not improved since step {onset_step} ({stalled_share:.0%} of the run, "
                     f"{m} evaluations) while the training loss fell {-100 * (t_change or 0):.0f}%")
            if m >= gap_min_evals and p_gap < trend_alpha:
                pattern = "widening_gap"
                past = min(1.0, -train_log_change / (-2 * np.log1p(-gap_min_train_drop)))
                confidence = 0.5 + 0.25 * past * (m / (m + 1))
                reason = f"{stall}; the train-validation gap widened (trend p = {p_gap:.1g})"
            else:
                plateau = True
                reason = (f"{stall}: a plateau, not a rise (overfitting needs the validation loss to rise beyond "
                          f"its noise, or a stall of {gap_min_evals}+ evaluations)")
        elif train_rising or (train_ended_higher and share >= min_share_above and tail_rise >= bar):
            reason = "validation loss rose, but the training loss rose with it (degradation, not overfitting)"
        elif share >= min_share_above and tail_rise >= bar and trend > 0:
            reason = (f"the validation loss is above its minimum at step {onset_step}, but over {m} evaluation(s) "
                      f"({after_span:.0%} of the run) with trend p = {p_trend:.2g}: not yet distinguishable from noise")
            unconfirmed = True
        elif share < min_share_above or tail_rise < band:
            reason = f"no persistent rise after the validation minimum (band {_pct(band, is_log)})"
            unconfirmed = tail_rise >= band and trend > 0  # (its end above the band, most evaluations not)
        else:
            reason = "the validation loss rise is too small or not trending up"

    findings: tuple[Finding, ...] = ()
    ended = (f"; its later evaluations are {100 * (rise_rel or 0):+.1f}% above it, the last {val_end:.4g}"
             if val_end is not None and (rise_rel or 0) > 0 else "")
    # (reported when large and shared by half the later evaluations: a healthy run's noisy tail is no news)
    if pattern is None and unconfirmed and (rise_rel or 0) >= _REPORTED_RISE and (share or 0) >= 0.5:
        findings = (Finding("val_rise", Severity.INFO,
                            f"{v.tag} rose after its minimum {vmin:.4g} (step {onset_step}){ended}, over {m} "
                            f"evaluation(s), but its noise is as large (trend p = {p_trend:.2g}): not yet "
                            "overfitting; the next evaluations will tell", recommend("val_rise"),
                            step=onset_step, step_end=int(v.steps[-1]), evidence={"window": list(window)}),)
    elif pattern is not None:
        train_txt = (f" while {t_curve.tag} went from {quoted.onset:.4g} to {quoted.end:.4g}"
                     if t_curve is not None and quoted is not None else "")
        gap_txt = (f"; the train-validation gap went from {quoted.gap_onset:.4g} to {quoted.gap_end:.4g}"
                   if quoted is not None and quoted.gap_onset is not None and quoted.gap_end is not None else "")
        gl_txt = f", GL = {gl_end:.1f}" if gl_end is not None else ""
        message = (
            f"{v.tag} reached its minimum {vmin:.4g} at step {onset_step} (within {100 * tolerance:.0f}% from "
            f"step {window[0]} to {window[1]}) and ended at {val_end:.4g} ({100 * (rise_rel or 0):+.1f}% over "
            f"the later evaluations{gl_txt}){train_txt}{gap_txt}"
        )
        message += _lone_draw(v, y, imin)
        findings = (Finding("overfitting", Severity.WARNING, message, recommend("overfitting"), step=onset_step,
                            step_end=int(v.steps[-1]), evidence={"pattern": pattern, "gl_end": gl_end,
                                                                 "window": list(window)}),)
    elif plateau:
        findings = (Finding("val_plateau", Severity.INFO,
                            f"{v.tag} has not improved on its minimum {vmin:.4g} (step {onset_step}) in {m} evaluations "
                            f"({_plateau_level(tail_rise, bottom, band, share, is_log, val_end, min_share_above)}) while "
                            f"{t_curve.tag if t_curve is not None else 'the training loss'} kept falling: the "
                            f"steps after it gain nothing on validation{_lone_draw(v, y, imin)}", recommend("val_plateau"),
                            step=onset_step, step_end=int(v.steps[-1]),
                            evidence={"window": list(window), "train_change_rel": t_change}),)
    findings += _frozen(v)
    return OverfittingResult(
        detected=pattern is not None, pattern=pattern, confidence=round(float(np.clip(confidence, 0, 1)), 3),
        reason=reason, val_tag=v.tag, train_tag=t_curve.tag if t_curve is not None else None, val_points=n,
        onset_step=onset_step, min_window=window, val_min=vmin, val_end=val_end, val_tail=val_tail,
        rise_abs=rise_abs, rise_rel=rise_rel, gl_end=gl_end, points_after_min=m, share_above=share,
        trend_after_min=trend, band=float(band), noise=sigma,
        train_at_onset=quoted.onset if quoted is not None else None, train_end=quoted.end if quoted is not None else None,
        train_change_rel=t_change, gap_at_onset=quoted.gap_onset if quoted is not None else None,
        gap_end=quoted.gap_end if quoted is not None else None, gap_trend=gap_trend,
        losses_comparable=losses_comparable, findings=findings,
    )


class _Quoted(NamedTuple):
    onset: float
    end: float
    gap_onset: float | None
    gap_end: float | None


def _quoted_levels(train: Curve, v: Curve, imin: int, per_eval: float, comparable: bool) -> _Quoted:
    """The training loss reported at the validation minimum and at the end, and the train-validation gaps there:
    medians of the last quarter of the training points between two evaluations (5 at least, where there are), the
    level at those steps. The medians over a whole interval the rules above weigh, less noisy, lag a fast fall by
    half an interval (a Whisper fine-tune's 0.19 of step 500 quoted for its 0.10 at step 1000)."""
    near = int(np.clip(round(max(per_eval / 4, min(5.0, per_eval))), 1, 125))
    at = float(train_level_at(train, v.steps[imin:imin + 1], near)[0])
    onset = at if np.isfinite(at) else float(train.values[0])  # (no training point before the minimum: the first)
    end = float(trailing_median(train.values, near, include_current=True)[-1])
    if not comparable:
        return _Quoted(onset, end, None, None)
    return _Quoted(onset, end, float(v.values[imin] - at) if np.isfinite(at) else None, float(v.values[-1] - end))


def _frozen(v: Curve, min_evaluations: int = 10) -> tuple[Finding, ...]:
    """A warning when the validation loss is one and the same value at its last ``min_evaluations`` evaluations or
    more (half of them at least): the model's outputs on the validation set no longer change, or the validation is
    not run anew."""
    values = v.values
    same = int(np.argmax(values[::-1] != values[-1])) if (values != values[-1]).any() else len(values)
    if same < max(min_evaluations, len(values) / 2) or not np.isfinite(values[-1]):
        return ()
    first = int(v.steps[len(values) - same])
    return (Finding("val_frozen", Severity.WARNING,
                    f"{v.tag} is {values[-1]:.6g} at each of its last {same} evaluations (from step {first}): the "
                    "model's outputs on the validation set no longer change (no gradient left: a training loss at "
                    "0, a learning rate of 0, frozen weights) or the validation is not run anew",
                    recommend("val_frozen"), step=first, step_end=int(v.steps[-1]),
                    evidence={"value": float(values[-1]), "evaluations": same}),)


#: the rise over its minimum (relative) that the later evaluations of a rise not yet told from noise must show for
#: it to be reported (``val_rise``)
_REPORTED_RISE = 0.25


def _lowest(y: np.ndarray, tolerance: float) -> int:
    """Where the curve is lowest: its lowest evaluation, unless that is a lone low draw of a noisy curve —
    the median of it and its two neighbours lies more than ``tolerance`` (in ``y``'s units) above the lowest
    such median; then the lowest evaluation of the three around that lowest median. The last evaluation's
    median is the one before it (a last low draw is no new minimum), the first evaluation's itself."""
    lowest = int(np.argmin(y))
    if len(y) < 5:
        return lowest
    from scipy.ndimage import median_filter  # imported on use: scipy is slow to import

    smooth = median_filter(y, size=3, mode="mirror")  # at the end: median(y[-2], y[-1], y[-2]) = y[-2]
    smooth[0] = y[0]
    centre = int(np.argmin(smooth))
    if smooth[lowest] <= smooth[centre] + tolerance:
        return lowest
    lo, hi = max(0, centre - 1), min(len(y), centre + 2)
    return lo + int(np.argmin(y[lo:hi]))


def _level_change_noise(values: np.ndarray, strip: int, scale: float) -> float:
    """The standard error of the change between two medians of ``strip`` points of the (training) curve
    ``values``, in the units ``train_log_change`` is in (log; or relative to ``scale`` when a value is not
    positive): a per-step loss is noisy, and its level at two places differs by chance that much."""
    finite = values[np.isfinite(values)]
    points = np.log(finite) if finite.size and (finite > 0).all() else finite / scale
    sigma = noise_sigma(points)
    return 0.0 if not np.isfinite(sigma) else float(1.2533 * sigma * np.sqrt(2.0 / strip))


def kendall_increasing_p(values: np.ndarray) -> float:
    """One-sided p-value of Kendall's tau for an increasing trend of ``values`` against their order (ties
    counted half); exact for up to 12 points, the normal approximation beyond. 1.0 for fewer than 3 points."""
    y = np.asarray(values, dtype=np.float64)
    n = len(y)
    if n < 3:
        return 1.0
    i, j = np.triu_indices(n, k=1)
    d = np.sign(y[j] - y[i])
    s = float(d.sum())
    if n <= 12:  # exact: S = pairs - 2 * inversions, inversions of a random order follow the Mahonian numbers
        counts = np.ones(1)
        for k in range(2, n + 1):
            counts = np.convolve(counts, np.ones(k))
        pairs = n * (n - 1) // 2
        most_inversions = int(np.floor((pairs - s) / 2 + 1e-9))
        return float(counts[: most_inversions + 1].sum() / counts.sum())
    var = n * (n - 1) * (2 * n + 5) / 18.0
    z = (s - 1) / np.sqrt(var)  # continuity correction
    from scipy.stats import norm

    return float(norm.sf(z))


def _plateau_level(rise: float | None, bottom: float | None, band: float, share: float | None, is_log: bool,
                   last: float, enough: float = 1.0) -> str:
    """Where the later evaluations of a plateau lie: ``the later evaluations are +9.4% above the level around it
    (0.266), the last 0.2878: within its noise, a band of 21.1%`` — the rise from the level around the minimum the
    noise band is compared with, not from its raw value; when that rise is beyond the band, how few of them are,
    or, when ``enough`` of them are, that they are too few evaluations to call the rise lasting."""
    noise = f"a band of {_pct(band, is_log)}"
    if rise is None or bottom is None or rise <= 0:
        return f"within its noise, {noise}"
    level = float(np.exp(bottom)) if is_log else bottom
    where = f"the later evaluations are +{_pct(rise, is_log)} above the level around it ({level:.4g}), the last {last:.4g}"
    if rise <= band or share is None:
        return f"{where}: within its noise, {noise}"
    if share >= enough:
        return f"{where}, {share:.0%} of them beyond its noise ({noise}), too few evaluations to call the rise lasting"
    return f"{where}, but only {share:.0%} of them beyond its noise ({noise}): no lasting rise"


def _lone_draw(v: Curve, y: np.ndarray, imin: int) -> str:
    """The words on a lowest evaluation that is not where the minimum was put (a lone low draw), or ''."""
    lone = int(np.argmin(y))
    if lone == imin:
        return ""
    return (f"; its lowest evaluation, {v.values[lone]:.4g} at step {int(v.steps[lone])}, is a lone low draw between "
            "higher neighbours, not where the curve turned")


def _pct(band: float, is_log: bool) -> str:
    return f"{100 * np.expm1(band):.1f}%" if is_log else f"{band:.3g}"
