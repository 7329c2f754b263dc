"""Logs from a pandas DataFrame the user already has, so notebooks can diagnose, check and report on it.

The shape is told from the columns:

- **long**: ``tag, step, value`` with optionally ``run`` (tanalyze's own tidy table) or ``dir_name``
  (tbparse's ``SummaryReader(path).scalars``, ``extra_columns={"dir_name", "wall_time"}`` included) and
  ``wall_time`` (seconds since the epoch). A NaN value is a logged NaN and is kept.
- **MLflow metric history**: ``key, value, timestamp, step`` (``MlflowClient().get_metric_history`` as
  a frame, ``timestamp`` in milliseconds), optionally ``run_id``.
- **wide**: one column per metric, one row per logging call, and a step column: W&B's ``run.history()``
  (``_step``, ``_runtime``, ``_timestamp``; read as :mod:`tanalyze.readers.wandb.api` reads a saved
  history, so the training-step key is preferred to ``_step`` and rows without it take the last one, as
  W&B does) or any frame with a ``step``, ``global_step``, ``iteration``, ``iter`` or ``epoch`` column
  (or ``step=``), optionally ``wall_time`` and ``run``. NaN means "not logged at that row".

Nothing is dropped unsaid: columns that are not used or not numeric are named in each run's notes,
rows without a step or a tag and values that are not numbers are counted in a warning, and a
(tag, step) given twice keeps its last row (the later write, as every reader does) with a note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from tanalyze.discover import Discovery
from tanalyze.errors import InputError
from tanalyze.logs import Logs, RunInfo, RunResult, _constant_category, _merge
from tanalyze.readers import ReadWarning, Restart
from tanalyze.readers.wandb.api import HISTORY_SAMPLE
from tanalyze.readers.wandb.history import history_to_tidy, sparse_from_frame
from tanalyze.schema import OPTIONAL_COLUMNS, empty_scalars, keep_last_write
from tanalyze.text import safe_text

__all__ = ["from_frame", "SHAPES", "WIDE_STEP_COLUMNS", "DEFAULT_RUN"]

#: The name of a run the frame does not name.
DEFAULT_RUN = "frame"
#: Step columns of a wide frame, in order of preference (W&B's ``_step`` is handled as W&B does).
WIDE_STEP_COLUMNS: tuple[str, ...] = ("step", "global_step", "iteration", "iter", "epoch")
#: The shapes :func:`from_frame` accepts, as its error messages list them.
SHAPES: tuple[str, ...] = (
    "long: tag, step, value [, run or dir_name] [, wall_time] (tanalyze's tidy table, tbparse's "
    "SummaryReader(...).scalars)",
    "MLflow metric history: key, value, timestamp (ms), step [, run_id]",
    "wide: a step column (" + ", ".join(WIDE_STEP_COLUMNS) + ", W&B's _step, or step=...) and one column per "
    "metric [, wall_time] [, run] (W&B's run.history())",
)
_WANDB_MARKERS = ("_step", "_timestamp", "_runtime")
#: The ``file`` of the warnings about a frame (there is no file).
_SOURCE = "DataFrame"
_MAX_STEP = 2.0**62


@dataclass
class _Part:
    """One run's rows (``tag, step, value, wall_time`` and optional columns, in write order) and what was said."""

    name: str
    rows: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)


def from_frame(frame: pd.DataFrame, *, run: str | None = None, step: str | None = None) -> Logs:
    """:class:`Logs` from a DataFrame: tbparse's scalars, tanalyze's tidy table, a W&B history, any wide
    frame with a step column, or an MLflow metric history (see the module docstring for the columns).

    Args:
        frame: the DataFrame; its shape is told from its columns (a named index counts as a column).
        run: the name of the rows the frame does not give a run: the whole frame when it has no run
            column (``run``, tbparse's ``dir_name``, MLflow's ``run_id``), tbparse's root folder
            (``dir_name`` ``""``) otherwise. Default ``"frame"``.
        step: the step column of a wide frame, when it is not found by name (or not the one wanted).

    A (run, tag, step) given more than once keeps its last row (the later write, the rule for resumed
    runs); the run's notes say how many rows that replaced. In a wide frame NaN means "not logged", so a
    logged NaN cannot be told from a gap there; long frames keep NaN values. ``mlflow.search_runs()``
    frames (one row per run, summary metrics only) and tbparse's histogram tables are not accepted.

    Raises:
        InputError: ``frame`` is not a DataFrame, has no rows, matches no shape (the message names its
            columns and the shapes accepted), or has steps that are not whole numbers.
    """
    if run is not None and (not isinstance(run, str) or not run):
        raise InputError(f"run= must be a non-empty string, got {run!r}")
    if step is not None and not isinstance(step, str):
        raise InputError(f"step= must be a column name, got {step!r}")
    frame = _checked(frame)
    label, read = _shape(frame, step)
    parts = read(frame, run or DEFAULT_RUN)
    results = [_result(part, f"frame:{label}") for part in parts]
    return _merge(results, Discovery(root=f"{_SOURCE} ({label})", runs=()))


