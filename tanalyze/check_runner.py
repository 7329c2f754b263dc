"""From paths to a :class:`~tanalyze.checks.CheckReport`: load, diagnose, summarise, apply the rules."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tanalyze.baseline import Baseline, RunSummary
from tanalyze.checks import CheckPolicy, CheckReport, run_checks
from tanalyze.config import Config, load_config
from tanalyze.errors import InputError

__all__ = ["summarize_path", "load_baseline", "check"]


def summarize_path(
    path: str | os.PathLike[str],
    *,
    roles: Mapping[str, str] | None = None,
    progress=None,
    jobs: int | None = None,
    cache: Any = True,
    client: Any = None,
) -> list[RunSummary]:
    """Read and diagnose every run under ``path`` and summarise each for the check rules
    (each run wholly in a worker: see :mod:`tanalyze.pipeline`)."""
    from tanalyze.pipeline import summarize_path as summarize

    return summarize(path, roles=roles, jobs=jobs, cache=cache, client=client, progress=progress)


def load_baseline(path: str | os.PathLike[str], *, roles: Mapping[str, str] | None = None, **engine: Any) -> Baseline:
    """A baseline from a file written by ``tanalyze baseline save`` or from a run folder."""
    target = Path(path)
    if not target.exists():
        raise InputError(f"baseline {target}: no such file or folder")
    if target.is_file() and target.suffix == ".json":
        return Baseline.load(target)
    return Baseline.from_summaries(str(path), summarize_path(target, roles=roles, **engine))


def check(
    candidate: str | os.PathLike[str],
    *,
    baseline: str | os.PathLike[str] | Baseline | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    roles: Mapping[str, str] | None = None,
    progress=None,
    jobs: int | None = None,
    cache: Any = True,
    client: Any = None,
) -> CheckReport:
    """Run every enabled rule on every run under ``candidate`` (against ``baseline`` when given).

    ``jobs``, ``cache``, ``client``: how runs are read (see :func:`tanalyze.load`).
    """
    engine = {"jobs": jobs, "cache": cache, "client": client}
    if not isinstance(config, Config):
        config = load_config(config)
    merged_roles = {**config.roles, **(roles or {})}
    policy = CheckPolicy.from_config(config.check, source=config.source or "config")
    base = baseline if isinstance(baseline, Baseline) or baseline is None else load_baseline(baseline, roles=merged_roles,
                                                                                              **engine)
    summaries = summarize_path(candidate, roles=merged_roles, progress=progress, **engine)
    return run_checks(summaries, base, policy, candidate_source=str(candidate))
