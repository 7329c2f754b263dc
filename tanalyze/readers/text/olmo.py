"""AI2 OLMo's trainer console (``olmo/train.py``, ``Trainer.log_metrics_to_console``): a block per logged step, its
header line behind the logging prefix of ``olmo/util.py`` (``%(asctime)s``, host and local rank, logger and line,
level, each field ended by a tab: two blanks below) and one indented ``name=value`` line per metric::

    2024-04-17 09:42:26.534  gpu-node-07:0  olmo.train:816  INFO  [step=1/739328]
        train/CrossEntropyLoss=11.25
        train/Perplexity=76,631
        throughput/total_tokens=4,194,304
        System/Peak GPU Memory (MB)=42,133
    2024-08-06 09:59:26.181  intern-studio-160750:0  olmo.train:908  INFO  [step=1/739328,epoch=0]
        optim/total_grad_norm=231.7
        train/CrossEntropyLoss=12.18
    …
    2024-04-17 09:46:15.766  gpu-node-07:0  olmo.train:887  INFO  [eval_step=11/-1]
    2024-04-17 09:46:15.862  gpu-node-07:0  olmo.train:816  INFO  v3-small-ppl-validation
        eval/v3-small-c4_en-validation/CrossEntropyLoss=8.328
        eval/v3-small-c4_en-validation/Perplexity=4,138

In an interactive terminal OLMo logs through its own Rich handler instead, which prints the same message after
``[2024-04-17 09:42:26] INFO     [olmo.train:816, rank=0] `` (the time to the second): read the same way.

Decisions:

* **step = N of the block's ``[step=N/M]``** header (the trainer's global step, counted from 1; ``M``, the
  steps the trainer planned, of the last header is the hparam ``_planned_steps``). The newer header ``[step=N/M,epoch=E]`` gives the rows its epoch ``E`` (counted from
  0) in the epoch column.
* Tags: each line's name as printed: ``train/CrossEntropyLoss`` (the step's loss, reduced across the ranks, not
  smoothed), ``train/Perplexity``, ``train/ZLoss``, ``optim/total_grad_norm`` (newer versions; OLMo keeps every
  other ``optim/`` metric, the learning rates among them, off the console), ``throughput/total_tokens`` (the tokens
  so far), ``throughput/device/tokens_per_second``, ``System/Peak GPU Memory (MB)``, names with blanks and
  parentheses kept. The values are as OLMo rounds them to print (an integer above 1,000, four digits or so below,
  every digit of ``str(value)`` below 0.0001: ``1.7872662283480167e-06``); their thousands separators are read
  (``76,631`` is 76631).
* An evaluation is a block headed by the evaluator's label whose lines are ``eval/…`` metrics (``eval/<dataset>/
  CrossEntropyLoss``, ``eval/downstream/…``): at the step of the last training block before it (OLMo evaluates right
  after that step and logs the results at it), 0 before any. The ``Running evaluation for …`` and ``[eval_step=N/M]``
  progress lines are no metrics.
* The ``Pre-train system metrics`` block (``System/Peak GPU Memory (MB)`` before the first step) is at step 0, where
  OLMo logs it to W&B. One printed after training blocks, by a resumed job appending to the log, is not read (a
  note counts them): the step the job resumed from is not printed, and the step of the block before would get a
  value of another time. An evaluation on load (``eval_on_load``) in such a log is at the previous session's last
  step, for the same reason.
* A block's lines are the lines indented by four blanks right after its header; a block cut by a chunk boundary is
  read whole (its header's kind, time and step carried over).
* Wall time: the header's time stamp (local time read as UTC, as every console reader does).
* A training step lower than the one before (a job resumed from a checkpoint, appending to the log) is a restart:
  recorded, every row kept, the later write of a step winning. With OLMo's ``all_ranks`` log filter every rank
  prints its blocks into the log: a step's last block gives its points.
* A ``[step=`` line that cannot be read (a step beyond 2**53, other text after the header) is named in a warning and
  its block is not read; so is a line of a block read that is not ``name=number``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.text._rows import Rows
from tanalyze.readers.values import (
    LARGEST_STEP,
    NAN,
    NUMBER_PATTERN,
    parse_timestamp,
    parse_timestamps,
)

__all__ = ["OLMoParser", "OLMoReader", "detect_olmo"]

#: the logging prefix of ``olmo/util.py`` when stdout is no terminal (tab-separated; its time a group), or that of
#: its Rich handler in a terminal (the time, the level padded to 8, the logger and line with the rank)
_TAB = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?)\t[^\t\n]*+\t[^\t\n]*+\tINFO\t"
_RICH = r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] INFO +\[[^\]\n]*+\] "
_PREFIX = rf"(?:{_TAB}|{_RICH})"
#: a training block's header: its step and, in newer versions, its epoch
_STEP = r"\[step=(\d+)/-?\d+(?:,epoch=(\d+))?\][ \t]*+"
#: the planned steps of a ``[step=N/M]`` header (at most 15 digits: an exact integer)
_PLANNED = re.compile(r"\[step=\d+/(\d{1,15})[,\]]")
#: every block read, from the line break before its header (the chunk is read with one put before its first line):
#: its time (a group per prefix), then a training header (step, epoch), the pre-train metrics' header, a ``[step=``
#: line that is no header (its text), or an evaluator's label (a line whose next line is an ``eval/`` metric); and
#: its lines (each after its line break)
_BLOCK = re.compile(
    rf"\n{_PREFIX}(?:{_STEP}(?=\n)|(Pre-train system metrics)[ \t]*+(?=\n)|(\[step=[^\n]*+)|([^\n]++)(?=\n    eval/))"
    r"((?:\n    [^\n]*+)*+)")
#: a line of the logging prefix (a label whose block may begin in the next chunk)
_PREFIX_LINE = re.compile(rf"\n{_PREFIX}")
#: the indented lines a chunk begins with (those of a block begun in the chunk before)
_LEADING = re.compile(r"(?:    [^\n]*+\n)*+")
#: a block's line (for the look-alike scan over a block's lines)
_INDENTED = re.compile(r"^    ", re.M)
#: a metric line: its name (no blank first) and its value (the characters a number may have, thousands separators
#: too: loose, checked after)
_VALUE_CHARS = r"[-+.,0-9eEnNaAiIfFtTyY]++"
_METRIC = re.compile(rf"    ([^\s=][^\n=]*+)=({_VALUE_CHARS})[ \t]*+")
#: a comma that is no thousands separator: after no digit, after four digits, or not before exactly three digits
_BAD_COMMA = re.compile(r",(?:(?<!\d,)|(?<=\d{4},)|(?!\d{3}(?!\d)))")
#: letters a number may have besides its exponent (nan, inf): such a value must be a NUMBER
_LETTER = re.compile(r"[nNaAiIfFtTyY]")
#: the characters of values (and the blank between them), digits, and the bytes a name cannot begin with
#: (``[^\s=]``)
_VALUE_CHARS_OR_BLANK = b"-+.,0123456789eEnNaAiIfFtTyY "
_DIGIT_BYTE = np.zeros(256, dtype=bool)
_DIGIT_BYTE[list(b"0123456789")] = True
_NAME_NOT_FIRST = np.zeros(256, dtype=bool)
_NAME_NOT_FIRST[[c for c in range(128) if chr(c).isspace() or chr(c) == "="]] = True
_DETECT = re.compile(rf"\n{_PREFIX}{_STEP}\n    [^\s=][^\n=]*+=")
#: what a block is: read (a training block, the pre-train metrics, an evaluation), a label whose block may begin in
#: the next chunk, a block whose header was not read
_READ = frozenset({"train", "pretrain", "eval"})
#: a step of at most this many digits is an exact double (2**53 has 16): the steps of a chunk read at once
_EXACT_DIGITS = 15
#: more digits than this are no step (and too many for ``int()``)
_STEP_DIGITS = 17


def _value(text: str) -> float | None:
    """A metric's value as printed (thousands separators read), None when it is no number."""
    if "," in text:
        if _BAD_COMMA.search(text):
            return None
        text = text.replace(",", "")
    return float(text) if NUMBER_PATTERN.fullmatch(text) else None


