"""The training consoles of PaddlePaddle's suites: PaddleOCR (and PaddleX, which trains with it), PaddleClas and
PaddleSeg, as their loggers print them (to the console, and PaddleOCR's and PaddleClas's to ``train.log``)::

    [2022/08/08 16:28:28] ppocr INFO: epoch: [1/200], global_step: 10, lr: 0.000006, loss: 1.871535, avg_reader_cost: 0.28200 s, …, eta: 0:51:59
    [2022/08/08 16:28:39] ppocr INFO: cur metric, precision: 0.1152, recall: 0.1977, hmean: 0.1456, fps: 34.008
    [2022/04/30 11:30:30] ppcls INFO: [Train][Epoch 1/300][Iter: 100/1252]lr: 0.00403, CELoss: 6.97696, loss: 6.97696, batch_cost: 0.94871s, …
    [2022/04/30 12:02:11] ppcls INFO: [Eval][Epoch 1][Avg]CELoss: 6.47, loss: 6.47, top1: 0.031, top5: 0.102
    2021-08-14 08:05:32 [INFO]	[TRAIN] epoch: 1, iter: 20/6000, loss: 2.5284, lr: 0.009937, batch_cost: 0.5262, … | ETA 00:52:26
    2021-08-14 08:06:16 [INFO]	[EVAL] #Images: 82 mIoU: 0.8397 Acc: 0.9263 Kappa: 0.8238 Dice: 0.9972

Decisions:

* **step**: PaddleOCR's ``global_step``; PaddleClas's ``(epoch - 1) × iterations per epoch + iteration`` (its epochs
  count from 1, its iterations from 0); PaddleSeg's ``iter`` (it counts iterations over the whole training).
* Every ``name: number`` of a training line is a tag by its name as printed (``lr(PiecewiseDecay)`` as ``lr``; a
  unit after the number, ``s``, ``samples/s``, ``MB``, is left out). Not tags: the epoch and step, the time left
  (``eta``) and PaddleOCR's ``avg_samples`` (the batch size). The wall time is the line's own time.
* An evaluation's numbers are tags ``eval/<name>``: PaddleOCR's ``cur metric`` and PaddleSeg's ``[EVAL]`` at the last
  training step (both evaluate right after it), PaddleClas's ``[Eval][Epoch e][Avg]`` at the last iteration of
  epoch ``e``. Their running best (``best metric``) and PaddleClas's per-batch evaluation lines are not read.
* PaddleDetection's ``Epoch: [0] [ 20/1929] learning_rate: …`` lines are progress meters the generic reader reads.
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._pairs import PairsParser, PairTake
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import LARGEST_STEP

__all__ = ["PaddleParser", "PaddleReader", "detect_paddle"]

#: PaddleOCR's and PaddleClas's logger ("[2022/08/08 16:28:28] ppocr INFO: "; its time, when whole, a group)
_BRACKETED = r"\[(?:(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)|[^\]\n]*)\] [\w.]+ INFO: "
#: PaddleSeg's ("2021-08-14 08:05:32 [INFO]\t")
_SEG = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \[INFO\]\t"
#: every line read, from its line break (see ._findall): PaddleOCR's training line (epoch, step, pairs) and
#: evaluation (pairs), PaddleClas's training line (epoch, iteration, iterations, pairs) and an epoch's evaluation
#: (epoch, pairs), PaddleSeg's training line (epoch, iteration, pairs) and evaluation (pairs); then a line that looks
#: like a training line of one of them but is not one (its text)
_LINE = re.compile(
    rf"\n(?:{_BRACKETED}(?:epoch: \[(\d+)/\d+\], global_step: (\d+), ([^\n]*)|cur metric, ([^\n]*)"
    r"|\[Train\]\[Epoch (\d+)/\d+\]\[Iter: (\d+)/(\d+)\]([^\n]*)|\[Eval\]\[Epoch (\d+)\]\[Avg\]([^\n]*)"
    r"|((?:epoch: \[|\[Train\]\[Epoch \d+/\d+\]\[Iter)[^\n]*))"
    rf"|{_SEG}(?:\[TRAIN\] epoch: (\d+), iter: (\d+)/\d+, ([^\n|]*)(?:\|[^\n]*)?|\[EVAL\] #Images: \d+ ([^\n]*)"
    r"|(\[TRAIN\][^\n]*)))(?=\n)")
_LOOKALIKE = re.compile(r"^(?:\[[^\]\n]*\] [\w.]+ INFO: (?:epoch: \[|\[Train\]\[Epoch \d+/\d+\]\[Iter)"
                        r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[INFO\]\t\[TRAIN\])", re.M)
#: names that are no measure of training: where it is, the time left, PaddleOCR's batch size
_NOT_TAGS = frozenset({"epoch", "global_step", "iter", "eta", "avg_samples"})
#: each suite's step, as the note says it
_STEPS = {"PaddleOCR": "global_step", "PaddleClas": "(epoch - 1) × iterations per epoch + iteration",
          "PaddleSeg": "iter"}
_SUITES = tuple(_STEPS)


class PaddleParser(PairsParser):
    family = "PaddlePaddle"
    lookalike = _LOOKALIKE
    line = _LINE
    state_fields = {"_iterations": "last", "_suites": "union", "_evaluations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._iterations: int | None = None  # PaddleClas's iterations per epoch
        self._suites: set[str] = set()
        self._evaluations = 0

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        taking = PairTake(self, chunk, text, _NOT_TAGS)  # (training lines and evaluations, in line order)
        for index, (stamp, ocr_epoch, ocr_step, ocr_rest, ocr_eval, cls_epoch, cls_iteration, cls_iterations,
                    cls_rest, cls_eval_epoch, cls_eval, bracketed_lookalike, seg_stamp, seg_epoch, seg_iteration,
                    seg_rest, seg_eval, seg_lookalike) in enumerate(found):
            if ocr_step:
                step, epoch, rest = int(ocr_step), ocr_epoch, ocr_rest
                self._suites.add("PaddleOCR")
            elif cls_iteration:
                self._iterations = int(cls_iterations)
                step, epoch, rest = (int(cls_epoch) - 1) * self._iterations + int(cls_iteration), cls_epoch, cls_rest
                self._suites.add("PaddleClas")
            elif seg_iteration:
                step, epoch, rest, stamp = int(seg_iteration), seg_epoch, seg_rest, seg_stamp
                self._suites.add("PaddleSeg")
            elif bracketed_lookalike or seg_lookalike:
                taking.unread.append(index)
                continue
            else:
                if cls_eval_epoch and self._iterations is not None:
                    at = max(int(cls_eval_epoch) * self._iterations - 1, 0)  # (the epoch's last iteration)
                else:
                    at = 0 if taking.previous is None else taking.previous
                if at <= LARGEST_STEP:
                    taking.lines.add(at, cls_eval_epoch or "nan", ocr_eval or cls_eval or seg_eval,
                                     stamp or seg_stamp, "eval/")
                    self._evaluations += 1
                continue
            if step > LARGEST_STEP:  # (no exact step: not read, named)
                taking.unread.append(index)
                continue
            taking.main(index, step, epoch, rest, stamp)
        return taking.done(len(found))

    def finish(self) -> None:
        suites = [suite for suite in _SUITES if suite in self._suites]
        steps = "; ".join(f"{suite}'s {_STEPS[suite]}" for suite in suites)
        notes = [f"{', '.join(suites) or 'PaddlePaddle'} training console: step = {steps or 'none read'}"]
        self.count_note(self._evaluations, "evaluation(s) as eval/<name>, at the last training step before them "
                        "(PaddleClas: at its epoch's last iteration)")
        self.notes[:0] = notes


def detect_paddle(window: str) -> bool:
    """Two training lines of PaddleOCR, PaddleClas or PaddleSeg."""
    found = _LINE.finditer("\n" + window)
    lines = (m for m in found if m.group(3) or m.group(7) or m.group(15))
    return next(lines, None) is not None and next(lines, None) is not None


class PaddleReader(TextReader):
    name = "paddle"
    description = ("PaddleOCR / PaddleX, PaddleClas and PaddleSeg training consoles ('ppocr INFO: epoch: [1/200], "
                   "global_step: 10, …', '[Train][Epoch 1/300][Iter: 0/1252]…', '[TRAIN] epoch: 1, iter: 20/6000, …')")
    parser = PaddleParser

    def detect(self, window: str) -> bool:
        return detect_paddle(window)
