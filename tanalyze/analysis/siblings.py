"""Runs judged against their siblings: a loss stuck orders of magnitude above the runs beside it.

A single run cannot tell "my loss fell 60% and flattened" from "my loss fell 60% and flattened a hundred
times higher than it should": only its siblings can. Siblings are runs in the same folder, read by the same
reader, whose losses resolved to the same tags and started within ``same_start`` (3x) of each other: the
same task (seeds, ablations, versions of one job), not different models that happen to share a folder. A
run whose final training loss is at least
``factor`` (10) times the median of its siblings' and ``above_all`` (3) times the highest of them, with at
least ``min_siblings`` (2) siblings that reached a verdict, is stuck: underfitting, with the numbers.

Pure: summaries in, findings out; :func:`tanalyze.diagnose.diagnose` applies them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.results import ResultMixin

__all__ = ["SiblingSummary", "StuckRun", "compare_siblings", "folder_of"]

#: Verdicts whose final level says nothing about where the loss should be.
_NOT_COMPARABLE = {"diverged", "insufficient_data"}


@dataclass(frozen=True)
class SiblingSummary:
    """What the comparison needs of one run."""

    run: str
    folder: str
    tag: str | None  # the training loss tag
    end_level: float | None  # the verdict's end level of that loss (median of its last points)
    label: str
    kind: str = ""  # what else must match: the reader and the roles' tags
    start_level: float | None = None  # where the loss started: siblings of one job start alike


@dataclass(frozen=True)
class StuckRun(ResultMixin):
    """A run whose loss ended far above its siblings'."""

    run: str
    tag: str
    end_level: float
    siblings: tuple[str, ...]
    siblings_median: float
    siblings_max: float
    ratio: float  # end_level / siblings_median

    def reason(self) -> str:
        return (f"{self.tag} ended at {self.end_level:.4g}, {self.ratio:.3g}x the median {self.siblings_median:.4g} "
                f"of {len(self.siblings)} sibling run(s) in the same folder with the same tag "
                f"(highest {self.siblings_max:.4g}): stuck far above where this job gets")


def _alike(a: float | None, b: float | None, factor: float) -> bool:
    """Whether two starting levels are within ``factor`` of each other (unknown ones never are)."""
    if a is None or b is None or not (a > 0 and b > 0):
        return False
    return max(a, b) / min(a, b) <= factor


def folder_of(run: str) -> str:
    """The folder part of a run name (``"sweep/seed_3"`` -> ``"sweep"``; ``""`` for a top-level run)."""
    return run.rsplit("/", 1)[0] if "/" in run else ""


def compare_siblings(
    summaries: Mapping[str, SiblingSummary] | list[SiblingSummary],
    *,
    factor: float = 10.0,
    above_all: float = 3.0,
    min_siblings: int = 2,
    same_start: float = 3.0,
) -> tuple[StuckRun, ...]:
    """Every run stuck orders of magnitude above its siblings (see the module doc)."""
    items = list(summaries.values()) if isinstance(summaries, Mapping) else list(summaries)
    groups: dict[tuple[str, str, str], list[SiblingSummary]] = defaultdict(list)
    for s in items:
        if s.tag is not None and s.end_level is not None and np.isfinite(s.end_level) and s.end_level > 0 \
                and s.label not in _NOT_COMPARABLE:
            groups[(s.folder, s.kind, s.tag)].append(s)
    stuck = []
    for (_, _, tag), members in groups.items():
        if len(members) < min_siblings + 1:
            continue
        for s in members:
            others = [o for o in members if o is not s and _alike(o.start_level, s.start_level, same_start)]
            if len(others) < min_siblings:
                continue
            levels = np.array([o.end_level for o in others], dtype=np.float64)
            median, top = float(np.median(levels)), float(levels.max())
            ratio = s.end_level / median
            if ratio >= factor and s.end_level >= above_all * top:
                stuck.append(StuckRun(s.run, tag, float(s.end_level), tuple(o.run for o in others), median, top,
                                      float(ratio)))
    return tuple(sorted(stuck, key=lambda r: r.run))