def _checked(frame: object) -> pd.DataFrame:
    """The frame with string column names and a named index as columns; InputError for what cannot be used."""
    if not isinstance(frame, pd.DataFrame):
        hint = " (a polars frame: pass frame.to_pandas())" if type(frame).__module__.startswith("polars") else ""
        raise InputError(f"from_frame needs a pandas DataFrame, got {type(frame).__name__}{hint}")
    if isinstance(frame.columns, pd.MultiIndex):
        raise InputError("the frame's columns are a MultiIndex (a pivot by run and tag?): flatten them, or pass "
                         "the long table (run, tag, step, value)")
    if any(name is not None for name in frame.index.names):
        try:
            frame = frame.reset_index()
        except ValueError:  # an index named like a column: the column is the data
            frame = frame.reset_index(drop=True)
    frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
    if not len(frame.columns):
        raise InputError("the frame has no columns (tbparse's SummaryReader(path).scalars is empty when the path "
                         "holds no scalar summaries; TF2's tf.summary writes tensors, found in .tensors)")
    repeated = sorted(set(frame.columns[frame.columns.duplicated()]))
    if repeated:
        raise InputError(f"the frame has columns named more than once: {_names(repeated)}")
    if not len(frame):
        raise InputError(f"the frame has no rows (columns: {_names(frame.columns)})")
    return frame


def _shape(frame: pd.DataFrame, step: str | None) -> tuple[str, Callable[[pd.DataFrame, str], list[_Part]]]:
    """The shape's label and the function that reads it."""
    columns = set(frame.columns)
    if step is not None and step not in columns:
        raise InputError(f"step={step!r} is not a column of the frame; its columns are {_names(frame.columns)}")
    long_key = "tag" if "tag" in columns else "key" if {"key", "timestamp"} <= columns else None
    if long_key is not None:
        needed = ("tag", "step", "value") if long_key == "tag" else ("key", "value", "timestamp", "step")
        missing = [c for c in needed if c not in columns]
        if missing:
            raise InputError(f"the frame has a '{long_key}' column but no {_names(missing)}: a long frame needs "
                             f"{', '.join(needed)}; its columns are {_names(frame.columns)}")
        if step is not None:
            raise InputError("step= is for wide frames; this long frame's step column is 'step'")
        if long_key == "key":
            return "mlflow", lambda f, name: _read_long(f, name, tag="key", wall="timestamp", wall_scale=1e-3,
                                                       runs=("run_id", "run"), optional=False)
        label = "tidy" if "run" in columns else "tbparse"
        return label, lambda f, name: _read_long(f, name, tag="tag", wall="wall_time", wall_scale=1.0,
                                                runs=("run", "dir_name"), optional=True)
    if any(c in columns for c in _WANDB_MARKERS):
        return "wandb", lambda f, name: _read_wide(f, name, step, wandb=True)
    chosen = step or next((c for c in WIDE_STEP_COLUMNS if c in columns), None)
    if chosen is not None:
        return "wide", lambda f, name: _read_wide(f, name, chosen, wandb=False)
    if "run_id" in columns and any(c.startswith("metrics.") for c in columns):
        raise InputError("this looks like mlflow.search_runs(): one row per run with each metric's last value, "
                         "no history; pass MlflowClient().get_metric_history(run_id, key) as a frame "
                         "(pd.DataFrame([m.to_dictionary() for m in history])) instead")
    raise InputError(
        f"cannot tell the shape of this frame from its columns {_names(frame.columns)}; from_frame accepts\n  "
        + "\n  ".join(SHAPES) + "\n(pass step= to name the step column of a wide frame)")


