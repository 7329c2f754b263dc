"""Columns of many lines at once, for the console parsers' fast paths.

A chunk's lines of one kind and one shape are captured by a single ``findall``;
these helpers turn the captured columns into row columns with loops that run
in C (``map``, ``zip``, ``chain``) instead of Python code per line. Each fast
path checks that the lines need no care (no restart, every value a number) and
otherwise reads them line by line as before.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import le, lt
from typing import TypeVar

import numpy as np

__all__ = ["floats", "interleave", "repeated", "rising"]

T = TypeVar("T")


def floats(texts: Iterable[str]) -> list[float] | None:
    """``float`` of every text; None when one is not a number (the caller then goes line by line)."""
    try:
        return list(map(float, texts))
    except ValueError:
        return None


def interleave(*columns: Iterable[T]) -> list[T]:
    """Equal-length columns in row order: ``a1, b1, a2, b2, …`` (the fields of each line in turn)."""
    return list(chain.from_iterable(zip(*columns, strict=True)))


_DTYPES = {"q": np.int64, "d": np.float64}


def repeated(items: Sequence[float], times: int, typecode: str) -> array:
    """Every item ``times`` times in a row (a line's step once for each of its fields), as an
    ``array`` of ``typecode`` ('q' or 'd'); OverflowError for an integer beyond 64 bits."""
    out = array(typecode)
    out.frombytes(np.repeat(np.asarray(items, dtype=_DTYPES[typecode]), times).tobytes())
    return out


def rising(values: Sequence[int], strictly: bool = True) -> bool:
    """Whether every value is greater than (or, not ``strictly``, at least) the one before it."""
    return all(map(lt if strictly else le, values, values[1:]))
