"""Shared pieces of the structured-log readers (CSV, JSON, JSON lines).

Every structured format ends up as rows of ``{tag: value}`` at a step, written
in some order. :class:`PointBuffer` collects those points with the index of the
row they came from (their write order), and :func:`settle_rewrites` applies the
last-write-wins rule for resumed jobs and describes each restart it finds.
The small file helpers here decode damaged text without raising and load
config files (YAML/JSON) beside a log.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import yaml

from tanalyze.errors import FormatError
from tanalyze.readers.base import HEAD_BYTES, Phase, ReadWarning, Restart, RunData
from tanalyze.readers.phases import PHASE_LIMIT, find_phase_starts, phase_detail, phase_offset
from tanalyze.schema import keep_last_write, scalar_frame
from tanalyze.text import writable

__all__ = [
    "PointBuffer",
    "Settled",
    "settle_rewrites",
    "is_number",
    "as_step",
    "name_list",
    "read_text",
    "read_head",
    "load_config",
    "JsonLines",
    "leading_json_object",
    "is_coco_metric",
    "coco_undefined_note",
]

#: Cells that mean "nothing logged here" rather than a value.
MISSING_WORDS = frozenset({"", "none", "null", "na", "n/a", "<na>"})
#: Cells that are a logged NaN: a value, and evidence.
NAN_WORDS = frozenset({"nan", "-nan", "+nan"})


def is_number(value: Any) -> bool:
    """Whether a JSON value is a scalar number (booleans are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


#: steps must fit the int64 step column
STEP_LIMIT = 2**63 - 1024
#: integers at or beyond this size do not fit a float64
_FLOAT_INT = 2**1023 * (2 - 2**-52)


def as_step(value: Any) -> int | None:
    """A JSON value as a step: a whole number that fits int64, else None."""
    if not is_number(value):
        return None
    number = float(value)
    if not number.is_integer() or abs(number) >= STEP_LIMIT:
        return None
    return int(value)


def name_list(names: Sequence[str], limit: int = 8) -> str:
    """``a, b, c`` with at most ``limit`` names and a count of the rest."""
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f" … (+{len(names) - limit} more)"
    return shown


class PointBuffer:
    """Points in write order: each has the index of the source row that wrote it.

    ``add`` takes one point; ``add_arrays`` a column of a chunk (CSV readers).
    ``frame`` builds the tidy table with a private ``_row`` column that
    :func:`settle_rewrites` consumes.
    """

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._rows: list[int] = []
        self._tags: list[int] = []
        self._steps: list[int] = []
        self._values: list[float] = []
        self._epochs: list[float] = []
        self._arrays: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._sources: list[tuple[int, str]] = []  # (first row index, source label)

    def code(self, tag: str) -> int:
        code = self._codes.get(tag)
        if code is None:
            code = self._new_code(tag)
        return code

    def _new_code(self, tag: str) -> int:
        """The code of a tag not seen yet; a name no file can hold (lone surrogates of a JSON escape) is
        written with U+FFFD in their place, and names that become one share its code."""
        name = writable(tag)
        code = self._codes.get(name)
        if code is None:
            code = self._codes[name] = len(self._codes)
        return code

    def add(self, row: int, tag: str, step: int, value: float, epoch: float = math.nan) -> None:
        self._rows.append(row)
        self._tags.append(self.code(tag))
        self._steps.append(step)
        self._values.append(value)
        self._epochs.append(epoch)

    def add_record(self, row: int, step: int, record: Mapping[str, Any], skip: frozenset[str] | set[str] = frozenset(),
                   epoch: float = math.nan) -> list[str]:
        """Every number of a JSON record as a point at ``step`` (keys in ``skip`` left out); returns the keys
        whose value is neither a number nor null (booleans, text, lists …), for the caller to count."""
        codes, rows, tags, steps, values, epochs = (self._codes, self._rows, self._tags, self._steps, self._values,
                                                    self._epochs)
        other: list[str] = []
        for key, value in record.items():
            kind = type(value)
            if kind is float or kind is int:
                if key in skip:
                    continue
                if kind is int and not -_FLOAT_INT < value < _FLOAT_INT:
                    value = math.inf if value > 0 else -math.inf  # beyond float64: an overflow, kept as one
                code = codes.get(key)
                if code is None:
                    code = self.code(key)
                rows.append(row)
                tags.append(code)
                steps.append(step)
                values.append(value)
                epochs.append(epoch)
            elif value is not None and key not in skip:
                other.append(key)
        return other

    def add_arrays(
        self, rows: np.ndarray, tag: str, steps: np.ndarray, values: np.ndarray, epochs: np.ndarray
    ) -> None:
        if len(rows):
            codes = np.full(len(rows), self.code(tag), dtype=np.int64)
            self._arrays.append((rows.astype(np.int64), codes, steps.astype(np.int64), values, epochs))

    def add_coded(
        self, rows: np.ndarray, codes: np.ndarray, steps: np.ndarray, values: np.ndarray, epochs: np.ndarray
    ) -> None:
        """Points of several tags at once; ``codes`` come from :meth:`code`."""
        if len(rows):
            self._arrays.append((np.asarray(rows, dtype=np.int64), np.asarray(codes, dtype=np.int64),
                                 np.asarray(steps, dtype=np.int64), values, epochs))

    def mark_source(self, first_row: int, label: str) -> None:
        """Rows from ``first_row`` on come from ``label`` (until the next mark)."""
        self._sources.append((first_row, label))

    def __len__(self) -> int:
        return len(self._rows) + sum(len(a[0]) for a in self._arrays)

    def frame(self) -> pd.DataFrame:
        """The tidy table in write order, with ``epoch`` and the private ``_row`` column."""
        parts = [
            (
                np.asarray(self._rows, dtype=np.int64),
                np.asarray(self._tags, dtype=np.int64),
                np.asarray(self._steps, dtype=np.int64),
                np.asarray(self._values, dtype=np.float64),
                np.asarray(self._epochs, dtype=np.float64),
            ),
            *self._arrays,
        ]
        parts = [p for p in parts if len(p[0])] or parts[:1]
        if len(parts) == 1:
            rows, codes, steps, values, epochs = parts[0]
        else:
            rows, codes, steps, values, epochs = (np.concatenate([p[i] for p in parts]) for i in range(5))
        in_order = len(rows) < 2 or bool((rows[1:] >= rows[:-1]).all())
        order = slice(None) if in_order else np.argsort(rows, kind="stable")
        names = sorted(self._codes, key=self._codes.__getitem__)
        tags = (
            pd.Series(pd.Categorical.from_codes(codes[order], categories=names)).cat.reorder_categories(sorted(names))
            if names else []
        )
        optional: dict[str, Any] = {"epoch": epochs[order]}
        if self._sources:
            starts = np.asarray([s for s, _ in self._sources], dtype=np.int64)
            labels = [label for _, label in self._sources]
            unique = list(dict.fromkeys(labels))
            label_codes = np.asarray([unique.index(label) for label in labels], dtype=np.int64)
            index = np.clip(np.searchsorted(starts, rows[order], side="right") - 1, 0, None)
            optional["source"] = pd.Categorical.from_codes(label_codes[index], categories=unique)
        frame = scalar_frame(run="", tag=tags, step=steps[order], value=values[order], **optional)
        frame["_row"] = rows[order]
        return frame


@dataclass
class Settled:
    """A table after last-write-wins and phases, with what was found on the way."""

    frame: pd.DataFrame
    restarts: list[Restart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)

    def into(self, run: RunData) -> RunData:
        """Hand the settled table and everything found on the way to ``run``."""
        run.scalars = self.frame
        run.restarts.extend(self.restarts)
        run.phases.extend(self.phases)
        run.warnings.extend(self.warnings)
        run.notes.extend(self.notes)
        return run


def settle_rewrites(frame: pd.DataFrame, file: str, *, unit: str = "step", increasing: bool = False,
                    whole_rows: bool = False) -> Settled:
    """Settle points in write order: sessions (phases), restarts, repeated writes, cumulative clocks.

    1. A tag going back to (or below) its first step starts a new session: a
       :class:`Phase`, shifted to continue the previous one on one step axis
       (the rule is in :mod:`tanalyze.readers.phases`).
    2. Within a phase, a point is *re-logged* when its tag already has a point
       at the same or a later step. Consecutive re-logged rows form one restart:
       the job went back to the smallest step among them. As TensorBoard does,
       every earlier point of the phase at or after that step is dropped (the
       later writes replace the abandoned attempt), and the count is reported.
       When every replaced value is identical the rows were only written twice:
       that is a note, not a restart. A restart names ``file``, or the
       ``source`` of its first row when the table has one.
    3. A cumulative time column (seconds since the start) becomes time per step
       (see :func:`derive_step_times`).

    ``unit`` is what a step counts in this source (``step``, ``epoch``, ``iteration``). ``increasing``:
    the caller knows that the rows' steps only increase (one step per row), so no tag logs a step twice.
    ``whole_rows``: every row is one whole step written once by its session (a Keras ``CSVLogger`` row is the
    end of one epoch of one ``fit()``), so a row at a tag's highest step again is that step run again, and
    goes back like a lower step (:func:`~tanalyze.readers.phases.goes_back_to_start`): a ``fit(epochs=1)``
    called again is a new session, not a rewrite.
    """
    if frame.empty or "_row" not in frame.columns:
        return Settled(frame.drop(columns="_row", errors="ignore"))
    if increasing or not _may_relog(frame):
        out = Settled(frame.drop(columns="_row"))
    else:
        out = _settle_phases(frame, file, unit, whole_rows)
    derived, notes = derive_step_times(out.frame, out.phases, unit)
    out.frame = derived
    out.notes.extend(notes)
    return out


def _may_relog(frame: pd.DataFrame) -> bool:
    """False when no tag logs a step twice or goes back (decided from the rows' steps, without grouping by tag).

    Points are in write order. When every point of a row shares the row's step and
    those steps never decrease, a tag can only repeat a step within a run of rows at
    one step; only the points of such runs are looked at.
    """
    rows = frame["_row"].to_numpy()
    steps = frame["step"].to_numpy()
    n = len(rows)
    heads = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    row_steps = steps[heads]
    if not np.array_equal(np.repeat(row_steps, np.diff(np.append(heads, n))), steps):
        return True
    change = np.diff(row_steps)
    if (change > 0).all():
        return False
    if (change < 0).any():
        return True
    same = np.concatenate(([False], change == 0)) | np.concatenate((change == 0, [False]))  # rows sharing a step
    points = np.repeat(same, np.diff(np.append(heads, n)))
    codes = frame["tag"].cat.codes.to_numpy()[points] if isinstance(frame["tag"].dtype, pd.CategoricalDtype) \
        else pd.factorize(frame["tag"].to_numpy()[points])[0]
    return bool(pd.DataFrame({"c": codes, "s": steps[points]}).duplicated().any())


def _settle_phases(frame: pd.DataFrame, file: str, unit: str, whole_rows: bool = False) -> Settled:
    rows = frame["_row"].to_numpy()
    tag = frame["tag"]
    codes = tag.cat.codes.to_numpy() if isinstance(tag.dtype, pd.CategoricalDtype) else pd.factorize(tag.to_numpy())[0]
    starts, limited = find_phase_starts(rows, codes, frame["step"].to_numpy(), frame["value"].to_numpy(),
                                        whole_rows=whole_rows)
    if not starts:
        return _settle(frame, file, unit)
    bounds = [0, *(int(np.searchsorted(rows, start.row, side="left")) for start in starts), len(frame)]
    out = Settled(frame.iloc[0:0])
    pieces: list[pd.DataFrame] = []
    previous_last: int | None = None
    for index in range(len(bounds) - 1):
        piece = frame.iloc[bounds[index]:bounds[index + 1]].reset_index(drop=True)
        offset = 0 if previous_last is None else phase_offset(previous_last, int(piece["step"].min()))
        if offset:
            piece = _shifted(piece, offset)
        settled = _settle(piece, file, unit)
        kept = settled.frame
        out.restarts.extend(settled.restarts)
        out.notes.extend(settled.notes)
        pieces.append(kept)
        where = str(piece["source"].iloc[0]) if "source" in piece.columns else file
        first, last = int(kept["step"].min()), int(kept["step"].max())
        detail = ("the first session" if index == 0 else
                  phase_detail(unit, starts[index - 1].high, starts[index - 1].step)
                  + (f"; its {unit}s shifted by {offset:+d} to follow the previous session" if offset else ""))
        out.phases.append(Phase(index=index, first_step=first, last_step=last, offset=offset, file=where,
                                detail=detail, unit=unit))
        previous_last = last
    out.frame = pd.concat(pieces, ignore_index=True)
    if limited:
        out.warnings.append(ReadWarning(file, f"{unit}s went back to the start more than {PHASE_LIMIT} times: the "
                                        f"first {PHASE_LIMIT + 1} sessions are phases, later go-backs are treated "
                                        "as restarts (the later write wins)"))
    return out


def _shifted(piece: pd.DataFrame, offset: int) -> pd.DataFrame:
    """A phase's points moved by ``offset`` on the step axis; the epoch too when it is the step (one row per epoch)."""
    shifted = piece.assign(step=piece["step"].to_numpy() + offset)
    if "epoch" in piece.columns:
        epochs = piece["epoch"].to_numpy(dtype=np.float64, na_value=np.nan)
        known = np.isfinite(epochs)
        if known.any() and np.array_equal(epochs[known], piece["step"].to_numpy()[known]):
            shifted["epoch"] = np.where(known, epochs + offset, epochs)
    return shifted


def _settle(frame: pd.DataFrame, file: str, unit: str) -> Settled:
    """Last write wins within one phase (see :func:`settle_rewrites`, step 2)."""
    steps = frame["step"].to_numpy()
    tags = frame["tag"]
    prev_max = frame["step"].groupby(tags, observed=True).cummax().groupby(tags, observed=True).shift(1)
    relogged = (frame["step"] <= prev_max).to_numpy()
    if not relogged.any():
        return Settled(frame.drop(columns="_row"))

    rows = frame["_row"].to_numpy()
    all_rows = np.unique(rows)
    relog_rows = np.unique(rows[relogged])
    positions = np.searchsorted(all_rows, relog_rows)
    events = np.split(relog_rows, np.flatnonzero(np.diff(positions) > 1) + 1)

    keep = np.ones(len(frame), dtype=bool)
    restarts: list[Restart] = []
    notes: list[str] = []
    for event in events:
        in_event = np.isin(rows, event) & relogged
        start = int(steps[in_event].min())
        end = int(steps[in_event].max())
        earlier = keep & (rows < event[0]) & (steps >= start)
        until = int(steps[earlier].max()) if earlier.any() else None
        replaced, identical = _compare(frame, earlier, in_event)
        orphans = int(earlier.sum()) - replaced
        keep &= ~earlier
        if replaced and identical == replaced and orphans == 0:
            notes.append(
                f"{replaced} point(s) at {unit}s {start}–{end} were written twice with identical values; kept once"
            )
            continue
        detail = f"{unit}s {start}–{end} were logged again; {replaced} earlier point(s) replaced by the later writes"
        if orphans:
            detail += f", {orphans} point(s) of the abandoned attempt after {unit} {start} dropped"
        where = str(frame["source"].iloc[int(np.argmax(rows == event[0]))]) if "source" in frame.columns else file
        restarts.append(Restart(step=start, file=where, detail=detail, until=until))
    kept, dropped = keep_last_write(frame.loc[keep].reset_index(drop=True), keys=("tag", "step"))
    if dropped:
        notes.append(f"{dropped} point(s) were logged twice at one {unit} within a restart; the later write was kept")
    return Settled(kept.drop(columns="_row"), restarts, notes)


def _compare(frame: pd.DataFrame, earlier: np.ndarray, later: np.ndarray) -> tuple[int, int]:
    """How many earlier points have a later write at the same (tag, step), and how many of those are equal."""
    old = frame.loc[earlier, ["tag", "step", "value"]]
    new = frame.loc[later, ["tag", "step", "value"]].drop_duplicates(["tag", "step"], keep="last")
    if old.empty or new.empty:
        return 0, 0
    merged = old.merge(new, on=["tag", "step"], how="inner", suffixes=("_old", "_new"))
    a, b = merged["value_old"].to_numpy(), merged["value_new"].to_numpy()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return len(merged), int(same.sum())


# --- cumulative clocks ---------------------------------------------------------------

#: Names (the part after the last ``/``, any case) of columns that may hold seconds since the start.
CLOCK_NAMES = frozenset({
    "time", "elapsed", "elapsed_time", "time_elapsed", "elapsed_s", "elapsed_sec", "elapsed_seconds", "time_s",
    "train_time", "training_time", "total_time", "runtime", "run_time", "wall_time", "walltime", "wallclock",
})
#: A clock's growth over its longest session must be at least this share of its last value.
CLOCK_GROWTH = 0.75


def is_clock_name(tag: str) -> bool:
    """Whether a tag is named like a clock (``time``, ``elapsed``, ``train/time`` …)."""
    return tag.rsplit("/", 1)[-1].strip().lower() in CLOCK_NAMES


def derive_step_times(frame: pd.DataFrame, phases: Sequence[Phase] = (), unit: str = "step"
                      ) -> tuple[pd.DataFrame, list[str]]:
    """Cumulative time columns (seconds since the start) as time per ``unit``, and as wall time.

    Ultralytics >= 8.1 writes ``time`` = seconds since training started; read as
    a time per step it makes every healthy run look ever slower. A tag is such a
    clock when it is named like one (:data:`CLOCK_NAMES`), has at least 3 points
    at distinct steps, is finite, non-negative and never decreases within a
    session (phase), and most of its last value is growth, not a constant
    (``last - first >= 0.75 * last`` over its longest session: a per-step time
    that happens to creep up fails that). It is replaced by ``<tag>/per_<unit>``:
    the difference between consecutive rows over the steps between them, and for
    the first row of each session its value over its step as written (the clock
    and the steps both count from 0: Ultralytics' epoch 1 took ``time`` seconds; a
    first row at step 0 has nothing to divide by and is dropped, counted in the
    note). Its values become the ``wall_time`` of every point at its steps that
    has none (seconds since the start, continued across sessions; not seconds
    since 1970). Row order is kept.
    """
    if frame.empty or not isinstance(frame["tag"].dtype, pd.CategoricalDtype):
        return frame, []
    categories = [str(c) for c in frame["tag"].cat.categories]
    clocks = [i for i, name in enumerate(categories) if is_clock_name(name)]
    if not clocks:
        return frame, []
    codes = frame["tag"].cat.codes.to_numpy().astype(np.int64)
    steps = frame["step"].to_numpy()
    values = frame["value"].to_numpy()
    notes: list[str] = []
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    renamed: dict[int, str] = {}
    for code in clocks:
        tag = categories[code]
        new_tag = f"{tag}/per_{unit}"
        if new_tag in categories:
            continue
        positions = np.flatnonzero(codes == code)
        clock = _clock(steps[positions], values[positions], phases)
        if clock is None:
            continue
        order, keep, per_step, clock_wall = clock
        positions = positions[order]
        found.append((positions, keep, per_step, steps[positions], clock_wall))
        renamed[code] = new_tag
        at_zero = int((~keep).sum())
        notes.append(
            f"{tag!r} only grows: seconds since the start ({len(positions)} value(s)). Kept as the wall_time of the "
            f"points at its {unit}s and turned into {new_tag!r}: seconds per {unit} between consecutive rows, and for "
            f"the first row of a session its time over its {unit} (both counted from 0)"
            + (f"; {at_zero} first row(s) at {unit} 0 have nothing to divide by and are not kept" if at_zero else "")
        )
    if not renamed:
        return frame, []
    if not any((~keep).any() for _, keep, *_ in found):  # every row kept: no table to copy
        new_values, new_wall = values.copy(), frame["wall_time"].to_numpy(copy=True)
        for positions, _, per_step, clock_steps, clock_wall in found:
            new_values[positions] = per_step
            _fill_wall(new_wall, steps, clock_steps, clock_wall)
        names = [renamed.get(i, name) for i, name in enumerate(categories)]
        ordered = sorted(names)
        lookup = np.asarray([ordered.index(name) for name in names], dtype=np.int64)
        return frame.assign(tag=pd.Categorical.from_codes(lookup[codes], categories=ordered), value=new_values,
                            wall_time=new_wall), notes
    names = [renamed.get(i, name) for i, name in enumerate(categories)]
    ordered = sorted(names)
    lookup = np.asarray([ordered.index(name) for name in names], dtype=np.int64)
    dropped = np.sort(np.concatenate([positions[~keep] for positions, keep, *_ in found]))
    keep_rows = np.ones(len(frame), dtype=bool)
    keep_rows[dropped] = False
    new_values, new_wall, new_steps = values[keep_rows], frame["wall_time"].to_numpy()[keep_rows], steps[keep_rows]
    for positions, keep, per_step, clock_steps, clock_wall in found:
        kept = positions[keep]
        new_values[kept - np.searchsorted(dropped, kept)] = per_step  # where the kept rows moved to
        _fill_wall(new_wall, new_steps, clock_steps, clock_wall)
    new = {"tag": pd.Categorical.from_codes(lookup[codes[keep_rows]], categories=ordered), "value": new_values,
           "wall_time": new_wall}
    return _take(frame, keep_rows, new), notes


def _fill_wall(wall: np.ndarray, steps: np.ndarray, clock_steps: np.ndarray, clock_wall: np.ndarray) -> None:
    """Set the wall time of every point at a step of the clock (sorted, distinct steps) that has none."""
    heads = np.flatnonzero(np.concatenate(([True], steps[1:] != steps[:-1])))  # runs of one step: one look-up each
    distinct = steps[heads]
    at = np.clip(np.searchsorted(clock_steps, distinct), 0, len(clock_steps) - 1)
    found = np.repeat(np.where(clock_steps[at] == distinct, clock_wall[at], np.nan), np.diff(np.append(heads, len(steps))))
    missing = np.isnan(wall)
    wall[missing] = found[missing]


def _take(frame: pd.DataFrame, keep: np.ndarray, new: Mapping[str, Any]) -> pd.DataFrame:
    """The rows of ``frame`` where ``keep`` is true, with the columns of ``new`` (already taken) put in
    their place: column by column, numpy all the way (categories as codes), no block consolidation."""
    data: dict[str, Any] = {}
    for name in frame.columns:
        if name in new:
            data[name] = new[name]
            continue
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            data[name] = pd.Categorical.from_codes(column.cat.codes.to_numpy()[keep], dtype=column.dtype)
        elif isinstance(column.dtype, np.dtype):
            data[name] = column.to_numpy()[keep]
        else:
            data[name] = column.array[keep]
    return pd.DataFrame(data, copy=False)


def _clock(steps: np.ndarray, values: np.ndarray, phases: Sequence[Phase]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(order by step, which sorted points get a per-step time, those times, the wall time of every sorted point)
    when the points are a cumulative clock, else None."""
    if len(steps) < 3:
        return None
    order = np.argsort(steps, kind="stable")
    s, v = steps[order], values[order]
    if (np.diff(s) <= 0).any() or not np.isfinite(v).all() or (v < 0).any():
        return None
    firsts = np.asarray([p.first_step for p in phases], dtype=np.int64)
    session = np.searchsorted(firsts, s, side="right") - 1 if len(firsts) else np.zeros(len(s), dtype=np.int64)
    new_session = np.concatenate(([True], session[1:] != session[:-1]))
    if (np.diff(v)[~new_session[1:]] < 0).any():
        return None
    bounds = np.flatnonzero(new_session)
    ends = np.append(bounds[1:], len(s))
    longest = int(np.argmax(ends - bounds))
    a, b = bounds[longest], ends[longest]
    if b - a < 3 or v[b - 1] <= 0 or v[b - 1] - v[a] < CLOCK_GROWTH * v[b - 1]:
        return None
    per_step = np.empty(len(s))
    per_step[1:] = np.diff(v) / np.diff(s)
    # a session's first row: its time over its step as the source wrote it (both counted from 0)
    offsets = np.asarray([p.offset for p in phases], dtype=np.int64)
    written = s[bounds] - (offsets[np.clip(session[bounds], 0, None)] if len(offsets) else 0)
    keep = ~new_session
    divisible = written > 0
    keep[bounds[divisible]] = True
    per_step[bounds[divisible]] = v[bounds[divisible]] / written[divisible]
    carry = np.zeros(len(bounds))
    carry[1:] = np.cumsum(v[ends[:-1] - 1])
    wall = v + np.repeat(carry, ends - bounds)
    return order, keep, per_step[keep], wall


# --- text and config files -------------------------------------------------

MAX_CONFIG_BYTES = 16 * 1024 * 1024


def read_head(path: Path) -> bytes:
    """The first bytes of a file beside the one being sniffed (as discovery hands each file's to ``sniff``); empty
    when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return b""


def read_text(path: Path, *, limit: int | None = None) -> tuple[str, int]:
    """A file's text (BOM dropped, undecodable bytes replaced) and how many bytes were undecodable.

    Raises :class:`FormatError` when the file cannot be opened or is over ``limit`` bytes.
    """
    try:
        size = path.stat().st_size
        if limit is not None and size > limit:
            raise FormatError(path, f"file is {size:,} bytes; more than the {limit:,} bytes expected of it")
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from exc
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    return text, max(bad, 0)


class _TolerantLoader(yaml.SafeLoader):
    """Safe YAML that reads Python-specific tags (``!!python/object:argparse.Namespace``) as plain data."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.calls: list[str] = []  # tags that asked for a call (``!!python/object/apply:os.system``)


#: Python YAML tags that would call something under an unsafe loader (read here as plain data). References
#: (``!!python/name:torch.nn.functional.relu``) are common in dumped configs and are not warned about.
_CALLING_TAGS = ("object/apply:", "object/new:")


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if suffix.startswith(_CALLING_TAGS) and isinstance(loader, _TolerantLoader):
        loader.calls.append(node.tag)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _plain)
_TolerantLoader.add_multi_constructor("!", _plain)


def load_config(path: Path) -> tuple[dict[str, Any] | None, ReadWarning | None]:
    """A YAML or JSON config beside a log: its mapping, or a warning saying why not.

    Python-specific YAML tags are read as plain data, never executed. A
    document that is not a mapping is returned under the key ``value``.
    """
    try:
        text, _ = read_text(path, limit=MAX_CONFIG_BYTES)
    except FormatError as exc:
        return None, ReadWarning(str(path), exc.reason)
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            loader = _TolerantLoader(text)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
    except (ValueError, RecursionError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, ReadWarning(str(path), f"config not read: {reason}")
    calls = [] if path.suffix.lower() == ".json" else loader.calls
    if calls:  # what a config should never hold; kept as data, but said
        shown = ", ".join(sorted(set(calls))[:3])
        warning = ReadWarning(str(path), f"{len(calls)} YAML tag(s) asking to run code ({shown}) were read as plain "
                              "data, not executed", count=len(calls))
        if data is None or not isinstance(data, Mapping):
            return ({} if data is None else {"value": data}), warning
        return {str(k): v for k, v in data.items()}, warning
    if data is None:
        return {}, None
    if not isinstance(data, Mapping):
        return {"value": data}, None
    return {str(k): v for k, v in data.items()}, None


# --- COCO metrics ----------------------------------------------------------------

#: pycocotools' ``COCOeval.summarize`` writes -1 for a stat it could not compute (no ground-truth objects of that
#: size in the evaluated images: ``bbox_mAP_l`` on a data set of small objects); trainers log it as it is.
COCO_UNDEFINED = -1.0
#: The names toolboxes log COCOeval's stats under: MMEngine ``coco/bbox_mAP_l``, ``coco/AR@100``, ``lvis/…``
#: (any metric of the COCO and LVIS evaluators); MMDetection 2 ``bbox_mAP_l``, ``segm_mAP_s``, ``AR_s@1000``.
_COCO_METRIC = re.compile(r"^(?:(?:coco|lvis)/.+|(?:bbox|segm|proposal|keypoints?)_(?:mAP|AP|AR)\w*(?:@\d+)?"
                          r"|AR(?:_[sml])?@\d+)$")


def is_coco_metric(key: str) -> bool:
    """Whether a logged key is one of COCOeval's stats (``coco/bbox_mAP_l``, ``bbox_mAP_l``, ``AR@100`` …)."""
    return _COCO_METRIC.match(key) is not None


def coco_undefined_note(counts: Mapping[str, int], written: str = "-1") -> str:
    """The note for COCO stats logged as ``written`` (pycocotools' 'not computed') and read as missing (NaN)."""
    total = sum(counts.values())
    tags = [f"{tag} ({count})" if count > 1 else tag for tag, count in sorted(counts.items())]
    return (f"{total} COCO metric value(s) logged as {written} are missing (NaN): pycocotools gives -1 for a stat it "
            f"did not compute (no ground-truth objects of that size in the evaluated images), no score; under "
            f"{name_list(tags)}")


# --- JSON lines ------------------------------------------------------------------

#: Lines handed to one ``json.loads`` call (as an array): the per-call cost is paid once per batch.
_JSON_BATCH = 4096


class JsonLines:
    """The objects of a JSON-lines file, streamed one line at a time, counting what could not be read.

    Iterate once to get ``(line number, object)`` pairs; afterwards
    :meth:`warnings` describes the skipped lines. Opening problems raise
    :class:`FormatError` when iteration starts.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bad_lines: list[int] = []
        self.not_objects = 0
        self.undecodable_bytes = 0
        self.truncated_tail = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        last_number, last_complete = 0, True
        batch: list[tuple[int, bytes]] = []
        for number, raw in enumerate(_lines(self.path), start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            last_number, last_complete = number, raw.endswith(b"\n")
            stripped = raw.strip()
            if not stripped:
                continue
            batch.append((number, stripped))
            if len(batch) >= _JSON_BATCH:
                yield from self._batch(batch)
                batch = []
        if batch:
            yield from self._batch(batch)
        self.truncated_tail = bool(self.bad_lines) and self.bad_lines[-1] == last_number and not last_complete

    def _batch(self, batch: list[tuple[int, bytes]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Many lines parsed by one ``json.loads`` (an array of them); line by line when that fails or
        does not give one object per line."""
        try:
            records = json.loads(b"[" + b",".join(line for _, line in batch) + b"]")
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            records = None
        if records is not None and len(records) == len(batch) and all(type(r) is dict for r in records):
            for (number, _), record in zip(batch, records, strict=True):
                yield number, record
            return
        for number, line in batch:
            record = self._one(number, line)
            if record is not None:
                yield number, record

    def _one(self, number: int, line: bytes) -> dict[str, Any] | None:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            self.undecodable_bytes += text.count("\ufffd")
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            self.bad_lines.append(number)
            return None
        if isinstance(record, dict):
            return record
        self.not_objects += 1
        return None

    def warnings(self, file: str) -> list[ReadWarning]:
        out = []
        if self.bad_lines:
            where = ", ".join(str(n) for n in self.bad_lines[:5]) + (" …" if len(self.bad_lines) > 5 else "")
            tail = " (the last line is cut off: file truncated?)" if self.truncated_tail else ""
            out.append(ReadWarning(file, f"{len(self.bad_lines)} line(s) are not valid JSON and were skipped{tail}",
                                   f"line {where}", len(self.bad_lines)))
        if self.not_objects:
            out.append(ReadWarning(file, f"{self.not_objects} line(s) are JSON but not objects; skipped",
                                   count=self.not_objects))
        if self.undecodable_bytes:
            out.append(ReadWarning(file, f"{self.undecodable_bytes} byte(s) are not UTF-8; replaced",
                                   count=self.undecodable_bytes))
        return out


def _lines(path: Path) -> Iterator[bytes]:
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        yield from handle


_TIMESTAMP = re.compile(r"^\d{8}_\d{6}$")


def json_object_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[int]]:
    """The JSON objects of a JSON-lines text, and the (1-based) numbers of the lines that are not objects.

    Blank lines are neither."""
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            bad.append(number)
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad.append(number)
    return rows, bad


def first_json_object(head: bytes) -> dict | None:
    """The JSON object on the first line of ``head`` (a file's first bytes), or None: sniffing JSON-lines logs."""
    return _json_object(head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip())


#: How many of a file's first non-blank lines sniffing looks at for its first JSON object: the lines before it may
#: not be JSON (a record cut at the file's start, a launcher's ``Not using distributed mode``); the reader skips
#: them with a warning naming their line numbers (:class:`JsonLines`).
SNIFF_LINES = 5
#: At most this much of a file is read to find that object when the sniffed head ends inside those lines.
_SNIFF_READ_LIMIT = 2 << 20


def leading_json_object(path: Path, head: bytes, lines: int = SNIFF_LINES) -> dict | None:
    """The first JSON object among the first ``lines`` non-blank lines of ``path`` (whose first bytes are ``head``),
    or None: sniffing JSON-lines logs whose first line or two are not JSON.

    The head answers when it holds that object or ``lines`` complete lines; a line the head cuts (a DETR epoch
    record is longer than it) is read whole from the file only when it may be the object (it starts with ``{``)
    or, when no line ended within the head, the head is the inside of a JSON record (the end of one cut at the
    file's start): up to :data:`_SNIFF_READ_LIMIT` bytes in all. A console's head without a line break (progress
    bars redrawn with carriage returns) is not read on.
    """
    data = head.removeprefix(b"\xef\xbb\xbf")
    cut = len(head) >= HEAD_BYTES and not head.endswith(b"\n")
    pieces = data.split(b"\n")
    record, seen = _first_object(pieces[:-1] if cut else pieces, lines)
    if record is not None or seen >= lines:
        return record
    if not cut or not (pieces[-1].lstrip().startswith(b"{") or seen == 0 and _inside_json(data)):
        return None
    try:
        with open(path, "rb") as handle:
            return _first_object(_lines_within(handle, _SNIFF_READ_LIMIT), lines)[0]
    except OSError:
        return None


def _first_object(lines: Iterable[bytes], most: int) -> tuple[dict | None, int]:
    """The first JSON object among the non-blank ``lines`` (``most`` of them looked at, at most), and how many
    non-blank lines before it were not one."""
    seen = 0
    for line in lines:
        stripped = line.removeprefix(b"\xef\xbb\xbf").strip()
        if not stripped:
            continue
        record = _json_object(stripped)
        if record is not None:
            return record, seen
        seen += 1
        if seen >= most:
            break
    return None, seen


def _lines_within(handle: BinaryIO, budget: int) -> Iterator[bytes]:
    """The lines of ``handle`` while ``budget`` bytes last (the last one cut at it)."""
    while budget > 0:
        line = handle.readline(budget)
        if not line:
            return
        budget -= len(line)
        yield line


#: ``"key": value`` as JSON writes it (a Python dict printed to a console quotes its keys with ``'``)
_JSON_PAIR = re.compile(rb'"[\w./@() -]{1,200}": [-\d\[{"tfnNI]')


def _inside_json(head: bytes) -> bool:
    """Whether a head without a line break is the inside of a JSON record: JSON's pairs, no carriage return."""
    return b"\r" not in head and len(_JSON_PAIR.findall(head, 0, 1024)) >= 3


def _json_object(line: bytes) -> dict | None:
    if not line.startswith(b"{"):
        return None
    try:
        record = json.loads(line.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def is_timestamp_name(name: str) -> bool:
    """Whether a folder/file stem is a ``YYYYMMDD_HHMMSS`` launch stamp (MMEngine work dirs)."""
    return bool(_TIMESTAMP.match(name))
