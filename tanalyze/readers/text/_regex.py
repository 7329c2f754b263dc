"""Regular-expression tools for the console parsers.

Finding a pattern's matches in a chunk fast: a literal every match must contain
(checked before the regex runs), matches of several patterns in line order, and
matches grouped by line.
"""

from __future__ import annotations

import functools
import re
import re._constants as _sre
import re._parser as _sre_parser
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

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


#: what ``\s`` matches in a str pattern (the characters ``str.isspace`` takes)
SPACE_CHARS = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
               "\u200a\u2028\u2029\u202f\u205f\u3000")


def all_but(chars: str) -> str:
    """A character class of every character but ``chars``: ``[^…]`` written as ranges, which the regex engine
    tests with one table look-up a character, where a negated class is several tests (a category such as ``\\s``
    one more): twice as quick for the long runs of a name or a line prefix, tried on every line."""
    ranges, start = [], 0
    for code in [*sorted({ord(char) for char in chars}), 0x110000]:
        if code > start:
            ranges.append(re.escape(chr(start)) + (f"-{re.escape(chr(code - 1))}" if code - 1 > start else ""))
        start = code + 1
    return f"[{''.join(ranges)}]"


def at_least_two(matches: Iterable[object]) -> bool:
    """Whether ``matches`` yields two items: how a format is told by its lines (one alone may be a quote in another
    log), without finding more of them."""
    found = iter(matches)
    return next(found, None) is not None and next(found, None) is not None


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
                   end: int | None = None, lines: _LineStarts | None = None
                   ) -> Iterator[tuple[int, int, str, re.Match[str]]]:
    """:func:`ordered_matches` as (position, index of the pattern, kind, match); ``lines``: the text's line
    starts when other scans share them (:func:`line_index`)."""
    end = len(text) if end is None else end
    span = text if (start, end) == (0, len(text)) else text[start:end]
    lines = lines or _LineStarts(text)
    # a pattern tried at the few lines it can start on needs no test of the whole text first
    runs = [[(m.start(), index, kind, m) for m in matches_of(pattern, text, start, end, lines)]
            for index, (pattern, kind) in enumerate(patterns)
            if _few_lines(pattern, lines, start, end) is not None or _may_match(pattern, span)]
    found = [run for run in runs if run]
    if len(found) == 1:
        yield from found[0]
        return
    # each run is in order of position, and they follow in pattern order: a stable sort by position keeps
    # matches at one place in pattern order
    yield from sorted(chain.from_iterable(found), key=_position)


_position = itemgetter(0)


def line_index(chunk: Any) -> _LineStarts:
    """The line starts of a chunk's text (a :class:`~tanalyze.readers.text._lines.Chunk`), made once for the
    scans of its line kinds and of its look-alikes, and gone with the chunk."""
    if chunk.line_index is None:
        chunk.line_index = _LineStarts(chunk.text)
    return chunk.line_index


