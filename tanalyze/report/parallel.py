"""Drawing many runs' figures on several cores.

Figures of one run depend on that run alone, so they can be drawn in worker
processes. Workers are forked (cheap: matplotlib is already imported) and only
when that is safe: on a platform with ``fork``, from a process without other
threads. Otherwise, or for few runs, figures are drawn in this process. The
output is the same either way (figure ids are salted by run, not by process).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from tanalyze.parallel import ProgressCallback
from tanalyze.report.chartdata import aux_roles
from tanalyze.report.figures import FigureMaker, Rendered
from tanalyze.report.model import RunView

__all__ = ["run_figures", "draw", "worker_maker", "fork_context", "default_workers", "MIN_RUNS_FOR_WORKERS"]

#: Below this many runs, starting worker processes costs more than it saves.
MIN_RUNS_FOR_WORKERS = 8

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


def _draw_chunk(chunk: Sequence[RunView], smoothing: float) -> list[RunFigures]:
    maker = worker_maker(smoothing)
    return [draw(maker, run) for run in chunk]


def fork_context():
    return multiprocessing.get_context("fork")


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
    """The (loss, aux, resources) figures of each run, in order; drawn by ``jobs`` processes (None: automatic)."""
    total = len(runs)
    if all(run.figures is not None for run in runs):  # drawn where the runs were read
        for done, run in enumerate(runs, start=1):
            yield run.figures
            if progress is not None:
                progress(done, total, f"render {run.name}")
        return
    jobs = default_workers() if jobs is None else jobs
    if jobs <= 1 or total < MIN_RUNS_FOR_WORKERS:
        for done, run in enumerate(runs, start=1):
            yield draw(maker, run)
            if progress is not None:
                progress(done, total, f"render {run.name}")
        return
    # Workers need only what they draw: no RunInfo (its read-only mappings do not pickle).
    light = [replace(run, info=None, figures=None) for run in runs]
    size = max(1, -(-total // (jobs * 4)))
    chunks = [light[i:i + size] for i in range(0, total, size)]
    done = 0
    with ProcessPoolExecutor(max_workers=jobs, mp_context=fork_context()) as pool:
        for chunk, figures in zip(chunks, pool.map(_draw_chunk, chunks, [maker.smoothing] * len(chunks)), strict=True):
            for run, pair in zip(chunk, figures, strict=True):
                done += 1
                yield pair
                if progress is not None:
                    progress(done, total, f"render {run.name}")
