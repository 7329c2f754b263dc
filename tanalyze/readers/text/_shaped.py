"""Runs of lines printed from one template, read at once.

A training loop prints its metric line from one format string: the same text
every time but for the numbers (``iter 100 | loss 2.5123 | lr 0.000100``). Such a
line is a :class:`LineShape`: its literal pieces and, between them, its fields
(an integer or a decimal number). The lines of a chunk that have one of a few
shapes are found as runs by one regex; the fields of all of them are picked out
of the text with numpy (each field ends where the first character no number has
comes, since every piece after a field begins with one) and parsed in bulk, bit
for bit as ``float()`` does (:func:`~tanalyze.readers.text._numbers.parse_some_numbers`).
The caller reads the lines between runs one by one, with the rules of its format.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import numpy as np

from tanalyze.readers.text._numbers import parse_some_numbers

__all__ = ["DECIMAL_ONCE", "LineShape", "line_kinds", "line_shape", "line_starts", "read_fields", "shape_runs", "value_runs"]

#: the characters a field may hold: a piece after a field begins with none of them
_VALUE_CHARS = "0123456789.eE+-"
_IS_VALUE = np.zeros(256, dtype=bool)
_IS_VALUE[list(_VALUE_CHARS.encode("ascii"))] = True
#: the decimal numbers of the line patterns (``values.NUMBER`` without NaN and infinities, read line by line)
DECIMAL = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_DECIMAL = re.compile(DECIMAL)
_INTEGER = r"\d{1,15}"  # (an exact double: a step parsed as a float is that integer)
_INTEGER_RE = re.compile(_INTEGER)
#: the same, possessive (nothing to try again: a piece no number's character begins follows), 3x quicker
DECIMAL_ONCE = r"[-+]?+(?:\d++\.?+\d*+|\.\d++)(?:[eE][-+]?+\d++)?+"
_INTEGER_ONCE = r"\d{1,15}+"
#: any run of a decimal's characters: 2-3x quicker again; such a field is checked when it is parsed (``float()``
#: takes a token of these characters exactly when ``DECIMAL`` matches all of it)
_DECIMAL_CHARS = r"[-+.0-9eE]++"


class LineShape(NamedTuple):
    """A line's literal pieces (one more than its fields: before the first, between, after the last up to the
    line break), which fields are integers (the others decimals) and, when given, the blanks each field may have
    before it (after its piece; ``"*"`` any, ``"+"`` at least one, ``""`` none): numbers padded to a width."""

    pieces: tuple[str, ...]
    integers: tuple[bool, ...]
    pads: tuple[str, ...] = ()

    def source(self, exact: bool = True) -> str:
        """A regex for one line of this shape, without its line break (not ``exact``: a decimal field is any
        run of a number's characters)."""
        decimal = DECIMAL_ONCE if exact else _DECIMAL_CHARS
        out = [re.escape(self.pieces[0])]
        pads = self.pads or ("",) * len(self.integers)
        for integer, pad, piece in zip(self.integers, pads, self.pieces[1:], strict=True):
            if pad:
                out.append(f"[ \\t]{pad}+")
            out.append(_INTEGER_ONCE if integer else decimal)
            out.append(re.escape(piece))
        return "".join(out)


def line_shape(line: str, spans: list[tuple[int, int]], integers: list[bool], pads: list[str] | None = None
               ) -> LineShape | None:
    """The shape of ``line`` whose fields are at ``spans`` (in order); None when a field is not a plain number of
    its kind, a piece after a field begins with a character a number may have (its end would be unclear), two
    fields touch, the line begins with a field, is not ASCII, or a field's blanks before it are not what its pad
    asks (with ``pads``: the blanks before such a field are left out of the piece before it)."""
    if not line.isascii():
        return None
    pieces, at = [], 0
    for index, ((start, end), integer) in enumerate(zip(spans, integers, strict=True)):
        if (_INTEGER_RE if integer else _DECIMAL).fullmatch(line, start, end) is None:
            return None
        piece = line[at:start]
        if pads and pads[index]:
            stripped = piece.rstrip(" \t")
            if pads[index] == "+" and len(stripped) == len(piece):
                return None
            piece = stripped
        pieces.append(piece)
        at = end
    pieces.append(line[at:])
    if not pieces[0] or any(not piece for piece in pieces[1:-1]):
        return None
    if any(piece[:1] in _VALUE_CHARS and piece for piece in pieces[1:]):
        return None
    return LineShape(tuple(pieces), tuple(integers), tuple(pads) if pads else ())


@functools.lru_cache(maxsize=32)
def _runs_pattern(shapes: tuple[LineShape, ...], exact: bool) -> re.Pattern[str]:
    """Whole lines of any of ``shapes``, one or more in a row."""
    sources = [shape.source(exact) for shape in shapes]
    lines = sources[0] if len(shapes) == 1 else "(?:" + "|".join(sources) + ")"
    return re.compile(rf"^(?:{lines}\n)+", re.M)


def shape_runs(text: str, shapes: tuple[LineShape, ...], exact: bool) -> list[tuple[int, int]]:
    """Where in ``text`` (whole lines) runs of lines of ``shapes`` are: (start, end) after their last line break.
    Not ``exact``, a decimal field is any run of a number's characters (:func:`read_fields` then tells when one
    is no number, and the runs are found again, exactly)."""
    return [m.span() for m in _runs_pattern(shapes, exact).finditer(text)]


def line_starts(chars: np.ndarray, start: int, end: int) -> np.ndarray:
    """Where the lines of ``chars[start:end]`` begin (``start`` is a line start, ``end`` after a line break)."""
    return np.concatenate(([start], np.flatnonzero(chars[start:end - 1] == 10) + start + 1))


def value_runs(chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which characters a number may have, and where each run of them ends (text ending with a line break)."""
    is_value = _IS_VALUE[chars]
    return is_value, np.flatnonzero(is_value[:-1] & ~is_value[1:]) + 1


def line_kinds(chars: np.ndarray, starts: np.ndarray, shapes: tuple[LineShape, ...], run_ends: np.ndarray
               ) -> np.ndarray | None:
    """The index of the shape of each line at ``starts`` (lines known to have one of ``shapes``), told by their
    first pieces, or when all have the same first piece by their second (after the first field); None when one
    such piece begins another (then they cannot tell)."""
    if len(shapes) == 1:
        return np.zeros(len(starts), dtype=np.int64)
    firsts = [shape.pieces[0].encode("ascii") for shape in shapes]
    at = starts
    if len(set(firsts)) == 1:  # "iter N | loss …" and "iter N | val_loss …": told after the step
        if any(len(shape.pieces) < 2 for shape in shapes):
            return None
        firsts = [shape.pieces[1].encode("ascii") for shape in shapes]
        at = run_ends[np.searchsorted(run_ends, starts + len(shapes[0].pieces[0]), side="right")]
    if any(a != b and b.startswith(a) for a in firsts for b in firsts) or len(set(firsts)) < len(firsts):
        return None
    kinds = np.zeros(len(starts), dtype=np.int64)
    padded = np.concatenate((chars, np.zeros(max(map(len, firsts)), dtype=np.uint8)))
    for index, first in enumerate(firsts[1:], 1):
        same = np.ones(len(starts), dtype=bool)
        for offset, byte in enumerate(first):
            same &= padded[at + offset] == byte
        kinds[same] = index
    return kinds


def read_fields(chars: np.ndarray, lines: list[tuple[np.ndarray, LineShape]], runs: list[tuple[int, int]],
                values: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray] | None:
    """The fields of each group of lines (their starts, their shape: lines known to have it, all in ``runs``)
    as (lines, fields) float64 grids; None when one is not a number (runs found not ``exact``). A field is the
    run of number characters from its start; they are kept (but those of the pieces), each run's end (a
    character no number has) made the space after it: the fields of all lines as one text, in line order.
    ``values``: :func:`value_runs` of ``chars``."""
    is_value = values[0].copy()
    at = 0
    for start, end in runs:  # the other lines' characters are no fields
        is_value[at:start] = False
        at = end
    is_value[at:] = False
    run_ends = np.flatnonzero(is_value[:-1] & ~is_value[1:]) + 1  # (the last character is a line break)
    ends = []
    for begins, shape in lines:
        position = begins + len(shape.pieces[0])
        _clear_pieces(is_value, begins, shape.pieces[0])
        for piece in shape.pieces[1:]:  # (its field ends after the piece: a run ending where the piece does is the piece's)
            end = run_ends[np.searchsorted(run_ends, position, side="right")]
            ends.append(end)
            _clear_pieces(is_value, end, piece)
            position = end + len(piece)
    if not ends:
        return [np.empty((len(begins), 0)) for begins, _ in lines]
    every_end = np.concatenate(ends)
    is_value[every_end] = True
    marked = chars.copy()
    marked[every_end] = 32
    values, valid = parse_some_numbers(marked[is_value].tobytes()[:-1].decode("ascii"))
    if not valid.all():
        return None
    if len(lines) == 1:  # in line order, each line's fields in turn
        begins, shape = lines[0]
        return [values.reshape(len(begins), len(shape.pieces) - 1)]
    order = np.argsort(every_end, kind="stable")
    at_place = np.empty_like(values)
    at_place[order] = values  # the value of each field in the order of ``ends``
    out, at = [], 0
    for begins, shape in lines:
        width = len(shape.pieces) - 1
        count = width * len(begins)
        out.append(at_place[at:at + count].reshape(width, len(begins)).T)
        at += count
    return out


def _clear_pieces(is_value: np.ndarray, at: np.ndarray, piece: str) -> None:
    """Unmark the number characters of ``piece`` (a name's ``e`` …), which begins at each of ``at``."""
    for offset, char in enumerate(piece):
        if char in _VALUE_CHARS:
            is_value[at + offset] = False
