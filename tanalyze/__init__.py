"""tanalyze: post-hoc analysis of ML training logs.

>>> import tanalyze
>>> logs = tanalyze.load("sample_runs/")        # every run under the folder
>>> logs.scalars.head()                         # tidy: run, tag, step, value, wall_time
"""

from __future__ import annotations

__version__ = "0.1.0"

from tanalyze.discover import RunSpec, discover
from tanalyze.errors import ConfigError, FormatError, InputError, NoLogsError, TanalyzeError
from tanalyze.logs import Logs, RunInfo, load, read_run
from tanalyze.readers import ReadWarning, Restart

__all__ = [
    "__version__",
    "load",
    "discover",
    "read_run",
    "Logs",
    "RunInfo",
    "RunSpec",
    "ReadWarning",
    "Restart",
    "TanalyzeError",
    "InputError",
    "NoLogsError",
    "FormatError",
    "ConfigError",
]