def _read_long(frame: pd.DataFrame, default: str, *, tag: str, wall: str, wall_scale: float,
               runs: Sequence[str], optional: bool) -> list[_Part]:
    run_column = next((c for c in runs if c in frame.columns), None)
    kept_optional = [c for c in OPTIONAL_COLUMNS if optional and c in frame.columns and
                     (c == "source" or pd.api.types.is_numeric_dtype(frame[c].dtype))]
    used = {tag, "step", "value", wall, run_column, *kept_optional}
    notes = _unused_note([c for c in frame.columns if c not in used and frame[c].notna().any()])
    steps = _steps(frame["step"], "step", hint="")
    tag_codes, tag_names = _codes(frame[tag])
    values, not_numbers = _numbers(frame["value"])
    walls = _wall_times(frame[wall], wall, wall_scale, notes) if wall in frame.columns else np.full(len(frame), np.nan)
    parts = []
    for name, rows in _groups(frame, run_column, default):
        part = _Part(name, pd.DataFrame(), notes=list(notes))
        no_step = np.isnan(steps[rows])
        no_tag = tag_codes[rows] < 0
        bad = not_numbers[rows]
        _count(part, int(no_step.sum()), "row(s) have no step (empty or not a number); left out")
        _count(part, int((no_tag & ~no_step).sum()), f"row(s) have no {tag}; left out")
        bad = bad & ~no_tag & ~no_step
        if bad.any():
            by_tag = pd.Series(np.asarray(tag_names, dtype=object)[tag_codes[rows[bad]]]).value_counts()
            _count(part, int(bad.sum()), "value(s) that are not numbers left out: " + ", ".join(
                f"{safe_text(t, 80)} ({n})" for t, n in by_tag.head(5).items()))
        keep = rows[~(no_step | no_tag | bad)]
        data = {"tag": pd.Categorical.from_codes(tag_codes[keep], categories=tag_names),
                "step": steps[keep].astype(np.int64), "value": values[keep], "wall_time": walls[keep]}
        data.update({c: frame[c].iloc[keep].to_numpy() for c in kept_optional})
        part.rows = pd.DataFrame(data)
        parts.append(part)
    return parts


def _read_wide(frame: pd.DataFrame, default: str, step: str | None, *, wandb: bool) -> list[_Part]:
    run_column = "run" if "run" in frame.columns and step != "run" else None
    parts = []
    for name, rows in _groups(frame, run_column, default):
        sub = frame.iloc[rows]
        if run_column is not None:
            sub = sub.drop(columns=run_column)
        parts.append(_wandb_part(sub, name, step) if wandb else _wide_part(sub, name, step or ""))
    return parts


def _wandb_part(frame: pd.DataFrame, name: str, step: str | None) -> _Part:
    """A W&B history as the W&B history-export reader reads it (step choice, carried steps, restarts)."""
    if step is not None:  # W&B would cut 0.5 to 0: say so instead
        _steps(frame[step], step, hint=" (pass step= a column of whole steps)")
    sparse = sparse_from_frame(frame)
    notes = _not_numeric_columns(frame, sparse)
    history = history_to_tidy(sparse, file=_SOURCE, declared_step=step)
    internal = [c for c in frame.columns if c.startswith("_") and c not in ("_timestamp", history.step_key)
                and c in sparse.rows]
    if internal:
        notes.append(f"W&B's own column(s) not kept as metrics: {_names(internal)}")
    if len(frame) == HISTORY_SAMPLE:
        notes.append(f"exactly {HISTORY_SAMPLE} rows: run.history() returns a sample of {HISTORY_SAMPLE} rows by "
                     "default; pass run.scan_history() rows (pd.DataFrame(list(...))) to get every logged point")
    rows = history.scalars
    rows = pd.DataFrame({"tag": rows["tag"].array, "step": rows["step"].to_numpy(),
                         "value": rows["value"].to_numpy(), "wall_time": rows["wall_time"].to_numpy()})
    return _Part(name, rows, notes=[*history.notes, *notes], warnings=list(history.warnings),
                 restarts=list(history.restarts))


