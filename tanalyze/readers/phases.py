"""Sessions of one log (*phases*): the one rule for telling a new session from a resumed job.

When a log's steps go back, one of two things happened:

* a job **resumed from a checkpoint** logs again from a step *after* the first
  one: the later writes replace the abandoned attempt (a restart, last write wins);
* a **new session was appended** to the same log (Keras ``CSVLogger(append=True)``
  across two ``fit()`` calls: head training, then fine-tuning; a second ``fit()``
  into the same TensorBoard folder): the steps start over.

The rule: a point goes back when its step is below the highest step its tag has
reached in the current phase. When it goes back to (or below) the *first* step
its tag had in the current phase, a new phase begins there, for every tag. Its
steps are shifted to continue right after the previous phase on one step axis::

    offset = previous phase's last step + 1 - this phase's first step

Nothing is replaced across phases. Two exceptions keep today's rewrite rule:
a point at the same step as its tag's highest (not going back), and going-back
rows that only repeat the values already logged at those steps (the same rows
written twice: a copy, not a session). A log whose every row is one whole step
(a Keras ``CSVLogger`` row is the end of one epoch of one ``fit()``) has no such
rewrite: a row at its tag's highest step again is that step run again, so it goes
back too (``whole_rows``); a ``fit(epochs=1)`` called again logs epoch 0 again,
and when the phase so far is that one epoch, that is going back to its start. Readers apply it to their rows in write
order (:func:`find_phase_starts`) or to their writer sessions (TensorBoard, with
:func:`goes_back_to_start`), and describe each phase with :func:`phase_detail`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["PhaseStart", "PHASE_LIMIT", "goes_back_to_start", "phase_offset", "phase_detail", "find_phase_starts"]

#: At most this many phases per log: going back more often than that is not sessions appended by hand
#: (those later go-backs are restarts, and a warning says so).
PHASE_LIMIT = 100


@dataclass(frozen=True)
class PhaseStart:
    """Where a new phase begins: the write-order row, and the step its tag went back from and to."""

    row: int
    high: int
    step: int


def goes_back_to_start(step, high, first, whole_rows: bool = False):
    """The rule: a step below its tag's highest so far that is at or below its tag's first step (arrays or ints).

    ``whole_rows``: each row is one whole step (see the module doc), so a step at its tag's highest is logged
    again, not rewritten: at or below the highest.
    """
    return ((step <= high) if whole_rows else (step < high)) & (step <= first)


def phase_offset(previous_last: int, first: int) -> int:
    """The shift that puts a phase starting at ``first`` right after a phase ending at ``previous_last``."""
    return previous_last + 1 - first


def phase_detail(unit: str, high: int, step: int, what: str = "a new session appended to the log") -> str:
    """``epoch went back from 4 to 0: a new session appended to the log`` (``epoch 0 logged again: …`` when the
    step it went back to is the highest: a one-step session run again)."""
    if high == step:
        return f"{unit} {step} logged again: {what}"
    return f"{unit} went back from {high} to {step}: {what}"


def find_phase_starts(
    rows: np.ndarray, codes: np.ndarray, steps: np.ndarray, values: np.ndarray | None = None,
    *, limit: int = PHASE_LIMIT, whole_rows: bool = False,
) -> tuple[list[PhaseStart], bool]:
    """Where new phases begin among points in write order (``rows`` non-decreasing, one tag code per point).

    ``values`` (when given) lets a going-back stretch that only repeats the values
    already logged at its steps be a rewrite rather than a session. ``whole_rows``:
    every row is one whole step (see :func:`goes_back_to_start`). Returns the
    starts and whether ``limit`` stopped the search (later go-backs left to the
    restart rule).
    """
    starts: list[PhaseStart] = []
    begin, n = 0, len(rows)
    while begin < n:
        found = _next_start(rows[begin:], codes[begin:], steps[begin:],
                            None if values is None else values[begin:], whole_rows)
        if found is None:
            return starts, False
        if len(starts) >= limit:
            return starts, True
        starts.append(found)
        begin += int(np.searchsorted(rows[begin:], found.row, side="left"))
    return starts, False


def _next_start(rows: np.ndarray, codes: np.ndarray, steps: np.ndarray, values: np.ndarray | None,
                whole_rows: bool = False) -> PhaseStart | None:
    """The first phase start after the first row of these points (which begin a phase)."""
    series = pd.Series(steps)
    grouped = series.groupby(codes, sort=False)
    high = grouped.cummax().groupby(codes, sort=False).shift(1).to_numpy(dtype=np.float64, na_value=np.nan)
    first = grouped.transform("first").to_numpy()
    with np.errstate(invalid="ignore"):
        relogged = steps <= high  # NaN (a tag's first point) compares False
        candidates = np.flatnonzero(relogged & goes_back_to_start(steps, high, first, whole_rows))
    if not len(candidates):
        return None
    skip_until = -1
    for index in candidates.tolist():
        row = _first_row(rows, steps, relogged, int(rows[index]), int(steps[index]))
        if row <= skip_until:
            continue
        if values is not None:
            event = _event_rows(rows, relogged, row)
            if _repeats_values(rows, codes, steps, values, relogged, event):
                skip_until = int(event[-1])
                continue
        return PhaseStart(row=row, high=int(high[index]), step=int(steps[index]))
    return None


def _first_row(rows: np.ndarray, steps: np.ndarray, relogged: np.ndarray, row: int, back_to: int) -> int:
    """The row a session starts at: ``row``, or earlier when the rows just before it log again only steps
    at or below the one it went back to (a LearningRateMonitor row at step 0 before the first train row)."""
    while True:
        lo = int(np.searchsorted(rows, row, side="left"))
        if lo == 0:
            return row
        previous = int(rows[lo - 1])
        start = int(np.searchsorted(rows, previous, side="left"))
        if previous != row - 1 or not relogged[start:lo].all() or int(steps[start:lo].max()) > back_to:
            return row
        row = previous


def _event_rows(rows: np.ndarray, relogged: np.ndarray, row: int) -> np.ndarray:
    """The consecutive rows from ``row`` on that log something again (one going-back stretch)."""
    all_rows = np.unique(rows)
    relog_rows = np.unique(rows[relogged])
    position = int(np.searchsorted(all_rows, row))
    at = int(np.searchsorted(relog_rows, row))
    # relog_rows[at + k] == all_rows[position + k] while the stretch lasts
    span = min(len(relog_rows) - at, len(all_rows) - position)
    same = relog_rows[at:at + span] == all_rows[position:position + span]
    length = int(np.argmin(same)) if not same.all() else span
    return relog_rows[at:at + length]


def _repeats_values(rows: np.ndarray, codes: np.ndarray, steps: np.ndarray, values: np.ndarray,
                    relogged: np.ndarray, event: np.ndarray) -> bool:
    """Whether every point the stretch logs again equals the last earlier write of its (tag, step)."""
    in_event = np.isin(rows, event) & relogged
    earlier = rows < event[0]
    old = pd.DataFrame({"code": codes[earlier], "step": steps[earlier], "value": values[earlier]})
    old = old.drop_duplicates(["code", "step"], keep="last")
    new = pd.DataFrame({"code": codes[in_event], "step": steps[in_event], "value": values[in_event]})
    merged = new.merge(old, on=["code", "step"], how="left", suffixes=("", "_old"), indicator=True)
    a, b = merged["value"].to_numpy(dtype=np.float64), merged["value_old"].to_numpy(dtype=np.float64)
    matched = (merged["_merge"] == "both").to_numpy()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return bool(len(merged)) and bool((same & matched).all())
