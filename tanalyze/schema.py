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

from collections.abc import Iterable, Sequence
from functools import cache, lru_cache

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
    "ScalarColumns",
    "join_columns",
    "narrowed",
    "widened_join",
]

SCALAR_COLUMNS: tuple[str, ...] = ("run", "tag", "step", "value", "wall_time")
OPTIONAL_COLUMNS: dict[str, str] = {"epoch": "float64", "rank": "Int64", "source": "category"}

#: Histogram rows: one per (run, tag, step); bucket arrays are float64 numpy arrays.
HISTOGRAM_COLUMNS: tuple[str, ...] = (
    "run", "tag", "step", "wall_time", "min", "max", "num", "sum", "sum_squares",
    "bucket_limits", "bucket_counts",
)


def empty_scalars() -> pd.DataFrame:
    """An empty tidy scalar table with the right dtypes.

    A copy-on-write copy of one shared table: building an empty table costs about a millisecond
    in pandas, and readers make one for every run that has no rows of a kind.
    """
    return _empty_scalars().copy(deep=False)


def empty_histograms() -> pd.DataFrame:
    """An empty histogram table with the right dtypes (a copy of one shared table, as :func:`empty_scalars`)."""
    return _empty_histograms().copy(deep=False)


@cache
def _empty_scalars() -> pd.DataFrame:
    return scalar_frame(run=[], tag=[], step=[], value=[], wall_time=[])


@cache
def _empty_histograms() -> pd.DataFrame:
    types = {"run": "category", "tag": "category", "step": "int64", "bucket_limits": object, "bucket_counts": object}
    # made at once, so that columns of one type share a block: a copy costs a block each
    return pd.DataFrame({name: pd.Series(dtype=types.get(name, "float64")) for name in HISTOGRAM_COLUMNS})


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
    if isinstance(run, str):  # one name for every row: no list of n strings to factorise
        runs = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[run]) if n else pd.Categorical([])
    else:
        runs = pd.Categorical(list(run))
    data: dict[str, object] = {
        "run": runs,
        "tag": pd.Categorical(tag if isinstance(tag, pd.Series | np.ndarray) else list(tag)),
        "step": step_arr,
        "value": value_arr,
        "wall_time": wall_arr,
    }
    for name, values in optional.items():
        if name not in OPTIONAL_COLUMNS:
            raise ValueError(f"unknown optional column {name!r}; known: {sorted(OPTIONAL_COLUMNS)}")
        if name == "source":
            data[name] = pd.Categorical(values)
        elif OPTIONAL_COLUMNS[name] == "float64":  # a numpy column as it is (pd.array would copy it)
            data[name] = np.asarray(values, dtype=np.float64)
        else:
            data[name] = pd.array(values, dtype=OPTIONAL_COLUMNS[name])
    return pd.DataFrame(data, copy=False)  # columns kept apart: consolidating them copies every float column


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
    fast = _concat_same_columns(frames)
    if fast is not None:
        return fast
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


def _concat_same_columns(frames: list[pd.DataFrame]) -> pd.DataFrame | None:
    """``concat_frames`` for tables with the same columns, in time linear in the number of tables.

    Categorical columns are joined by remapping each table's codes onto the union
    of categories with numpy (``set_categories`` per table costs time in the size
    of the union: quadratic over thousands of runs). None when the columns differ
    or a column is not plain numpy or categorical (the general path handles it).
    """
    columns = list(frames[0].columns)
    if any(list(f.columns) != columns for f in frames[1:]):
        return None
    data: dict[str, object] = {}
    for column in columns:
        dtypes = [f[column].dtype for f in frames]
        if all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            union: dict[object, int] = {}
            codes = []
            for f in frames:
                values = f[column].array
                remap = np.array([union.setdefault(c, len(union)) for c in values.categories], dtype=np.int64)
                raw = values.codes
                mapped = remap[raw] if len(remap) else np.full(len(raw), -1, np.int64)
                if len(remap):
                    mapped[raw < 0] = -1
                codes.append(mapped)
            joined = np.concatenate(codes)
            small = np.int8 if len(union) < 127 else np.int16 if len(union) < 32_767 else np.int32
            data[column] = pd.Categorical.from_codes(joined.astype(small), categories=list(union), validate=False)
        elif all(isinstance(d, np.dtype) for d in dtypes) and len(set(dtypes)) == 1:
            data[column] = np.concatenate([f[column].to_numpy() for f in frames])
        else:
            return None
    return pd.DataFrame(data, columns=columns, copy=False)


