"""Machinery shared by the console-log parsers.

A parser (one per format family) receives cleaned chunks of whole lines and
turns the lines it knows into points. This module gives every parser the
same tools, so each format module only says what its lines look like:

- :class:`Rows`: points in write order, stored compactly (arrays, tag codes);
- step anchors: each parser reports the step of its main line kind, and a step
  that goes back is a resumed job (:class:`~tanalyze.readers.base.Restart`);
- lines that look like metrics (a format's keyword) but that no rule read are
  counted, with up to three examples, instead of being lost silently;
- resuming: a parser's state as JSON (:meth:`TextParser.snapshot`) for the
  driver in :mod:`._textparts`, which reads a file chunk by chunk, in parts.
"""

from __future__ import annotations

import calendar
import datetime
import functools
import heapq
import math
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tanalyze.readers._batch import repeated
from tanalyze.readers._lines import Chunk, TextStats
from tanalyze.readers.base import ReadWarning, Restart
from tanalyze.schema import keep_last_write

__all__ = [
    "NUMBER",
    "to_float",
    "config_value",
    "Rows",
    "TextParser",
    "ParsedFile",
    "dedupe",
    "ordered_matches",
    "tagged_matches",
    "matches_by_line",
    "require",
    "required_literal",
    "parse_timestamp",
    "parse_timestamps",
    "short",
]

#: A number as trainers print it, including nan/inf spellings.
NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[nN]a[nN]|[iI]nf(?:inity)?)"

NAN = math.nan
MAX_EXAMPLES = 3


def to_float(text: str) -> float | None:
    """``float(text)`` or None; accepts nan/inf spellings and thousands separators."""
    try:
        return float(text)
    except ValueError:
        pass
    text = text.strip()
    if "," in text:
        try:
            return float(text.replace(",", ""))
        except ValueError:
            return None
    return None


def config_value(text: str) -> object:
    """A printed config value as int, float, bool, None or the text itself."""
    text = text.strip()
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    number = to_float(text)
    return number if number is not None and "," not in text else text


def short(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TIMESTAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d{1,6}))?")


_MINUTES: dict[str, float] = {}
_FRACTION = re.compile(r"\d{1,6}")


