"""Jupyter displays of loaded logs, check reports and sweeps, drawn with the report's templates and style.

Diagnoses are shown by :class:`~tanalyze.report.api.Report` (``tanalyze.report(diagnoses)``);
this module adds the results the report page has no section of their own for (a sweep's section, alone). Everything from logs goes through autoescaping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from tanalyze.report.html import STYLE, _render
from tanalyze.report.sweep import sweep_context

if TYPE_CHECKING:
    from tanalyze.analysis.sweep import SweepResult
    from tanalyze.checks import CheckReport
    from tanalyze.logs import Logs

__all__ = ["render_logs_html", "render_check_html", "render_sweep_html", "MAX_ROWS"]

#: Runs (or rule results) listed before the rest are counted; a repr must stay quick and small.
MAX_ROWS = 500


def render_logs_html(logs: Logs) -> str:
    """What was loaded: one row per run (format, files, tags, points, steps, warnings, restarts)."""
    counts = logs._run_counts()
    rows = []
    for index, (name, info) in enumerate(logs.runs.items(), start=1):
        if index > MAX_ROWS:
            break
        tags, points, first, last = counts.get(name, (0, 0, None, None))
        rows.append({
            "index": index, "name": name, "format": info.format, "files": len(info.files), "tags": tags,
            "points": points, "first": first, "last": last,
            "warnings": [w.to_dict() for w in info.warnings], "restarts": [r.to_dict() for r in info.restarts],
            "phases": [p.to_dict() for p in info.phases],
        })
    context = {
        "style": Markup(STYLE),
        "root": logs.root,
        "runs": len(logs.runs),
        "points": len(logs.scalars),
        "histograms": len(logs.histograms),
        "rows": rows,
        "unrecognized": len(logs.unrecognized),
        "skipped": len(logs.skipped),
    }
    return _render("logs.html.j2", context)


def render_check_html(report: CheckReport) -> str:
    """The outcome of a check: passed or failed, counts by status, one row per (run, rule)."""
    rules: list[dict[str, Any]] = [r.to_dict() for r in report.rules[:MAX_ROWS]]
    context = {
        "style": Markup(STYLE),
        "passed": report.passed,
        "candidate": report.candidate,
        "baseline": report.baseline,
        "counts": [(status, n) for status, n in report.counts().items() if n],
        "rules": rules,
        "more": max(0, len(report.rules) - MAX_ROWS),
    }
    return _render("check.html.j2", context)


def render_sweep_html(result: SweepResult) -> str:
    """A sweep's analysis: the report's sweep section alone, with its style."""
    return _render("sweep_fragment.html.j2", {"style": Markup(STYLE), "experiments": sweep_context(result.experiments),
                                              "skipped": list(result.skipped)})
