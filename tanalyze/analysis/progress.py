"""Loss progress: how much the loss falls per epoch (or per window of steps), and where it plateaus.

The run is cut into epochs when an epoch counter is known (the ``epoch`` column
or role) and it only moves forward, otherwise into ``windows`` groups of equal
point count. Each group's level is the median of its points (every point
counts; the median keeps one bad batch from moving it). A group whose level is
not at least ``min_decrease`` (3 %) below the previous one is *slow*; runs of
``min_plateau`` or more slow groups that stay within ``min_decrease`` of the level
before them are plateaus (slow groups that add up to a steady fall are not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve

__all__ = ["ProgressWindow", "Plateau", "ProgressResult", "analyze_progress"]


@dataclass(frozen=True)
class ProgressWindow(ResultMixin):
    start_step: int
    end_step: int
    points: int
    level: float  # median of the points
    change_rel: float | None  # level / previous level - 1 (None for the first group)
    epoch: int | None = None


@dataclass(frozen=True)
class Plateau(ResultMixin):
    start_step: int
    end_step: int
    length_steps: int
    groups: int
    level: float
    at_end: bool


@dataclass(frozen=True)
class ProgressResult(ResultMixin):
    tag: str
    by: str  # "epoch" | "window" | "none"
    min_decrease: float
    windows: tuple[ProgressWindow, ...]
    plateaus: tuple[Plateau, ...]
    first_plateau_step: int | None
    total_change_rel: float | None  # last level / first level - 1
    note: str
    findings: tuple[Finding, ...]


def _groups_by_epoch(epochs: np.ndarray) -> np.ndarray | None:
    """Start indices of epoch groups, or None when the counter is unusable (missing, backwards, < 3 epochs)."""
    if epochs is None or len(epochs) == 0 or not np.isfinite(epochs).all():
        return None
    whole = np.floor(epochs + 1e-9)
    if (np.diff(whole) < 0).any():
        return None
    starts = np.flatnonzero(np.concatenate([[True], np.diff(whole) != 0]))
    return starts if len(starts) >= 3 else None


def _fall(level: float, reference: float, positive: bool) -> float:
    """How far ``level`` lies below ``reference``, as a share of it."""
    return 1 - level / reference if positive else (reference - level) / max(abs(reference), 1e-12)


def analyze_progress(
    loss: Curve | None,
    *,
    epochs: Curve | None = None,
    windows: int | None = None,
    min_decrease: float = 0.03,
    min_plateau: int = 2,
    min_plateau_share: float = 0.2,
) -> ProgressResult:
    """Relative decrease per epoch (or window) and the plateaus of a loss curve.

    Args:
        loss: the training loss.
        epochs: epoch counter as a curve (value = epoch at that step); its last value at or
            before each loss step decides the loss point's epoch.
        windows: number of equal-count groups when epochs are not usable (default ``clip(n // 10, 3, 20)``).
        min_decrease: a group must be at least this much lower than the previous one (3 %).
        min_plateau: slow groups in a row that make a plateau.
        min_plateau_share: plateaus before the end shorter than this share of the run are not reported.
    """
    tag = loss.tag if loss is not None else ""
    if loss is None:
        return ProgressResult(tag, "none", min_decrease, (), (), None, None, "no loss curve", ())
    c = loss.collapse_steps().finite_part()
    n = len(c)
    if n < 6:
        return ProgressResult(tag, "none", min_decrease, (), (), None, None, f"only {n} finite point(s)", ())
    note = ""
    starts = None
    epoch_of = None
    if epochs is not None and len(epochs):
        e = epochs.collapse_steps().finite_part()
        index = np.searchsorted(e.steps, c.steps, side="right") - 1
        if (index >= 0).all():
            epoch_of = e.values[index]
            starts = _groups_by_epoch(epoch_of)
            if starts is None:
                note = "epoch counter not usable (fewer than 3 epochs or it runs backwards): fixed windows used"
    by = "epoch" if starts is not None else "window"
    if starts is None:
        count = int(windows or np.clip(n // 10, 3, 20))
        starts = np.linspace(0, n, count + 1).round().astype(np.int64)[:-1]
        starts = np.unique(starts)
    ends = np.append(starts[1:], n)
    positive = bool((c.values > 0).all())
    groups = []
    previous = None
    for lo, hi in zip(starts, ends, strict=True):  # one iteration per epoch/window
        level = float(np.median(c.values[lo:hi]))
        if previous is None:
            change = None
        elif positive:
            change = level / previous - 1
        else:
            change = (level - previous) / max(abs(previous), 1e-12)
        epoch = int(np.floor(epoch_of[lo] + 1e-9)) if by == "epoch" and epoch_of is not None else None
        groups.append(ProgressWindow(int(c.steps[lo]), int(c.steps[hi - 1]), int(hi - lo), level, change, epoch))
        previous = level
    slow = np.array([g.change_rel is not None and g.change_rel > -min_decrease for g in groups])
    plateaus = []
    i = 0
    span = max(int(c.steps[-1] - c.steps[0]), 1)
    while i < len(groups):
        if not slow[i]:
            i += 1
            continue
        # flat from the last level reached: the stretch ends where it has fallen min_decrease below that level in
        # all (slow groups that add up to a steady fall are progress, not a plateau)
        reference = groups[i - 1].level
        j = i
        while j + 1 < len(groups) and slow[j + 1] and _fall(groups[j + 1].level, reference, positive) < min_decrease:
            j += 1
        if j - i + 1 >= min_plateau:
            # flat from where the group before first came within min_decrease of its level (the level reached):
            # that group may begin with the fall that led to it
            before = max(i - 1, 0)
            values = c.values[starts[before]:ends[before]]
            reached = np.flatnonzero(values <= reference + min_decrease * abs(reference))
            start = int(c.steps[starts[before] + reached[0]]) if reached.size else groups[before].start_step
            end = groups[j].end_step
            level = float(np.median([g.level for g in groups[i : j + 1]]))
            plateaus.append(Plateau(start, end, end - start, j - i + 1, level, j == len(groups) - 1))
        i = j + 1
    first = groups[0].level
    total = (groups[-1].level / first - 1) if positive else (groups[-1].level - first) / max(abs(first), 1e-12)
    findings = []
    unit = "epochs" if by == "epoch" else "windows"
    for p in plateaus:
        share = p.length_steps / span
        if p.at_end:
            if share >= 0.3:
                findings.append(Finding(
                    "plateau", Severity.INFO,
                    f"{tag} has been flat since step {p.start_step} ({100 * share:.0f}% of the run: {p.groups} {unit} "
                    f"none of them {100 * min_decrease:.0f}% below the level before them; level {p.level:.4g})",
                    recommend("plateau"), step=p.start_step, step_end=p.end_step))
        elif share >= min_plateau_share:
            findings.append(Finding(
                "plateau", Severity.INFO,
                f"{tag} stalled from step {p.start_step} to {p.end_step} ({100 * share:.0f}% of the run, level "
                f"{p.level:.4g}) and then fell again",
                recommend("plateau"), step=p.start_step, step_end=p.end_step))
    return ProgressResult(
        tag=tag, by=by, min_decrease=min_decrease, windows=tuple(groups), plateaus=tuple(plateaus),
        first_plateau_step=plateaus[0].start_step if plateaus else None, total_change_rel=float(total),
        note=note, findings=tuple(findings),
    )
