"""Restarts as time lost: what resuming a run cost in wall time and in steps computed again.

A resumed job logs some steps again (``RunInfo.restarts``: from ``step`` on, up to ``until``
where the abandoned attempt had got to); a log that holds several sessions has a boundary
between each (``RunInfo.phases``). At each boundary the wall clock tells what was lost: the time
from the last point before it to the first point after it, less the time those steps take at the
run's usual pace (its median seconds per step). That is the downtime plus the work thrown away,
without needing the abandoned attempt's points (the table keeps only the later writes).
Steps redone are ``until - step`` where the reader saw how far the abandoned attempt went.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity

__all__ = ["Boundary", "RestartEvent", "RestartCost", "analyze_restarts"]

#: Time lost (as a share of the run's wall time) or steps redone (as a share of its steps) from which the
#: finding is a warning rather than information.
WARN_SHARE = 0.10
#: Time lost below which the finding is information whatever its share: a run of seconds (a tutorial's loop,
#: writers reopened in one script) that "lost half its time" lost seconds.
MIN_LOST_S = 60.0


@dataclass(frozen=True)
class Boundary:
    """Where a run was resumed: ``step`` (first step of the later attempt or session), ``until`` (the abandoned
    attempt's highest step, None when not known), ``kind`` (``restart``, ``session``, or ``fresh``: a session
    that started over from scratch, a new launch into the same log rather than a resume) and the reader's words."""

    step: int
    kind: str = "restart"
    until: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class RestartEvent(ResultMixin):
    """One resume: the wall-clock gap over it, the part of that gap lost, the steps computed again."""

    step: int
    kind: str
    gap_s: float | None
    lost_s: float | None
    steps_redone: int | None
    detail: str


@dataclass(frozen=True)
class RestartCost(ResultMixin):
    """What a run's restarts cost: their count, wall time lost, steps redone, and per restart the evidence."""

    restarts: int
    time_lost_s: float | None
    steps_redone: int | None
    run_wall_s: float | None
    seconds_per_step: float | None
    events: tuple[RestartEvent, ...]
    findings: tuple[Finding, ...]

    @property
    def summary(self) -> str:
        """The headline: ``3 restarts, 5.2 h lost, 12,000 steps redone`` (``2 sessions appended to the log, …`` for a
        log that a job's next session was appended to: no restart)."""
        sessions = sum(1 for e in self.events if e.kind == "session")
        if sessions and sessions == sum(1 for e in self.events if e.kind != "fresh"):
            parts = [f"{sessions} session{'s' if sessions != 1 else ''} appended to the log"]
        else:
            parts = [f"{self.restarts} restart{'s' if self.restarts != 1 else ''}"]
        if self.time_lost_s is not None:
            parts.append(f"{format_duration(self.time_lost_s)} lost")
        if self.steps_redone is not None:
            parts.append(f"{self.steps_redone:,} steps redone")
        return ", ".join(parts)


def format_duration(seconds: float) -> str:
    """A duration as a person reads it: ``45 s``, ``12.5 min``, ``5.2 h``, ``3.1 d``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def analyze_restarts(steps: np.ndarray, wall_time: np.ndarray, boundaries: Sequence[Boundary]) -> RestartCost | None:
    """The cost of a run's restarts from its points' ``steps`` and ``wall_time`` (any tags; NaN where no time).

    None when the run has no boundary. Time is None when the run logs no wall time around any boundary.
    """
    if not boundaries:
        return None
    merged: dict[int, Boundary] = {}
    for b in sorted(boundaries, key=lambda b: (b.step, b.kind != "restart")):
        merged.setdefault(b.step, b)  # a restart and a session at one step are one resume
    timeline_steps, timeline_wall = _timeline(np.asarray(steps), np.asarray(wall_time, dtype=np.float64))
    cuts = np.array(sorted(merged), dtype=np.int64)
    pace = _pace(timeline_steps, timeline_wall, cuts)
    events = []
    for b in merged.values():
        gap = lost = None
        if len(timeline_steps) and b.kind != "fresh":  # (the time between two launches is no resume's downtime)
            before = np.searchsorted(timeline_steps, b.step, side="left") - 1
            after = before + 1
            if before >= 0 and after < len(timeline_steps):
                gap = max(0.0, float(timeline_wall[after] - timeline_wall[before]))
                if pace is not None:
                    lost = max(0.0, gap - float(timeline_steps[after] - timeline_steps[before]) * pace)
        redone = max(0, b.until - b.step) if b.until is not None else (0 if b.kind == "session" else None)
        if b.kind == "fresh":
            redone = None
        events.append(RestartEvent(b.step, b.kind, gap, lost, redone, b.detail))
    losses = [e.lost_s for e in events if e.lost_s is not None]
    redos = [e.steps_redone for e in events if e.steps_redone is not None]
    run_wall = float(timeline_wall[-1] - timeline_wall[0]) if len(timeline_wall) >= 2 else None
    cost = RestartCost(
        restarts=len(events),
        time_lost_s=float(sum(losses)) if losses else None,
        steps_redone=int(sum(redos)) if redos else None,
        run_wall_s=run_wall,
        seconds_per_step=pace,
        events=tuple(events),
        findings=(),
    )
    return _with_finding(cost, timeline_steps, np.asarray(steps))


def _timeline(steps: np.ndarray, wall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One (step, earliest wall time) per step that has a wall time, in step order."""
    ok = np.isfinite(wall)
    if not ok.any():
        return np.empty(0, np.int64), np.empty(0, np.float64)
    s, w = steps[ok].astype(np.int64), wall[ok]
    order = np.lexsort((w, s))
    s, w = s[order], w[order]
    first = np.concatenate(([True], s[1:] != s[:-1]))
    return s[first], w[first]


