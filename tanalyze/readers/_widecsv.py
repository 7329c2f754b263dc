"""Wide CSV (one column per metric, one row per logging event) → tidy points, in one streaming pass.

Used by every CSV logger reader. Rules, the same for all of them:

* an empty cell (or ``None``/``null``/``NA``) is "not logged here" and yields no point;
  a literal ``nan``/``inf`` is a logged value and is kept;
* a column with no number in it is text: it is skipped and named in a note;
  stray non-numbers in a numeric column are counted in a warning;
* rows whose field count differs from the header (ragged rows, a cut-off last
  line) are skipped and counted; rows without a usable step likewise;
* the file is read once, in chunks, with a BOM, CRLF and undecodable bytes tolerated.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers._tabular import MISSING_WORDS, NAN_WORDS, STEP_LIMIT, PointBuffer, name_list
from tanalyze.readers.base import ReadWarning

__all__ = ["WideCSV", "read_wide_csv", "sniff_header", "CHUNK_ROWS"]

CHUNK_ROWS = 50_000
CHUNK_CELLS = 2_000_000
#: chooses the step column from the header: returns its index or None (row index is the step)
StepChooser = Callable[[list[str]], int | None]


@dataclass
class WideCSV:
    """What one wide CSV yielded."""

    header: list[str]
    points: PointBuffer
    step_column: str | None
    rows: int = 0
    warnings: list[ReadWarning] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    text_columns: list[str] = field(default_factory=list)


def sniff_header(head: bytes) -> list[str] | None:
    """The stripped header fields of a CSV whose first bytes are ``head`` (None if it is not CSV-like)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first, newline, _ = text.partition("\n")
    if not newline and len(head) >= 4096:
        return None  # a header longer than the head: not a log we know
    first = first.rstrip("\r")
    if "," not in first or "\x00" in first:
        return None
    try:
        fields = next(csv.reader([first], skipinitialspace=True))
    except csv.Error:
        return None
    fields = [f.strip() for f in fields]
    return fields if len(fields) >= 2 else None


