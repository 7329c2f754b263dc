"""Whether a task metric logged beside the validation loss agrees with the loss's overfitting.

A classifier or a tagger often grows over-confident on the examples it gets wrong while it gets more of them
right: its validation loss rises from some step (overfitting, by the loss) while the accuracy or F1 it is
evaluated by keeps improving to the end. Early stopping on the loss would then keep a worse model. This module
finds such a metric among the run's tags (the validation loss's prefix, a metric's name: ``eval_f1``,
``val/accuracy``, ``eval_overall_f1``, ``val_wer``) and says when it disagrees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.checkpoints import metric_direction
from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve

__all__ = ["MetricAgreement", "metric_against_overfitting", "task_metric_tags", "zero_metrics"]

#: Words of a tag beside a validation loss that are not a task metric (the loss itself, timings, counters)
_NOT_METRIC = re.compile(r"loss|runtime|per_second|samples|steps|epoch|time|score", re.I)
#: A part of a metric's name that is a class's label or number (``eval_T017_f1``, ``val_12_iou``)
_ONE_CLASS = re.compile(r"(?:^|[_/])[A-Za-z]?\d{2,}(?:[_/]|$)")


def task_metric_tags(val_tag: str, tags: Iterable[str]) -> list[tuple[str, bool]]:
    """The task metrics evaluated with the validation loss ``val_tag`` (its prefix: ``eval_loss`` → ``eval_``,
    ``val/loss`` → ``val/``), each with whether higher is better: the run's overall ones first (``overall`` in
    the name, then names of no one class, the shortest first: ``eval_f1`` before a class's ``eval_T017_f1``)."""
    cut = val_tag.lower().rfind("loss")
    prefix = val_tag[:cut] if cut > 0 else ""
    if not prefix:
        return []
    out = []
    for tag in tags:
        rest = tag[len(prefix):]
        if tag == val_tag or not tag.startswith(prefix) or _NOT_METRIC.search(rest):
            continue
        direction = metric_direction(rest)
        if direction is not None:
            out.append((tag, direction == "max"))
    return sorted(out, key=lambda item: ("overall" not in item[0].lower(), bool(_ONE_CLASS.search(item[0])),
                                         len(item[0]), item[0]))


@dataclass(frozen=True)
class MetricAgreement(ResultMixin):
    """A task metric against the step the validation loss began to rise: its value there, its best after it
    (and where), its last, and the finding when it kept improving."""

    tag: str
    higher_better: bool
    onset_step: int
    at_onset: float
    best: float
    best_step: int
    last: float
    findings: tuple[Finding, ...]


def metric_against_overfitting(metric: Curve, higher_better: bool, onset_step: int, val_tag: str,
                               min_gain: float = 0.02) -> MetricAgreement | None:
    """The metric's course after ``onset_step``, with a ``metric_disagrees`` warning when it kept improving: its
    best after the onset beats its value there by ``min_gain`` (relative) or more, in the last third of the
    evaluations after it, and it ends within ``min_gain`` of that best. None when it has under 3 evaluations
    from the onset on."""
    m = metric.collapse_steps().finite_part()
    before = np.flatnonzero(m.steps <= onset_step)
    after = np.flatnonzero(m.steps > onset_step)
    if not before.size or len(after) < 2:
        return None
    sign = 1.0 if higher_better else -1.0
    at_onset = float(m.values[before[-1]])
    scores = sign * m.values[after]
    best_at = int(after[int(np.argmax(scores))])
    best, last = float(m.values[best_at]), float(m.values[-1])
    scale = max(abs(at_onset), 1e-12)
    gained = sign * (best - at_onset) >= min_gain * scale
    late = best_at >= after[0] + (2 * len(after)) // 3
    kept = sign * (best - last) <= min_gain * scale
    findings: tuple[Finding, ...] = ()
    if gained and late and kept:
        message = (f"{val_tag} rose from step {onset_step}, but {metric.tag} kept improving: {at_onset:.4g} there, "
                   f"{best:.4g} at step {int(m.steps[best_at])}, {last:.4g} at the end. The model grew more confident "
                   f"on what it gets wrong while getting more right: choose the checkpoint by {metric.tag}, not by "
                   f"the loss (stopping on the loss would keep a worse model)")
        findings = (Finding("metric_disagrees", Severity.WARNING, message, recommend("metric_disagrees"),
                            step=onset_step, step_end=int(m.steps[-1]),
                            evidence={"metric": metric.tag, "at_onset": at_onset, "best": best, "last": last}),)
    return MetricAgreement(metric.tag, higher_better, onset_step, at_onset, best, int(m.steps[best_at]), last,
                           findings)


def zero_metrics(curves: Mapping[str, Curve], train: Curve | None, min_points: int = 5,
                 min_fall: float = 0.3) -> tuple[Finding, ...]:
    """A warning when the scores an evaluation counts hits by (an accuracy, a top-k, an F1, a mAP, a precision or
    recall: higher is better) are exactly 0 at every one of their ``min_points`` evaluations or more while the
    training loss fell by ``min_fall`` or more: the model learns, yet the evaluation never scores one hit — its
    labels or class names do not match the training's, or it is broken. (Chance alone scores hits.)"""
    if train is None:
        return ()
    t = train.collapse_steps().finite_part()
    if len(t) < 2 or not t.values[0] > 0 or t.values[-1] > (1 - min_fall) * t.values[0]:
        return ()
    zeros = []
    for tag, curve in curves.items():
        c = curve.collapse_steps().finite_part()
        if (len(c) >= min_points and metric_direction(tag) == "max" and _HITS.search(tag) and not c.values.any()
                and not _ONE_CLASS.search(tag)):  # (a rare class's F1 may well be 0: a class's score says nothing)
            zeros.append((tag, len(c)))
    if not zeros:
        return ()
    names = " and ".join(tag for tag, _ in zeros[:3]) + (f" (and {len(zeros) - 3} more)" if len(zeros) > 3 else "")
    message = (f"{names} {'is' if len(zeros) == 1 else 'are'} exactly 0 at every evaluation ({zeros[0][1]} of them) "
               f"while {train.tag} fell {100 * (1 - t.values[-1] / t.values[0]):.0f}%: the model learns, yet the "
               "evaluation never scores a hit, which even guessing would")
    return (Finding("metric_zero", Severity.WARNING, message, recommend("metric_zero"),
                    evidence={"tags": [tag for tag, _ in zeros]}),)


#: names of scores that count hits (an accuracy of 0 is no hit at all; a loss of 0 is perfection)
_HITS = re.compile(r"acc|top-?\d|f1|fb1|map|precision|recall|iou|dice", re.I)
