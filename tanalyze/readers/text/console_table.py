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
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER_ONCE

__all__ = ["ConsoleTableParser", "ConsoleTableReader", "detect_console_table"]

_NAME = r"[A-Za-z_][\w@./-]*"
_HEADER = rf"epoch(?:[ \t]+{_NAME}){{1,40}}"
#: a cell: a clock, a number or ``#na#`` (skorch marks its best values with ``+``), possessive (a blank or the line's
#: end follows: nothing taken is given back, so a row is read without trying each cell's blanks again)
_CELL = rf"(?:\d++:\d\d(?::\d\d)?+|{NUMBER_ONCE}|#na#)\+?+(?![^ \t\n])"
_ROW = rf"\d++(?:[ \t]++{_CELL}){{1,40}}+"
#: a header (its names) or a row (its cells), each a whole line; a progress bar's redraw ("Epoch 1/6 : |…") is
#: refused at its first character
_LINE = re.compile(rf"\n[ \t]*+(?=[0-9e])(?:({_HEADER})|({_ROW}))[ \t]*+(?=\n)")
_HEADER_LINE = re.compile(rf"^[ \t]*({_HEADER})[ \t]*$", re.M)
_ROW_LINE = re.compile(rf"^[ \t]*({_ROW})[ \t]*$", re.M)
#: how far below its header a table's first row may be (fastai redraws its progress bars between them)
_FIRST_ROW_WITHIN = 4096
_MINUTES_SECONDS = re.compile(r"\d+:\d\d(?: \d+:\d\d)*")  # clocks joined, every one mm:ss
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


def _seconds(clocks: list[str]) -> np.ndarray:
    """Clocks (``mm:ss``; ``h:mm:ss`` or ``#na#`` read one by one) as seconds, NaN for ``#na#``."""
    joined = " ".join(clocks)
    if _MINUTES_SECONDS.fullmatch(joined):
        parsed = parse_numbers(joined.replace(":", " "))
        if parsed is not None:
            return parsed[0::2] * 60 + parsed[1::2]
    return np.array([np.nan if (value := _value(clock)) is None else value for clock in clocks], dtype=np.float64)


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
        clock_cells: list[int] = []  # where in ``cells`` the clocks are
        names = self._names
        row_codes = self.rows.codes(names) if names else []
        clocks = [j for j, name in enumerate(names or []) if name == "epoch_time_s"]
        width = len(row_codes) + 1
        previous = self._last_step
        for index, (header, row) in enumerate(found):
            if header:
                names = self._names = [_SECONDS.get(name, name) for name in header.split()[1:]]
                row_codes = self.rows.codes(names)
                clocks = [j for j, name in enumerate(names) if name == "epoch_time_s"]
                width = len(row_codes) + 1
                self._tables += 1
                read += 1
                continue
            self._row_matches += 1
            fields = row.split()
            if names is None or len(fields) != width:
                self._orphans += 1
                self.unread_matches.add(index)
                continue
            epoch = int(fields[0])
            if previous is not None and epoch < previous:  # a new fit, or a restart: recorded at its line
                self.anchor(previous, None, 0)
                self.anchor(epoch, chunk, self.match_start(text, index))
            previous = epoch
            if clocks:
                clock_cells += [len(cells) + j for j in clocks]
            codes += row_codes
            steps += [epoch] * (width - 1)
            cells += fields[1:]
            read += 1
            rows += 1
        if previous is not None and previous != self._last_step:
            self.anchor(previous, None, 0)
        if cells:
            self._add_cells(codes, steps, cells, clock_cells)
        return read, rows

    def _add_cells(self, codes: list[int], steps: list[int], cells: list[str], clocks: list[int]) -> None:
        """The cells' numbers at once (the clocks at ``clocks`` in seconds; ``#na#`` and its row's place dropped)."""
        joined = " ".join(cells)
        if "+" in joined:  # (skorch's marks of its best values, or an exponent's sign)
            cells = [cell.rstrip("+") for cell in cells]
            joined = " ".join(cells)
        values, numbers = parse_some_numbers(joined)
        if clocks:
            values[clocks] = _seconds([cells[i] for i in clocks])
            numbers[clocks] = True
        others = np.flatnonzero(~numbers).tolist()  # #na#, or a clock in a column of another name
        for i in others:
            value = _value(cells[i])
            values[i] = np.nan if value is None else value
        missing = [i for i in others if cells[i] == "#na#"]
        missing += [i for i in clocks if cells[i] == "#na#"]
        self._not_measured += len(missing)
        if missing:
            keep = np.ones(len(cells), dtype=bool)
            keep[missing] = False
            self.rows.extend(np.asarray(codes, dtype=np.int32)[keep], np.asarray(steps, dtype=np.int64)[keep],
                             values[keep])
        else:
            self.rows.extend(np.asarray(codes, dtype=np.int32), np.asarray(steps, dtype=np.int64), values)

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