def _pace(steps: np.ndarray, wall: np.ndarray, cuts: np.ndarray) -> float | None:
    """The run's median seconds per step between neighbouring points that no restart separates."""
    if len(steps) < 3:
        return None
    ds, dw = np.diff(steps), np.diff(wall)
    crosses = np.searchsorted(cuts, steps[:-1], side="right") != np.searchsorted(cuts, steps[1:], side="right")
    ok = (ds > 0) & (dw >= 0) & ~crosses
    if ok.sum() < 2:
        return None
    return float(np.median(dw[ok] / ds[ok]))


def _with_finding(cost: RestartCost, timeline_steps: np.ndarray, steps: np.ndarray) -> RestartCost:
    lost_share = (cost.time_lost_s / cost.run_wall_s
                  if cost.time_lost_s is not None and cost.run_wall_s and cost.run_wall_s >= 1.0 else None)
    span = int(steps.max() - steps.min()) if len(steps) else 0
    redo_share = cost.steps_redone / span if cost.steps_redone is not None and span > 0 else None
    worst = max((x for x in (lost_share, redo_share) if x is not None), default=0.0)
    shares = []
    if lost_share is not None:
        shares.append(f"{lost_share:.0%} of its {format_duration(cost.run_wall_s or 0.0)} wall time")
    if redo_share is not None:
        shares.append(f"{redo_share:.0%} of its steps")
    largest = max((e for e in cost.events if e.lost_s is not None), key=lambda e: e.lost_s or 0.0, default=None)
    at = f"; the costliest at step {largest.step} ({format_duration(largest.lost_s or 0.0)})" if largest else ""
    message = f"{cost.summary}" + (f" ({', '.join(shares)})" if shares else "") + at
    evidence = {
        "restarts": cost.restarts, "time_lost_s": cost.time_lost_s, "steps_redone": cost.steps_redone,
        "run_wall_s": cost.run_wall_s, "seconds_per_step": cost.seconds_per_step,
        "events": [e.to_dict() for e in cost.events],
    }
    fresh = [e for e in cost.events if e.kind == "fresh"]
    if fresh:
        resumes = len(cost.events) - len(fresh)
        message = (f"{len(fresh)} new start{'s' if len(fresh) != 1 else ''} from scratch at step"
                   f"{'s' if len(fresh) != 1 else ''} {', '.join(str(e.step) for e in fresh)} (the log's step count "
                   "and its loss back where they began: a new launch into the same log, not a resume)" + (f"; {_others(message, cost.restarts, resumes)}" if resumes else ""))
    finding = Finding(
        code="restarts_time_lost",
        severity=(Severity.WARNING if worst >= WARN_SHARE
                  and (cost.time_lost_s is None or cost.time_lost_s >= MIN_LOST_S) else Severity.INFO),
        message=message,
        recommendation=recommend("restarts_time_lost"),
        step=cost.events[0].step,
        step_end=cost.events[-1].step if len(cost.events) > 1 else None,
        evidence=evidence,
    )
    return RestartCost(cost.restarts, cost.time_lost_s, cost.steps_redone, cost.run_wall_s, cost.seconds_per_step,
                       cost.events, (finding,))


def _others(message: str, restarts: int, resumes: int) -> str:
    """The headline of the resumes beside new starts: its count is theirs (``2 other restarts, …``, ``1 other
    session appended to the log, …``)."""
    counted = f"{restarts} restart{'s' if restarts != 1 else ''}"
    if message.startswith(counted):
        return message.replace(counted, f"{resumes} other restart{'s' if resumes != 1 else ''}", 1)
    return message.replace(f"{resumes} session", f"{resumes} other session", 1)
