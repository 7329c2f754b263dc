"""Divergence (NaN/Inf or an explosion that never comes back) and transient loss spikes.

Method (every finite point is used, in the order logged, one point per step):

* A loss is analysed in log space when it is positive (see :func:`loss_space`).
* Each point is compared with the median of the ``window`` points before it;
  its robust z-score uses a local scale (1.4826 × the median absolute deviation
  from a centred running median, per block of ``window`` points, taken over the
  3 blocks before the point's own, at least 15 points; the first block uses its
  own) floored by half the whole
  curve's second-difference noise,
  so a clean curve does not turn every wiggle into a spike.
* A point *exceeds* when ``z >= spike_z`` and it is at least ``spike_min_ratio``
  times its trailing median. The excursion starts at the first point of the
  run of points above ``baseline + 3σ`` that leads to it, and ends at the first
  point back within ``max(recovery_sigmas·σ, log(1 + recovery_tolerance))`` of
  the baseline frozen at the onset.
* An excursion that never ends is an *explosion* when at least
  ``min_explosion_points`` points follow and their median is
  ``explosion_ratio`` times the baseline; its ``step`` is the point of no
  return: the first step from which the loss stays above ``no_return_factor``
  (10) times its running minimum, else the onset. A curve whose last values
  are non-finite has *diverged* at the first step of that non-finite stretch.
* A slow climb that never trips the z-score (the loss ends ``explosion_ratio``
  times above its minimum and above where it started) is also an explosion,
  reported as gradual.

Robust z-scores against a trailing window are the usual change detector for
loss spikes (e.g. the spike-skipping rules in PaLM §5.1 and OPT's logbook);
the defaults below are ours and are named parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import (
    MAD_TO_SIGMA,
    Curve,
    bin_medians,
    loss_space,
    noise_sigma,
    quantum,
    segment_medians,
    trailing_median,
)

__all__ = ["Spike", "RestartAdvice", "Divergence", "DivergenceResult", "analyze_divergence", "find_excursions"]

#: Floor of the noise scale in log units (0.1 %): below it a curve is treated as noiseless.
LOG_NOISE_FLOOR = 1e-3


@dataclass(frozen=True)
class Spike(ResultMixin):
    """A transient excursion of the loss above its normal range (``step`` is its peak, where to mark it)."""

    step: int
    onset_step: int
    peak_step: int
    tag: str
    end_step: int | None  # first step back within range; None when it never came back
    baseline: float  # trailing median before the onset, in the loss's units
    peak_value: float
    magnitude: float | None  # peak / baseline (positive losses only)
    z: float  # robust z-score of the peak
    recovery_steps: int | None
    points: int  # points from the onset until back within range
    grad_norm_lead_steps: int | None = None  # > 0: the gradient norm spiked that many steps earlier


@dataclass(frozen=True)
class RestartAdvice(ResultMixin):
    """What to do after a divergence: where to resume and with which settings."""

    resume_at_or_before_step: int
    onset_step: int
    margin_steps: int
    lr_at_onset: float | None
    suggested_lr: float | None
    suggested_max_grad_norm: float | None
    text: str


@dataclass(frozen=True)
class Divergence(ResultMixin):
    """The run diverged: its loss went non-finite or exploded and never came back."""

    kind: str  # "nan" | "inf" | "explosion"
    step: int  # first step of the final non-finite stretch, or the explosion onset
    onset_step: int  # earliest step of the blow-up (explosion onset before going non-finite)
    first_nonfinite_step: int | None
    baseline: float | None  # normal level just before the onset
    level_after: float | None  # median of the finite points after the onset
    ratio: float | None  # level_after / baseline
    gradual: bool
    grad_norm_lead_steps: int | None
    restart: RestartAdvice
    #: non-finite from the first logged point: broken before training could move it (no learning rate did it)
    never_finite: bool = False
    #: a blow-up the loss came down from, but only to a level well above its old one (see ``settled_rise``):
    #: the highest value after the onset and the level the loss settled at (the median of the last third)
    peak: float | None = None
    settled: float | None = None

    def settled_how(self, tag: str) -> str | None:
        """What happened to ``tag``'s curve, in words, for a blow-up it came down from only partly (None for
        any other divergence)."""
        if self.peak is None or self.settled is None or not self.baseline:
            return None
        return (f"{tag} exploded from step {self.onset_step} ({self.baseline:.4g} -> a peak of {self.peak:.4g}, "
                f"{self.peak / self.baseline:.3g}x) and never came back: it settled at {self.settled:.4g}, "
                f"{self.settled / self.baseline:.3g}x its level before, the progress made before the blow-up lost")

    def how(self, tag: str) -> str:
        """What happened to ``tag``'s curve, in words (a non-finite divergence)."""
        if self.never_finite:
            return f"{tag} was {self.kind.upper()} from its first logged step ({self.step}) and never finite"
        return f"{tag} became {self.kind.upper()} at step {self.step}"


