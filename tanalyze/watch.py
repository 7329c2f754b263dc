"""Follow growing logs: re-read what grew (through the incremental cache), re-diagnose the runs that
changed, and hand over each new finding once.

:class:`Watcher` keeps what was already reported; each :meth:`Watcher.poll` returns only the new
:class:`WatchEvent` s: a diagnosis finding seen for the first time, or a run's status once it has
ended (finished, crashed, oom, killed, nccl_timeout). ``tanalyze watch`` loops over it, prints, runs a
command per event and stops when a ``--until`` condition holds (see :func:`until_holds`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tanalyze.analysis.results import to_jsonable
from tanalyze.diagnose import RunDiagnosis, diagnose
from tanalyze.errors import NoLogsError
from tanalyze.logs import Logs, load
from tanalyze.runstatus import FAILED_STATUSES, following

__all__ = ["WatchEvent", "Watcher", "UNTIL", "parse_until", "until_holds"]

#: Findings that can occur several times in one run (one per step): the step is part of their identity.
_PER_STEP = frozenset({"loss_spike", "nonfinite_values"})
#: Statuses that end a run (reported once each).
_ENDED = FAILED_STATUSES | {"finished"}
#: The --until conditions: ``ended`` (no run still running), ``failed`` (a run crashed/was killed or a
#: finding of severity error), ``finding:CODE`` (that finding appeared), ``status:NAME`` (a run has it).
UNTIL = ("ended", "failed", "finding:CODE", "status:NAME")


@dataclass(frozen=True)
class WatchEvent:
    """One thing ``watch`` reports: a new finding (``kind="finding"``) or a run's end (``kind="status"``)."""

    run: str
    kind: str
    code: str
    severity: str
    message: str
    step: int | None = None
    evidence: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"run": self.run, "kind": self.kind, "code": self.code, "severity": self.severity,
                            "step": self.step, "message": self.message, "evidence": self.evidence})

    def key(self) -> tuple[Any, ...]:
        if self.kind == "status":
            return (self.run, "status", self.code)
        return (self.run, self.code, self.step if self.code in _PER_STEP else None)


@dataclass
class Watcher:
    """What has been reported about the runs under ``path``, and how to look again (:meth:`poll`)."""

    path: str | os.PathLike[str]
    cache: Any = True
    roles: Mapping[str, str] | None = None
    formats: Sequence[str] | None = None
    logs: Logs | None = None
    diagnoses: dict[str, RunDiagnosis] = field(default_factory=dict)
    _seen: set[tuple[Any, ...]] = field(default_factory=set)
    _signatures: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def poll(self) -> list[WatchEvent]:
        """Read what grew, re-diagnose the runs whose points or status changed; the events not reported yet."""
        try:
            with following():  # a log that changed a moment ago is a run still being written
                logs = load(self.path, cache=self.cache, jobs=1, formats=self.formats)
        except NoLogsError:
            return []  # nothing written yet
        self.logs = logs
        counts = logs.scalars.groupby("run", observed=True, sort=False).size() if len(logs.scalars) else {}
        changed = []
        for name, info in logs.runs.items():
            signature = (int(counts.get(name, 0)), info.status.status, len(info.restarts), len(info.phases))
            if self._signatures.get(name) != signature:
                self._signatures[name] = signature
                changed.append(name)
        if changed:
            self.diagnoses.update(diagnose(logs.select(changed), roles=self.roles).items())
        events: list[WatchEvent] = []
        for name in changed:
            events.extend(self._new(_events(name, self.diagnoses[name], logs.runs[name].status)))
        return events

    def _new(self, events: list[WatchEvent]) -> list[WatchEvent]:
        fresh = []
        for event in events:
            if event.key() not in self._seen:
                self._seen.add(event.key())
                fresh.append(event)
        return fresh


def _events(name: str, diagnosis: RunDiagnosis, status: Any) -> list[WatchEvent]:
    out = [WatchEvent(name, "finding", f.code, str(f.severity), f.message, f.step, f.evidence)
           for f in diagnosis.findings]
    if status.status in _ENDED:
        where = str(status.evidence[0]) if status.evidence else ""
        out.append(WatchEvent(name, "status", status.status, "error" if status.failed else "info",
                              f"run {status.status}: {status.reason}" + (f" ({where})" if where else ""),
                              None, status.to_dict()))
    return out


def parse_until(text: str) -> tuple[str, str]:
    """``ended``, ``failed``, ``finding:CODE`` or ``status:NAME`` as (condition, argument); ValueError otherwise."""
    head, _, arg = text.partition(":")
    if head in ("ended", "failed") and not arg:
        return head, ""
    if head in ("finding", "status") and arg:
        return head, arg
    raise ValueError(f"unknown --until condition {text!r}; known: {', '.join(UNTIL)}")


def until_holds(condition: tuple[str, str], watcher: Watcher, reported: Sequence[WatchEvent]) -> bool:
    """Whether ``condition`` (from :func:`parse_until`) holds now, given every event reported so far."""
    head, arg = condition
    logs = watcher.logs
    if logs is None or not logs.runs:
        return False
    statuses = [info.status.status for info in logs.runs.values()]
    if head == "ended":
        return "running" not in statuses
    if head == "failed":
        return any(s in FAILED_STATUSES for s in statuses) or any(e.severity == "error" for e in reported)
    if head == "status":
        return arg in statuses
    return any(e.kind == "finding" and e.code == arg for e in reported)
