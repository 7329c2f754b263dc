"""MosaicML Composer's console (its ``ConsoleLogger``: ``log_to_console=True``, the logger llm-foundry's MPT trainings
print with)::

    [batch=2/100]:
         Train time/batch: 1
         Train time/sample: 256
         Train trainer/device_train_microbatch_size: 16
         Train loss/train/total: 10.5837
         Train metrics/train/LanguageCrossEntropy: 10.5837
         Train throughput/batches_per_sec: 0.1617
         Train time/train: 0.0075
         Train lr-DecoupledAdamW/group0: 0.0000
    [Eval batch=1/12] Eval on eval data
    [Eval batch=12/12] Eval on eval data:
         Eval metrics/eval/LanguageCrossEntropy: 9.8417

A block per logged batch, its header the progress (``[batch=N/M]:`` when the duration is in batches,
``[epoch=E][batch=b/M]:`` in epochs, ``[token=…/…]:`` in tokens), then ``TAB SPACE Train name: value``, each value
as Composer formats it (floats with four decimals); an evaluation's progress at its deciles, then its metrics after
``Eval``. Decisions:

* **step = the trainer's batch count, as Composer's own loggers place each metric** (its TensorBoard and W&B loggers
  take ``state.timestamp.batch`` when the metric is logged): what the trainer logs while the batch runs,
  ``loss/…``, ``metrics/train/…``, ``trainer/…`` and ``memory/…``, at the batches before it (the block's
  ``Train time/batch``, ``N - 1``); what is logged once the batch is counted (the callbacks' ``throughput/…``,
  ``time/train``, ``time/val``, ``time/total``, ``time/remaining_estimate``, ``lr-<optimizer>/group<i>`` and any
  other name) at the batches done, ``N``. So a run read here and from its TensorBoard files has the same points.
  ``N`` is the header's batch count (in epochs: ``(E - 1) × M + b``), else (a header in tokens or samples, an epoch
  without its length) the block's ``time/batch`` plus one, as for a header that cannot be read (named in a warning)
  and a block whose header was lost (a name met again in a body, ``Train`` lines after ``Eval`` ones); a block with
  neither is not read, and named in a warning, as are a header whose count is beyond 2**53 with its block's lines and
  the metric lines before any header. A count lower than the one before is a restart (the later values kept).
* Tags are the names as printed. The progress counters ``time/epoch``, ``time/batch``, ``time/sample``,
  ``time/token`` and their ``…_in_epoch`` are no tags (they are the step's axes); ``time/train``, ``time/val``,
  ``time/total`` (hours so far) and ``time/remaining_estimate`` (hours) are. A value that is no number (text,
  ``None``, a table, an image) is not read, and counted in a note.
* An evaluation's metrics (``Eval metrics/eval/LanguageCrossEntropy`` …) at the batch count of the training block
  before it (Composer evaluates right after that batch), 0 before any.
* The ``Config:`` block between two rules of ``*`` printed at the start (``composer_version`` …, llm-foundry's
  whole configuration) gives the hparams: its unindented ``key: value`` lines.
* No line carries a time: no wall time.

A run's blocks mostly repeat the same names in the same order: each block's body (the lines after its header) is
matched whole by the template of a body seen before (its names and separators as they are, each number a group),
its numbers parsed with all the chunk's at once; a body no template matches is read line by line, and gives one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.base import ReadWarning
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import LARGEST_STEP, NAN, NUMBER, NUMBER_CHARS, config_value, short

__all__ = ["ComposerParser", "ComposerReader", "detect_composer"]

#: the units of a training block's header (``TimeUnit``'s names)
_UNITS = r"(?:epoch|iteration|batch|sample|token|duration|second)"
#: a line that looks like the console's: a metric line, a training block's header, an evaluation's progress
_LOOKALIKE_START = rf"(?:[ \t]+(?:Train|Eval) |\[(?:{_UNITS}=|Eval batch=\d))"
#: a block's header, from its line break: a training block's (in epochs: the epoch, the batch in it, the epoch's
#: length; else: the unit, the count), an evaluation's last progress line, whose metrics follow (its colon), or a line
#: that looks like a training block's header but is not one (its text: its block is not read)
_HEAD = re.compile(
    rf"\n(?:(?:\[(?:epoch=(\d+)\]\[batch=(\d+)(?:/(\d+))?|({_UNITS})=(\d+)/\d+)\]:?"
    r"|\[Eval batch=\d+/\d+\] Eval on [^\n]* data(:))[ \t]*"
    rf"|(\[{_UNITS}=[^\n]*))(?=\n)")
_HEAD_AT_START = re.compile(_HEAD.pattern[2:])
#: a line of a block's body: a metric line (its indent and prefix, name, and number with the blanks after it, or its
#: other value), an evaluation's progress, a line that looks like the console's but is none of these (its text)
_BODY_LINE = re.compile(
    rf"^(?:([ \t]+(?:Train|Eval) )([^\n:]+): (?:({NUMBER_CHARS})[ \t]*+|([^\n]*))"
    r"|\[Eval batch=\d+/\d+\] Eval on [^\n]* data"
    rf"|({_LOOKALIKE_START}[^\n]*))$", re.M)
#: a metric's other value in a body's template: one that is not a number's characters alone
_OTHER_VALUE = rf"(?!{NUMBER_CHARS}[ \t]*+(?:\n|\Z))[^\n]*+"
_DETECT = re.compile(
    rf"^(?:\[(?:epoch=\d+\]\[batch=\d+(?:/\d+)?|{_UNITS}=\d+/\d+)\]|\[Eval batch=\d+/\d+\] Eval on [^\n]* data):\n"
    rf"[ \t]+(?:Train|Eval) [^\n:]+: {NUMBER}[ \t]*$", re.M)
#: the progress counters (the step's axes, no tags)
_COUNTER = re.compile(r"time/(?:epoch|iteration|batch|sample|token)(?:_in_(?:epoch|iteration))?")
#: what the trainer logs while a batch runs (Composer's loggers place it at the batches before it)
_DURING_BATCH = ("loss/", "metrics/train/", "trainer/", "memory/")
_RULE = "*" * 30
_CONFIG_START = f"{_RULE}\nConfig:\n"
_HEADER_START = re.compile(rf"^\[(?:epoch=\d+\]\[batch=|{_UNITS}=\d+/)", re.M)
_CONFIG = re.compile(r"^([A-Za-z_][^:\n]*): ([^\n]*)$", re.M)
#: a block's kind: none yet (lines before any header), training, evaluation, training whose count is not known yet
#: (its time/batch not seen yet), training that cannot be placed (a count too large)
_NONE, _TRAIN, _EVAL, _PENDING, _BAD = 0, 1, 2, 3, 4
#: templates of bodies kept (the most recently used first)
_TEMPLATES = 16


@dataclass
class _Template:
    """A body's lines as one pattern (each number a group), the codes of its numbers' names, how many other values
    it has and the name of the first."""

    pattern: re.Pattern[str]
    codes: np.ndarray
    lines: int
    others: int
    other: str


class ComposerParser(TextParser):
    family = "Composer"
    lookalike = re.compile(rf"^{_LOOKALIKE_START}", re.M)
    #: read every body line by line (not by the templates of bodies seen before); for tests
    line_by_line: ClassVar[bool] = False
    state_fields = {"_block": "last", "_pending": "last", "_last_count": "last", "_last_epoch": "last",
                    "_config": "last", "_evaluations": "sum", "_others": "sum", "_other_example": "last",
                    "_unplaced": "sum", "_unplaced_example": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        #: the block open at the end of the last chunk: its kind, batches done, epoch and header (as printed)
        self._block: list = [_NONE, 0, None, ""]
        #: the metric lines (name, number) of an open training block whose count is not known yet
        self._pending: list[list[str]] = []
        #: the batches done and epoch of the last training block (an evaluation's)
        self._last_count = 0
        self._last_epoch: int | None = None
        self._config = 0  # the Config block's reading (see _read_config)
        self._evaluations = 0
        self._others = 0  # metric lines whose value is no number
        self._other_example = ""
        self._unplaced = 0  # metric lines of blocks with no batch count
        self._unplaced_example = ""
        self._names: dict[str, int] = {}  # the metrics' names met (codes into it)
        self._templates: list[_Template] = []

    def feed(self, chunk: Chunk) -> None:
        text = chunk.text if chunk.text.endswith("\n") else chunk.text + "\n"  # (a piece of a very long line)
        if self._config != 2:
            self._read_config(text)
        heads = [(m.start() + 1, m.end(), m.groups()) for m in _HEAD.finditer(text)]
        first = _HEAD_AT_START.match(text)
        if first is not None:
            heads.insert(0, (0, first.end(), first.groups()))
        reading = _Reading(self, text, *self._block)
        if self._pending:
            names, numbers = zip(*self._pending, strict=True)
            reading.add(np.array([self._code(name) for name in names], dtype=np.int32), list(numbers))
        reading.body(0, heads[0][0] - 1 if heads else len(text) - 1)
        for index, (start, end, (epoch, in_epoch, length, unit, count, colon, lookalike)) in enumerate(heads):
            if lookalike:  # (a header that cannot be read: named, its block's count taken from its time/batch)
                reading.open(_PENDING, -1, reading.epochs[-1], lookalike, start)
                reading.unread(start, end)
            elif colon:
                reading.open(_EVAL, -1, None, "", start)
                reading.lines += 1
                self._evaluations += 1
            else:
                done, epoch_number = _count(epoch, in_epoch, length, unit, count)
                reading.open(_BAD if done > LARGEST_STEP else _TRAIN if done >= 0 else _PENDING, done, epoch_number,
                             text[start:end].strip(), start)
                if done > LARGEST_STEP:
                    reading.unread(start, end)
                else:
                    reading.lines += 1
            reading.body(end + 1, heads[index + 1][0] - 1 if index + 1 < len(heads) else len(text) - 1)
        reading.close_block()
        self._take(chunk, reading, np.array(reading.kinds), np.array(reading.counts, dtype=np.int64), reading.epochs,
                   reading.texts, reading.starts)

    def _take(self, chunk: Chunk, reading: _Reading, kind: np.ndarray, count: np.ndarray, epoch_of: list,
              texts: list[str], starts: list[int]) -> None:
        """The rows of the chunk's blocks (the one open before it first), its restarts, what is left open."""
        codes, block = reading.codes_and_blocks()
        values, valid = parse_some_numbers(" ".join(reading.numbers)) if reading.numbers else (np.empty(0),
                                                                                                np.empty(0, bool))
        names = list(self._names)
        if (~valid).any():
            for code in codes[~valid].tolist():
                self._other(names[code])
        self._place(kind, count, epoch_of, codes, block, values, valid)
        last = len(kind) - 1
        unplaced = (kind[block] == _PENDING) & (block != last)  # (the open block's count may come in the next chunk)
        if unplaced.any():
            self._unplaced += int(unplaced.sum())
            self._unplaced_example = self._unplaced_example or texts[int(block[np.argmax(unplaced)])]
        self._restarts(chunk, kind, count, starts, anchored=self._block[0] == _TRAIN)
        self._block = [int(kind[last]), int(count[last]), epoch_of[last], texts[last]]
        self._pending = ([[names[codes[i]], repr(float(values[i]))] for i in np.flatnonzero((block == last) & valid)]
                         if kind[last] == _PENDING else [])
        self._add_rows(codes, block, kind, count, epoch_of, values, valid & np.isin(kind[block], (_TRAIN, _EVAL)))
        self.parsed_lines += reading.lines
        self.scan_ranges = reading.unread_ranges

    def _place(self, kind: np.ndarray, count: np.ndarray, epoch_of: list, codes: np.ndarray, block: np.ndarray,
               values: np.ndarray, valid: np.ndarray) -> None:
        """The batches done of the training blocks whose header does not say them (from their ``time/batch``), then
        of the evaluations (and their epoch: those of the training block before them)."""
        if (kind == _PENDING).any() and "time/batch" in self._names:
            at = (codes == self._names["time/batch"]) & valid & (kind[block] == _PENDING)
            batches = values[at]
            ok = (batches >= 0) & (batches < LARGEST_STEP) & (batches == np.floor(batches))
            where = block[at][ok]
            count[where] = batches[ok].astype(np.int64) + 1
            kind[where] = _TRAIN
        train = kind == _TRAIN
        before = np.maximum.accumulate(np.where(train, np.arange(len(kind)), -1))
        evaluations = np.flatnonzero(kind == _EVAL)
        if len(evaluations):
            at = before[evaluations]
            count[evaluations] = np.where(at >= 0, count[np.maximum(at, 0)], self._last_count)
            for index, source in zip(evaluations.tolist(), at.tolist(), strict=True):
                epoch_of[index] = epoch_of[source] if source >= 0 else self._last_epoch
        if train.any():
            last = int(np.flatnonzero(train)[-1])
            self._last_count, self._last_epoch = int(count[last]), epoch_of[last]

    def _restarts(self, chunk: Chunk, kind: np.ndarray, count: np.ndarray, starts: list[int], anchored: bool) -> None:
        """Each training block's count as the anchor; a count lower than the one before is a restart, at its
        header. ``anchored``: whether the block open before the chunk was anchored already."""
        train = np.flatnonzero(kind == _TRAIN)
        if anchored:
            train = train[train > 0]
        if not len(train):
            return
        steps = count[train]
        if not self.anchors_go_on(steps):
            previous = self._last_anchor.get(-1)
            for index, step in zip(train.tolist(), steps.tolist(), strict=True):
                if previous is not None and step < previous:
                    self.anchor(previous, None, 0)
                    self.anchor(step, chunk, max(starts[index], 0))
                previous = step
        self.anchor(int(steps[-1]), None, 0)

    def _add_rows(self, codes: np.ndarray, block: np.ndarray, kind: np.ndarray, count: np.ndarray, epoch_of: list,
                  values: np.ndarray, read: np.ndarray) -> None:
        """The rows of the metric lines ``read``: each at its block's count, less one for what the trainer logs
        during a training batch; the counters left out."""
        names = list(self._names)
        used = np.unique(codes[read])
        tags = np.full(len(names), -1, dtype=np.int32)
        kept = [code for code in used.tolist() if not _COUNTER.fullmatch(names[code])]
        tags[kept] = self.rows.codes([names[code] for code in kept])
        during = np.array([name.startswith(_DURING_BATCH) for name in names], dtype=bool)
        keep = read & (tags[codes] >= 0)
        if not keep.any():
            return
        codes, block = codes[keep], block[keep]
        steps = count[block] - (during[codes] & (kind[block] == _TRAIN))
        epochs = np.array([NAN if epoch is None else float(epoch) for epoch in epoch_of])
        self.rows.extend(tags[codes], steps, values[keep], epoch=NAN if np.isnan(epochs).all() else epochs[block])

    def _code(self, name: str) -> int:
        return self._names.setdefault(name, len(self._names))

    def _other(self, name: str) -> None:
        self._others += 1
        self._other_example = self._other_example or name

    def template(self, text: str, start: int, end: int) -> tuple[_Template, re.Match[str]] | None:
        """The template of the body ``text[start:end]`` among those seen before (made the first to try), and its
        match."""
        templates = self._templates
        for index, template in enumerate(templates):
            match = template.pattern.fullmatch(text, start, end)
            if match is not None:
                if index:
                    templates.insert(0, templates.pop(index))
                return template, match
        return None

    def remember(self, found: list[tuple[str, ...]]) -> None:
        """A template of a body whose every line is a metric line (``found``: their groups)."""
        pieces, codes, others, other = [], [], 0, ""
        for indent, name, number, _, _ in found:
            if number:
                pieces.append(f"{re.escape(f'{indent}{name}: ')}({NUMBER_CHARS})[ \\t]*+")
                codes.append(self._code(name))
            else:
                pieces.append(f"{re.escape(f'{indent}{name}: ')}{_OTHER_VALUE}")
                others += 1
                other = other or name
        template = _Template(re.compile("\n".join(pieces)), np.array(codes, dtype=np.int32), len(found), others, other)
        self._templates.insert(0, template)
        del self._templates[_TEMPLATES:]

    def _read_config(self, text: str) -> None:
        """The top-level ``key: value`` lines of the Config block (until a training block, after which there is
        none). ``_config``: 0 not seen, 3 the chunk before ended with a rule (its ``Config:`` may come next), 1 being
        read, 2 read."""
        start = 0
        if self._config in (0, 3):
            follows = self._config == 3 and text.startswith("Config:\n")
            at = -1 if follows else text.find(_CONFIG_START)
            while at > 0 and text[at - 1] != "\n":
                at = text.find(_CONFIG_START, at + 1)
            header = _HEADER_START.search(text)
            if header is not None and (at < 0 or header.start() < at) and not follows:
                self._config = 2
                return
            if at < 0 and not follows:
                self._config = 3 if text.endswith(f"\n{_RULE}\n") or text == f"{_RULE}\n" else 0
                return
            start, self._config = (len("Config:\n") if follows else at + len(_CONFIG_START)), 1
        end = 0 if start == 0 and text.startswith(_RULE) else text.find(f"\n{_RULE}", max(start - 1, 0))
        for key, raw in _CONFIG.findall(text, start, len(text) if end < 0 else end):
            self.hparams.setdefault(key, _yaml_scalar(raw))
        if end >= 0:
            self._config = 2

    def finish(self) -> None:
        if self._block[0] == _PENDING and self._pending:
            self._unplaced += len(self._pending)
            self._unplaced_example = self._unplaced_example or self._block[3]
            self._pending = []
        notes = ["Composer console log: step = the trainer's batch count as Composer's loggers place each metric: "
                 "loss/*, metrics/train/*, trainer/*, memory/* at the batches before the block's batch (its "
                 "time/batch), the rest (throughput, lr, time/train …) at the batches done (its header's batch=N); "
                 "the time/epoch, time/batch, time/sample, time/token … counters are no tags"]
        self.count_note(self._evaluations, "evaluation(s) ('Eval' lines) at the batch count of the training block "
                        "before them")
        self.count_note(self._others, f"metric line(s) whose value is no number (text, None, a table …) not read, "
                        f"e.g. {short(self._other_example, 80)!r}")
        self.notes[:0] = notes
        if self._unplaced:
            self.warnings.append(ReadWarning(
                self.file, f"{self._unplaced:,} metric line(s) of blocks whose batch count is not known (a header "
                f"in tokens or samples and no 'Train time/batch' line) could not be read, e.g. the block "
                f"{short(self._unplaced_example, 80)!r}", count=self._unplaced))