def _metric_lines(text: str) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """The names, values and places (of the line break before each) of the metric lines of ``text`` (lines of
    blocks, each after its line break and four blanks), all at once; None when a line is not ``name=number`` as
    :data:`_METRIC` reads it, or not of the common form (non-ASCII text, blanks after the number: read line by line).
    The names and values are those :data:`_METRIC` and :func:`_value` give."""
    if not text:
        return [], np.empty(0), np.empty(0, np.int64)
    if not text.isascii():
        return None
    data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    breaks = np.flatnonzero(data == 10)
    equals = np.flatnonzero(data == 61)
    if len(equals) != len(breaks):
        return None
    ends = np.append(breaks[1:], len(data))
    if not ((equals > breaks + 5) & (equals + 1 < ends)).all() or _NAME_NOT_FIRST[data[breaks + 5]].any():
        return None  # (one "=" a line, after a name, before a value; the name begins with no blank)
    parts = text.replace("\n    ", "=").split("=")  # ("", a name, its value, the next name …)
    tokens = " ".join(parts[2::2])
    if tokens.encode("ascii").translate(None, _VALUE_CHARS_OR_BLANK):
        return None
    if "," in tokens:  # (thousands separators: after one to three digits, before three)
        chars = np.frombuffer((tokens + "    ").encode("ascii"), dtype=np.uint8)
        commas = np.flatnonzero(chars == 44)
        digit = _DIGIT_BYTE
        before = digit[chars[commas - 1]]  # (before the first character: the blanks put after the last)
        if (~before | (before & digit[chars[commas - 2]] & digit[chars[commas - 3]] & digit[chars[commas - 4]])
                | ~digit[chars[commas + 1]] | ~digit[chars[commas + 2]] | ~digit[chars[commas + 3]]
                | digit[chars[commas + 4]]).any():
            return None
        tokens = tokens.replace(",", "")
    values, valid = parse_some_numbers(tokens)
    if len(values) != len(equals):
        return None  # (a blank inside a value, "2 31.7": two tokens of one line)
    if not valid.all() or (_LETTER.search(tokens) and not all(
            NUMBER_PATTERN.fullmatch(token) for token in tokens.split(" ") if _LETTER.search(token))):
        return None  # (a blank after a number, or a nan or inf spelled otherwise)
    return parts[1::2], values, breaks


