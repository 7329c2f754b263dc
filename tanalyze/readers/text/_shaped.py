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

__all__ = ["DECIMAL_ONCE", "LineShape", "ValueRuns", "beginning_with", "line_kinds", "line_shape", "line_starts",
           "read_fields", "shape_runs", "stretches", "value_runs"]

#: the characters a field may hold: a piece after a field begins with none of them
_VALUE_CHARS = "0123456789.eE+-"
#: the decimal numbers of the line patterns (``values.NUMBER`` without NaN and infinities, read line by line)
DECIMAL = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_DECIMAL = re.compile(DECIMAL)
_INTEGER = r"\d{1,15}"  # (an exact double: a step parsed as a float is that integer)
_INTEGER_RE = re.compile(_INTEGER)
#: the same, possessive (nothing to try again: a piece no number's character begins follows), 3x quicker, and
#: with ``[0-9]`` for ``\d`` (the same digits in an ASCII text, a quicker test)
DECIMAL_ONCE = r"[-+]?+(?:[0-9]++\.?+[0-9]*+|\.[0-9]++)(?:[eE][-+]?+[0-9]++)?+"
_INTEGER_ONCE = r"[0-9]{1,15}+"
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
    #: the fields only checked (always exactly), not read: :func:`read_fields` leaves them out
    skipped: tuple[bool, ...] = ()

    def source(self, exact: bool = True) -> str:
        """A regex for one line of this shape, without its line break (not ``exact``: a decimal field is any
        run of a number's characters)."""
        out = [re.escape(self.pieces[0])]
        pads = self.pads or ("",) * len(self.integers)
        skipped = self.skipped or (False,) * len(self.integers)
        for integer, pad, skip, piece in zip(self.integers, pads, skipped, self.pieces[1:], strict=True):
            if pad:
                out.append(f"[ \\t]{pad}+")
            out.append(_INTEGER_ONCE if integer else DECIMAL_ONCE if exact or skip else _DECIMAL_CHARS)
            out.append(re.escape(piece))
        return "".join(out)


def line_shape(line: str, spans: list[tuple[int, int]], integers: list[bool], pads: list[str] | None = None,
               skipped: list[bool] | None = None) -> LineShape | None:
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
    return LineShape(tuple(pieces), tuple(integers), tuple(pads) if pads else (), tuple(skipped) if skipped else ())


