"""The verdict of a reinforcement-learning run: judged by its reward, not by its losses.

A policy-gradient loss (``actor/pg_loss``, DeepSpeed-Chat's ``act_loss``) is an advantage-weighted
objective that hovers around zero by design, and the critic's, the KL term's and the entropy bonus's
belong to other objectives: none of them should fall the way a supervised loss does, and their sum means
nothing. What tells whether the policy learns is the reward it earns (higher is better):

============  ============================================================================
label         reward (and policy entropy)
============  ============================================================================
normal        the reward rose beyond its noise and kept most of its gain
underfitting  the reward never rose beyond its noise: the policy is not learning
unstable      the reward rose, then gave back most of its gain (a collapse); or it fell; or it
              did not rise by half its starting level while the policy entropy fell to near zero
              (the policy settled on fixed choices before it learned: premature convergence)
diverged      a loss or the reward became NaN/Inf; or the policy entropy blew up (its
              outputs spread towards uniform: the policy collapsed)
============  ============================================================================

Levels are means of the first and last tenth of the points (at least two) and the best of those of
stretches as long (means, since rewards are often discrete: see :func:`reward_features`); a change
counts when it clears both ``gain_sigmas`` standard errors of the difference of two such levels
and ``min_gain`` of the reward's scale (the largest of those levels in absolute value), since rewards
have no common unit. A few wild episodes (an evaluation that failed, a crash's penalty) widen the noise of
the means so far that a rise from about 0 to about 2,000 would not clear it: a reward of many distinct values
(not a win or a loss) whose first and last medians differ by as many standard errors of a median, from a
robust noise that such outliers do not move, rose or fell all the same. An episodic reward is noisy by nature:
roughness alone is never instability here.

A run that shows it is reinforcement learning (PPO's ``approx_kl``, TRPO's ``LossBefore`` …) but logged no
reward, episode return or success rate cannot be judged (:func:`classify_without_reward`): its losses are a
surrogate, a value fit and an entropy bonus, none a measure of progress. It is ``insufficient_data`` (or
``diverged`` when a loss became NaN/Inf).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tanalyze.analysis.classify import Verdict, _past, _shrink
from tanalyze.analysis.divergence import DivergenceResult
from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, Severity
from tanalyze.curves import Curve, noise_sigma

__all__ = ["RewardThresholds", "classify_reinforcement", "classify_without_reward"]


@dataclass(frozen=True)
class RewardThresholds:
    """Every threshold of the reinforcement-learning verdict, with its default."""

    min_points: int = 8  # finite reward points needed for any verdict
    min_gain: float = 0.05  # a rise or fall counts from 5 % of the reward's scale …
    gain_sigmas: float = 4.0  # … and this many standard errors of the difference of two levels
    collapse_share: float = 0.25  # a collapse: the reward ends with at most this share of its best gain
    entropy_blowup: float = 4.0  # the policy entropy ends this many times above its starting level
    entropy_floor: float = 0.05  # … or below this share of its early peak while the reward did not rise …
    collapse_rise: float = 0.5  # … by this share of its starting level (beyond noise is not enough then)
    distinct_share: float = 0.5  # medians decide too when at least this share of the reward's values are distinct
    flat_level_points: int = 5  # a reward that did not rise is "not learning" only from levels of this many points
    #                             each: fewer, and the change needed is most of what its few noisy episodes span


def classify_reinforcement(
    reward: Curve,
    *,
    entropy: Curve | None = None,
    loss: Curve | None = None,
    loss_divergence: DivergenceResult | None = None,
    thresholds: RewardThresholds = RewardThresholds(),
) -> Verdict:
    """The verdict of a run whose policy earns ``reward`` (see the module doc).

    ``entropy`` — the policy's entropy, when logged; ``loss`` and ``loss_divergence`` — a training loss and
    its divergence analysis, of which only non-finite values count.
    """
    th = thresholds
    evidence: dict[str, Any] = {"main_curve": reward.tag, "main_role": "reward", "reinforcement": True}
    d = loss_divergence.divergence if loss_divergence is not None else None
    if d is not None and d.kind in ("nan", "inf") and loss is not None:
        evidence.update(divergence_kind=d.kind, divergence_step=d.step, onset_step=d.onset_step)
        text = d.how(loss.tag) if d.never_finite else f"{d.how(loss.tag)} and never recovered"
        return Verdict("diverged", 0.99, evidence, (text,))
    collapsed = reward.collapse_steps()
    finite = np.isfinite(collapsed.values)
    if len(collapsed) and finite.any() and not finite[-1]:
        last = int(np.flatnonzero(finite)[-1]) + 1
        step = int(collapsed.steps[last])
        evidence.update(divergence_kind="nan" if np.isnan(collapsed.values[last]) else "inf", divergence_step=step)
        return Verdict("diverged", 0.95, evidence, (f"{reward.tag} became non-finite at step {step} and stayed so",))
    blowup = _entropy_blowup(entropy, th) if entropy is not None else None
    if blowup is not None:
        ratio, start, end, onset, text = blowup
        evidence.update(entropy_tag=entropy.tag, entropy_start=start, entropy_end=end, entropy_ratio=ratio,
                        onset_step=onset)
        finding = Finding("policy_collapse", Severity.ERROR, text, recommend("policy_collapse"), step=onset,
                          step_end=int(entropy.steps[-1]), evidence={"ratio": ratio, "start": start, "end": end})
        return Verdict("diverged", round(_past(ratio, th.entropy_blowup), 3), evidence, (text,), findings=(finding,))

    r = collapsed.finite_part()
    n = len(r)
    if n < th.min_points:
        text = f"only {n} finite point(s) of {reward.tag}; need {th.min_points}"
        evidence["points"] = n
        return Verdict("insufficient_data", 1.0, evidence, (text,),
                       findings=(Finding("insufficient_data", Severity.INFO, text, recommend("insufficient_data")),))
    f = reward_features(r, th)
    evidence.update(f)
    data = n / (n + 5)
    gain, peak_gain, bar = f["gain"], f["best"] - f["start_level"], f["bar"]
    levels = (f"from {f['start_level']:.4g} (mean of its first {f['head_points']} points) to {f['end_level']:.4g} "
              f"(mean of its last {f['head_points']})")
    if peak_gain > bar and gain <= th.collapse_share * peak_gain and f["best"] - f["end_level"] > bar:
        given_back = (peak_gain - gain) / peak_gain
        text = (f"{reward.tag} rose from {f['start_level']:.4g} to {f['best']:.4g} by step {f['best_step']}, then gave "
                f"back {100 * given_back:.0f}% of that gain, ending at {f['end_level']:.4g}: the policy collapsed")
        confidence = _shrink(_past(given_back, 1 - th.collapse_share), data)
        finding = Finding("reward_collapse", Severity.WARNING, text, recommend("reward_collapse"),
                          step=f["best_step"], step_end=f["last_step"])
        return Verdict("unstable", round(confidence, 3), evidence, (text,), findings=(finding,))
    if abs(gain) <= bar and f["median_bar"] is not None and abs(f["median_gain"]) > f["median_bar"] \
            and f["median_gain"] * gain > 0:
        # the means' noise was widened by outliers: the medians, robust to them, tell the change
        gain, bar = f["median_gain"], f["median_bar"]
        levels = (f"from {f['start_median']:.4g} (median of its first {f['head_points']} points) to "
                  f"{f['end_median']:.4g} (median of its last {f['head_points']}; means {f['start_level']:.4g} and "
                  f"{f['end_level']:.4g}, whose noise a few outlying points widen)")
        evidence["decided_by"] = "medians"
    sharpened = _entropy_collapse(entropy, th) if entropy is not None else None
    if gain > bar and (sharpened is None or gain > th.collapse_rise * abs(f["start_level"])):
        reasons = [f"{reward.tag} rose {levels}, beyond its noise"]
        if f["best"] - f["end_level"] > bar:
            reasons.append(f"it ended below its best, {f['best']:.4g} at step {f['best_step']}")
        return Verdict("normal", round(_shrink(_past(gain, bar), data), 3), evidence, tuple(reasons))
    if sharpened is not None:
        share, peak, end, onset, text = sharpened
        rose = (f"rose only {levels}, less than half its starting level," if gain > bar
                else f"did not rise ({levels})")
        text = f"{reward.tag} {rose} while {text}"
        evidence.update(entropy_tag=entropy.tag, entropy_start=peak, entropy_end=end, entropy_ratio=end / peak,
                        onset_step=onset)
        finding = Finding("entropy_collapse", Severity.WARNING, text, recommend("entropy_collapse"), step=onset,
                          step_end=f["last_step"], evidence={"start": peak, "end": end})
        return Verdict("unstable", round(_shrink(_past(1 / max(share, 1e-12), 1 / th.entropy_floor), data), 3),
                       evidence, (text,), findings=(finding,))
    if gain < -bar:
        text = f"{reward.tag} fell {levels}: the policy got worse as it trained"
        finding = Finding("reward_collapse", Severity.WARNING, text, recommend("reward_collapse"),
                          step=f["first_step"], step_end=f["last_step"])
        return Verdict("unstable", round(_shrink(_past(-gain, bar), data), 3), evidence, (text,), findings=(finding,))
    if f["head_points"] < th.flat_level_points and float(np.ptp(r.values)) > 0:
        # (levels of 2-4 episodes: the change they need is most of what so few noisy episodes span; a policy that
        # does not learn cannot be told from one that learns slowly)
        text = (f"{reward.tag} did not rise beyond its noise ({levels}), but its {n} points give levels of "
                f"{f['head_points']} each, whose noise needs a change of at least {bar:.4g}: too few to tell whether "
                "the policy learns")
        evidence["undecided"] = True
        return Verdict("insufficient_data", 1.0, evidence, (text,),
                       findings=(Finding("insufficient_data", Severity.INFO, text, recommend("insufficient_data")),))
    text = (f"{reward.tag} did not rise beyond its noise: {levels} (a change of at least {bar:.4g} was needed): "
            "the policy is not learning")
    confidence = _shrink(0.5 + 0.3 * (1 - abs(gain) / bar) if bar > 0 else 0.8, data)
    finding = Finding("reward_flat", Severity.WARNING, text, recommend("reward_flat"), step=f["first_step"],
                      step_end=f["last_step"])
    return Verdict("underfitting", round(confidence, 3), evidence, (text,), findings=(finding,))


def classify_without_reward(
    signs: tuple[str, ...],
    *,
    loss: Curve | None = None,
    loss_divergence: DivergenceResult | None = None,
) -> Verdict:
    """The verdict of a reinforcement-learning run (``signs``: the tags that show it, see
    :func:`tanalyze.roles.reinforcement_signs`) that logged no reward, episode return or success rate: its losses
    (a policy's surrogate, a value fit, an entropy bonus; PPO's ``loss`` is their weighted sum) say nothing of
    whether the policy learns, so it is ``insufficient_data``; ``diverged`` when ``loss`` became NaN/Inf."""
    shown = ", ".join(signs[:4]) + (f" and {len(signs) - 4} more" if len(signs) > 4 else "")
    evidence: dict[str, Any] = {"main_curve": loss.tag if loss is not None else None, "main_role": "reward",
                                "reinforcement": True, "reinforcement_tags": list(signs), "reward": None}
    d = loss_divergence.divergence if loss_divergence is not None else None
    if d is not None and d.kind in ("nan", "inf") and loss is not None:
        evidence.update(divergence_kind=d.kind, divergence_step=d.step, onset_step=d.onset_step)
        text = d.how(loss.tag) if d.never_finite else f"{d.how(loss.tag)} and never recovered"
        return Verdict("diverged", 0.99, evidence, (text,))
    losses = f" ({loss.tag} among them)" if loss is not None else ""
    text = (f"no reward, episode return or success rate was logged, so whether the policy learns cannot be judged: "
            f"the losses{losses} of a reinforcement-learning run (it logged {shown}) are a surrogate, a value fit "
            "and an entropy bonus, none a measure of progress")
    finding = Finding("reward_missing", Severity.INFO, text[:1].upper() + text[1:], recommend("reward_missing"),
                      evidence={"reinforcement_tags": list(signs)})
    return Verdict("insufficient_data", 1.0, evidence, (text,), findings=(finding,))


def reward_features(r: Curve, th: RewardThresholds = RewardThresholds()) -> dict[str, Any]:
    """The levels of a reward curve (finite points, one per step) and the change that counts (``bar``).

    Levels are means, not medians: an episode's reward is often discrete (a win is 1, a loss 0; an episode
    length), and the median of 0/1 outcomes stays 0 while the win rate climbs from 10 % to 40 %. The noise is
    the larger of the robust second-difference estimate and that of the first differences (which a discrete
    reward does not fool into zero, and an outlier raises: the bar grows with it); a level's standard error is
    it over √k, times what correlated noise adds (:func:`_correlation_inflation`: a rolling mean such as SB3's
    ``ep_rew_mean`` wanders more than its point-to-point noise says).
    """
    n = len(r)
    k = max(2, int(round(0.1 * n)))
    head, tail = _level(r.values[:k]), _level(r.values[-k:])
    # the best level on stretches as long as the head and tail windows: the largest of many shorter, noisier
    # levels would be biased high and read noise as a rise and a collapse
    edges = np.linspace(0, n, max(1, n // k) + 1).round().astype(np.int64)
    stretches = [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]
    levels = np.array([_level(r.values[a:b]) for a, b in stretches])
    best_index = int(np.argmax(levels))
    a, b = stretches[best_index]
    sigma = _noise(r.values)
    inflation = _correlation_inflation(r.values, k)
    level_noise = sigma / np.sqrt(k) * inflation
    scale = max(abs(head), abs(tail), abs(float(levels[best_index])))
    bar = max(th.gain_sigmas * level_noise * np.sqrt(2.0), th.min_gain * scale)
    # the medians' route: only for a reward of many distinct values, whose robust noise is not fooled into zero
    # (the median of 0/1 outcomes flips between 0 and 1 with the luck of a window)
    start_median, end_median = float(np.median(r.values[:k])), float(np.median(r.values[-k:]))
    robust = noise_sigma(r.values) if len(np.unique(r.values)) >= th.distinct_share * n else float("nan")
    median_bar = None
    if np.isfinite(robust) and robust > 0:
        median_noise = _MEDIAN_EFFICIENCY * robust / np.sqrt(k) * inflation
        median_scale = max(abs(start_median), abs(end_median), scale)
        median_bar = float(max(th.gain_sigmas * median_noise * np.sqrt(2.0), th.min_gain * median_scale))
    return {
        "points": n, "head_points": k, "first_step": int(r.steps[0]), "last_step": int(r.steps[-1]),
        "start_level": head, "end_level": tail, "gain": tail - head, "best": float(levels[best_index]),
        "best_step": int(r.steps[(a + b - 1) // 2]), "noise": sigma, "scale": float(scale), "bar": float(bar),
        "start_median": start_median, "end_median": end_median, "median_gain": end_median - start_median,
        "robust_noise": float(robust) if np.isfinite(robust) else None, "median_bar": median_bar,
    }


#: The standard error of a median of normal noise over that of a mean: sqrt(pi / 2)
_MEDIAN_EFFICIENCY = float(np.sqrt(np.pi / 2))


def _level(values: np.ndarray) -> float:
    """The mean of ``values`` (not a trimmed one: trimming 10 % of 0/1 outcomes drops every rare 1)."""
    return float(np.mean(values))


def _correlation_inflation(values: np.ndarray, k: int) -> float:
    """How much more the mean of ``k`` neighbouring points moves than independent noise would let it:
    ``sqrt((1 + ρ) / (1 - ρ))`` for the lag-1 autocorrelation ρ of the points around their running mean over
    ``k`` (an AR(1) process's variance factor for a mean), between 1 and 10."""
    if len(values) < 3 * k or k < 3:
        return 1.0
    kernel = np.ones(k) / k
    padded = np.concatenate([np.full(k // 2, values[0]), values, np.full(k - 1 - k // 2, values[-1])])
    residual = values - np.convolve(padded, kernel, mode="valid")
    a, b = residual[:-1], residual[1:]
    if not (np.std(a) > 0 and np.std(b) > 0):
        return 1.0
    rho = float(np.clip(np.corrcoef(a, b)[0, 1], 0.0, 0.98))
    return float(min(10.0, np.sqrt((1 + rho) / (1 - rho))))


def _noise(values: np.ndarray) -> float:
    """Point-to-point noise of a reward, blind to its trend: the larger of the robust second-difference
    estimate and the standard deviation of the first differences over √2 (0 with fewer than 4 points)."""
    robust = noise_sigma(values)
    plain = float(np.std(np.diff(values))) / np.sqrt(2.0) if len(values) >= 4 else float("nan")
    found = [x for x in (robust, plain) if np.isfinite(x)]
    return float(max(found)) if found else 0.0


def _entropy_collapse(entropy: Curve, th: RewardThresholds) -> tuple[float, float, float, int, str] | None:
    """``(share, early peak, end, onset step, text)`` when the policy entropy ends below ``entropy_floor`` of
    its highest value over its first tenth (the end a median of the last tenth), else None."""
    e = entropy.collapse_steps().finite_part()
    if len(e) < th.min_points:
        return None
    k = max(2, int(round(0.1 * len(e))))
    peak, end = float(np.max(e.values[:k])), float(np.median(e.values[-k:]))
    if not peak > 0 or end / peak > th.entropy_floor:
        return None
    share = max(end, 0.0) / peak
    onset = int(e.steps[int(np.argmax(e.values <= th.entropy_floor * peak))])
    text = (f"the policy entropy {entropy.tag} fell from {peak:.4g} to {end:.4g} ({100 * share:.2g}% of it), below "
            f"{100 * th.entropy_floor:.0f}% of it from step {onset}: the policy settled on fixed choices before it "
            "learned anything")
    return share, peak, end, onset, text


def _entropy_blowup(entropy: Curve, th: RewardThresholds) -> tuple[float, float, float, int, str] | None:
    """``(ratio, start, end, onset step, text)`` when the policy entropy ends ``entropy_blowup`` times above
    its starting level (medians of the first and last tenth), else None."""
    e = entropy.collapse_steps().finite_part()
    if len(e) < th.min_points:
        return None
    k = max(2, int(round(0.1 * len(e))))
    start, end = float(np.median(e.values[:k])), float(np.median(e.values[-k:]))
    if not start > 0 or end / start < th.entropy_blowup:
        return None
    ratio = end / start
    onset = int(e.steps[int(np.argmax(e.values >= th.entropy_blowup * start))])
    text = (f"the policy entropy {entropy.tag} rose {ratio:.1f}x, from {start:.4g} (median of its first {k} points) "
            f"to {end:.4g}, {th.entropy_blowup:g}x or more from step {onset}: the policy's outputs spread towards "
            "uniform (the policy collapsed)")
    return ratio, start, end, onset, text
