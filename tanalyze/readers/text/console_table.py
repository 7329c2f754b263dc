"""Per-epoch tables printed to a console: fastai's ``fit`` and skorch's ``NeuralNet.fit`` output kept in a file.

fastai prints a header, then a row per epoch (``#na#`` where nothing was measured)::

    epoch     train_loss  valid_loss  error_rate  time
    0         0.812345    0.543210    0.132000    00:12
    1         0.512345    0.443210    0.101000    00:12

skorch prints its own with a rule under the header (and marks the best values with ``+``)::

      epoch    train_loss    valid_acc    valid_loss     dur
    -------  ------------  -----------  ------------  ------
          1        0.6905       0.5600        0.6813  0.0359

Decisions:

* A table is a header line (``epoch`` first, then names) and the rows under it with as many fields; **step =
  the epoch** as written. Each column is a tag by its name; ``time`` (``mm:ss`` or ``h:mm:ss``) is read as
  seconds, as ``epoch_time_s``; skorch's ``dur`` too. A cell of ``#na#`` was not measured: no point.
* Every ``fit`` prints a new header: a table whose epochs start over (fastai's ``fine_tune``: one frozen epoch,
  then the unfrozen ones) is a session of its own, placed after the one before on the step axis.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER

__all__ = ["ConsoleTableParser", "ConsoleTableReader", "detect_console_table"]

_NAME = r"[A-Za-z_][\w@./-]*"
_HEADER = rf"epoch(?:[ \t]+{_NAME}){{1,40}}"
_CELL = rf"(?:{NUMBER}|#na#|\d+:\d\d(?::\d\d)?)\+?"
_ROW = rf"\d+(?:[ \t]+{_CELL}){{1,40}}"
#: a header (its names) or a row (its cells), each a whole line
_LINE = re.compile(rf"\n[ \t]*(?:({_HEADER})|({_ROW}))[ \t]*(?=\n)")
_HEADER_LINE = re.compile(rf"^[ \t]*({_HEADER})[ \t]*$", re.M)
_ROW_LINE = re.compile(rf"^[ \t]*({_ROW})[ \t]*$", re.M)
#: how far below its header a table's first row may be (fastai redraws its progress bars between them)
_FIRST_ROW_WITHIN = 4096
_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d\d)$")
_SECONDS = {"time": "epoch_time_s", "dur": "epoch_time_s"}


def _value(cell: str) -> float | None:
    """A cell's number (a clock as seconds); None for ``#na#``."""
    cell = cell.rstrip("+")
    if cell == "#na#":
        return None
    clock = _CLOCK.match(cell)
    if clock is not None:
        hours, minutes, seconds = clock.groups()
        return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    return float(cell)


class ConsoleTableParser(FindallParser):
    family = "console table"
    lookalike = re.compile(rf"^[ \t]*{_ROW}[ \t]*$", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n[ \t]*{_ROW}[ \t]*(?=\n)")
    state_fields = {"_names": "last", "_tables": "sum", "_not_measured": "sum", "_orphans": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._names: list[str] | None = None
        self._tables = 0
        self._not_measured = 0
        self._orphans = 0  # rows under no header, or of another width
        self._row_matches = 0

    def count_lookalikes(self, text: str) -> int:
        """A row-shaped line is one ``line`` matches too: those of the last :meth:`take`, no second scan."""
        return self._row_matches

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        read = rows = 0
        self._row_matches = 0
        codes: list[int] = []
        steps: list[int] = []
        cells: list[str] = []
        clock_columns: set[int] = set()
        names = self._names
        row_codes = self.rows.codes(names) if names else []
        clocks = [j for j, name in enumerate(names or []) if name == "epoch_time_s"]
        previous = self._last_step
        for index, (header, row) in enumerate(found):
            if header:
                names = self._names = [_SECONDS.get(name, name) for name in header.split()[1:]]
                row_codes = self.rows.codes(names)
                clocks = [j for j, name in enumerate(names) if name == "epoch_time_s"]
                self._tables += 1
                read += 1
                continue
            self._row_matches += 1
            fields = row.split()
            if names is None or len(fields) != len(names) + 1:
                self._orphans += 1
                self.unread_matches.add(index)
                continue
            epoch = int(fields[0])
            if previous is not None and epoch < previous:  # a new fit, or a restart: recorded at its line
                self.anchor(previous, None, 0)
                self.anchor(epoch, chunk, self.match_start(text, index))
            previous = epoch
            first = len(codes)
            codes += row_codes
            steps += [epoch] * len(row_codes)
            cells += fields[1:]
            clock_columns.update(first + j for j in clocks)
            read += 1
            rows += 1
        if previous is not None and previous != self._last_step:
            self.anchor(previous, None, 0)
        if cells:
            self._add_cells(codes, steps, cells, clock_columns)
        return read, rows

    def _add_cells(self, codes: list[int], steps: list[int], cells: list[str], clocks: set[int]) -> None:
        """The cells' numbers at once (a clock in seconds; ``#na#`` and its row's place dropped)."""
        plain = [cell.rstrip("+") for cell in cells]
        for i in clocks:
            plain[i] = "0"
        missing = [i for i, cell in enumerate(plain) if cell == "#na#"]
        for i in missing:
            plain[i] = "nan"
        values = parse_numbers(" ".join(plain))
        if values is None:  # (a cell the row pattern took that float() does not: read one by one)
            values = np.array([_value(cell) if cell != "#na#" else np.nan for cell in cells], dtype=np.float64)
        for i in clocks:
            value = _value(cells[i])
            values[i] = np.nan if value is None else value
        keep = np.ones(len(cells), dtype=bool)
        keep[missing] = False
        self._not_measured += len(missing)
        self.rows.extend(np.asarray(codes, dtype=np.int32)[keep], np.asarray(steps, dtype=np.int64)[keep],
                         values[keep])

    def finish(self) -> None:
        notes = [f"{self._tables} per-epoch table(s) (a header, then a row per epoch): step = the epoch as written"]
        self.count_note(self._not_measured, "cell(s) of '#na#' (not measured) skipped")
        self.count_note(self._orphans, "row(s) under no header or with another number of cells skipped")
        self.notes[:0] = notes


def detect_console_table(window: str) -> bool:
    """A header line that starts with ``epoch`` and, below it (progress-bar redraws may come between), a row of as
    many cells."""
    for header in _HEADER_LINE.finditer(window):
        row = _ROW_LINE.search(window, header.end(), header.end() + _FIRST_ROW_WITHIN)
        if row is not None and len(row.group(1).split()) == len(header.group(1).split()):
            return True
    return False


class ConsoleTableReader(TextReader):
    name = "console_table"
    description = "per-epoch tables printed to a console (fastai's 'epoch train_loss valid_loss … time', skorch's)"
    parser = ConsoleTableParser

    def detect(self, window: str) -> bool:
        return detect_console_table(window)