def _wide_part(frame: pd.DataFrame, name: str, step: str) -> _Part:
    """Any wide frame: each non-missing cell of a metric column is a point at its row's step."""
    steps = _steps(frame[step], step, hint=" (pass step= a column of whole steps)")
    notes: list[str] = []
    walls = (_wall_times(frame["wall_time"], "wall_time", 1.0, notes) if "wall_time" in frame.columns and
             step != "wall_time" else np.full(len(frame), np.nan))
    metrics = frame.drop(columns=[c for c in (step, "wall_time") if c in frame.columns])
    sparse = sparse_from_frame(metrics)
    notes = [f"step = column '{safe_text(step, 80)}'", *_not_numeric_columns(metrics, sparse), *notes]
    part = _Part(name, pd.DataFrame(), notes=notes)
    tables = []
    tags = list(sparse.rows)
    unplaced: list[np.ndarray] = []
    for code, (tag, rows) in enumerate(sparse.rows.items()):
        placed = ~np.isnan(steps[rows])
        if not placed.all():
            unplaced.append(rows[~placed])
        rows, values = rows[placed], sparse.values[tag][placed]
        tables.append(pd.DataFrame({"tag": np.full(len(rows), code), "step": steps[rows].astype(np.int64),
                                    "value": values, "wall_time": walls[rows]}))
    if unplaced:
        lost = np.concatenate(unplaced)
        _count(part, len(lost), f"value(s) in {len(np.unique(lost))} row(s) without a step ('{safe_text(step, 80)}' "
               "empty or not a number); left out")
    _partly_numeric(part, sparse)
    rows = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(
        {"tag": np.empty(0, np.int64), "step": np.empty(0, np.int64), "value": [], "wall_time": []})
    part.rows = rows.assign(tag=pd.Categorical.from_codes(rows["tag"].to_numpy(), categories=tags))
    return part


def _result(part: _Part, fmt: str) -> RunResult:
    """One run's result: the last of each repeated (tag, step) kept and said, the tidy dtypes."""
    keys = ("tag", "step", "rank") if "rank" in part.rows.columns else ("tag", "step")
    rows, dropped = keep_last_write(part.rows.reset_index(drop=True), keys)
    notes = list(part.notes)
    if dropped:
        notes.append(f"{dropped} row(s) gave a ({', '.join(keys)}) that a later row gives again; "
                     "the last row of each was kept")
    scalars = _tidy(part.name, rows) if len(rows) else empty_scalars()
    info = RunInfo(name=part.name, format=fmt, directory="", files=(), hparams=MappingProxyType({}),
                   warnings=tuple(part.warnings), restarts=tuple(part.restarts), notes=tuple(notes),
                   text=MappingProxyType({}))
    return RunResult(info, scalars)


def _tidy(name: str, rows: pd.DataFrame) -> pd.DataFrame:
    """The tidy table of one run's rows (``tag`` categorical already: no string is hashed twice)."""
    data: dict[str, object] = {
        "run": _constant_category(name, len(rows)),
        "tag": rows["tag"].array.remove_unused_categories(),
        "step": rows["step"].to_numpy(dtype=np.int64),
        "value": rows["value"].to_numpy(dtype=np.float64),
        "wall_time": rows["wall_time"].to_numpy(dtype=np.float64),
    }
    for column, dtype in OPTIONAL_COLUMNS.items():
        if column in rows.columns:
            values = rows[column].to_numpy()
            data[column] = pd.Categorical(values) if dtype == "category" else pd.array(values, dtype=dtype)
    return pd.DataFrame(data)


def _groups(frame: pd.DataFrame, column: str | None, default: str) -> list[tuple[str, np.ndarray]]:
    """Row positions of each run, in order of first appearance; rows without a run name are ``default``'s."""
    if column is None:
        return [(default, np.arange(len(frame)))]
    codes, uniques = pd.factorize(frame[column], use_na_sentinel=True)
    names = [str(u) for u in uniques]
    if default in names and ("" in names or (codes < 0).any()):
        raise InputError(f"run name {default!r} is both a value of column '{column}' and the name given to rows "
                         "without one; pass run= another name")
    labels = np.array([n or default for n in names] + [default], dtype=object)
    run_codes, run_names = pd.factorize(labels[codes])
    order = np.argsort(run_codes, kind="stable")
    bounds = np.cumsum(np.bincount(run_codes, minlength=len(run_names)))[:-1]
    return list(zip((str(n) for n in run_names), np.split(order, bounds), strict=True))


