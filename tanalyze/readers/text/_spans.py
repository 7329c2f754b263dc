"""Spans of usual lines read at once: the fast path of the console parsers whose lines are few shapes.

A console log is mostly one line kind printed from one template every time (llm.c's
``step N/M | loss …``, modded-nanogpt's ``step:N/M train_time:…``): a
:class:`~tanalyze.readers.text._shaped.LineShape`. The lines of such a span are
found as runs by one regex, their fields cut out of the text with numpy and parsed
in bulk, bit for bit as ``float()`` (see :mod:`~tanalyze.readers.text._shaped`).

The span is read at once only when every line of it that starts with the kind's
prefix has that shape (so every field is a plain decimal number); otherwise the
caller reads the span line by line (the one path that knows every rule). Lines of
other kinds that carry points (evaluation lines) cut the chunk into spans
(:func:`spans`), so rows stay in line order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import ClassVar, cast

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._regex import ordered_matches
from tanalyze.readers.text._shaped import (
    LineShape,
    ValueRuns,
    line_starts,
    read_fields,
    shape_runs,
    value_runs,
)
from tanalyze.readers.values import NUMBER

__all__ = ["SpanParser", "field_grid", "spans", "read_spans"]

_NUMBER = re.compile(NUMBER)


def spans(body: str, breakers: re.Pattern[str], words: tuple[str, ...], start: int = 0, end: int | None = None
          ) -> list[tuple[int, int, bool]]:
    """``text[start:end]`` (``body`` is ``"\\n" + text``) cut at the lines ``breakers`` matches (from their line
    break on; each holds one of ``words``, which are found first, at C speed): (start, end, is a breaker
    line) in text positions, in order, covering it whole."""
    end = len(body) - 1 if end is None else end
    lines = set()
    for word in words:
        at = body.find(word, start, end + 1)
        while at >= 0:
            line = body.rfind("\n", 0, at + 1 if word.startswith("\n") else at)
            if line >= start and breakers.match(body, line, end + 1):
                lines.add(line)
            at = body.find(word, at + 1, end + 1)
    out: list[tuple[int, int, bool]] = []
    at = start
    for line in sorted(lines):
        stop = body.find("\n", line + 1)
        stop = end if stop < 0 or stop > end else stop  # in body: the line's end in text (its break included)
        if line > at:
            out.append((at, line, False))
        out.append((line, stop, True))
        at = stop
    if at < end:
        out.append((at, end, False))
    return out


class _Text:
    """A chunk's text as one byte per character (those beyond ASCII as ``?``: no line of a shape has one) and
    the runs of a number's characters in it, each made when first needed."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def chars(self) -> np.ndarray:
        return np.frombuffer(self.text.encode("ascii", errors="replace"), dtype=np.uint8)

    @functools.cached_property
    def values(self) -> ValueRuns:
        return value_runs(self.chars)


def read_spans(text: str, ranges: list[tuple[int, int]], prefix: str, shapes: tuple[LineShape, ...]
               ) -> list[tuple[np.ndarray, int] | None]:
    """The fields of the lines of each of ``ranges`` of ``text`` (whole lines) that begin with ``prefix`` as a
    (lines, fields) grid and the index of the shape they all have (an empty grid and -1 when there are none;
    None when a line has another shape). Each shape begins with ``prefix``. The usual case in one pass: when all
    their lines have one shape, one search for runs and one bulk parse for them all, split by range; else each
    half so (a log whose shape changes once, as llm.c's when its z-scores begin, costs a few passes more)."""
    counts = [text.count("\n" + prefix, max(start - 1, 0), end) + (start == 0 and text.startswith(prefix))
              for start, end in ranges]
    return _read_group(_Text(text), ranges, counts, shapes)


