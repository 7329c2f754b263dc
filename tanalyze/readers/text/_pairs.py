"""Lines of ``name: number`` pairs (PaddlePaddle's suites, OpenNMT-py), their pairs read a chunk at once.

A trainer prints its pairs from one format string: the same names in the same order on every line, the numbers
and their padding changing. The first line of a chunk gives a template (:func:`template`): its pairs' names and
separators as they are, the text between pairs as it is but for its digits and the number of its blanks, each
number a group. One pattern over all of the chunk's lines then gives every number at once; when a line has
another template (a pair more, the time left printed with days), the chunk's pairs are found line by line, each
line's by ``PAIR``. Both give the same rows: a line the template matches has exactly the pairs ``PAIR`` finds in it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from itertools import chain, compress
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._rows import Rows
from tanalyze.readers.values import NUMBER, NUMBER_ONCE, parse_timestamps

__all__ = ["EQUALS_PAIR", "PAIR", "PairLines", "PairTake", "PairsParser", "template"]

#: a name and its number (a scheduler's name in parentheses after ``lr`` left out); a name of at most 128
#: characters, taken whole (a long run of letters, tried from each of its characters, would take time in the square of
#: its length)
PAIR = re.compile(rf"([A-Za-z_][\w.@/-]{{0,127}}+)(?:\([^()\n]*\))?: +({NUMBER})")
#: ``name=number`` (ESPnet's), the same way
EQUALS_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]{{0,127}}+)=({NUMBER})")
#: the text between pairs in pieces: digits, blanks, the rest
_GAP = re.compile(r"(\d+)|( +)|([^\d ]+)")


class PairLines:
    """The lines of a chunk read, in order: each one's step, epoch, ``name: number`` text, time and tag prefix (""
    for the main lines, whose template is tried; others, evaluations, are found line by line). ``not_tags``: names
    that are no tags; ``pair``: the pattern of a pair (a name and a number, groups 1 and 2)."""

    def __init__(self, not_tags: Collection[str], pair: re.Pattern[str] = PAIR) -> None:
        self.not_tags = not_tags
        self.pair = pair
        self.steps: list[int] = []
        self.epochs: list[str] = []
        self.rests: list[str] = []
        self.stamps: list[str] = []
        self.prefixes: list[str] = []

    def add(self, step: int, epoch: str, rest: str, stamp: str, prefix: str) -> None:
        """A line: its step, epoch ("nan" when none), pairs' text, time (``YYYY-MM-DD HH:MM:SS``, "/" for "-"
        taken too; "" when none) and tag prefix."""
        self.steps.append(step)
        self.epochs.append(epoch)
        self.rests.append(rest)
        self.stamps.append(stamp)
        self.prefixes.append(prefix)

    def add_rows(self, rows: Rows, at_once: bool) -> None:
        """Each line's pairs, as tags its prefix + the name, at its step, epoch and time, in line order; the main
        lines' ``at_once`` when they all have the first one's template."""
        main = [index for index, prefix in enumerate(self.prefixes) if not prefix]
        pairs = self._same_pairs([self.rests[i] for i in main]) if at_once and len(main) > 1 else None
        if pairs is None:
            self._add(rows, range(len(self.rests)))
            return
        first = len(rows)
        names, values = pairs
        width = len(names)
        if width:
            index = np.repeat(np.array(main), width)
            rows.extend(np.tile(np.array(rows.codes(names), dtype=np.int32), len(main)),
                        np.array(self.steps, dtype=np.int64)[index], values,
                        epoch=np.array(self.epochs, dtype=np.float64)[index], wall=self._walls()[index])
        others = [i for i, prefix in enumerate(self.prefixes) if prefix]
        if others:
            placed = np.concatenate((np.repeat(np.array(main), width), self._add(rows, others)))
            rows.reorder(first, np.argsort(placed, kind="stable"))

    def _add(self, rows: Rows, lines: Sequence[int]) -> np.ndarray:
        """The pairs of ``lines`` (indices), each line's found on its own; which line each row is of."""
        names: list[str] = []
        numbers: list[str] = []
        counts: list[int] = []
        for line in lines:
            prefix = self.prefixes[line]
            pairs = [pair for pair in self.pair.findall(self.rests[line]) if pair[0] not in self.not_tags]
            counts.append(len(pairs))
            names += [prefix + name for name, _ in pairs]
            numbers += [number for _, number in pairs]
        index = np.repeat(np.asarray(lines, dtype=np.int64), counts)
        if names:
            values, _ = parse_some_numbers(" ".join(numbers))  # (each a NUMBER: float() takes it)
            rows.extend(rows.codes(names), np.array(self.steps, dtype=np.int64)[index], values,
                        epoch=np.array(self.epochs, dtype=np.float64)[index], wall=self._walls()[index])
        return index

    def _walls(self) -> np.ndarray:
        return np.array(parse_timestamps([stamp.replace("/", "-") for stamp in self.stamps]), dtype=np.float64)

    def _same_pairs(self, rests: list[str]) -> tuple[list[str], np.ndarray] | None:
        """The names (those that are tags) and the numbers (line after line) of ``rests`` when every one has the
        pairs of the first in its template; None otherwise."""
        pattern, names = template(rests[0], self.pair)
        if not names:
            return None
        found = pattern.findall("\n".join(rests))
        if len(found) != len(rests):
            return None  # (a line of another template, or with a number that is no NUMBER)
        kept = [name not in self.not_tags for name in names]
        taken = list(compress(names, kept))
        if not taken:
            return [], np.empty(0)
        values = np.array(found if len(names) == 1 else list(chain.from_iterable(found)), dtype=object)
        values = values.reshape(len(rests), len(names))[:, np.flatnonzero(kept)].ravel()
        parsed = parse_numbers(" ".join(values.tolist()))
        return (taken, parsed) if parsed is not None else None


