"""Registers the report's renderers as the Jupyter display of the data types (see :mod:`tanalyze._display`)."""

from __future__ import annotations

from tanalyze._display import register
from tanalyze.report.api import make_report
from tanalyze.report.fragments import render_check_html, render_logs_html, render_sweep_html

#: Diagnoses of at most this many runs show each run's section in Jupyter; more show the summary only.
REPR_SECTIONS_UP_TO = 3

register("Logs", render_logs_html)
register("RunDiagnosis", lambda diagnosis: make_report(diagnosis).to_html(fragment=True))
register("Diagnoses", lambda diagnoses: make_report(
    dict(diagnoses), sections=len(diagnoses) <= REPR_SECTIONS_UP_TO).to_html(fragment=True))
register("CheckReport", render_check_html)
register("SweepResult", render_sweep_html)