def _step(text: str) -> int | None:
    """A header's step, None when it is beyond the largest step read."""
    if len(text) > _STEP_DIGITS:
        return None
    step = int(text)
    return step if step <= LARGEST_STEP else None


class _Lines:
    """The metric lines of a chunk read one by one, added to the rows at once (in order)."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.steps: list[int] = []
        self.values: list[float] = []
        self.epochs: list[float] = []
        self.walls: list[float] = []

    def add_to(self, rows: Rows) -> None:
        if self.tags:
            epochs = self.epochs if any(epoch == epoch for epoch in self.epochs) else NAN  # (NaN: no epoch)
            rows.extend(rows.codes(self.tags), self.steps, self.values, epoch=epochs, wall=self.walls)


class OLMoParser(TextParser):
    family = "OLMo"
    lookalike = re.compile(r"\[step=")
    #: read every block on its own (not a chunk's blocks at once); for tests
    line_by_line: ClassVar[bool] = False
    state_fields = {"_open": "last", "_epoch": "last", "_evaluations": "sum", "_pretrain": "sum",
                    "_resumed_pretrain": "sum", "_planned": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        #: the block the last chunk ended in (its kind and time), whose lines may go on in the next chunk
        self._open: list[str] | None = None
        self._epoch: float | None = None  # the epoch of the last training block
        self._evaluations = 0
        self._pretrain = 0
        self._resumed_pretrain = 0  # pre-train metrics after a training block (a resumed job's), not read
        self._planned: int | None = None  # the M of the last [step=N/M] header: the steps the trainer planned

    def feed(self, chunk: Chunk) -> None:
        text = chunk.text if chunk.text.endswith("\n") else chunk.text + "\n"  # (a piece of a very long line)
        #: where lines of blocks read are, for the look-alike scan to name those not read (with every [step= line)
        self._scan: list[tuple[int, int, re.Pattern[str]]] = [(0, len(text), self.lookalike)]  # type: ignore[list-item]
        start, read = self._leading(chunk, text)
        padded = "\n" + text  # (every header after a line break)
        if self.line_by_line or not read or not self._at_once(text, padded):
            self._block_by_block(chunk, padded)
            self.scan_ranges = self._scan
        self._open = self._ending(text, padded, start)
        last = _PLANNED.search(text, max(0, text.rfind("[step=")))
        if last is not None:
            self._planned = int(last.group(1))

    # -- a block cut by the chunk's boundaries --------------------------------------------------------------------
    def _leading(self, chunk: Chunk, text: str) -> tuple[int, bool]:
        """Read the indented lines the chunk begins with as lines of the block the last chunk ended in; where they
        end, and whether every one of them was read or is no block's."""
        if not text.startswith("    "):
            return 0, True
        end = _LEADING.match(text).end()  # type: ignore[union-attr]
        opened = self._open
        if opened is None:
            return end, True
        read = True
        kind, stamp = opened
        if kind == "label":  # (a label whose lines begin here: an evaluation when they are eval/ metrics)
            kind = "eval" if text.startswith("    eval/") else ""
            self._evaluations += kind == "eval"
            self.parsed_lines += kind == "eval"  # (its header, read in the chunk before)
        if kind in _READ:
            lines = _Lines()
            texts = text[:end].split("\n")[:-1]
            self._read_lines(chunk, texts, 0, self.current_step(0), self._epoch_now(), parse_timestamp(stamp), lines)
            lines.add_to(self.rows)
            read = len(lines.tags) == len(texts)
            self._scan.append((0, end, _INDENTED))
        self._open = [kind, stamp] if kind else None
        return end, read

    def _ending(self, text: str, padded: str, start: int) -> list[str] | None:
        """The block the chunk ends in (its kind and time), None when its last line is no block's."""
        if start >= len(text):  # (every line of the chunk was of the block the last chunk ended in)
            return self._open
        end = len(text) - 1
        last = at = text.rfind("\n", 0, end) + 1
        while at > start and text.startswith("    ", at):
            at = text.rfind("\n", 0, at - 1) + 1
        m = _BLOCK.match(padded, at)  # (the block of the last line that is not indented, to the chunk's end)
        if m is None:
            prefix = _PREFIX_LINE.match(padded, at) if at == last else None
            return None if prefix is None else ["label", prefix.group(1) or prefix.group(2)]
        stamp = m.group(1) or m.group(2)
        if m.group(3):
            return ["train" if _step(m.group(3)) is not None else "unread", stamp]
        if m.group(5):  # (not read after a training block: see _block_by_block)
            return ["pretrain" if self._last_step is None else "unread", stamp]
        return ["unread" if m.group(6) else "eval", stamp]

    def _epoch_now(self) -> float:
        return NAN if self._epoch is None else self._epoch

    # -- a chunk's blocks at once ------------------------------------------------------------------------------------
    def _at_once(self, text: str, padded: str) -> bool:
        """Add the rows of every block of the chunk when all their lines read, no ``[step=`` line is left and the
        training steps go on from the last; False (nothing added) otherwise."""
        found = _BLOCK.findall(padded)
        if not found:
            if "[step=" in text:
                return False
            self.scan_ranges = []
            return True
        tabs, riches, step_texts, epoch_texts, pretrains, lookalikes, labels, bodies = zip(*found, strict=True)
        if any(lookalikes):
            return False
        train_texts = list(filter(None, step_texts))
        if text.count("[step=") != len(train_texts):
            return False  # (a [step= line that is no header)
        if train_texts and max(map(len, train_texts)) > _EXACT_DIGITS:
            return False
        train_steps = (parse_numbers(" ".join(train_texts)).astype(np.int64) if train_texts  # type: ignore[union-attr]
                       else np.empty(0, np.int64))
        if not self.anchors_go_on(train_steps):
            return False  # (a restart, recorded at its line)
        if any(pretrains) and (self._last_step is not None or (train_texts and step_texts.index(train_texts[0])
                                                                < max(i for i, p in enumerate(pretrains) if p))):
            return False  # (pre-train metrics after a training block: not read)
        metrics = _metric_lines("".join(bodies))
        if metrics is None:
            return False  # (a line that is no metric, or not of the common form)
        names, values, starts = metrics
        lines = len(names)
        blocks = len(found)
        if lines:
            train = np.array(list(map(bool, step_texts)))
            steps = np.empty(blocks, np.int64)
            steps[train] = train_steps
            epochs = None
            if any(epoch_texts) or self._epoch is not None:
                epochs = parse_some_numbers(" ".join(epoch or "nan" for epoch in epoch_texts))[0]
            if len(train_texts) < blocks:  # (evaluations: at the training step before them, or the last chunk's)
                before = np.maximum.accumulate(np.where(train, np.arange(blocks), -1))
                first = before < 0
                steps = np.where(first, self.current_step(0), steps[np.maximum(before, 0)])
                if epochs is not None:
                    epochs = np.where(first, self._epoch_now(), epochs[np.maximum(before, 0)])
            stamps = tabs if not any(riches) else [tab or rich for tab, rich in zip(tabs, riches, strict=True)]
            walls = np.array(parse_timestamps(stamps), dtype=np.float64)
            block = np.searchsorted(np.cumsum(list(map(len, bodies))), starts, side="right")
            epoch = epochs[block] if epochs is not None and not np.isnan(epochs).all() else NAN
            tags = list(dict.fromkeys(names))  # (a few names, repeated block after block: coded once each)
            code = dict(zip(tags, self.rows.codes(tags), strict=True))
            self.rows.extend(list(map(code.__getitem__, names)), steps[block], values, epoch=epoch, wall=walls[block])
        if train_texts:
            self.anchor(int(train_steps[-1]), None, 0)
            last = epoch_texts[max(i for i, text in enumerate(step_texts) if text)]
            self._epoch = float(last) if last else None
        self._pretrain += len(list(filter(None, pretrains)))
        self._evaluations += len(list(filter(None, labels)))
        self.parsed_lines += blocks + lines
        self.scan_ranges = []  # (every [step= line was read)
        return True

    # -- block by block ------------------------------------------------------------------------------------------
    def _block_by_block(self, chunk: Chunk, padded: str) -> None:
        """Every block of the chunk on its own: a restart recorded at its line, each line read marked (the
        look-alike scan names every ``[step=`` line and every line of a block read that was not)."""
        lines = _Lines()
        for m in _BLOCK.finditer(padded):
            at = m.start()  # (where its header begins in the chunk: the text read has one character more before)
            step_text, epoch_text, pretrain, lookalike = m.group(3, 4, 5, 6)
            if lookalike:
                continue
            if step_text:
                step = _step(step_text)
                if step is None:
                    continue
                self.anchor(step, chunk, at)
                self._epoch = float(epoch_text) if epoch_text else None
            else:
                if pretrain and self._last_step is not None:  # (a resumed job's, appended: its step is not printed)
                    self._resumed_pretrain += 1
                    continue
                step = self.current_step(0)
                if pretrain:
                    self._pretrain += 1
                else:
                    self._evaluations += 1
            self.mark(chunk, at)
            self._read_lines(chunk, m.group(8).split("\n")[1:], m.start(8), step, self._epoch_now(),
                             parse_timestamp(m.group(1) or m.group(2)), lines)
            self._scan.append((m.start(8), m.end(8), _INDENTED))
        lines.add_to(self.rows)

    def _read_lines(self, chunk: Chunk, texts: list[str], at: int, step: int, epoch: float, wall: float,
                    lines: _Lines) -> None:
        """The metric lines ``texts`` of one block, the first beginning at ``at`` in the chunk (each read marked: the
        look-alike scan names the others)."""
        for text in texts:
            m = _METRIC.fullmatch(text)
            value = _value(m.group(2)) if m is not None else None
            if value is not None:
                lines.tags.append(m.group(1))  # type: ignore[union-attr]
                lines.steps.append(step)
                lines.values.append(value)
                lines.epochs.append(epoch)
                lines.walls.append(wall)
                self.mark(chunk, at)
            at += len(text) + 1

    def finish(self) -> None:
        if self._planned is not None and self._planned > 0:
            self.hparams["_planned_steps"] = self._planned
        notes = ["OLMo console: step = N of each '[step=N/M]' block; tags as printed (train/CrossEntropyLoss, "
                 "throughput/…, System/Peak GPU Memory (MB)), values as OLMo rounds them to print"]
        self.count_note(self._evaluations, "evaluation block(s) (eval/…) at the step of the training block before "
                        "them")
        self.count_note(self._pretrain, "'Pre-train system metrics' block(s) at step 0")
        self.count_note(self._resumed_pretrain, "'Pre-train system metrics' block(s) after training blocks (a resumed "
                        "job appending to the log) not read: the step it resumed from is not printed")
        self.notes[:0] = notes


def detect_olmo(window: str) -> bool:
    """Two training blocks of OLMo's trainer: a ``[step=N/M]`` header behind its logging prefix, a metric line
    under it."""
    return at_least_two(_DETECT.finditer("\n" + window))


class OLMoReader(TextReader):
    name = "olmo"
    cache_version = 5  # 5: the planned steps of the last '[step=N/M]' header as the hparam _planned_steps
    description = ("AI2 OLMo trainer console ('… olmo.train:816  INFO  [step=1/739328]' blocks of "
                   "'    train/CrossEntropyLoss=11.25' lines)")
    parser = OLMoParser

    def detect(self, window: str) -> bool:
        return detect_olmo(window)