def _steps(series: pd.Series, column: str, *, hint: str) -> np.ndarray:
    """Steps as float64, NaN where a row has none; InputError for numbers that are not whole steps."""
    if pd.api.types.is_datetime64_any_dtype(series.dtype) or pd.api.types.is_timedelta64_dtype(series.dtype):
        raise InputError(f"column '{safe_text(column, 80)}' holds times, not steps{hint}")
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        numbers = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    known = ~np.isnan(numbers)
    with np.errstate(invalid="ignore"):
        bad = known & ((numbers != np.round(numbers)) | (np.abs(numbers) >= _MAX_STEP))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(f"column '{safe_text(column, 80)}' holds {int(bad.sum())} step(s) that are not whole numbers "
                         f"(first: {safe_text(series.iloc[first], 40)} in row {first}){hint}")
    return numbers


def _codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes (-1 for missing) and the distinct names they index, as strings (1 and "1" are one name)."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    index: dict[str, int] = {}
    remap = np.array([index.setdefault(str(u), len(index)) for u in uniques], dtype=np.int64)
    if len(index) < len(remap):
        codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
    return codes, list(index)


def _numbers(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Values as float64 and where a cell is not a number (missing cells are NaN values, kept)."""
    if pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan), np.zeros(len(series), dtype=bool)
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    text = series.astype("string").str.strip().str.lower()
    literal_nan = text.isin(["nan", "-nan", "+nan"]).fillna(False).to_numpy(dtype=bool)
    return numbers, np.isnan(numbers) & series.notna().to_numpy() & ~literal_nan


def _wall_times(series: pd.Series, column: str, scale: float, notes: list[str]) -> np.ndarray:
    """Seconds since the epoch from numbers (times ``scale``) or datetimes (naive ones taken as UTC)."""
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        stamps = pd.to_datetime(series, utc=True)
        return ((stamps - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64,
                                                                                          na_value=np.nan)
    numbers, bad = _numbers(series)
    if bad.any():
        notes.append(f"{int(bad.sum())} '{safe_text(column, 80)}' value(s) are not numbers: those points have no "
                     "wall time")
    return numbers * scale


def _not_numeric_columns(frame: pd.DataFrame, sparse) -> list[str]:
    """A note naming the columns with values of which none is a number (their counts taken off ``sparse``)."""
    found = []
    for column in frame.columns:
        if column in sparse.rows:
            continue
        present = frame[column].dropna()
        if len(present):
            sparse.non_numeric.pop(column, None)
            sparse.media.pop(column, None)
            example = safe_text(present.iloc[0], 40)
            found.append(f"{safe_text(column, 80)} ({len(present)} value(s), e.g. '{example}')")
    return [f"column(s) with no numbers, not kept: {', '.join(found)}"] if found else []


def _partly_numeric(part: _Part, sparse) -> None:
    """Warn about the cells of numeric columns that are not numbers (media references, text)."""
    skipped = sparse.non_numeric + sparse.media
    if skipped:
        total = sum(skipped.values())
        keys = ", ".join(f"{safe_text(k, 80)} ({n})" for k, n in skipped.most_common(5))
        part.warnings.append(ReadWarning(_SOURCE, f"{total} value(s) that are not numbers left out: {keys}",
                                         count=total))


def _unused_note(columns: Sequence[str]) -> list[str]:
    """A note naming the columns that hold values this shape does not use (empty ones carry nothing)."""
    return [f"column(s) not used: {_names(columns)}"] if columns else []


def _count(part: _Part, count: int, what: str) -> None:
    if count:
        part.warnings.append(ReadWarning(_SOURCE, f"{count} {what}", count=count))


def _names(columns: Sequence[str] | pd.Index, limit: int = 20) -> str:
    """Column names for a message: quoted, escaped, the first ``limit`` and how many more."""
    names = [f"'{safe_text(c, 80)}'" for c in columns]
    more = f", … ({len(names) - limit} more)" if len(names) > limit else ""
    return "[" + ", ".join(names[:limit]) + more + "]"
