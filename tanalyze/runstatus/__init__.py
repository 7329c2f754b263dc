"""Run status: did a run finish, and if not, why did it stop (crash, out of memory, kill, distributed hang).

:mod:`tanalyze.runstatus.scan` reads bounded pieces of a run's files; :mod:`tanalyze.runstatus.model`
holds the frozen :class:`RunStatus` and the pure classifier.
"""

from tanalyze.runstatus.model import (
           FAILED_STATUSES,
           STATUSES,
           Evidence,
           RunStatus,
           Signal,
           TrackerEnd,
           WandbExit,
           classify,
)
from tanalyze.runstatus.scan import (
           TAIL_BYTES,
           following,
           is_console_log,
           run_status,
           scan_console,
           tracker_end,
           trainer_end,
           wandb_exit,
)

__all__ = ["FAILED_STATUSES", "STATUSES", "Evidence", "RunStatus", "Signal", "TrackerEnd", "WandbExit", "classify",
           "TAIL_BYTES", "following", "is_console_log", "run_status", "scan_console", "trainer_end",
           "tracker_end", "wandb_exit"]
