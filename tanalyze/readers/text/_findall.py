"""Console formats whose every line read is found by one pattern over a whole chunk (``findall``).

A pattern that begins with a line break is searched for by that literal at C speed (one that begins with
``^`` is tried at every character), and ``findall`` hands back the groups of every line it matches, in line
order, without a match object each: the parser takes them (:meth:`FindallParser.take`) and adds its rows at
once. Where a chunk holds a line that looks like the format's metrics but was not read (``lookalike_line``
finds more than ``take`` read), the lines read are marked so that the look-alike scan names the others, as
reading line by line does.
"""

from __future__ import annotations

import re
from typing import ClassVar

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser

__all__ = ["FindallParser"]


class FindallParser(TextParser):
    """A :class:`TextParser` fed by one ``findall`` of ``line`` over ``"\\n" + chunk + "\\n"``.

    Subclasses set ``line`` (lines read, each match starting with the line break before the line and ending
    before the one after it: ``(?=\\n)``), ``lookalike_line`` (lines that look like the format's metrics, in the
    same form) and the usual ``lookalike`` (``^``-anchored, for the scan), and implement :meth:`take`.
    """

    line: ClassVar[re.Pattern[str]]
    lookalike_line: ClassVar[re.Pattern[str]]

    def feed(self, chunk: Chunk) -> None:
        searched = "\n" + chunk.text + "\n"  # (every line between two line breaks; a chunk's last may have none)
        self.unread_matches: set[int] = set()
        read, lookalikes = self.take(chunk, searched, self.line.findall(searched))
        if lookalikes == self.count_lookalikes(searched):
            self.parsed_lines += read
            self.scan_ranges = []  # every look-alike line was read
        else:
            for index, m in enumerate(self.line.finditer(searched)):
                if index not in self.unread_matches:
                    self.mark(chunk, m.start())  # (the line break a match starts with is its line's start)

    def count_lookalikes(self, searched: str) -> int:
        """How many lines of ``searched`` look like the format's metrics (at least those :meth:`take` counts as
        such: more sends the chunk to the marking path, which names the lines not read)."""
        return len(self.lookalike_line.findall(searched))

    def match_start(self, searched: str, index: int) -> int:
        """Where in the chunk the line of match ``index`` begins (found once a chunk, when first asked: for the
        rare line whose place is said, a restart's)."""
        if getattr(self, "_starts_of", None) is not searched:
            self._starts_of, self._starts = searched, [m.start() for m in self.line.finditer(searched)]
        return self._starts[index]

    def take(self, chunk: Chunk, searched: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        """Add the rows of the lines ``found`` (their groups, in line order); return how many lines were read and
        how many of those are look-alike lines, and put the index of a line found but not read in
        ``unread_matches``. ``searched`` is the chunk's text between two line breaks: a match's ``start()`` in it
        is the start of its line in the chunk."""
        raise NotImplementedError
