"""One verdict per run: normal, overfitting, underfitting, unstable, diverged or insufficient_data.

The reading follows the usual table of learning-curve shapes:

============  ==========================  ===========================  ===================
label         training loss               validation loss              train–val gap
============  ==========================  ===========================  ===================
normal        falls, then flattens        falls with it                small, stable
overfitting   keeps falling               reaches a minimum, rises     grows
underfitting  falls very slowly or not    stays high                   small
unstable      oscillates wildly / spikes  oscillates or rises          no pattern
diverged      NaN/Inf, or explodes and does not come back
============  ==========================  ===========================  ===================

Features of the training loss (log space when positive; robust statistics throughout):

* ``change`` — level of the last 10 % of points over the level of the first 3 %
  (medians), minus one.
* ``end_drop`` — Theil–Sen drop over the last 30 % of the run, relative to the
  level there, and ``end_share`` — that drop as a share of the whole drop
  (linear units, so a loss creeping towards zero does not count as "still falling").
* ``noise`` — second-difference robust noise σ; ``roughness`` — σ over the
  total log decrease.
* spikes from :mod:`tanalyze.analysis.divergence`; overfitting from
  :mod:`tanalyze.analysis.overfitting`.

Diverged and insufficient data decide alone. Otherwise, between overfitting
and unstable, the one whose criteria are met with the higher confidence wins
(overfitting gets +0.1, unstable +0.05, so near-ties follow that order);
underfitting only when neither is met; the others met are listed in ``also``;
none met is normal. Confidence is
0.5 at a threshold and grows with how far past it the evidence lies
(``1 - 0.5·t/x``), pulled towards 0.5 for short curves (factor ``n / (n + 5)``). Every threshold is a named
parameter; the defaults are ours, chosen on synthetic curves with known answers
and checked on public real runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.analysis.divergence import DivergenceResult, Spike, analyze_divergence
from tanalyze.analysis.overfitting import OverfittingResult, analyze_overfitting
from tanalyze.analysis.preference import PreferenceProgress
from tanalyze.analysis.pretrained import LanguageModelStart
from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve, bin_medians, loss_space, noise_sigma, theil_sen

__all__ = ["LABELS", "Verdict", "Thresholds", "classify_run", "judged_loss", "train_features"]

LABELS = ("normal", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the verdict, with its default."""

    min_points: int = 8  # finite points of the main loss needed for any verdict
    min_decrease: float = 0.10  # the loss must end at least 10 % below where it started
    still_falling_rel: float = 0.05  # drop over the last 30 % of the run, relative to the level there …
    still_falling_share: float = 0.25  # … that is also this share of the whole drop: not converged …
    annealed_lr: float = 0.2  # … unless the learning rate ended below this share of its peak (annealing)
    end_share: float = 0.3  # the "end" of the run for the slope
    chance_fraction: float = 0.9  # with num_classes: ending above 0.9·ln(C) is chance level
    min_spikes: int = 3  # unstable: at least this many spikes …
    heavy_spike_share: float = 0.1  # … or one that lasts this share of the points (and 2+ points) at 2x or more …
    huge_spike: float = 20.0  # … or one this many times its baseline lasting 2+ points …
    heavy_giveback: float = 0.1  # … that gives back this share of what the loss had fallen from its start at least
    fell_before: float = 0.2  # a training loss first logged after the validation loss fell this share: no underfitting
    spike_rate: float = 0.004  # … and at least this many per point (4 per 1,000: a spike every few hundred
    #                            steps that recovers is a bad batch now and then, not instability)
    rough_noise: float = 0.3  # unstable: log-loss noise σ at least this (±35 % point to point) …
    rough_relative: float = 0.25  # … and at least this share of the total log decrease …
    rough_excess: float = 1.5  # … and the level itself swings this many times more than i.i.d. noise would
    #                            move it (a noisy mini-batch loss around a smooth trend is ~1)
    fall_sigmas: float = 3.0  # a fine-tune's small fall must clear this many sigmas of the difference of its levels
    level_sigmas: float = 4.0  # a rise from the minimum or a rebound must clear this many sigmas of the levels …
    min_abs_share: float = 0.02  # … and this share of the starting level in the loss's units (near zero,
    #                              ratios of tiny values are noise: 0.0005 -> 0.001 is no "doubling")
    val_rough_noise: float = 0.2  # unstable validation: σ of the log val loss …
    val_rough_relative: float = 0.5  # … relative to its total log decrease
    val_rough_min_points: int = 6
    degrade_ratio: float = 1.5  # unstable: the loss ends this many times above its minimum
    rebound_ratio: float = 1.5  # unstable: mid-run, the loss climbed this many times above an earlier low
    resumed_share: float = 0.25  # a log starting after this share of its last step continues an earlier run
    gan_collapse: float = 0.1  # GAN: the discriminator loss ended below this share of where it started …
    #                            (while the generator's climbed degrade_ratio x above its lowest level) …
    gan_dominate: float = 0.5  # … or below this share while the generator's climbed gan_climb x
    gan_climb: float = 2.0
    chance_flat: float = 0.01  # chance plateau (no num_classes given): the last two quarters differ < 1 % …
    chance_below: float = 0.015  # … and end within -1.5 % / +3 % of ln K (below: a class prior not quite even) …
    chance_above: float = 0.03
    chance_max_classes: int = 20  # … for K up to 20 (10 without a validation loss)
    chance_above_frozen: float = 0.1  # … or +10 % when the loss is frozen (a dead model's constant output)
    chance_collapse_below: float = 0.8  # at chance at the end after a stretch this far below it: collapsed (diverged)
    frozen_spread: float = 1e-6  # frozen: the last quarter's values within this share of their median
    early_blow_up: float = 5.0  # a loss this many times where it started that never gets below it: diverged
    settled_jump: float = 1.8  # a jump this many times the lowest level that settles there: diverged
    settled_spread: float = 0.2  # … and whose second half's interquartile range is under this share of its median
    fits_gap: float = 2.0  # a training loss this many times below the validation loss is no underfitting
    dead_rise: float = 0.01  # frozen this far above the first value: the updates made it worse (a dead model)
    unbounded_factor: float = 10.0  # diverged below: the loss ends negative, this many times further from zero
    unbounded_floor: float = 1000.0  # … than it began (and at least this far), still falling: no floor
    short_rise: float = 0.25  # too few points for a verdict: the validation loss ends this far above its minimum …
    short_climb: float = 0.1  # … (or this far, climbing at each of 3 or more evaluations after it) …
    short_train_fall: float = 0.2  # … while the training loss fell this far from the minimum's evaluation on: overfitting
    short_confidence: float = 0.6  # (the most such a verdict is worth: one or two evaluations carry it)
    floor_share: float = 0.01  # a spike from a level under this share of the start, back to it, below the start: a
    #                            memorised training set's hard batch, not instability


@dataclass(frozen=True)
class Verdict(ResultMixin):
    """The label of a run, how sure, and the evidence that decided it."""

    label: str
    confidence: float
    evidence: dict[str, Any]
    reasons: tuple[str, ...]
    also: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default=())


#: When several labels' criteria are met, the highest confidence plus this bonus wins: underfitting
#: only when neither overfitting nor instability is found (a wildly oscillating flat loss is unstable).
PRIORITY = {"overfitting": 0.1, "unstable": 0.05, "underfitting": -1.0}


def _shrink(confidence: float, data: float) -> float:
    """Pull a confidence towards 0.5 (a coin flip) by the data factor in [0, 1]."""
    return 0.5 + (confidence - 0.5) * data


def _past(value: float, threshold: float) -> float:
    """Confidence for evidence ``value`` past ``threshold`` (both positive): 0.5 at it, towards 1 beyond."""
    if not (value > 0 and threshold > 0):
        return 0.5
    return float(np.clip(1 - 0.5 * threshold / value, 0.5, 0.99))