_LAST_SECOND = ["", 0.0]


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch of a ``YYYY-MM-DD HH:MM:SS[,mmm]`` stamp read as UTC (NaN if none)."""
    if len(text) >= 19 and text[13] == ":" and text[16] == ":" and text[4] in "-/" and text[7] in "-/":
        second = text[:19]
        if second == _LAST_SECOND[0]:  # consecutive lines share their second more often than not
            seconds = _LAST_SECOND[1]
        else:
            minute = _MINUTES.get(text[:16])
            try:
                if minute is None:
                    minute = _minute(text)
                seconds = minute + int(text[17:19])
            except (ValueError, OverflowError):
                return NAN
            _LAST_SECOND[0], _LAST_SECOND[1] = second, seconds
        if len(text) > 20 and text[19] in ",.":
            if len(text) == 23 and text[20:23].isdigit():  # the common ',mmm'
                return seconds + int(text[20:23]) / 1000
            fraction = _FRACTION.match(text, 20)
            if fraction:
                digits = fraction.group(0)
                seconds += int(digits) / 10 ** len(digits)
        return seconds
    m = _TIMESTAMP.match(text)
    return parse_timestamp(m.group(0).replace("T", " ")) if m and "T" in m.group(0) else NAN


# 'YYYY-MM-DD HH:MM:SS,mmm': where the digits are, and which characters the separators may be
_STAMP_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22])
_STAMP_SEPARATORS = ((4, b"-/"), (7, b"-/"), (13, b":"), (16, b":"), (19, b",."))
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def parse_timestamps(texts: Sequence[str]) -> list[float]:
    """:func:`parse_timestamp` of every text, the same floats; stamps of the usual
    ``YYYY-MM-DD HH:MM:SS,mmm`` shape are computed together with numpy."""
    if len(texts) < 64:  # numpy's fixed costs outweigh what it saves
        return list(map(parse_timestamp, texts))
    joined = "".join(texts)
    if len(joined) != 23 * len(texts) or not joined.isascii():
        return list(map(parse_timestamp, texts))
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).reshape(len(texts), 23)
    digits = chars[:, _STAMP_DIGITS].astype(np.int64) - ord("0")
    if ((digits < 0) | (digits > 9)).any() or not all(
        np.isin(chars[:, column], np.frombuffer(allowed, dtype=np.uint8)).all() for column, allowed in _STAMP_SEPARATORS
    ):
        return list(map(parse_timestamp, texts))
    year = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    month, day, hour, minute, second = (digits[:, i] * 10 + digits[:, i + 1] for i in range(4, 14, 2))
    months, which = np.unique(year * 100 + month, return_inverse=True)
    try:  # calendar.timegm's days: the first of the month (year 1-9999, month 1-12), then days past it
        firsts = np.array([datetime.date(int(m) // 100, int(m) % 100, 1).toordinal() - _EPOCH_ORDINAL for m in months])
    except ValueError:
        return list(map(parse_timestamp, texts))
    days = firsts[which.ravel()] + day - 1
    seconds = (((days * 24 + hour) * 60 + minute) * 60 + second).astype(np.float64)
    millis = (digits[:, 14] * 100 + digits[:, 15] * 10 + digits[:, 16]).astype(np.float64)
    return (seconds + millis / 1000).tolist()


def _minute(text: str) -> float:
    if len(_MINUTES) > 100_000:
        _MINUTES.clear()
    fields = (int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]), 0, 0, 0, 0)
    minute = _MINUTES[text[:16]] = float(calendar.timegm(fields))
    return minute


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _:,/=@%!'\"<>#&;-")
_QUANTIFIERS = frozenset("?*+{")


#: Patterns that cannot match where a cheaper pattern (or test) finds nothing (see :func:`require`).
_NECESSARY: dict[re.Pattern[str], re.Pattern[str] | Callable[[str], bool]] = {}


def require(pattern: re.Pattern[str], necessary: re.Pattern[str] | Callable[[str], bool]) -> re.Pattern[str]:
    """Declare that every match of ``pattern`` contains a match of ``necessary`` (a pattern that starts with
    a literal, which the engine finds quickly; or a test of the text): chunks where ``necessary`` finds nothing
    skip ``pattern``."""
    _NECESSARY[pattern] = necessary
    return pattern


def _may_match(pattern: re.Pattern[str], text: str) -> bool:
    literal = required_literal(pattern)
    if literal is not None and literal not in text:
        return False
    necessary = _NECESSARY.get(pattern)
    if necessary is None:
        return True
    return necessary(text) if callable(necessary) else necessary.search(text) is not None


def _top_level_alternation(source: str) -> bool:
    """Whether ``source`` has a ``|`` outside every group and class (then no literal is certain)."""
    depth, in_class, i = 0, False, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if source[i + 1 : i + 2] == "]" or source[i + 1 : i + 3] == "^]":  # a ']' first in a class is literal
                i += 2 if source[i + 1] == "]" else 3
                continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += 1
    return False


@functools.cache
def required_literal(pattern: re.Pattern[str]) -> str | None:
    """Text every match of ``pattern`` contains, read from its start: the literal after a leading ``^``.

    Python's regex engine tries a ``^`` (multiline) pattern at every position of the text, several times
    slower than finding a literal; when the literal is absent from a chunk, the pattern cannot match
    there and is not run. Only plain characters and escaped punctuation are taken, up to the first
    character that a quantifier, a class or a group could change; None when fewer than 3 are certain.
    """
    source = pattern.pattern
    if pattern.flags & (re.IGNORECASE | re.VERBOSE) or not source.startswith("^") or _top_level_alternation(source):
        return None
    out: list[str] = []
    i = 1
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source) and not source[i + 1].isalnum():
            literal, width = source[i + 1], 2
        elif char in _PLAIN:
            literal, width = char, 1
        else:
            break
        if i + width < len(source) and source[i + width] in _QUANTIFIERS:
            break  # optional or repeated: not certain (what came before still is)
        out.append(literal)
        i += width
    return "".join(out) if len(out) >= 3 else None


def ordered_matches(text: str, patterns: Iterable[tuple[re.Pattern[str], str]], start: int = 0,
                    end: int | None = None) -> Iterator[tuple[str, re.Match[str]]]:
    """Matches of several patterns over one text (or ``text[start:end]``), in order of position, each with its kind.

    Every pattern scans the whole text in C (:func:`matches_of`); merging keeps the
    order the lines were written in, which stateful formats need. A pattern that
    cannot match the text (its :func:`required_literal` is absent, or what it
    :func:`require` s is not found) is not run.
    """
    for _, _, kind, match in tagged_matches(text, patterns, start, end):
        yield kind, match


def tagged_matches(text: str, patterns: Iterable[tuple[re.Pattern[str], str]], start: int = 0,
                   end: int | None = None) -> Iterator[tuple[int, int, str, re.Match[str]]]:
    """:func:`ordered_matches` as (position, index of the pattern, kind, match)."""
    end = len(text) if end is None else end
    span = text if (start, end) == (0, len(text)) else text[start:end]
    lines = _LineStarts(text)
    iterators = [_tagged(matches_of(pattern, text, start, end, lines), index, kind)
                 for index, (pattern, kind) in enumerate(patterns) if _may_match(pattern, span)]
    if len(iterators) == 1:
        yield from iterators[0]
        return
    yield from heapq.merge(*iterators)


class _LineStarts:
    """The text after a line break (made once, when a pattern needs it): see :func:`matches_of`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._body: str | None = None

    @property
    def body(self) -> str:
        if self._body is None:
            self._body = "\n" + self.text
        return self._body


