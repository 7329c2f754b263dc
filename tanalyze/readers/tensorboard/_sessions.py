"""Merge the writer sessions of one run: what a restarted job logged again replaces what it logged before.

A *session* is what one process wrote: the event files whose names carry the
same host and process id (every SummaryWriter and tf.summary writer opens a new
file; one process may open several, e.g. HF Trainer for its final evaluation),
split further at a ``SessionLog.START`` event (TF1 supervisors write one when
they restore a checkpoint). Sessions are merged in order: files by the
timestamp in their name (TensorBoard's order), then write order.

The rule, per tag: when a later session logs a tag, its first step for that tag
is where it (re)started; every earlier point of that tag at that step or later,
or at any step the later session logs again, is replaced. A ``SessionLog.START``
at step *s* replaces every earlier point at step >= *s* of every tag, exactly as
TensorBoard purges orphaned data. This is TensorBoard's behaviour (its data
server keeps, per tag, only the latest write from a step on: a step at or below
the last one seen drops the points from that step on), applied at session
boundaries only. Why:

* A job restarted from a checkpoint logs again from the checkpoint's step; its
  earlier points past that step belong to a trajectory that was abandoned
  (tanalyze drops them, like TensorBoard; keeping them would splice two models
  into one curve). Each such merge is recorded as a ``Restart`` naming the file,
  the step and how many points were replaced.
* Per tag, not globally: a later session that logs only some tags (say an
  evaluation job writing into the run folder) must not erase the other curves.
* A later file of the same process counts as a new session only when it goes
  back: it starts a tag at a step before that tag's last step so far (a notebook
  re-running its training cell, a resume inside one process). Otherwise (HF
  Trainer opening a second file for its final evaluation) it continues the session.
* A session that goes back to the *start* is a new phase, not a restart: when
  some tag's first step in it is below that tag's highest step so far and at or
  below that tag's first step in the current phase (a second ``fit()`` into the
  same folder: steps start over at 0), nothing is replaced. Its steps (and those
  of the sessions after it in that phase) are shifted to continue after the
  previous phase on one step axis; the rule is :mod:`tanalyze.readers.phases`. A session that
  only repeats the values already logged at its steps, or that began before the
  phase's last point was written (two writers at once), stays a replacement, and
  a ``SessionLog.START`` is always a restart.
* Within one session repeated or decreasing steps are kept in write order: they
  are real data points (YOLOv8 logs every batch's loss under step = epoch; HF
  Trainer logs ``train/epoch`` at its last step in both of its files). A note
  says how many there are; nothing is collapsed silently. TensorBoard's viewer
  would show only the last of them, tbparse shows all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.base import Phase
from tanalyze.readers.phases import goes_back_to_start, phase_detail, phase_offset

__all__ = ["Session", "Merged", "merge_sessions"]

_NEVER = np.iinfo(np.int64).max
_FEW_TAGS = 64


@dataclass
class Session:
    """One writer session; tag codes index the run-wide tag lists."""

    file: str
    writer: str  # the process that wrote it (host and pid from the file name), or the file name
    codes: np.ndarray
    steps: np.ndarray
    wall_times: np.ndarray
    values: np.ndarray
    histograms: list[dict[str, Any]] = field(default_factory=list)  # rows with a run-wide "code"
    start_step: int | None = None


@dataclass
class Merged:
    codes: np.ndarray
    steps: np.ndarray
    wall_times: np.ndarray
    values: np.ndarray
    histograms: list[dict[str, Any]]
    restarts: list[tuple[int, str, str, int]]  # (step, file, detail, the abandoned attempt's highest step)
    overlapping: list[str]  # files whose replaced points overlapped them in time
    repeated: dict[int, int]  # tag code -> points that repeat a step within their writer's sessions
    phases: list[Phase] = field(default_factory=list)  # empty when the sessions make one phase


def _goes_back(old: Session, new: Session) -> bool:
    """Whether ``new`` starts some tag at a step before ``old``'s last step of that tag.

    One process can open a new file and log again from an earlier step: a notebook
    kernel re-running its training cell, or a job resuming from a checkpoint in
    the same process. That is a restart even though host and pid are the same.
    """
    if not len(old.codes) or not len(new.codes):
        return False
    tags, first_rows = np.unique(new.codes, return_index=True)
    for tag, row in zip(tags.tolist(), first_rows.tolist(), strict=True):
        mine = old.steps[old.codes == tag]
        if len(mine) and int(new.steps[row]) < int(mine.max()):
            return True
    return False


def _superseded(old_codes: np.ndarray, old_steps: np.ndarray, new_codes: np.ndarray, new_steps: np.ndarray,
                start_step: int | None, n_tags: int) -> np.ndarray:
    """Which earlier points a new session replaces (see the module docstring)."""
    drop = np.zeros(len(old_codes), bool)
    if start_step is not None:
        drop |= old_steps >= start_step
    if not len(new_codes) or not len(old_codes):
        return drop
    tags, first_rows = np.unique(new_codes, return_index=True)
    first_step = np.full(n_tags, _NEVER, np.int64)
    first_step[tags] = new_steps[first_rows]
    drop |= old_steps >= first_step[old_codes]
    below = new_steps < first_step[new_codes]
    if below.any():  # the new session went back below where it started: those steps are replaced too
        pairs = set(zip(new_codes[below].tolist(), new_steps[below].tolist(), strict=True))
        candidates = np.flatnonzero(~drop & np.isin(old_codes, new_codes[below]))
        for row in candidates.tolist():
            if (int(old_codes[row]), int(old_steps[row])) in pairs:
                drop[row] = True
    return drop


def repeated_steps(codes: np.ndarray, steps: np.ndarray) -> dict[int, int]:
    """Per tag code, how many points repeat a (tag, step) seen earlier in the same rows."""
    if len(codes) < 2:
        return {}
    tags = np.flatnonzero(np.bincount(codes))
    if len(tags) <= _FEW_TAGS:  # one pass per tag beats sorting a long table
        increasing = all(np.all(np.diff(steps[codes == tag]) > 0) for tag in tags.tolist())
    else:
        order = np.argsort(codes, kind="stable")
        same_tag = codes[order][1:] == codes[order][:-1]
        increasing = not (same_tag & (np.diff(steps[order]) <= 0)).any()
    if increasing:
        return {}  # the common case, decided without looking for the pairs
    repeat = pd.DataFrame({"code": codes, "step": steps}).duplicated(keep="first").to_numpy()  # hashing, no sort
    found, counts = np.unique(codes[repeat], return_counts=True)
    return dict(zip(found.tolist(), counts.tolist(), strict=True))


def _hist_arrays(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([r["code"] for r in rows], np.int64), np.array([r["step"] for r in rows], np.int64))


def _starts_phase(phase: list[Session], new: Session, n_tags: int) -> tuple[int, int] | None:
    """(the step a tag had reached, the step it went back to) when ``new`` starts a new phase after
    the sessions of the current ``phase`` (see the module docstring), else None."""
    if new.start_step is not None or not len(new.codes) or not phase:
        return None
    codes = np.concatenate([s.codes for s in phase])
    steps = np.concatenate([s.steps for s in phase])
    if not len(codes):
        return None
    high = np.full(n_tags, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(high, codes, steps)
    first = np.full(n_tags, np.iinfo(np.int64).max, np.int64)
    tags, at = np.unique(codes, return_index=True)
    first[tags] = steps[at]
    new_tags, new_at = np.unique(new.codes, return_index=True)
    new_first = new.steps[new_at]
    back = goes_back_to_start(new_first, high[new_tags], first[new_tags]) & np.isin(new_tags, tags)
    if not back.any() or _repeats(codes, steps, np.concatenate([s.values for s in phase]), new):
        return None
    walls = np.concatenate([s.wall_times for s in phase])
    new_walls = new.wall_times[np.isfinite(new.wall_times)]
    walls = walls[np.isfinite(walls)]
    if len(walls) and len(new_walls) and new_walls.min() < walls.max():
        return None  # written while the phase was still being written: two writers at once, not a new session
    index = int(np.flatnonzero(back)[0])
    return int(high[new_tags[index]]), int(new_first[index])


def _repeats(codes: np.ndarray, steps: np.ndarray, values: np.ndarray, new: Session) -> bool:
    """Whether every point of ``new`` at a (tag, step) logged before has the value logged there last."""
    old = pd.DataFrame({"c": codes, "s": steps, "v": values}).drop_duplicates(["c", "s"], keep="last")
    merged = pd.DataFrame({"c": new.codes, "s": new.steps, "v": new.values}).merge(old, on=["c", "s"], how="inner",
                                                                                   suffixes=("", "_old"))
    if not len(merged):
        return False
    a, b = merged["v"].to_numpy(), merged["v_old"].to_numpy()
    return bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


def _all_steps(session: Session) -> np.ndarray:
    hist_steps = np.array([r["step"] for r in session.histograms], np.int64)
    return np.concatenate([session.steps, hist_steps]) if len(hist_steps) else session.steps


def merge_sessions(sessions: list[Session], n_tags: int, n_hist_tags: int) -> Merged:
    """Concatenate sessions in order, replacing what each later session logged again (or starting a phase)."""
    kept: list[Session] = []
    restarts: list[tuple[int, str, str, int]] = []
    overlapping: list[str] = []
    phase_of: list[int] = []  # per kept session
    offsets: list[int] = [0]  # per phase
    phase_starts: list[tuple[str, int, int]] = [("", 0, 0)]  # per phase: (file, high, back to)
    for session in sessions:
        current = [s for s, p in zip(kept, phase_of, strict=True) if p == len(offsets) - 1]
        back = _starts_phase(current, session, n_tags)
        if back is not None:
            last = max(int(_all_steps(s).max()) + offsets[p] for s, p in zip(kept, phase_of, strict=True)
                       if len(_all_steps(s)))
            offsets.append(phase_offset(last, int(_all_steps(session).min())))
            phase_starts.append((session.file, *back))
            kept.append(session)
            phase_of.append(len(offsets) - 1)
            continue
        offset = offsets[-1]
        replaced = replaced_tags = 0
        first_replaced = _NEVER
        last_replaced = -_NEVER
        latest_replaced_wall = -np.inf
        for old in current:
            if old.writer == session.writer and session.start_step is None and not _goes_back(old, session):
                continue  # one process writing on: its points are all real, like within one file
            drop = _superseded(old.codes, old.steps, session.codes, session.steps, session.start_step, n_tags)
            hist_codes, hist_steps = _hist_arrays(old.histograms)
            new_hist_codes, new_hist_steps = _hist_arrays(session.histograms)
            hist_drop = _superseded(hist_codes, hist_steps, new_hist_codes, new_hist_steps, session.start_step, n_hist_tags)
            if not drop.any() and not hist_drop.any():
                continue
            replaced += int(drop.sum()) + int(hist_drop.sum())
            replaced_tags += len(np.unique(old.codes[drop])) + len(np.unique(hist_codes[hist_drop]))
            steps = np.concatenate([old.steps[drop], hist_steps[hist_drop]])
            first_replaced = min(first_replaced, int(steps.min()))
            last_replaced = max(last_replaced, int(steps.max()))
            walls = old.wall_times[drop]
            if len(walls) and np.isfinite(walls).any():
                latest_replaced_wall = max(latest_replaced_wall, float(np.nanmax(walls)))
            keep = ~drop
            old.codes, old.steps = old.codes[keep], old.steps[keep]
            old.wall_times, old.values = old.wall_times[keep], old.values[keep]
            old.histograms = [row for row, gone in zip(old.histograms, hist_drop.tolist(), strict=True) if not gone]
        if replaced:
            if session.start_step is not None:
                detail = (f"{session.file}: a session restarted at step {session.start_step + offset} "
                          f"(SessionLog.START); {replaced:,} earlier point(s) of {replaced_tags} tag(s) replaced")
            else:
                detail = (f"{session.file} logged {replaced_tags} tag(s) again from step {first_replaced + offset}: "
                          f"{replaced:,} earlier point(s) replaced")
            new_walls = session.wall_times[np.isfinite(session.wall_times)]
            if len(new_walls) and new_walls.min() < latest_replaced_wall:
                overlapping.append(session.file)
                detail += "; the sessions overlap in time (two writers at once?)"
            restarts.append((first_replaced + offset, session.file, detail, last_replaced + offset))
        kept.append(session)
        phase_of.append(len(offsets) - 1)
    phases = _shift_phases(kept, phase_of, offsets, phase_starts)
    repeated: dict[int, int] = {}
    for writer in dict.fromkeys(s.writer for s in kept):
        mine = [s for s in kept if s.writer == writer]
        codes = np.concatenate([s.codes for s in mine]) if len(mine) > 1 else mine[0].codes
        steps = np.concatenate([s.steps for s in mine]) if len(mine) > 1 else mine[0].steps
        for code, count in repeated_steps(codes, steps).items():
            repeated[code] = repeated.get(code, 0) + count
    def joined(name: str, dtype: type) -> np.ndarray:
        if len(kept) == 1:
            return getattr(kept[0], name)
        return np.concatenate([getattr(s, name) for s in kept]) if kept else np.empty(0, dtype)

    return Merged(
        codes=joined("codes", np.int32),
        steps=joined("steps", np.int64),
        wall_times=joined("wall_times", np.float64),
        values=joined("values", np.float64),
        histograms=[row for s in kept for row in s.histograms],
        restarts=restarts,
        overlapping=overlapping,
        repeated=repeated,
        phases=phases,
    )


def _shift_phases(kept: list[Session], phase_of: list[int], offsets: list[int],
                  starts: list[tuple[str, int, int]]) -> list[Phase]:
    """Move each later phase's sessions by its offset; describe the phases (none when there is one)."""
    if len(offsets) == 1:
        return []
    for session, phase in zip(kept, phase_of, strict=True):
        offset = offsets[phase]
        if offset:
            session.steps = session.steps + offset
            session.histograms = [{**row, "step": row["step"] + offset} for row in session.histograms]
    phases = []
    for index, offset in enumerate(offsets):
        steps = [_all_steps(s) for s, p in zip(kept, phase_of, strict=True) if p == index]
        steps = [a for a in steps if len(a)]
        if not steps:
            continue
        both = np.concatenate(steps)
        first, last = int(both.min()), int(both.max())
        files = [s.file for s, p in zip(kept, phase_of, strict=True) if p == index]
        file, high, back = starts[index]
        if index == 0:
            detail = "the first session"
        else:
            detail = (phase_detail("step", high, back, f"a new session written to the same folder ({file})")
                      + (f"; its steps shifted by {offset:+d} to follow the previous session" if offset else ""))
        phases.append(Phase(index=len(phases), first_step=first, last_step=last, offset=offset,
                            file=file or files[0], detail=detail))
    return phases