def train_features(
    curve: Curve, th: Thresholds = Thresholds(), spikes: tuple[tuple[int, int], ...] = ()
) -> dict[str, Any]:
    """The shape features of a loss curve used by the verdict (finite points, one per step).

    Points inside the transient ``spikes`` (``(onset_step, end_step)``, end excluded) are left out:
    the features describe the trend; spikes are counted on their own.
    """
    c = curve.collapse_steps().finite_part()
    if spikes and len(c):
        inside = np.zeros(len(c), dtype=bool)
        for onset, end in spikes:  # one iteration per spike
            inside |= (c.steps >= onset) & (c.steps < end)
        if (~inside).sum() >= 2:
            c = Curve(c.tag, c.steps[~inside], c.values[~inside], c.wall_time[~inside])
    n = len(c)
    y, is_log = loss_space(c.values)
    x = c.steps.astype(np.float64)
    h = max(1, int(round(0.03 * n)))
    t = max(2, int(round(0.10 * n)))
    head_y, tail_y = float(np.median(y[:h])), float(np.median(y[-t:]))
    if head_y == tail_y and y[0] > head_y:  # already at its final value by its second point: it fell from the first
        h, head_y = 1, float(y[0])
    unit = (lambda v: float(np.exp(v))) if is_log else float
    head, tail = unit(head_y), unit(tail_y)
    bins = int(np.clip(n // 5, 1, 40))  # at least 5 points per bin where possible
    bx, by = bin_medians(x, y, bins)
    # The lowest level, on stretches as long as the tail window: the minimum of many short noisy medians
    # is biased low (by about 2 of their sigmas for 40 of them), which reads noise as a rise from the minimum.
    tx, ty = bin_medians(x, y, max(1, n // t))
    low = unit(float(np.min(ty)))
    # where the loss left its lowest level for good: the first point after that stretch halfway up to the end
    low_at = int(np.argmin(ty))
    up = np.flatnonzero((x > tx[low_at]) & (y >= (ty[low_at] + tail_y) / 2))
    rise_step = int(x[up[0]]) if up.size and tail_y > ty[low_at] else None
    # a loss that goes below zero (nnU-Net's Dice + cross-entropy, an ELBO) is measured against its largest
    # magnitude, not its start: a start near zero would make any fall a huge share of it
    below_zero = not is_log and bool((y < 0).any())
    scale = max(abs(head_y), float(np.max(np.abs(by))) if below_zero else 0.0, 1e-12) if not is_log else 1.0
    if is_log:
        change = tail / head - 1
    else:
        change = (tail - head) / scale
    span = x[-1] - x[0]
    start = x[-1] - th.end_share * span
    ex, ey = bx[bx >= start], by[bx >= start]
    if len(ex) < 3:
        ex, ey = x[x >= start], y[x >= start]
    slope, intercept = theil_sen(ex, ey) if len(ex) >= 2 else (float("nan"), float("nan"))
    end_drop_rel = end_share = 0.0
    if np.isfinite(slope):
        at_start, at_end = unit(slope * start + intercept), unit(slope * x[-1] + intercept)
        end_drop = at_start - at_end
        end_drop_rel = end_drop / max(abs(at_start), 1e-12)
        total_drop = head - tail
        end_share = end_drop / total_drop if total_drop > 0 else 0.0
    sigma = noise_sigma(y)
    decrease = head_y - tail_y if is_log else (head_y - tail_y) / scale
    # The largest climb back above an earlier low, on bin medians (5+ points each, so noise averages out);
    # `rebound_noise` is the sigma of one such median under i.i.d. noise: a climb must clear several of them.
    rebound = rebound_noise = rebound_step = None
    if n >= 5 * 20:
        rbx, rby = bin_medians(x, y, 20)
        earlier_low = np.minimum.accumulate(rby)[:-1]
        # a climb must last: the lower of two neighbouring stretch medians (a tenth of the run), so that one
        # stretch caught by a burst of bad batches is not a rebound
        held = np.minimum(rby[1:], np.append(rby[2:], rby[-1]))
        climbs = held - earlier_low
        worst = int(np.argmax(climbs))
        rebound = float(climbs[worst]) if is_log else float(climbs[worst] / scale)
        rebound_step = int(rbx[worst + 1])
        if np.isfinite(sigma):
            # the larger of what i.i.d. noise predicts and what the stretch medians show (correlated noise:
            # a few bad batches in a row move a median more than independent ones would)
            seen = noise_sigma(rby)
            rebound_noise = max(1.2533 * float(sigma) / np.sqrt(n / 20), float(seen) if np.isfinite(seen) else 0.0)
            rebound_noise /= scale
    # Excess roughness: how much more the level itself moves (medians of m points) than i.i.d. noise of the
    # measured point-to-point sigma would move it. ~1 for a noisy mini-batch loss around a smooth trend,
    # well above 1 when the level swings (an lr too high, oscillation).
    excess = None
    if n >= 40 and np.isfinite(sigma) and sigma > 0:
        m = max(5, n // 40)
        _, my = bin_medians(x, y, n // m)
        excess = float(noise_sigma(my) / (1.2533 * sigma / np.sqrt(m)))
    roughness = sigma / decrease if decrease > 0 else float("inf")
    return {
        "tag": curve.tag,
        "points": n,
        "first_step": int(c.steps[0]) if n else None,
        "first_value": float(c.values[0]) if n else None,
        "head_points": h,
        "tail_points": t,
        "last_step": int(c.steps[-1]) if n else None,
        "log_space": is_log,
        "start_level": head,
        # the level of the first points, over as many as the end level (the same noise): a fall between the
        # two can be weighed against ``level_noise``
        "first_tenth_level": unit(float(np.median(y[:t]))),
        "end_level": tail,
        "min_level": low,
        "change": float(change),
        "scale": scale,
        "below_zero": below_zero,
        "end_drop_rel": float(end_drop_rel),
        "end_share": float(end_share),
        "noise": float(sigma) if np.isfinite(sigma) else None,
        "roughness": float(roughness) if np.isfinite(roughness) else None,
        "rebound": rebound,
        "rebound_noise": rebound_noise,
        "rebound_step": rebound_step,
        "rise_step": rise_step,
        "excess_roughness": excess,
        # noise of the tail median (and of the lowest level, measured over as many points): what a rise must clear
        "level_noise": 1.2533 * float(sigma) / np.sqrt(t) if np.isfinite(sigma) else None,
    }


def _unbounded_below(f: dict[str, Any], th: Thresholds) -> str | None:
    """Why the loss runs off below any level a loss can have, or None: it ends negative, ``unbounded_factor``
    times (and at least ``unbounded_floor``) further from zero than it began, and still falls steeply. A
    cross-entropy or a squared error cannot go below 0; a log-likelihood of a continuous density may, a few
    units, not orders of magnitude (labels outside the loss's range, a sign error, a variance that collapses)."""
    start, end = f["first_tenth_level"], f["end_level"]
    if not end < 0 or abs(end) < th.unbounded_floor or abs(end) < th.unbounded_factor * max(abs(start), 1.0):
        return None
    if f["end_drop_rel"] < th.still_falling_rel:
        return None  # it levelled off: a negative loss that found its floor
    return (f"{f['tag']} fell from {start:.4g} to {end:.4g} and is still falling ({_percent(f['end_drop_rel'])} over "
            f"the last {_percent(th.end_share)} of the run): a loss with no floor, {abs(end) / max(abs(start), 1.0):.0f}x "
            "further below zero than it began")


def classify_run(
    train: Curve | None,
    val: Curve | None = None,
    *,
    divergence: DivergenceResult | None = None,
    overfitting: OverfittingResult | None = None,
    learning_rate: Curve | None = None,
    num_classes: int | None = None,
    thresholds: Thresholds = Thresholds(),
    adversarial: tuple[Curve, Curve] | None = None,
    components: dict[str, Curve] | None = None,
    epoch_train: Curve | None = None,
    language_model: LanguageModelStart | None = None,
    classifier: bool = True,
    preference: PreferenceProgress | None = None,
) -> Verdict:
    """The verdict for one run from its training and validation loss.

    Pass the divergence and overfitting results when already computed (the
    orchestrator does), else they are computed here with their defaults.
    With ``learning_rate``, a loss still falling at the end while the rate was
    annealed to near zero is the schedule at work, not a sign of too few steps.
    ``num_classes`` enables the chance-level check (loss near ``ln(num_classes)``); without it, a loss flat at
    ``ln K`` is taken for a classifier at chance unless ``classifier`` is False (a detector's summed losses,
    which settle at any level, ``ln K`` included).

    ``adversarial`` — a GAN's (generator, discriminator) losses (``train`` is then the generator's):
    judged as a game (see :func:`_adversarial`), never as one loss that should fall.
    ``components`` — the training loss's parts when it is their sum (several heads, auxiliary
    losses): each part is judged as its own curve, so that one scale does not drown the others.
    ``epoch_train`` — the per-epoch training loss logged beside a per-step ``train`` (Lightning's
    ``train_loss_epoch``): the curve a practitioner reads for the trend, so a climb back or roughness of the
    per-step curve counts as instability only when the epoch curve climbs back too.
    ``language_model`` — the generative language model the run's configuration names (see
    :mod:`tanalyze.analysis.pretrained`): a loss that starts from trained weights and falls a little, beyond its
    noise, is a fine-tune converging, not underfitting.
    ``preference`` — a preference-optimisation run's reward margin (see :mod:`tanalyze.analysis.preference`): its
    loss starts at ln 2 and falls a little while the margin grows, which is learning, not underfitting.
    """
    if adversarial is not None:
        return _adversarial(*adversarial, divergence, thresholds)
    verdict = _classify(train, val, divergence, overfitting, learning_rate, num_classes, thresholds, epoch_train,
                        language_model, classifier, preference)
    if components and len(components) >= 2 and verdict.label not in ("diverged", "insufficient_data"):
        verdict = _with_components(verdict, components, learning_rate, thresholds)
    return verdict


def _adversarial(generator: Curve, discriminator: Curve, divergence: DivergenceResult | None,
                 th: Thresholds) -> Verdict:
    """A GAN: NaN/Inf on either side is a divergence; a discriminator whose loss collapses to a small share
    of where it started while the generator's climbs has won the game (unstable); otherwise both hovering
    near an equilibrium is normal — GAN losses are not supposed to fall."""
    evidence: dict[str, Any] = {"main_curve": generator.tag, "main_role": "train", "adversarial": True,
                                "discriminator": discriminator.tag}
    for curve, result in ((generator, divergence), (discriminator, None)):
        result = result if result is not None else analyze_divergence(curve)
        d = result.divergence
        if d is not None and d.kind in ("nan", "inf"):
            evidence.update(divergence_kind=d.kind, divergence_step=d.step, onset_step=d.onset_step)
            return Verdict("diverged", 0.99, evidence,
                           (d.how(f"{curve.tag} (GAN)") if d.never_finite
                            else f"{d.how(f'{curve.tag} (GAN)')} and never recovered",))
    g, d = generator.collapse_steps().finite_part(), discriminator.collapse_steps().finite_part()
    if min(len(g), len(d)) < th.min_points:
        return Verdict("insufficient_data", 1.0, evidence,
                       (f"only {min(len(g), len(d))} finite point(s) of a GAN loss; need {th.min_points}",),
                       findings=(_insufficient("too few points of the GAN losses"),))
    fg, fd = train_features(g, th), train_features(d, th)
    evidence.update(generator_start=fg["start_level"], generator_end=fg["end_level"], generator_min=fg["min_level"],
                    discriminator_start=fd["start_level"], discriminator_end=fd["end_level"])
    data = min(len(g), len(d)) / (min(len(g), len(d)) + 5)
    d_share = fd["end_level"] / fd["start_level"] if fd["log_space"] and fd["start_level"] > 0 else None
    g_climb = fg["end_level"] / fg["min_level"] if fg["log_space"] and fg["min_level"] > 0 else None
    collapsed = d_share is not None and g_climb is not None and (
        (d_share <= th.gan_collapse and g_climb >= th.degrade_ratio)
        or (d_share <= th.gan_dominate and g_climb >= th.gan_climb))
    if collapsed:
        confidence = _shrink(max(min(_past(1 / d_share, 1 / th.gan_collapse), _past(g_climb - 1, th.degrade_ratio - 1)),
                                 min(_past(1 / d_share, 1 / th.gan_dominate), _past(g_climb - 1, th.gan_climb - 1))),
                             data)
        why = (f"GAN: the discriminator loss {d.tag} collapsed from {fd['start_level']:.4g} to {fd['end_level']:.4g} "
               f"({_percent(1 - d_share)} lower) while the generator loss {g.tag} climbed from its lowest level "
               f"{fg['min_level']:.4g} to {fg['end_level']:.4g}: the discriminator won the game")
        finding = Finding("unstable", Severity.WARNING, why, recommend("gan_collapse"), step=fd["first_step"],
                          step_end=fd["last_step"])
        return Verdict("unstable", round(confidence, 3), evidence, (why,), findings=(finding,))
    why = (f"GAN: {g.tag} went from {fg['start_level']:.4g} to {fg['end_level']:.4g} and {d.tag} from "
           f"{fd['start_level']:.4g} to {fd['end_level']:.4g}; neither side collapsed (GAN losses hover near an "
           "equilibrium rather than fall)")
    return Verdict("normal", round(_shrink(0.8, data), 3), evidence, (why,))


def _with_components(verdict: Verdict, components: dict[str, Curve], learning_rate: Curve | None,
                     th: Thresholds) -> Verdict:
    """The verdict of a summed loss, revised from its parts judged one by one: a part that diverged or is
    unstable decides; underfitting needs most parts to stall; a rough or stalled sum whose parts are fine
    was one part's scale drowning the others."""
    parts = {tag: _classify(c, None, None, None, learning_rate, None, th) for tag, c in sorted(components.items())}
    labels = {tag: v.label for tag, v in parts.items()}
    evidence = {**verdict.evidence, "components": labels}
    judged = [v for v in parts.values() if v.label != "insufficient_data"]
    if not judged or verdict.label == "overfitting":
        return Verdict(verdict.label, verdict.confidence, evidence, verdict.reasons, verdict.also, verdict.findings)
    for label in ("diverged", "unstable"):
        # a part's spikes alone do not decide (an RL actor loss or an auxiliary term is spiky by nature)
        hit = [(tag, v) for tag, v in parts.items() if v.label == label
               and (label == "diverged" or set(v.evidence.get("unstable_by", ())) - {"spikes"})]
        if hit:
            tag, v = max(hit, key=lambda item: item[1].confidence)
            evidence.update({f"component_{k}": val for k, val in v.evidence.items() if k in ("divergence_step",
                                                                                         "onset_step")})
            reasons = tuple(f"{t}: {p.reasons[0]}" for t, p in hit) + (
                f"judged part by part ({', '.join(f'{t}: {lab}' for t, lab in labels.items())})",)
            return Verdict(label, v.confidence, evidence, reasons, findings=v.findings)
    stalled = [(tag, v) for tag, v in parts.items() if v.label == "underfitting"]
    if len(stalled) * 2 > len(judged):
        reasons = tuple(f"{t}: {p.reasons[0]}" for t, p in stalled)
        confidence = float(np.mean([p.confidence for _, p in stalled]))
        finding = Finding("underfitting", Severity.WARNING, "; ".join(reasons), recommend("underfitting"))
        return Verdict("underfitting", round(confidence, 3), evidence, reasons, findings=(finding,))
    reasons = (f"each part of the loss judged as its own curve: "
               f"{', '.join(f'{t}: {lab}' for t, lab in labels.items())}",)
    if verdict.label == "normal":
        return Verdict("normal", verdict.confidence, evidence, verdict.reasons + reasons)
    confidence = float(np.mean([p.confidence for p in judged]))
    return Verdict("normal", round(confidence, 3), evidence, reasons)


def _classify(
    train: Curve | None,
    val: Curve | None,
    divergence: DivergenceResult | None,
    overfitting: OverfittingResult | None,
    learning_rate: Curve | None,
    num_classes: int | None,
    thresholds: Thresholds,
    epoch_train: Curve | None = None,
    language_model: LanguageModelStart | None = None,
    classifier: bool = True,
    preference: PreferenceProgress | None = None,
) -> Verdict:
    """The verdict of one training loss (and its validation loss): see :func:`classify_run`."""
    th = thresholds
    reasons: list[str] = []  # what decided the label, first
    notes: list[str] = []  # what limited the judgement, after the reasons
    main = judged_loss(train, val, th)
    main_role = "val" if main is val and main is not None else "train"
    if main_role == "val" and train is not None and len(train):
        notes.append(f"only {_finite_points(train)} finite point(s) of {train.tag}, {_finite_points(val)} of "
                     f"{val.tag}: the verdict rests on the validation loss")
    elif main_role == "val":
        notes.append("no training loss: the verdict rests on the validation loss")
    if val is None or len(val.finite_part()) == 0:
        notes.append("no validation loss: overfitting cannot be judged; verdict from the training loss alone")
    if main is None or len(main) == 0:
        return Verdict("insufficient_data", 1.0, {"points": 0}, ("no loss curve was found", *notes),
                       findings=(_insufficient("no training or validation loss was found"),))
    if divergence is None:
        divergence = analyze_divergence(main)
    if overfitting is None and val is not None and main_role == "train":
        overfitting = analyze_overfitting(val, train)

    evidence: dict[str, Any] = {"main_curve": main.tag, "main_role": main_role}
    d = divergence.divergence
    if d is None and val is not None and main_role == "train":
        v = val.collapse_steps()
        if len(v) and not np.isfinite(v.values[-1]) and np.isfinite(v.values).any():
            last = np.flatnonzero(np.isfinite(v.values))[-1] + 1
            reasons.append(f"{val.tag} became non-finite at step {int(v.steps[last])} and stayed so")
            evidence["val_nonfinite_step"] = int(v.steps[last])
            return Verdict("diverged", 0.9, evidence, tuple(reasons + notes))
    if d is not None:
        evidence.update(divergence_kind=d.kind, divergence_step=d.step, onset_step=d.onset_step, ratio=d.ratio)
        if d.kind in ("nan", "inf"):
            confidence = 0.99
            reasons.append(d.how(main.tag) if d.never_finite else f"{d.how(main.tag)} and never recovered")
        else:
            confidence = _past(d.ratio if d.ratio else 4.0, 2.0) * (0.8 if d.gradual else 1.0)
            settled = d.settled_how(main.tag)
            if settled is not None:  # a blow-up of ten times or more it came down from only partly
                confidence = max(confidence, _past(d.settled / d.baseline, 1.1))  # type: ignore[operator]
            reasons.append(settled or f"{main.tag} exploded from step {d.onset_step} ({d.baseline:.4g} -> "
                                      f"{d.level_after:.4g}) and never came back")
        return Verdict("diverged", round(confidence, 3), evidence, tuple(reasons + notes))

    n_finite = divergence.analysed_points
    if n_finite < th.min_points:
        evidence["points"] = n_finite
        short = _short_overfitting(train, val, th) if main_role == "train" else None
        if short is not None:  # (a three-epoch fine-tune that overfits: too short for the curve's shape, not for this)
            reason, finding, rise = short
            evidence["short_overfitting"] = rise
            confidence = th.short_confidence * min(1.0, rise["rise_rel"] / (2 * th.short_rise))
            return Verdict("overfitting", round(max(0.5, confidence), 3), evidence,
                           (reason, f"only {n_finite} finite point(s) of {main.tag}: too few to judge the curve's "
                                    "shape, not the rise", *notes), findings=(finding,))
        reasons.append(f"only {n_finite} finite point(s) of {main.tag}; need {th.min_points}")
        return Verdict("insufficient_data", 1.0, evidence, tuple(reasons + notes),
                       findings=(_insufficient(reasons[0]),))

    recovered = tuple((sp.onset_step, sp.end_step) for sp in divergence.spikes if sp.end_step is not None)
    f = train_features(main, th, recovered)
    evidence.update(f)
    unbounded = _unbounded_below(f, th)
    if unbounded is not None:
        evidence["unbounded_below"] = True
        finding = Finding("loss_unbounded", Severity.ERROR, unbounded, recommend("loss_unbounded"),
                          step=f["first_step"], step_end=f["last_step"])
        return Verdict("diverged", 0.9, evidence, (unbounded, *notes), findings=(finding,))
    data = n_finite / (n_finite + 5)
    scores: dict[str, float] = {}
    why: dict[str, list[str]] = {"overfitting": [], "unstable": [], "underfitting": []}

    if overfitting is not None:
        evidence["overfitting"] = {
            "detected": overfitting.detected, "pattern": overfitting.pattern, "onset_step": overfitting.onset_step,
            "gl_end": overfitting.gl_end, "rise_rel": overfitting.rise_rel, "val_points": overfitting.val_points,
        }
        if overfitting.detected:
            scores["overfitting"] = overfitting.confidence
            why["overfitting"].append(overfitting.reason)

    # A spike gone at the next logged point is one bad batch (a corrupted sample, a rare long sequence);
    # instability shows as spikes the optimiser needs several points to recover from, or never does.
    fin = main.collapse_steps().finite_part().steps
    lasting = [sp for sp in divergence.spikes if sp.end_step is None
               or np.count_nonzero((fin >= sp.onset_step) & (fin < sp.end_step)) > 1]
    blips = len(divergence.spikes) - len(lasting)
    # A loss near zero (a memorised training set, 0.0003 from 0.68) lifted by a batch with a hard example or two
    # (0.1), then back: its size is that example's loss whatever the level, so its ratio to the level and the points
    # it takes to get back say nothing of the optimiser's stability.
    floor = [sp for sp in lasting if sp.end_step is not None and f["log_space"]
             and sp.baseline <= th.floor_share * f["start_level"] and sp.peak_value < f["start_level"]]
    if floor:
        lasting = [sp for sp in lasting if sp not in floor]
        evidence["spikes_at_the_floor"] = len(floor)
    spikes = len(lasting)
    if lasting:
        evidence["first_lasting_spike_step"] = int(min(sp.onset_step for sp in lasting))
    needed = max(th.min_spikes, int(np.ceil(th.spike_rate * n_finite)))
    evidence.update(spikes=spikes, spikes_needed=needed, one_point_spikes=blips)
    heavy = _heavy_spikes(tuple(sp for sp in divergence.spikes if sp not in floor), fin, th, f["start_level"])
    ends_best = len(fin) and main.collapse_steps().finite_part().values.argmin() == len(fin) - 1
    if heavy and ends_best and (main_role == "val" or all(sp.recovery_steps is not None and sp.points <= len(fin) / 4
                                                          for sp in heavy)):
        # a curve that ends at its best: its setbacks on the way, each brief and come back from, are no instability
        # (the model kept is the best; the loss went on to new lows), as for the validation swings of any run
        evidence["heavy_spikes_before_best_end"] = len(heavy)
        heavy = ()
    restarts = lr_restarts(learning_rate)
    evidence["lr_restarts"] = restarts
    unstable, why["unstable"] = _unstable(f, spikes, needed, val if main_role == "train" else None, th, evidence,
                                          restarts, heavy)
    if unstable and main_role == "train" and set(evidence["unstable_by"]) <= {"roughness", "rebound"}:
        smooth = _epoch_smooth(epoch_train, th)
        if smooth is not None:
            notes.append(f"{main.tag} is noisy from step to step, but {smooth}: not instability")
            evidence["unstable_by_step_curve_only"] = evidence["unstable_by"]
            unstable, why["unstable"] = [], []
    if unstable and main_role == "train" and "rise" in evidence["unstable_by"] and not restarts:
        ended = _settled_high(main, f, th, evidence, reasons, notes)
        if ended is not None:
            return ended
    if unstable:
        scores["unstable"] = _shrink(max(unstable), data)
    under, why["underfitting"] = _underfitting(f, main.tag, learning_rate, num_classes, th, evidence,
                                               _val_levelled(val, th) if main_role == "train" else False,
                                               language_model,
                                               _fits_training_data(f, val, overfitting, th) if main_role == "train" else None,
                                               rose_back=bool(unstable)
                                               and f["min_level"] <= (1 - th.min_decrease) * f["start_level"]
                                               and f["end_level"] >= 1.25 * f["min_level"],
                                               preference=preference)
    if num_classes is None and main_role == "train" and classifier:
        plateau = chance_plateau(main, val, th)
        if plateau is not None:
            k, level, text = plateau
            evidence.update(chance_level=level, chance_classes=k)
            ended = _collapsed(main, level, text, th, evidence, reasons, notes) \
                or _dead_model(main, level, text, th, evidence, reasons, notes)
            if ended is not None:
                return ended
            under.append(0.75)
            why["underfitting"].append(text + _blown_up_first(main, level))
    elif main_role == "train" and num_classes is not None and num_classes >= 2 and f["end_level"] >= th.chance_fraction * np.log(num_classes):
        level = float(np.log(num_classes))
        text = f"{main.tag} ends at {f['end_level']:.4g}, near chance level ln({num_classes}) = {level:.4g}"
        ended = _collapsed(main, level, text, th, evidence, reasons, notes) \
            or _dead_model(main, level, text, th, evidence, reasons, notes)
        if ended is not None:
            return ended
    if main_role == "train":
        ended = _dead_model(main, None, "", th, evidence, reasons, notes) \
            or _blown_up_before_learning(main, f, th, evidence, reasons, notes)
        if ended is not None:
            return ended
    if under:
        scores["underfitting"] = _shrink(max(under), data)
    change, noise = f["change"], f["noise"]

    order = ("overfitting", "unstable", "underfitting")
    met = sorted((label for label in order if label in scores), key=lambda k: -(scores[k] + PRIORITY[k]))
    if met:
        label = met[0]
        confidence = scores[label]
        reasons = why[label]
        also = tuple(m for m in met[1:])
        for other in also:
            reasons.append(f"also {other}: " + "; ".join(why[other]))
        reasons += notes
    else:
        label, also = "normal", ()
        near = [0.0]
        if overfitting is not None and overfitting.rise_rel and overfitting.rise_rel > 0:
            near.append(min(0.9, overfitting.rise_rel / 0.05))
            # the validation loss sits above its minimum beyond its noise band at most later evaluations, but
            # the rise failed the persistence test or the training loss rose with it: less sure it is normal
            if (overfitting.share_above or 0) >= 0.5 and overfitting.band is not None \
                    and np.log1p(overfitting.rise_rel) > overfitting.band:
                near.append(0.6)
        near.append(min(0.9, spikes / needed))
        if noise is not None:
            rough = f["roughness"] if f["roughness"] is not None else 1e9
            near.append(min(0.9, noise / th.rough_noise, rough / th.rough_relative))
        if "trained_start" not in evidence:  # a fine-tune's small decrease is expected
            near.append(min(0.9, max(0.0, th.min_decrease / max(-change, 1e-9)) ** 2))
        confidence = _shrink(1 - 0.5 * max(near), data)
        moved = "rose" if change > 0 else "fell"  # a resumed run's plateau may end a little higher
        spiked = len(divergence.spikes) if divergence is not None else 0
        found = ("no overfitting, divergence or underfitting found; its loss spike(s) fall short of an unstable run "
                 "(see the findings)" if spiked else "no overfitting, instability, divergence or underfitting found")
        reasons = [f"{main.tag} {moved} {_amount(f)} {_levels(f)}; {found}"]
        reasons += [evidence[key] for key in ("trained_start", "fits_training_data", "preference_learning")
                    if key in evidence]
        reasons += notes
    findings: tuple[Finding, ...] = ()
    if label == "unstable":
        onset = min(evidence["unstable_from"].values(), default=f["first_step"])
        findings = (Finding("unstable", Severity.WARNING, "; ".join(why["unstable"]), recommend("unstable"),
                            step=onset, step_end=f["last_step"]),)
    elif label == "underfitting" or "underfitting" in also:
        findings = (Finding("underfitting", Severity.WARNING, "; ".join(why["underfitting"]), recommend("underfitting"),
                            step=f["first_step"], step_end=f["last_step"]),)
    at_zero = _at_zero(main, evidence)
    if at_zero and label == "normal":  # nothing left to learn from: a normal run says little then
        confidence = min(confidence, _AT_ZERO_CONFIDENCE)
        reasons.append(f"{main.tag} is exactly 0 from step {evidence['zero_from_step']} to the end: no gradient left, so "
                       "the verdict rests on what came before")
    findings += at_zero
    return Verdict(label, round(float(confidence), 3), evidence, tuple(reasons), also, findings)


#: the most a normal verdict is worth on a training loss at exactly 0 over most of the run
_AT_ZERO_CONFIDENCE = 0.5


def _at_zero(main: Curve, evidence: dict[str, Any]) -> tuple[Finding, ...]:
    """A warning when the loss sits at exactly 0 over the last third of the run or more: the model fits every
    training example as logged (memorisation of a small set, labels leaked into the inputs), or the loss is not
    computed (every label masked)."""
    c = main.collapse_steps().finite_part()
    zero = c.values == 0
    if not len(c) or not zero[-1]:
        return ()
    start = len(c) - int(np.argmin(zero[::-1])) if not zero.all() else 0
    if len(c) - start < max(2, len(c) / 3):
        return ()
    step = int(c.steps[start])
    evidence["zero_from_step"] = step
    return (Finding("loss_at_zero", Severity.WARNING,
                    f"{main.tag} is exactly 0 from step {step} to the end ({len(c) - start} of {len(c)} points): the "
                    "model fits every training example as logged, or the loss is not computed from the data",
                    recommend("loss_at_zero"), step=step, step_end=int(c.steps[-1])),)


def _short_overfitting(train: Curve | None, val: Curve | None, th: Thresholds
                       ) -> tuple[str, Finding, dict[str, Any]] | None:
    """Overfitting in a run too short for the curves' shapes (a fine-tune of three epochs): the validation loss's
    last evaluation ``short_rise`` or more above its lowest earlier one (``short_climb`` when it climbed at each of
    3 or more evaluations since), while the training loss fell ``short_train_fall`` or more from that evaluation's
    step to its end. The reason, a finding and the numbers; None otherwise."""
    if train is None or val is None:
        return None
    v, t = val.collapse_steps().finite_part(), train.collapse_steps().finite_part()
    if len(v) < 3 or len(t) < 2 or (v.values <= 0).any() or (t.values <= 0).any():
        return None
    best = int(np.argmin(v.values[:-1]))
    low, end = float(v.values[best]), float(v.values[-1])
    rise = end / low - 1
    onset = int(v.steps[best])
    before = t.values[t.steps <= onset]
    climbed = len(v) - best - 1 >= 3 and bool(np.all(np.diff(v.values[best:]) > 0))
    if rise < (th.short_climb if climbed else th.short_rise) or not len(before) or t.steps[-1] <= onset:
        return None
    at_onset, train_end = float(before[-1]), float(t.values[-1])
    fall = 1 - train_end / at_onset
    if fall < th.short_train_fall:
        return None
    message = (f"{val.tag} rose {rise:.0%} from its minimum {low:.4g} at step {onset} to {end:.4g} at its last "
               f"evaluation (step {int(v.steps[-1])}), while {train.tag} fell {fall:.0%} ({at_onset:.4g} -> "
               f"{train_end:.4g}): the model fits its training data better and held-out data worse")
    finding = Finding("overfitting", Severity.WARNING, message + f" (only {len(v)} evaluations).",
                      recommend("overfitting"), step=onset, step_end=int(v.steps[-1]))
    return message, finding, {"onset_step": onset, "val_min": low, "val_end": end, "rise_rel": rise,
                              "train_at_onset": at_onset, "train_end": train_end, "evaluations": len(v)}


def judged_loss(train: Curve | None, val: Curve | None, thresholds: Thresholds = Thresholds()) -> Curve | None:
    """The loss the verdict reads: the training loss; the validation loss when there is no training loss, or
    when the training loss has too few finite points for a verdict (``min_points``) and the validation loss
    has them (a per-epoch evaluation beside a training loss logged twice in the whole run)."""
    if train is None or len(train) == 0:
        return val if val is not None and len(val) else train
    if val is not None and _finite_points(train) < thresholds.min_points <= _finite_points(val):
        return val
    return train


def _finite_points(curve: Curve) -> int:
    return len(curve.collapse_steps().finite_part())


def _epoch_smooth(epoch_train: Curve | None, th: Thresholds) -> str | None:
    """Why the per-epoch training loss shows no instability (it fell and never climbed back
    ``rebound_ratio`` above an earlier epoch), or None when it does or cannot tell (under 3 epochs)."""
    if epoch_train is None:
        return None
    e = epoch_train.collapse_steps().finite_part()
    if len(e) < 3 or not (e.values > 0).all():
        return None
    y = np.log(e.values)
    climb = float(np.max(y[1:] - np.minimum.accumulate(y)[:-1]))
    if y[-1] >= y[0] or climb >= np.log(th.rebound_ratio):
        return None
    return (f"its per-epoch loss {e.tag} fell from {e.values[0]:.4g} to {e.values[-1]:.4g} over {len(e)} epochs "
            f"without climbing back more than {100 * np.expm1(max(climb, 0.0)):.0f}%")


def _unstable(
    f: dict[str, Any], spikes: int, needed: int, val: Curve | None, th: Thresholds, evidence: dict[str, Any],
    lr_restarts: bool = False, heavy: tuple[Spike, ...] = (),
) -> tuple[list[float], list[str]]:
    """Confidences and reasons of every instability criterion met (spikes, roughness, rises, val oscillation).

    With ``lr_restarts`` (the learning rate went back up: warm restarts, cycles) a climb back above an earlier
    low is the schedule at work, not instability; a lasting rise from the minimum still counts. ``heavy``: the
    spikes that count on their own (see :func:`_heavy_spikes`)."""
    scores: list[float] = []
    why: list[str] = []
    evidence["unstable_by"] = by = []
    # where each criterion met shows first (the finding points at the earliest)
    evidence["unstable_from"] = onsets = {}
    if spikes >= needed:
        scores.append(_past(spikes, needed))
        why.append(f"{spikes} loss spikes lasting more than one logged point (unstable from {needed})")
        by.append("spikes")
        onsets["spikes"] = evidence.get("first_lasting_spike_step", f["first_step"])
    elif heavy:
        worst = max(heavy, key=lambda sp: (sp.magnitude or 0) * sp.points)
        scores.append(_past(worst.magnitude or 2.0, 1.5))
        back = (f"took {worst.recovery_steps} steps ({worst.points} logged points) to come back"
                if worst.recovery_steps is not None else
                f"had not come back to it by the end ({worst.points} logged points)")
        why.append(f"the loss rose {worst.magnitude:.3g}x above its level ({worst.baseline:.4g} -> {worst.peak_value:.4g}) "
                   f"from step {worst.onset_step} and {back}")
        by.append("heavy spike")
        onsets["heavy spike"] = int(worst.onset_step)
    noise, rough, excess = f["noise"], f["roughness"], f["excess_roughness"]
    # no decrease at all, or the level swings; too short a curve to measure the swings (under 40 points): the
    # noise must then outweigh the whole decrease (a short noisy mini-batch loss that clearly falls is normal)
    swings = rough is None or (rough >= 1.0 if excess is None else excess >= th.rough_excess)
    if (f["log_space"] and noise is not None and noise >= th.rough_noise and (rough is None or rough >= th.rough_relative)
            and swings):
        scores.append(min(_past(noise, th.rough_noise), _past(rough or 1e9, th.rough_relative)))
        by.append("roughness")
        onsets["roughness"] = f["first_step"]
        why.append(f"the loss jumps ±{100 * np.expm1(noise):.0f}% from point to point"
                   + (f", {rough:.2f}x its total log decrease" if rough is not None else "")
                   + (f", and its level swings {excess:.1f}x more than that noise explains" if excess else ""))
    degrade = f["end_level"] / f["min_level"] if f["min_level"] > 0 and f["log_space"] else None
    big_enough = th.min_abs_share * abs(f["start_level"])
    if (degrade is not None and degrade >= th.degrade_ratio and np.log(degrade) > th.level_sigmas * (f["level_noise"] or 0)
            and f["end_level"] - f["min_level"] >= big_enough):
        scores.append(_past(degrade - 1, th.degrade_ratio - 1))
        by.append("rise")
        onsets["rise"] = f["rise_step"] if f["rise_step"] is not None else f["first_step"]
        why.append(f"the loss rose {_percent(degrade - 1)} from its lowest level {f['min_level']:.4g} to "
                   f"{f['end_level']:.4g} (medians of {f['tail_points']} points) and stayed there")
    rebound = f["rebound"]
    if rebound is not None and f["log_space"] and rebound >= np.log(th.rebound_ratio) and (
        degrade is None or degrade < th.degrade_ratio
    ) and rebound >= th.level_sigmas * (f["rebound_noise"] or 0) and not lr_restarts and (
        np.expm1(rebound) * f["min_level"] >= big_enough
    ):
        scores.append(_past(np.expm1(rebound), th.rebound_ratio - 1))
        by.append("rebound")
        onsets["rebound"] = f["rebound_step"] if f["rebound_step"] is not None else f["first_step"]
        why.append(f"the loss climbed back {100 * np.expm1(rebound):.0f}% above an earlier low "
                   "(medians of 20 stretches of the run) before coming down again")
    if val is not None:
        vc = val.collapse_steps().finite_part()
        if len(vc) >= th.val_rough_min_points and (vc.values > 0).all():
            vy = np.log(vc.values)
            val_noise = noise_sigma(vy)
            v_drop = float(np.median(vy[:2]) - np.median(vy[-2:]))
            evidence["val_noise"] = val_noise
            ends_best = vc.values[-1] <= vc.values.min()  # the swings were on the way: the model kept is the best
            evidence["val_ends_at_best"] = bool(ends_best)
            # (a training loss gone to its floor: the model memorised its training set, and the swings of its held-out
            # loss are an overconfident model's on examples it gets wrong, not an optimiser's)
            memorised = f["log_space"] and f["end_level"] <= th.floor_share * f["start_level"]
            evidence["train_memorised"] = bool(memorised)
            if val_noise >= th.val_rough_noise and val_noise >= th.val_rough_relative * max(v_drop, 0) and not ends_best \
                    and not memorised:
                scores.append(_past(val_noise, th.val_rough_noise))
                by.append("validation")
                onsets["validation"] = int(vc.steps[0])
                why.append(f"{val.tag} oscillates ±{100 * np.expm1(val_noise):.0f}% between evaluations")
    return scores, why


def _heavy_spikes(spikes: tuple[Spike, ...], steps: np.ndarray, th: Thresholds, start: float = np.nan
                  ) -> tuple[Spike, ...]:
    """The spikes that are instability on their own, whatever their count: 2x or more above the level before for
    ``heavy_spike_share`` of the run's points, or ``huge_spike`` times for two points or more (a loss knocked far
    off its course for a while, not one bad batch). One not back by the end counts too (no divergence took it:
    it came down from its peak, but not to its level). A spike that gives back under ``heavy_giveback`` of what the
    loss had fallen from its ``start`` is none (a converged loss of 0.02 bumped to 0.14 after a start at 3.3)."""
    out = []
    for sp in spikes:
        if sp.magnitude is None:
            continue
        if start > sp.baseline and sp.peak_value - sp.baseline < th.heavy_giveback * (start - sp.baseline):
            continue
        end = sp.end_step if sp.end_step is not None else np.inf
        points = int(np.count_nonzero((steps >= sp.onset_step) & (steps < end)))
        if points >= 2 and (sp.magnitude >= th.huge_spike
                            or (sp.magnitude >= 2.0 and points >= th.heavy_spike_share * len(steps))):
            out.append(sp)
    return tuple(out)


def _val_levelled(val: Curve | None, th: Thresholds) -> bool:
    """The validation loss has stopped improving: over the last ``end_share`` of its span its median is not
    ``still_falling_rel`` / 2 below the best evaluation before (more steps would not help validation)."""
    if val is None:
        return False
    v = val.collapse_steps().finite_part()
    if len(v) < 4:
        return False
    start = v.steps[-1] - th.end_share * (v.steps[-1] - v.steps[0])
    before, end = v.values[v.steps < start], v.values[v.steps >= start]
    if len(before) == 0 or len(end) < 2:
        return False
    best = float(np.min(before))
    return float(np.median(end)) >= best - abs(best) * th.still_falling_rel / 2


def _underfitting(
    f: dict[str, Any], tag: str, learning_rate: Curve | None, num_classes: int | None, th: Thresholds,
    evidence: dict[str, Any], val_levelled: bool = False, language_model: LanguageModelStart | None = None,
    fits: str | None = None, rose_back: bool = False, preference: PreferenceProgress | None = None,
) -> tuple[list[float], list[str]]:
    """Confidences and reasons of every underfitting criterion met (no decrease, not converged, chance level).
    A training loss still falling while the validation loss has levelled off (``val_levelled``) is not
    "not converged": further steps would fit the training set only. A language model's loss that started from
    trained weights and fell beyond its noise (``language_model``) has no decrease to make up; nor has one far
    below its validation loss (``fits``: the model fits its training data, the opposite of high bias), nor one
    that fell well below its start and rose back a quarter or more while unstable (``rose_back``: the rise is the
    instability's to judge)."""
    scores: list[float] = []
    why: list[str] = []
    change = f["change"]
    first, last = f["first_step"], f["last_step"]
    annealed = None
    if learning_rate is not None:
        lr = learning_rate.finite_part().values
        if lr.size >= 3 and lr.max() > 0:
            annealed = float(lr[-1] / lr.max())
            evidence["lr_end_over_peak"] = annealed
    resumed = first is not None and first > 0 and first > th.resumed_share * last
    evidence["resumed"] = resumed
    evidence["val_levelled"] = val_levelled
    noise_fall = _noise_of_fall(f)
    too_small = change > -th.min_decrease
    fall = -float(np.log1p(change)) if change > -1 else np.inf
    flat = too_small or fall < noise_fall  # (a fall its batch-to-batch noise could make is no fall)
    if flat and resumed:
        # The fall happened before this log began: a flat curve here is a plateau, not evidence of underfitting.
        evidence["flat_after_late_start"] = (f"{tag} changed {_percent(abs(change))} {_levels(f)}; the log starts "
                                             f"at step {first}, so the fall before it is unknown")
    elif flat and fits is not None:
        evidence["fits_training_data"] = fits
    elif flat and rose_back:
        evidence["rose_back"] = True
    elif flat and preference is not None and preference.learning and change < 0:
        evidence["preference_learning"] = (f"{tag} is a preference-optimisation loss, which starts at ln 2 and falls "
                                           f"a little; {preference.describe()}")
    elif flat and (trained := _trained_start(f, language_model, th)) is not None:
        evidence["trained_start"] = (f"{tag} started from trained weights ({trained}): a fine-tune, whose small "
                                     "fall is no underfitting")
    elif too_small:
        strength = min(1.0, (th.min_decrease + change) / th.min_decrease) * _shortfall_certainty(f, th)
        direction = "rose" if change > 0 else "fell only"
        scores.append(0.5 + 0.45 * strength)
        needs = (f"a {100 * th.min_decrease:.0f}% decrease" if not f["below_zero"] else
                 f"a decrease of {th.min_decrease * f['scale']:.3g}, {100 * th.min_decrease:.0f}% of its largest "
                 f"magnitude {f['scale']:.4g}")
        # (a loss that ended clearly above where it began was made worse by its training: its learning rate and data
        # are to look at before capacity)
        worse = ("; it ended above where it began: the training made it worse (a learning rate too high, or labels "
                 "or data that changed) rather than too little capacity"
                 if change >= th.min_decrease else "")
        why.append(f"{tag} {direction} {_amount(f)} {_levels(f)} (needs {needs}){worse}")
    elif flat:
        scores.append(0.5 + 0.45 * min(1.0, 1 - fall / noise_fall))
        why.append(f"{tag} fell {_amount(f)} {_levels(f)}, no more than its point-to-point noise "
                   f"(±{_percent(np.expm1(f['noise']))}) moves those medians ({_percent(-np.expm1(-noise_fall))}): "
                   f"no fall told from noise")
    elif f["end_drop_rel"] >= th.still_falling_rel and f["end_share"] >= th.still_falling_share and (
        annealed is None or annealed > th.annealed_lr
    ) and not val_levelled:
        scores.append(0.5 + 0.3 * min(1.0, (f["end_share"] - th.still_falling_share) / th.still_falling_share))
        why.append(
            f"{tag} is still falling steadily: {100 * f['end_drop_rel']:.0f}% over the last "
            f"{100 * th.end_share:.0f}% of the run, {100 * f['end_share']:.0f}% of its whole decrease (not converged)"
        )
    if num_classes and num_classes > 1 and f["log_space"]:
        chance = float(np.log(num_classes))
        evidence["chance_level"] = chance
        if f["end_level"] >= th.chance_fraction * chance:
            scores.append(0.5 + 0.45 * min(1.0, (f["end_level"] / chance - th.chance_fraction) / (1 - th.chance_fraction)))
            why.append(f"{tag} ends at {f['end_level']:.4g}, near chance level ln({num_classes}) = {chance:.4g}")
    return scores, why


def _shortfall_certainty(f: dict[str, Any], th: Thresholds) -> float:
    """How surely a loss fell short of ``min_decrease``, from 1/3 to 1: its shortfall from its first tenth to its
    end level over the standard error of that difference, in thirds (a noisy per-batch loss whose levels are
    medians of a few points cannot tell a 5% rise from the 10% fall it needs; 430 points of a fine-tune can)."""
    noise = f["level_noise"]
    if not f["log_space"] or noise is None or noise <= 0 or not f["first_tenth_level"] > 0 or not f["end_level"] > 0:
        return 1.0
    shortfall = float(np.log(f["first_tenth_level"] / f["end_level"])) + float(np.log1p(-th.min_decrease))
    return float(np.clip(-shortfall / (np.sqrt(2) * noise) / 3, 1 / 3, 1.0))


def _trained_start(f: dict[str, Any], language_model: LanguageModelStart | None, th: Thresholds) -> str | None:
    """Why a language model's loss that fell by less than ``min_decrease`` started from trained weights, when
    it fell beyond its noise (from its first tenth to its last, ``fall_sigmas`` standard errors of the
    difference of the two levels), else None."""
    if language_model is None or not f["log_space"] or f["change"] >= 0 or f["level_noise"] is None:
        return None
    fall = float(np.log(f["first_tenth_level"] / f["end_level"]))
    if fall <= th.fall_sigmas * np.sqrt(2) * f["level_noise"]:
        return None
    first = f.get("first_value")
    return language_model.trained_start(max(f["start_level"], first if first is not None else -np.inf))


def _fits_training_data(f: dict[str, Any], val: Curve | None, overfitting: OverfittingResult | None,
                        th: Thresholds) -> str | None:
    """Why a training loss that hardly fell is no underfitting, when it ends ``fits_gap`` (2x) or more below a
    validation loss of the same quantity (the median of its last two evaluations): the model fits its training
    data (a fine-tune whose log starts past its first fall, an SFT whose held-out loss is 4x its training loss);
    None otherwise."""
    if val is None or overfitting is None or not overfitting.losses_comparable or not f["log_space"] \
            or f["end_level"] <= 0:
        return None
    v = val.collapse_steps().finite_part()
    held_out = float(np.median(v.values[-2:])) if len(v) else np.nan
    if held_out >= th.fits_gap * f["end_level"]:
        return (f"{f['tag']} ends at {f['end_level']:.4g}, {held_out / f['end_level']:.3g}x below the validation "
                f"loss ({held_out:.4g}): the model fits its training data, so its small fall is no underfitting")
    # (a training loss logged first after most of the learning: the validation, evaluated from before, saw the fall)
    before = v.values[v.steps <= f["first_step"]]
    if len(before) >= 2 and before[0] > 0 and 1 - float(np.min(before)) / float(before[0]) >= th.fell_before:
        return (f"{f['tag']} is first logged at step {f['first_step']}, after the validation loss had fallen "
                f"{_percent(1 - float(np.min(before)) / float(before[0]))} from {before[0]:.4g}: the fall came "
                "before the training loss's log began, so its small fall is no underfitting")
    return None


def _noise_of_fall(f: dict[str, Any]) -> float:
    """How far (log) the noise of a loss's points alone moves the difference of its start and end medians: twice
    the standard error of a median's difference (1.2533 σ/√k each, for the points each is the median of); 0
    for a start or an end read from fewer than 5 points: a first value is the model's before training, not a draw of
    the noise of later batches, and few points tell their noise poorly."""
    if not f["log_space"] or f["noise"] is None or min(f["head_points"], f["tail_points"]) < 5:
        return 0.0
    return 2 * 1.2533 * f["noise"] * float(np.sqrt(1 / f["head_points"] + 1 / f["tail_points"]))


def chance_plateau(train: Curve, val: Curve | None, th: Thresholds = Thresholds()) -> tuple[int, float, str] | None:
    """A classifier stuck at chance, found without being told the number of classes: the training loss (and
    the validation loss, when logged) sits flat at ``ln K`` for a small whole ``K`` over the last half of the run.

    Flat: the medians of the third and fourth quarters differ by under ``chance_flat`` (1 %). At ``ln K``: the
    last quarter's median lies within ``-chance_below`` / ``+chance_above`` (1.5 % / 3 %) of it — a loss can
    sit a little above the prior's entropy, hardly below (the entropy of a prior not quite even is a little under
    ``ln K``). Without a validation curve, only ``K`` up to 10 and
    a tighter band (half as wide), since healthy losses also end near such values now and then.
    Returns ``(K, ln K, reason)`` or None."""
    c = train.collapse_steps().finite_part()
    if len(c) < 2 * th.min_points or not (c.values > 0).all():
        return None
    q = np.array_split(c.values, 4)
    third, last = float(np.median(q[2])), float(np.median(q[3]))
    if abs(last / third - 1) > th.chance_flat:
        return None
    levels = [last]
    v = val.collapse_steps().finite_part() if val is not None else None
    has_val = v is not None and len(v) >= 4
    if has_val:
        vq = np.array_split(v.values, 2)
        levels.append(float(np.median(vq[1])))
    k_max = th.chance_max_classes if has_val else min(10, th.chance_max_classes)
    below, above = (th.chance_below, th.chance_above) if has_val else (th.chance_below / 2, th.chance_above / 2)
    where = f"{train.tag} at {last:.4g}" + (f" and {v.tag} at {levels[1]:.4g}" if has_val else "")
    if not (_frozen(q[3], th) and (not has_val or _frozen(vq[1], th))):
        for k in range(2, k_max + 1):
            chance = float(np.log(k))
            if all(chance * (1 - below) <= x <= chance * (1 + above) for x in levels):
                text = (f"{where}: flat over the last half of the run at ln({k}) = {chance:.4g}, the loss of uniform "
                        f"guesses among {k} classes (chance level): the model learns nothing from its inputs")
                return k, chance, text
        return None
    # a model whose output no longer depends on its input: its loss is the class prior's entropy or above it,
    # which for close class counts cannot tell them apart
    near = [k for k in range(2, k_max + 1)
            if all(np.log(k) * (1 - below) <= x <= np.log(k) * (1 + th.chance_above_frozen) for x in levels)]
    if not near:
        return None
    k = min(near, key=lambda k: abs(np.log(k) - min(levels)))
    classes = f"{near[0]}" if len(near) == 1 else f"{near[0]} to {near[-1]}"
    text = (f"{where}: frozen over the last quarter of the run (one value to within {th.frozen_spread:.0e}), at the "
            f"chance level of a classifier (ln K for K = {classes} classes, the loss of uniform guesses): the weights "
            f"no longer change (dead units or vanished gradients, often after a blow-up at too high a learning "
            f"rate) and the model learns nothing from its inputs")
    return k, float(np.log(k)), text


def _blown_up_first(curve: Curve, level: float) -> str:
    """A clause naming a first logged value 3x or more above the chance level the loss sits at: the loss started
    far above chance, from a blow-up before the first log point (too high a learning rate) or a badly scaled start."""
    finite = curve.collapse_steps().finite_part()
    first = float(finite.values[0]) if len(finite) else np.nan
    if not first >= 3 * level:
        return ""
    return (f"; its first logged value, {first:.4g}, was {first / level:.3g}x that level (a blow-up before the first "
            f"log point, or a badly scaled start)")


def _diverged(code: str, kind: str, onset: int, reason: str, confidence: float, evidence: dict[str, Any],
              reasons: list[str], notes: list[str], **detail: Any) -> Verdict:
    """A diverged verdict with its error finding ``code`` at ``onset`` (``kind`` and the onset go in the evidence,
    ``detail`` in the finding's)."""
    evidence.update(divergence_kind=kind, divergence_step=onset, onset_step=onset)
    finding = Finding(code, Severity.ERROR, reason, recommend(code), step=onset, evidence={"onset_step": onset, **detail})
    return Verdict("diverged", confidence, evidence, (*reasons, reason, *notes), findings=(finding,))


def _settled(values: np.ndarray, th: Thresholds) -> float | None:
    """The median of ``values`` when they have settled (quartiles within ``settled_spread`` of it), else None."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return None if q3 - q1 > th.settled_spread * median else float(median)


def _collapsed(main: Curve, chance: float, text: str, th: Thresholds, evidence: dict[str, Any],
               reasons: list[str], notes: list[str]) -> Verdict | None:
    """The diverged verdict of a loss back at the chance level ``chance`` after a stretch well below it (see
    :func:`_collapse_to_chance`; ``text`` says where it ends), with its error finding; None when it never got low."""
    collapse = _collapse_to_chance(main, chance, th)
    if collapse is None:
        return None
    low, low_step, left = collapse
    reason = (f"{main.tag} fell to {low:.4g} (around step {low_step}), then rose back to the chance level from step "
              f"{left} and stayed there: {text}; the model lost what it had learnt")
    return _diverged("diverged_collapse", "collapse_to_chance", left, reason, 0.8, evidence, reasons, notes,
                     low=low, low_step=low_step, chance_level=chance)


def _dead_model(main: Curve, chance: float | None, text: str, th: Thresholds, evidence: dict[str, Any],
                reasons: list[str], notes: list[str]) -> Verdict | None:
    """The diverged verdict of a model too high a learning rate killed: a loss frozen to the last bits (see
    :func:`_frozen`: the weights no longer change) after a blow-up. At the chance level ``chance`` (``text`` says
    where), the blow-up is a value 3x or more above it (Keras at a learning rate of 8: 12.5 in the first epoch,
    then 2.4058 to the last bit); elsewhere, a loss that rose from its first value and froze there (outputs
    saturated on the wrong class). A loss frozen at chance with no blow-up logged stays underfitting: nothing
    shows what froze it; one frozen after falling is a run whose learning rate decayed to nothing."""
    c = main.collapse_steps().finite_part()
    tail = c.values[-max(5, len(c) // 4):]
    if len(c) < 2 * th.min_points or not _frozen(tail, th):
        return None
    level, first = float(np.median(tail)), float(c.values[0])
    if chance is not None and level <= chance * (1 + th.chance_above_frozen):
        above = np.flatnonzero(c.values >= 3 * chance)
        if not above.size:
            return None
        at = int(above[0])
        blown = float(c.values[at])
        blow_up = f"{main.tag} was {blown:.4g} at step {int(c.steps[at])}, {blown / chance:.3g}x the chance level"
        if at == 0:
            blow_up += " (its first logged value: the blow-up came before the first log point)"
        peak_at = int(np.argmax(c.values))
        if c.values[peak_at] > blown:
            blow_up += f", and up to {c.values[peak_at]:.4g} at step {int(c.steps[peak_at])}"
        reason = f"{blow_up}; then it froze at the chance level: {text}"
        kind = "dead_at_chance"
    elif level > first * (1 + th.dead_rise):
        at = int(np.flatnonzero(c.values >= 0.95 * level)[0])
        reason = (f"{main.tag} rose from {first:.4g} (its first logged value) to {level:.4g} and froze there (one "
                  f"value to within {th.frozen_spread:.0e} over the last quarter of the run): the updates made the "
                  f"model worse, then stopped changing it (outputs saturated, units dead)")
        kind = "dead_after_rise"
    else:
        return None
    reason += "; too high a learning rate killed the model: its weights no longer change"
    return _diverged("diverged_dead", kind, int(c.steps[at]), reason, 0.8, evidence, reasons, notes,
                     frozen_level=level, chance_level=chance)


def _settled_high(main: Curve, f: dict[str, Any], th: Thresholds, evidence: dict[str, Any], reasons: list[str],
                  notes: list[str]) -> Verdict | None:
    """The diverged verdict of a loss that jumped from its lowest level to ``settled_jump`` (1.8x) it or more within
    a few points and then stayed high and settled (its points from the jump on within ``settled_spread`` of their
    median, by quartiles), ending ``degrade_ratio`` (1.5x) its lowest level or more: a blow-up the run never came
    back from, though under the 2x of an explosion (a nanoGPT loss at 3.76 jumped to 7.4, then 5.9-7.2 to the
    end). A loss that keeps swinging after the jump is instability, and one that drifted up is degradation."""
    rise_step = f["rise_step"]
    low = f["min_level"]
    if rise_step is None or not low > 0 or f["end_level"] < th.degrade_ratio * low:
        return None
    c = main.collapse_steps().finite_part()
    at = int(np.searchsorted(c.steps, rise_step))
    jump = c.values[max(at - 2, 0):at + 3]
    if at >= len(c) - 5 or jump.max() < th.settled_jump * low:
        return None
    median = _settled(c.values[at:], th)
    if median is None:
        return None
    peak_at = max(at - 2, 0) + int(np.argmax(jump))
    reason = (f"{main.tag} jumped from its lowest level {low:.4g} to {c.values[peak_at]:.4g} at step "
              f"{int(c.steps[peak_at])} and settled high: from step {rise_step} it stays around {median:.4g} "
              f"({median / low:.2g}x its lowest level) to the end, where it is {f['end_level']:.4g}; what the model "
              f"had learnt since it was last that high is lost")
    return _diverged("diverged_explosion", "settled_high", int(rise_step), reason, 0.7, evidence, reasons, notes,
                     low=low, settled=median)


def _blown_up_before_learning(main: Curve, f: dict[str, Any], th: Thresholds, evidence: dict[str, Any],
                              reasons: list[str], notes: list[str]) -> Verdict | None:
    """The diverged verdict of a loss that blew up to ``early_blow_up`` (5x) where it started or more and by the
    end is no lower than there (within ``min_decrease``), settled over the second half of the run (its quartiles
    within ``settled_spread`` of its median): too high a learning rate wrecked the model before it learnt anything
    (SGD at 3 on a 10-class MLP: 2.30 at the start, 17.8 at step 10, then around 2.25 for good). A loss that keeps
    swinging by several times its size is left to the instability rules.
    Where it started: the first logged value, or the level of the first points when lower (a first point that
    is the blow-up itself). Not for a fine-tune or a log that starts late: their first values are no start."""
    if "trained_start" in evidence or evidence.get("resumed") or not f["log_space"]:
        return None
    c = main.collapse_steps().finite_part()
    start = min(float(c.values[0]), f["start_level"])
    if not start > 0 or f["end_level"] < (1 - th.min_decrease) * start:
        return None
    up = np.flatnonzero(c.values >= th.early_blow_up * start)
    if not up.size:
        return None
    if _settled(c.values[len(c) // 2:], th) is None:
        return None  # still swinging by a good part of its level: instability, judged as such
    rise = int(up[0])
    while rise > 0 and c.values[rise - 1] >= 2 * start:  # (the climb to it: from the first point at 2x)
        rise -= 1
    onset, peak_at = int(c.steps[rise]), int(np.argmax(c.values))
    peak = float(c.values[peak_at])
    reason = (f"{main.tag} blew up from {start:.4g} (where it started) to {peak:.4g} at step {int(c.steps[peak_at])}"
              f"{f' (2x up from step {onset})' if rise != peak_at else ''} and never fell "
              f"clearly below where it started (it ends at {f['end_level']:.4g}): too high a learning rate wrecked "
              f"the model before it learnt anything")
    return _diverged("diverged_early", "blown_up_before_learning", onset, reason, 0.8, evidence, reasons, notes,
                     start=start, peak=peak, end_level=f["end_level"])


def _collapse_to_chance(curve: Curve, chance: float, th: Thresholds) -> tuple[float, int, int] | None:
    """A loss at chance level at the end that had been well below it (``chance_collapse_below`` of it) in a
    stretch of the run before: the lowest level (the median of a twentieth of the points), its step, and the first
    step from which the loss stays above halfway back up to chance. None when it never got that low."""
    c = curve.collapse_steps().finite_part()
    n = len(c)
    width = max(3, n // 20)
    if n < 4 * width:
        return None
    levels = pd.Series(c.values).rolling(width, center=True, min_periods=width).median().to_numpy()
    low_at = int(np.nanargmin(levels[: int(0.75 * n)]))
    low = float(levels[low_at])
    if not low <= th.chance_collapse_below * chance:
        return None
    halfway = low + 0.5 * (chance - low)
    below = np.flatnonzero(levels[low_at:] <= halfway)
    left = low_at + int(below[-1]) + 1 if below.size else low_at
    if left >= n:
        return None
    return low, int(c.steps[low_at]), int(c.steps[left])


def _frozen(values: np.ndarray, th: Thresholds) -> bool:
    """Whether ``values`` (at least 5, of distinct steps) are one value to within ``frozen_spread`` of it and
    carry more digits than a rounded log prints: a loss averaged over batches that no longer moves at all."""
    if len(values) < 5 or not (values > 0).all():
        return False
    middle = float(np.median(values))
    rounded = float(f"{middle:.6g}")
    return float(values.max() - values.min()) <= th.frozen_spread * middle and abs(middle - rounded) > 1e-12 * middle


def lr_restarts(learning_rate: Curve | None, factor: float = 2.0) -> bool:
    """Whether the learning rate went back up by ``factor`` or more after falling (warm restarts, cyclic
    schedules) — a rise during warm-up does not count: only after the rate had fallen from an earlier peak."""
    if learning_rate is None:
        return False
    lr = learning_rate.finite_part().values
    if lr.size < 3 or not (lr > 0).all():
        return False
    peak = np.maximum.accumulate(lr)
    fell = lr < peak / factor  # well below an earlier peak
    if not fell.any():
        return False
    low = np.minimum.accumulate(np.where(fell, lr, np.inf))
    return bool((lr >= factor * low).any())


def _percent(fraction: float) -> str:
    """A change as a percentage that never rounds to a value it is not (99.99 % is not "100%", 0.004 % not "0%")."""
    value = abs(100.0 * fraction)
    decimals = 0 if value >= 10 else 1
    text = f"{value:.{decimals}f}"
    while decimals < 4 and ((float(text) >= 100 > value) or (float(text) == 0 < value)):
        decimals += 1
        text = f"{value:.{decimals}f}"
    if float(text) >= 100 > value:
        return "more than 99.99%"
    if float(text) == 0 < value:
        return "less than 0.0001%"
    return text + "%"


def _amount(f: dict[str, Any]) -> str:
    """How much a loss moved from its start to its end: a percentage of its start, or, for a loss that goes below
    zero (where a share of its start means nothing), the difference."""
    if not f["below_zero"]:
        return _percent(abs(f["change"]))
    return f"by {abs(f['end_level'] - f['start_level']):.4g}"


def _levels(f: dict[str, Any]) -> str:
    """"from A (median of its first h points) to B (median of its last t)", naming where the numbers come from;
    the first logged value too when it differs from the starting level by more than a quarter."""
    h, t = f["head_points"], f["tail_points"]
    first = f.get("first_value")
    if h > 1 and first is not None and f["start_level"] and abs(first / f["start_level"] - 1) > 0.25:
        start = f"{f['start_level']:.4g} (median of its first {h} points; its first logged value was {first:.4g})"
    else:
        start = f"{f['start_level']:.4g}" + (f" (median of its first {h} points)" if h > 1 else " (its first point)")
    return f"from {start} to {f['end_level']:.4g} (median of its last {t})"


def _insufficient(message: str) -> Finding:
    return Finding("insufficient_data", Severity.INFO, message, recommend("insufficient_data"))
