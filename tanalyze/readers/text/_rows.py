"""Points of a console log in write order, stored compactly, and their clean-up.

:class:`Rows` holds tags as codes and steps/values in typed arrays; ``dedupe``
and ``duplicated_rows`` keep the last write of a repeated (tag, step).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.text._batch import repeated
from tanalyze.readers.values import NAN
from tanalyze.schema import keep_last_write


def _append(column: array, items: Iterable) -> None:
    """Append ``items`` to ``column``: a list in one pass, a numpy array as its bytes (``extend`` grows the
    array item by item)."""
    if type(items) is list:
        column.fromlist(items)
    elif isinstance(items, np.ndarray):
        column.frombytes(_bytes_of(items, column.typecode))
    else:
        column.extend(items)


#: (part column, Rows attribute, array typecode) of every row column.
_COLUMNS = (("tag", "tags", "i"), ("step", "steps", "q"), ("value", "values", "d"), ("epoch", "epochs", "d"),
            ("rank", "ranks", "q"), ("wall", "walls", "d"))
_TYPES = {"i": np.int32, "q": np.int64, "d": np.float64}


def _copy(column: array, dtype: type, start: int) -> np.ndarray:
    """Rows ``start:`` of an ``array`` column as a numpy array of their own (the column may grow on)."""
    return np.frombuffer(column, dtype=dtype)[start:].copy() if len(column) else np.empty(0, dtype)


def _array(typecode: str, column: np.ndarray) -> array:
    """A numpy column as an ``array`` of ``typecode``."""
    out = array(typecode)
    out.frombytes(_bytes_of(column, typecode))
    return out


def _bytes_of(column: np.ndarray, typecode: str) -> memoryview:
    """The bytes of a numpy column as items of ``typecode``, without a copy when it has that type already."""
    return memoryview(np.ascontiguousarray(column, dtype=_TYPES[typecode])).cast("B")


def _is_default(value: float, default: float) -> bool:
    return value == default or (value != value and default != default)  # NaN defaults


class Rows:
    """Points in write order: tag, step, value and optional epoch, rank, wall time.

    Stored in compact arrays; the optional columns exist only once a row has
    a value for them (a Megatron log never pays for an epoch column).
    """

    def __init__(self, base: int = 0) -> None:
        self._codes: dict[str, int] = {}
        self.tag_names: list[str] = []
        self.tags = array("i")
        self.steps = array("q")
        self.values = array("d")
        self.epochs: array | None = None
        self.ranks: array | None = None
        self.walls: array | None = None
        self.out_of_range = 0  # rows skipped: a step or rank beyond 64 bits
        #: The index in the file of the first row held here (rows before it were read by an earlier part).
        self.base = base
        #: Rows before this index in the file are not changed in place: a new value is kept in ``patches``.
        self.frozen = base
        self.patches: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def total(self) -> int:
        """How many rows the file has so far, those of earlier parts included."""
        return self.base + len(self.steps)

    def set_value(self, index: int, value: float) -> None:
        """Give row ``index`` (counted in the whole file) a new value: in place, or as a patch for the
        part that holds it when that part is already read (:func:`apply_patches`)."""
        if index < self.frozen:
            self.patches[index] = value
        else:
            self.values[index - self.base] = value

    def freeze(self) -> None:
        """Keep the rows held so far as they are: later changes to them become patches."""
        self.frozen = self.total

    def columns(self, start: int = 0) -> dict[str, np.ndarray]:
        """The rows from ``start`` (an index into those held here) as numpy arrays, copied: ``tag`` (codes
        into ``tag_names``), ``step``, ``value`` and the optional ``epoch``, ``rank``, ``wall`` that exist."""
        out = {"tag": _copy(self.tags, np.int32, start), "step": _copy(self.steps, np.int64, start),
               "value": _copy(self.values, np.float64, start)}
        for name, column, dtype in (("epoch", self.epochs, np.float64), ("rank", self.ranks, np.int64),
                                    ("wall", self.walls, np.float64)):
            if column is not None:
                out[name] = _copy(column, dtype, start)
        return out

    @classmethod
    def from_columns(cls, tag_names: Sequence[str], columns: dict[str, np.ndarray], base: int = 0) -> Rows:
        """Rows holding ``columns`` (as :meth:`columns` gives them; ``tag`` codes index ``tag_names``)."""
        rows = cls(base)
        rows.tag_names = list(tag_names)
        rows._codes = {tag: code for code, tag in enumerate(rows.tag_names)}
        for name, attribute, typecode in _COLUMNS:
            column = columns.get(name)
            if column is not None:
                setattr(rows, attribute, _array(typecode, column))
        return rows

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` rows held here (take back what was added after)."""
        for _, attribute, _ in _COLUMNS:
            column = getattr(self, attribute)
            if column is not None:
                del column[length:]

    def reorder(self, start: int, order: np.ndarray) -> None:
        """Put the rows held from ``start`` on in ``order`` (indices into them)."""
        for _, attribute, typecode in _COLUMNS:
            column = getattr(self, attribute)
            if column is not None:
                view = np.frombuffer(column, dtype=_TYPES[typecode])[start:]
                view[:] = view[order]
                del view  # releases the column, which may grow again

    def append_rows(self, other: Rows) -> None:
        """Add the rows of ``other`` after these (its tags coded as here)."""
        n = len(other)
        if not n:
            return
        remap = np.array(self.codes(other.tag_names), dtype=np.int32)
        codes = remap[np.frombuffer(other.tags, dtype=np.int32)]
        self._extend(n, _array("i", codes), other.steps, other.values,
                     other.epochs if other.epochs is not None else NAN,
                     other.ranks if other.ranks is not None else -1,
                     other.walls if other.walls is not None else NAN)

    def code(self, tag: str) -> int:
        code = self._codes.get(tag)
        if code is None:
            code = self._codes[tag] = len(self.tag_names)
            self.tag_names.append(tag)
        return code

    def codes(self, tags: Iterable[str]) -> list[int]:
        get, code = self._codes.get, self.code
        return [c if (c := get(t)) is not None else code(t) for t in tags]

    def _optional(self, name: str, typecode: str, default: float) -> array:
        current = getattr(self, name)
        if current is None:
            current = array(typecode, [default]) * len(self.steps)
            setattr(self, name, current)
        return current

    def extend(
        self,
        codes: list[int] | array,
        steps: list[int] | array,
        values: list[float] | array,
        epoch: float | list[float] | array = NAN,
        rank: int | list[int] | array = -1,
        wall: float | list[float] | array = NAN,
    ) -> None:
        """Append many rows (columns as lists or arrays); ``epoch``/``rank``/``wall`` are one value for all or one per row.

        A row whose step or rank does not fit in 64 bits (a garbled line's digits) is
        skipped and counted in ``out_of_range``; the other rows are kept.
        """
        n = len(codes)
        if not n:
            return
        before = len(self.steps)
        try:
            self._extend(n, codes, steps, values, epoch, rank, wall)
        except OverflowError:
            for column in (self.tags, self.steps, self.values, self.epochs, self.ranks, self.walls):
                if column is not None:
                    del column[before:]
            if n == 1:
                self.out_of_range += 1
                return
            for i in range(n):
                self.extend([codes[i]], [steps[i]], [values[i]], *(
                    given[i] if isinstance(given, (list, array, np.ndarray)) else given for given in (epoch, rank, wall)))

    def _extend(self, n: int, codes, steps, values, epoch, rank, wall) -> None:
        for name, typecode, given, default in (
            ("epochs", "d", epoch, NAN),
            ("ranks", "q", rank, -1),
            ("walls", "d", wall, NAN),
        ):
            column = getattr(self, name)
            if isinstance(given, (list, array, np.ndarray)):
                if column is None:
                    column = self._optional(name, typecode, default)
                _append(column, given)
            elif column is not None or not _is_default(given, default):
                if column is None:
                    column = self._optional(name, typecode, default)
                column.extend(array(typecode, [given]) * n)
        _append(self.tags, codes)
        _append(self.steps, steps)
        _append(self.values, values)

    def extend_lines(
        self, tags: Sequence[str], steps: Sequence[int], values: list[float] | np.ndarray,
        walls: Sequence[float] | None = None, rank: int = -1,
    ) -> None:
        """Append lines that all carry ``tags`` in this order: a step (and wall time) per line,
        ``values`` line after line. The columns are built as arrays, without a list per column.

        OverflowError, with nothing appended, when a step does not fit in 64 bits (the caller
        then reads the lines one by one).
        """
        width, lines = len(tags), len(steps)
        if not lines:
            return
        step_column = repeated(steps, width, "q")
        wall_column = NAN if walls is None else repeated(walls, width, "d")
        self.extend(array("i", self.codes(tags)) * lines, step_column, values, rank=rank, wall=wall_column)

    def add(self, tag: str, step: int, value: float, epoch: float = NAN, rank: int = -1, wall: float = NAN) -> None:
        self.extend([self.code(tag)], [step], [value], epoch, rank, wall)

    def add_pairs(
        self, pairs: Iterable[tuple[str, float]], step: int, epoch: float = NAN, rank: int = -1, wall: float = NAN
    ) -> int:
        pairs = list(pairs)
        if pairs:
            self.extend(self.codes([t for t, _ in pairs]), [step] * len(pairs), [v for _, v in pairs], epoch, rank, wall)
        return len(pairs)

    def count(self, tag: str) -> int:
        code = self._codes.get(tag)
        return 0 if code is None else self.tags.count(code)

    def frame(self, *, rank: int | None = None, source: str | None = None) -> pd.DataFrame:
        """The points as a tidy table (``run`` left empty for ``load`` to fill).

        ``rank`` overrides every row's rank (a per-rank file); ``source`` adds
        the file name as the ``source`` column.
        """
        n = len(self.steps)

        def numbers(column: array | None, dtype: type, default: float) -> np.ndarray:
            if column is None or not n:
                return np.full(n, default, dtype=dtype)
            return np.frombuffer(column, dtype=dtype)  # a view: the rows are done growing

        codes = np.frombuffer(self.tags, dtype=np.int32) if n else np.zeros(0, dtype=np.int32)
        data: dict[str, Any] = {
            "run": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[""]),
            "tag": pd.Categorical.from_codes(codes, categories=self.tag_names),
            "step": numbers(self.steps, np.int64, 0),
            "value": numbers(self.values, np.float64, NAN),
            "wall_time": numbers(self.walls, np.float64, NAN),
        }
        if self.epochs is not None and n:
            epochs = numbers(self.epochs, np.float64, NAN)
            if not np.isnan(epochs).all():
                data["epoch"] = epochs
        if rank is not None:
            data["rank"] = pd.array(np.full(n, rank), dtype="Int64")
        elif self.ranks is not None and n:
            ranks = numbers(self.ranks, np.int64, -1)
            if (ranks >= 0).any():
                data["rank"] = pd.arrays.IntegerArray(np.where(ranks >= 0, ranks, 0), mask=ranks < 0)
        if source is not None:
            data["source"] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[source])
        return pd.DataFrame(data, copy=False)  # the columns are views of the finished rows: no copy needed




