"""Lines of a known template read at once: the fast path of the console parsers whose lines are few shapes.

A console log is mostly one line kind printed from one template every time (llm.c's
``step N/M | loss …``, the MNIST example's ``Train Epoch: e [seen/size (p%)]\tLoss: …``):
a :class:`~tanalyze.readers.text._shaped.LineShape`. The lines of a chunk that
have such a shape are found as runs by one regex, their fields cut out of the text
with numpy and parsed in bulk, bit for bit as ``float()`` (see
:mod:`~tanalyze.readers.text._shaped`). A parser may name a second kind, its
summaries (an evaluation printed after each epoch from its own template), read
at once the same way, their steps from the main lines before them.

Every other line that is not blank (a line of another kind, a main line of
another shape, a value that is no number) is read as line-by-line reading reads
it, in its place: before it, the parser's state is brought up to the lines read
at once above it. So a chunk gives exactly the rows, notes and restarts of
reading every line on its own.
"""

from __future__ import annotations

import functools
import re
from typing import ClassVar, NamedTuple, cast

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._regex import ordered_matches
from tanalyze.readers.text._shaped import (
    LineShape,
    beginning_with,
    line_starts,
    read_fields,
    shape_runs,
    value_runs,
)
from tanalyze.readers.values import NUMBER_PATTERN

__all__ = ["SpanParser", "SpanRows", "field_grid", "shaped_lines"]

_NO_LINES = np.empty(0, dtype=np.int64)

SpanRows = tuple[tuple[str, ...], np.ndarray, np.ndarray]


def shaped_lines(text: str, starts: np.ndarray, shapes: tuple[LineShape, ...], exact: bool,
                 candidates: np.ndarray | None = None) -> list[np.ndarray]:
    """The lines of ``text`` (indices into ``starts``, its line starts) of each of ``shapes``: whole lines, with
    their line break. Not ``exact``, a decimal field is any run of a number's characters. With ``candidates``
    (which lines may have a shape), a shape after the first is looked for only among the candidates no shape
    before took, each tried on its own when they are few."""
    out = []
    left = None if candidates is None else candidates.copy()
    for index, shape in enumerate(shapes):
        first = shape.pieces[0]
        if left is not None and index and len(left) and np.count_nonzero(left) <= _FEW:
            line = _line_pattern(shape, exact)
            at = np.flatnonzero(left)
            lines = at[[line.match(text, start) is not None for start in starts[at].tolist()]]
        elif (left is not None and not left.any()) or not (text.startswith(first) or "\n" + first in text):
            lines = _NO_LINES
        else:
            runs = np.array(shape_runs(text, (shape,), exact), dtype=np.int64).reshape(-1, 2)
            bounds = np.searchsorted(starts, runs)  # the first line of each run and the line after its last
            edge = np.zeros(len(starts) + 1, dtype=np.int8)
            edge[bounds[:, 0]] = 1
            edge[bounds[:, 1]] = -1  # (a line of another shape always comes between two runs)
            lines = np.flatnonzero(np.cumsum(edge[:-1], dtype=np.int8) > 0)
        if left is not None:
            left[lines] = False
        out.append(lines)
    return out


#: candidates few enough to try one by one
_FEW = 64


@functools.lru_cache(maxsize=32)
def _line_pattern(shape: LineShape, exact: bool) -> re.Pattern[str]:
    return re.compile(shape.source(exact) + "\n")


def field_grid(found: list[str], separators: tuple[str, ...], width: int) -> np.ndarray | None:
    """The fields of ``found`` (one string per line) as a (lines, width) grid once each of ``separators`` (in
    order) is replaced by a space; None when a line then has another number of fields, or one is not a NUMBER
    (``float()`` takes ``1_0`` and ``INF``, which the line patterns refuse)."""
    joined = " ".join(found)
    for separator in separators:
        joined = joined.replace(separator, " ")
    if joined.count(" ") != width * len(found) - 1:
        return None
    if any(c in joined for c in "_nN") and not all(map(NUMBER_PATTERN.fullmatch, joined.split(" "))):
        return None  # float() takes "1_0" and "INF", a NUMBER does not
    numbers = parse_numbers(joined)
    return None if numbers is None else numbers.reshape(len(found), width)


