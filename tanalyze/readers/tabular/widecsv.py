"""Wide CSV (one column per metric, one row per logging event) → columns → tidy points.

Used by every CSV logger reader (and by the W&B chart export for its parsing).
Rules, the same for all of them:

* an empty cell (or ``None``/``null``/``NA``) is "not logged here" and yields no point;
  a literal ``nan``/``inf`` is a logged value and is kept;
* a column with no number in it is text: it is skipped and named in a note;
  stray non-numbers in a numeric column are counted in a warning;
* rows whose field count differs from the header (ragged rows, a cut-off last
  line) are skipped and counted; rows without a usable step likewise;
* a BOM, CRLF and undecodable bytes are tolerated.

How it is fast: pandas' C parser reads the file itself (it is more than
twice as fast on a path as on bytes handed to it) while the bytes are scanned, and the result is checked: pandas
refuses a record with too many fields, and the commas must add up to one less
than the header's fields per record, so none has too few. Only a column that
holds text is looked at cell by cell. A file that fails the check (ragged
lines, a comma inside a quoted cell), or whose header is not its first line, is
read again in blocks of whole lines (:data:`BLOCK_BYTES`), each checked the same
way; a block that fails has its ragged lines found with numpy (the commas of
every line counted) and cut out before parsing again, or, when it holds a quote
character (a quoted cell may hold a comma or a newline), it is split by
Python's csv module, which knows quoting. All ways give the same columns (tested).
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import ReadWarning
from tanalyze.readers.tabular.common import MISSING_WORDS, NAN_WORDS, STEP_LIMIT, PointBuffer, name_list

__all__ = ["WideCSV", "WideColumns", "read_wide_csv", "read_columns", "sniff_header", "sniff_separator", "BLOCK_BYTES",
           "BATCH_NAMES", "COUNTER_NAMES", "column_key"]

#: Bytes read at a time (a block is cut at a line end).
BLOCK_BYTES = 64 * 1024 * 1024
#: chooses the step column from the header: returns its index or None (row index is the step)
StepChooser = Callable[[list[str]], int | None]
#: Spellings of "not logged" handed to pandas (exact); other spellings end up as text and are matched in any case.
_NA_CELLS = ["", "None", "none", "null", "NULL", "Null", "NA", "na", "N/A", "n/a", "<NA>"]

def column_key(name: str) -> str:
    """A column's name as the names of counters below are written: lower case, blanks between words an underscore
    (a hand-written logger's ``total timesteps``, ``Global Step``)."""
    return _BLANKS_IN_NAME.sub("_", name.strip().lower())


_BLANKS_IN_NAME = re.compile(r"(?<=\w)[ \t]+(?=\w)")

#: Columns that count batches within an epoch (compared in lower case, whole name or the part after the last '/').
BATCH_NAMES = frozenset({
    "batch", "batches", "batch_idx", "batch_index", "batch_id", "batch_nb", "batch_num", "batch_no", "minibatch",
    "mini_batch", "step_in_epoch", "steps_in_epoch", "iter_in_epoch", "iteration_in_epoch", "batch_in_epoch",
    "it", "iter", "iters", "iteration", "iterations", "step", "steps", "i",
})
#: Columns that are counters (the step, the epoch, a batch index, a row index), never metrics: an index says
#: where a row is, not how training went. Progress counters (``samples_seen``, ``tokens_seen``,
#: ``consumed_samples``) are kept as metrics: they measure the data consumed, and throughput can be read from them.
COUNTER_NAMES = frozenset({
    *BATCH_NAMES, "global_step", "globalstep", "trainer/global_step", "_step", "epoch", "epochs", "num_updates",
    "updates", "update", "n_updates", "nupdates", "index", "unnamed: 0", "total_timesteps", "timesteps", "timestep",
})


@dataclass
class WideColumns:
    """A wide CSV parsed column by column (every array has one entry per kept row)."""

    header: list[str]  # names made unique (``loss``, ``loss#2``; an empty name is ``column_<n>``)
    raw_header: list[str]
    rows: int
    values: list[np.ndarray]  # float64
    present: list[np.ndarray]  # the cell holds something (empty and None-like cells do not)
    numeric: list[np.ndarray]  # the cell is a number (nan and inf included)
    exact: dict[int, np.ndarray] = field(default_factory=dict)  # int64 where a column parsed as whole numbers
    non_numeric: list[int] = field(default_factory=list)
    examples: dict[int, str] = field(default_factory=dict)
    warnings: list[ReadWarning] = field(default_factory=list)
    file: str = ""


def sniff_separator(head: bytes, separators: str = ",") -> str | None:
    """Which of ``separators`` (in that order of preference) splits the header line of a CSV whose first bytes
    are ``head`` (None: none does, or the line is longer than the head)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first, newline, _ = text.partition("\n")
    if (not newline and len(head) >= 4096) or "\x00" in first:
        return None  # a header longer than the head: not a log we know
    return next((separator for separator in separators if separator in first), None)


def sniff_header(head: bytes, separators: str = ",") -> list[str] | None:
    """The stripped header fields of a CSV whose first bytes are ``head`` (None if it is not CSV-like), its
    cells split by the first of ``separators`` it holds (a comma, or Keras ``CSVLogger(separator=";")``'s)."""
    separator = sniff_separator(head, separators)
    if separator is None:
        return None
    first = head.decode("utf-8", errors="replace").lstrip("\ufeff").partition("\n")[0].rstrip("\r")
    try:
        fields = next(csv.reader([first], delimiter=separator, skipinitialspace=True))
    except csv.Error:
        return None
    fields = [f.strip() for f in fields]
    return fields if len(fields) >= 2 else None


# --- parsing -----------------------------------------------------------------------------------------------


def read_columns(path: Path, *, block_bytes: int | None = None, separator: str = ",") -> WideColumns:
    """Parse a wide CSV (its cells split by ``separator``) into columns (see the module doc). Raises
    :class:`FormatError` when the file cannot be opened or has no header."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        try:
            return _Parser(path, handle, block_bytes or BLOCK_BYTES, separator).run()
        except OSError as exc:
            raise FormatError(path, f"cannot be read: {exc.strerror or exc}") from exc


class _Parser:
    def __init__(self, path: Path, handle: io.BufferedReader, block_bytes: int, separator: str = ",") -> None:
        self.path, self.handle, self.block_bytes = path, handle, block_bytes
        self.separator, self.separator_byte = separator, separator.encode("ascii")
        self.file = str(path)
        self.ragged: list[int] = []  # the first few line numbers
        self.ragged_count = 0
        self.last_ragged: int | None = None  # the line of the last record, when it was ragged
        self.csv_errors: list[int] = []
        self.undecodable = 0
        self.rows = 0
        self.width = 0
        self.parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]] = []
        self.non_numeric: list[int] = []
        self.examples: dict[int, str] = {}
        self.cr_only: bool | None = None  # lines end with a lone carriage return (old Mac): not known yet

    def run(self) -> WideColumns:
        header, data, start, line = self._header(self._read(self.handle.read(self.block_bytes)))
        self.width = len(header)
        header_undecodable = self.undecodable
        self._reset()
        ends_with_newline = True
        if not (line == 1 and self._whole_file(data, start)):
            self._reset()
            self.undecodable = header_undecodable
            self.handle.seek(len(data))
            for block, first_line in self._blocks(data, start, line + 1):
                ends_with_newline = block.endswith((b"\n", b"\r"))
                self._block(block, first_line)
        else:
            self.undecodable += header_undecodable
        columns = self._columns(_unique_names(header), header)
        if self.last_ragged is not None and not ends_with_newline:
            columns.warnings.append(ReadWarning(self.file, "the last line is incomplete (file cut off?); skipped",
                                                f"line {self.last_ragged}"))
            if self.last_ragged in self.ragged:
                self.ragged.remove(self.last_ragged)
            self.ragged_count -= 1
        if self.ragged_count:
            columns.warnings.append(ReadWarning(
                self.file, f"{self.ragged_count} row(s) have a different number of fields than the header "
                f"({self.width}); skipped", _where(self.ragged, self.ragged_count), self.ragged_count))
        if self.csv_errors:
            columns.warnings.append(ReadWarning(self.file, f"{len(self.csv_errors)} line(s) could not be split as "
                                                "CSV; skipped", _where(self.csv_errors), len(self.csv_errors)))
        if self.undecodable:
            columns.warnings.append(ReadWarning(self.file, f"{self.undecodable} byte(s) are not UTF-8; replaced",
                                                count=self.undecodable))
        return columns

    def _read(self, chunk: bytes) -> bytes:
        """A chunk as read, with old Mac line ends (a lone carriage return) made newlines."""
        if self.cr_only is None:  # decided by the first line end
            ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
            if ends:
                first = min(ends)
                if chunk[first:first + 1] == b"\n":
                    self.cr_only = False
                elif first + 1 < len(chunk):
                    self.cr_only = chunk[first + 1:first + 2] != b"\n"
        return chunk.replace(b"\r", b"\n") if self.cr_only else chunk

    def _reset(self) -> None:
        self.parts = [[] for _ in range(self.width)]
        self.non_numeric = [0] * self.width
        self.examples = {}
        self.rows = 0
        self.undecodable = 0

    # -- the whole file at once --

    def _whole_file(self, data: bytes, start: int) -> bool:
        """Parse the body with pandas reading the file itself (its C reader is more than twice as fast on a
        path as on bytes handed to it), checked as a block is: True when the check holds.

        The bytes are scanned alongside (commas counted, undecodable bytes counted). pandas reads the file in
        one call (its own pieces: asked for pieces of rows, or for typing the columns in one go, it is twice as
        slow); the wide table lives until its columns are taken, next to them.
        """
        commas = data.count(self.separator_byte, start)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._undecodable(decoder, memoryview(data)[start:], data.isascii())
        while chunk := self.handle.read(self.block_bytes):
            commas += chunk.count(self.separator_byte)
            self._undecodable(decoder, chunk, chunk.isascii())
        self._undecodable(decoder, b"", True, final=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                frame = pd.read_csv(
                    self.path, sep=self.separator, header=None, names=list(range(self.width)), index_col=False,
                    skiprows=1,
                    skipinitialspace=True, keep_default_na=False, na_values=_NA_CELLS, encoding="utf-8",
                    encoding_errors="replace", skip_blank_lines=True,
                )
            self._take(frame)
        except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, ValueError, OSError):
            return False
        return commas == (self.width - 1) * self.rows

    def _undecodable(self, decoder, chunk, ascii_only: bool, *, final: bool = False) -> None:
        """Count the undecodable bytes of a stream, chunk by chunk (a character may straddle two chunks)."""
        if ascii_only and not decoder.getstate()[0] and not final:
            return
        raw = bytes(chunk)
        text = decoder.decode(raw, final)
        self.undecodable += max(text.count("\ufffd") - raw.count(b"\xef\xbf\xbd"), 0)

    # -- the header and the blocks --

    def _header(self, data: bytes) -> tuple[list[str], bytes, int, int]:
        """The header fields, the bytes read, where the body starts in them, and the header's (last) line number."""
        position, line = 0, 0
        while True:
            end = _record_end(data, position)
            while end is None:  # a header longer than the block read so far
                more = self._read(self.handle.read(self.block_bytes))
                if not more:
                    end = len(data)
                    break
                data += more
                end = _record_end(data, position)
            raw = data[position:end]
            line += raw.count(b"\n") + 1
            if raw.strip().strip(b"\xef\xbb\xbf"):
                break
            if end >= len(data):
                raise FormatError(self.path, "empty file: no CSV header")
            position = end + 1
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        text = raw.decode("utf-8", errors="replace")
        self.undecodable += _bad_bytes(raw, text)
        try:
            fields = next(csv.reader([text.rstrip("\r\n")], delimiter=self.separator, skipinitialspace=True))
        except (csv.Error, StopIteration) as exc:
            raise FormatError(self.path, f"header is not CSV: {exc}", "line 1") from exc
        return [f.strip() for f in fields], data, end + 1, line

    def _blocks(self, data: bytes, start: int, first_line: int) -> Iterator[tuple[bytes, int]]:
        """Blocks of whole records (cut after a newline outside quotes) and the line number each starts at.

        Bytes are copied once at most (the pieces of a block joined); a block's lines are counted only
        when another block follows it.
        """
        pending: list[tuple[bytes, int, int]] = []  # pieces of the unfinished block: (bytes, start, end)
        chunk, begin = data, start
        previous: bytes | None = None
        while True:
            if begin < len(chunk):
                quotes = sum(b.count(b'"', s, e) for b, s, e in pending if b.find(b'"', s, e) >= 0)
                cut = _last_record_end(chunk, begin, quotes)
                if cut is None:  # no record ends in it yet: read on
                    pending.append((chunk, begin, len(chunk)))
                else:
                    pending.append((chunk, begin, cut + 1))
                    block = _joined(pending)
                    pending = [(chunk, cut + 1, len(chunk))] if cut + 1 < len(chunk) else []
                    if previous is not None:
                        first_line += previous.count(b"\n")
                    yield block, first_line
                    previous = block
            chunk, begin = self._read(self.handle.read(self.block_bytes)), 0
            if not chunk:
                if pending:
                    if previous is not None:
                        first_line += previous.count(b"\n")
                    yield _joined(pending), first_line
                return

    # -- one block --

    def _block(self, block: bytes, first_line: int) -> None:
        if not block.isascii():
            self.undecodable += _bad_bytes(block, block.decode("utf-8", errors="replace"))
        # Most blocks are well formed: parsed as they are, then checked. pandas refuses a line with too many
        # fields; when no line has too many and the commas add up to (width - 1) per record, none has too few
        # (a comma inside a quoted cell makes the sum differ: such a block goes the careful way).
        frame = self._parse_block(block)
        if frame is not None and block.count(self.separator_byte) == (self.width - 1) * len(frame):
            self._take(frame)
            self._ragged(np.empty(0, dtype=np.int64), last=False, any_record=bool(len(frame)))
            return
        if b'"' in block:
            self._quoted_block(block, first_line)
            return
        arr = np.frombuffer(block, dtype=np.uint8)
        separators = np.flatnonzero((arr == 10) | (arr == self.separator_byte[0]))  # one entry per cell: one scan
        at_newline = np.flatnonzero(arr[separators] == 10)
        newlines = separators[at_newline]
        if not block.endswith(b"\n"):
            at_newline = np.append(at_newline, len(separators))
            newlines = np.append(newlines, len(block))
        ends = newlines
        starts = np.concatenate(([0], newlines[:-1] + 1))
        counts = np.diff(at_newline, prepend=-1) - 1  # commas between consecutive newlines
        good = counts == self.width - 1
        blank = np.zeros(len(ends), dtype=bool)
        for index in (np.flatnonzero(~good) if self.width > 1 else range(len(ends))):
            if not block[starts[index]:ends[index]].strip():
                blank[index] = True
        good &= ~blank
        expected = int(good.sum())
        if good.all():
            body = block
        else:
            lengths = np.diff(np.append(starts, len(block)))
            body = arr[np.repeat(good, lengths)].tobytes()
        if expected:
            frame = self._parse_block(body)
            if frame is None or len(frame) != expected:  # not expected after the checks: csv then decides
                self._quoted_block(block, first_line)
                return
            self._take(frame)
        records = np.flatnonzero(~blank)
        bad = np.flatnonzero(~good & ~blank)
        self._ragged(bad + first_line, last=bool(len(records)) and bool(len(bad)) and bad[-1] == records[-1],
                     any_record=bool(len(records)))

    def _parse_block(self, body: bytes) -> pd.DataFrame | None:
        """pandas' C parser on whole records; None when it refuses them."""
        try:
            with warnings.catch_warnings():  # extra fields on the first line only warn (and are dropped): refused
                warnings.simplefilter("error", pd.errors.ParserWarning)
                # parsed in pieces (low_memory), a column may be typed differently in each: it is then text
                # (objects), which _column reads cell by cell, exactly
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                return pd.read_csv(
                    io.BytesIO(body), sep=self.separator, header=None, names=list(range(self.width)), index_col=False,
                    skipinitialspace=True, keep_default_na=False, na_values=_NA_CELLS, encoding="utf-8",
                    encoding_errors="replace", skip_blank_lines=True,
                )
        except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, ValueError):
            return None

    def _take(self, frame: pd.DataFrame) -> None:
        for index in range(self.width):
            self._add(index, _column(frame[index]))
        self.rows += len(frame)

    def _quoted_block(self, block: bytes, first_line: int) -> None:
        """A block split by the csv module (quoted cells), parsed cell by cell."""
        text = block.decode("utf-8", errors="replace")
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=self.separator, skipinitialspace=True)
        records: list[list[str]] = []
        ragged: list[int] = []
        last_line, last_was_ragged = None, False
        while True:
            try:
                for fields in reader:
                    line = first_line + reader.line_num - 1
                    if len(fields) != self.width:
                        if len(fields) > 1 or (fields and fields[0].strip()):  # not a blank line
                            ragged.append(line)
                            last_line, last_was_ragged = line, True
                        continue
                    records.append(fields)
                    last_line, last_was_ragged = line, False
                break
            except csv.Error:
                self.csv_errors.append(first_line + reader.line_num - 1)
        self._ragged(np.asarray(ragged, dtype=np.int64), last=last_was_ragged, any_record=last_line is not None)
        if not records:
            return
        table = np.array(records, dtype=object)
        for index in range(self.width):
            values, present, numeric, _ = _parse(table[:, index])
            self._add(index, (values, present, numeric, None, table[:, index]))
        self.rows += len(records)

    def _ragged(self, lines: np.ndarray, *, last: bool, any_record: bool) -> None:
        """Count ragged records (their line numbers); ``last``: the block's last record was one."""
        self.ragged_count += len(lines)
        room = 5 - len(self.ragged)
        if room > 0:
            self.ragged.extend(int(n) for n in lines[:room])
        if any_record:
            self.last_ragged = int(lines[-1]) if last else None

    def _add(self, index: int, parsed: tuple) -> None:
        values, present, numeric, exact, cells = parsed
        bad = present & ~numeric
        count = int(bad.sum())
        if count:
            self.non_numeric[index] += count
            if index not in self.examples:
                self.examples[index] = str(cells[int(np.flatnonzero(bad)[0])]).strip()[:40]
        self.parts[index].append((values, present, numeric, exact))

    def _columns(self, names: list[str], header: list[str]) -> WideColumns:
        values, present, numeric = [], [], []
        exact: dict[int, np.ndarray] = {}
        for index, parts in enumerate(self.parts):
            if not parts:
                values.append(np.empty(0))
                present.append(np.empty(0, dtype=bool))
                numeric.append(np.empty(0, dtype=bool))
                continue
            values.append(np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0])
            present.append(np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1])
            numeric.append(np.concatenate([p[2] for p in parts]) if len(parts) > 1 else parts[0][2])
            if all(p[3] is not None for p in parts):
                exact[index] = np.concatenate([p[3] for p in parts]) if len(parts) > 1 else parts[0][3]
        return WideColumns(header=names, raw_header=header, rows=self.rows, values=values, present=present,
                           numeric=numeric, exact=exact, non_numeric=self.non_numeric, examples=self.examples,
                           file=self.file)


