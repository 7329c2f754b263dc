"""How a run ended, from what its files show: the frozen :class:`RunStatus` and the pure classifier.

The scanners (:mod:`tanalyze.runstatus.scan`) read a few bounded pieces of a run's files and hand
over :class:`Signal` s (a console line that matters, with where it is), the W&B exit record and the
files' times; :func:`classify` turns them into one status with its evidence. No I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["STATUSES", "FAILED_STATUSES", "Evidence", "Signal", "TrackerEnd", "WandbExit", "RunStatus", "classify"]

#: Every status, in the order the report lists them.
STATUSES = ("finished", "running", "crashed", "oom", "nccl_timeout", "killed", "unknown")
#: The statuses of a run that stopped before its end (what ``tanalyze check`` fails).
FAILED_STATUSES = frozenset({"crashed", "oom", "killed", "nccl_timeout"})

#: A run whose newest file changed less than this long ago is still running (unless it shows an end).
RUNNING_WITHIN_S = 300.0


@dataclass(frozen=True)
class Evidence:
    """One line that shows why: the file, its line number (1-based; None when not counted) and the line."""

    file: str
    line: int | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text}

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.text}"


@dataclass(frozen=True)
class Signal:
    """A console line that says something about how the run ended.

    ``kind`` is one of ``finished`` (an end marker), ``killed`` (a signal, a batch system's cancel),
    ``oom``, ``nccl`` (a collective timed out / a distributed error), ``traceback`` (the exception
    line that ends a Python traceback; ``exception`` and ``frame`` say which and where) or
    ``fatal`` (a crash outside Python: CUDA error, assertion, abort, segfault).
    """

    kind: str
    evidence: Evidence
    detail: str = ""
    exception: str = ""
    frame: str = ""
    allocation: str = ""
    #: a launcher named this the first failure of the job (torch elastic's "Root Cause" block)
    root_cause: bool = False


@dataclass(frozen=True)
class WandbExit:
    """What a W&B run record says: the exit code (None: no exit record) and the runtime in seconds."""

    file: str
    exit_code: int | None
    runtime_s: float | None = None


@dataclass(frozen=True)
class TrackerEnd:
    """What an experiment tracker's run record says of the run's end: MLflow's run status (``FINISHED``,
    ``FAILED``, ``KILLED``, ``RUNNING``, ``SCHEDULED``) or Sacred's (``COMPLETED``, ``FAILED``, ``INTERRUPTED``,
    ``TIMEOUT``, ``RUNNING``, ``QUEUED``), the record it is in and when the run ended (text). ``trace`` is the
    last line of the failure's traceback when the record keeps one (Sacred's ``fail_trace``), ``frame`` its
    last frame. ``detail`` says in words what in the record shows the end, when the record holds no status
    word of its own (the HF Trainer's state: its end-of-training summary)."""

    tracker: str
    file: str
    status: str
    ended: str | None = None
    trace: str = ""
    frame: str = ""
    detail: str = ""


@dataclass(frozen=True)
class RunStatus:
    """How a run ended: ``status`` (one of :data:`STATUSES`), why in words, and the evidence."""

    status: str
    reason: str
    evidence: tuple[Evidence, ...] = ()
    exception: str = ""
    frame: str = ""
    allocation: str = ""

    @property
    def failed(self) -> bool:
        """True for a run that stopped before its end (crashed, out of memory, killed, hung)."""
        return self.status in FAILED_STATUSES

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "reason": self.reason,
                               "evidence": [e.to_dict() for e in self.evidence]}
        for key in ("exception", "frame", "allocation"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    def __str__(self) -> str:
        return f"{self.status}: {self.reason}"


UNKNOWN = RunStatus("unknown", "no console log, exit record or end marker says how the run ended")

#: Exceptions that only wrap the real one (a launcher's summary of a failed child): not the cause.
_WRAPPERS = ("ChildFailedError", "RayTaskError", "CalledProcessError")
#: Exit codes of a process ended by a signal (128 + SIGKILL, SIGTERM) or killed (negative).
_SIGNAL_EXITS = {137: "SIGKILL", 143: "SIGTERM", -9: "SIGKILL", -15: "SIGTERM"}
#: A collective that waited out its timeout (a hang), as opposed to a peer that went away.
_TIMED_OUT = re.compile(r"time ?out|timed out|watchdog|heartbeat", re.IGNORECASE)


def classify(signals: Sequence[Signal], *, wandb: WandbExit | None = None, newest_mtime: float | None = None,
             newest_file: str = "", now: float | None = None, expects_end_marker: bool = False,
             last_line: Evidence | None = None, tracker: TrackerEnd | None = None) -> RunStatus:
    """The status of a run from its console ``signals`` (in file order), its W&B exit record, its tracker's
    run record (MLflow's status) and file times.

    The console's last event decides: an end marker → finished; a cancel or kill → killed (oom when an
    out-of-memory line comes just before); a traceback or crash → the worst of what follows the last end
    marker (a distributed timeout, then out of memory, then the exception). Without console events the
    W&B exit code decides, then the tracker's status; without any, a file changed in the last :data:`RUNNING_WITHIN_S` means
    running, and a log whose format prints an end marker (``expects_end_marker``) that has none was killed
    (``last_line``, the console's last line, is then the evidence).
    """
    recent = newest_mtime is not None and now is not None and now - newest_mtime < RUNNING_WITHIN_S
    if signals:
        status = _from_console(list(signals))
        if status.status == "finished" or not recent or status.status != "killed":
            return status
    if wandb is not None:
        status = _from_wandb(wandb, recent)
        if status is not None:
            return status
    if tracker is not None:
        status = _from_tracker(tracker, recent)
        if status is not None:
            return status
    if recent:
        stamp = datetime.fromtimestamp(newest_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return RunStatus("running", f"still being written: {newest_file or 'a file'} changed in the last "
                         f"{RUNNING_WITHIN_S / 60:.0f} min", (Evidence(newest_file, None, f"modified {stamp}"),))
    if expects_end_marker and (last_line is not None or newest_file):
        evidence = last_line if last_line is not None else Evidence(newest_file, None, "no end marker")
        return RunStatus("killed", "the log ends without the end marker its format prints (killed, pre-empted "
                         "or out of time)", (evidence,))
    return UNKNOWN


def _from_console(signals: list[Signal]) -> RunStatus:
    last = signals[-1]
    if last.kind == "finished":
        return RunStatus("finished", last.detail or "the log ends with its end marker", (last.evidence,))
    since_end = _after_last(signals, ("finished",))
    if last.kind == "killed":
        oom = [s for s in since_end if s.kind == "oom" and _near(s, last)]
        if oom:
            return _oom(oom[-1], extra=(last.evidence,))
        hung = [s for s in since_end if s.kind == "nccl" and _near(s, last, 500)]
        if last.root_cause:  # a rank killed from outside: the others only lost their connection to it
            hung = [s for s in hung if _TIMED_OUT.search(s.evidence.text)]
        if hung:  # a hung collective, then the batch system or the launcher killed what was left
            return RunStatus("nccl_timeout", hung[0].detail, (hung[0].evidence, last.evidence))
        return RunStatus("killed", last.detail or "killed", (last.evidence,))
    episode = _after_last(signals, ("finished", "killed"))
    nccl = [s for s in episode if s.kind == "nccl"]
    if nccl:
        root = nccl[0]
        return RunStatus("nccl_timeout", root.detail or "a collective operation failed or timed out",
                         tuple(dict.fromkeys(s.evidence for s in nccl[:3])),
                         exception=_cause(episode).exception if _cause(episode) else "")
    oom = [s for s in episode if s.kind == "oom"]
    if oom:
        return _oom(oom[-1])
    cause = _cause(episode) or last
    reason = cause.detail or (f"{cause.exception}" if cause.exception else "crashed")
    return RunStatus("crashed", reason, (cause.evidence,), exception=cause.exception, frame=cause.frame)


def _oom(signal: Signal, extra: tuple[Evidence, ...] = ()) -> RunStatus:
    reason = signal.detail or "out of memory"
    if signal.allocation:
        reason += f" (failed allocation: {signal.allocation})"
    return RunStatus("oom", reason, (signal.evidence, *extra), exception=signal.exception, frame=signal.frame,
                     allocation=signal.allocation)


def _cause(episode: list[Signal]) -> Signal | None:
    """The exception that ended the run: the last traceback or crash that is not a launcher's wrapper."""
    errors = [s for s in episode if s.kind in ("traceback", "fatal")]
    real = [s for s in errors if not any(w in s.exception for w in _WRAPPERS)]
    return (real or errors)[-1] if errors else None


def _after_last(signals: list[Signal], kinds: tuple[str, ...]) -> list[Signal]:
    for index in range(len(signals) - 1, -1, -1):
        if signals[index].kind in kinds and index != len(signals) - 1:
            return signals[index + 1:]
    return signals


def _near(before: Signal, after: Signal, lines: int = 50) -> bool:
    a, b = before.evidence.line, after.evidence.line
    return before.evidence.file == after.evidence.file and (a is None or b is None or 0 <= b - a <= lines)


#: A tracker's final statuses and what they are here.
_TRACKER_ENDS = {"FINISHED": "finished", "FAILED": "crashed", "KILLED": "killed",
                 "COMPLETED": "finished", "INTERRUPTED": "killed", "TIMEOUT": "killed",  # these three: Sacred's
                 "CRASHED": "crashed", "PREEMPTED": "killed"}  # W&B's runs table's State (finished, failed, killed too)


#: the exception's name at the start of a traceback's last line (``FloatingPointError: …``)
_EXCEPTION_NAME = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def _from_tracker(record: TrackerEnd, recent: bool) -> RunStatus | None:
    """The status a tracker recorded; None for a run it still records as running while its files change."""
    when = f" (ended {record.ended})" if record.ended else ""
    evidence = (Evidence(record.file, None, f"status {record.status}{when}"),)
    status = _TRACKER_ENDS.get(record.status.upper())
    if status is not None and record.detail:
        return RunStatus(status, record.detail, (Evidence(record.file, None, record.detail),))
    if status == "crashed" and record.trace:  # the record's own traceback: its exception line is the evidence
        exception = _EXCEPTION_NAME.match(record.trace)
        return RunStatus(status, f"{record.tracker} recorded the run as FAILED{when}: {record.trace}",
                         (Evidence(record.file, None, record.trace), *evidence),
                         exception=exception.group(1) if exception else "", frame=record.frame)
    if status == "crashed":
        return RunStatus(status, f"{record.tracker} recorded the run as FAILED{when}: an exception ended it, or "
                                 f"its code ended it as failed", evidence)
    if status is not None:
        return RunStatus(status, f"{record.tracker} recorded the run as {record.status.upper()}{when}", evidence)
    if recent:
        return None
    return RunStatus("unknown", f"{record.tracker} still records the run as {record.status.upper()}, with no end, "
                                f"and its files no longer change: it stopped without ending its {record.tracker} run "
                                f"(killed, or a notebook closed), or the record was copied while it ran", evidence)


def _from_wandb(record: WandbExit, recent: bool) -> RunStatus | None:
    evidence = (Evidence(record.file, None, f"exit code {record.exit_code}" if record.exit_code is not None
                         else "no exit record"),)
    if record.exit_code is None:
        if recent:
            return None
        return RunStatus("killed", "the W&B run record has no exit record (killed, or copied while running)", evidence)
    runtime = f" after {record.runtime_s:.0f} s" if record.runtime_s is not None else ""
    if record.exit_code == 0:
        return RunStatus("finished", f"W&B recorded exit code 0{runtime}", evidence)
    if record.exit_code in _SIGNAL_EXITS:
        return RunStatus("killed", f"W&B recorded exit code {record.exit_code} ({_SIGNAL_EXITS[record.exit_code]})"
                         f"{runtime}", evidence)
    return RunStatus("crashed", f"W&B recorded exit code {record.exit_code}{runtime}", evidence)
