"""Console formats whose every line read is found by one pattern over a whole chunk (``findall``).

A pattern that begins with a line break is searched for by that literal at C speed (one that begins with
``^`` is tried at every character), and ``findall`` hands back the groups of every line it matches, in line
order, without a match object each: the parser takes them (:meth:`FindallParser.take`) and adds its rows at
once. The chunk's first line, which no line break comes before, is tried on its own by the same pattern
without that line break (no copy of the chunk with one put before it). Where a chunk holds a line that looks
like the format's metrics but was not read (``lookalike_line`` finds more than ``take`` read), the lines read
are marked so that the look-alike scan names the others, as reading line by line does.
"""

from __future__ import annotations

import functools
import re
from typing import ClassVar

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser

__all__ = ["FindallParser"]


@functools.lru_cache(maxsize=64)
def _at_text_start(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` (which begins with ``\\n``) without its line break: the same line at a text's start."""
    if not pattern.pattern.startswith("\\n"):
        raise ValueError(f"a FindallParser pattern begins with \\n: {pattern.pattern[:40]!r}")
    return re.compile(pattern.pattern[2:], pattern.flags)


def _groups(m: re.Match[str]) -> tuple[str, ...] | str:
    """A match's groups as ``findall`` gives them: a tuple, or the one group alone ('' for a group not taken)."""
    if m.re.groups == 1:
        return m.group(1) or ""
    return tuple(group or "" for group in m.groups())


class FindallParser(TextParser):
    """A :class:`TextParser` fed by one ``findall`` of ``line`` over each chunk (ending with a line break).

    Subclasses set ``line`` (lines read, each match starting with the line break before the line and ending
    before the one after it: ``(?=\\n)``), the usual ``lookalike`` (``^``-anchored, for the scan) and, when it is
    not ``lookalike`` after a line break instead of ``^`` (the default), ``lookalike_line`` (lines that look like
    the format's metrics, in the same form); and implement :meth:`take`.
    """

    line: ClassVar[re.Pattern[str]]
    lookalike_line: ClassVar[re.Pattern[str]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        lookalike = cls.__dict__.get("lookalike")
        if "lookalike_line" not in cls.__dict__ and lookalike is not None and lookalike.pattern.startswith("^"):
            cls.lookalike_line = re.compile(r"\n" + lookalike.pattern[1:])

    def feed(self, chunk: Chunk) -> None:
        text = chunk.text if chunk.text.endswith("\n") else chunk.text + "\n"  # (a piece of a very long line)
        self.unread_matches: set[int] = set()
        read, lookalikes = self.take(chunk, text, self.find_lines(text))
        if lookalikes == self.count_lookalikes(text):
            self.parsed_lines += read
            self.scan_ranges = []  # every look-alike line was read
        else:
            for index, start in enumerate(self._line_starts(text)):
                if index not in self.unread_matches:
                    self.mark(chunk, start)

    def find_lines(self, text: str) -> list[tuple[str, ...]]:
        """The groups of every line of ``text`` that ``line`` matches, in line order."""
        found = self.line.findall(text)
        first = _at_text_start(self.line).match(text)
        if first is not None:
            found.insert(0, _groups(first))
        return found

    def count_lookalikes(self, text: str) -> int:
        """How many lines of ``text`` look like the format's metrics (at least those :meth:`take` counts as
        such: more sends the chunk to the marking path, which names the lines not read)."""
        first = _at_text_start(self.lookalike_line).match(text) is not None
        return len(self.lookalike_line.findall(text)) + first

    def match_start(self, text: str, index: int) -> int:
        """Where in the chunk the line of match ``index`` begins (found once a chunk, when first asked: for the
        rare line whose place is said, a restart's)."""
        if getattr(self, "_starts_of", None) is not text:
            self._starts_of, self._starts = text, self._line_starts(text)
        return self._starts[index]

    def _line_starts(self, text: str) -> list[int]:
        starts = [m.start() + 1 for m in self.line.finditer(text)]  # (after the line break a match begins with)
        if _at_text_start(self.line).match(text) is not None:
            starts.insert(0, 0)
        return starts

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        """Add the rows of the lines ``found`` (their groups, in line order); return how many lines were read and
        how many of those are look-alike lines, and put the index of a line found but not read in
        ``unread_matches``. ``text`` is the chunk's text (ending with a line break); :meth:`match_start` tells
        where the line of a match begins in it."""
        raise NotImplementedError
