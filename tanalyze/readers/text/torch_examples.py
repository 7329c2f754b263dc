"""The console lines of PyTorch's official examples and tutorials, and of the many loops written after them.

No framework prints these; the templates are copied from script to script::

    Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.273475             (pytorch/examples MNIST, and its forks)
    Test set: Average loss: 0.0523, Accuracy: 9717/10000 (97%)
    Epoch [1/5], Step [100/600], Loss: 0.2215                     (the "PyTorch tutorial" loops)
    Epoch [3/100] Train Loss: 0.45, Train Acc: 83.17%              (an epoch counter alone)
    [Step 100/1000] Loss: 2.3104 | LR: 1.0e-04                     (a step counter alone)
    [1,  2000] loss: 2.215                                         (the CIFAR-10 tutorial)

Steps:

- ``Train Epoch: e [seen/size]``: step = samples seen, ``(e - first epoch) × size + seen`` (the line gives
  samples, not batches); the ``… set:`` summary after an epoch is at the end of that epoch; tags
  ``train/loss``, ``test/loss``, ``test/accuracy`` (``correct/total`` as a fraction);
- ``Epoch [e/E], Step [s/S]``: step = ``(e - 1) × S + s``; a line with the epoch counter alone is at the
  end of its epoch (``e × S``) once ``S`` is known, else step = ``e``; ``[Step s/S]``: step = ``s``;
- ``[e, i]``: step = ``(e - 1) × B + i`` with ``B`` the largest ``i`` printed (the batches per epoch, to
  the print interval);
- the other names as printed (``Loss``, ``Train Acc``); a ``%`` after a value is dropped (``83.17``).
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

__all__ = ["TorchExamplesParser", "TorchExamplesReader", "detect_torch_examples"]

_PAIRS = rf"[A-Za-z][\w .()/@-]{{0,40}}?[ \t]*[:=][ \t]*{NUMBER}"
#: pytorch/examples' MNIST line (and its forks: "loss=", more pairs, no percentage, a mode word before)
SAMPLES = re.compile(
    r"^[ \t]*(?P<mode>[A-Z][a-z]+)? ?Epoch:? ?(?P<e>\d+) ?\[ ?(?P<seen>\d+) ?/ ?(?P<size>\d+)(?: \(\s*[\d.]+%\))?\]"
    rf"[ \t:,|-]*(?P<rest>{_PAIRS}[^\n]*)$", re.M)
#: its summary after each epoch
SUMMARY = re.compile(r"^[ \t]*(?P<mode>Test|Validation|Valid|Val|Eval|Evaluation|Dev) set: (?P<rest>[^\n]*?"
                     rf"{NUMBER}[^\n]*)$", re.M)
#: "Epoch [e/E]" with, maybe, "Step [s/S]" (or Batch, Iter): the tutorials' counters
COUNTERS = re.compile(
    r"^[ \t]*(?:-{2,}[ \t]*)?Epoch ?\[ ?(?P<e>\d+) ?/ ?(?P<E>\d+) ?\][ \t,:|-]*"
    r"(?:(?:Step|Batch|Iter|Iteration|step|batch|iter|iteration) ?\[ ?(?P<s>\d+) ?/ ?(?P<S>\d+) ?\][ \t,:|-]*)?"
    rf"(?P<rest>{_PAIRS}[^\n]*)$", re.M)
#: a step counter alone: "[Step 100/1000]", "Step [100/1000]", "Iter [100/1000]"
STEP = re.compile(
    r"^[ \t]*(?:\[ ?(?:Step|Iter|Iteration|step|iter) (?P<a>\d+) ?/ ?\d+ ?\]|(?:Step|Iter|Iteration|step|iter) ?"
    rf"\[ ?(?P<b>\d+) ?/ ?\d+ ?\])[ \t,:|-]*(?P<rest>{_PAIRS}[^\n]*)$", re.M)
#: the CIFAR-10 tutorial's "[epoch, batch]"
CIFAR = re.compile(rf"^\[(?P<e>\d+), *(?P<i>\d+)\][ \t]*(?P<rest>{_PAIRS}[^\n]*)$", re.M)
_PAIR = re.compile(rf"([A-Za-z][\w .()/@-]{{0,40}}?)[ \t]*[:=][ \t]*({NUMBER})(?:[ \t]*/[ \t]*(\d+))?(%?)")


def _pairs(rest: str) -> list[tuple[str, float]]:
    """The ``name: value`` pairs of a line's rest (``correct/total`` read as their ratio, ``%`` dropped)."""
    out = []
    for name, value, total, _ in _PAIR.findall(rest):
        number = to_float(value)
        if number is None:
            continue
        if total:
            number = number / int(total) if int(total) else float("nan")
        out.append((name.strip(), number))
    return out


