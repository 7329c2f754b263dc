"""Preference optimisation (DPO, IPO, ORPO, SimPO …): is the policy learning the preferences?

Its loss starts at ``ln 2 = 0.693`` (the sigmoid loss of a policy equal to its reference) and a healthy run
often ends at 0.5–0.65: a fall of a few percent is no underfitting. What shows learning is the reward margin
(chosen minus rejected implicit reward) growing and the reward accuracy (the share of pairs ranked right)
rising, which TRL logs as ``rewards/margins`` and ``rewards/accuracies``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.overfitting import kendall_increasing_p
from tanalyze.analysis.results import ResultMixin
from tanalyze.curves import Curve, bin_medians

__all__ = ["PreferenceProgress", "nonfinite_policy_outputs", "preference_progress"]

#: the trend test's one-sided p-value under which a margin or accuracy curve rises
_RISING_P = 0.01
_BINS = 12


@dataclass(frozen=True)
class PreferenceProgress(ResultMixin):
    """How the reward margin (else the reward accuracy) of a preference-optimisation run moved."""

    tag: str
    start: float  # the median of its first sixth
    end: float  # the median of its last sixth
    p_rising: float  # one-sided Kendall p of its trend (medians of up to 12 bins)

    @property
    def learning(self) -> bool:
        return self.end > self.start and self.p_rising < _RISING_P

    def describe(self) -> str:
        return (f"{self.tag} rose from {self.start:.4g} to {self.end:.4g} (trend p = {self.p_rising:.2g}): the "
                "policy learns the preferences")


def _training(tag: str) -> bool:
    return not tag.lower().startswith(("eval", "val", "test"))


def preference_progress(curves: Mapping[str, Curve]) -> PreferenceProgress | None:
    """The training reward margin's (else reward accuracy's) progress of a preference-optimisation run; None
    for a run that logs neither."""
    for suffix in ("rewards/margins", "rewards/accuracies"):
        tag = next((t for t in curves if t.lower().endswith(suffix) and _training(t)), None)
        if tag is None:
            continue
        curve = curves[tag].collapse_steps().finite_part()
        n = len(curve)
        if n < 6:
            continue
        steps, values = curve.steps.astype(np.float64), curve.values
        if n > _BINS:
            steps, values = bin_medians(steps, values, _BINS)
        sixth = max(1, len(curve) // 6)
        return PreferenceProgress(tag, float(np.median(curve.values[:sixth])), float(np.median(curve.values[-sixth:])),
                                  float(kendall_increasing_p(values)))
    return None


#: what TRL logs of the policy's own outputs on each batch: its log-probabilities and logits of the chosen and rejected
#: answers, and the implicit rewards made of them
_OUTPUTS = ("logps/", "logits/", "rewards/")


def nonfinite_policy_outputs(curves: Mapping[str, Curve]) -> tuple[str, ...]:
    """The training tags of a preference-optimisation run's policy outputs (``logps/chosen``, ``logits/rejected``,
    ``rewards/margins`` …) that are NaN or infinite at every logged point (two or more): the model's forward pass
    gives no numbers, whatever its loss says (TRL logs a loss of 0.0 beside them). Empty when none is."""
    out = []
    for tag, curve in curves.items():
        if not _training(tag) or not any(part in tag.lower() for part in _OUTPUTS):
            continue
        values = curve.collapse_steps().values
        if len(values) >= 2 and not np.isfinite(values).any():
            out.append(tag)
    return tuple(sorted(out))
