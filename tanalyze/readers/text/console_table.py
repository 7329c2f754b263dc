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
from itertools import chain, compress
from pathlib import Path

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER_ONCE, NUMBER_PATTERN

__all__ = ["ConsoleTableParser", "ConsoleTableReader", "detect_console_table"]

_NAME = r"[A-Za-z_][\w@./-]*"
_HEADER = rf"epoch(?:[ \t]+{_NAME}){{1,40}}"
#: a cell: a clock, a number or ``#na#`` (skorch marks its best values with ``+``), possessive (a blank or the line's
#: end follows: nothing taken is given back, so a row is read without trying each cell's blanks again)
_CELL = rf"(?:\d++:\d\d(?::\d\d)?+|{NUMBER_ONCE}|#na#)\+?+(?![^ \t\n])"
_ROW = rf"\d++(?:[ \t]++{_CELL}){{1,40}}+"
#: a header (its names) or a row-shaped line (its cells, any words: 1.7x quicker than a row's cells; those that are
#: no ``_CELL`` are told by :class:`_Cells`, and their lines left as ``_ROW`` leaves them), each a whole line; a
#: progress bar's redraw ("Epoch 1/6 : |…") is refused at its first character
_LINE = re.compile(rf"\n[ \t]*+(?=[0-9e])(?:({_HEADER})|(\d++(?:[ \t]++\S++){{1,40}}+))[ \t]*+(?=\n)")
_HEADER_LINE = re.compile(rf"^[ \t]*({_HEADER})[ \t]*$", re.M)
_ROW_LINE = re.compile(rf"^[ \t]*({_ROW})[ \t]*$", re.M)
#: how far below its header a table's first row may be (fastai redraws its progress bars between them)
_FIRST_ROW_WITHIN = 4096
_MINUTES_SECONDS = re.compile(r"\d+:\d\d(?: \d+:\d\d)*")  # clocks joined, every one mm:ss
_CLOCK = re.compile(r"(\d+):(\d\d)(?::(\d\d))?")  # as a cell has it: mm:ss or h:mm:ss
_SECONDS = {"time": "epoch_time_s", "dur": "epoch_time_s"}
#: the largest epoch read (an exact double, as every step)
_LARGEST_EPOCH = 2**53


class _Cells:
    """The cells of row-shaped lines (their words after the epoch), each told at once: its value (a clock in
    seconds, NaN for ``#na#``), whether it is a cell as ``_CELL`` has it, and whether it is ``#na#`` (not measured),
    all lines' words in turn; ``offsets``: where each line's words begin among them (and where the last ends)."""

    def __init__(self, fields: list[list[str]]) -> None:
        self.widths = np.fromiter(map(len, fields), np.int64, len(fields))
        self.offsets = np.concatenate(([0], np.cumsum(self.widths)))
        words = list(chain.from_iterable(fields))
        joined = " ".join(words)
        if "+" in joined:  # (skorch's marks of its best values, or an exponent's sign)
            words = [word[:-1] if word.endswith("+") else word for word in words]
            joined = " ".join(words)
        self.values, cell = parse_some_numbers(joined) if words else (np.empty(0), np.empty(0, dtype=bool))
        odd = cell & ~np.isfinite(self.values)  # float() takes "INF" and "nAn", NUMBER does not
        if "_" in joined:  # nor "1_0"
            odd |= cell & np.fromiter(("_" in word for word in words), bool, len(words))
        for i in np.flatnonzero(odd).tolist():
            cell[i] = NUMBER_PATTERN.fullmatch(words[i]) is not None
        self.missing = np.zeros(len(words), dtype=bool)
        others = np.flatnonzero(~cell)  # clocks, #na#, and words that are no cell
        if len(others):
            kinds = [words[i] for i in others.tolist()]
            na = np.fromiter(map("#na#".__eq__, kinds), bool, len(kinds))
            self.missing[others[na]] = True
            clocks = others[~na]
            self.values[clocks], cell[clocks] = _seconds(list(compress(kinds, (~na).tolist())))
            cell[others[na]] = True
        bad = np.concatenate(([0], np.cumsum(~cell)))
        #: which lines are rows: every word after the epoch a cell (the epoch, digits, is a number)
        self.rows = bad[self.offsets[1:]] == bad[self.offsets[:-1]]
        firsts = self.values[np.minimum(self.offsets[:-1], len(words) - 1)] if words else np.zeros(len(fields))
        #: the epochs read: those that are an exact double (digits, read as a number above)
        self.epoch_read = firsts <= _LARGEST_EPOCH
        self.epochs = np.where(self.epoch_read, firsts, 0).astype(np.int64)

    def row_cells(self, rows: np.ndarray, width: int) -> np.ndarray:
        """The positions of the cells (after the epoch) of ``rows``, each ``width`` words long, row after row."""
        return (self.offsets[rows][:, None] + np.arange(1, width)).ravel()


