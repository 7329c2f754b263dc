"""W&B run histories saved through the public API: ``run.history()`` / ``run.scan_history()``.

Users save them as CSV (``run.history().to_csv(...)``), JSON lines or a JSON
array (``scan_history()`` rows) or Parquet. Every row is one ``wandb.log``
call with W&B's ``_step``, ``_timestamp`` and ``_runtime`` columns; the tidy
step follows :mod:`tanalyze.readers.wandb.history` (the training-step key when
one is logged, else ``_step``) and ``wall_time`` is ``_timestamp``. A system
metrics export (``history(stream="events")``) has ``system.*`` columns and no
``_step``; those become ``system/*`` tags. Each file is one run. The rows are
the ones old clients wrote to ``wandb-history.jsonl``; inside a run folder
that file goes to the local-run reader, which comes first in the registry.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import json_object_lines
from tanalyze.readers.wandb.history import (
    History,
    history_to_tidy,
    sparse_from_frame,
    sparse_from_rows,
    system_to_tidy,
)

__all__ = ["WandbHistoryExportReader"]

_STEP = re.compile(rb'"_step"\s*:')
_CLOCK = re.compile(rb'"_(?:runtime|timestamp)"\s*:')
_SYSTEM = re.compile(rb'"system\.')
#: ``run.history()`` returns this many sampled rows unless asked for more.
HISTORY_SAMPLE = 500


def _csv_header(head: bytes) -> list[str]:
    line = head.decode("utf-8-sig", errors="replace").partition("\n")[0].rstrip("\r")
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return []


def _parquet_footer(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            return handle.read()
    except OSError:
        return b""


class WandbHistoryExportReader(Reader):
    name = "wandb-history"
    description = "W&B history rows saved by the API (run.history()/scan_history() as CSV, JSON lines, JSON or Parquet)"

    def sniff(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix == ".csv":
            fields = set(_csv_header(head))
            clock = bool(fields & {"_runtime", "_timestamp"})
            return clock and ("_step" in fields or any(f.startswith("system.") for f in fields))
        if suffix in (".jsonl", ".ndjson", ".json"):
            start = head.lstrip()[:1]
            if start not in (b"{", b"["):
                return False
            return bool(_CLOCK.search(head)) and bool(_STEP.search(head) or _SYSTEM.search(head))
        if suffix == ".parquet":
            if not head.startswith(b"PAR1"):
                return False
            footer = _parquet_footer(path)
            return b"_step" in footer and (b"_runtime" in footer or b"_timestamp" in footer)
        return False

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        return [_read_export(path) for path in files]


def _read_export(path: Path) -> RunData:
    data = RunData()
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame, logged = _parquet(path, data)
    elif suffix == ".csv":
        frame, logged = _csv(path, data), None
    else:
        frame, logged = None, None
        rows = _json_rows(path, data)
        history = _from_rows(rows, path)
        _finish(data, history, len(rows), path)
        return data
    if frame is None:
        return data
    index_columns = [c for c in frame.columns if str(c) == "" or str(c).startswith("Unnamed: ")]
    if index_columns:
        frame = frame.drop(columns=index_columns)
        if logged is not None:
            logged = logged.drop(columns=index_columns)
    if "_step" not in frame.columns and any(str(c).startswith("system.") for c in frame.columns):
        history = system_to_tidy(_samples(frame, logged), file=str(path))
    else:
        history = history_to_tidy(sparse_from_frame(frame, logged), file=str(path))
    _finish(data, history, len(frame), path)
    return data


def _finish(data: RunData, history: History, n_rows: int, path: Path) -> None:
    data.scalars = history.scalars
    data.histograms = history.histograms
    data.notes.append("W&B API history export: wall_time = _timestamp")
    data.notes.extend(history.notes)
    data.warnings.extend(history.warnings)
    data.restarts.extend(history.restarts)
    data.phases.extend(history.phases)
    if n_rows == HISTORY_SAMPLE:
        data.notes.append(
            f"exactly {HISTORY_SAMPLE} rows: run.history() returns a sample of {HISTORY_SAMPLE} rows by default; "
            "export with run.scan_history() to get every logged point")


def _from_rows(rows: list[dict[str, Any]], path: Path) -> History:
    if rows and not any("_step" in row for row in rows) and any(
        str(k).startswith("system.") for row in rows for k in row
    ):
        samples = [(_float(r.get("_timestamp")), _float(r.get("_runtime")), r) for r in rows]
        return system_to_tidy(samples, file=str(path))
    return history_to_tidy(sparse_from_rows(rows), file=str(path))


def _float(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float("nan")


def _samples(frame: pd.DataFrame, logged: pd.DataFrame | None):
    stamps = pd.to_numeric(frame.get("_timestamp", pd.Series(np.nan, index=frame.index)), errors="coerce")
    runtimes = pd.to_numeric(frame.get("_runtime", pd.Series(np.nan, index=frame.index)), errors="coerce")
    columns = [c for c in frame.columns if str(c).startswith("system.")]
    numbers = {c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in columns}
    for i in range(len(frame)):
        values = {c: numbers[c][i] for c in columns
                  if (logged is None and not np.isnan(numbers[c][i])) or (logged is not None and logged[c].iat[i])}
        runtime = runtimes.iat[i]
        yield float(stamps.iat[i]), (None if np.isnan(runtime) else float(runtime)), values


#: Column types the C parser gives only to cells that the text rule of ``sparse_from_frame`` reads as the same
#: numbers (it parses a float just as ``pandas.to_numeric`` does; "nan" and blank cells stay text).
_PARSED = frozenset({np.dtype("float64"), np.dtype("int64"), np.dtype("bool")})


def _csv(path: Path, data: RunData) -> pd.DataFrame | None:
    """Number columns as numbers, every other column as text; empty cells missing; rows with the wrong
    number of cells counted and skipped."""
    bad: list[int] = []

    def skip(line: list[str]) -> None:
        bad.append(1)

    options: dict[str, Any] = {"keep_default_na": False, "na_values": [""], "encoding": "utf-8-sig",
                               "encoding_errors": "replace"}
    try:
        frame = pd.read_csv(path, **options)
        # Columns that are not all numbers: read again as text, as they are in the file (the first read
        # gives a column of True/False and empty cells as objects, one of huge whole numbers as uint64).
        other = [i for i, dtype in enumerate(frame.dtypes) if dtype not in _PARSED]
        if other:
            text = pd.read_csv(path, usecols=other, dtype=str, **options)
            for i, column in zip(other, text.columns, strict=True):
                frame.isetitem(i, text[column])
    except pd.errors.ParserError:
        try:
            frame = pd.read_csv(path, dtype=str, engine="python", on_bad_lines=skip, **options)
        except (pd.errors.ParserError, csv.Error) as exc:
            raise FormatError(path, f"not valid CSV: {str(exc).splitlines()[0]}") from exc
    except pd.errors.EmptyDataError as exc:
        raise FormatError(path, "empty file") from exc
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    if bad:
        data.warnings.append(ReadWarning(str(path), f"{len(bad)} row(s) with the wrong number of cells skipped",
                                         count=len(bad)))
    return frame


def _json_rows(path: Path, data: RunData) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    text = raw.decode("utf-8-sig", errors="replace")
    undecodable = text.count("\ufffd") - raw.count("\ufffd".encode())
    if undecodable > 0:
        data.warnings.append(ReadWarning(str(path), f"{undecodable} byte sequence(s) are not UTF-8; replaced",
                                         count=undecodable))
    if text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise FormatError(path, f"not valid JSON: {exc}") from exc
        rows = [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []
        skipped = (len(value) if isinstance(value, list) else 1) - len(rows)
        if skipped:
            data.warnings.append(ReadWarning(str(path), f"{skipped} item(s) are not objects; skipped", count=skipped))
        return rows
    if not text.strip():
        raise FormatError(path, "empty file")
    rows, bad = json_object_lines(text.split("\n"))  # not splitlines(): U+2028 may sit inside a string
    if bad:
        data.warnings.append(ReadWarning(str(path), f"{len(bad)} line(s) are not JSON objects; skipped",
                                         f"line {bad[0]}", count=len(bad)))
    return rows


def _parquet(path: Path, data: RunData) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        data.warnings.append(ReadWarning(
            str(path), "reading Parquet needs pyarrow, which is not installed: pip install 'tanalyze[parquet]'"))
        return None, None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise FormatError(path, f"not a readable Parquet file: {str(exc).splitlines()[0][:200]}") from exc
    logged = pd.DataFrame({name: ~np.asarray(table.column(name).is_null()) for name in table.column_names})
    frame = table.to_pandas()
    return frame, logged
