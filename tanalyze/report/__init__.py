"""Reports: one self-contained HTML page (and the same results as JSON) for a set of runs.

>>> report = tanalyze.report("sample_runs/")     # reads and diagnoses every run: a Report
>>> report.save_html("report.html"); report.save_json("report.json"); report.to_json()
>>> tanalyze.report(logs)                         # a Logs (diagnosed here), diagnoses, one RunDiagnosis

The flow is one-way: :func:`build_report` computes what is shown (from the full
data), :mod:`~tanalyze.report.html` draws it, :mod:`~tanalyze.report.jsonout`
serialises it; :class:`Report` (:mod:`~tanalyze.report.api`) holds the result and
is what Jupyter displays. This package is callable: ``tanalyze.report(...)`` is
:func:`~tanalyze.report.api.make_report`. The render functions of earlier releases
(``render_report_html``, ``render_run_html``, ``render_diagnoses_html``,
``write_report``) are deprecated aliases, kept for one release.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from tanalyze.logs import Logs, RunInfo
from tanalyze.parallel import ProgressCallback
from tanalyze.report.api import Report, make_report
from tanalyze.report.fragments import render_check_html, render_logs_html
from tanalyze.report.jsonout import SCHEMA_ID, report_dict
from tanalyze.report.model import ReportData, RunSource, build_report, sources_from
from tanalyze.report.pipeline import report_paths

__all__ = [
    "SCHEMA_ID",
    "Report",
    "make_report",
    "ReportData",
    "RunSource",
    "build_report",
    "sources_from",
    "render_logs_html",
    "render_check_html",
    "report_dict",
    "report_paths",
    # deprecated, kept for one release:
    "render_report_html",
    "render_run_html",
    "render_diagnoses_html",
    "write_report",
]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"tanalyze.report.{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=3)


def render_report_html(
    source: Logs | ReportData,
    diagnoses: Mapping[str, Any] | None = None,
    *,
    fragment: bool = False,
    title: str | None = None,
    smoothing: float = 0.6,
    progress: ProgressCallback | None = None,
) -> str:
    """Deprecated: ``tanalyze.report(source, diagnoses).to_html(fragment=...)``."""
    _deprecated("render_report_html", "tanalyze.report(logs).to_html()")
    report = make_report(source, diagnoses, title=title, smoothing=smoothing)
    if fragment:
        from tanalyze.report.html import render_html

        return render_html(report.data, fragment=True, progress=progress)
    return report.to_html(progress=progress)


def render_run_html(
    diagnosis: Any,
    scalars: Logs | pd.DataFrame | None = None,
    *,
    info: RunInfo | None = None,
    smoothing: float = 0.6,
    fragment: bool = True,
) -> str:
    """Deprecated: ``tanalyze.report(diagnosis, scalars=...).to_html(fragment=True)``."""
    _deprecated("render_run_html", "tanalyze.report(diagnosis).to_html(fragment=True)")
    return make_report(diagnosis, scalars=scalars, info=info, smoothing=smoothing).to_html(fragment=fragment)


def render_diagnoses_html(
    diagnoses: Mapping[str, Any],
    logs: Logs | None = None,
    *,
    sections: bool = True,
    smoothing: float = 0.6,
    title: str | None = None,
) -> str:
    """Deprecated: ``tanalyze.report(diagnoses, scalars=logs, sections=...).to_html(fragment=True)``."""
    _deprecated("render_diagnoses_html", "tanalyze.report(diagnoses).to_html(fragment=True)")
    report = make_report(dict(diagnoses), scalars=logs, sections=sections, smoothing=smoothing, title=title)
    return report.to_html(fragment=True)


def write_report(
    data: ReportData,
    html_path: str | os.PathLike[str] | None = None,
    json_path: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
) -> dict[str, int]:
    """Deprecated: ``Report(data).save(html_path, json_path)`` (or ``.save_html`` / ``.save_json``)."""
    _deprecated("write_report", "Report.save_html() / Report.save_json()")
    return Report(data).save(html_path, json_path, progress=progress, jobs=jobs)


class _CallableModule(types.ModuleType):
    """This package, callable: ``tanalyze.report(path_or_logs, ...)`` makes a :class:`Report`
    (the package keeps its name on ``tanalyze``, so a function of that name would be replaced by it)."""

    def __call__(self, source: Any, diagnoses: Mapping[str, Any] | None = None, **options: Any) -> Report:
        return make_report(source, diagnoses, **options)


sys.modules[__name__].__class__ = _CallableModule
__signature__ = inspect.signature(make_report)  # what help() and inspect show for tanalyze.report(...)