class SpanParser:
    """Mixin for a :class:`~tanalyze.readers.text._parser.TextParser` whose main lines are read at once.

    The subclass sets ``span_prefix`` (how every main line starts) and ``span_shapes``, and implements
    :meth:`span_rows` and :meth:`span_done`; with ``summary_shapes``, :meth:`summary_rows` and
    :meth:`summary_done` too. A chunk is read line by line instead when no main line has a shape, its main
    lines' steps go back (the restart is recorded at its line) or a line has two shapes.
    """

    span_prefix: ClassVar[str]
    span_shapes: ClassVar[tuple[LineShape, ...]]
    #: the templates of lines printed after main lines (an epoch's evaluation), read at once too
    summary_shapes: ClassVar[tuple[LineShape, ...]] = ()
    #: whole lines, after their line break, that reading line by line never reads and the look-alike scan never
    #: names (a rule of dashes between epochs): passed over as blank lines are
    inert_lines: ClassVar[re.Pattern[str] | None] = None
    #: read every line on its own; for tests
    line_by_line = False

    def span_rows(self, grid: np.ndarray, shape: int) -> SpanRows | None:
        """The tags of each line, the steps (int64) and the values (line after line) of main lines read at once
        (``grid``: their fields, all of ``span_shapes[shape]``), or None to read them line by line. Changes
        nothing."""
        raise NotImplementedError

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        """What main lines read at once change besides rows and anchors (counts, hparams, the last epoch), once
        their rows are in: called for the lines above each line read on its own, in order, and the rest."""
        raise NotImplementedError

    def summary_rows(self, grid: np.ndarray, shape: int, main: np.ndarray, before: np.ndarray
                     ) -> tuple[SpanRows, np.ndarray] | None:
        """The rows of summary lines (``grid``: their fields, all of ``summary_shapes[shape]``) and which of the
        lines give them (indices into ``grid``), from the chunk's main lines (``main``: their grid, all of one
        shape; the last main line above each summary is ``main[before - 1]``, and only lines read at once come
        between); None to read them line by line. Changes nothing."""
        return None

    def summary_done(self, grid: np.ndarray, shape: int) -> None:
        """What summary lines read at once change besides rows (counts), as :meth:`span_done`."""

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line or self.span_prefix not in chunk.text:
            super().feed(chunk)  # type: ignore[misc]
            return
        shaped = self._shaped(chunk)
        if shaped is None:
            super().feed(chunk)  # type: ignore[misc]
            return
        parser = cast("TextParser", self)
        text = chunk.text
        starts, chars, lines, grids = shaped
        first_main = int(min(kind[0] for kind in lines[: len(self.span_shapes)] if len(kind)))
        reading = _Reading(parser, chunk)
        # the lines above the first main line read on their own first: the state the rows read at once start from
        reading.by_line(0, int(starts[first_main]), chars)
        main = _Main.of(self, lines[: len(self.span_shapes)], grids)
        summaries = None
        empty = self._empty_lines(text, chars, starts)
        if main is not None and parser.anchors_go_on(main.steps_in_order):
            summaries = self._summaries_read_at_once(lines, grids, main, empty)
        if summaries is None:  # (as the line-by-line reading goes on)
            reading.by_line(int(starts[first_main]), len(text), chars)
            parser.scan_ranges = None
            return
        self._take_chunk(reading, starts, chars, main, summaries, first_main, empty)

    def _shaped(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], dict[int, np.ndarray]] | None:
        """The chunk's line starts and characters, the lines of each main and summary shape and their fields
        (by shape index); None when no main line has a shape."""
        text = chunk.text
        chars = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)  # (a "?" per other character)
        starts = line_starts(chars, 0, len(chars))
        candidates = beginning_with(chars, starts, self.span_prefix.encode("ascii"))  # every line a main shape may have
        shapes = self.span_shapes + self.summary_shapes
        runs = None
        for exact in (False, True):  # (found again exactly when a field of a number's characters is no number)
            lines = (shaped_lines(text, starts, self.span_shapes, exact, candidates)
                     + shaped_lines(text, starts, self.summary_shapes, exact))
            found = [index for index, kind in enumerate(lines) if len(kind)]
            if not any(index < len(self.span_shapes) for index in found):
                return None
            runs = value_runs(chars) if runs is None else runs
            grids = read_fields(chars, [(starts[lines[index]], shapes[index]) for index in found], runs)
            if grids is not None:
                return starts, chars, lines, dict(zip(found, grids, strict=True))
        return None

    def _empty_lines(self, text: str, chars: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Which of the chunk's lines (at ``starts``) are blank or inert (see ``inert_lines``)."""
        empty = chars[starts] == 10
        if self.inert_lines is not None:
            found = [m.start() + 1 for m in self.inert_lines.finditer(text)]
            if self.inert_lines.match("\n" + text[:starts[1] if len(starts) > 1 else len(text)]):
                found.insert(0, 0)
            empty[np.searchsorted(starts, np.array(found, dtype=np.int64))] = True
        return empty

    def _summaries_read_at_once(self, lines: list[np.ndarray], grids: dict[int, np.ndarray], main: _Main,
                                empty: np.ndarray) -> list[_Summary] | None:
        """The summaries read at once: those with a main line above them in the chunk and only lines read at
        once (or blank or inert lines: ``empty``) between; None when a line has two shapes."""
        count = len(self.span_shapes)
        taken = np.zeros(len(empty), dtype=bool)
        for kind in lines:
            taken[kind] = True
        if int(taken.sum()) != sum(map(len, lines)):
            return None  # (two shapes of one line)
        if len(main.kinds) != 1:
            return []  # (the summaries read in their place)
        (kind,) = main.kinds
        above_lines = main.lines[kind]
        nonblank = ~empty
        clear = {index: np.ones(len(lines[count + index]), dtype=bool) for index in range(len(self.summary_shapes))}
        while True:  # (a summary read in its place is a line read on its own for the summaries below it)
            blockers = np.flatnonzero(~taken & nonblank)
            out: list[_Summary] = []
            changed = False
            for index, now in clear.items():
                at = lines[count + index]
                if not now.any():
                    continue
                before = np.searchsorted(above_lines, at)
                above = above_lines[np.maximum(before - 1, 0)]
                keep = now & (before > 0) & (np.searchsorted(blockers, above) == np.searchsorted(blockers, at))
                got = self.summary_rows(grids[count + index][keep], index, main.grids[kind], before[keep]
                                        ) if keep.any() else None
                if got is None:
                    keep[:] = False
                else:
                    out.append(_Summary(index, at[keep], grids[count + index][keep], *got))
                if not np.array_equal(keep, now):
                    taken[at[now & ~keep]] = False
                    clear[index], changed = keep, True
            if not changed:
                return out

    def _take_chunk(self, reading: _Reading, starts: np.ndarray, chars: np.ndarray, main: _Main,
                    summaries: list[_Summary], first_main: int, empty: np.ndarray) -> None:
        """The rows read at once added, and the lines below the first main line not read at once read on their
        own in their place, the state brought up to each."""
        rows = reading.parser.rows
        for kind in main.kinds:
            tags, steps, values = main.rows[kind]
            rows.extend_lines(tags, steps, values)
            reading.positions.append(np.repeat(starts[main.lines[kind]], len(tags)))
        for summary in summaries:
            (tags, steps, values), which = summary.rows, summary.which
            rows.extend_lines(tags, steps, values)
            reading.positions.append(np.repeat(starts[summary.lines[which]], len(tags)))
        read = np.zeros(len(starts) + 1, dtype=bool)
        read[: first_main] = True  # (read above)
        read[-1] = True
        for kind in main.kinds:
            read[main.lines[kind]] = True
        for summary in summaries:
            read[summary.lines] = True
        edges = np.flatnonzero(np.diff(np.concatenate(([True], read))))  # the first line of each gap, its end, …
        unread = np.concatenate(([0], np.cumsum(~read[:-1] & ~empty)))  # (lines not blank)
        walk = _Walk(self, reading.parser, reading.chunk, starts, main, summaries)
        for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True):
            if unread[b] == unread[a]:
                continue  # blank lines only
            walk.until(a)
            reading.by_line(int(starts[a]), int(starts[b]) if b < len(starts) else len(reading.chunk.text), chars)
        walk.until(len(starts))
        reading.done()

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        scan = cast("TextParser", self).scan_ranges
        return self.line_by_line or scan is None or bool(scan)


