"""Darknet's console (``./darknet detector train …``: YOLOv2/v3/v4 by pjreddie and AlexeyAB), kept in a file::

     4259: 0.034688, 0.045240 avg loss, 0.001000 rate, 0.923000 seconds, 272576 images, 1.234567 hours left
    Loaded: 0.000035 seconds
    v3 (iou loss, Normalizer: (iou: 0.07, obj: 1.00, cls: 1.00) Region 139 Avg (IOU: 0.81), count: 5, …

    (with -map, after an iteration)
     class_id = 0, name = smoke, ap = 71.23%   	 (TP = 245, FP = 30)
     for conf_thresh = 0.25, precision = 0.89, recall = 0.83, F1-score = 0.86
     for conf_thresh = 0.25, TP = 245, FP = 30, FN = 50, average IoU = 72.34 %
     mean average precision (mAP@0.50) = 0.712345, or 71.23 %

pjreddie's darknet writes ``… avg, 0.001000 rate …`` and no hours left. Decisions:

* **step = the iteration** (a batch) that starts the line. Tags: ``loss`` (the iteration's), ``avg_loss``
  (darknet's own running average, 0.9 of the last plus 0.1 of the new), ``lr``, ``iteration_time_s``.
  The images seen so far and the hours left are not curves of the run and are not read.
* The evaluation printed after an iteration (``-map``) is at that iteration: ``mAP@0.50`` (or the IoU
  threshold printed), ``precision``, ``recall``, ``f1`` at the printed confidence threshold, ``average_iou``
  and each class's ``ap/<name>``, all as fractions (darknet prints the last two in percent).
* The per-layer ``Region``/``v3 (…)`` lines of every subdivision are detail of the loss, not read; darknet
  prints a NaN loss as ``-nan``, kept as NaN.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER, NUMBER_CHARS, NUMBER_ONCE, NUMBER_PATTERN

__all__ = ["DarknetParser", "DarknetReader", "detect_darknet"]


def _iteration(number: str, taken: str) -> str:
    """An iteration line's text (``taken``: the numbers captured, ``number``: the hours left, only checked)."""
    return (rf"(\d+):[ \t]*({taken}),[ \t]*({taken}) avg(?: loss)?,[ \t]*({taken}) rate,[ \t]*({taken}) "
            rf"seconds,[ \t]*\d+ images(?:,[ \t]*{number} hours left)?")


ITERATION = re.compile(rf"^[ \t]*{_iteration(NUMBER, NUMBER)}[ \t]*$", re.M)
#: an iteration or an mAP as a line begins with it, after its blanks
_LOOKALIKE_START = r"(?:\d+:[ \t]*[-+]?(?:\d|nan|inf)[^\n]* avg|mean average precision)"
#: every line read: an iteration (step, loss, average, rate, seconds), an mAP (IoU threshold, value), a class's AP
#: (name, percent), precision / recall / F1, the average IoU (percent), or a look-alike line not read (its text);
#: each alternative fails at its first character on the other lines (the region lines that fill the log, refused at
#: once by the look-ahead); its numbers possessive (a comma, a blank or a word follows each)
_N = NUMBER_ONCE
_LINE = re.compile(
    rf"\n[ \t]*+(?=[0-9mcf])(?:{_iteration(_N, NUMBER_CHARS)}"
    rf"|mean average precision \(mAP@({_N})\) = ({_N}), or [\d.]+ ?%"
    rf"|class_id = \d+, name = ([^,\n]*?), ap = ({_N}) ?%.*"
    rf"|for conf_thresh = {_N}, precision = ({_N}), recall = ({_N}), F1-score = ({_N})"
    rf"|for conf_thresh = {_N}, TP = \d+, FP = \d+, FN = \d+, average IoU = ({_N}) ?%"
    rf"|({_LOOKALIKE_START}[^\n]*))[ \t]*(?=\n)")
_ITERATION_TAGS = ("loss", "avg_loss", "lr", "iteration_time_s")