@dataclass(frozen=True)
class DivergenceResult(ResultMixin):
    """Divergence and spikes of one loss curve, with what decided them."""

    tag: str
    points: int  # as logged
    finite_points: int  # as logged
    analysed_points: int  # finite points after averaging the points of one step
    nonfinite_points: int
    first_nonfinite_step: int | None
    divergence: Divergence | None
    spikes: tuple[Spike, ...]
    window: int
    noise: float  # robust noise level (log units when log_space)
    log_space: bool
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class _Excursion:
    onset: int  # index
    detect: int  # index where the threshold was first crossed
    end: int | None  # index back within range
    baseline: float  # in analysis space
    scale: float


def _auto_window(n: int) -> int:
    return int(np.clip(n // 20, 5, 50))


def _scales(y: np.ndarray, window: int, is_log: bool) -> tuple[np.ndarray, np.ndarray, float]:
    from scipy.ndimage import median_filter  # imported on use: scipy is slow to import

    ref = trailing_median(y, window)
    ref[0] = y[0]
    # Local noise: deviations from a centred running median (which follows the trend), summarised per
    # block of `window` points; a point's scale is the median over the 3 blocks before its own (at least
    # 15 points), so a few spikes cannot inflate it.
    size = max(3, window) | 1
    centred = median_filter(y, size=size, mode="nearest")
    deviation = np.abs(y - centred)
    block = max(window, 5)
    starts = np.arange(0, len(y), block)
    per_block = MAD_TO_SIGMA * segment_medians(deviation, starts, np.minimum(starts + block, len(y)))
    span = max(3, -(-15 // block))
    padded = np.concatenate([np.full(span, np.nan), per_block])
    windows = np.lib.stride_tricks.sliding_window_view(padded, span)[: len(per_block)]  # blocks before each block
    with np.errstate(all="ignore"):
        seen = (~np.isnan(windows)).sum(axis=1)
        ordered = np.sort(np.where(np.isnan(windows), np.inf, windows), axis=1)
        lo, hi = (seen - 1) // 2, seen // 2
        rows = np.arange(len(windows))
        earlier = (ordered[rows, np.maximum(lo, 0)] + ordered[rows, np.maximum(hi, 0)]) / 2
    earlier = np.where(seen > 0, earlier, per_block)  # the first block has only itself (robust to one spike)
    local = earlier[np.arange(len(y)) // block]
    sigma = noise_sigma(y)
    sigma = 0.0 if not np.isfinite(sigma) else sigma
    floor = LOG_NOISE_FLOOR if is_log else max(1e-12, 1e-3 * float(np.ptp(y)) if len(y) else 1e-12)
    scale = np.maximum(np.maximum(local, 0.5 * sigma), floor)
    return ref, scale, sigma


def find_excursions(
    y: np.ndarray,
    *,
    is_log: bool,
    window: int,
    spike_z: float,
    min_ratio: float,
    recovery_sigmas: float,
    recovery_tolerance: float,
    min_abs_jump: float = 0.0,
) -> tuple[list[_Excursion], float]:
    """Excursions of ``y`` (already in analysis space) above its trailing median; see the module doc.

    ``min_abs_jump`` (in the loss's own units): smallest rise above the trailing median that counts at all
    (a few rounding quanta; a share of the loss's starting level, so that a loss near zero does not turn
    ratios of tiny values into events)."""
    n = len(y)
    if n < 3:
        return [], float("nan")
    ref, scale, sigma = _scales(y, window, is_log)
    jump = y - ref
    if is_log:
        min_jump = np.log(min_ratio)
    else:
        # A loss that reaches zero or below (a log-likelihood, an ELBO) has no level to take a ratio of: its
        # offset is arbitrary. Its scale is how far it moves: its spread, and the way it travelled from its
        # first tenth to its last (a spike must be a share of that, not of a level near zero).
        spread = float(np.subtract(*np.percentile(y, [75, 25])))
        k = max(3, n // 10)
        travel = abs(float(np.median(y[:k])) - float(np.median(y[-k:])))
        min_jump = (min_ratio - 1) * np.maximum(np.abs(ref), max(spread, travel))
    with np.errstate(invalid="ignore", over="ignore"):
        exceed = (jump / scale >= spike_z) & (jump >= min_jump)
        if min_abs_jump > 0:
            linear_jump = np.exp(y) - np.exp(ref) if is_log else jump
            exceed &= linear_jump >= min_abs_jump
    exceed[0] = False
    candidates = np.flatnonzero(exceed)
    out: list[_Excursion] = []
    position = 0
    band_min = np.log1p(recovery_tolerance) if is_log else recovery_tolerance * max(abs(float(np.median(y))), 1e-12)
    while True:
        later = candidates[candidates >= position]
        if later.size == 0:
            break
        i = int(later[0])
        s = float(scale[i])
        # Walk back to where the excursion started: the run of points above baseline + 3σ before i, the baseline
        # the lowest trailing median of the window before i (the one at i holds the excursion's first points when
        # a floor on the rise let them pass unflagged); the spike's baseline is then the level before its onset.
        early = float(np.min(ref[max(position, i - window, 1):i + 1]))
        below = np.flatnonzero(y[position:i] <= early + 3 * s)
        onset = position + int(below[-1]) + 1 if below.size else max(position, i)
        onset = max(onset, 1)
        base = float(ref[onset]) if onset < i else float(ref[i])
        threshold = base + max(recovery_sigmas * s, band_min)
        back = np.flatnonzero(y[i + 1 :] <= threshold)
        if back.size == 0:
            out.append(_Excursion(onset, i, None, base, s))
            break
        end = i + 1 + int(back[0])
        out.append(_Excursion(onset, i, end, base, s))
        position = end
    return out, sigma


def _lead(grad_onsets: np.ndarray, onset_step: int, lookback: int) -> int | None:
    """Steps by which a gradient-norm excursion preceded ``onset_step`` (negative: it came after)."""
    if grad_onsets.size == 0:
        return None
    near = grad_onsets[np.abs(grad_onsets - onset_step) <= lookback]
    if near.size == 0:
        return None
    before = near[near <= onset_step]
    chosen = before.max() if before.size else near.min()
    return int(onset_step - chosen)


def _restart(
    steps: np.ndarray,
    onset_step: int,
    margin: int,
    learning_rate: Curve | None,
    grad_norm: Curve | None,
    lr_reduction: float,
    never_finite: bool = False,
) -> RestartAdvice:
    if never_finite:  # no update made it non-finite: the learning rate and clipping are not the cause
        return RestartAdvice(
            int(steps[0]), onset_step, margin, None, None, None,
            "no update made it non-finite, so neither a lower learning rate nor clipping will help: check the "
            "checkpoint or initialisation the run started from, the inputs (NaN/Inf values, empty batches, labels "
            "out of range) and the numerics (fp16 overflow, a fused kernel or library error), then restart from "
            "scratch")
    target = onset_step - margin
    earlier = steps[steps <= target]
    resume = int(earlier[-1]) if earlier.size else int(steps[0])
    lr = learning_rate.value_at(onset_step) if learning_rate is not None and len(learning_rate) else float("nan")
    lr_at = float(lr) if np.isfinite(lr) else None
    suggested_lr = lr_at / lr_reduction if lr_at is not None else None
    max_norm = 1.0
    if grad_norm is not None:
        healthy = grad_norm.between(None, onset_step - 1).finite_part().values
        healthy = healthy[healthy > 0]
        if healthy.size >= 5:
            max_norm = float(f"{np.percentile(healthy, 90):.2g}")
    parts = [
        f"resume from a checkpoint at or before step {resume} (at least {margin} steps before the onset at {onset_step})"
        if earlier.size
        else f"the blow-up started within {margin} steps of the first logged step ({int(steps[0])}): restart from scratch"
    ]
    if lr_at is not None:
        parts.append(f"lower the learning rate from {lr_at:.3g} (its value at the onset) to about {suggested_lr:.3g}")
    else:
        parts.append("lower the learning rate 2-10x")
    parts.append(f"clip gradients at a max norm of about {max_norm:g}")
    return RestartAdvice(resume, onset_step, margin, lr_at, suggested_lr, max_norm, "; ".join(parts))


def analyze_divergence(
    loss: Curve | None,
    *,
    grad_norm: Curve | None = None,
    learning_rate: Curve | None = None,
    window: int | None = None,
    spike_z: float = 6.0,
    spike_min_ratio: float = 1.25,
    recovery_sigmas: float = 3.0,
    recovery_tolerance: float = 0.1,
    explosion_ratio: float = 2.0,
    min_explosion_points: int = 3,
    no_return_factor: float = 10.0,
    restart_margin: int = 100,
    lr_reduction: float = 3.0,
    max_spike_findings: int = 5,
    end_spike_points: int = 3,
    min_abs_share: float = 0.02,
    min_quanta: float = 3.0,
    onset_factor: float = 2.0,
    settled_rise: float = 0.25,
    min_giveback: float = 0.1,
) -> DivergenceResult:
    """Find where a loss diverged (if it did) and every transient spike.

    Args:
        loss: the loss curve (training loss usually).
        grad_norm: optional gradient-norm curve; reports whether it spiked first and by how many steps.
        learning_rate: optional learning-rate curve; its value at the onset goes into the restart advice.
        window: trailing window in points (default ``clip(n // 20, 5, 50)``).
        spike_z: robust z-score a point must reach to open an excursion.
        spike_min_ratio: and its minimum ratio to the trailing median (1.25 = 25 % above).
        recovery_sigmas, recovery_tolerance: back within range means within
            ``max(recovery_sigmas·σ, log(1 + recovery_tolerance))`` of the pre-onset baseline.
        explosion_ratio: an unrecovered excursion whose later median is this many times the
            baseline is an explosion (also the bar for a gradual climb).
        min_explosion_points: points needed after the onset to call an unrecovered excursion an explosion
            (fewer suffice when they are ``no_return_factor`` times the baseline: the log ends in the blow-up).
        no_return_factor: an explosion's ``step`` is the first step from which the loss stays above
            this many times its running minimum to the end (its ``onset_step`` is where it left its
            normal range); when it never gets that far, ``step`` is the onset.
        restart_margin: the restart advice resumes at least this many steps before the onset.
        lr_reduction: the suggested learning rate is the one at the onset divided by this.
        max_spike_findings: spikes beyond this many (largest first) are summarised in one finding.
        end_spike_points: a spike not back by the end of the log with at most this many points after its onset
            is information (whether it recovers cannot be seen yet), not a warning.
        min_abs_share: a spike or explosion must also rise by this share of the loss's starting level (the
            median of its first 3 % of points) in the loss's own units: near zero, ratios of tiny values are noise.
        min_quanta: and by this many rounding steps when the values are rounded (see :func:`quantum`).
        onset_factor: a divergence's ``onset_step`` is where the loss left its range for good: the first step
            from which it stays above this many times the median of the 20 points before it (when it does).
        settled_rise: an unrecovered excursion that peaked at ``no_return_factor`` times the baseline is an
            explosion too when the loss then settles at least this share above the baseline (the last third of
            the points after the onset): the blow-up wiped out what the model had learnt (a language model
            knocked back to its unigram level, a classifier to chance), though the loss came down from the peak.
        min_giveback: and an explosion must give back at least this share of what the loss had fallen from its
            starting level to where it left its range (a converged loss at 0.02 nats bumped to 0.07 after a start
            at 3.3 lost nothing to speak of: ratios of tiny values, rounded to two decimals, are no divergence).
    """
    if loss is None or len(loss) == 0:
        return DivergenceResult(
            tag=loss.tag if loss is not None else "", points=0, finite_points=0, analysed_points=0, nonfinite_points=0,
            first_nonfinite_step=None, divergence=None, spikes=(), window=0, noise=float("nan"),
            log_space=False, findings=(),
        )
    curve = loss.collapse_steps()
    steps, values = curve.steps, curve.values
    finite = np.isfinite(values)
    nonfinite_idx = np.flatnonzero(~finite)
    first_nonfinite = int(steps[nonfinite_idx[0]]) if nonfinite_idx.size else None
    terminal_start: int | None = None
    if not finite[-1]:
        last_finite = np.flatnonzero(finite)
        terminal_start = int(last_finite[-1]) + 1 if last_finite.size else 0

    keep = finite.copy()
    f_steps, f_values = steps[keep], values[keep]
    y, is_log = loss_space(f_values)
    n = len(y)
    win = int(window or _auto_window(n))
    step_q = quantum(f_values)
    min_abs = min_quanta * step_q
    head = float(np.median(f_values[: max(3, n // 33)])) if n >= 3 else float("nan")
    if n >= 3 and min_abs_share > 0:
        min_abs = max(min_abs, min_abs_share * abs(head))
    excursions, sigma = find_excursions(
        y, is_log=is_log, window=win, spike_z=spike_z, min_ratio=spike_min_ratio,
        recovery_sigmas=recovery_sigmas, recovery_tolerance=recovery_tolerance, min_abs_jump=min_abs,
    ) if n >= 3 else ([], float("nan"))

    grad_onsets = np.empty(0, dtype=np.int64)
    if grad_norm is not None and len(grad_norm):
        g = grad_norm.collapse_steps().finite_part()
        gy, g_log = loss_space(g.values)
        if len(gy) >= 3:
            g_exc, _ = find_excursions(
                gy, is_log=g_log, window=_auto_window(len(gy)), spike_z=spike_z, min_ratio=spike_min_ratio,
                recovery_sigmas=recovery_sigmas, recovery_tolerance=recovery_tolerance,
            )
            grad_onsets = np.array([g.steps[e.onset] for e in g_exc], dtype=np.int64)
    spacing = float(np.median(np.diff(f_steps))) if n >= 2 else 1.0
    lookback = int(max(spacing * max(win, 20), 1))  # how far apart a grad-norm and a loss event may be

    def to_units(v: float) -> float:
        return float(np.exp(v)) if is_log else float(v)

    spikes: list[Spike] = []
    divergence: Divergence | None = None
    explosion: _Excursion | None = None
    wrecked = False
    for e in excursions:
        if e.end is None:
            after = y[e.onset :]
            level = float(np.median(after))
            big = (level - e.baseline >= np.log(explosion_ratio)) if is_log else (
                level - e.baseline >= (explosion_ratio - 1) * max(abs(e.baseline), 1e-12)
            )
            # A log that ends right after a blow-up of `no_return_factor` x (the job crashed) counts too.
            huge = is_log and level - e.baseline >= np.log(no_return_factor)
            # (and it must be a blow-up in the loss's own units too: from 1e-7 to 1e-3, after a start at 1, is a
            # memorised training set's floor wobbling, not a divergence)
            sizeable = to_units(level) - to_units(e.baseline) >= min_abs
            fallen = head - to_units(e.baseline)  # what the loss had learnt before it left its range
            if fallen > 0 and to_units(level) - to_units(e.baseline) < min_giveback * fallen:
                sizeable = False
            if terminal_start is not None or (big and sizeable and (len(after) >= min_explosion_points or huge)):
                explosion = e
                continue
            if sizeable and _wrecked(after, e.baseline, is_log, np.log(no_return_factor), np.log1p(settled_rise)):
                explosion, wrecked = e, True
                continue
        stop = e.end if e.end is not None else n
        peak = e.onset + int(np.argmax(y[e.onset:stop]))
        onset_step = int(f_steps[e.onset])
        spikes.append(
            Spike(
                step=int(f_steps[peak]),
                onset_step=onset_step,
                peak_step=int(f_steps[peak]),
                tag=curve.tag,
                end_step=int(f_steps[e.end]) if e.end is not None else None,
                baseline=to_units(e.baseline),
                peak_value=float(f_values[peak]),
                magnitude=float(np.exp(y[peak] - e.baseline)) if is_log else None,
                z=float((y[peak] - e.baseline) / e.scale),
                recovery_steps=int(f_steps[e.end] - onset_step) if e.end is not None else None,
                points=int(stop - e.onset),
                grad_norm_lead_steps=_lead(grad_onsets, onset_step, lookback),
            )
        )

    gradual = False
    if explosion is None and terminal_start is None and n >= 20:
        gradual_exp = _gradual_climb(y, is_log, explosion_ratio, min_abs)
        if gradual_exp is not None:
            explosion, gradual = gradual_exp, True

    if terminal_start is not None or explosion is not None:
        if terminal_start is not None:
            kind = "nan" if np.isnan(values[terminal_start]) else "inf"
            step = int(steps[terminal_start])
        else:
            kind = "explosion"
            step = _no_return_step(steps, values, no_return_factor) or int(f_steps[explosion.onset])  # type: ignore[union-attr]
        onset_step = int(f_steps[explosion.onset]) if explosion is not None else step
        left = _left_range_step(steps, values, onset_factor)
        if left is not None and left <= step and not gradual:
            onset_step = left
        baseline = level_after = ratio = peak = settled = None
        if explosion is not None:
            baseline = to_units(explosion.baseline)
            level_after = to_units(float(np.median(y[explosion.onset :])))
            ratio = float(np.exp(np.median(y[explosion.onset :]) - explosion.baseline)) if is_log else None
            if wrecked:
                after = y[explosion.onset :]
                peak = to_units(float(after.max()))
                settled = to_units(_settled(after))
        elif n:
            baseline = float(np.median(f_values[-min(n, win) :]))
        divergence = Divergence(
            kind=kind,
            step=step,
            onset_step=onset_step,
            first_nonfinite_step=first_nonfinite,
            baseline=baseline,
            level_after=level_after,
            ratio=ratio,
            gradual=gradual,
            grad_norm_lead_steps=_lead(grad_onsets, onset_step, lookback),
            restart=_restart(steps, onset_step, restart_margin, learning_rate, grad_norm, lr_reduction,
                             never_finite=terminal_start == 0),
            never_finite=terminal_start == 0,
            peak=peak,
            settled=settled,
        )

    findings = _findings(curve.tag, divergence, spikes, nonfinite_idx.size, first_nonfinite, terminal_start,
                         steps, max_spike_findings, end_spike_points)
    return DivergenceResult(
        tag=curve.tag,
        points=len(loss),
        finite_points=int(np.isfinite(loss.values).sum()),
        analysed_points=n,
        nonfinite_points=int((~np.isfinite(loss.values)).sum()),
        first_nonfinite_step=first_nonfinite,
        divergence=divergence,
        spikes=tuple(spikes),
        window=win,
        noise=float(sigma),
        log_space=is_log,
        findings=findings,
    )


def _wrecked(after: np.ndarray, baseline: float, is_log: bool, peak_bar: float, settled_bar: float,
             min_points: int = 10) -> bool:
    """Whether an unrecovered excursion (``after``: its points from the onset, in log space) peaked at least
    ``peak_bar`` above ``baseline`` and its last third settled at least ``settled_bar`` above it."""
    if not is_log or len(after) < min_points:
        return False
    settled = _settled(after)
    return float(after.max()) - baseline >= peak_bar and settled - baseline >= settled_bar


def _settled(after: np.ndarray) -> float:
    """The level a loss settled at after an excursion: the median of the last third of its points."""
    return float(np.median(after[-max(3, len(after) // 3):]))


def _left_range_step(steps: np.ndarray, values: np.ndarray, factor: float, window: int = 20) -> int | None:
    """First step from which the loss never comes back: every later value (non-finite counts) stays above
    ``factor`` x the median of the ``window`` finite values before that step, moved back over the points
    just before it that were already 1.2x above that median (the start of the climb). None for
    non-positive curves or when it never happens."""
    finite = np.isfinite(values)
    if finite.sum() < 6 or (values[finite] <= 0).any():
        return None
    window = int(min(window, max(3, finite.sum() // 5)))
    v = np.where(finite, values, np.inf)
    f_idx = np.flatnonzero(finite)
    med = _rolling_median(values[finite], window)  # median of the `window` finite values ending at each one
    # trailing reference for point i: the rolling median ending at the last finite point before i
    before = np.searchsorted(f_idx, np.arange(len(values)), side="left") - 1
    ok = before >= window - 1
    ref = np.where(ok, med[np.clip(before, 0, None)], np.nan)
    after = np.minimum.accumulate(v[::-1])[::-1]
    with np.errstate(invalid="ignore"):
        hits = np.flatnonzero(ok & (after > factor * ref))
    if not hits.size:
        return None
    i = int(hits[0])
    while i > 0 and v[i - 1] >= 1.2 * ref[hits[0]]:  # the climb that led there, while clearly above the range
        i -= 1
    return int(steps[i])


def _rolling_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of the ``window`` values ending at each point (shorter at the start)."""
    import pandas as pd

    return pd.Series(x).rolling(window, min_periods=1).median().to_numpy()


def _no_return_step(steps: np.ndarray, values: np.ndarray, factor: float) -> int | None:
    """First step from which every later value is above ``factor`` × the minimum before it
    (non-finite counts as above). None for non-positive curves or when it never happens."""
    v = np.where(np.isfinite(values), values, np.inf)
    finite = values[np.isfinite(values)]
    if len(v) < 2 or finite.size == 0 or (finite <= 0).any():
        return None
    before = np.concatenate([[np.inf], np.minimum.accumulate(v)[:-1]])
    after = np.minimum.accumulate(v[::-1])[::-1]
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(before) & (after > factor * before)
    hits = np.flatnonzero(ok)
    return int(steps[hits[0]]) if hits.size else None


def _gradual_climb(y: np.ndarray, is_log: bool, explosion_ratio: float, min_abs: float = 0.0) -> _Excursion | None:
    """A slow climb: the end is ``explosion_ratio`` × the minimum level and above the start (and at least
    ``min_abs`` above the minimum, in the loss's units)."""
    n = len(y)
    bx, by = bin_medians(np.arange(n, dtype=np.float64), y, 20)
    head = float(np.median(y[: max(1, n // 20)]))
    tail = float(np.median(y[-max(3, n // 20) :]))
    low_bin = int(np.argmin(by))
    low = float(by[low_bin])
    rise = (tail - low) >= (np.log(explosion_ratio) if is_log else (explosion_ratio - 1) * max(abs(low), 1e-12))
    rise = rise and ((np.exp(tail) - np.exp(low)) if is_log else (tail - low)) >= min_abs
    if not (rise and tail >= head and low_bin < len(by) - 2):
        return None
    half = low + (tail - low) / 2
    start = int(bx[low_bin])
    above = np.flatnonzero(y[start:] > half)
    onset = start + int(above[0]) if above.size else start
    return _Excursion(onset, onset, None, low, float("nan"))


def _findings(
    tag: str,
    divergence: Divergence | None,
    spikes: list[Spike],
    nonfinite: int,
    first_nonfinite: int | None,
    terminal_start: int | None,
    steps: np.ndarray,
    max_spike_findings: int,
    end_spike_points: int = 3,
) -> tuple[Finding, ...]:
    out: list[Finding] = []
    if divergence is not None:
        d = divergence
        if d.kind in ("nan", "inf"):
            code = "diverged_nonfinite"
            head = d.how(tag) if d.never_finite else f"{d.how(tag)} and stayed non-finite to the end"
            if d.onset_step != d.step:
                head += f"; it had been exploding since step {d.onset_step}"
        else:
            code = "diverged_explosion"
            how = "climbed gradually" if d.gradual else "exploded"
            ratio = f" to {d.ratio:.3g}x its normal level" if d.ratio is not None else ""
            head = d.settled_how(tag) or (f"{tag} {how} from step {d.onset_step}{ratio} ({d.baseline:.4g} -> "
                                          f"{d.level_after:.4g}) and never came back")
        if d.grad_norm_lead_steps is not None and d.grad_norm_lead_steps > 0:
            head += f"; the gradient norm spiked {d.grad_norm_lead_steps} steps earlier"
        out.append(
            Finding(code, Severity.ERROR, f"{head}. Advice: {d.restart.text}.",
                    recommend(f"{code}_from_start" if d.never_finite else code),
                    step=d.step, step_end=None, evidence={"onset_step": d.onset_step, "restart": d.restart.to_dict()})
        )
    transient = nonfinite - (len(steps) - terminal_start if terminal_start is not None else 0)
    if transient > 0:
        out.append(
            Finding("nonfinite_values", Severity.WARNING,
                    f"{tag} was NaN/Inf at {transient} step(s), first at step {first_nonfinite}, then finite again",
                    recommend("nonfinite_values"), step=first_nonfinite)
        )
    if spikes:
        span = int(steps[-1] - steps[0]) if len(steps) else 0
        ranked = sorted(spikes, key=lambda s: -(s.magnitude if s.magnitude is not None else s.z))
        for s in ranked[:max_spike_findings]:
            size = f"{s.magnitude:.3g}x its trailing median" if s.magnitude is not None else f"z = {s.z:.1f}"
            rec = (f"back within range after {s.recovery_steps} steps" if s.recovery_steps is not None
                   else "not back within range by the end of the log")
            lead = (f"; the gradient norm spiked {s.grad_norm_lead_steps} steps before"
                    if s.grad_norm_lead_steps is not None and s.grad_norm_lead_steps > 0 else "")
            # a spike that came back within a tenth of the run, or gone at the next logged point, is a bad batch
            # now and then (or one evaluation's draw): information
            quick = s.recovery_steps is not None and (s.recovery_steps <= 0.1 * max(span, 1) or s.points <= 1)
            # at the very end of the log (its last few points): whether it recovers cannot be seen yet
            at_end = s.recovery_steps is None and s.points <= end_spike_points
            if at_end:
                rec = f"in the last {s.points} point(s) of the log: whether it recovers cannot be seen"
            severity = Severity.INFO if quick or at_end else Severity.WARNING
            out.append(
                Finding("loss_spike", severity,
                        f"{tag} spiked at step {s.onset_step} from {s.baseline:.4g} to {s.peak_value:.4g} ({size}"
                        + (f", peak at step {s.peak_step}" if s.peak_step != s.onset_step else "")
                        + f"); {rec}{lead}",
                        recommend("loss_spike"), step=s.onset_step, step_end=s.end_step)
            )
        if len(spikes) > max_spike_findings:
            out.append(
                Finding("loss_spike", Severity.INFO,
                        f"{tag} has {len(spikes)} spikes in all between steps {spikes[0].onset_step} and "
                        f"{spikes[-1].onset_step}; the {max_spike_findings} largest are listed",
                        recommend("loss_spike"), step=spikes[0].onset_step, step_end=spikes[-1].onset_step,
                        evidence={"count": len(spikes)})
            )
    return tuple(out)