class _Reading:
    """The rows of a chunk as they are added (those read on their own, at the start of their lines, and those read
    at once, at their lines' starts) and the ranges read on their own (scanned for look-alike lines)."""

    def __init__(self, parser: TextParser, chunk: Chunk) -> None:
        self.parser, self.chunk = parser, chunk
        self.first = len(parser.rows)
        self.positions: list[np.ndarray] = []
        self.ranges: list[tuple[int, int, re.Pattern[str] | None]] = []

    def by_line(self, low: int, high: int, chars: np.ndarray) -> None:
        """The lines of ``text[low:high]`` read on their own, as :meth:`TextParser.feed` reads every line (blank
        lines: nothing to read)."""
        if high <= low or not (chars[low:high] != 10).any():
            return
        parser, rows, text = self.parser, self.parser.rows, self.chunk.text
        count = len(rows)
        handlers = parser._handlers
        for kind, m in ordered_matches(text, parser.patterns, low, high):
            handlers[kind](m, self.chunk)
        if len(rows) > count:
            self.positions.append(np.full(len(rows) - count, low, dtype=np.int64))
        self.ranges.append((low, high, parser.lookalike))

    def done(self) -> None:
        """The rows put in line order; the ranges read on their own left to the look-alike scan."""
        self.parser.scan_ranges = self.ranges
        if len(self.positions) > 1:
            self.parser.rows.reorder(self.first, np.argsort(np.concatenate(self.positions), kind="stable"))


