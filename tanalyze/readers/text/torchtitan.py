"""torchtitan's training console (``torchtitan/train.py``, its ``MetricsProcessor`` in
``torchtitan/components/metrics.py``), as ``run_train.sh`` (``torchrun --role rank --tee 3``) leaves it::

    [rank0]:[titan] 2025-03-12 11:10:21,511 - root - INFO - step: 22  loss:  6.2250  memory:  1.41GiB(1.79%)  tps: 193,831  tflops: 18.36  mfu: 1.86%
    [rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%
    [rank0]:[titan] 2026-05-18 16:05:01,369 - root - INFO - validate step: 24  loss:  2.9877  memory:  9.46GiB(64.99%)  tps: 19,628

Each label has a colour code before it unless ``--metrics.disable_color_printing`` is set; the colour codes are
removed with the other escapes before any line is read. Versions differ. Those of 2024 have no ``[titan]`` before
the time, print ``wps:`` for ``tps:`` and no ``tflops``. Later ones add ``grad_norm`` and print the loss to five
places. The newest log under a module's name (``torchtitan.trainer``) rather than ``root``, and print ``--`` for a
value not measured. Some print ``mfu: N/A`` when the device's peak FLOPS is unknown.

Decisions:

* **step = the printed step** (optimizer steps counted from 1; a line at step 1 and every ``metrics.log_freq``).
* Tags: ``loss`` (the step's loss averaged over the data-parallel ranks), ``grad_norm``, ``memory_gib`` (the peak
  reserved device memory since the last line, GiB) and ``memory_pct`` (the same in percent of the device), ``tps``
  (tokens per second per device; its thousands separators read, ``11,872`` is 11872; the older ``wps`` is the same
  number and is read as ``tps``), ``tflops``, ``mfu`` (in percent, as printed). A value printed as ``N/A`` or ``--``
  is not read (a note counts them). Any other ``name: number`` a version or fork adds is a tag by its name.
* A ``validate step: N`` line is ``validation/loss``, ``validation/memory_gib``, ``validation/memory_pct`` and
  ``validation/tps`` at step ``N``. The prefix is ``validation/``, not ``validate/``: tag roles know the former as
  a validation split and would take ``validate/loss`` for a training loss.
* Wall time: the line's logging time stamp (``%(asctime)s``, local time read as UTC, as every console reader does).
* Ranks: a launcher's ``[rankN]:`` (or ``[defaultN]:``) prefix is removed by the shared ranked reading, which
  gives each rank's lines a parser of their own and their rows that rank (``--local-ranks-filter`` decides which
  ranks are shown; each shows the same global loss, and its own memory and throughput). A log without the prefix
  has no rank column; where several ranks printed to it, a step's last line gives its point (a note says how many
  were replaced).
* A training step lower than the one before (a job resumed from a checkpoint) is a restart: recorded, every row
  kept, the later write of a step winning.
* Other lines (the config dump, ``Training starts at step 1.``, warnings) are not metrics. A line whose message
  begins with ``step:`` or ``validate step:`` but cannot be read (a value that is no number, text between the
  values, a step beyond 2**53) is named in a warning.
"""

from __future__ import annotations

import re
from itertools import chain
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER_CHARS, NUMBER_PATTERN, parse_timestamps

__all__ = ["TorchtitanParser", "TorchtitanReader", "detect_torchtitan"]

#: its logger's prefix ("[titan] 2025-03-12 11:10:21,511 - root - INFO - "; "[titan] " absent in 2024's versions;
#: the logger's name "root" or a module's); the time a group
_PREFIX = r"(?:\[titan\] )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - \S++ - INFO - "
#: a number with thousands separators ("193,831", "7,304.5", tflops' "1,234.56")
_C = r"[\d,.]++"
#: the lines of every version in one template: validate, step, loss, grad_norm, memory (GiB, percent), "t" or "w"
#: of tps / wps, tps, tflops, mfu (percent, or N/A)
_TEMPLATE = (rf"(validate )?step: +(\d+)  loss: +({NUMBER_CHARS})(?:  grad_norm: +({NUMBER_CHARS}))?  memory: +({NUMBER_CHARS})GiB(?:\(({NUMBER_CHARS})%\))?"
             rf"  ([tw])ps: +({_C})(?:  tflops: +({_C}))?(?:  mfu: +(?:({NUMBER_CHARS})%|(N/A)))?[ \t]*")