class DarknetParser(FindallParser):
    family = "darknet"
    lookalike = re.compile(rf"^[ \t]*{_LOOKALIKE_START}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n[ \t]*{_LOOKALIKE_START}")
    state_fields = {"_evaluations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._evaluations = 0
        self._lookalikes = 0

    def count_lookalikes(self, text: str) -> int:
        """The look-alike lines ``line`` found in the last :meth:`take` (read or not): no second scan."""
        return self._lookalikes

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        lines = _Lines.of(found, self._last_step, set())
        values, valid = _numbers(lines.numbers)
        if not valid.all():  # an iteration with a token that is no number: not read, as ITERATION leaves it
            invalid = ~valid.reshape(-1, 4).all(axis=1)
            lines = _Lines.of(found, self._last_step, {lines.indices[i] for i in np.flatnonzero(invalid).tolist()})
            values = values.reshape(-1, 4)[~invalid].ravel()
        self.unread_matches.update(lines.unread)
        for k, previous in lines.restarts:  # (recorded at its line)
            self.anchor(previous, None, 0)
            self.anchor(lines.steps[k], chunk, self.match_start(text, lines.indices[k]))
        if lines.steps:
            self.anchor(lines.steps[-1], None, 0)
            codes = np.array(self.rows.codes(_ITERATION_TAGS), dtype=np.int32)
            self.rows.extend(np.tile(codes, len(lines.steps)), np.repeat(np.array(lines.steps, dtype=np.int64), 4),
                             values)
        evaluated = lines.evaluated
        if evaluated:
            self.rows.extend(self.rows.codes([tag for _, tag, _ in evaluated]), [at for at, _, _ in evaluated],
                             [value for _, _, value in evaluated])
        self._evaluations += lines.evaluations
        self._lookalikes = len(lines.steps) + lines.evaluations + len(lines.unread)
        return len(found) - len(lines.unread), len(lines.steps) + lines.evaluations

    def finish(self) -> None:
        notes = ["darknet training output: step = the iteration; 'avg_loss' is darknet's running average of the loss"]
        if self._evaluations:
            notes.append(f"{self._evaluations} evaluation(s) (-map) at the iteration before them: mAP, precision, "
                         "recall, F1, average IoU and each class's AP, as fractions")
        self.notes[:0] = notes


def _numbers(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The numbers of ``tokens`` and which are a ``NUMBER`` (``float()`` takes "INF" and "nAn" too)."""
    joined = " ".join(tokens)
    if not joined:
        return np.empty(0), np.empty(0, dtype=bool)
    values, valid = parse_some_numbers(joined)
    if "n" in joined or "N" in joined:  # (every spelling of nan and inf has one)
        valid &= np.fromiter(map(bool, map(NUMBER_PATTERN.fullmatch, tokens)), bool, len(tokens))
    return values, valid


class _Lines:
    """The lines ``line`` found in a chunk, taken in order: the iterations' steps, numbers (four a line, in turn,
    as text) and indices in ``found``, where a step goes back (its index in ``steps``, the step before), the
    evaluations (step, tag, value) and their count, and the look-alike lines left unread."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.numbers: list[str] = []
        self.indices: list[int] = []
        self.restarts: list[tuple[int, int]] = []
        self.evaluated: list[tuple[int, str, float]] = []
        self.evaluations = 0
        self.unread: list[int] = []

    @classmethod
    def of(cls, found: list[tuple[str, ...]], last_step: int | None, skipped: set[int]) -> _Lines:
        """The lines of ``found`` after ``last_step`` (the step before the chunk), those at ``skipped`` left unread."""
        out = cls()
        steps, numbers, evaluated = out.steps, out.numbers, out.evaluated
        previous = step = last_step
        for index, (number, loss, average, rate, seconds, iou, mean_ap, name, ap, precision, recall, f1,
                    average_iou, lookalike) in enumerate(found):
            if lookalike or index in skipped or (number and int(number) > LARGEST_STEP):  # (no exact step)
                out.unread.append(index)
                continue
            if number:
                step = int(number)
                if previous is not None and step < previous:
                    out.restarts.append((len(steps), previous))
                previous = step
                steps.append(step)
                out.indices.append(index)
                numbers += (loss, average, rate, seconds)
                continue
            at = 0 if step is None else step  # (an evaluation before any iteration: at iteration 0)
            if mean_ap:
                evaluated.append((at, f"mAP@{iou}", float(mean_ap)))
                out.evaluations += 1
            elif name:
                evaluated.append((at, f"ap/{name.strip()}", float(ap) / 100))
            elif precision:
                evaluated += [(at, "precision", float(precision)), (at, "recall", float(recall)), (at, "f1", float(f1))]
            else:
                evaluated.append((at, "average_iou", float(average_iou) / 100))
        return out


def detect_darknet(window: str) -> bool:
    """Two darknet iteration lines."""
    return at_least_two(ITERATION.finditer(window))


class DarknetReader(TextReader):
    name = "darknet"
    description = "darknet detector training output (' 4259: 0.0347, 0.0452 avg loss, 0.001 rate, 0.92 seconds, …')"
    parser = DarknetParser

    def detect(self, window: str) -> bool:
        return detect_darknet(window)