class _Main:
    """The main lines of a chunk read at once: per shape found (``kinds``), their lines (indices into the
    chunk's line starts), grid and rows; and all of them in line order."""

    def __init__(self, kinds: list[int], lines: dict[int, np.ndarray], grids: dict[int, np.ndarray],
                 rows: dict[int, SpanRows]) -> None:
        self.kinds, self.lines, self.grids, self.rows = kinds, lines, grids, rows
        every = np.concatenate([lines[kind] for kind in kinds])
        order = np.argsort(every, kind="stable")
        self.in_order = every[order]
        self.kind_in_order = np.concatenate([np.full(len(lines[kind]), kind) for kind in kinds])[order]
        self.row_in_order = np.concatenate([np.arange(len(lines[kind])) for kind in kinds])[order]
        self.steps_in_order = np.concatenate([rows[kind][1] for kind in kinds])[order]
        self.changes = np.flatnonzero(self.kind_in_order[1:] != self.kind_in_order[:-1]) + 1

    @classmethod
    def of(cls, parser: SpanParser, lines: list[np.ndarray], grids: dict[int, np.ndarray]) -> _Main | None:
        kinds = [kind for kind, at in enumerate(lines) if len(at)]
        rows = {}
        for kind in kinds:
            got = parser.span_rows(grids[kind], kind)
            if got is None:
                return None
            rows[kind] = got
        return cls(kinds, {kind: lines[kind] for kind in kinds}, {kind: grids[kind] for kind in kinds}, rows)


class _Summary(NamedTuple):
    """Summary lines of one shape read at once: their lines, grid, rows and which lines give the rows."""

    shape: int
    lines: np.ndarray
    grid: np.ndarray
    rows: SpanRows
    which: np.ndarray


class _Walk:
    """The parser's state brought up, line after line, to the lines read at once above a line read on its own:
    their ``span_done`` and ``summary_done``, anchors and counts."""

    def __init__(self, spans: SpanParser, parser: TextParser, chunk: Chunk, starts: np.ndarray, main: _Main,
                 summaries: list[_Summary]) -> None:
        self.spans, self.parser, self.chunk, self.starts, self.main = spans, parser, chunk, starts, main
        self.summaries = summaries
        self.at_main = 0
        self.at_summary = [0] * len(summaries)

    def until(self, line: int) -> None:
        """The lines read at once above line ``line`` (an index into the chunk's lines) taken into the state."""
        main, spans, parser = self.main, self.spans, self.parser
        end = int(np.searchsorted(main.in_order, line))
        while self.at_main < end:
            start = self.at_main
            change = np.searchsorted(main.changes, start, side="right")
            stop = min(end, int(main.changes[change]) if change < len(main.changes) else end)
            kind = int(main.kind_in_order[start])
            low = int(main.row_in_order[start])
            high = low + stop - start
            steps = main.rows[kind][1][low:high]
            spans.span_done(main.grids[kind][low:high], kind, steps)
            # (a line read on its own above may have had a later step: the restart is at this line)
            parser.anchor(int(steps[0]), self.chunk, int(self.starts[main.in_order[start]]))
            parser.anchor(int(steps[-1]), None, 0)
            parser.parsed_lines += high - low
            self.at_main = stop
        for index, summary in enumerate(self.summaries):
            low = self.at_summary[index]
            high = int(np.searchsorted(summary.lines, line))
            if high > low:
                spans.summary_done(summary.grid[low:high], summary.shape)
                parser.parsed_lines += high - low
                self.at_summary[index] = high
