"""MaxText's training console (its metric logger through ``max_logging.log``: a ``print`` in older trees, absl's
``logging.info`` in newer ones, its lines then behind absl's prefix)::

    completed step: 2, seconds: 5.658, TFLOP/s/device: 135.158, Tokens/s/device: 8687.815, total_weights: 196608, loss: 11.689
    To see full metrics 'tensorboard --logdir=gs://bucket/run/tensorboard/'
    eval metrics after step: 9, loss=10.331, total_weights=983040.0
    I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: 0.631, TFLOP/s/device: 5688.282, Tokens/s/device: 311629.521, total_weights: 1572864, loss: 12.979, lm_loss: 12.979, perplexity: 433358.281
    I1207 09:32:12.565015 140687918746496 metric_logger.py:302] Completed eval after train step 10, loss=6.006, perplexity=405.969, total_weights=512.0, avg_z_loss=0.000

Decisions:

* **step = the completed step** ``N`` of ``completed step: N``, 0-based as MaxText counts its optimizer steps. Older
  trees compile in the first step: their step 0 includes XLA's compilation (its ``seconds`` tens of seconds, its
  throughput low) and step 1 looks very fast (asynchronous dispatch). Newer ones (maxtext 0.2.5) compile the step
  before the loop, but a batch-size ramp-up compiles again at each new size, and a resumed job's first step compiles
  too. Such steps are kept as printed, real points of the run, and a note says so.
* Every ``name: number`` of a training line is a tag by its name as printed: ``seconds`` (the time of the step),
  ``TFLOP/s/device``, ``Tokens/s/device``, ``total_weights`` (the batch's non-padding target tokens), ``loss``, and
  what a version or an option adds (``lm_loss``, ``perplexity``; ``moe_lb_loss``; ``main_model_loss``, ``mtp_loss``;
  the oldest trees' ``TFLOP/s``); elastic training's ``live slice count`` as ``live_slice_count``; in the
  ``log_step_diagnostics`` part ``diag: raw_grad_norm=… grad_norm=… …`` each ``name=number`` a tag by its name (an
  ``n/a``, a diagnostic not computed, no point). The lines of the batch-size ramp-up (``[Rampup Batch Size Phase],
  completed step: …``, without throughput) and of a profiler's boundary steps (``completed profiler
  activation/deactivation step: N, …``, without ``seconds`` and throughput) are training lines too.
* An evaluation's summary, ``eval metrics after step: N, loss=…, total_weights=…`` (in newer trees ``Completed eval
  after train step N, loss=…, perplexity=…, …``), is ``eval/<name>`` at step ``N``, the step it follows (a percent
  sign after ``avg_mtp_acceptance_rate`` left out). MaxText writes a step's line when the next step is recorded, so
  an evaluation's summary and ``completed step: N`` come in either order: its step says where it belongs, not its
  place. The running averages of each evaluation batch (``Completed eval step: k, …, running loss=…``, at the
  batch's index) are not read: the summary holds their last.
* The ``To see full metrics 'tensorboard --logdir=…'`` lines are no metrics, not read.
* No wall time: the print-era lines carry none, and absl's prefix (``I%m%d %H:%M:%S.%f``) has a month and a day but
  no year, so it makes no point in time (as everywhere a logging prefix without a date is only removed); a note
  counts the lines read behind it.

A training loop prints every step's line from one template: a chunk's lines are found by one pattern made from its
first training line (its text, each number a group), and the numbers of all the lines of that template are parsed
column by column at once; a line of another template, an evaluation, a line that cannot be read are read on their own.
"""

from __future__ import annotations

import functools
import re
from itertools import chain, compress
from operator import itemgetter
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._pairs import PAIR
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER_CHARS, NUMBER_ONCE, NUMBER_PATTERN

__all__ = ["MaxTextParser", "MaxTextReader", "detect_maxtext"]

