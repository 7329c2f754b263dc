"""One report object: ``tanalyze.report(path_or_logs)`` → :class:`Report`, saved as HTML or JSON, shown in Jupyter.

>>> report = tanalyze.report("runs/")          # reads and diagnoses every run (through the results cache)
>>> report.save_html("report.html"); report.save_json("report.json")
>>> report                                     # in Jupyter: the same report, drawn in the notebook

Every way to get a report goes through :func:`make_report`: a path (or several),
a :class:`~tanalyze.Logs` (diagnosed here unless ``diagnoses`` is given), the
diagnoses alone (drawn over the curves each ``RunDiagnosis`` keeps), one
``RunDiagnosis``, or an already computed :class:`ReportData`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from tanalyze.logs import Logs, RunInfo
from tanalyze.parallel import ProgressCallback
from tanalyze.report.html import iter_html, render_html, render_run_fragment
from tanalyze.report.jsonout import dumps, report_dict, run_digest, write_json
from tanalyze.report.model import ReportData, RunSource, build_report, sources_from
from tanalyze.report.pipeline import report_paths
from tanalyze.text import writable

__all__ = ["Report", "make_report"]

PathLike = str | os.PathLike[str]


class Report:
    """A computed report: what the page and the JSON file show, for a set of runs.

    ``data`` is the :class:`ReportData` it draws. ``fragment`` options say how it is
    shown in a notebook (one run's section, or the summary with or without each run's section).
    """

    def __init__(self, data: ReportData, *, single_run: bool = False, sections: bool = True) -> None:
        self.data = data
        self._single_run = single_run
        self._sections = sections

    def __repr__(self) -> str:
        count = len(self.data.runs)
        return f"<Report {self.data.title!r}: {count} run{'' if count == 1 else 's'}>"

    def to_html(self, *, fragment: bool = False, progress: ProgressCallback | None = None,
                jobs: int | None = None) -> str:
        """The whole page (its JSON embedded), or with ``fragment=True`` a ``<div>`` with its own scoped
        style and no script, as Jupyter shows it."""
        if not fragment:
            return render_html(self.data, embed_json=self.to_dict(), progress=progress, jobs=jobs)
        if self._single_run and len(self.data.runs) == 1:
            return render_run_fragment(self.data, 1)
        return render_html(self.data, fragment=True, sections=self._sections, progress=progress,
                           jobs=1 if jobs is None else jobs)

    def _repr_html_(self) -> str:
        return self.to_html(fragment=True)

    def save_html(self, path: PathLike, *, progress: ProgressCallback | None = None, jobs: int | None = None) -> int:
        """Write the page (streamed: never whole in memory); its size in bytes. ``jobs`` is accepted for
        compatibility: figures not drawn where the runs were read are drawn in this process."""
        return self.save(html_path=path, progress=progress, jobs=jobs)["html"]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (the documented schema, see ``tanalyze/schemas``)."""
        return report_dict(self.data)

    def to_json(self) -> str:
        """The report as JSON text (non-finite numbers as strings, like the JSON file)."""
        return dumps(self.to_dict())

    def save_json(self, path: PathLike) -> int:
        """Write the JSON file; its size in bytes."""
        return write_json(self.to_dict(), path)

    def save(self, html_path: PathLike | None = None, json_path: PathLike | None = None, *,
             progress: ProgressCallback | None = None, jobs: int | None = None) -> dict[str, int]:
        """Write the page and/or the JSON file from one serialisation; their sizes in bytes by kind."""
        sizes: dict[str, int] = {}
        report = self.to_dict()
        if json_path is not None:
            # each run's text as encoded where it was read (and cached with it), where its content is unchanged
            runs = [run.json[1] if run.json is not None and run.json[0] == run_digest(d) else None
                    for run, d in zip(self.data.runs, report["runs"], strict=True)]
            sizes["json"] = write_json(report, json_path, runs)
        if html_path is not None:
            pieces = iter_html(self.data, embed_json=report, progress=progress, jobs=jobs)
            with open(html_path, "w", encoding="utf-8", newline="") as handle:
                handle.writelines(writable(piece) for piece in pieces)
            sizes["html"] = os.path.getsize(html_path)
        return sizes


def _is_paths(source: Any) -> bool:
    if isinstance(source, str | os.PathLike):
        return True
    return (isinstance(source, Sequence) and not isinstance(source, str | bytes) and bool(source)
            and all(isinstance(s, str | os.PathLike) for s in source))


