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
from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
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
        """Each header's names, and the rows under it at once."""
        headers, rows = zip(*found, strict=True) if found else ((), ())
        starts = [index for index, header in enumerate(headers) if header]
        self._row_matches = len(found) - len(starts)
        read = 0  # rows
        for first, stop in zip([0, *starts], [*starts, len(found)], strict=True):
            if first < stop and headers[first]:
                self._names = [_SECONDS.get(name, name) for name in headers[first].split()[1:]]
                self._tables += 1
                first += 1
            if first < stop:
                read += self._take_rows(chunk, text, rows[first:stop], first)
        return len(starts) + read, read

    def _take_rows(self, chunk: Chunk, text: str, rows: Sequence[str], first: int) -> int:
        """The rows (``found[first:]`` on) under the last header: those of its width at their epochs (a step lower
        than the one before is a new fit or a restart, recorded at its line); how many were read."""
        names = self._names
        width = len(names) + 1 if names is not None else 0
        fields = list(map(str.split, rows))
        wrong = np.flatnonzero(np.fromiter(map(len, fields), np.int64, len(fields)) != width).tolist()
        if wrong:  # under no header, or of another width
            self._orphans += len(wrong)
            self.unread_matches.update(first + i for i in wrong)
            kept = np.ones(len(fields), dtype=bool)
            kept[wrong] = False
            at = np.flatnonzero(kept).tolist()
            fields = [fields[i] for i in at]
        else:
            at = None
        if not fields or names is None:
            return 0
        epochs = np.fromiter(map(int, map(itemgetter(0), fields)), np.int64, len(fields))
        previous = self._last_step
        drops = np.flatnonzero(epochs[1:] < epochs[:-1]) + 1
        if previous is not None and epochs[0] < previous:
            drops = np.concatenate(([0], drops))
        for k in drops.tolist():
            self.anchor(previous if k == 0 else int(epochs[k - 1]), None, 0)
            self.anchor(int(epochs[k]), chunk, self.match_start(text, first + (k if at is None else at[k])))
        self.anchor(int(epochs[-1]), None, 0)
        cells = list(chain.from_iterable(fields))
        del cells[::width]  # (the epochs)
        codes = np.tile(np.array(self.rows.codes(names), dtype=np.int32), len(fields))
        clocks = [j for j, name in enumerate(names) if name == "epoch_time_s"]
        clock_cells = (np.arange(len(fields))[:, None] * len(names) + clocks).ravel().tolist() if clocks else []
        self._add_cells(codes, np.repeat(epochs, len(names)), cells, clock_cells)
        return len(fields)

    def _add_cells(self, codes: np.ndarray, steps: np.ndarray, cells: list[str], clocks: list[int]) -> None:
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
        keep = np.ones(len(cells), dtype=bool)
        keep[missing] = False
        self.rows.extend(codes[keep], steps[keep], values[keep])

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
