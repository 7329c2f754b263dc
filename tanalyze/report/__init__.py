"""Reports: one self-contained HTML page (and the same results as JSON) for a set of runs.

>>> from tanalyze.report import render_report_html
>>> html = render_report_html(tanalyze.load("sample_runs/"))   # diagnoses every run, renders the page

The flow is one-way: :func:`build_report` computes what is shown (from the full
data), :mod:`~tanalyze.report.html` draws it, :mod:`~tanalyze.report.jsonout`
serialises it. Jupyter reprs call :func:`render_report_html` /
:func:`render_run_html` with ``fragment=True``: the same renderer as the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from tanalyze.logs import Logs, RunInfo
from tanalyze.parallel import ProgressCallback
from tanalyze.report.fragments import render_check_html, render_logs_html
from tanalyze.report.html import iter_html, render_html, render_run_fragment
from tanalyze.report.jsonout import SCHEMA_ID, report_dict, write_json
from tanalyze.report.model import ReportData, RunSource, build_report, sources_from
from tanalyze.report.pipeline import report_paths

__all__ = [
    "SCHEMA_ID",
    "ReportData",
    "RunSource",
    "build_report",
    "sources_from",
    "render_report_html",
    "render_run_html",
    "render_diagnoses_html",
    "render_logs_html",
    "render_check_html",
    "report_dict",
    "write_report",
    "report_paths",
]



def _diagnose(logs: Logs) -> Mapping[str, Any]:
    from tanalyze.diagnose import diagnose  # analysis is imported only when a report needs it

    return diagnose(logs)


def _data(source: Logs | ReportData, diagnoses: Mapping[str, Any] | None, **options: Any) -> ReportData:
    if isinstance(source, ReportData):
        return source
    if diagnoses is None:
        diagnoses = _diagnose(source)
    return build_report(source, diagnoses, **options)


def render_report_html(
    source: Logs | ReportData,
    diagnoses: Mapping[str, Any] | None = None,
    *,
    fragment: bool = False,
    title: str | None = None,
    smoothing: float = 0.6,
    progress: ProgressCallback | None = None,
) -> str:
    """The HTML report of ``source`` (a :class:`Logs`, diagnosed here unless ``diagnoses`` is given).

    ``fragment=True`` returns a ``<div>`` with its own scoped style and no
    script, for Jupyter; otherwise a whole page with its JSON embedded.
    """
    options: dict[str, Any] = {"smoothing": smoothing}
    if title is not None:
        options["title"] = title
    data = _data(source, diagnoses, **options)
    return render_html(data, fragment=fragment, embed_json=None if fragment else report_dict(data), progress=progress)


def render_run_html(
    diagnosis: Any,
    scalars: Logs | pd.DataFrame | None = None,
    *,
    info: RunInfo | None = None,
    smoothing: float = 0.6,
    fragment: bool = True,
) -> str:
    """One run's section: its diagnosis (a ``RunDiagnosis`` or its ``to_dict()``) drawn over its curves.

    ``scalars`` is the run's tidy table (or a :class:`Logs` holding it). Without
    it, the loss curves a ``RunDiagnosis`` keeps (its ``curves``) are drawn; a
    plain dict then gives findings without figures.
    """
    d = diagnosis.to_dict() if hasattr(diagnosis, "to_dict") else dict(diagnosis)
    name = str(d.get("run") or "run")
    if isinstance(scalars, Logs):
        info = info or scalars.runs.get(name)
        frame = scalars.scalars_of(name) if name in scalars.runs else scalars.scalars.iloc[0:0]
    elif scalars is not None:
        frame = scalars[scalars["run"] == name] if "run" in scalars.columns and (scalars["run"] == name).any() else scalars
    else:
        frame = _frame_of_curves(name, getattr(diagnosis, "curves", None) or {})
    data = build_report([RunSource(name, frame, info, d)], smoothing=smoothing, title=name)
    if fragment:
        return render_run_fragment(data, 1)
    return render_html(data, embed_json=report_dict(data))


def render_diagnoses_html(
    diagnoses: Mapping[str, Any],
    logs: Logs | None = None,
    *,
    sections: bool = True,
    smoothing: float = 0.6,
    title: str | None = None,
) -> str:
    """The report fragment of already computed diagnoses (run name → ``RunDiagnosis``), for Jupyter.

    Curves come from ``logs`` when given, else from what each ``RunDiagnosis`` keeps
    (its ``curves``). ``sections=False`` shows the summary of the runs without each
    run's own section (quick and small for many runs).
    """
    if logs is not None:
        sources = sources_from(logs, diagnoses)
    else:
        sources = [RunSource(name, _frame_of_curves(name, getattr(d, "curves", None) or {}), None, d)
                   for name, d in diagnoses.items()]
    count = len(sources)
    options: dict[str, Any] = {"smoothing": smoothing,
                               "title": title or f"Diagnosis of {count} run{'' if count == 1 else 's'}"}
    return render_html(build_report(sources, **options), fragment=True, sections=sections, jobs=1)


def _frame_of_curves(name: str, curves: Mapping[str, Any]) -> pd.DataFrame:
    """A tidy table from ``Curve`` objects (anything with ``tag``, ``steps``, ``values``)."""
    from tanalyze.schema import concat_frames, empty_scalars, scalar_frame

    frames = [
        scalar_frame(run=name, tag=[str(c.tag)] * len(c.steps), step=c.steps, value=c.values)
        for c in curves.values()
        if hasattr(c, "steps") and len(c.steps)
    ]
    return concat_frames(frames) if frames else empty_scalars()


def write_report(
    data: ReportData,
    html_path: str | os.PathLike[str] | None = None,
    json_path: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
) -> dict[str, int]:
    """Write the HTML page and/or the JSON file; return their sizes in bytes by kind.

    ``jobs``: processes drawing figures (None: as many as useful, 1: this process only).
    """
    sizes: dict[str, int] = {}
    report = report_dict(data)
    if json_path is not None:
        sizes["json"] = write_json(report, json_path)
    if html_path is not None:
        pieces = iter_html(data, embed_json=report, progress=progress, jobs=jobs)
        with open(html_path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(pieces)  # streamed: the page is never whole in memory
        sizes["html"] = os.path.getsize(html_path)
    return sizes
