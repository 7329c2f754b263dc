"""tanalyze: post-hoc analysis of ML training logs.

>>> import tanalyze
>>> logs = tanalyze.load("sample_runs/")        # every run under the folder
>>> logs.scalars.head()                         # tidy: run, tag, step, value, wall_time
>>> tanalyze.from_frame(df)                     # Logs from a DataFrame: tbparse, W&B history, MLflow, wide
>>> tanalyze.diagnose(logs)                     # verdict, key steps and findings per run
>>> tanalyze.check("runs/new", baseline="runs/old")   # the CI gate's rules: pass / warn / fail / skip
>>> tanalyze.run_status(["slurm-123.out"])      # how a job ended: finished, crashed, oom, killed, ...
>>> tanalyze.sweep("runs/lr_sweep")              # many runs as one experiment: what drives the result
>>> tanalyze.report("sample_runs/").save_html("report.html")   # the HTML report (and .save_json, .to_json)
"""

from __future__ import annotations

from typing import Any

from tanalyze._version import __version__
from tanalyze.analysis.sweep import SweepResult

# Imported eagerly so that the function `diagnose` shadows its submodule `tanalyze.diagnose`
# (analysis modules import scipy on first use, so this stays cheap).
from tanalyze.check_runner import check
from tanalyze.checks import CheckReport
from tanalyze.diagnose import Diagnoses, RunDiagnosis, diagnose, diagnose_run
from tanalyze.discover import RunSpec, discover
from tanalyze.errors import ConfigError, FormatError, InputError, NoLogsError, TanalyzeError
from tanalyze.frames import from_frame
from tanalyze.logs import Logs, RunInfo, load, read_run
from tanalyze.readers import Phase, ReadWarning, Restart
from tanalyze.roles import Roles, resolve_roles
from tanalyze.runstatus import RunStatus, run_status
from tanalyze.sweeps import sweep

__all__ = [
    "__version__",
    "load",
    "from_frame",
    "discover",
    "read_run",
    "Logs",
    "RunInfo",
    "RunSpec",
    "ReadWarning",
    "Restart",
    "Phase",
    "TanalyzeError",
    "InputError",
    "NoLogsError",
    "FormatError",
    "ConfigError",
    "diagnose",
    "diagnose_run",
    "RunDiagnosis",
    "Diagnoses",
    "resolve_roles",
    "Roles",
    "check",
    "CheckReport",
    "RunStatus",
    "run_status",
    "sweep",
    "SweepResult",
    "report",
    "Report",
]


def __getattr__(name: str) -> Any:
    """``report`` and ``Report`` on first use: the report package (which is callable, see
    :mod:`tanalyze.report`) pulls in matplotlib and jinja2, which ``import tanalyze`` does not need."""
    if name in ("report", "Report"):
        import importlib

        package = importlib.import_module("tanalyze.report")
        return package if name == "report" else package.Report
    raise AttributeError(f"module 'tanalyze' has no attribute {name!r}")