class PairsParser(FindallParser):
    """A :class:`FindallParser` whose main lines are pairs read by :class:`PairLines`: its :meth:`take` goes
    through the chunk's lines with a :class:`PairTake`. The main lines ``line`` finds, read or not, are its
    look-alike lines (no second scan)."""

    #: read every main line's pairs on its own (not a chunk's at once by their template); for tests
    line_by_line: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._lookalikes = 0

    def count_lookalikes(self, text: str) -> int:
        return self._lookalikes


class PairTake:
    """A chunk's lines as a :class:`PairsParser` takes them, in order: its main lines (:meth:`main`, a restart
    recorded at its line), the lines of other kinds added to ``lines`` with a tag prefix, the look-alike lines left
    unread (``unread``); :meth:`done` adds the rows."""

    def __init__(self, parser: PairsParser, chunk: Chunk, text: str, not_tags: Collection[str],
                 pair: re.Pattern[str] = PAIR) -> None:
        self.parser, self.chunk, self.text = parser, chunk, text
        self.lines = PairLines(not_tags, pair)
        self.unread: list[int] = []
        #: the step of the last main line (before the chunk's first, the parser's last)
        self.previous = parser._last_step
        self.read = 0

    def main(self, index: int, step: int, epoch: str, rest: str, stamp: str) -> None:
        """The main line of match ``index``: its step, epoch, pairs' text and time."""
        previous = self.previous
        if previous is not None and step < previous:  # a restart: recorded at its line
            self.parser.anchor(previous, None, 0)
            self.parser.anchor(step, self.chunk, self.parser.match_start(self.text, index))
        self.previous = step
        self.read += 1
        self.lines.add(step, epoch, rest, stamp, "")

    def done(self, found: int) -> tuple[int, int]:
        """The rows added; how many of the ``found`` lines were read and how many of them are main lines (as
        :meth:`FindallParser.take` returns them)."""
        parser = self.parser
        parser.unread_matches.update(self.unread)
        if self.read:
            parser.anchor(self.previous, None, 0)  # type: ignore[arg-type]
        self.lines.add_rows(parser.rows, at_once=not parser.line_by_line)
        parser._lookalikes = self.read + len(self.unread)
        return found - len(self.unread), self.read


def template(rest: str, pair: re.Pattern[str] = PAIR) -> tuple[re.Pattern[str], list[str]]:
    """A line of the pairs of ``rest`` as a pattern (``^…$``, each number a group), and the pairs' names: each
    pair's name as it is, then ``:`` and blanks; the text between pairs as it is but its digits (an ``eta: 0:04:14``
    goes on) and how many blanks each run of them has (numbers padded to a width).

    A line it matches has exactly the pairs ``pair`` (``PAIR`` or ``EQUALS_PAIR``) finds in it, those names with
    those numbers: the pairs of ``rest`` are all it finds in it, and a line that differs only in digits and in the
    length of blank runs between pairs has no other name followed by ``:`` and blanks (or ``=``) and a number (a name
    begins with a letter and no letter, colon, equals sign or blank comes or goes)."""
    pieces: list[str] = []
    names: list[str] = []
    at = 0
    for m in pair.finditer(rest):
        separator = rest[m.start():m.start(2)]  # (the name, a parenthesis, the colon and blanks, or "=")
        blanks = " ++" if separator.endswith(" ") else ""
        pieces += [_between(rest[at:m.start()]), re.escape(separator.rstrip(" ")), blanks, f"({NUMBER_ONCE})"]
        names.append(m.group(1))
        at = m.end()
    pieces.append(_between(rest[at:]))
    return re.compile("^" + "".join(pieces) + "$", re.M), names


def _between(text: str) -> str:
    return "".join(r"\d+" if digits else " +" if blanks else re.escape(other)
                   for digits, blanks, other in _GAP.findall(text))
