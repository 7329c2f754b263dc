"""From paths to a :class:`~tanalyze.checks.CheckReport`: load, diagnose, summarise, apply the rules."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tanalyze.baseline import Baseline, RunSummary, summarize_run
from tanalyze.checks import CheckPolicy, CheckReport, run_checks
from tanalyze.config import Config, load_config
from tanalyze.errors import InputError
from tanalyze.logs import load

__all__ = ["summarize_path", "load_baseline", "check"]


def summarize_path(path: str | os.PathLike[str], *, roles: Mapping[str, str] | None = None, progress=None) -> list[RunSummary]:
    """Read and diagnose every run under ``path`` and summarise each for the check rules."""
    from tanalyze.diagnose import diagnose

    logs = load(path, progress=progress)
    diagnoses = diagnose(logs, roles=dict(roles) if roles else None)
    summaries = []
    for name, diagnosis in diagnoses.items():
        summaries.append(summarize_run(logs.run(name), diagnosis.to_dict(), fmt=logs.runs[name].format))
    return summaries


def load_baseline(path: str | os.PathLike[str], *, roles: Mapping[str, str] | None = None) -> Baseline:
    """A baseline from a file written by ``tanalyze baseline save`` or from a run folder."""
    target = Path(path)
    if not target.exists():
        raise InputError(f"baseline {target}: no such file or folder")
    if target.is_file() and target.suffix == ".json":
        return Baseline.load(target)
    return Baseline.from_summaries(str(path), summarize_path(target, roles=roles))


def check(
    candidate: str | os.PathLike[str],
    *,
    baseline: str | os.PathLike[str] | Baseline | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    roles: Mapping[str, str] | None = None,
    progress=None,
) -> CheckReport:
    """Run every enabled rule on every run under ``candidate`` (against ``baseline`` when given)."""
    if not isinstance(config, Config):
        config = load_config(config)
    merged_roles = {**config.roles, **(roles or {})}
    policy = CheckPolicy.from_config(config.check, source=config.source or "config")
    base = baseline if isinstance(baseline, Baseline) or baseline is None else load_baseline(baseline, roles=merged_roles)
    summaries = summarize_path(candidate, roles=merged_roles, progress=progress)
    return run_checks(summaries, base, policy, candidate_source=str(candidate))