@functools.lru_cache(maxsize=32)
def _runs_pattern(shapes: tuple[LineShape, ...], exact: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Whole lines of any of ``shapes``, one or more in a row: at the text's start, and after a line break.
    (A pattern that begins with a line break is searched for by its literal start, at C speed; one that begins
    with ``^`` is tried at every character, which costs several times more where few lines have the shape.)"""
    sources = [shape.source(exact) for shape in shapes]
    lines = sources[0] if len(shapes) == 1 else "(?:" + "|".join(sources) + ")"
    return re.compile(rf"(?:{lines}\n)+"), re.compile(rf"\n(?:{lines}\n)+")


def shape_runs(text: str, shapes: tuple[LineShape, ...], exact: bool, start: int = 0, end: int | None = None
               ) -> list[tuple[int, int]]:
    """Where in ``text[start:end]`` (whole lines) runs of lines of ``shapes`` are: (start, end) after their last
    line break. Not ``exact``, a decimal field is any run of a number's characters (:func:`read_fields` then
    tells when one is no number, and the runs are found again, exactly)."""
    end = len(text) if end is None else end
    first, after_break = _runs_pattern(shapes, exact)
    out = []
    if start == 0:
        m = first.match(text, 0, end)
        if m is not None:
            out.append(m.span())
            start = m.end()
    # (a run ends with its line break: the next run begins after another line's)
    out += [(m.start() + 1, m.end()) for m in after_break.finditer(text, max(start - 1, 0), end)]
    return out


def line_starts(chars: np.ndarray, start: int, end: int) -> np.ndarray:
    """Where the lines of ``chars[start:end]`` begin (``start`` is a line start, ``end`` after a line break)."""
    return np.concatenate(([start], np.flatnonzero(chars[start:end - 1] == 10) + start + 1))


class ValueRuns(NamedTuple):
    """The runs of characters a number may have in a text (ending with a line break): where each begins and
    ends (after its last character)."""

    starts: np.ndarray
    ends: np.ndarray


def value_runs(chars: np.ndarray) -> ValueRuns:
    """The runs of characters a number may have in ``chars`` (ending with a line break)."""
    is_value = (chars - 48) < 10  # (comparisons: three times quicker than a table look-up per character)
    for char in b".+-":
        is_value |= chars == char
    is_value |= (chars | 32) == 101  # 'e' or 'E'
    edges = np.flatnonzero(is_value[1:] != is_value[:-1]) + 1  # a start, its end, the next start, …
    if len(chars) and is_value[0]:
        edges = np.concatenate(([0], edges))
    return ValueRuns(edges[0::2].copy(), edges[1::2].copy())


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
    for index, first in enumerate(firsts[1:], 1):
        kinds[beginning_with(chars, at, first)] = index
    return kinds


def beginning_with(chars: np.ndarray, at: np.ndarray, code: bytes) -> np.ndarray:
    """Which of the positions ``at`` of ``chars`` begin ``code`` (it may run past the end: no match there)."""
    padded = np.concatenate((chars, np.zeros(len(code), dtype=np.uint8)))
    same = np.ones(len(at), dtype=bool)
    for offset, byte in enumerate(code):
        same &= padded[at + offset] == byte
    return same


def read_fields(chars: np.ndarray, lines: list[tuple[np.ndarray, LineShape]], runs: ValueRuns
                ) -> list[np.ndarray] | None:
    """The fields of each group of lines (their starts, their shape: lines known to have it) as (lines, fields
    read) float64 grids; None when one is not a number (lines found not ``exact``). Each field ends where the
    first run of a number's characters after its piece does (the piece after it begins with no such character),
    and begins there or after its piece; the fields read are cut out of ``chars`` (``runs``: :func:`value_runs`
    of them) one after the other, a space after each, and parsed at once."""
    starts, ends, integer, counts = [], [], [], []
    for begins, shape in lines:
        position = begins + len(shape.pieces[0])
        skipped = shape.skipped or (False,) * len(shape.integers)
        steps = _run_steps(shape)
        run = None
        for field, (piece, skip) in enumerate(zip(shape.pieces[1:], skipped, strict=True)):
            if run is None or steps is None:
                # (its field ends after the piece: a run ending where the piece does is the piece's)
                run = np.searchsorted(runs.ends, position, side="right")
            else:
                run = run + steps[field - 1]
            end = runs.ends[run]
            if not skip:
                starts.append(np.maximum(runs.starts[run], position))
                ends.append(end)
                integer.append(shape.integers[field])
            position = end + len(piece)
        counts.append(_read_count(shape) * len(begins))
    if not starts:
        return [np.empty((len(begins), 0)) for begins, _ in lines]
    values = np.empty(sum(map(len, starts)))
    bounds = np.cumsum([0, *map(len, starts)]).tolist()
    for kind in (True, False):  # integers (digits only: the line's pattern took them so) read as such, at once
        fields = [index for index, is_integer in enumerate(integer) if is_integer == kind]
        if not fields:
            continue
        parsed = _parse_tokens(chars, np.concatenate([starts[i] for i in fields]),
                               np.concatenate([ends[i] for i in fields]), kind)
        if parsed is None:
            return None
        at = 0
        for index in fields:
            size = bounds[index + 1] - bounds[index]
            values[bounds[index]:bounds[index + 1]] = parsed[at:at + size]
            at += size
    out, at = [], 0
    for (begins, shape), count in zip(lines, counts, strict=True):  # each field of every line in turn
        out.append(values[at:at + count].reshape(_read_count(shape), len(begins)).T)
        at += count
    return out


def _parse_tokens(chars: np.ndarray, first: np.ndarray, end: np.ndarray, integers: bool) -> np.ndarray | None:
    """The numbers at ``chars[first[i]:end[i]]``, cut out one after the other with a space after each; None when
    one is not a number (integers: digits only, at most 15)."""
    stop = end + 1  # (each with the character after it, then made a space)
    tokens = chars[stretches(first, stop)]
    tokens[np.cumsum(stop - first) - 1] = 32
    if integers:
        if not len(first):
            return np.empty(0)
        parsed = np.fromstring(tokens[:-1].tobytes(), dtype=np.int64, sep=" ")
        return parsed.astype(np.float64) if len(parsed) == len(first) else None
    values, valid = parse_some_numbers(tokens[:-1].tobytes().decode("ascii"))
    return values if valid.all() else None


@functools.lru_cache(maxsize=64)
def _run_steps(shape: LineShape) -> tuple[int, ...] | None:
    """How many runs of a number's characters on from the run of each field the next field's run is: the runs
    of the piece between them (fixed text) and the field's own, that of a piece ending with such a character
    merged with the field's when no blank comes between; None when that depends on the line (a piece ending with
    such a character, then blanks that may be none)."""
    steps = []
    pads = shape.pads or ("",) * len(shape.integers)
    for piece, pad in zip(shape.pieces[1:-1], pads[1:], strict=True):
        inside = len(re.findall(f"[{re.escape(_VALUE_CHARS)}]+", piece))
        merged = piece[-1] in _VALUE_CHARS
        if merged and pad == "*":
            return None
        steps.append(1 + inside - (merged and not pad))
    return tuple(steps)


def stretches(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Every index of the stretches ``starts[i]:ends[i]``, in turn."""
    lengths = ends - starts
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


def _read_count(shape: LineShape) -> int:
    return len(shape.integers) - sum(shape.skipped)
