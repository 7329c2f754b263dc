"""The per-run pipeline as picklable tasks, mapped over runs by :func:`tanalyze.parallel.map_runs`.

Each task takes a :class:`~tanalyze.discover.RunSpec` and does all the work of
one run where it runs (a worker process or a cluster worker): read (through
the cache), and for the commands that need no raw points in the end, analyse and
reduce to the small result the command shows. The parent then holds per-run
results, not every point of every run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from tanalyze.cache import Cache, resolve_cache
from tanalyze.discover import RunSpec
from tanalyze.identity import unique_names
from tanalyze.logs import (
    RunResult,
    discover_runs,
    failed_result,
    not_read_by_runs,
    read_many_task,
    read_run,
    read_specs,
    read_task,
)
from tanalyze.parallel import Failure, ProgressCallback, map_runs

__all__ = [
    "discover_runs", "read_specs", "diagnose_path", "summarize_path", "read_task", "read_many_task", "diagnose_task",
    "summarize_task",
]



def _mapped(task, specs: Sequence[RunSpec], *, jobs, client, progress, many=None) -> list[tuple[RunSpec, Any]]:
    """(spec, result or Failure) per spec, in discovery order."""
    results = map_runs(task, specs, [s.name for s in specs], jobs=jobs, client=client, progress=progress, many=many)
    return list(zip(specs, results, strict=True))


def _diagnosed(spec: RunSpec, cache: Cache | None, options: Mapping[str, Any]) -> list[tuple[RunResult, Any]]:
    """Read one run and diagnose each of its parts."""
    from tanalyze.diagnose import diagnose_info

    return [(result, diagnose_info(result.scalars, result.info,
                                   histograms=result.histograms if result.has_histograms else None, **options))
            for result in read_run(spec, cache=cache)]


def diagnose_task(spec: RunSpec, *, cache: Cache | None, options: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """[(RunInfo, RunDiagnosis)] of one run's parts."""
    return [(result.info, diagnosis) for result, diagnosis in _diagnosed(spec, cache, options)]


def _failed_diagnosis(spec: RunSpec, error: str, options: Mapping[str, Any]):
    from tanalyze.diagnose import diagnose_info

    result = failed_result(spec, error)
    return result.info, diagnose_info(result.scalars, result.info, **options)


def diagnose_path(
    path: str | os.PathLike[str],
    *,
    formats: Iterable[str] | None = None,
    patterns: Iterable[Any] | None = None,
    jobs: int | None = None,
    cache: Cache | str | os.PathLike[str] | bool = True,
    client: Any = None,
    progress: ProgressCallback | None = None,
    join: bool | None = None,
    **options: Any,
):
    """Read and diagnose every run under ``path``, each run wholly in a worker (``options`` as for
    :func:`tanalyze.diagnose_run`). Returns :class:`~tanalyze.diagnose.Diagnoses` in discovery order."""
    from tanalyze.diagnose import Diagnoses, compare_with_siblings

    discovery = discover_runs(path, formats=formats, patterns=patterns, join=join, cache=cache)
    task = partial(diagnose_task, cache=resolve_cache(cache), options=options)
    pairs = []
    for spec, result in _mapped(task, discovery.runs, jobs=jobs, client=client, progress=progress):
        pairs.extend([_failed_diagnosis(spec, result.error, options)] if isinstance(result, Failure) else result)
    names = unique_names(info.name for info, _ in pairs)
    diagnoses = {name: d if d.run == name else replace(d, run=name) for name, (_, d) in zip(names, pairs, strict=True)}
    return Diagnoses(compare_with_siblings(diagnoses), not_read=not_read_by_runs(discovery, (info for info, _ in pairs)))


def summarize_task(spec: RunSpec, *, cache: Cache | None, roles: Mapping[str, str] | None) -> list[Any]:
    """Read, diagnose and summarise one run for the check rules: [RunSummary] of its parts."""
    from tanalyze.baseline import summarize_run

    options = {"roles": dict(roles) if roles else None}
    return [summarize_run(result.scalars, diagnosis.to_dict(), fmt=result.info.format)
            for result, diagnosis in _diagnosed(spec, cache, options)]


def summarize_path(
    path: str | os.PathLike[str],
    *,
    roles: Mapping[str, str] | None = None,
    jobs: int | None = None,
    cache: Cache | str | os.PathLike[str] | bool = True,
    client: Any = None,
    progress: ProgressCallback | None = None,
) -> list[Any]:
    """The check rules' :class:`~tanalyze.baseline.RunSummary` of every run under ``path``, in discovery order."""
    from tanalyze.baseline import summarize_run

    discovery = discover_runs(path, cache=cache)
    task = partial(summarize_task, cache=resolve_cache(cache), roles=roles)
    summaries = []
    for spec, result in _mapped(task, discovery.runs, jobs=jobs, client=client, progress=progress):
        if isinstance(result, Failure):
            _, diagnosis = _failed_diagnosis(spec, result.error, {"roles": dict(roles) if roles else None})
            result = [summarize_run(failed_result(spec, result.error).scalars, diagnosis.to_dict(), fmt=spec.format)]
        summaries.extend(result)
    names = unique_names(s.run for s in summaries)
    return [s if s.run == name else replace(s, run=name) for s, name in zip(summaries, names, strict=True)]