class _LineStarts:
    """The text after a line break, and where each line of an ASCII text starts with its first character
    (each made once, when a pattern needs it): see :func:`matches_of`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._body: str | None = None
        self._starts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._nonblank: np.ndarray | None = None
        self._found: dict[tuple[frozenset[int], int, int], list[int] | None] = {}

    @property
    def body(self) -> str:
        if self._body is None:
            self._body = "\n" + self.text
        return self._body

    def starting_with(self, firsts: frozenset[int], start: int, end: int, after_blanks: bool = False
                      ) -> list[int] | None:
        """Where the lines of ``text[start:end]`` that start with one of ``firsts`` (ASCII codes; with
        ``after_blanks``, whose first character that is not a space or tab is one: a line of blanks only has its
        break, or nothing at the text's end) start; None when the text is not ASCII, or such lines are too many
        for trying the pattern at each to pay."""
        key = (firsts, start, end, after_blanks)
        if key not in self._found:
            self._found[key] = self._starting_with(firsts, start, end, after_blanks)
        return self._found[key]

    def _starting_with(self, firsts: frozenset[int], start: int, end: int, after_blanks: bool) -> list[int] | None:
        if self._starts is None:
            if not self.text.isascii():
                return None
            chars = np.frombuffer(self.text.encode("ascii"), dtype=np.uint8)
            starts = np.concatenate(([0], np.flatnonzero(chars[:-1] == 10) + 1)) if len(chars) else np.empty(0, int)
            self._starts = starts, chars[starts], chars
        starts, first, chars = self._starts
        if after_blanks:
            if self._nonblank is None:
                self._nonblank = _first_nonblank(chars, starts, first)
            first = self._nonblank
        low, high = np.searchsorted(starts, [start, end])
        found = starts[low:high][np.isin(first[low:high], list(firsts))]
        return found.tolist() if len(found) * _CHARS_PER_TRY <= end - start else None


def _first_nonblank(chars: np.ndarray, starts: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Each line's first character that is not a space or a tab (its break when it has none; 0 for a last line
    of blanks without one), from the lines' ``starts`` in ``chars`` and their ``first`` characters."""
    first = first.copy()
    at = starts.copy()
    blank = np.flatnonzero((first == 32) | (first == 9))
    while len(blank):  # one step right for every line still on a blank: as many steps as the deepest indent
        at[blank] += 1
        past = at[blank] >= len(chars)
        first[blank[past]] = 0
        blank = blank[~past]
        first[blank] = chars[at[blank]]
        blank = blank[(first[blank] == 32) | (first[blank] == 9)]
    return first


#: A pattern tried at each line it may start is quicker than a scan of the text when such lines hold this many
#: characters of it each, on average (a match attempt costs about as much as scanning 500 characters).
_CHARS_PER_TRY = 512


@functools.cache
def first_characters(pattern: re.Pattern[str]) -> frozenset[int] | None:
    """The ASCII codes a line of ASCII text can begin with where ``pattern`` (``^`` with ``re.M``) matches it;
    None when that is not known (another pattern, or one that can match an empty line or any character).
    Read from the parsed pattern, a superset: look-arounds and ``\\b`` are taken to allow anything."""
    if not pattern.flags & re.M or not pattern.pattern.startswith("^"):
        return None
    try:
        items = list(_sre_parser.parse(pattern.pattern, pattern.flags & ~re.U))
    except Exception:  # noqa: BLE001 - a parser of another Python: no dispatch, nothing wrong
        return None
    if not items or items[0] != (_sre.AT, _sre.AT_BEGINNING):
        return None
    found = _first_of(items[1:])
    if found is None:
        return None
    codes, nullable = found
    if nullable or codes is None:
        return None
    return _ascii_codes(codes, pattern.flags)


@functools.cache
def first_after_blanks(pattern: re.Pattern[str]) -> frozenset[int] | None:
    """The ASCII codes that the first character of a line of ASCII text that is not a space or tab can be, where
    ``pattern`` (``^`` with ``re.M``) matches the line; None when not known (as :func:`first_characters`), or
    when what follows the pattern's leading blanks may begin with a blank too. A superset, as
    :func:`first_characters`: for ``^[ \\t]*Epoch`` it is ``E``, which indented lines need not be tried for."""
    if not pattern.flags & re.M or not pattern.pattern.startswith("^"):
        return None
    try:
        items = list(_sre_parser.parse(pattern.pattern, pattern.flags & ~re.U))
    except Exception:  # noqa: BLE001 - a parser of another Python: no dispatch, nothing wrong
        return None
    if not items or items[0] != (_sre.AT, _sre.AT_BEGINNING):
        return None
    rest = items[1:]
    while rest and _blanks_only(rest[0]):
        rest = rest[1:]
    found = _first_of(rest)
    if found is None or found[1] or found[0] is None or found[0] & _BLANKS:
        return None
    return _ascii_codes(found[0], pattern.flags)


_BLANKS = frozenset((32, 9))


def _blanks_only(item: tuple[Any, Any]) -> bool:
    """Whether a parsed item matches spaces and tabs only (a literal, a class of them, a repeat of those)."""
    op, argument = item
    name = str(op)
    if name == "LITERAL":
        return argument in _BLANKS
    if name == "IN":
        chars = _class_of(argument)
        return chars is not None and chars <= _BLANKS
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return all(map(_blanks_only, argument[2]))
    return False


def _ascii_codes(codes: frozenset[int], flags: int) -> frozenset[int] | None:
    """``codes`` as the ASCII codes they match (each letter's other case too when case is ignored); None when a
    character beyond ASCII may match an ASCII one."""
    if flags & re.I:
        if max(codes, default=0) >= 128:
            return None  # a letter beyond ASCII may match an ASCII one ('\u212a', the Kelvin sign, matches 'k')
        codes = codes | {ord(chr(c).swapcase()) for c in codes if chr(c).isalpha()}
    return frozenset(c for c in codes if c < 128)


_CATEGORIES = {
    "CATEGORY_DIGIT": frozenset(range(48, 58)),
    "CATEGORY_SPACE": frozenset(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"),  # str.isspace(), as \s of a str pattern
    "CATEGORY_WORD": frozenset(b"0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
}


def _first_of(items: list) -> tuple[frozenset[int] | None, bool] | None:
    """(the first characters of what ``items`` match, whether they can match nothing); None: unknown. A first
    character of None means any."""
    codes: set[int] = set()
    for op, argument in items:
        name = str(op)
        if name == "LITERAL":
            return frozenset(codes | {argument}), False
        if name == "IN":
            chars = _class_of(argument)
            return (None if chars is None else frozenset(codes | chars)), False
        if name in ("SUBPATTERN", "MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT", "BRANCH", "ATOMIC_GROUP"):
            alternatives, optional = _parts_of(name, argument)
            nullable = optional
            for alternative in alternatives:
                found = _first_of(list(alternative))
                if found is None or found[0] is None:
                    return None
                codes |= found[0]
                nullable |= found[1]
            if not nullable:
                return frozenset(codes), False
            continue
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue  # zero width: what follows starts the line
        return None  # any character, a back reference, a conditional…
    return frozenset(codes), True


def _parts_of(name: str, argument: Any) -> tuple[list, bool]:
    """The alternatives inside a group, repeat or branch, and whether it may match nothing by itself."""
    if name == "SUBPATTERN":
        if argument[1] & re.I:
            return [[(_sre.ANY, None)]], False  # case ignored inside the group only: any (first) character
        return [argument[3]], False
    if name == "ATOMIC_GROUP":
        return [argument], False
    if name == "BRANCH":
        return list(argument[1]), False
    low, _, inner = argument
    return [inner], low == 0


def _class_of(items: list) -> set[int] | None:
    """The characters of a ``[...]`` class (ASCII), or None for a negated one."""
    chars: set[int] = set()
    for op, argument in items:
        name = str(op)
        if name == "LITERAL":
            chars.add(argument)
        elif name == "RANGE":
            chars.update(range(argument[0], argument[1] + 1))
        elif name == "CATEGORY" and str(argument) in _CATEGORIES:
            chars |= _CATEGORIES[str(argument)]
        else:
            return None  # NEGATE, another category
    return chars


def _few_lines(pattern: re.Pattern[str], lines: _LineStarts, start: int, end: int) -> list[int] | None:
    """The starts of the lines of a long text where ``pattern`` may match, when few; None otherwise."""
    if end - start <= _SHORT or _after_break(pattern) is None:
        return None
    firsts = first_after_blanks(pattern)
    if firsts is not None:  # (indented lines, of tracebacks or evaluation tables, need not be tried)
        return lines.starting_with(firsts, start, end, after_blanks=True)
    firsts = first_characters(pattern)
    return None if firsts is None else lines.starting_with(firsts, start, end)


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
    lines = lines or _LineStarts(text)
    few = _few_lines(pattern, lines, start, end)
    if few is not None:
        yield from _at_line_starts(pattern, text, few, start, end)
        return
    body = lines.body
    literal = required_literal(pattern)
    if literal is not None:  # the line break and the literal, found by str.find (several times quicker)
        yield from _at_line_starts(pattern, text, _line_starts_with(body, "\n" + literal, start, end + 1), start, end)
        return
    # the line break before each line, in body, is the line's start in text
    yield from _at_line_starts(pattern, text, map(re.Match.start, form.finditer(body, start, end + 1)), start, end)


def _line_starts_with(body: str, needle: str, start: int, end: int) -> Iterator[int]:
    """Where ``needle`` occurs in ``body[start:end]``, left to right."""
    at = body.find(needle, start, end)
    while at >= 0:
        yield at
        at = body.find(needle, at + 1, end)


def _at_line_starts(pattern: re.Pattern[str], text: str, candidates: Iterable[int], start: int, end: int
                    ) -> Iterator[re.Match[str]]:
    """``pattern`` matched at each candidate line start, as ``finditer`` (none overlapping the one before)."""
    last = start
    for at in candidates:
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
