"""Each run's figures: one figure maker per process, reused from run to run, and how many processes to use.

A report of paths draws each run's figures in the worker process that read it
(:mod:`tanalyze.report.pipeline`); what was not drawn there (a report of a
``Logs``) is drawn in this process. The output is the same either way (figure
ids are salted by run, not by process).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence

from tanalyze.parallel import ProgressCallback
from tanalyze.report.chartdata import aux_roles
from tanalyze.report.figures import FigureMaker, Rendered
from tanalyze.report.model import RunView

__all__ = ["run_figures", "draw", "worker_maker", "default_workers"]

RunFigures = tuple[Rendered | None, ...]  # (loss, aux, resources)

_MAKER: FigureMaker | None = None  # one per worker process, so its figures are reused across runs


def draw(maker: FigureMaker, run: RunView) -> RunFigures:
    return maker.loss(run), maker.aux(run, aux_roles(run)), maker.resources(run)


def worker_maker(smoothing: float) -> FigureMaker:
    """This process's figure maker (kept, so that its figures are reused from run to run)."""
    global _MAKER
    if _MAKER is None or _MAKER.smoothing != smoothing:
        _MAKER = FigureMaker(smoothing=smoothing)
    return _MAKER


def default_workers() -> int:
    """Worker processes to use: the CPUs this process may run on, at most 4; 1 where forking is unsafe."""
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def run_figures(
    runs: Sequence[RunView],
    maker: FigureMaker,
    *,
    jobs: int | None = None,
    progress: ProgressCallback | None = None,
) -> Iterator[RunFigures]:
    """The (loss, aux, resources) figures of each run, in order: as drawn where the runs were read (a report of
    paths draws them in the per-run worker processes), else drawn here. ``jobs`` is accepted for compatibility:
    a second pool of drawing processes did not pay for itself (see docs/performance.md)."""
    total = len(runs)
    for done, run in enumerate(runs, start=1):
        yield run.figures if run.figures is not None else draw(maker, run)
        if progress is not None:
            progress(done, total, f"render {run.name}")
