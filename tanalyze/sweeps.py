"""Sweeps from logs: every run's settings, metric curve and verdict, handed to :mod:`tanalyze.analysis.sweep`.

>>> result = tanalyze.sweep("runs/lr_sweep")        # or a Logs already loaded
>>> result                                           # in Jupyter: importance, heat map, best configuration
>>> result.plot()

The metric is the validation loss role of each run (lower is better), or in a reinforcement-learning run without one
its reward role (higher is better), unless ``metric`` names a tag; its direction is inferred from its name (accuracy, mAP, F1, BLEU … are higher-is-better) unless ``higher`` says.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.analysis.hparams import normalise_hparams
from tanalyze.analysis.sweep import SweepResult, SweepRun, analyse_sweep, experiment_dict
from tanalyze.logs import Logs

__all__ = ["sweep", "sweep_run", "metric_tag", "sweep_dict", "SWEEP_SCHEMA_ID"]

SWEEP_SCHEMA_ID = "tanalyze.sweep/1"


def metric_tag(tags: set[str] | frozenset[str], metric: str | None, roles: Mapping[str, Any]) -> str | None:
    """The tag scored for one run: ``metric`` as logged (or the one tag ending in ``/metric``, any case), else the
    validation loss role, else the reward role (a summed role ``a+b`` is not a logged tag: no metric)."""
    if metric is None:
        found = [t for t in (roles.get("val_loss"), roles.get("reward")) if isinstance(t, str) and t in tags]
        return found[0] if found else None
    if metric in tags:
        return metric
    wanted = metric.lower()
    close = [t for t in tags if t.lower() == wanted or t.lower().endswith("/" + wanted)]
    return close[0] if len(close) == 1 else None


def sweep_run(name: str, frame: pd.DataFrame, info: Any, diagnosis: Mapping[str, Any] | Any,
              metric: str | None = None) -> SweepRun:
    """One run as the sweep analysis takes it: ``frame`` is its tidy rows, ``info`` its ``RunInfo`` (or None),
    ``diagnosis`` its ``RunDiagnosis`` or that as a dict."""
    d = diagnosis.to_dict() if hasattr(diagnosis, "to_dict") else dict(diagnosis or {})
    tags = frozenset(str(t) for t in pd.unique(frame["tag"])) if len(frame) else frozenset()
    tag = metric_tag(tags, metric, d.get("roles") or {})
    steps = values = np.empty(0)
    if tag is not None:
        rows = frame[frame["tag"] == tag]
        order = np.argsort(rows["step"].to_numpy(), kind="stable")
        steps = rows["step"].to_numpy(dtype=np.float64)[order]
        values = rows["value"].to_numpy(dtype=np.float64)[order]
    verdict = (d.get("verdict") or {}).get("label") or "insufficient_data"
    overfitting = d.get("overfitting") or {}
    return SweepRun(
        name=name, config=normalise_hparams(info.hparams) if info is not None else {},
        source=info.format if info is not None else "", tags=tags, metric_tag=tag, steps=steps, values=values,
        label=str(verdict), overfit=bool(isinstance(overfitting, Mapping) and overfitting.get("detected")),
    )


def sweep(
    logs: Logs | str | os.PathLike[str],
    *,
    metric: str | None = None,
    higher: bool | None = None,
    target: str = "final",
    diagnoses: Mapping[str, Any] | None = None,
) -> SweepResult:
    """Every experiment among the runs of ``logs`` (a :class:`Logs` or a path, loaded with :func:`tanalyze.load`):
    settings that vary, seed groups with bands, what drives ``metric``, the best configuration, instability.

    ``target``: ``"final"`` (each run's last value) or ``"best"``. ``diagnoses`` (run → diagnosis) saves
    diagnosing again when already done.
    """
    if not isinstance(logs, Logs):
        from tanalyze.logs import load

        logs = load(logs)
    if diagnoses is None:
        from tanalyze.diagnose import diagnose

        diagnoses = diagnose(logs)
    by_run: dict[str, pd.DataFrame] = {}
    if len(logs.scalars):
        for name, rows in logs.scalars.groupby("run", observed=True, sort=False):
            by_run[str(name)] = rows
    empty = logs.scalars.iloc[0:0]
    runs = [sweep_run(name, by_run.get(name, empty), info, diagnoses.get(name) or {}, metric)
            for name, info in logs.runs.items()]
    label = os.path.basename(os.path.normpath(logs.root)) if logs.root else None
    return analyse_sweep(runs, metric=metric, higher=higher, target=target, name=label)


def sweep_dict(result: SweepResult, source: str = "") -> dict[str, Any]:
    """``tanalyze sweep --json``: the experiments in the shape of the report's ``experiments[]``."""
    from tanalyze._version import __version__

    return {"schema": SWEEP_SCHEMA_ID, "tanalyze_version": __version__, "input": source,
            "experiments": [experiment_dict(e) for e in result.experiments], "skipped": list(result.skipped)}