#: The MNIST example's train line and its test summary as its source prints them, read at once (see ._spans)
_MNIST = LineShape(("Train Epoch: ", " [", "/", " (", "%)]\tLoss: ", ""), (True, True, True, False, False),
                   skipped=(False, False, False, True, False))  # (the percentage: only checked)
_MNIST_TEST = LineShape(("Test set: Average loss: ", ", Accuracy: ", "/", " (", "%)"), (False, True, True, False),
                        skipped=(False, False, False, True))


class TorchExamplesParser(SpanParser, TextParser):
    family = "torch-examples"
    span_prefix = "Train Epoch: "
    span_shapes = (_MNIST,)
    summary_shapes = (_MNIST_TEST,)
    lookalike = re.compile(r"^[ \t]*(?:-{2,}[ \t]*)?(?:[A-Z][a-z]+ )?Epoch:? ?\[? ?\d+|^[ \t]*\[ ?(?:Step|Iter) \d|^\[\d+, *\d+\]", re.M)
    patterns = ((SAMPLES, "samples"), (SUMMARY, "summary"), (COUNTERS, "counters"), (STEP, "step"),
                (CIFAR, "cifar"))
    state_fields = {"_first_epoch": "last", "_size": "last", "_epoch": "last", "_batches": "last",
                    "_epoch_only": "sum", "_summaries": "sum", "_cifar": "sum", "_kinds": "union"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._first_epoch: int | None = None  # the MNIST lines' first epoch (0 or 1)
        self._size: int | None = None  # their samples per epoch
        self._epoch: int | None = None  # the last epoch printed
        self._batches: int | None = None  # the tutorials' batches per epoch (S)
        self._epoch_only = 0
        self._summaries = 0
        self._cifar: list[list] = []  # [epoch, batch, [[name, value] …]], placed once the batches per epoch are known
        self._kinds: set[str] = set()

    def span_rows(self, grid: np.ndarray, shape: int) -> SpanRows | None:
        epochs, seen, sizes = (grid[:, k].astype(np.int64) for k in range(3))
        first = self._first_epoch if self._first_epoch is not None else int(epochs[0])
        return ("train/loss",), (epochs - first) * sizes + seen, grid[:, 3].copy()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        if self._first_epoch is None:
            self._first_epoch = int(grid[0, 0])
        self._epoch, self._size = int(grid[-1, 0]), int(grid[-1, 2])
        self._kinds.add("samples")

    def summary_rows(self, grid: np.ndarray, shape: int, main: np.ndarray, before: np.ndarray
                     ) -> tuple[SpanRows, np.ndarray] | None:
        """The test summary at the end of the epoch of the train line above it."""
        above = main[before - 1]
        first = self._first_epoch if self._first_epoch is not None else int(main[0, 0])
        steps = (above[:, 0].astype(np.int64) - first + 1) * above[:, 2].astype(np.int64)
        accuracy = np.divide(grid[:, 1], grid[:, 2], out=np.full(len(grid), np.nan), where=grid[:, 2] != 0)
        return (("test/loss", "test/accuracy"), steps, np.column_stack((grid[:, 0], accuracy)).ravel()), np.arange(
            len(grid))

    def summary_done(self, grid: np.ndarray, shape: int) -> None:
        self._summaries += len(grid)

    def _on_samples(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group("rest"))
        if not pairs:
            return
        epoch, seen, size = int(m.group("e")), int(m.group("seen")), int(m.group("size"))
        if self._first_epoch is None:
            self._first_epoch = epoch
        self._epoch, self._size = epoch, size
        step = (epoch - self._first_epoch) * size + seen
        mode = (m.group("mode") or "train").lower()
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs([(f"{mode}/{name.lower()}", value) for name, value in pairs], step)
        self._kinds.add("samples")

    def _on_summary(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group("rest"))
        if not pairs:
            return
        mode = m.group("mode").lower()
        if self._epoch is not None and self._size is not None and self._first_epoch is not None:
            step = (self._epoch - self._first_epoch + 1) * self._size
        else:
            step = self._summaries
        self.mark(chunk, m.start())
        names = [name.lower().removeprefix("average ").strip() for name, _ in pairs]
        self.rows.add_pairs([(f"{mode}/{name}", value) for name, (_, value) in zip(names, pairs, strict=True)], step)
        self._summaries += 1

    def _on_counters(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group("rest"))
        if not pairs:
            return
        epoch = int(m.group("e"))
        if m.group("s") is not None:
            self._batches = int(m.group("S"))
            step = (epoch - 1) * self._batches + int(m.group("s"))
            self.anchor(step, chunk, m.start())
            self._kinds.add("counters")
        else:  # the epoch's summary line: at its end
            step = epoch * self._batches if self._batches else epoch
            if not self._batches:  # (the log's main line: a relaunch's epochs going back are a restart, or a session)
                self.anchor(step, chunk, m.start())
            self._epoch_only += 1
        self._epoch = epoch
        self.mark(chunk, m.start())
        self.rows.add_pairs(pairs, step, epoch=float(epoch))

    def _on_step(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group("rest"))
        if not pairs:
            return
        step = int(m.group("a") or m.group("b"))
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step)
        self._kinds.add("step")

    def _on_cifar(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group("rest"))
        if not pairs:
            return
        self.mark(chunk, m.start())
        self._cifar.append([int(m.group("e")), int(m.group("i")), [list(p) for p in pairs]])

    def finish_changes_rows(self) -> bool:
        return bool(self._cifar)

    def finish(self) -> None:
        notes = []
        if "samples" in self._kinds:
            notes.append("'Train Epoch: e [seen/size]' lines (PyTorch's MNIST example): step = samples seen, "
                         "(e − first epoch) × size + seen; the '… set:' summaries at the end of their epoch")
        if "counters" in self._kinds:
            notes.append("'Epoch [e/E], Step [s/S]' lines: step = (e − 1) × S + s")
        if self._epoch_only:
            where = "at the end of their epoch (e × S)" if self._batches else "keyed by the epoch number (step = e)"
            notes.append(f"{self._epoch_only:,} 'Epoch [e/E]' line(s) without a step counter {where}")
        if "step" in self._kinds:
            notes.append("'[Step s/S]' lines: step = s")
        if self._cifar:
            batches = max(i for _, i, _ in self._cifar)
            first = min(e for e, _, _ in self._cifar)
            for epoch, index, pairs in self._cifar:
                step = (epoch - first) * batches + index
                self.anchor(step, None, 0)
                self.rows.add_pairs([(name, value) for name, value in pairs], step, epoch=float(epoch))
            notes.append(f"'[epoch, batch]' lines (the CIFAR-10 tutorial): step = (epoch − {first}) × {batches:,} + "
                         f"batch, {batches:,} being the largest batch printed (the batches per epoch, to the print "
                         "interval)")
        self.notes[:0] = notes


_DETECT = (SAMPLES, COUNTERS, STEP, CIFAR)


def detect_torch_examples(window: str) -> bool:
    """Two lines of one of the templates (one alone may be a stray line of another format)."""
    return any(at_least_two(pattern.finditer(window)) for pattern in _DETECT)


class TorchExamplesReader(TextReader):
    name = "torch_examples"
    cache_version = 8  # 4: every line not of the main template read in its place, as line by line; 5: a logging prefix
    #                   after a few blanks; 6: PaddleViT's '----- Epoch[e/E], …' summaries; '@' in names (Acc@1);
    #                   7: a logger named by a path in the prefix; 8: epoch lines without a step anchor the step (a
    #                   relaunch's epochs going back are a session)
    description = ("console lines of PyTorch's examples and tutorials: 'Train Epoch: 1 [640/60000 (1%)]  Loss: …', "
                   "'Epoch [1/5], Step [100/600], Loss: …', '[Step 100/1000] Loss: …', '[1,  2000] loss: …'")
    parser = TorchExamplesParser
    behind_logging = True

    def detect(self, window: str) -> bool:
        return detect_torch_examples(window)