def _record_end(data: bytes, start: int) -> int | None:
    """The newline that ends the record starting at ``start`` (outside quotes), None if not in ``data``."""
    position = start
    while True:
        newline = data.find(b"\n", position)
        if newline < 0:
            return None
        if data.count(b'"', start, newline) % 2 == 0:
            return newline
        position = newline + 1


def _last_record_end(data: bytes, start: int = 0, quotes_before: int = 0) -> int | None:
    """The last newline in ``data[start:]`` that ends a record (an even number of quotes before it, counting
    ``quotes_before`` from earlier bytes of the same record stretch), None if there is none."""
    newline = data.rfind(b"\n", start)
    if newline < 0 or (not quotes_before and data.find(b'"', start) < 0):
        return newline if newline >= 0 else None
    quotes = quotes_before + data.count(b'"', start, newline)
    while newline >= start:
        if quotes % 2 == 0:
            return newline
        previous = data.rfind(b"\n", start, newline)
        quotes -= data.count(b'"', max(previous + 1, start), newline)
        newline = previous
    return None


def _joined(pieces: list[tuple[bytes, int, int]]) -> bytes:
    """The pieces as one bytes object (the object itself when it is one whole piece)."""
    if len(pieces) == 1:
        data, start, end = pieces[0]
        if start == 0 and end == len(data):
            return data
    return b"".join(memoryview(data)[start:end] for data, start, end in pieces)


