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

import re
from pathlib import Path

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.text._reader import NO_METRIC_LINES
from tanalyze.readers.text.console import parse_console_file
from tanalyze.readers.values import short

__all__ = ["JOB_CONSOLE_FORMAT", "METRIC_LIKE_WARNING", "JobConsoleReader", "says_metrics_unread"]

JOB_CONSOLE_FORMAT = "job-console"

#: notes of the console reading that the run's own note already says
_SAID_ABOVE = ("no known console format recognised", "carry no metrics")
_NOTE = ("the job's console holds no line of a known metric format: the job ended before it logged one "
         "(its status says how), or its lines need --pattern REGEX")
#: a line that names a measure of training and gives a number soon after (``Generator Loss: 3844.17``,
#: ``[epoch:1/1200] [loss:0.2329]``): a metric line of a format no reader knows (a traceback's ``loss.backward()``
#: or ``compute_loss`` is none)
_METRIC_LIKE = re.compile(r"^[^\n]*?\b(?:loss|acc|accuracy|reward|return|ppl|perplexity|f1|mAP|dice|iou|psnr|bleu|wer)"
                          r"\b[^\n\d]{0,16}?[-+]?\.?\d[^\n]*", re.I | re.M)
#: what the warning on such lines says (diagnosis tells a job that logged unread metrics from one that logged none)
METRIC_LIKE_WARNING = "look like metric lines"
def says_metrics_unread(warnings: list[str] | tuple[str, ...]) -> bool:
    """Whether a run's read warnings say its console holds metric lines that were not read (a format no reader
    knows, or lines a text reader claimed and could not read): then the job did log metrics."""
    return any(METRIC_LIKE_WARNING in warning or NO_METRIC_LINES in warning for warning in warnings)


#: the bytes of a console scanned for such lines
_SCANNED = 16 * 1024 * 1024


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
        warnings = []
        for path in files:
            notes += [note for note in parse_console_file(path).notes if not any(said in note for said in _SAID_ABOVE)]
            warning = _metric_like_lines(path)
            if warning is not None:
                warnings.append(warning)
        return [RunData(notes=notes, warnings=warnings)]


def _metric_like_lines(path: Path) -> ReadWarning | None:
    """A warning naming the lines of ``path`` that look like metric lines (two at least), which no reader read."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(_SCANNED).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = list(_METRIC_LIKE.finditer(text))
    if len(found) < 2:
        return None
    line = text.count("\n", 0, found[0].start()) + 1
    return ReadWarning(str(path), f"{len(found):,} line(s) {METRIC_LIKE_WARNING} (a loss, an accuracy … and a "
                       f"number) in a format no reader knows, e.g. {short(found[0].group(0).strip())!r}: read them "
                       "with --pattern REGEX (named groups: step and one per metric)", f"line {line}", count=len(found))