def _frame_of_curves(name: str, curves: Mapping[str, Any]) -> pd.DataFrame:
    """A tidy table from ``Curve`` objects (anything with ``tag``, ``steps``, ``values``)."""
    from tanalyze.schema import concat_frames, empty_scalars, scalar_frame

    frames = [
        scalar_frame(run=name, tag=[str(c.tag)] * len(c.steps), step=c.steps, value=c.values)
        for c in curves.values()
        if hasattr(c, "steps") and len(c.steps)
    ]
    return concat_frames(frames) if frames else empty_scalars()


def _one_run(diagnosis: Any, scalars: Logs | pd.DataFrame | None, info: RunInfo | None, smoothing: float) -> Report:
    d = diagnosis.to_dict() if hasattr(diagnosis, "to_dict") else dict(diagnosis)
    name = str(d.get("run") or "run")
    if isinstance(scalars, Logs):
        info = info or scalars.runs.get(name)
        frame = scalars.scalars_of(name) if name in scalars.runs else scalars.scalars.iloc[0:0]
    elif scalars is not None:
        frame = scalars[scalars["run"] == name] if "run" in scalars.columns and (scalars["run"] == name).any() else scalars
    else:
        frame = _frame_of_curves(name, getattr(diagnosis, "curves", None) or {})
    return Report(build_report([RunSource(name, frame, info, d)], smoothing=smoothing, title=name), single_run=True)


def _is_diagnosis(source: Any) -> bool:
    """One run's diagnosis (a ``RunDiagnosis`` or its ``to_dict()``), not diagnoses by run name."""
    if not isinstance(source, Mapping):
        return hasattr(source, "to_dict")
    return isinstance(source, Mapping) and "verdict" in source and "run" in source


def make_report(
    source: PathLike | Sequence[PathLike] | Logs | Mapping[str, Any] | ReportData | Any,
    diagnoses: Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
    smoothing: float = 0.6,
    roles: Mapping[str, str] | None = None,
    formats: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    cache: Any = True,
    client: Any = None,
    join: bool | None = None,
    sections: bool | None = None,
    scalars: Logs | pd.DataFrame | None = None,
    info: RunInfo | None = None,
) -> Report:
    """The report of ``source``:

    - a path or several: every run under them is read and diagnosed (``formats``, ``roles``, ``jobs``,
      ``cache``, ``client``, ``join`` as for :func:`tanalyze.load`); what the CLI's ``tanalyze report`` does;
    - a :class:`~tanalyze.Logs`: diagnosed here unless ``diagnoses`` (run name → diagnosis) is given;
    - diagnoses by run name alone (a :class:`~tanalyze.Diagnoses`): drawn over the curves each keeps;
      ``sections=False`` shows only the summary in a notebook (quick for many runs);
    - one run's diagnosis (a ``RunDiagnosis`` or its dict), over ``scalars`` (its table or a ``Logs``) when given;
    - a :class:`ReportData` (already computed).

    Raises :class:`~tanalyze.errors.InputError` for a path that does not exist or holds no logs.
    """
    if isinstance(source, ReportData):
        return Report(source, sections=True if sections is None else sections)
    if _is_paths(source):
        paths = [source] if isinstance(source, str | os.PathLike) else list(source)
        data = report_paths(paths, formats=formats, roles=roles, title=title, smoothing=smoothing,
                            progress=progress, jobs=jobs, cache=cache, client=client, join=join)
        return Report(data, sections=True if sections is None else sections)
    if isinstance(source, Logs):
        if diagnoses is None:
            from tanalyze.diagnose import diagnose  # analysis is imported only when a report needs it

            diagnoses = diagnose(source, roles=roles) if roles else diagnose(source)
        options: dict[str, Any] = {"smoothing": smoothing}
        if title is not None:
            options["title"] = title
        return Report(build_report(source, diagnoses, **options), sections=True if sections is None else sections)
    if _is_diagnosis(source):
        return _one_run(source, scalars, info, smoothing)
    if isinstance(source, Mapping):
        logs = scalars if isinstance(scalars, Logs) else None
        if logs is not None:
            sources = sources_from(logs, source)
        else:
            sources = [RunSource(name, _frame_of_curves(name, getattr(d, "curves", None) or {}), None, d)
                       for name, d in source.items()]
        count = len(sources)
        data = build_report(sources, smoothing=smoothing,
                            title=title or f"Diagnosis of {count} run{'' if count == 1 else 's'}")
        return Report(data, sections=True if sections is None else sections)
    raise TypeError(f"a report is made of paths, Logs, diagnoses or ReportData, not {type(source).__name__}")