def _bad_bytes(raw: bytes, text: str) -> int:
    """Undecodable bytes in ``raw`` (replaced by U+FFFD in ``text``), not counting a literal U+FFFD."""
    return max(text.count("\ufffd") - raw.count(b"\xef\xbf\xbd"), 0)


def _column(series: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One parsed column: values, present, numeric, exact whole numbers (or None), the cells when text."""
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else "O"
    n = len(series)
    if kind == "i":
        exact = series.to_numpy(dtype=np.int64)
        everywhere = np.ones(n, dtype=bool)
        return exact.astype(np.float64), everywhere, everywhere, exact, None
    if kind in "uf":
        values = series.to_numpy(dtype=np.float64)
        present = ~np.isnan(values)
        return values, present, present, None, None
    missing = series.isna().to_numpy()
    cells = np.array(series.astype(object).to_numpy(), dtype=object)
    cells[missing] = ""
    values, present, numeric, _ = _parse(np.asarray([str(c) for c in cells], dtype=object) if kind == "b" else cells)
    return values, present, numeric, None, cells


def _parse(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Values, which cells hold something, which of those are numbers (``nan`` included),
    and how many undecodable bytes (shown as U+FFFD) the cells hold.

    Numbers are parsed in one vectorised pass; only the cells that did not parse
    (usually empty ones) are looked at as text.
    """
    try:
        values = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce")
    except OverflowError:  # a Python int beyond float64 among the cells (pandas typed a piece of them as numbers)
        cells = np.array([str(c) for c in cells], dtype=object)
        values = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce")
    values = values.to_numpy(dtype=np.float64, na_value=np.nan)
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


def _where(lines: list[int], total: int | None = None) -> str:
    total = len(lines) if total is None else total
    return "line " + ", ".join(str(n) for n in lines[:5]) + (" …" if total > 5 else "")


# --- columns → points ---------------------------------------------------------------------------------------


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
    counters: list[str] = field(default_factory=list)
    #: the batch column when the step was built from the epoch and a batch counter
    batch_column: str | None = None
    #: the steps of the rows that were read only increase (then no tag logs a step twice)
    increasing: bool = False


def read_wide_csv(
    path: Path,
    *,
    choose_step: StepChooser,
    epoch_names: tuple[str, ...] = ("epoch",),
    ignore: frozenset[str] = frozenset(),
    block_bytes: int | None = None,
    separator: str = ",",
) -> WideCSV:
    """Read a wide CSV into points (one per non-empty numeric cell).

    ``choose_step`` picks the step column from the header (None: the row index
    is the step). The first column named like ``epoch_names`` (any case) fills
    the ``epoch`` column and is not a tag. When the step column (or a column
    named like a batch index) counts batches *within* an epoch, the step is built
    from both (see :func:`_batch_steps`). Counter columns are never tags (see
    :func:`_counters`). Columns in ``ignore`` are neither tags nor reported.
    Raises :class:`FormatError` when the file cannot be opened or has no header.
    """
    file = str(path)
    table = read_columns(path, block_bytes=block_bytes, separator=separator)
    names = table.header
    step_index = choose_step(table.raw_header)
    epoch_index = _find(table.raw_header, epoch_names)
    out = WideCSV(header=names, points=PointBuffer(), step_column=None, rows=table.rows, warnings=table.warnings)
    steps, usable, bad_steps, fractional, used = _row_steps(table, step_index, epoch_index, out)
    epochs = table.values[epoch_index] if epoch_index is not None else np.full(table.rows, math.nan)
    if epoch_index is not None:
        epochs = np.where(table.numeric[epoch_index], epochs, math.nan)
    skip = set(used) | {epoch_index} | {i for i, name in enumerate(table.raw_header) if name in ignore}
    counters = _counters(table, skip)
    value_indices = [i for i in range(len(names)) if i not in skip and i not in counters]
    _text_and_bad_cells(table, value_indices, out, file)
    if counters:
        out.counters = [names[i] for i in counters]
        described = ", ".join(f"{names[i]!r} ({int(table.numeric[i].sum())} value(s))" for i in counters)
        out.notes.append(f"counter column(s) not kept as metrics (step, epoch, batch or row indices): {described}")
    if bad_steps:
        step_name = out.step_column
        kind = "not whole numbers" if fractional == bad_steps else "empty, not a whole number or too large"
        out.warnings.append(ReadWarning(
            file, f"{bad_steps} row(s) have a step ({step_name!r}) that is {kind}; skipped", count=bad_steps))
    _melt(table, value_indices, steps, usable, epochs, out.points)
    kept = steps[usable]
    out.increasing = len(kept) < 2 or bool((kept[1:] > kept[:-1]).all())
    return out


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    lowered = [h.lower() for h in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def _whole(values: np.ndarray, numeric: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return numeric & np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < STEP_LIMIT)


def _row_steps(table: WideColumns, step_index: int | None, epoch_index: int | None, out: WideCSV
               ) -> tuple[np.ndarray, np.ndarray, int, int, list[int]]:
    """The step of every row, which rows have one, how many do not (and of those, how many are
    fractions), and the columns used to make it."""
    n = table.rows
    if step_index is None and epoch_index is None:
        return np.arange(n, dtype=np.int64), np.ones(n, dtype=bool), 0, 0, []
    batch = _batch_column(table, step_index, epoch_index)
    if batch is not None:
        return _batch_steps(table, epoch_index, batch, out)
    if step_index is None:
        return np.arange(n, dtype=np.int64), np.ones(n, dtype=bool), 0, 0, []
    out.step_column = table.header[step_index]
    values, numeric = table.values[step_index], table.numeric[step_index]
    whole = _whole(values, numeric)
    exact = table.exact.get(step_index)
    if exact is not None:
        steps = exact
        whole = np.abs(exact) < STEP_LIMIT
    else:
        steps = np.where(whole, values, 0).astype(np.int64)
    bad = int((~whole).sum())
    with np.errstate(invalid="ignore"):
        fractional = int((numeric & np.isfinite(values) & (np.floor(values) != values)).sum())
    return steps, whole, bad, fractional, [step_index]


def _batch_column(table: WideColumns, step_index: int | None, epoch_index: int | None) -> int | None:
    """The column that counts batches within an epoch, if there is one (see :func:`_batch_steps`)."""
    if epoch_index is None:
        return None
    lowered = [column_key(h) for h in table.raw_header]
    last = [h.rsplit("/", 1)[-1] for h in lowered]
    candidates = [step_index] if step_index is not None and step_index != epoch_index else []
    candidates += [i for i, (a, b) in enumerate(zip(lowered, last, strict=True))
                   if (a in BATCH_NAMES or b in BATCH_NAMES) and i not in (epoch_index, step_index)]
    for index in candidates:
        if _resets_every_epoch(table, index, epoch_index):
            return index
    return None


def _resets_every_epoch(table: WideColumns, index: int, epoch_index: int) -> bool:
    """Whether a counter goes back whenever the epoch changes, and only then (it counts within an epoch)."""
    known = _whole(table.values[index], table.numeric[index]) & _whole(table.values[epoch_index],
                                                                       table.numeric[epoch_index])
    counter, epoch = table.values[index][known], table.values[epoch_index][known]
    if len(counter) < 2:
        return False
    new_epoch = np.diff(epoch) != 0
    back = np.diff(counter) < 0
    changes = int(new_epoch.sum())
    if not changes or counter.min() < 0:
        return False
    resets = int((back & new_epoch).sum())
    return resets * 2 >= changes and int((back & ~new_epoch).sum()) * 10 <= max(resets, 1)


def _batch_steps(table: WideColumns, epoch_index: int, batch: int, out: WideCSV
                 ) -> tuple[np.ndarray, np.ndarray, int, int, list[int]]:
    """step = epoch × batches per epoch + batch, with batches per epoch = the largest batch index + 1.

    A 1-based batch counter (its smallest value is 1) is made 0-based first; the
    epoch is used as written (1-based epochs then start at one epoch of steps). A
    row with an epoch but no batch index (an end-of-epoch validation row) is put
    at the last step of its epoch. When batches are logged every k-th batch, the
    step is still increasing and unique, but counts logged batches up to the
    largest seen, not every batch.
    """
    epoch_values, batch_values = table.values[epoch_index], table.values[batch]
    epoch_ok = _whole(epoch_values, table.numeric[epoch_index]) & (epoch_values >= 0)
    batch_ok = _whole(batch_values, table.numeric[batch])
    smallest = int(batch_values[batch_ok].min())
    base = 1 if smallest >= 1 else 0
    per_epoch = int(batch_values[batch_ok].max()) - base + 1
    epochs = np.where(epoch_ok, epoch_values, 0).astype(np.int64)
    within = np.where(batch_ok, batch_values - base, per_epoch - 1).astype(np.int64)
    steps = epochs * per_epoch + within
    name, epoch_name = table.header[batch], table.header[epoch_index]
    out.step_column = name
    out.batch_column = name
    end_of_epoch = int((epoch_ok & ~batch_ok).sum())
    out.notes.append(
        f"{name!r} counts batches within an epoch ({base}-based; {per_epoch} per epoch = the largest seen + 1): "
        f"step = {epoch_name} × {per_epoch} + {name}{' - 1' if base else ''}; the epoch column holds {epoch_name!r}"
        + (f"; {end_of_epoch} row(s) without a batch index placed at the last step of their epoch"
           if end_of_epoch else ""))
    no_epoch = int((~epoch_ok).sum())
    if no_epoch:
        out.warnings.append(ReadWarning(table.file, f"{no_epoch} row(s) have no usable epoch ({epoch_name!r}: "
                                        "empty, negative or not a whole number) to place them; skipped",
                                        count=no_epoch))
    return steps, epoch_ok, 0, 0, [batch]


def _counters(table: WideColumns, skip: set) -> list[int]:
    """Columns that are counters, not metrics: named like a step, epoch or batch index (or a
    pandas index column) and holding whole numbers only."""
    out = []
    for index, raw in enumerate(table.raw_header):
        if index in skip:
            continue
        lowered = column_key(raw)
        named = lowered in COUNTER_NAMES or lowered.rsplit("/", 1)[-1] in COUNTER_NAMES
        index_column = raw == "" and index == 0
        if not (named or index_column):
            continue
        numeric = table.numeric[index]
        if not numeric.any() or not _whole(table.values[index], numeric)[numeric].all():
            continue
        if index_column and not (np.diff(table.values[index][numeric]) > 0).all():
            continue
        out.append(index)
    return out


def _text_and_bad_cells(table: WideColumns, value_indices: list[int], out: WideCSV, file: str) -> None:
    numeric_counts = {i: int(table.numeric[i].sum()) for i in value_indices}
    text = [i for i in value_indices if numeric_counts[i] == 0 and table.non_numeric[i] > 0]
    out.text_columns = [table.header[i] for i in text]
    if text:
        out.notes.append(f"non-numeric column(s) skipped: {name_list(out.text_columns)}")
    for index in value_indices:
        if numeric_counts[index] and table.non_numeric[index]:
            count = table.non_numeric[index]
            out.warnings.append(ReadWarning(
                file, f"column {table.header[index]!r}: {count} cell(s) are not numbers "
                f"(e.g. {table.examples[index]!r}); skipped", count=count))


def _melt(table: WideColumns, value_indices: list[int], steps: np.ndarray, usable: np.ndarray, epochs: np.ndarray,
          points: PointBuffer) -> None:
    """The numeric cells of the value columns as points, row by row (the order they were written in)."""
    if not value_indices or not table.rows:
        return
    kept = [i for i in value_indices if table.numeric[i].any()]
    if not kept:
        return
    codes = np.asarray([points.code(table.header[i]) for i in kept], dtype=np.int64)
    matrix = np.column_stack([table.values[i] for i in kept])
    if usable.all() and all(table.numeric[i].all() for i in kept):  # dense: every cell is a point
        n, k = matrix.shape
        rows = np.repeat(np.arange(n, dtype=np.int64), k)
        points.add_coded(rows, np.tile(codes, n), np.repeat(steps, k), matrix.ravel(), np.repeat(epochs, k))
        return
    take = np.column_stack([table.numeric[i] for i in kept])
    take &= usable[:, None]
    rows, columns = np.nonzero(take)  # row-major: the write order
    points.add_coded(rows, codes[columns], steps[rows], matrix[take], epochs[rows])