def read_wide_csv(
    path: Path,
    *,
    choose_step: StepChooser,
    epoch_names: tuple[str, ...] = ("epoch",),
    ignore: frozenset[str] = frozenset(),
    chunk_rows: int | None = None,
) -> WideCSV:
    """Read a wide CSV into points (one per non-empty numeric cell).

    ``choose_step`` picks the step column from the header (None: the row index
    is the step). The first column named like ``epoch_names`` (any case) fills
    the ``epoch`` column and is not a tag. Columns in ``ignore`` are neither tags nor reported.
    Raises :class:`FormatError` when the file cannot be opened or has no header.
    """
    file = str(path)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        reader = csv.reader(io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace", newline=""),
                            skipinitialspace=True)
        header = _header(reader, path)
        state = _State(header, choose_step(header), _find(header, epoch_names), ignore)
        state.undecodable += sum(name.count("\ufffd") for name in header)
        width = state.width
        # Chunks hold at most CHUNK_CELLS cells, so a very wide file is read in fewer rows at a time.
        chunk_rows = chunk_rows or max(1, min(CHUNK_ROWS, CHUNK_CELLS // max(width, 1)))
        chunk: list[list[str]] = []
        row_index = 0
        csv_errors: list[int] = []
        while True:
            try:
                for fields in reader:
                    if len(fields) != width:
                        if len(fields) > 1 or (fields and fields[0].strip()):  # not a blank line
                            state.ragged.append(reader.line_num)
                        continue
                    chunk.append(fields)
                    if len(chunk) >= chunk_rows:
                        state.convert(chunk, row_index)
                        row_index += len(chunk)
                        chunk = []
                break
            except csv.Error:
                csv_errors.append(reader.line_num)
        if chunk:
            state.convert(chunk, row_index)
            row_index += len(chunk)
        last_line_complete = _ends_with_newline(handle)
    result = state.result(file, row_index)
    if state.ragged and not last_line_complete and state.ragged[-1] == reader.line_num:
        result.warnings.append(ReadWarning(file, "the last line is incomplete (file cut off?); skipped",
                                           f"line {reader.line_num}"))
        state.ragged.pop()
    if state.ragged:
        result.warnings.append(ReadWarning(
            file, f"{len(state.ragged)} row(s) have a different number of fields than the header "
            f"({state.width}); skipped", _where(state.ragged), len(state.ragged)))
    if csv_errors:
        result.warnings.append(ReadWarning(file, f"{len(csv_errors)} line(s) could not be split as CSV; skipped",
                                           _where(csv_errors), len(csv_errors)))
    if state.undecodable:
        result.warnings.append(ReadWarning(file, f"{state.undecodable} byte(s) are not UTF-8; replaced",
                                           count=state.undecodable))
    return result


def _ends_with_newline(handle: io.BufferedReader) -> bool:
    try:
        if handle.seek(0, io.SEEK_END) == 0:
            return True
        handle.seek(-1, io.SEEK_END)
        return handle.read(1) in (b"\n", b"\r")
    except OSError:
        return True


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    lowered = [h.lower() for h in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def _where(lines: list[int]) -> str:
    return "line " + ", ".join(str(n) for n in lines[:5]) + (" …" if len(lines) > 5 else "")


def _header(reader: Iterator[list[str]], path: Path) -> list[str]:
    try:
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                return [f.strip() for f in fields]
    except csv.Error as exc:
        raise FormatError(path, f"header is not CSV: {exc}", "line 1") from exc
    raise FormatError(path, "empty file: no CSV header")


class _State:
    """Per-column counters and the point buffer while chunks stream through."""

    def __init__(self, header: list[str], step_index: int | None, epoch_index: int | None,
                 ignore: frozenset[str]) -> None:
        self.width = len(header)
        self.names = _unique_names(header)
        self.step_index = step_index
        # the epoch column may be the step column too (Keras, YOLO: one row per epoch)
        self.epoch_index = epoch_index
        skip = {step_index, self.epoch_index}
        self.value_indices = [i for i, name in enumerate(header) if i not in skip and name not in ignore]
        self.numeric = np.zeros(self.width, dtype=np.int64)
        self.non_numeric = np.zeros(self.width, dtype=np.int64)
        self.example: dict[int, str] = {}
        self.points = PointBuffer()
        self.ragged: list[int] = []
        self.bad_steps = 0
        self.undecodable = 0
        self.fractional_steps = 0

    def convert(self, chunk: list[list[str]], first_row: int) -> None:
        table = np.array(chunk, dtype=object)
        rows = np.arange(first_row, first_row + len(chunk), dtype=np.int64)
        if self.step_index is None:
            steps = rows.copy()
            usable = np.ones(len(rows), dtype=bool)
        else:
            raw_steps, _, _, undecodable = _parse(table[:, self.step_index])
            self.undecodable += undecodable
            with np.errstate(invalid="ignore"):
                whole = np.isfinite(raw_steps) & (np.floor(raw_steps) == raw_steps) & (np.abs(raw_steps) < STEP_LIMIT)
            self.bad_steps += int((~whole).sum())
            self.fractional_steps += int((np.isfinite(raw_steps) & (np.floor(raw_steps) != raw_steps)).sum())
            usable = whole
            steps = np.where(whole, raw_steps, 0).astype(np.int64)
        if self.epoch_index is not None:
            epochs, _, _, undecodable = _parse(table[:, self.epoch_index])
            self.undecodable += undecodable
        else:
            epochs = np.full(len(rows), math.nan)
        if not self.value_indices:
            return
        # Every value column of the chunk parsed in one vectorised call (a per-column loop costs
        # ~0.2 ms a column: minutes for a header of a million columns); arrays are (column, row).
        indices = np.asarray(self.value_indices, dtype=np.int64)
        block = table[:, indices]
        values, present, numeric, undecodable = _parse(block.ravel(order="F"))
        shape = (len(indices), len(rows))
        values, present, numeric = values.reshape(shape), present.reshape(shape), numeric.reshape(shape)
        self.undecodable += undecodable
        bad = present & ~numeric
        n_bad = bad.sum(axis=1)
        for j in np.flatnonzero(n_bad).tolist():
            index = int(indices[j])
            self.non_numeric[index] += int(n_bad[j])
            self.example.setdefault(index, str(block[np.flatnonzero(bad[j])[0], j]).strip()[:40])
        self.numeric[indices] += numeric.sum(axis=1)
        take = numeric & usable
        columns, at = np.nonzero(take)  # column by column, rows in order: the order points are written in
        if len(columns):
            used = np.unique(columns)
            codes = np.full(len(indices), -1, dtype=np.int64)
            codes[used] = [self.points.code(self.names[int(indices[j])]) for j in used.tolist()]
            self.points.add_coded(rows[at], codes[columns], steps[at], values[take], epochs[at])

    def result(self, file: str, rows: int) -> WideCSV:
        step_name = None if self.step_index is None else self.names[self.step_index]
        out = WideCSV(header=self.names, points=self.points, step_column=step_name, rows=rows)
        text = [i for i in self.value_indices if self.numeric[i] == 0 and self.non_numeric[i] > 0]
        out.text_columns = [self.names[i] for i in text]
        if text:
            out.notes.append(f"non-numeric column(s) skipped: {name_list(out.text_columns)}")
        for index in self.value_indices:
            if self.numeric[index] and self.non_numeric[index]:
                count = int(self.non_numeric[index])
                out.warnings.append(ReadWarning(
                    file, f"column {self.names[index]!r}: {count} cell(s) are not numbers "
                    f"(e.g. {self.example[index]!r}); skipped", count=count))
        if self.bad_steps:
            kind = "not whole numbers" if self.fractional_steps == self.bad_steps else "empty, not a whole number or too large"
            out.warnings.append(ReadWarning(
                file, f"{self.bad_steps} row(s) have a step ({step_name!r}) that is {kind}; skipped",
                count=self.bad_steps))
        return out


def _unique_names(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for position, name in enumerate(header, start=1):
        name = name or f"column_{position}"
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        names.append(name)
    return names


def _parse(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Values, which cells hold something, which of those are numbers (``nan`` included),
    and how many undecodable bytes (shown as U+FFFD) the cells hold.

    Numbers are parsed in one vectorised pass; only the cells that did not parse
    (usually empty ones) are looked at as text.
    """
    values = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    failed = np.flatnonzero(np.isnan(values))
    present = np.ones(len(cells), dtype=bool)
    numeric = np.ones(len(cells), dtype=bool)
    undecodable = 0
    if len(failed):
        rest = cells[failed]
        empty = rest == ""
        present[failed[empty]] = False
        numeric[failed[empty]] = False
        for index in failed[~empty]:
            word = str(cells[index]).strip().lower()
            undecodable += word.count("\ufffd")
            if word in MISSING_WORDS:
                present[index] = numeric[index] = False
            elif word not in NAN_WORDS:
                numeric[index] = False
    return values, present, numeric, undecodable