#: absl's (and glog's) line prefix: ``I0811 21:54:55.531340 138304841739136 metric_logger.py:226] `` (its level a
#: group: the lines read behind it are counted)
_ABSL = r"(?:([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\n]*\] )?"
#: how a training line begins, up to its step (the ramp-up's mark and a profiler boundary's words optional)
_TRAINING = r"(?:\[Rampup Batch Size Phase\], )?completed (?:profiler activation/deactivation )?step: "
#: how an evaluation's summary begins, up to its step (older trees, and newer)
_EVALUATION = r"(?:eval metrics after step: |Completed eval after train step )"
_NAME = r"[A-Za-z_][\w.@/-]{0,127}+"
_N = NUMBER_ONCE
#: a part of a training line: a ``name: number`` pair, elastic training's live slices, ``log_step_diagnostics``'
#: ``diag: name=number name=n/a …``
_PART = (rf"(?:{_NAME}: {_N}|live slice count: \d+"
         rf"|diag: {_NAME}=(?:{_N}|n/a)(?: {_NAME}=(?:{_N}|n/a))*)")
#: a line read, after its absl prefix: a training line (its step, its parts, a trailing comma kept), an evaluation's
#: summary (its step, its ``, name=number`` pairs, a percent sign after a number kept)
_ONE = re.compile(rf"{_TRAINING}(\d+), ((?:{_PART}, )*{_PART}(?:,[ \t]*)?)[ \t]*"
                  rf"|{_EVALUATION}(\d+)((?:, ?{_NAME}={_N}%?)+),?[ \t]*")
#: every line that begins as a training line or an evaluation (read or not), from its line break (see ._findall):
#: its absl level, its text after the prefix
_LINE = re.compile(rf"\n{_ABSL}((?:{_TRAINING}|{_EVALUATION})[^\n]*)(?=\n)")
_LINE_AT_START = re.compile(_LINE.pattern[2:])
_LOOKALIKE_START = rf"(?:[IWEF]\d{{4}} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\n]*\] )?(?:{_TRAINING}|{_EVALUATION})"
#: a training line as it is read (for ``detect``)
_TRAINING_LINE = re.compile(rf"^{_ABSL}{_TRAINING}(\d+), (?:{_PART}, )*{_PART}(?:,[ \t]*)?[ \t]*$", re.M)
#: a number of a training line, after its ``: `` or ``=``
_VALUE = re.compile(rf"(?<=: |.=)({NUMBER_ONCE})(?=[, ]|$)")
#: any run of a number's characters, nan and inf's spelled every way: a field of a line of the chunk's template,
#: checked when it is parsed (``float()`` takes such a run exactly when ``NUMBER`` matches it, but for a spelling of
#: nan or inf ``NUMBER`` has not, looked at when a field has an ``n``)
_NUMBER_CHARS = rf"({NUMBER_CHARS})"
#: no training line in a chunk: no template
_NO_TEMPLATE = ("(?!)", ())


def _as_pairs(rest: str) -> str:
    """A training line's parts as ``name: number`` pairs: ``live slice count`` as ``live_slice_count``, the
    diagnostics' ``name=number`` each a pair (``n/a``, no number, then no pair)."""
    rest = rest.replace("live slice count: ", "live_slice_count: ")
    head, diag, tail = rest.partition("diag: ")
    if not diag:
        return rest
    diagnostics, comma, after = tail.partition(",")
    return head + ", ".join(part.replace("=", ": ") for part in diagnostics.split()) + comma + after


def _template(rest: str) -> tuple[str, tuple[str, ...]]:
    """The parts of a training line (``rest``, as ``_ONE`` took it) as a pattern: its text as it is, each number a
    group of any number's characters; and the tags of the numbers. A line it matches whose numbers are all numbers
    has exactly those tags with those numbers, as read on its own (a piece after a number begins with a comma or a
    blank, or ends the line). ``_NO_TEMPLATE`` when its numbers are not those of its pairs."""
    names = tuple(name for name, _ in PAIR.findall(_as_pairs(rest)))
    values = list(_VALUE.finditer(rest))
    if len(values) != len(names):
        return _NO_TEMPLATE  # (not met: every number of a part is a pair's)
    pieces, at = [], 0
    for m in values:
        pieces += [re.escape(rest[at:m.start()]), _NUMBER_CHARS]
        at = m.end()
    pieces.append(re.escape(rest[at:]))
    return "".join(pieces), names