def _seconds(clocks: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Clocks as seconds, and which are clocks as a cell has them (``mm:ss`` or ``h:mm:ss``; NaN for others)."""
    joined = " ".join(clocks)
    if _MINUTES_SECONDS.fullmatch(joined):
        parsed = parse_numbers(joined.replace(":", " "))
        if parsed is not None:
            return parsed[0::2] * 60 + parsed[1::2], np.ones(len(clocks), dtype=bool)
    values, valid = np.full(len(clocks), np.nan), np.zeros(len(clocks), dtype=bool)
    for i, clock in enumerate(clocks):
        m = _CLOCK.fullmatch(clock)
        if m is not None:
            first, second, third = m.groups()
            hours, minutes, seconds = (0, first, second) if third is None else (first, second, third)
            values[i], valid[i] = int(hours) * 3600 + int(minutes) * 60 + int(seconds), True
    return values, valid


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
        """A row is a line ``line`` finds too: those of the last :meth:`take`, no second scan."""
        return self._row_matches

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        """Each header's names, and the rows under it at once; a row-shaped line with a word that is no cell is
        no row (left unread, and not a look-alike)."""
        headers, words = zip(*found, strict=True) if found else ((), ())
        cells = _Cells(list(map(str.split, words)))
        starts = [index for index, header in enumerate(headers) if header]
        no_rows = np.flatnonzero(~cells.rows & (cells.widths > 0)).tolist()
        self.unread_matches.update(no_rows)
        self._row_matches = len(found) - len(starts) - len(no_rows)
        read = 0  # rows
        for first, stop in zip([0, *starts], [*starts, len(found)], strict=True):
            if first < stop and headers[first]:
                self._names = [_SECONDS.get(name, name) for name in headers[first].split()[1:]]
                self._tables += 1
                first += 1
            if first < stop:
                read += self._take_rows(chunk, text, cells, first + np.flatnonzero(cells.rows[first:stop]))
        return len(starts) + read, read

    def _take_rows(self, chunk: Chunk, text: str, cells: _Cells, rows: np.ndarray) -> int:
        """The rows ``rows`` (indices into the chunk's lines found) under the last header: those of its width at
        their epochs (a step lower than the one before is a new fit or a restart, recorded at its line); how many
        were read. An epoch too long to be a step is left unread (a look-alike)."""
        names = self._names
        width = len(names) + 1 if names is not None else 0
        wrong = rows[cells.widths[rows] != width]
        self._orphans += len(wrong)
        unread = rows[(cells.widths[rows] != width) | ~cells.epoch_read[rows]]
        self.unread_matches.update(unread.tolist())
        rows = rows[(cells.widths[rows] == width) & cells.epoch_read[rows]]
        if not len(rows) or names is None:
            return 0
        epochs = cells.epochs[rows]
        previous = self._last_step
        drops = np.flatnonzero(epochs[1:] < epochs[:-1]) + 1
        if previous is not None and epochs[0] < previous:
            drops = np.concatenate(([0], drops))
        for k in drops.tolist():
            self.anchor(previous if k == 0 else int(epochs[k - 1]), None, 0)
            self.anchor(int(epochs[k]), chunk, self.match_start(text, int(rows[k])))
        self.anchor(int(epochs[-1]), None, 0)
        at = cells.row_cells(rows, width)
        keep = ~cells.missing[at]
        self._not_measured += len(at) - int(keep.sum())
        codes = np.tile(np.array(self.rows.codes(names), dtype=np.int32), len(rows))
        self.rows.extend(codes[keep], np.repeat(epochs, len(names))[keep], cells.values[at][keep])
        return len(rows)

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