_bitwise_count = getattr(np, "bitwise_count", None)  # numpy >= 2.0


def _repeats_in_order(group: np.ndarray, steps: np.ndarray, longest: int = 64) -> bool:
    """False when no (group, step) can repeat, proven in a few passes: the usual log writes steps in order,
    each step's rows next to each other; then a repeat would be two rows of one step and one group at most
    ``longest`` rows apart. True: maybe (the caller looks for repeats the long way)."""
    if len(steps) < 2 or (steps[1:] < steps[:-1]).any():
        return True
    changes = np.flatnonzero(steps[1:] != steps[:-1])
    bounds = np.concatenate(([0], changes + 1, [len(steps)]))
    lengths = np.diff(bounds)
    run = int(lengths.max())
    if run > longest:
        return True
    if _bitwise_count is not None and 0 <= int(group.min()) and int(group.max()) < 64:
        # one pass: a step's rows repeat a group exactly when the groups they set as bits are fewer than they
        bits = np.left_shift(np.uint64(1), group.astype(np.uint64))
        return bool((_bitwise_count(np.bitwise_or.reduceat(bits, bounds[:-1])) != lengths).any())
    return any((group[distance:] == group[:-distance])[steps[distance:] == steps[:-distance]].any()
               for distance in range(1, run))


