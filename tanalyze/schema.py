"""The tidy table: the one data structure that crosses module boundaries.

A long pandas DataFrame with the columns tbparse users know, one row per logged point::

    run: category     name of the run (its folder relative to the path given)
    tag: category     metric name exactly as the source wrote it
    step: int64       training step (iteration) the point belongs to
    value: float64    the value; NaN/inf are kept, they are evidence
    wall_time: float64  seconds since the epoch, NaN when the source has none

Optional columns follow when a source has them: ``epoch`` (float64), ``rank``
(Int64), ``source`` (category, the file a row came from).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = [
    "SCALAR_COLUMNS",
    "HISTOGRAM_COLUMNS",
    "empty_scalars",
    "empty_histograms",
    "scalar_frame",
    "validate_scalars",
    "keep_last_write",
    "concat_frames",
]

SCALAR_COLUMNS: tuple[str, ...] = ("run", "tag", "step", "value", "wall_time")
OPTIONAL_COLUMNS: dict[str, str] = {"epoch": "float64", "rank": "Int64", "source": "category"}

#: Histogram rows: one per (run, tag, step); bucket arrays are float64 numpy arrays.
HISTOGRAM_COLUMNS: tuple[str, ...] = (
    "run", "tag", "step", "wall_time", "min", "max", "num", "sum", "sum_squares",
    "bucket_limits", "bucket_counts",
)


def empty_scalars() -> pd.DataFrame:
    """An empty tidy scalar table with the right dtypes."""
    return scalar_frame(run=[], tag=[], step=[], value=[], wall_time=[])


def empty_histograms() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series(dtype=object) for name in HISTOGRAM_COLUMNS})
    for name in ("step",):
        frame[name] = frame[name].astype("int64")
    for name in ("wall_time", "min", "max", "num", "sum", "sum_squares"):
        frame[name] = frame[name].astype("float64")
    for name in ("run", "tag"):
        frame[name] = frame[name].astype("category")
    return frame


def scalar_frame(
    *,
    run: str | Iterable[str],
    tag: Iterable[str] | np.ndarray | pd.Series,
    step: Iterable[int] | np.ndarray,
    value: Iterable[float] | np.ndarray,
    wall_time: Iterable[float] | np.ndarray | float | None = None,
    **optional: Iterable | np.ndarray | pd.Series,
) -> pd.DataFrame:
    """Build a tidy scalar table with canonical dtypes.

    ``run`` may be one name for all rows; ``wall_time`` may be omitted (NaN).
    Extra keyword columns must be among the optional columns.
    """
    step_arr = np.asarray(step, dtype=np.int64) if not isinstance(step, np.ndarray) else step.astype(np.int64)
    n = len(step_arr)
    value_arr = np.asarray(value, dtype=np.float64)
    if wall_time is None:
        wall_arr = np.full(n, np.nan)
    elif np.isscalar(wall_time):
        wall_arr = np.full(n, float(wall_time))  # type: ignore[arg-type]
    else:
        wall_arr = np.asarray(wall_time, dtype=np.float64)
    run_values = [run] * n if isinstance(run, str) else list(run)
    data: dict[str, object] = {
        "run": pd.Categorical(run_values),
        "tag": pd.Categorical(tag if isinstance(tag, pd.Series | np.ndarray) else list(tag)),
        "step": step_arr,
        "value": value_arr,
        "wall_time": wall_arr,
    }
    for name, values in optional.items():
        if name not in OPTIONAL_COLUMNS:
            raise ValueError(f"unknown optional column {name!r}; known: {sorted(OPTIONAL_COLUMNS)}")
        data[name] = pd.array(values, dtype=OPTIONAL_COLUMNS[name]) if name != "source" else pd.Categorical(values)
    return pd.DataFrame(data)


def validate_scalars(frame: pd.DataFrame) -> pd.DataFrame:
    """Check and coerce a tidy scalar table; raise ``ValueError`` naming what is wrong."""
    missing = [c for c in SCALAR_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"tidy table lacks columns {missing}")
    out = frame
    if out["step"].dtype != np.int64:
        out = out.assign(step=out["step"].astype(np.int64))
    for name in ("value", "wall_time"):
        if out[name].dtype != np.float64:
            out = out.assign(**{name: out[name].astype(np.float64)})
    for name in ("run", "tag"):
        if not isinstance(out[name].dtype, pd.CategoricalDtype):
            out = out.assign(**{name: out[name].astype("category")})
    return out


def keep_last_write(frame: pd.DataFrame, keys: tuple[str, ...] = ("run", "tag", "step")) -> tuple[pd.DataFrame, int]:
    """Keep, for each key, the row written last; return the table and how many rows were dropped.

    Rows must be in write order (the order the training job wrote them). This is
    the rule for resumed runs in every reader: a job restarted from a checkpoint
    logs again the steps after that checkpoint, and the later values are the ones
    that belong to the model that went on training.
    """
    if frame.empty:
        return frame, 0
    present = [k for k in keys if k in frame.columns]
    duplicated = frame.duplicated(subset=present, keep="last")
    dropped = int(duplicated.sum())
    if dropped == 0:
        return frame, 0
    return frame.loc[~duplicated].reset_index(drop=True), dropped


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate tidy tables, keeping ``run``/``tag`` categorical across differing categories."""
    frames = [f for f in frames if f is not None and len(f.columns)]
    if not frames:
        return empty_scalars()
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    cat_columns = {
        c for f in frames for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)
    }
    # One set of categories per column first: pandas then concatenates the codes
    # instead of falling back to strings and re-encoding millions of rows.
    for column in cat_columns:
        if all(isinstance(f[column].dtype, pd.CategoricalDtype) for f in frames if column in f.columns):
            union = list(dict.fromkeys(c for f in frames if column in f.columns for c in f[column].cat.categories))
            frames = [f.assign(**{column: f[column].cat.set_categories(union)}) if column in f.columns else f
                      for f in frames]
    out = pd.concat(frames, ignore_index=True)
    for column in cat_columns:
        if column in out.columns and not isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = out[column].astype("category")
    return out