def _code_dtype(count: int) -> type:
    """The integer width pandas keeps the codes of ``count`` categories in."""
    return np.int8 if count < 127 else np.int16 if count < 32_767 else np.int32 if count < 2**31 - 1 else np.int64


@lru_cache(maxsize=256)
def _categories(names: tuple[str, ...]) -> pd.CategoricalDtype:
    """One dtype per set of tag names (runs of a sweep share theirs; building one costs ~0.1 ms)."""
    return pd.CategoricalDtype(list(names))


#: The dtype each of :class:`ScalarColumns`' arrays is given as (its chunks may hold narrower ones).
_COLUMN_DTYPES: dict[str, type] = {"codes": np.int32, "step": np.int64, "value": np.float64, "wall_time": np.float64}
_COLUMNS = tuple(_COLUMN_DTYPES)

#: One chunk of rows: ``(codes, step, value, wall_time)``, arrays of one length.
Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class ScalarColumns:
    """The core columns of one run's tidy table as arrays, before any DataFrame is built.

    Thousands of runs are joined into one table with numpy (:func:`join_columns`),
    without the fixed cost of a pandas table per run. ``codes`` index ``tags``.

    The rows may be held as consecutive *chunks* (a run read from the cache and the
    rows its file gained since), each column in any dtype that widens exactly to the
    column's own (``int8`` steps, ``float32`` values as stored in the cache): the join
    widens them as it copies, so a run is never copied whole just to add a few rows.
    ``codes``, ``step``, ``value`` and ``wall_time`` give a column joined and widened.
    Treat instances as immutable.
    """

    __slots__ = ("tags", "chunks", "_joined")
    #: The dtype of each column (chunks may hold narrower ones that widen to it exactly).
    DTYPES = _COLUMN_DTYPES

    def __init__(self, tags: Sequence[str], codes: np.ndarray, step: np.ndarray, value: np.ndarray,
                 wall_time: np.ndarray) -> None:
        self.tags: tuple[str, ...] = tuple(tags)
        self.chunks: tuple[Chunk, ...] = ((codes, step, value, wall_time),)
        self._joined: dict[str, np.ndarray] = {}

    @classmethod
    def of_chunks(cls, tags: Sequence[str], chunks: Iterable[Chunk]) -> ScalarColumns:
        """Rows held as ``chunks`` in order (at least one), their codes indexing ``tags``."""
        made = cls.__new__(cls)
        made.tags, made.chunks, made._joined = tuple(tags), tuple(chunks), {}
        if not made.chunks or any(len({len(a) for a in chunk}) != 1 for chunk in made.chunks):
            raise ValueError("each chunk needs codes, step, value and wall_time of one length")
        return made

    def appended(self, tags: Sequence[str], codes: np.ndarray, step: np.ndarray, value: np.ndarray,
                 wall_time: np.ndarray) -> ScalarColumns:
        """These rows followed by the given ones, which index ``tags``: this run's tags, maybe with more after."""
        tags = tuple(tags)
        if tags[:len(self.tags)] != self.tags:
            raise ValueError("the tags of appended rows must start with the run's own tags")
        return ScalarColumns.of_chunks(tags, (*self.chunks, (codes, step, value, wall_time)))

    def __reduce__(self):
        # Sent from a worker process as narrow as the numbers allow (about half the bytes for TensorBoard's
        # float32 values and small steps): the parent receives less and widens while joining.
        chunks = tuple(tuple(narrowed(array) for array in chunk) for chunk in self.chunks)
        return ScalarColumns.of_chunks, (self.tags, chunks)

    def __len__(self) -> int:
        return sum(len(chunk[0]) for chunk in self.chunks)

    def __repr__(self) -> str:
        return f"ScalarColumns({len(self):,} rows, {len(self.tags)} tags, {len(self.chunks)} chunk(s))"

    @property
    def codes(self) -> np.ndarray:
        return self._column("codes")

    @property
    def step(self) -> np.ndarray:
        return self._column("step")

    @property
    def value(self) -> np.ndarray:
        return self._column("value")

    @property
    def wall_time(self) -> np.ndarray:
        return self._column("wall_time")

    def column_chunks(self, name: str) -> list[np.ndarray]:
        """One column's arrays, chunk by chunk, as held (maybe narrower than the column's dtype)."""
        index = _COLUMNS.index(name)
        return [chunk[index] for chunk in self.chunks]

    def _column(self, name: str) -> np.ndarray:
        joined = self._joined.get(name)
        if joined is None:
            joined = self._joined[name] = widened_join(self.column_chunks(name), _COLUMN_DTYPES[name])
        return joined

    def frame(self, run: str) -> pd.DataFrame:
        """The tidy table of these rows, every row of run ``run``."""
        return join_columns([run], [self])