#: a line whose message begins with a step, in any other form (its message)
_OTHER = r"((?:validate )?step: *\d[^\n]*)"
#: every line read, from its line break (see ._findall): a line of the template (its time and fields), or another
#: line with a step (its time and message), read field by field
_LINE = re.compile(rf"\n{_PREFIX}(?:{_TEMPLATE}|{_OTHER})(?=\n)")
#: the same groups, every line read field by field (the template never matches: for tests)
_EVERY_LINE = re.compile(rf"\n{_PREFIX}(?:(?!){_TEMPLATE}|{_OTHER})(?=\n)")
_LOOKALIKE = re.compile(rf"^{_PREFIX}(?:validate )?step: *\d", re.M)
#: two of these make a log torchtitan's: a step, its loss, its memory in GiB
_DETECT = re.compile(rf"\n{_PREFIX}(?:validate )?step: +\d+  loss: +[^\n]*?  memory: +[^\n]*?GiB")

#: a message read field by field: validate, its step, the rest; the rest's fields ("  name: value" each)
_MESSAGE = re.compile(r"(validate )?step: *(\d+)((?: +[A-Za-z_][\w.@/-]{0,127}+: +\S++)*)[ \t]*")
_FIELD = re.compile(r"([A-Za-z_][\w.@/-]{0,127}+): +(\S++)")
#: a value: a number, then GiB (and the percent in parentheses) or a percent sign
_VALUE = re.compile(r"([^\sG%(]++)(?:GiB(?:\(([^\s%)]++)%\))?|%)?")
#: what a value not measured prints as
_NOT_AVAILABLE = frozenset({"N/A", "--"})
#: the template's fields, in line order, as tags
_FIELDS = ("loss", "grad_norm", "memory_gib", "memory_pct", "tps", "tflops", "mfu")
_VALIDATION = "validation/"
#: a step of at most this many digits is an exact double (2**53 has 16): the steps of a chunk read at once
_EXACT_DIGITS = 15
#: more digits than this are no step (and too many for ``int()``)
_STEP_DIGITS = 20


