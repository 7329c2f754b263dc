"""From paths to a report, one run at a time: read → diagnose → summarise → draw, over worker processes.

The per-run pipeline is a pure function of the run's files, so it is mapped over
the discovered runs by :func:`tanalyze.parallel.map_runs` (worker processes, or a
Dask cluster; through the incremental cache); only the cross-run parts (names, seed groups, compare charts, the page) are done
here afterwards. Runs are discovered, read, named and diagnosed exactly as
:func:`tanalyze.load` and :func:`tanalyze.diagnose` do, through their public
building blocks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from tanalyze.analysis.results import to_jsonable
from tanalyze.cache import Cache, resolve_cache
from tanalyze.cache.results import files_stamp, load_entry, results_key, save_results
from tanalyze.discover import RunSpec
from tanalyze.errors import InputError
from tanalyze.logs import discover_runs, failed_result, read_run
from tanalyze.parallel import Failure, ProgressCallback, map_runs
from tanalyze.report import parallel
from tanalyze.report.chartdata import STATIC_FIGURES_MAX_RUNS, chart_columns, run_chart
from tanalyze.report.figures import FigureMaker
from tanalyze.report.html import chart_text
from tanalyze.report.jsonout import run_dict, run_digest, run_text
from tanalyze.report.model import ReportData, RunSource, RunView, _run_view, _unique_names, assemble
from tanalyze.report.runcache import dump_views, load_views

__all__ = ["report_paths"]



def _spec_files(spec: RunSpec) -> tuple[list[str], str]:
    files = [f for part in spec.part_specs() for f in part.files]
    return files, spec.directory


def _cached(spec: RunSpec, roles: Mapping[str, Any] | None,
            cache: Cache | None) -> tuple[tuple[list[Any], Any, Any] | None, Any]:
    """What the results cache holds for this run's files as they are now (its diagnoses, the views and their
    arrays; None: not cached), and what to store them under."""
    if cache is None:
        return None, None
    from tanalyze.diagnose import ANALYSIS_VERSION

    files, directory = _spec_files(spec)
    key = results_key(spec.name, spec.format, files, directory, analysis=ANALYSIS_VERSION,
                      options={"roles": dict(roles) if roles else None, "parts": len(spec.parts)})
    stamp = files_stamp(files, directory)  # before reading: a file growing meanwhile is seen next time
    found = load_entry(cache, key, stamp)
    if found is None:
        return None, (key, stamp)
    header, arrays = found
    return (header["results"], header.get("extra"), arrays), (key, stamp)


def _finish(view: RunView, maker: FigureMaker | None, columns: int | None = None) -> RunView:
    """The view with its static figures drawn (with ``maker``) and its chart data made (for ``columns``)."""
    if maker is not None and view.figures is None:
        view = replace(view, figures=parallel.draw(maker, view))
    if columns is not None and (view.chart is None or view.chart[0] != columns):
        view = replace(view, chart=(columns, chart_text(run_chart(view, columns))))
    if columns is not None and view.json is None:
        d = run_dict(view)
        view = replace(view, json=(run_digest(d), run_text(d)))
    return view


def _process(task: tuple[int, RunSpec], roles: Mapping[str, Any] | None, maker: FigureMaker | None,
             cache: Cache | None = None, error: str | None = None, smoothing: float | None = None,
             columns: int | None = None) -> list[RunView]:
    """Read, diagnose, summarise and draw one discovered run (a file may hold several). With ``error``
    (its reading failed in a worker), the run is shown with no points and that error as its warning.
    When the run's files did not change since its last report, its views (diagnoses, summaries, curves of
    the tags with a role, static figures drawn with the same options) come from the results cache and its
    scalars are not read at all."""
    from tanalyze.diagnose import diagnose_info

    position, spec = task
    figures_of = {"index": position, "smoothing": smoothing} if maker is not None else None
    found, store = (None, None) if error is not None else _cached(spec, roles, cache)
    if found is not None:
        diagnoses, extra, arrays = found
        kept = load_views(extra, arrays, diagnoses, figures_of=figures_of)
        if kept is not None:
            done = [_finish(view, maker, columns) for view in kept]
            if any(a.figures is not b.figures or a.chart is not b.chart or a.json is not b.json
                   for a, b in zip(kept, done, strict=True)):  # made now (other options): kept for next time
                extra, arrays = dump_views(done, figures_of=figures_of)
                save_results(cache, *store, diagnoses, extra=extra, arrays=arrays)
            return done
    cached = None if found is None else found[0]
    results = [failed_result(spec, error)] if error is not None else read_run(spec, cache=cache)
    if cached is not None and len(cached) != len(results):
        cached = None
    made = []
    views = []
    for part, result in enumerate(results):
        info = result.info
        if cached is not None:
            # how the run ended depends on the clock too (a run still being written): never from the cache
            diagnosis = {**cached[part], "status": to_jsonable(info.status.to_dict())}
        else:
            diagnosis = to_jsonable(diagnose_info(
                result.scalars, info, histograms=result.histograms if result.has_histograms else None, roles=roles,
            ).to_dict())
            made.append(diagnosis)
        # Plain dicts instead of read-only mappings, so that the run can travel between processes.
        info = replace(info, hparams=dict(info.hparams), text=dict(info.text))
        # A provisional index unique in the report: figure ids are salted with it.
        view = _run_view(position * 1000 + part + 1, RunSource(info.name, result.scalars, info, diagnosis))
        views.append(_finish(view, maker, columns))
    if store is not None:
        extra, arrays = dump_views(views, figures_of=figures_of)
        save_results(cache, *store, cached if cached is not None else made, extra=extra, arrays=arrays)
    return views


def _process_task(task: tuple[int, RunSpec], *, roles: Mapping[str, Any] | None, smoothing: float,
                  cache: Cache | None, static: bool = True, columns: int | None = None) -> list[RunView]:
    """The per-run task mapped over worker processes (one figure maker per worker process, reused across runs).
    ``static=False``: no static figures (a report of many runs; its page draws charts from data)."""
    return _process(task, roles, parallel.worker_maker(smoothing) if static else None, cache, smoothing=smoothing,
                    columns=columns)


def report_paths(
    paths: Sequence[str | os.PathLike[str]],
    *,
    formats: Sequence[str] | None = None,
    roles: Mapping[str, str] | None = None,
    title: str | None = None,
    smoothing: float = 0.6,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    cache: Cache | str | os.PathLike[str] | bool = True,
    client: Any = None,
    join: bool | None = None,
) -> ReportData:
    """Read and diagnose every run under each path, and compute the report of all of them.

    Runs of equal name under different paths are told apart by the path's name.
    ``jobs``: processes for the per-run work (None: as many as useful; 1: this
    process only); ``cache`` and ``client`` as for :func:`tanalyze.load`. A run
    whose work fails unexpectedly is shown with the error as its warning. Raises :class:`~tanalyze.errors.InputError` (or
    ``NoLogsError``) for a path that does not exist or holds no logs, before
    reading anything.
    """
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing weight must be in [0, 1), got {smoothing}")
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"{os.fspath(path)}: no such file or folder")
    tasks: list[tuple[int, RunSpec]] = []
    labels_of: list[str] = []
    not_read: list[Any] = []
    cache = resolve_cache(cache)
    for path in paths:
        discovery = discover_runs(path, formats=formats, join=join, cache=cache if cache is not None else False)
        label = os.path.basename(os.path.normpath(os.fspath(path))) or os.fspath(path)
        not_read.extend(discovery.not_read)
        for spec in discovery.runs:
            tasks.append((len(tasks), spec))
            labels_of.append(label)
    roles = dict(roles) if roles else None
    import tanalyze.diagnose  # noqa: F401  (imported before jobs fork, not once in each of them)

    done_views = _map(tasks, roles, smoothing, jobs, progress, cache, client)
    views: list[RunView] = []
    labels: list[str] = []
    for (position, _), found in zip(tasks, done_views, strict=True):
        views.extend(found)
        labels.extend([labels_of[position]] * len(found))
    names = _unique_names(views, labels)
    used = {f for view in views if view.info is not None for f in view.info.files}
    options: dict[str, Any] = {"smoothing": smoothing, "inputs": [os.fspath(p) for p in paths],
                               "not_read": [n for n in not_read if n.path not in used], "cache": cache}
    if title is not None:
        options["title"] = title
    return assemble(views, names, **options)


def _map(tasks: list[tuple[int, RunSpec]], roles: Mapping[str, Any] | None, smoothing: float,
         jobs: int | None, progress: ProgressCallback | None, cache: Cache | None,
         client: Any) -> list[list[RunView]]:
    static = len(tasks) <= STATIC_FIGURES_MAX_RUNS
    columns = chart_columns(len(tasks))  # the page's (a file holding several runs may change it: then made again)
    task = partial(_process_task, roles=roles, smoothing=smoothing, cache=cache, static=static, columns=columns)
    results = map_runs(task, tasks, [spec.name for _, spec in tasks], jobs=jobs, client=client,
                       progress=progress, preload=("tanalyze.report.pipeline",))
    maker = None
    out = []
    for item, result in zip(tasks, results, strict=True):
        if isinstance(result, Failure):
            maker = maker or (parallel.worker_maker(smoothing) if static else None)
            result = _process(item, roles, maker, error=result.error)
        out.append(result)
    return out
