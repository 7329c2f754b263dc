"""``name: value |`` fields, the shape of Megatron's iteration, timer and memory lines.

Three ways to read them, all with the same result:

- :func:`fields_into`, any text: split at ``|`` then ``:``, count values that are not numbers;
- :class:`LineShapes`, one line at a time: when a line repeats the names of the line
  before, its values are taken by position (two C-level splits);
- :class:`FieldShape`, every line of a chunk at once: the names of a line become a
  pattern whose matches capture the values of each line that repeats them exactly.
  A chunk where some line has other names, or a value that is not a number, is left
  to the line-by-line ways.
"""

from __future__ import annotations

import re

from tanalyze.readers.text._batch import floats, interleave
from tanalyze.readers.values import to_float

__all__ = ["FieldShape", "LineShapes", "field_pairs", "fields_into"]


def field_pairs(text: str, counter: list[int]) -> list[tuple[str, float]]:
    """``name: value`` fields between ``|``; non-numeric values are counted in ``counter[0]``."""
    names: list[str] = []
    values: list[float] = []
    fields_into(text, names, values, counter, {})
    return list(zip(names, values, strict=True))


def fields_into(text: str, names: list[str], values: list[float], counter: list[int], tags: dict[str, str],
                prefix: str = "") -> int:
    """Append the ``name: value`` fields of ``text`` to ``names``/``values``; return how many.

    ``tags`` caches raw field name -> tag (the same few names repeat on every line).
    """
    count = 0
    for segment in text.split("|"):
        name, sep, value = segment.partition(":")
        if not sep:
            continue
        try:
            number = float(value)
        except ValueError:
            number = to_float(value)
            if number is None:
                if name.strip():
                    counter[0] += 1  # not a number, or empty
                continue
        tag = tags.get(name)
        if tag is None:
            stripped = name.strip()
            if not stripped:
                continue
            tag = tags[name] = prefix + stripped
        names.append(tag)
        values.append(number)
        count += 1
    return count


#: Lines with more fields are read one by one (a pattern costs ~30 µs per field to compile).
MAX_SHAPE_FIELDS = 100


def shape_keys(text: str) -> list[str] | None:
    """The raw names of ``text`` when it is nothing but ``name: value |`` fields (ending with ``|``), else None."""
    parts = text.replace("|", ":").split(":")
    keys = parts[0:-1:2]
    if len(parts) % 2 == 0 or parts[-1] or text.count("|") != len(keys) or not keys:
        return None  # ':' in a value, text after the last '|', or no field
    if any(not key.strip() for key in keys):
        return None  # an empty name: the careful path decides
    return keys


class LineShapes:
    """Fast path for lines whose field names repeat: 'a: 1 | b: 2 |' → names once, values by C-level split."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.last: list[str] | None = None
        self.tags: list[str] = []

    def read(self, text: str, names: list[str], values: list[float], counter: list[int], cache: dict[str, str]) -> int:
        if not text.endswith("|"):
            text += "|"
        parts = text.replace("|", ":").split(":")
        keys = parts[0:-1:2]
        if keys != self.last:
            if len(parts) % 2 == 0 or (parts[-1] and not parts[-1].isspace()) or text.count("|") != len(keys):
                return fields_into(text, names, values, counter, cache, self.prefix)  # ':' in a value, or odd
            tags = [self.prefix + k.strip() for k in keys]
            if any(tag == self.prefix for tag in tags):  # an empty name: let the careful path decide
                return fields_into(text, names, values, counter, cache, self.prefix)
            self.last, self.tags = keys, tags
        try:
            floats = list(map(float, parts[1::2]))
        except ValueError:
            return fields_into(text, names, values, counter, cache, self.prefix)
        values.extend(floats)
        names.extend(self.tags)
        return len(self.tags)


class FieldShape:
    """The field names of one line kind, learnt from a line, as a pattern for every line that repeats them.

    ``head`` is the pattern of what comes before the fields (its groups come
    first in each match); ``closed`` says whether the last field must end with
    ``|`` (Megatron's iteration lines do, its timer lines need not). A match
    either has the learnt names, with the values captured, or is any other
    line of the kind (its last group is then set): the matches are exactly
    those of ``head`` followed by the rest of the line.
    """

    def __init__(self, head: str, prefix: str = "", closed: bool = True) -> None:
        self.head = head
        self.head_groups = re.compile(head).groups
        self.prefix = prefix
        self.closed = closed
        self.pattern: re.Pattern[str] | None = None
        self.tags: list[str] = []

    def learn(self, rest: str) -> bool:
        """Take the names of ``rest`` (a line after its head); False when it is not plain fields."""
        self.pattern = None
        if not self.closed and not rest.endswith("|"):
            rest += "|"
        keys = shape_keys(rest) if rest.endswith("|") else None
        if keys is None or len(keys) > MAX_SHAPE_FIELDS:
            return False
        fields = "".join(re.escape(key) + r":([^|:\n]*)\|" for key in keys)
        if not self.closed:
            fields = fields[:-2] + r"\|?"
        self.pattern = re.compile(rf"{self.head}(?:{fields}$|([^\n]*))", re.M)
        self.tags = [self.prefix + key.strip() for key in keys]
        return True

    def forget(self) -> None:
        """Learn again from the next chunk's first line (this one had lines of other shapes)."""
        self.pattern = None

    def read_learning(self, text: str, line: re.Pattern[str], group: int
                      ) -> tuple[list[re.Match[str]], list[tuple[str, ...]], list[float]] | None:
        """:meth:`read`, learning the names first from group ``group`` of the first ``line`` match when none
        are known yet (no such line: nothing to read)."""
        if self.pattern is None:
            first = line.search(text)
            if first is None:
                return [], [], []
            if not self.learn(first.group(group)):
                return None
        return self.read(text)

    def read(self, text: str) -> tuple[list[re.Match[str]], list[tuple[str, ...]], list[float]] | None:
        """Every line of the kind in ``text``: (matches, head group columns, values in line order).

        None when a line has other names or a value is not a number (nothing is read then).
        """
        assert self.pattern is not None
        matches = list(self.pattern.finditer(text))
        if not matches:
            return [], [], []
        columns = list(zip(*map(re.Match.groups, matches), strict=True))
        if columns[-1].count(None) != len(matches):
            return None
        values = floats(interleave(*columns[self.head_groups : -1]))
        if values is None:
            return None
        return matches, columns[: self.head_groups], values