_SHORT = 1 << 14  # characters: a text this short is scanned as it is (no copy of it after a line break)


@functools.cache
def _after_break(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """A multiline pattern that begins with ``^``, begun with a line break instead; None for any other."""
    source = pattern.pattern
    if not pattern.flags & re.M or not source.startswith("^") or _top_level_alternation(source):
        return None
    return re.compile("\n" + source[1:], pattern.flags)


def matches_of(pattern: re.Pattern[str], text: str, start: int = 0, end: int | None = None,
               lines: _LineStarts | None = None) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text, start, end)``, quicker for a pattern anchored at line starts (``^`` with
    ``re.M``): the engine tries such a pattern at every character, but the same pattern after a line break
    starts with a literal, which it finds at C speed; each line found is then matched as the pattern itself
    would (same Match objects, and, as ``finditer``, none overlapping the one before)."""
    end = len(text) if end is None else end
    form = _after_break(pattern) if end - start > _SHORT else None
    if form is None:
        yield from pattern.finditer(text, start, end)
        return
    body = (lines or _LineStarts(text)).body
    last = start
    for candidate in form.finditer(body, start, end + 1):
        at = candidate.start()  # the line break before the line, in body: the line's start in text
        if at < last:
            continue
        found = pattern.match(text, at, end)
        if found is not None:
            last = found.end() if found.end() > at else at + 1
            yield found


def matches_by_line(text: str, matches: Iterator[tuple[int, int, str, re.Match[str]]]
             ) -> Iterator[tuple[int, list[tuple[int, int, str, re.Match[str]]]]]:
    """``matches`` (in order) grouped by the line that holds them: (start of the line, its matches)."""
    line, group = -1, []
    for found in matches:
        at = text.rfind("\n", 0, found[0]) + 1
        if at != line and group:
            yield line, group
            group = []
        line = at
        group.append(found)
    if group:
        yield line, group


def _tagged(matches: Iterator[re.Match[str]], index: int, kind: str) -> Iterator[tuple[int, int, str, re.Match[str]]]:
    for m in matches:
        yield m.start(), index, kind, m


def _append(column: array, items: Iterable) -> None:
    """Append ``items`` to ``column``: a list in one pass, a numpy array as its bytes (``extend`` grows the
    array item by item)."""
    if type(items) is list:
        column.fromlist(items)
    elif isinstance(items, np.ndarray):
        column.frombytes(np.ascontiguousarray(items, dtype=_TYPES[column.typecode]).tobytes())
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
    out.frombytes(np.ascontiguousarray(column, dtype=_TYPES[typecode]).tobytes())
    return out


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


@dataclass
class ParsedFile:
    """One file as a parser read it."""

    path: Path
    family: str
    rows: Rows
    notes: list[str] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)


class TextParser:
    """Base of the per-format parsers: feed chunks, then ``finish``.

    Subclasses set ``family`` and ``lookalike`` (a pattern whose matches are
    lines that look like this format's metric lines) and implement ``feed``.
    In ``feed`` they call :meth:`mark` for every line they read and
    :meth:`anchor` with the step of their main line kind.
    """

    family: ClassVar[str] = "text"
    lookalike: ClassVar[re.Pattern[str] | None] = None
    #: (pattern, kind) pairs; the default ``feed`` calls ``self._on_<kind>(match, chunk)`` in line order.
    patterns: ClassVar[tuple[tuple[re.Pattern[str], str], ...]] = ()
    #: Attributes a subclass sets while reading (counts, the last step seen …) that ``finish`` uses, with how
    #: :meth:`absorb` takes the next file's value: ``"sum"`` (counts), ``"union"`` (sets), ``"last"`` (the
    #: later file's unless None). Kept by :meth:`snapshot` and :meth:`restore`, so that a log read in parts
    #: finishes as one read whole. JSON values (numbers, strings, None, lists, dicts with string keys) or sets.
    state_fields: ClassVar[Mapping[str, str]] = {}

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path.name
        self.rows = Rows()
        self.notes: list[str] = []
        self.warnings: list[ReadWarning] = []
        self.hparams: dict[str, Any] = {}
        self.restarts: list[Restart] = []
        self.parsed_lines = 0
        self._marked: set[int] = set()
        self._last_anchor: dict[int, int] = {}
        self._last_step: int | None = None
        self._handlers = {kind: getattr(self, "_on_" + kind) for _, kind in self.patterns}
        self._reset_file_counts()

    def start_file(self, path: Path) -> None:
        """Continue with another file of the same run (stdout and stderr of one job)."""
        self.path = path
        self.file = path.name
        self.parsed_lines = 0
        self._reset_file_counts()

    def unparsed(self, chunk: Chunk, pos: int) -> None:
        """Record a line of this format that could not be read (for parsers that check their own lines)."""
        start = chunk.text.rfind("\n", 0, pos) + 1
        if chunk.incomplete:
            self._cut_candidates.append((chunk.first_line, chunk.line_at(start)))
            return
        self._unparsed += 1
        if len(self._unparsed_examples) < MAX_EXAMPLES:
            self._unparsed_examples.append((chunk.line_of(start), chunk.line_at(start)))

    def _reset_file_counts(self) -> None:
        self._parsed_before = 0
        self._cut_candidates: list[tuple[int, str]] = []
        self._unparsed = 0
        self._unparsed_examples: list[tuple[int, str]] = []
        self._cut_last_line: tuple[int, str] | None = None
        self._last_line_read = False

    # -- to implement -------------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        handlers = self._handlers
        for kind, match in ordered_matches(chunk.text, self.patterns):
            handlers[kind](match, chunk)

    def finish(self) -> None:
        """Called once after the last chunk (formats that derive steps do it here)."""

    # -- helpers for subclasses ----------------------------------------------------------------
    def mark(self, chunk: Chunk, pos: int) -> None:
        """Record that the line holding ``pos`` was read as metrics."""
        self._marked.add(chunk.text.rfind("\n", 0, pos) + 1)

    def anchor(self, step: int, chunk: Chunk | None, pos: int, rank: int = -1, line: int | None = None) -> None:
        """Report the step of a main metric line; a step lower than the previous one is a restart."""
        previous = self._last_anchor.get(rank)
        self._last_anchor[rank] = step
        self._last_step = step
        if previous is not None and step < previous:
            where = line if line is not None else (chunk.line_of(pos) if chunk is not None else None)
            at = f" (line {where})" if where is not None else ""
            who = f" on rank {rank}" if rank >= 0 else ""
            self.restarts.append(
                Restart(
                    step=step,
                    file=self.file,
                    detail=f"step {step} logged again after step {previous}{who}{at}; the later values are kept",
                    until=previous,
                )
            )

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        """False when a cheap count proves every look-alike line of the chunk was read (skips the scan)."""
        return True

    def current_step(self, default: int = 0) -> int:
        """The step of the last main metric line, whatever its rank (for lines that carry none)."""
        return default if self._last_step is None else self._last_step

    def count_note(self, count: int, text: str) -> None:
        if count:
            self.notes.append(f"{count:,} {text}")

    # -- driver side ---------------------------------------------------------------------------
    def end_chunk(self, chunk: Chunk) -> None:
        marked = self._marked
        self.parsed_lines += len(marked)
        if chunk.incomplete:
            if self.parsed_lines > self._parsed_before:
                self._last_line_read = True
            if self._cut_candidates:
                self._cut_last_line = self._cut_candidates[-1]
        self._cut_candidates = []
        if self.lookalike is not None and self.may_have_lookalikes(chunk):
            seen: set[int] = set()
            ranges = self.scan_ranges if self.scan_ranges is not None else [(0, len(chunk.text), self.lookalike)]
            found = (m for low, high, lookalikes in ranges
                     for lookalike in (lookalikes if isinstance(lookalikes, tuple) else (lookalikes,))
                     for m in matches_of(lookalike, chunk.text, low, high))
            for m in found:
                start = chunk.text.rfind("\n", 0, m.start()) + 1
                if start in marked or start in seen:
                    continue
                seen.add(start)
                if chunk.incomplete:
                    self._cut_last_line = (chunk.first_line, chunk.line_at(start))
                    continue
                self._unparsed += 1
                if len(self._unparsed_examples) < MAX_EXAMPLES:
                    self._unparsed_examples.append((chunk.line_of(start), chunk.line_at(start)))
        if marked:
            self._marked = set()
        self.scan_ranges = None
        self._parsed_before = self.parsed_lines

    #: Where in the chunk look-alike lines may be left unread, and the look-alike pattern(s) to find them there
    #: (set in ``feed`` by parsers that read some spans of lines at once, whose lines are not marked one by
    #: one); None: the whole chunk, with ``lookalike``.
    scan_ranges: list[tuple[int, int, re.Pattern[str] | tuple[re.Pattern[str], ...]]] | None = None

    # -- resuming (see _textparts) --------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What the parser knows at a line boundary, as JSON values in new containers: enough to read on
        from there (:meth:`restore`) and to finish. Subclasses add their own fields to it.

        Rows, restarts and hparams are not in it: the driver takes them from their lists (they only grow).
        """
        return {
            "anchors": [[rank, step] for rank, step in sorted(self._last_anchor.items())],
            "last_step": self._last_step,
            "parsed_lines": self.parsed_lines,
            "unparsed": self._unparsed,
            "examples": [[line, text] for line, text in self._unparsed_examples],
            "cut_last_line": list(self._cut_last_line) if self._cut_last_line is not None else None,
            "last_line_read": self._last_line_read,
            "out_of_range": self.rows.out_of_range,
            "fields": {name: _json_state(getattr(self, name)) for name in self.state_fields},
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take up the state :meth:`snapshot` gave (on a new parser of the same file)."""
        self._last_anchor = {int(rank): int(step) for rank, step in state["anchors"]}
        self._last_step = state["last_step"]
        self.parsed_lines = self._parsed_before = state["parsed_lines"]
        self._unparsed = state["unparsed"]
        self._unparsed_examples = [(line, text) for line, text in state["examples"]]
        cut = state["cut_last_line"]
        self._cut_last_line = (cut[0], cut[1]) if cut is not None else None
        self._last_line_read = state["last_line_read"]
        self.rows.out_of_range = state["out_of_range"]
        for name, value in state["fields"].items():
            setattr(self, name, set(value) if isinstance(getattr(self, name), set) else value)

    def finish_changes_rows(self) -> bool:
        """Whether :meth:`finish`, in the current state, would add rows or change rows read (then a log that
        grew cannot simply have its new rows appended to what was read before). False by default."""
        return False

    def aux_columns(self) -> dict[str, array]:
        """The parser's own columns that grow with the file (one value per logging event …), by name: kept
        with the rows of each part (:mod:`._textparts`). None by default."""
        return {}

    def load_aux(self, columns: dict[str, np.ndarray]) -> None:
        """Take up the columns :meth:`aux_columns` gave, for a whole file."""

    def absorb(self, other: TextParser) -> None:
        """Take in ``other``, the parser of the next file of the same job (stdout after stderr), read and
        closed on its own: its rows after these, its counts added, so that one ``finish`` covers both."""
        self.rows.append_rows(other.rows)
        self.rows.out_of_range += other.rows.out_of_range
        self.restarts.extend(other.restarts)
        self.warnings.extend(other.warnings)
        self.notes.extend(other.notes)
        for key, value in other.hparams.items():
            self.hparams.setdefault(key, value)
        for name, how in self.state_fields.items():
            mine, theirs = getattr(self, name), getattr(other, name)
            if how == "sum":
                setattr(self, name, mine + theirs)
            elif how == "union":
                setattr(self, name, mine | theirs)
            elif theirs is not None:
                setattr(self, name, theirs)

    def close_file(self, stats: TextStats) -> None:
        if self._unparsed:
            examples = "; ".join(f"line {n}: {short(text)!r}" for n, text in self._unparsed_examples)
            self.warnings.append(
                ReadWarning(
                    self.file,
                    f"{self._unparsed:,} line(s) look like {self.family} metrics but could not be read, e.g. {examples}",
                    location=f"line {self._unparsed_examples[0][0]}",
                    count=self._unparsed,
                )
            )
        if self._cut_last_line is not None:
            line_no, text = self._cut_last_line
            self.warnings.append(
                ReadWarning(
                    self.file,
                    f"the last line ends without a line break and could not be read (the job was probably "
                    f"stopped while writing it): {short(text)!r}",
                    location=f"line {line_no}",
                )
            )
        elif self._last_line_read and stats.incomplete_last_line is not None:
            self.notes.append("the last line has no line break; it was complete and was read")


def _json_state(value: Any) -> Any:
    """A state field as a JSON value in a new container (a set as a sorted list)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (list, tuple)):
        return [_json_state(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_state(item) for key, item in value.items()}
    return value


def _repeats_in_order(group: np.ndarray, steps: np.ndarray, longest: int = 64) -> bool:
    """False when no (group, step) can repeat, proven in a few passes: the usual log writes steps in order,
    each step's rows next to each other; then a repeat would be two rows of one step and one group at most
    ``longest`` rows apart. True: maybe (the caller looks for repeats the long way)."""
    if len(steps) < 2 or (steps[1:] < steps[:-1]).any():
        return True
    changes = np.flatnonzero(steps[1:] != steps[:-1])
    bounds = np.concatenate(([0], changes + 1, [len(steps)]))
    run = int(np.diff(bounds).max())
    if run > longest:
        return True
    return any((group[distance:] == group[:-distance])[steps[distance:] == steps[:-distance]].any()
               for distance in range(1, run))


def duplicated_rows(codes: np.ndarray, steps: np.ndarray, ranks: np.ndarray | None = None) -> np.ndarray | None:
    """Which rows a later row with the same (tag code, step[, rank]) replaces (last write wins); None when
    none is. The key columns are packed into one integer when their ranges allow: the same answer as
    ``keep_last_write`` at a fraction of its time and memory on millions of rows."""
    if not len(codes):
        return None
    codes = codes.astype(np.int64, copy=False)
    steps = steps.astype(np.int64, copy=False)
    low, span = int(steps.min()), int(steps.max()) - int(steps.min()) + 1
    shifted = ranks.astype(np.int64) + 1 if ranks is not None else np.zeros(len(codes), np.int64)
    rank_span = int(shifted.max()) + 1
    if (int(codes.max()) + 1) * span * rank_span >= 2**62:
        duplicated = pd.DataFrame({"c": codes, "s": steps, "r": shifted}).duplicated(keep="last").to_numpy()
        return duplicated if duplicated.any() else None
    group = codes * rank_span + shifted
    if not _repeats_in_order(group, steps):
        return None
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
