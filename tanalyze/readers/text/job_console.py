"""A job's console log that holds no metric line but says how the job ended.

A job that runs out of memory while it allocates, fails an assertion on its
configuration or is cancelled in the queue leaves only its console (``slurm-*.out``,
``train.log`` …): banners, a traceback or a CUDA error, no step. That job is still a
run its user wants listed, with how it ended. This reader claims nothing by its
content: discovery (:func:`tanalyze.discover.discover`) hands it the console logs no
other reader took, no run took as its console, and whose tail shows the job failed
(crashed, out of memory, killed, hung); the run's status is read from the file as
every run's is.
"""

from __future__ import annotations

from pathlib import Path

from tanalyze.readers.base import Reader, RunData
from tanalyze.readers.text.console import parse_console_file

__all__ = ["JOB_CONSOLE_FORMAT", "JobConsoleReader"]

JOB_CONSOLE_FORMAT = "job-console"

#: notes of the console reading that the run's own note already says
_SAID_ABOVE = ("no known console format recognised", "carry no metrics")
_NOTE = ("the job's console holds no line of a known metric format: the job ended before it logged one "
         "(its status says how), or its lines need --pattern REGEX")


class JobConsoleReader(Reader):
    name = JOB_CONSOLE_FORMAT
    description = "a failed job's console log without metric lines (the run is how the job ended)"

    def sniff(self, path: Path, head: bytes) -> bool:
        return False  # given its files by discovery, from what their tails say (see the module doc)

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        """One run with what the console holds besides metrics: its tracebacks (how many, the last exception) and
        what cleaning it took (NUL bytes, ``\\r`` redraws)."""
        notes = [_NOTE]
        for path in files:
            notes += [note for note in parse_console_file(path).notes if not any(said in note for said in _SAID_ABOVE)]
        return [RunData(notes=notes)]
