"""Tables written as CSV: the bytes ``DataFrame.to_csv(path, index=False)`` writes, a few times faster.

pandas turns every cell into a Python object and hands each row to the ``csv``
module. Here each column of a block of rows becomes a list of strings at once,
as pandas would format them (floats in the shortest form that reads back the
same, which numpy and Python's ``repr`` write alike; ``""`` for missing values;
category names quoted by the ``csv`` module itself), and the block is joined
into one string with no tuple per row. A table with a column of any other kind
(objects, dates) is written by pandas.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

__all__ = ["write_csv"]

#: Rows formatted and written at once (bounded memory on tables of millions of rows).
BLOCK_ROWS = 1 << 16


def _csv_field(value: str) -> str:
    """``value`` as the ``csv`` module writes it among other fields (quoted when it holds a comma, a quote, a
    character of the line end …)."""
    out = io.StringIO()
    csv.writer(out, lineterminator=os.linesep).writerow([value, ""])
    return out.getvalue()[: -len(os.linesep) - 1]


def _column_writer(column: pd.Series):
    """A function from (start, stop) to the column's cells in those rows as strings; None for a kind of
    column this module does not write (pandas then writes the whole table)."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if not all(isinstance(name, str) for name in dtype.categories):
            return None
        names = np.array([_csv_field(name) for name in dtype.categories] + [""], dtype=object)
        codes = column.cat.codes.to_numpy()
        return lambda start, stop: names[codes[start:stop]].tolist()  # code -1 (missing) takes the last: ""
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        values = column.to_numpy()

        def floats(start: int, stop: int) -> list[str]:
            block = values[start:stop]
            # pandas writes block.astype(str): numpy's shortest digits that read back the same, in the same
            # forms as Python's repr (which is faster); missing values as ""
            text = list(map(float.__repr__, block.astype(np.float64, copy=False).tolist()))
            missing = np.flatnonzero(np.isnan(block))
            for index in missing.tolist():
                text[index] = ""
            return text

        return floats
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        values = column.to_numpy()
        return lambda start, stop: values[start:stop].astype(str).tolist()
    if isinstance(dtype, (pd.Int64Dtype, pd.Int32Dtype, pd.Int16Dtype, pd.Int8Dtype)):
        data = column.to_numpy(dtype=np.int64, na_value=0)
        mask = column.isna().to_numpy()

        def integers(start: int, stop: int) -> list[str]:
            text = data[start:stop].astype(str).astype(object)
            text[mask[start:stop]] = ""
            return text.tolist()

        return integers
    return None


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` to ``path`` as ``frame.to_csv(path, index=False)`` does, byte for byte."""
    writers = [_column_writer(frame[name]) for name in frame.columns] if frame.columns.is_unique else [None]
    if len(frame.columns) < 2 or any(writer is None for writer in writers):
        frame.to_csv(path, index=False)
        return
    newline = os.linesep
    with open(Path(path), "w", encoding="utf-8", newline="") as out:
        _write_header(out, [str(name) for name in frame.columns], newline)
        width = len(writers)
        for start in range(0, len(frame), BLOCK_ROWS):
            stop = min(start + BLOCK_ROWS, len(frame))
            rows = stop - start
            parts: list[str] = [","] * (2 * width * rows)  # cell, separator, cell, …, cell, line end
            for index, writer in enumerate(writers):
                parts[2 * index::2 * width] = writer(start, stop)
            parts[2 * width - 1::2 * width] = [newline] * rows
            out.write("".join(parts))


def _write_header(out: IO[str], names: list[str], newline: str) -> None:
    csv.writer(out, lineterminator=newline).writerow(names)