@functools.lru_cache(maxsize=32)
def _chunk_pattern(body: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Every line ``_LINE`` finds, from its line break: its absl level; a training line of the template ``body``:
    its step and its numbers; any other: its text after the prefix. And the same line at a text's start."""
    line = rf"{_ABSL}(?:{_TRAINING}(\d+), {body}[ \t]*|((?:{_TRAINING}|{_EVALUATION})[^\n]*))(?=\n)"
    return re.compile("\n" + line), re.compile(line)


class MaxTextParser(FindallParser):
    """The lines of a chunk found by one pattern, its first training line's template (its text with other
    numbers): the numbers of the lines of that template read at once, column by column; every other line (an
    evaluation, a line of another template, one that cannot be read) on its own."""

    family = "MaxText"
    lookalike = re.compile(r"^" + _LOOKALIKE_START, re.M)
    line = _LINE
    lookalike_line = re.compile(r"\n" + _LOOKALIKE_START)
    state_fields = {"_evaluations": "sum", "_behind_absl": "sum"}
    #: read every line on its own (no template); for tests
    line_by_line: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._evaluations = 0
        self._behind_absl = 0
        self._found = 0
        self._tags: tuple[str, ...] = ()

    def count_lookalikes(self, text: str) -> int:
        return self._found  # (every line found is a look-alike line: no second scan)

    def find_lines(self, text: str) -> list[tuple[str, ...]]:
        body, self._tags = _NO_TEMPLATE if self.line_by_line else _first_template(text)
        pattern, at_start = _chunk_pattern(body)
        found = pattern.findall(text)
        head = at_start.match(text)
        if head is not None:
            found.insert(0, head.groups(""))
        return found

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        self._found = len(found)
        if not found:
            return 0, 0
        others = list(map(itemgetter(len(found[0]) - 1), found))  # (columns one by one: zip(*found) is slower)
        unread: list[int] = []
        alone = _Alone()
        templated = found
        indices = None
        if any(others):
            for index in compress(range(len(found)), others):
                if not alone.read(index, others[index]):
                    unread.append(index)
            self._evaluations += alone.evaluations
            mask = list(map(bool, map(itemgetter(1), found)))
            templated = list(compress(found, mask))
            indices = np.flatnonzero(np.array(mask, dtype=bool))
        at_once = _read_at_once(templated, indices, unread) if templated else None
        self.unread_matches.update(unread)
        self._anchor(chunk, text, at_once, alone)
        first = len(self.rows)
        codes = self.rows.codes(self._tags)
        if at_once is not None:
            lines, line_steps, matrix = at_once
            self.rows.extend(np.tile(np.array(codes, dtype=np.int32), len(lines)), np.repeat(line_steps, len(codes)),
                             matrix.ravel())
        if alone.tags:
            self.rows.extend(self.rows.codes(alone.tags), alone.steps, alone.values)
            if at_once is not None:  # (the rows in line order)
                placed = np.concatenate((np.repeat(at_once[0], len(codes)), np.array(alone.lines, dtype=np.int64)))
                self.rows.reorder(first, np.argsort(placed, kind="stable"))
        levels = list(map(itemgetter(0), found))
        self._behind_absl += len(found) - levels.count("") - sum(levels[index] != "" for index in unread)
        read = len(found) - len(unread)
        return read, read

    def _anchor(self, chunk: Chunk, text: str, at_once: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                alone: _Alone) -> None:
        """Report the step of every training line read, in line order: a step that goes back is a restart, at its
        line."""
        lines = [at_once[0]] if at_once is not None else []
        steps = [at_once[1]] if at_once is not None else []
        if alone.mains:
            lines.append(np.array([line for line, _ in alone.mains], dtype=np.int64))
            steps.append(np.array([step for _, step in alone.mains], dtype=np.int64))
        if not lines:
            return
        line_array, step_array = np.concatenate(lines), np.concatenate(steps)
        if len(lines) > 1:
            order = np.argsort(line_array, kind="stable")
            line_array, step_array = line_array[order], step_array[order]
        if not self.anchors_go_on(step_array):
            previous = self._last_step
            for k in range(len(step_array)):  # (a restart: recorded at its line)
                step = int(step_array[k])
                if previous is not None and step < previous:
                    self.anchor(previous, None, 0)
                    self.anchor(step, chunk, self.match_start(text, int(line_array[k])))
                previous = step
        self.anchor(int(step_array[-1]), None, 0)

    def finish(self) -> None:
        notes = ["MaxText training log: step = the completed step (0-based); tags as printed (seconds, TFLOP/s/device, "
                 "Tokens/s/device, total_weights, loss …); a step that compiled (step 0 in older trees, a resumed job's "
                 "first) is kept as printed, its seconds long and its throughput low"]
        self.count_note(self._evaluations, "evaluation(s) as eval/<name> at the step they follow")
        self.count_note(self._behind_absl, "line(s) read behind absl's prefix, whose time has no year: no wall time")
        self.notes[:0] = notes


def _first_template(text: str) -> tuple[str, tuple[str, ...]]:
    """The template of the chunk's first training line that can be read; ``_NO_TEMPLATE`` when none."""
    head = _LINE_AT_START.match(text)
    for m in chain([head] if head is not None else [], _LINE.finditer(text)):
        one = _ONE.fullmatch(m.group(2))
        if one is not None and one.group(1) and int(one.group(1)) <= LARGEST_STEP:
            return _template(one.group(2))
    return _NO_TEMPLATE


def _read_at_once(lines: list[tuple[str, ...]], indices: np.ndarray | None, unread: list[int]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The lines of the chunk's template (their groups; ``indices``: which of the chunk's, None for all): their
    indices, steps and numbers (a line per row); those that cannot be read (a field that is no number, a step past
    ``LARGEST_STEP``) put in ``unread``. None when none can be read."""
    count = len(lines)
    indices = np.arange(count) if indices is None else indices
    steps, _ = parse_some_numbers(" ".join(map(itemgetter(1), lines)))  # (digits: exact up to 15 of them)
    keep = steps < LARGEST_STEP
    if not keep.all():  # (a step that may be past the largest read: read exactly)
        exact = [int(line[1]) for line in lines]
        keep = np.array([step <= LARGEST_STEP for step in exact], dtype=bool)
        steps = np.array([step if step <= LARGEST_STEP else 0 for step in exact], dtype=np.float64)
    width = len(lines[0]) - 3
    matrix = np.empty((count, width))
    for column in range(width):
        joined = " ".join(map(itemgetter(column + 2), lines))
        matrix[:, column], valid = parse_some_numbers(joined)
        if "n" in joined or "N" in joined:  # (every spelling of nan and inf has one; float() takes more of them)
            valid &= np.fromiter(map(bool, map(NUMBER_PATTERN.fullmatch, map(itemgetter(column + 2), lines))), bool, count)
        keep &= valid
    step_array = steps.astype(np.int64)
    if not keep.all():
        unread += indices[~keep].tolist()
        indices, step_array, matrix = indices[keep], step_array[keep], matrix[keep]
        if not len(indices):
            return None
    return indices, step_array, matrix


class _Alone:
    """The lines of a chunk read on their own: their rows (tags, steps, values and each row's line), the
    training lines (line, step) and the evaluations counted."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.steps: list[int] = []
        self.values: list[float] = []
        self.lines: list[int] = []
        self.mains: list[tuple[int, int]] = []
        self.evaluations = 0

    def read(self, index: int, text: str) -> bool:
        """The line of match ``index`` (its text after the prefix): a training line's pairs, an evaluation's as
        ``eval/<name>``; False for a line that cannot be read."""
        m = _ONE.fullmatch(text)
        if m is None:
            return False
        step = int(m.group(1) or m.group(3))
        if step > LARGEST_STEP:  # (no exact step: not read, named)
            return False
        if m.group(1):
            pairs, prefix = PAIR.findall(_as_pairs(m.group(2))), ""
            self.mains.append((index, step))
        else:  # (its pairs as ``name: number``: no name has an "=" or a ":")
            pairs, prefix = PAIR.findall(m.group(4).replace("=", ": ")), "eval/"
            self.evaluations += 1
        self.tags += [prefix + name for name, _ in pairs]
        self.steps += [step] * len(pairs)
        self.values += [float(number) for _, number in pairs]
        self.lines += [index] * len(pairs)
        return True


def detect_maxtext(window: str) -> bool:
    """Two training lines of MaxText."""
    return at_least_two(_TRAINING_LINE.finditer(window))


class MaxTextReader(TextReader):
    name = "maxtext"
    description = ("MaxText training console ('completed step: 2, seconds: 5.658, TFLOP/s/device: 135.158, "
                   "Tokens/s/device: …, total_weights: 196608, loss: 11.689')")
    parser = MaxTextParser

    def detect(self, window: str) -> bool:
        return detect_maxtext(window)
