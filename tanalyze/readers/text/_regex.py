"""Regular-expression tools for the console parsers.

Finding a pattern's matches in a chunk fast: a literal every match must contain
(checked before the regex runs), matches of several patterns in line order, and
matches grouped by line.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Callable, Iterable, Iterator

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


