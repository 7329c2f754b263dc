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
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER, NUMBER_ONCE

__all__ = ["DarknetParser", "DarknetReader", "detect_darknet"]


def _iteration(number: str) -> str:
    return (rf"(\d+):[ \t]*({number}),[ \t]*({number}) avg(?: loss)?,[ \t]*({number}) rate,[ \t]*({number}) "
            rf"seconds,[ \t]*\d+ images(?:,[ \t]*{number} hours left)?")


ITERATION = re.compile(rf"^[ \t]*{_iteration(NUMBER)}[ \t]*$", re.M)
#: every line read: an iteration (step, loss, average, rate, seconds), an mAP (IoU threshold, value), a class's AP
#: (name, percent), precision / recall / F1, the average IoU (percent); each alternative fails at its first
#: character on the other lines (the region lines that fill the log, refused at once by the look-ahead); its numbers
#: possessive (a comma, a blank or a word follows each)
_N = NUMBER_ONCE
_LINE = re.compile(
    rf"\n[ \t]*+(?=[0-9mcf])(?:{_iteration(_N)}"
    rf"|mean average precision \(mAP@({_N})\) = ({_N}), or [\d.]+ ?%"
    rf"|class_id = \d+, name = ([^,\n]*?), ap = ({_N}) ?%.*"
    rf"|for conf_thresh = {_N}, precision = ({_N}), recall = ({_N}), F1-score = ({_N})"
    rf"|for conf_thresh = {_N}, TP = \d+, FP = \d+, FN = \d+, average IoU = ({_N}) ?%)[ \t]*(?=\n)")
_LOOKALIKE = r"[ \t]*(?:\d+:[ \t]*[-+]?(?:\d|nan|inf)[^\n]* avg|mean average precision)"
_ITERATION_TAGS = ("loss", "avg_loss", "lr", "iteration_time_s")


class DarknetParser(FindallParser):
    family = "darknet"
    lookalike = re.compile(rf"^{_LOOKALIKE}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n{_LOOKALIKE}")
    state_fields = {"_evaluations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._evaluations = 0

    def count_lookalikes(self, text: str) -> int:
        """Iteration lines hold " avg" (the region lines' "Avg" is capitalised), evaluations "mean average
        precision": counted at C speed."""
        return text.count(" avg") + text.count("mean average precision")

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        steps: list[int] = []
        numbers: list[str] = []  # the iterations' four numbers, in turn
        evaluated: list[tuple[int, str, float]] = []  # (step, tag, value)
        previous = step = self._last_step
        for index, (number, loss, average, rate, seconds, iou, mean_ap, name, ap, precision, recall, f1,
                    average_iou) in enumerate(found):
            if number:
                step = int(number)
                if previous is not None and step < previous:  # a restart: recorded at its line
                    self.anchor(previous, None, 0)
                    self.anchor(step, chunk, self.match_start(text, index))
                previous = step
                steps.append(step)
                numbers += (loss, average, rate, seconds)
                continue
            at = 0 if step is None else step  # (an evaluation before any iteration: at iteration 0)
            if mean_ap:
                evaluated.append((at, f"mAP@{iou}", float(mean_ap)))
                self._evaluations += 1
            elif name:
                evaluated.append((at, f"ap/{name.strip()}", float(ap) / 100))
            elif precision:
                evaluated += [(at, "precision", float(precision)), (at, "recall", float(recall)), (at, "f1", float(f1))]
            else:
                evaluated.append((at, "average_iou", float(average_iou) / 100))
        if steps:
            self.anchor(steps[-1], None, 0)
            codes = np.array(self.rows.codes(_ITERATION_TAGS), dtype=np.int32)
            parsed = parse_numbers(" ".join(numbers))  # (the line's pattern took only numbers)
            self.rows.extend(np.tile(codes, len(steps)), np.repeat(np.array(steps, dtype=np.int64), 4),
                             parsed if parsed is not None else np.array(numbers, dtype=np.float64))
        if evaluated:
            self.rows.extend(self.rows.codes([tag for _, tag, _ in evaluated]), [at for at, _, _ in evaluated],
                             [value for _, _, value in evaluated])
        return len(found), len(steps) + sum(1 for _, tag, _ in evaluated if tag.startswith("mAP@"))

    def finish(self) -> None:
        notes = ["darknet training output: step = the iteration; 'avg_loss' is darknet's running average of the loss"]
        if self._evaluations:
            notes.append(f"{self._evaluations} evaluation(s) (-map) at the iteration before them: mAP, precision, "
                         "recall, F1, average IoU and each class's AP, as fractions")
        self.notes[:0] = notes


def detect_darknet(window: str) -> bool:
    """Two darknet iteration lines."""
    found = ITERATION.finditer(window)
    return next(found, None) is not None and next(found, None) is not None


class DarknetReader(TextReader):
    name = "darknet"
    description = "darknet detector training output (' 4259: 0.0347, 0.0452 avg loss, 0.001 rate, 0.92 seconds, …')"
    parser = DarknetParser

    def detect(self, window: str) -> bool:
        return detect_darknet(window)
