"""W&B history rows (from ``.wandb`` files, ``wandb-history.jsonl`` or API exports) as tidy points.

W&B numbers every ``wandb.log`` call with its own counter ``_step``; the
training step usually travels beside it as a logged key (``train/global_step``
for HF Trainer, ``trainer/global_step`` for Lightning, ``iter`` for nanoGPT).
The tidy ``step`` is that training step when the run declared it with
``define_metric(step_metric=...)`` or when a well-known step key is logged in
most rows; otherwise ``_step``. The choice is always stated in a note. Rows
without the step key take the last value logged before them, as W&B's
``step_sync`` does. Steps that go back (a resumed run re-logging steps) become
:class:`Restart` records and the later write wins; steps that go back to the
start (a second training session logged into the same run) start a new
:class:`Phase`, shifted to follow the previous one (the rule is :mod:`tanalyze.readers.phases`).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.base import Phase, ReadWarning, Restart
from tanalyze.readers.phases import find_phase_starts, phase_detail, phase_offset
from tanalyze.schema import concat_frames, empty_histograms, empty_scalars, keep_last_write, scalar_frame
from tanalyze.text import writable

__all__ = ["Sparse", "SparseBuilder", "History", "sparse_from_rows", "sparse_from_frame", "history_to_tidy", "system_to_tidy",
           "STEP_KEYS", "RESERVED", "as_step"]

#: Logged keys that carry the training step, most specific first.
STEP_KEYS: tuple[str, ...] = (
    "trainer/global_step", "train/global_step", "global_step", "iter", "iteration", "step", "train/step",
)
RESERVED: frozenset[str] = frozenset({"_step", "_runtime", "_timestamp"})


@dataclass
class Sparse:
    """A history table as logged: for each key, the row numbers where it was logged and its values."""

    n_rows: int
    rows: dict[str, np.ndarray] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    media: Counter[str] = field(default_factory=Counter)
    non_numeric: Counter[str] = field(default_factory=Counter)
    histograms: list[tuple[str, int, np.ndarray, np.ndarray]] = field(default_factory=list)


def as_step(value: Any) -> int | None:
    """A logged value as a step: a whole number from 0 up to 2**62; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value != int(value) or not 0 <= value < 2**62:
        return None
    return int(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    return None


class SparseBuilder:
    """Collects dict rows one at a time into compact per-key columns (a long run does not need
    every row in memory as a dict)."""

    def __init__(self) -> None:
        self.n_rows = 0
        self._index: dict[str, array] = {}
        self._values: dict[str, array] = {}
        self._out = Sparse(0)

    def add(self, row: Mapping[str, Any]) -> None:
        n = self.n_rows
        self.n_rows += 1
        for key, value in row.items():
            if type(value) is float or type(value) is int:  # nearly every value: the fast path
                self._append(key, n, value)
            elif isinstance(value, dict) and "_type" not in value:
                for sub_key, sub_value in _flatten(value, f"{key}."):
                    self._other(sub_key, sub_value, n)
            else:
                self._other(key, value, n)

    def _append(self, key: str, n: int, value: float) -> None:
        index = self._index.get(key)
        if index is None:
            key = writable(key)  # (lone surrogates of a JSON escape: U+FFFD, as no file can hold them)
            index = self._index.get(key)
            if index is None:
                index = self._index[key] = array("q")
                self._values[key] = array("d")
        index.append(n)
        self._values[key].append(value)

    def _other(self, key: str, value: Any, n: int) -> None:
        out = self._out
        number = _number(value)
        if number is not None:
            self._append(key, n, number)
        elif value is None:
            return
        elif isinstance(value, dict) and value.get("_type") == "histogram":
            histogram = _histogram(value)
            if histogram is None:
                out.media[key] += 1
            else:
                out.histograms.append((writable(key), n, *histogram))
        elif isinstance(value, dict) and "_type" in value:
            out.media[key] += 1
        else:
            out.non_numeric[key] += 1

    def build(self) -> Sparse:
        out = self._out
        out.n_rows = self.n_rows
        out.rows = {k: np.frombuffer(v, dtype=np.int64).copy() for k, v in self._index.items()}
        out.values = {k: np.frombuffer(v, dtype=np.float64).copy() for k, v in self._values.items()}
        return out


def sparse_from_rows(rows: Iterable[Mapping[str, Any]]) -> Sparse:
    """Columns from dict rows in write order; nested dicts are flattened with ``.``, media counted."""
    builder = SparseBuilder()
    for row in rows:
        builder.add(row)
    return builder.build()


def _flatten(row: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "_type" not in value and value:
            yield from _flatten(value, f"{name}.")
        else:
            yield name, value


def _histogram(value: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """W&B's ``{"_type": "histogram", "bins": edges, "values": counts}`` as (edges, counts)."""
    try:
        edges = np.asarray(value.get("bins"), dtype=np.float64)
        counts = np.asarray(value.get("values"), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if edges.ndim != 1 or counts.ndim != 1 or len(edges) != len(counts) + 1 or len(counts) == 0:
        return None
    return edges, counts


def sparse_from_frame(frame: pd.DataFrame, logged: pd.DataFrame | None = None) -> Sparse:
    """Columns from a wide table (one row per logged row); a cell is logged where ``logged`` is true.

    Without ``logged``, missing cells (NaN/NA) count as not logged. Text that is
    not a number (media references, strings) is counted, not kept.
    """
    out = Sparse(len(frame))
    for column in frame.columns:
        series = frame[column]
        mask = series.notna().to_numpy() if logged is None else logged[column].to_numpy(dtype=bool)
        if not mask.any():
            continue
        if pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
            numbers = series.astype("float64").to_numpy()
            numeric = mask
        else:
            text = series.astype("string").str.strip().str.lower()
            numbers = pd.to_numeric(text.replace({"true": "1", "false": "0"}), errors="coerce").astype("float64").to_numpy()
            literal_nan = text.isin(["nan", "-nan", "+nan"]).fillna(False).to_numpy(dtype=bool)
            numeric = mask & (~np.isnan(numbers) | literal_nan)
            bad = mask & ~numeric
            if bad.any():
                is_media = text[bad].str.contains("_type", regex=False).fillna(False)
                if int(is_media.sum()):
                    out.media[str(column)] += int(is_media.sum())
                if int((~is_media).sum()):
                    out.non_numeric[str(column)] += int((~is_media).sum())
        if numeric.any():
            out.rows[str(column)] = np.flatnonzero(numeric)
            out.values[str(column)] = numbers[numeric]
    return out


@dataclass
class History:
    """Tidy points of one history table and what was decided or skipped on the way."""

    scalars: pd.DataFrame = field(default_factory=empty_scalars)
    histograms: pd.DataFrame = field(default_factory=empty_histograms)
    step_key: str | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)


def choose_step_key(sparse: Sparse, declared: str | None = None, metric_rows: np.ndarray | None = None) -> str | None:
    """The key whose values are the training step (see the module docstring); ``None`` for row order.

    ``metric_rows``: :func:`_metric_rows` of ``sparse`` when the caller has it already.
    """
    if declared and declared in sparse.rows:
        return declared
    if metric_rows is None:
        metric_rows = _metric_rows(sparse)
    if len(metric_rows):
        for key in STEP_KEYS:
            if key not in sparse.rows:
                continue
            values = sparse.values[key]
            finite = values[np.isfinite(values)]
            if len(finite) < len(values) or (finite < 0).any() or (finite != np.round(finite)).any():
                continue
            logged = np.zeros(sparse.n_rows, dtype=bool)
            logged[sparse.rows[key]] = True
            covered = logged[metric_rows].mean()
            if covered >= 0.5 and _distinct(finite) >= 0.25 * len(finite):
                return key
    return "_step" if "_step" in sparse.rows else None


def _distinct(values: np.ndarray) -> int:
    """How many different values ``values`` holds (a step key's values are usually in order: no sort then)."""
    if len(values) < 2:
        return len(values)
    changes = values[1:] != values[:-1]
    if (values[1:] >= values[:-1]).all():
        return 1 + int(changes.sum())
    return len(np.unique(values))


def _metric_rows(sparse: Sparse) -> np.ndarray:
    """The rows (in order, each once) where a metric, not one of W&B's ``_`` keys, was logged."""
    keys = [k for k in sparse.rows if k not in RESERVED and not k.startswith("_")]
    if not keys:
        return np.empty(0, dtype=np.int64)
    logged = np.zeros(sparse.n_rows, dtype=bool)
    for key in keys:
        logged[sparse.rows[key]] = True
    return np.flatnonzero(logged)


def _per_row(sparse: Sparse, key: str, carry: bool) -> np.ndarray:
    """The value of ``key`` in every row (NaN where not logged; carried forward when ``carry``)."""
    out = np.full(sparse.n_rows, np.nan)
    if key in sparse.rows:
        out[sparse.rows[key]] = sparse.values[key]
    if carry:
        out = pd.Series(out).ffill().to_numpy()
    return out


def history_to_tidy(sparse: Sparse, *, file: str, declared_step: str | None = None) -> History:
    """Turn W&B history columns into tidy points (step, wall_time from ``_timestamp``)."""
    out = History()
    if sparse.n_rows == 0:
        return out
    metric_rows = _metric_rows(sparse)
    key = choose_step_key(sparse, declared_step, metric_rows)
    out.step_key = key
    if key is None:
        steps = np.arange(sparse.n_rows, dtype=np.float64)
        out.notes.append(f"{_name(file)}: history has no _step; points are numbered in row order")
    else:
        steps = _per_row(sparse, key, carry=True)
        how = "declared with define_metric as the x-axis" if key == declared_step else "logged in the rows"
        if key == "_step":
            out.notes.append(f"{_name(file)}: step = W&B's _step (one per wandb.log call; no training-step key found)")
        else:
            out.notes.append(f"{_name(file)}: step = logged '{key}' ({how}); W&B's _step counter is not used")
    wall = _per_row(sparse, "_timestamp", carry=False)
    steps, out.phases = _phases(steps, metric_rows, file, key)

    tags: list[str] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # rows, steps, values of each tag
    unplaced = 0
    for tag, rows in sparse.rows.items():
        if tag in RESERVED or tag == key or tag.startswith("_"):
            continue
        tag_steps = steps[rows]
        ok = np.isfinite(tag_steps) & (np.abs(tag_steps) < 2.0**62)
        unplaced += int((~ok).sum())
        if not ok.any():
            continue
        tags.append(tag)
        parts.append((rows[ok], tag_steps[ok].astype(np.int64), sparse.values[tag][ok]))
    if unplaced:
        out.warnings.append(
            ReadWarning(file, f"{unplaced} value(s) have no usable '{key}' (logged before the first one, or "
                        "not a number that fits a step); skipped", count=unplaced)
        )
    if parts:
        out.restarts = _restarts(steps, file, key)
        # By tag name, then step, then write order (the row; for one row, the tags' order): of the points
        # of one tag at one step the last is the later write, the one kept.
        names = sorted(tags)
        rank = np.empty(len(tags), dtype=np.int64)
        rank[[tags.index(name) for name in names]] = np.arange(len(tags))
        codes = np.concatenate([np.full(len(part[0]), rank[i], dtype=np.int64) for i, part in enumerate(parts)])
        order = np.concatenate([part[0] for part in parts])
        step = np.concatenate([part[1] for part in parts])
        value = np.concatenate([part[2] for part in parts])
        sort = np.lexsort((order, step, codes))
        codes, order, step, value = codes[sort], order[sort], step[sort], value[sort]
        last = np.ones(len(codes), dtype=bool)
        last[:-1] = (codes[1:] != codes[:-1]) | (step[1:] != step[:-1])
        dropped = len(last) - int(last.sum())
        if dropped:
            out.notes.append(f"{_name(file)}: {dropped} point(s) logged again at a step already seen; the later write was kept")
            codes, order, step, value = codes[last], order[last], step[last], value[last]
        tag_column = pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype="str"))
        out.scalars = scalar_frame(
            run="", tag=pd.Series(tag_column), step=step, value=value, wall_time=wall[order],
            source=pd.Categorical.from_codes(np.zeros(len(step), dtype=np.int8), categories=pd.Index([_name(file)], dtype="str")),
        )
    out.histograms = _histogram_frame(sparse, steps, wall)
    _skipped(sparse, file, out)
    return out


def _phases(steps: np.ndarray, metric_rows: np.ndarray, file: str, key: str | None) -> tuple[np.ndarray, list[Phase]]:
    """The rows' steps with later sessions shifted to follow earlier ones, and the sessions (see the module doc).

    Only rows that log a metric count: a step key logged alone does not start a session.
    """
    rows = metric_rows[np.isfinite(steps[metric_rows]) & (np.abs(steps[metric_rows]) < 2.0**62)]
    if len(rows) < 2:
        return steps, []
    row_steps = steps[rows].astype(np.int64)
    starts, _ = find_phase_starts(rows, np.zeros(len(rows), np.int64), row_steps)
    if not starts:
        return steps, []
    unit = f"{key!r}" if key else "the row number"
    bounds = [0, *(int(np.searchsorted(rows, start.row)) for start in starts), len(rows)]
    shifted = steps.copy()
    phases: list[Phase] = []
    previous_last: int | None = None
    for index in range(len(bounds) - 1):
        mine = row_steps[bounds[index]:bounds[index + 1]]
        offset = 0 if previous_last is None else phase_offset(previous_last, int(mine.min()))
        first_row = int(rows[bounds[index]])
        end_row = int(rows[bounds[index + 1]]) if index + 1 < len(bounds) - 1 else len(steps)
        shifted[first_row:end_row] += offset
        first, last = int(mine.min()) + offset, int(mine.max()) + offset
        detail = ("the first session" if index == 0 else
                  phase_detail(unit, starts[index - 1].high, starts[index - 1].step,
                               "a new training session logged into the same run")
                  + (f"; its steps shifted by {offset:+d} to follow the previous session" if offset else ""))
        phases.append(Phase(index=index, first_step=first, last_step=last, offset=offset, file=_name(file),
                            detail=detail))
        previous_last = last
    return shifted, phases


def _restarts(steps: np.ndarray, file: str, key: str | None) -> list[Restart]:
    """Every place a step is lower than the one before it (so also not above the highest so far)."""
    finite = steps[np.isfinite(steps) & (np.abs(steps) < 2.0**62)]
    back = np.flatnonzero(finite[1:] < finite[:-1]) + 1
    if not len(back):
        return []
    highs = np.maximum.accumulate(finite)[back - 1]
    return [Restart(int(value), file, f"'{key}' went back from {int(high)} to {int(value)} (resumed run)", int(high))
            for value, high in zip(finite[back].tolist(), highs.tolist(), strict=True)]


def _histogram_frame(sparse: Sparse, steps: np.ndarray, wall: np.ndarray) -> pd.DataFrame:
    rows = []
    for tag, row, edges, counts in sparse.histograms:
        if not np.isfinite(steps[row]):
            continue
        rows.append({
            "run": "", "tag": tag, "step": int(steps[row]), "wall_time": wall[row],
            "min": float(edges[0]), "max": float(edges[-1]), "num": float(counts.sum()),
            "sum": np.nan, "sum_squares": np.nan,  # W&B keeps only the binned counts
            "bucket_limits": edges[1:], "bucket_counts": counts,
        })
    if not rows:
        return empty_histograms()
    frame = pd.DataFrame(rows)
    frame["run"] = frame["run"].astype("category")
    frame["tag"] = frame["tag"].astype("category")
    return frame


def _skipped(sparse: Sparse, file: str, out: History) -> None:
    if sparse.media:
        total = sum(sparse.media.values())
        keys = ", ".join(f"{k} ({n})" for k, n in sparse.media.most_common(5))
        out.notes.append(f"{_name(file)}: {total} media/table value(s) skipped (not scalars): {keys}")
    if sparse.non_numeric:
        total = sum(sparse.non_numeric.values())
        keys = ", ".join(f"{k} ({n})" for k, n in sparse.non_numeric.most_common(5))
        out.warnings.append(ReadWarning(file, f"{total} non-numeric value(s) skipped: {keys}", count=total))


def system_to_tidy(
    samples: Iterable[tuple[float, float | None, Mapping[str, Any]]], *, file: str, start_time: float | None = None
) -> History:
    """System metrics (GPU/CPU/memory) as ``system/<key>`` tags.

    ``samples`` are ``(timestamp, runtime, values)``. Their step is whole seconds
    since the run started (``_runtime``, else ``timestamp - start_time``, else the
    sample's number), because W&B samples them on a clock, not per training step;
    ``wall_time`` lines them up with the training curves.
    """
    out = History()
    rows = []
    basis = "seconds since the run started"
    for number, (stamp, runtime, values) in enumerate(samples):
        if runtime is not None and np.isfinite(runtime):
            step = int(round(runtime))
        elif start_time is not None and np.isfinite(stamp):
            step = int(round(stamp - start_time))
        else:
            step, basis = number, "sample number"
        for key, value in _flatten(values):
            number_value = _number(value)
            if number_value is None or key.startswith("_"):
                continue
            tag = "system/" + (key[len("system."):] if key.startswith("system.") else key)
            rows.append((tag, step, number_value, stamp))
    if not rows:
        return out
    table = pd.DataFrame(rows, columns=["tag", "step", "value", "wall_time"])
    table, dropped = keep_last_write(table, ("tag", "step"))
    n_samples = table.groupby("tag").size().max()
    out.notes.append(
        f"{_name(file)}: {n_samples} system sample(s) as system/* tags; their step is {basis}, "
        "not the training step (use wall_time to line them up)"
    )
    if dropped:
        out.notes.append(f"{_name(file)}: {dropped} system value(s) sampled twice within one second; the later was kept")
    out.scalars = _frame(table, file)
    return out


def _frame(table: pd.DataFrame, file: str) -> pd.DataFrame:
    return scalar_frame(
        run="", tag=table["tag"].to_numpy(), step=table["step"].to_numpy(), value=table["value"].to_numpy(),
        wall_time=table["wall_time"].to_numpy(), source=[_name(file)] * len(table),
    )


def combine(parts: Iterable[History]) -> History:
    """Several histories of one run in one."""
    out = History()
    scalars, histograms = [], []
    for part in parts:
        scalars.append(part.scalars)
        histograms.append(part.histograms)
        out.notes.extend(part.notes)
        out.warnings.extend(part.warnings)
        out.restarts.extend(part.restarts)
        out.phases.extend(part.phases)
        out.step_key = out.step_key or part.step_key
    out.scalars = concat_frames([s for s in scalars if len(s)])
    kept = [h for h in histograms if len(h)]
    out.histograms = pd.concat(kept, ignore_index=True) if kept else empty_histograms()
    return out


def _name(file: str) -> str:
    return file.replace("\\", "/").rsplit("/", 1)[-1]
