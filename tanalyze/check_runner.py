"""From paths (or loaded :class:`~tanalyze.logs.Logs`) to a :class:`~tanalyze.checks.CheckReport`:
load, diagnose, summarise, apply the rules.

>>> report = tanalyze.check("runs/new", baseline="runs/old")
>>> report.passed, report.counts()
>>> report.plot()                      # candidate throughput against the baseline's
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tanalyze.baseline import Baseline, RunSummary, summarize_run
from tanalyze.checks import CheckPolicy, CheckReport, run_checks
from tanalyze.config import Config, load_config
from tanalyze.errors import InputError
from tanalyze.logs import Logs, ProgressCallback

__all__ = ["summarize_path", "load_baseline", "check"]


def summarize_path(
    path: str | os.PathLike[str] | Logs,
    *,
    roles: Mapping[str, str] | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    cache: Any = True,
    client: Any = None,
) -> list[RunSummary]:
    """Read (unless ``path`` is already a :class:`Logs`) and diagnose every run, and summarise each for the rules.

    A path is read run by run in workers (see :mod:`tanalyze.pipeline`); loaded logs are diagnosed here.
    """
    if not isinstance(path, Logs):
        from tanalyze.pipeline import summarize_path as summarize

        return summarize(path, roles=roles, jobs=jobs, cache=cache, client=client, progress=progress)
    from tanalyze.diagnose import diagnose

    diagnoses = diagnose(path, roles=dict(roles) if roles else None)
    return [summarize_run(path.scalars_of(name), d.to_dict(), fmt=path.runs[name].format) for name, d in diagnoses.items()]


def load_baseline(
    path: str | os.PathLike[str] | Logs, *, roles: Mapping[str, str] | None = None, **engine: Any
) -> Baseline:
    """A baseline from a file written by ``tanalyze baseline save``, a run folder, or loaded :class:`Logs`."""
    if isinstance(path, Logs):
        return Baseline.from_summaries(_source(path), summarize_path(path, roles=roles))
    target = Path(path)
    if not target.exists():
        raise InputError(f"baseline {target}: no such file or folder")
    if target.is_file() and target.suffix == ".json":
        return Baseline.load(target)
    return Baseline.from_summaries(str(path), summarize_path(target, roles=roles, **engine))


def _source(logs: Logs) -> str:
    """How a check names loaded logs: their folder, and the runs when only some were selected."""
    names = list(logs.runs)
    shown = ", ".join(names[:3]) + (f", … ({len(names)} runs)" if len(names) > 3 else "")
    return f"{logs.root} [{shown}]" if logs.root else shown


def check(
    candidate: str | os.PathLike[str] | Logs,
    *,
    baseline: str | os.PathLike[str] | Logs | Baseline | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    roles: Mapping[str, str] | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    cache: Any = True,
    client: Any = None,
) -> CheckReport:
    """Run every enabled rule on every run of ``candidate``, against ``baseline`` when given.

    Args:
        candidate: a folder or file of logs, or :class:`Logs` already loaded (``logs.select(...)``).
        baseline: the same kinds, or a :class:`~tanalyze.baseline.Baseline` / the path of a
            ``tanalyze baseline save`` file. Several baseline runs are taken as seeds of one
            job: their spread is the noise band.
        config: a :class:`~tanalyze.config.Config` or the path of a ``tanalyze.toml``
            (its ``[check]`` table sets thresholds; default: the one in the working folder, if any).
        roles: role overrides, e.g. ``{"throughput": "perf/samples_per_sec"}``.
        progress: called as ``progress(done, total, run_name)`` while reading.
        jobs, cache, client: how runs are read (see :func:`tanalyze.load`).

    Returns:
        A :class:`~tanalyze.checks.CheckReport`; ``report.passed`` is False when a rule failed.

    Raises:
        InputError: a path does not exist; ConfigError: a bad config or baseline file.
    """
    engine = {"jobs": jobs, "cache": cache, "client": client}
    if not isinstance(config, Config):
        config = load_config(config)
    merged_roles = {**config.roles, **(roles or {})}
    policy = CheckPolicy.from_config(config.check, source=config.source or "config")
    base = (baseline if isinstance(baseline, Baseline) or baseline is None
            else load_baseline(baseline, roles=merged_roles, **engine))
    summaries = summarize_path(candidate, roles=merged_roles, progress=progress, **engine)
    source = _source(candidate) if isinstance(candidate, Logs) else str(candidate)
    return run_checks(summaries, base, policy, candidate_source=source)