def _read_group(text: _Text, ranges: list[tuple[int, int]], counts: list[int], shapes: tuple[LineShape, ...]
                ) -> list[tuple[np.ndarray, int] | None]:
    if not ranges:
        return []
    if not sum(counts):
        return [(np.empty((0, 0)), -1)] * len(ranges)
    for index, shape in enumerate(shapes):
        grid = _grid(text, ranges, counts, shape)
        if grid is not None:
            bounds = np.cumsum([0, *counts]).tolist()
            return [(grid[a:b], index) if b > a else (np.empty((0, 0)), -1)
                    for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    if len(ranges) == 1:
        return [None]
    half = len(ranges) // 2
    return [*_read_group(text, ranges[:half], counts[:half], shapes),
            *_read_group(text, ranges[half:], counts[half:], shapes)]


def _grid(text: _Text, ranges: list[tuple[int, int]], counts: list[int], shape: LineShape) -> np.ndarray | None:
    """The fields of the lines of ``ranges`` when each range's lines that begin with the prefix (``counts``) are
    all of ``shape``; else None. A decimal field is first found as any run of a number's characters, then,
    when one such is no number, exactly (that line then has no shape)."""
    low, high = ranges[0][0], ranges[-1][1]
    for exact in (False, True):
        runs = shape_runs(text.text, (shape,), exact, low, high)
        if not runs:
            return None
        chars = text.chars
        starts = np.concatenate([line_starts(chars, a, b) for a, b in runs])
        per_range = np.diff(np.searchsorted(starts, [a for a, _ in ranges] + [high]))
        if not np.array_equal(per_range, counts):  # (a line of another shape; or in no range: a breaker's)
            return None
        grids = read_fields(chars, [(starts, shape)], text.values)
        if grids is not None:
            return grids[0]
    return None


def field_grid(found: list[str], separators: tuple[str, ...], width: int) -> np.ndarray | None:
    """The fields of ``found`` (one string per line) as a (lines, width) grid once each of ``separators`` (in
    order) is replaced by a space; None when a line then has another number of fields, or one is not a NUMBER
    (``float()`` takes ``1_0`` and ``INF``, which the line patterns refuse)."""
    joined = " ".join(found)
    for separator in separators:
        joined = joined.replace(separator, " ")
    if joined.count(" ") != width * len(found) - 1:
        return None
    if any(c in joined for c in "_nN") and not all(map(_NUMBER.fullmatch, joined.split(" "))):
        return None  # float() takes "1_0" and "INF", a NUMBER does not
    numbers = parse_numbers(joined)
    return None if numbers is None else numbers.reshape(len(found), width)


class SpanParser:
    """Mixin for a :class:`~tanalyze.readers.text._parser.TextParser` whose main lines are read span by span.

    The subclass sets ``span_prefix`` (how every main line starts: each line of a span that starts so must
    have one of ``span_shapes``), ``span_breakers`` (after a line break: the other lines that give rows or
    state, read line by line where they are) and implements :meth:`span_rows` and :meth:`span_done`. A chunk
    whose spans all read at once gets their rows in one go, the breaker lines' rows put back in line order;
    otherwise each span is read at once or line by line on its own.
    """

    span_prefix: ClassVar[str]
    span_shapes: ClassVar[tuple[LineShape, ...]]
    span_breakers: ClassVar[re.Pattern[str]]
    span_breaker_words: ClassVar[tuple[str, ...]]
    #: read every line on its own (spans of usual lines are read at once otherwise); for tests
    line_by_line = False

    def span_rows(self, grid: np.ndarray, shape: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray] | None:
        """The tags of each line, the steps (int64) and the values (line after line) of a span's lines read
        at once, or None to read them line by line. Changes nothing."""
        raise NotImplementedError

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        """What the span's lines change besides rows (the anchor, counts, hparams), once their rows are in."""
        raise NotImplementedError

    def feed(self, chunk: Chunk) -> None:
        parser = cast("TextParser", self)
        if self.line_by_line or self.span_prefix not in chunk.text:
            super().feed(chunk)  # type: ignore[misc]
            return
        body = "\n" + chunk.text
        cut = spans(body, self.span_breakers, self.span_breaker_words)
        reads = read_spans(chunk.text, [(a, b) for a, b, breaker in cut if not breaker], self.span_prefix,
                           self.span_shapes)
        taken = self._taken(reads, parser)
        by_line = []
        first = len(parser.rows)
        if taken is not None:
            self._extend(parser, [t for t in taken if t is not None])
        placed: list[np.ndarray] = []  # the segment of each row, in the order rows were added: spans', then breakers'
        later: list[np.ndarray] = []
        spans_read = iter(zip(reads, taken or [None] * len(reads), strict=True))
        for index, (start, end, breaker) in enumerate(cut):
            if not breaker:
                read, rows = next(spans_read)
                if taken is not None:
                    if rows is not None:
                        placed.append(np.full(len(rows[2]), index))
                        self._done(parser, read, rows)
                    continue
                if read is not None and self._span_at_once(parser, read):
                    continue
            before = len(parser.rows)
            for kind, m in _matches(chunk.text, parser.patterns, start, end, breaker):
                parser._handlers[kind](m, chunk)
            if taken is not None and len(parser.rows) > before:
                later.append(np.full(len(parser.rows) - before, index))
            by_line.append((start, end, parser.lookalike))
        parser.scan_ranges = by_line
        if later and placed:
            parser.rows.reorder(first, np.argsort(np.concatenate(placed + later), kind="stable"))

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        scan = cast("TextParser", self).scan_ranges
        return self.line_by_line or scan is None or bool(scan)

    def _taken(self, reads: list[tuple[np.ndarray, int] | None], parser: TextParser
               ) -> list[tuple[tuple[str, ...], np.ndarray, np.ndarray] | None] | None:
        """The rows of every span when all are read at once and their steps go on; else None."""
        taken = []
        for read in reads:
            if read is None:
                return None
            rows = self.span_rows(*read) if len(read[0]) else None
            if len(read[0]) and rows is None:
                return None
            taken.append(rows)
        steps = [rows[1] for rows in taken if rows is not None]
        if steps and not parser.anchors_go_on(np.concatenate(steps)):
            return None
        return taken

    @staticmethod
    def _extend(parser: TextParser, taken: list[tuple[tuple[str, ...], np.ndarray, np.ndarray]]) -> None:
        if taken and all(rows[0] == taken[0][0] for rows in taken):
            parser.rows.extend_lines(taken[0][0], np.concatenate([rows[1] for rows in taken]),
                                     np.concatenate([rows[2] for rows in taken]))
            return
        for tags, steps, values in taken:
            parser.rows.extend_lines(tags, steps, values)

    def _done(self, parser: TextParser, read: tuple[np.ndarray, int] | None,
              rows: tuple[tuple[str, ...], np.ndarray, np.ndarray]) -> None:
        assert read is not None
        self.span_done(read[0], read[1], rows[1])
        parser.anchor(int(rows[1][-1]), None, 0)
        parser.parsed_lines += len(rows[1])

    def _span_at_once(self, parser: TextParser, read: tuple[np.ndarray, int]) -> bool:
        if not len(read[0]):
            return True
        rows = self.span_rows(*read)
        if rows is None or not parser.anchors_go_on(rows[1]):
            return False
        parser.rows.extend_lines(*rows)
        self._done(parser, read, rows)
        return True


def _matches(text: str, patterns: tuple[tuple[re.Pattern[str], str], ...], start: int, end: int, line: bool
             ) -> Iterator[tuple[str, re.Match[str]]]:
    """``ordered_matches`` of ``text[start:end]``; for one ``line``, with patterns that all match from a line
    start, each pattern tried there only."""
    if not line or not _all_anchored(patterns):
        yield from ordered_matches(text, patterns, start, end)
        return
    for pattern, kind in patterns:
        m = pattern.match(text, start, end)
        if m is not None:
            yield kind, m


@functools.cache
def _all_anchored(patterns: tuple[tuple[re.Pattern[str], str], ...]) -> bool:
    """Whether every one of ``patterns`` matches from a line start only (``^`` with ``re.M``)."""
    return all(p.pattern.startswith("^") and bool(p.flags & re.M) for p, _ in patterns)