def duplicated_rows(codes: np.ndarray, steps: np.ndarray, ranks: np.ndarray | None = None) -> np.ndarray | None:
    """Which rows a later row with the same (tag code, step[, rank]) replaces (last write wins); None when
    none is. The key columns are packed into one integer when their ranges allow: the same answer as
    ``keep_last_write`` at a fraction of its time and memory on millions of rows."""
    if not len(codes):
        return None
    steps = steps.astype(np.int64, copy=False)
    if ranks is None:  # (no wide copies of the columns on the usual path: millions of rows)
        group, shifted, rank_span = codes, 0, 1
    else:
        shifted = ranks.astype(np.int64) + 1
        rank_span = int(shifted.max()) + 1
        group = codes.astype(np.int64) * rank_span + shifted
    if not _repeats_in_order(group, steps):
        return None
    codes = codes.astype(np.int64, copy=False)
    low, span = int(steps.min()), int(steps.max()) - int(steps.min()) + 1
    if (int(codes.max()) + 1) * span * rank_span >= 2**62:
        duplicated = pd.DataFrame({"c": codes, "s": steps, "r": shifted}).duplicated(keep="last").to_numpy()
        return duplicated if duplicated.any() else None
    if int(group.max()) < 2**15:
        # usual case, no step logged twice: steps rise within every (tag, rank). A stable sort of
        # small integers is a radix sort, much cheaper than hashing every key.
        small = group.astype(np.int16)
        order = np.argsort(small, kind="stable")
        sorted_group, sorted_steps = small[order], steps[order]
        if not ((sorted_group[1:] == sorted_group[:-1]) & (sorted_steps[1:] <= sorted_steps[:-1])).any():
            return None
    key = (codes * span + (steps - low)) * rank_span + shifted
    duplicated = pd.Series(key).duplicated(keep="last").to_numpy()
    return duplicated if duplicated.any() else None


def dedupe(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Last write wins per (tag, step[, rank]) — the rule for resumed runs (``keep_last_write``), see
    :func:`duplicated_rows`."""
    keys = ("tag", "step", "rank") if "rank" in frame.columns else ("tag", "step")
    if frame.empty or not isinstance(frame["tag"].dtype, pd.CategoricalDtype):
        return keep_last_write(frame, keys=keys)
    ranks = frame["rank"].to_numpy(dtype=np.int64, na_value=-1) if "rank" in keys else None
    duplicated = duplicated_rows(frame["tag"].cat.codes.to_numpy(), frame["step"].to_numpy(), ranks)
    if duplicated is None:
        return frame, 0
    return frame.loc[~duplicated].reset_index(drop=True), int(duplicated.sum())