class TorchtitanParser(FindallParser):
    family = "torchtitan"
    lookalike = _LOOKALIKE
    line = _LINE
    #: read every line field by field (not a chunk's lines of the template at once); for tests
    line_by_line: ClassVar[bool] = False
    state_fields = {"_validations": "sum", "_wps": "sum", "_not_available": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        if self.line_by_line:
            self.line = _EVERY_LINE
        self._validations = 0
        self._wps = 0  # lines that print wps
        self._not_available = 0  # values printed as N/A or --
        self._lookalikes = 0

    def count_lookalikes(self, text: str) -> int:
        """The lines ``line`` found in the last :meth:`take` (read or not): no second scan."""
        return self._lookalikes

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        self._lookalikes = len(found)
        if not found or self._at_once(found):
            return len(found), len(found)
        unread = self._line_by_line(chunk, text, found)
        self.unread_matches.update(unread)
        return len(found) - len(unread), len(found) - len(unread)

    def _at_once(self, found: list[tuple[str, ...]]) -> bool:
        """Add the rows of ``found`` when every line is of the template with numbers, its steps exact and going
        on from the last training step; False (nothing added) otherwise."""
        if self.line_by_line:
            return False
        table = np.array(list(chain.from_iterable(found)), dtype=object).reshape(len(found), -1)
        if table[:, 12].astype(bool).any():  # (a line read field by field)
            return False
        step_texts = table[:, 2].tolist()
        if max(map(len, step_texts)) > _EXACT_DIGITS:
            return False
        steps = parse_numbers(" ".join(step_texts)).astype(np.int64)  # (digits: every one a number)
        validation = table[:, 1].astype(bool)
        if not self.anchors_go_on(steps[~validation]):
            return False  # (a restart, recorded at its line)
        fields = table[:, (3, 4, 5, 6, 8, 9, 10)]  # (not the t or w of tps)
        present = fields.astype(bool)
        tokens = fields[present].tolist()
        joined = " ".join(tokens).replace(",", "")
        values, valid = parse_some_numbers(joined)
        if not valid.all() or (("n" in joined or "N" in joined)
                               and not all(map(NUMBER_PATTERN.fullmatch, joined.split(" ")))):
            return False  # (a value that is no number, or not measured: "--")
        codes = np.array([self.rows.codes(_FIELDS), self.rows.codes([_VALIDATION + tag for tag in _FIELDS])],
                         dtype=np.int32)
        walls = np.array(parse_timestamps(table[:, 0].tolist()), dtype=np.float64)
        width = len(_FIELDS)
        flat = present.ravel()
        self.rows.extend(codes[validation.astype(np.intp)].ravel()[flat], np.repeat(steps, width)[flat], values,
                         wall=np.repeat(walls, width)[flat])
        training = steps[~validation]
        if len(training):
            self.anchor(int(training[-1]), None, 0)
        self._validations += int(validation.sum())
        self._wps += int((table[:, 7] == "w").sum())
        self._not_available += int(table[:, 11].astype(bool).sum())
        return True

    def _line_by_line(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> list[int]:
        """Add the rows of ``found`` line after line (a restart recorded at its line); the lines not read."""
        tags: list[str] = []
        steps: list[int] = []
        numbers: list[str] = []
        stamps: list[str] = []
        unread: list[int] = []
        previous = self._last_anchor.get(-1)
        for index, groups in enumerate(found):
            read = _read_line(groups)
            if read is None:
                unread.append(index)
                continue
            validation, step, fields, wps, not_available = read
            if not validation:
                if previous is not None and step < previous:  # a restart: recorded at its line
                    self.anchor(previous, None, 0)
                    self.anchor(step, chunk, self.match_start(text, index))
                previous = step
            prefix = _VALIDATION if validation else ""
            tags += [prefix + tag for tag, _ in fields]
            numbers += [number for _, number in fields]
            steps += [step] * len(fields)
            stamps += [groups[0]] * len(fields)
            self._validations += validation
            self._wps += wps
            self._not_available += not_available
        if previous is not None:
            self.anchor(previous, None, 0)
        if numbers:
            values, _ = parse_some_numbers(" ".join(numbers))  # (each a NUMBER: float() takes it)
            self.rows.extend(self.rows.codes(tags), steps, values, wall=parse_timestamps(stamps))
        return unread

    def finish(self) -> None:
        notes = ["torchtitan console: step = the printed step; loss, grad_norm, memory_gib and memory_pct (the peak "
                 "reserved device memory since the last line), tps (tokens per second per device), tflops, mfu (in "
                 "percent)"]
        self.count_note(self._validations, "validation line(s) ('validate step:') as validation/loss, "
                        "validation/tps … at their step")
        self.count_note(self._wps, "line(s) of an older version print 'wps', the tokens per second: read as tps")
        self.count_note(self._not_available, "value(s) printed as N/A or -- (not measured, such as the MFU of a "
                        "device whose peak FLOPS is unknown): not read")
        self.notes[:0] = notes


#: a line as read: whether it is a validation, its step, its (tag, number) pairs (each number a NUMBER, its
#: thousands separators taken out), whether it prints wps, how many of its values are not available
_Read = tuple[bool, int, list[tuple[str, str]], bool, int]


def _read_line(groups: tuple[str, ...]) -> _Read | None:
    """The line ``line`` found (its groups), or None when it cannot be read."""
    stamp, validate, step, *template, message = groups
    if message:
        return _read_message(message)
    loss, grad_norm, gib, pct, letter, tps, tflops, mfu, not_available = template
    fields = [(tag, value) for tag, value in zip(_FIELDS, (loss, grad_norm, gib, pct, tps, tflops, mfu), strict=True)
              if value]
    return _checked(bool(validate), step, fields, letter == "w", int(bool(not_available)))


def _read_message(message: str) -> _Read | None:
    """A message in any form: ``step: N``, then ``name: value`` fields. A value is a number (with or without
    thousands separators), a number of GiB (with its percent in parentheses), or a percent; each number may be not
    available (N/A, --)."""
    m = _MESSAGE.fullmatch(message)
    if m is None:
        return None
    fields: list[tuple[str, str]] = []
    wps = False
    for name, value in _FIELD.findall(m.group(3)):
        parts = _VALUE.fullmatch(value)
        if parts is None:
            return None
        if name == "wps":
            name, wps = "tps", True
        gib, pct = parts.group(1), parts.group(2)
        if value.startswith(gib + "GiB"):
            fields.append((f"{name}_gib", gib))
            if pct is not None:
                fields.append((f"{name}_pct", pct))
        else:
            fields.append((name, gib))
    if not fields:
        return None
    return _checked(bool(m.group(1)), m.group(2), fields, wps, 0)


def _checked(validation: bool, step: str, fields: list[tuple[str, str]], wps: bool, not_available: int
             ) -> _Read | None:
    """The line read: its step and every number checked (a step beyond 2**53 or a number that is no NUMBER: None),
    the values not available left out and counted."""
    if len(step) > _STEP_DIGITS or int(step) > LARGEST_STEP:
        return None
    kept: list[tuple[str, str]] = []
    for tag, value in fields:
        if value in _NOT_AVAILABLE:
            not_available += 1
            continue
        number = value.replace(",", "")
        if NUMBER_PATTERN.fullmatch(number) is None:
            return None
        kept.append((tag, number))
    return validation, int(step), kept, wps, not_available


def detect_torchtitan(window: str) -> bool:
    """Two lines of torchtitan's metrics: a step, its loss, its memory in GiB, behind its logger's prefix."""
    return at_least_two(_DETECT.finditer("\n" + window))


class TorchtitanReader(TextReader):
    name = "torchtitan"
    description = ("torchtitan training console ('[rank0]:[titan] … - root - INFO - step: 22  loss:  6.2250  "
                   "memory:  1.41GiB(1.79%)  tps: 193,831  tflops: 18.36  mfu: 1.86%')")
    parser = TorchtitanParser

    def detect(self, window: str) -> bool:
        return detect_torchtitan(window)