class _Reading:
    """A chunk's blocks as they are read, one after another (the one open before the chunk first): each one's kind,
    count, epoch, header (as printed) and where it begins; their numbers' texts and names' codes, how many numbers
    each has; the lines read and the look-alike lines not read (as ranges for the look-alike scan)."""

    def __init__(self, parser: ComposerParser, text: str, kind: int, count: int, epoch: int | None,
                 header: str) -> None:
        self.parser, self.text = parser, text
        self.kinds, self.counts, self.epochs, self.texts, self.starts = [kind], [count], [epoch], [header], [-1]
        self.numbers: list[str] = []
        self.code_parts: list[np.ndarray] = []
        self.widths: list[int] = []  # how many numbers each block has
        self.width = 0  # (of the block being read)
        self.lines = 0
        self.unread_ranges: list[tuple[int, int, re.Pattern[str]]] = []

    def open(self, kind: int, count: int, epoch: int | None, header: str, start: int) -> None:
        """A block begins (its header at ``start``): the one before is closed."""
        self.close_block()
        self.kinds.append(kind)
        self.counts.append(count)
        self.epochs.append(epoch)
        self.texts.append(header)
        self.starts.append(start)

    def add(self, codes: np.ndarray, numbers: list[str]) -> None:
        self.code_parts.append(codes)
        self.numbers += numbers
        self.width += len(codes)

    def close_block(self) -> None:
        self.widths.append(self.width)
        self.width = 0

    def body(self, start: int, end: int) -> None:
        """The lines of ``text[start:end]`` (a block's, without its header): by a template of a body seen before
        when one matches it whole, else line by line (then a template of it is kept). A block that cannot be read
        (no header before it, or a count too large) has its metric lines named; a name met again in a body begins
        a block whose header was lost (its count taken from its time/batch)."""
        if end <= start:
            return
        parser, text = self.parser, self.text
        if self.kinds[-1] in (_NONE, _BAD):
            for m in _BODY_LINE.finditer(text, start, end):
                if m.group(2) or m.group(5):
                    self.unread(m.start(), m.end())
                else:
                    self.lines += 1
            return
        known = None if parser.line_by_line else parser.template(text, start, end)
        if known is not None:
            template, match = known
            self.add(template.codes, list(match.groups()))
            self.lines += template.lines
            if template.others:
                parser._others += template.others
                parser._other_example = parser._other_example or template.other
            return
        found = []
        codes: list[int] = []
        numbers: list[str] = []
        seen: set[str] = set()
        split = False
        for m in _BODY_LINE.finditer(text, start, end):
            indent, name, number, other, lookalike = m.group(1, 2, 3, 4, 5)
            if lookalike:
                self.unread(m.start(), m.end())
                continue
            self.lines += 1
            if not name:
                continue  # (an evaluation's progress)
            evaluation = indent.endswith("Eval ")
            if name in seen or evaluation != (self.kinds[-1] == _EVAL):  # (the header of the next block was lost)
                self.add(np.array(codes, dtype=np.int32), numbers)
                if evaluation:
                    self.open(_EVAL, -1, None, "", m.start())
                    parser._evaluations += 1
                else:
                    self.open(_PENDING, -1, self.epochs[-1], "(a block whose header was lost)", m.start())
                codes, numbers, seen, split = [], [], set(), True
            seen.add(name)
            found.append(m.groups())
            if number:
                codes.append(parser._code(name))
                numbers.append(number)
            else:
                parser._other(name)
        self.add(np.array(codes, dtype=np.int32), numbers)
        if not parser.line_by_line and found and not split and len(found) == text.count("\n", start, end) + 1:
            parser.remember(found)

    def unread(self, start: int, end: int) -> None:
        self.unread_ranges.append((start, end, self.parser.lookalike))

    def codes_and_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """Each number's name's code and block."""
        codes = np.concatenate(self.code_parts) if self.code_parts else np.empty(0, dtype=np.int32)
        return codes, np.repeat(np.arange(len(self.widths)), self.widths)


def _count(epoch: str, in_epoch: str, length: str, unit: str, count: str) -> tuple[int, int | None]:
    """A training header's batches done (-1 when it does not say them) and epoch."""
    if count:
        return (int(count) if unit == "batch" else -1), None
    if length:
        return (int(epoch) - 1) * int(length) + int(in_epoch), int(epoch)
    return -1, int(epoch)


def _yaml_scalar(raw: str) -> object:
    """A value of the Config block as ``yaml.dump`` writes a scalar."""
    raw = raw.strip()
    if raw in ("true", "false"):
        return raw == "true"
    if raw in ("null", "~", ""):
        return None
    if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return config_value(raw)


def detect_composer(window: str) -> bool:
    """A block's header and its first metric line (two lines of Composer's console)."""
    return _DETECT.search(window) is not None


class ComposerReader(TextReader):
    name = "composer"
    description = ("MosaicML Composer / llm-foundry console ('[batch=2/100]:' then '\\t Train loss/train/total: "
                   "10.5837' …)")
    parser = ComposerParser

    def detect(self, window: str) -> bool:
        return detect_composer(window)
