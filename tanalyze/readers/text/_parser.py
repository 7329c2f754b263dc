"""The base of the console-log parsers: :class:`TextParser` and :class:`ParsedFile`.

A parser (one per format family) receives cleaned chunks of whole lines and
turns the lines it knows into points. The base gives every parser the same
tools, so each format module only says what its lines look like:

- points go into :class:`~._rows.Rows` (arrays, tag codes, write order);
- step anchors: each parser reports the step of its main line kind, and a step
  that goes back is a resumed job (:class:`~tanalyze.readers.base.Restart`);
- lines that look like metrics (a format's keyword) but that no rule read are
  counted, with up to three examples, instead of being lost silently;
- resuming: a parser's state as JSON (:meth:`TextParser.snapshot`) for the
  driver in :mod:`._parts`, which reads a file chunk by chunk, in parts.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tanalyze.readers.base import ReadWarning, Restart
from tanalyze.readers.text._lines import Chunk, TextStats
from tanalyze.readers.text._regex import line_index, matches_of, ordered_matches
from tanalyze.readers.text._rows import Rows
from tanalyze.readers.values import short

MAX_EXAMPLES = 3


@dataclass
class ParsedFile:
    """One file as a parser read it."""

    path: Path
    family: str
    rows: Rows
    notes: list[str] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None  # the rank whose lines these are (a launcher's prefixed log), every row's rank
    label: str = ""  # how notes name it among the run's parts ("rank 1")


class TextParser:
    """Base of the per-format parsers: feed chunks, then ``finish``.

    Subclasses set ``family`` and ``lookalike`` (a pattern whose matches are
    lines that look like this format's metric lines) and implement ``feed``.
    In ``feed`` they call :meth:`mark` for every line they read and
    :meth:`anchor` with the step of their main line kind.
    """

    family: ClassVar[str] = "text"
    lookalike: ClassVar[re.Pattern[str] | None] = None
    #: (pattern, kind) pairs; the default ``feed`` calls ``self._on_<kind>(match, chunk)`` in line order.
    patterns: ClassVar[tuple[tuple[re.Pattern[str], str], ...]] = ()
    #: Attributes a subclass sets while reading (counts, the last step seen …) that ``finish`` uses, with how
    #: :meth:`absorb` takes the next file's value: ``"sum"`` (counts), ``"union"`` (sets), ``"last"`` (the
    #: later file's unless None). Kept by :meth:`snapshot` and :meth:`restore`, so that a log read in parts
    #: finishes as one read whole. JSON values (numbers, strings, None, lists, dicts with string keys) or sets.
    state_fields: ClassVar[Mapping[str, str]] = {}

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path.name
        self.rows = Rows()
        self.notes: list[str] = []
        self.warnings: list[ReadWarning] = []
        self.hparams: dict[str, Any] = {}
        self.restarts: list[Restart] = []
        self.parsed_lines = 0
        self._marked: set[int] = set()
        self._last_anchor: dict[int, int] = {}
        self._last_step: int | None = None
        self._handlers = {kind: getattr(self, "_on_" + kind) for _, kind in self.patterns}
        self._reset_file_counts()

    def start_file(self, path: Path) -> None:
        """Continue with another file of the same run (stdout and stderr of one job)."""
        self.path = path
        self.file = path.name
        self.parsed_lines = 0
        self._reset_file_counts()

    def unparsed(self, chunk: Chunk, pos: int) -> None:
        """Record a line of this format that could not be read (for parsers that check their own lines)."""
        start = chunk.text.rfind("\n", 0, pos) + 1
        if chunk.incomplete:
            self._cut_candidates.append((chunk.first_line, chunk.line_at(start)))
            return
        self._unparsed += 1
        if len(self._unparsed_examples) < MAX_EXAMPLES:
            self._unparsed_examples.append((chunk.line_of(start), chunk.line_at(start)))

    def _reset_file_counts(self) -> None:
        self._parsed_before = 0
        self._cut_candidates: list[tuple[int, str]] = []
        self._unparsed = 0
        self._unparsed_examples: list[tuple[int, str]] = []
        self._cut_last_line: tuple[int, str] | None = None
        self._last_line_read = False

    # -- to implement -------------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        handlers = self._handlers
        for kind, match in ordered_matches(chunk.text, self.patterns):
            handlers[kind](match, chunk)

    def finish(self) -> None:
        """Called once after the last chunk (formats that derive steps do it here)."""

    # -- helpers for subclasses ----------------------------------------------------------------
    def mark(self, chunk: Chunk, pos: int) -> None:
        """Record that the line holding ``pos`` was read as metrics."""
        self._marked.add(chunk.text.rfind("\n", 0, pos) + 1)

    def anchor(self, step: int, chunk: Chunk | None, pos: int, rank: int = -1, line: int | None = None,
               anew: bool = False) -> None:
        """Report the step of a main metric line; a step lower than the previous one is a restart (and with
        ``anew``, a line known to begin another training, the same step too)."""
        previous = self._last_anchor.get(rank)
        self._last_anchor[rank] = step
        self._last_step = step
        if previous is not None and (step < previous or (anew and step == previous)):
            where = line if line is not None else (chunk.line_of(pos) if chunk is not None else None)
            at = f" (line {where})" if where is not None else ""
            who = f" on rank {rank}" if rank >= 0 else ""
            self.restarts.append(
                Restart(
                    step=step,
                    file=self.file,
                    detail=f"step {step} logged again after step {previous}{who}{at}; the later values are kept",
                    until=previous,
                )
            )

    def anchors_go_on(self, steps: np.ndarray, rank: int = -1) -> bool:
        """Whether the main-line steps ``steps`` of lines read at once never go back, from the last anchor of
        ``rank`` on (else the caller reads them line by line, where a restart is recorded at its line)."""
        previous = self._last_anchor.get(rank)
        return not len(steps) or not ((previous is not None and steps[0] < previous) or (steps[1:] < steps[:-1]).any())

    def take_whole_chunk(self, codes: np.ndarray, steps: np.ndarray, values: np.ndarray, lines: int,
                         anchors: np.ndarray) -> None:
        """The rows of a chunk whose ``lines`` were all read at once (its main lines' steps ``anchors``, which go
        on): no line of it is left for the look-alike scan."""
        self.rows.extend(codes, steps, values)
        self.parsed_lines += lines
        self.scan_ranges = []
        if len(anchors):
            self.anchor(int(anchors[-1]), None, 0)

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        """False when a cheap count proves every look-alike line of the chunk was read (skips the scan)."""
        return True

    def current_step(self, default: int = 0) -> int:
        """The step of the last main metric line, whatever its rank (for lines that carry none)."""
        return default if self._last_step is None else self._last_step

    def count_note(self, count: int, text: str) -> None:
        if count:
            self.notes.append(f"{count:,} {text}")

    # -- driver side ---------------------------------------------------------------------------
    def end_chunk(self, chunk: Chunk) -> None:
        marked = self._marked
        self.parsed_lines += len(marked)
        if chunk.incomplete:
            if self.parsed_lines > self._parsed_before:
                self._last_line_read = True
            if self._cut_candidates:
                self._cut_last_line = self._cut_candidates[-1]
        self._cut_candidates = []
        if self.lookalike is not None and self.may_have_lookalikes(chunk):
            text = chunk.text
            ranges = self.scan_ranges if self.scan_ranges is not None else [(0, len(text), self.lookalike)]
            found = [m.start() for low, high, lookalikes in _joined(ranges)
                     for lookalike in (lookalikes if isinstance(lookalikes, tuple) else (lookalikes,))
                     for m in matches_of(lookalike, text, low, high, line_index(chunk))]
            for start in sorted({text.rfind("\n", 0, at) + 1 for at in found}.difference(marked)):
                if chunk.incomplete:
                    self._cut_last_line = (chunk.first_line, chunk.line_at(start))
                    continue
                self._unparsed += 1
                if len(self._unparsed_examples) < MAX_EXAMPLES:
                    self._unparsed_examples.append((chunk.line_of(start), chunk.line_at(start)))
        if marked:
            self._marked = set()
        self.scan_ranges = None
        self._parsed_before = self.parsed_lines

    #: Where in the chunk look-alike lines may be left unread, and the look-alike pattern(s) to find them there
    #: (set in ``feed`` by parsers that read some spans of lines at once, whose lines are not marked one by
    #: one); None: the whole chunk, with ``lookalike``.
    scan_ranges: list[tuple[int, int, re.Pattern[str] | tuple[re.Pattern[str], ...]]] | None = None

    # -- resuming (see _parts) --------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What the parser knows at a line boundary, as JSON values in new containers: enough to read on
        from there (:meth:`restore`) and to finish. Subclasses add their own fields to it.

        Rows, restarts and hparams are not in it: the driver takes them from their lists (they only grow).
        """
        return {
            "anchors": [[rank, step] for rank, step in sorted(self._last_anchor.items())],
            "last_step": self._last_step,
            "parsed_lines": self.parsed_lines,
            "unparsed": self._unparsed,
            "examples": [[line, text] for line, text in self._unparsed_examples],
            "cut_last_line": list(self._cut_last_line) if self._cut_last_line is not None else None,
            "last_line_read": self._last_line_read,
            "out_of_range": self.rows.out_of_range,
            "fields": {name: _json_state(getattr(self, name)) for name in self.state_fields},
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take up the state :meth:`snapshot` gave (on a new parser of the same file)."""
        self._last_anchor = {int(rank): int(step) for rank, step in state["anchors"]}
        self._last_step = state["last_step"]
        self.parsed_lines = self._parsed_before = state["parsed_lines"]
        self._unparsed = state["unparsed"]
        self._unparsed_examples = [(line, text) for line, text in state["examples"]]
        cut = state["cut_last_line"]
        self._cut_last_line = (cut[0], cut[1]) if cut is not None else None
        self._last_line_read = state["last_line_read"]
        self.rows.out_of_range = state["out_of_range"]
        for name, value in state["fields"].items():
            setattr(self, name, set(value) if isinstance(getattr(self, name), set) else value)

    def finish_changes_rows(self) -> bool:
        """Whether :meth:`finish`, in the current state, would add rows or change rows read (then a log that
        grew cannot simply have its new rows appended to what was read before). False by default."""
        return False

    def aux_columns(self) -> dict[str, array]:
        """The parser's own columns that grow with the file (one value per logging event …), by name: kept
        with the rows of each part (:mod:`._parts`). None by default."""
        return {}

    def load_aux(self, columns: dict[str, np.ndarray]) -> None:
        """Take up the columns :meth:`aux_columns` gave, for a whole file."""

    def absorb(self, other: TextParser) -> None:
        """Take in ``other``, the parser of the next file of the same job (stdout after stderr), read and
        closed on its own: its rows after these, its counts added, so that one ``finish`` covers both."""
        self.rows.append_rows(other.rows)
        self.rows.out_of_range += other.rows.out_of_range
        self.restarts.extend(other.restarts)
        self.warnings.extend(other.warnings)
        self.notes.extend(other.notes)
        for key, value in other.hparams.items():
            self.hparams.setdefault(key, value)
        for name, how in self.state_fields.items():
            mine, theirs = getattr(self, name), getattr(other, name)
            if how == "sum":
                setattr(self, name, mine + theirs)
            elif how == "union":
                setattr(self, name, mine | theirs)
            elif theirs is not None:
                setattr(self, name, theirs)

    def close_file(self, stats: TextStats) -> None:
        if self._unparsed:
            examples = "; ".join(f"line {n}: {short(text)!r}" for n, text in self._unparsed_examples)
            self.warnings.append(
                ReadWarning(
                    self.file,
                    f"{self._unparsed:,} line(s) look like {self.family} metrics but could not be read, e.g. {examples}",
                    location=f"line {self._unparsed_examples[0][0]}",
                    count=self._unparsed,
                )
            )
        if self._cut_last_line is not None:
            line_no, text = self._cut_last_line
            self.warnings.append(
                ReadWarning(
                    self.file,
                    f"the last line ends without a line break and could not be read (the job was probably "
                    f"stopped while writing it): {short(text)!r}",
                    location=f"line {line_no}",
                )
            )
        elif self._last_line_read and stats.incomplete_last_line is not None:
            self.notes.append("the last line has no line break; it was complete and was read")


def _json_state(value: Any) -> Any:
    """A state field as a JSON value in a new container (a set as a sorted list)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (list, tuple)):
        return [_json_state(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_state(item) for key, item in value.items()}
    return value


def _joined(ranges: list[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """Look-alike scan ranges with each run of touching ranges of one scan made one (a scan per range costs
    more than the characters it reads when ranges are single lines)."""
    out: list[tuple[int, int, Any]] = []
    for low, high, lookalikes in ranges:
        if out and out[-1][1] == low and out[-1][2] is lookalikes:
            out[-1] = (out[-1][0], high, lookalikes)
        else:
            out.append((low, high, lookalikes))
    return out