def narrowed(array: np.ndarray) -> np.ndarray:
    """The same numbers in fewer bytes when no value changes: small integers, float64 that are float32
    (TensorBoard stores scalars as float32); the array itself otherwise. Widened, they are equal bit for bit."""
    if not len(array):
        return array
    if array.dtype.kind == "i" and array.dtype.itemsize > 1:
        low, high = int(array.min()), int(array.max())
        for dtype in (np.int8, np.int16, np.int32):
            if np.dtype(dtype).itemsize >= array.dtype.itemsize:
                break
            info = np.iinfo(dtype)
            if info.min <= low and high <= info.max:
                return array.astype(dtype)
    elif array.dtype == np.float64:
        with np.errstate(over="ignore"):
            if not _same_bits(array[:8].astype(np.float32), array[:8]):  # most arrays that do not fit show it early
                return array
            narrow = array.astype(np.float32)
            if _same_bits(narrow, array):
                return narrow
    return array


def _same_bits(narrow: np.ndarray, array: np.ndarray) -> bool:
    """Whether float32 ``narrow`` widens back to exactly the bits of float64 ``array`` (NaNs included)."""
    return bool(np.array_equal(narrow.astype(np.float64).view(np.int64), array.view(np.int64)))


def widened_join(arrays: Sequence[np.ndarray], dtype: type | np.dtype) -> np.ndarray:
    """The arrays one after another as ``dtype``, in an array that may be written to (a table built on it may be
    edited); the array itself when it is the only one, of that dtype, and writable."""
    if len(arrays) == 1 and arrays[0].dtype == dtype and arrays[0].flags.writeable:
        return arrays[0]
    return np.concatenate(arrays, dtype=dtype, casting="same_kind") if arrays else np.empty(0, dtype)


def join_columns(runs: Sequence[str], parts: Sequence[ScalarColumns]) -> pd.DataFrame:
    """One tidy table from each run's columns, in order: the same table as concatenating each run's own
    table with :func:`concat_frames` (categories in order of first appearance, runs without rows left out)."""
    tags: dict[str, int] = {}
    run_names: list[str] = []
    kept = [(name, part) for name, part in zip(runs, parts, strict=True) if len(part)]
    if not kept:
        return empty_scalars()
    lengths = np.array([len(part) for _, part in kept], np.int64)
    # Codes go straight into one array of the width pandas would pick (no per-run arrays, no narrowing copy).
    run_codes = np.repeat(np.arange(len(kept), dtype=_code_dtype(len(kept))), lengths)
    remaps = [np.array([tags.setdefault(t, len(tags)) for t in part.tags], dtype=np.int32) for _, part in kept]
    tag_dtype = _code_dtype(len(tags))
    tag_codes = np.empty(int(lengths.sum()), tag_dtype)
    start = 0
    for remap, (name, part) in zip(remaps, kept, strict=True):
        narrow = remap.astype(tag_dtype)
        for codes in part.column_chunks("codes"):
            np.take(narrow, codes, out=tag_codes[start:start + len(codes)])
            start += len(codes)
        run_names.append(name)

    def joined(name: str) -> np.ndarray:
        return widened_join([array for _, part in kept for array in part.column_chunks(name)], _COLUMN_DTYPES[name])

    return pd.DataFrame({
        "run": pd.Categorical.from_codes(run_codes, dtype=_categories(tuple(run_names)), validate=False),
        "tag": pd.Categorical.from_codes(tag_codes, dtype=_categories(tuple(tags)), validate=False),
        "step": joined("step"),
        "value": joined("value"),
        "wall_time": joined("wall_time"),
    }, copy=False)
