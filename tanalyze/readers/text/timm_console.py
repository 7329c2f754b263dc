"""timm's ``train.py`` console (PyTorch Image Models: ViT, DeiT, ConvNeXt … trained with its script)::

    Train: 3 [ 200/1251 ( 16%)]  Loss: 4.213 (4.30)  Time: 0.254s, 2015.10/s  (0.289s, 1771.07/s)  LR: 1.000e-03  Data: 0.012 (0.035)
    Test: [   0/48]  Time: 0.945 (0.945)  Loss:  0.6201 (0.6201)  Acc@1: 85.9375 (85.9375)  Acc@5: 97.2656 (97.2656)
    Test (EMA): [  48/48]  …

Train lines: step = ``epoch × updates per epoch + update``, tags ``train_loss`` (the current value, not the
running mean in parentheses), ``lr``, ``samples_per_s`` (the current rate) — the names of timm's own
``summary.csv``. Validation: the running means of the last ``Test`` line of an epoch (its whole validation
set) at the epoch's last update, as ``eval_loss``, ``eval_top1``, ``eval_top5`` (``eval_ema_*`` for the EMA
model's). Older timm prints the loss with six decimals; both are read.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.text._shaped import LineShape
from tanalyze.readers.text._spans import SpanParser, SpanRows
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["TimmConsoleParser", "TimmConsoleReader", "detect_timm_console"]

TRAIN = re.compile(r"^Train: (\d+) \[\s*(\d+)/(\d+) \(\s*\d+%\)\]([^\n]*)$", re.M)
TEST = re.compile(r"^Test( \(EMA\))?: \[\s*(\d+)/(\d+)\]([^\n]*)$", re.M)
_PAIR = re.compile(rf"([A-Za-z][\w@]*):\s+({NUMBER})s?(?:,\s*({NUMBER})/s)?(?:\s+\(\s*({NUMBER})s?(?:,\s*{NUMBER}/s)?\))?")
_TRAIN_TAGS = {"Loss": "train_loss", "LR": "lr"}
#: the rest of timm's train line as it prints it (read by the pairs otherwise)
_USUAL_TRAIN = re.compile(r"  Loss: +([-+]?\d+\.?\d*(?:e[-+]?\d+)?) \([^)]*\)  Time: [\d.]+s, +(\d+\.\d+)/s  \([^)]*\)  "
                          r"LR: ([-+]?\d\.\d+e[-+]\d+)  Data: [\d.]+ \([\d.]+\)$")
_TEST_TAGS = {"Loss": "loss", "Acc@1": "top1", "Acc@5": "top5"}


#: timm's train line as it prints it, read at once (see ._spans): epoch, update, updates, the loss, the rate and
#: the learning rate read; the rest only checked
_TRAIN_SHAPE = LineShape(
    ("Train: ", " [", "/", " (", "%)]  Loss: ", " (", ")  Time: ", "s, ", "/s  (", "s, ", "/s)  LR: ", "  Data: ", " (",
     ")"),
    (True, True, True, True) + (False,) * 9,
    ("", "*", "", "*", "*", "", "", "*", "", "*", "", "", ""),
    (False, False, False, True, False, True, True, False, True, True, False, True, True),
)

#: its validation lines ("Test: [   0/48]  Time: …", "Test (EMA): …"): the batch, the batches and the running
#: means of the loss, top-1 and top-5 read; the current values only checked
_TEST_SHAPES = tuple(
    LineShape((first, "/", "]  Time: ", " (", ")  Loss: ", " (", ")  Acc@1: ", " (", ")  Acc@5: ", " (", ")"),
              (True, True) + (False,) * 8, ("*", "", "", "", "*", "*", "*", "*", "*", "*"),
              (False, False, True, True, True, False, True, False, True, False))
    for first in ("Test: [", "Test (EMA): ["))


class TimmConsoleParser(SpanParser, TextParser):
    family = "timm"
    span_prefix = "Train: "
    span_shapes = (_TRAIN_SHAPE,)
    summary_shapes = _TEST_SHAPES
    lookalike = re.compile(r"^(?:Train: \d+ \[|Test(?: \(EMA\))?: \[)", re.M)
    patterns = ((TRAIN, "train"), (TEST, "test"))
    state_fields = {"_epoch": "last", "_updates": "last", "_evaluations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None
        self._updates: int | None = None
        self._evaluations = 0

    def span_rows(self, grid: np.ndarray, shape: int) -> SpanRows | None:
        epochs, updates, totals = (grid[:, k].astype(np.int64) for k in range(3))
        return ("train_loss", "samples_per_s", "lr"), epochs * totals + updates, grid[:, 3:6].ravel()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        self._epoch, self._updates = int(grid[-1, 0]), int(grid[-1, 2])

    def summary_rows(self, grid: np.ndarray, shape: int, main: np.ndarray, before: np.ndarray
                     ) -> tuple[SpanRows, np.ndarray] | None:
        """An epoch's last validation line (its means over the whole set) at the last update of the epoch of the
        train line above it."""
        which = np.flatnonzero(grid[:, 0] >= grid[:, 1])
        above = main[before[which] - 1]
        steps = (above[:, 0].astype(np.int64) + 1) * above[:, 2].astype(np.int64) - 1
        prefix = "eval_ema_" if shape else "eval_"
        return ((prefix + "loss", prefix + "top1", prefix + "top5"), steps, grid[which, 2:5].ravel()), which

    def summary_done(self, grid: np.ndarray, shape: int) -> None:
        self._evaluations += int(np.count_nonzero(grid[:, 0] >= grid[:, 1]))

    def _on_train(self, m: re.Match[str], chunk: Chunk) -> None:
        usual = _USUAL_TRAIN.match(m.group(4))
        if usual is not None:  # timm's own line: its three fields where they always are
            pairs = [("train_loss", float(usual.group(1))), ("samples_per_s", float(usual.group(2))),
                     ("lr", float(usual.group(3)))]
        else:
            pairs = []
            for name, value, rate, _ in _PAIR.findall(m.group(4)):
                number = to_float(value)
                if name in _TRAIN_TAGS and number is not None:
                    pairs.append((_TRAIN_TAGS[name], number))
                elif name == "Time" and rate:
                    pairs.append(("samples_per_s", float(rate)))
        if not pairs:
            return
        epoch, update, updates = int(m.group(1)), int(m.group(2)), int(m.group(3))
        self._epoch, self._updates = epoch, updates
        step = epoch * updates + update
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step)

    def _on_test(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        if int(m.group(2)) < int(m.group(3)):
            return  # a batch of the validation: its last line holds the means over all of it
        prefix = "eval_ema_" if m.group(1) else "eval_"
        pairs = [(prefix + _TEST_TAGS[name], float(mean)) for name, _, _, mean in _PAIR.findall(m.group(4))
                 if name in _TEST_TAGS and mean]
        if not pairs:
            return
        if self._epoch is not None and self._updates is not None:
            step = (self._epoch + 1) * self._updates - 1
        else:
            step = self.current_step()
        self.rows.add_pairs(pairs, step)
        self._evaluations += 1

    def finish(self) -> None:
        notes = ["timm train.py lines: step = epoch × updates per epoch + update; the current value of each "
                 "'value (mean)' pair of a train line, the means of an epoch's last 'Test' line at its last update"]
        self.notes[:0] = notes


def detect_timm_console(window: str) -> bool:
    """Two timm train lines (one alone may be a quote in another log)."""
    return at_least_two(TRAIN.finditer(window))


class TimmConsoleReader(TextReader):
    name = "timm_console"
    cache_version = 6  # 4: every line not of the main template read in its place, as line by line; 5: a logging prefix
    #                   after a few blanks; 6: a logger named by a path in the prefix
    description = "timm train.py console ('Train: 3 [ 200/1251 ( 16%)]  Loss: 4.213 (4.30) …', 'Test: [  48/48] …')"
    parser = TimmConsoleParser
    behind_logging = True

    def detect(self, window: str) -> bool:
        return detect_timm_console(window)
