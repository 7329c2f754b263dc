"""The console of PyTorch's word-language-model example and of its ``nn.Transformer`` tutorial, and of the many
language-model loops copied from them::

    | epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.68 | loss  7.63 | ppl  2050.44
    -----------------------------------------------------------------------------------------
    | end of epoch   1 | time: 140.54s | valid loss  5.54 | valid ppl   254.69
    -----------------------------------------------------------------------------------------
    =========================================================================================
    | End of training | test loss  5.01 | test ppl   150.01
    =========================================================================================

Decisions:

* **step = the batches so far**: ``(epoch − 1) × batches per epoch + batch`` of each training line (the line gives
  its batch and the batches of an epoch; epochs count from 1). Every ``name number`` of it is a tag as printed
  (``lr``, ``ms/batch``, ``loss``, ``ppl``: the loss and perplexity are the means since the line before).
* An epoch's summary is at the epoch's last batch, ``epoch × batches per epoch``: ``valid loss``, ``valid ppl``;
  the seconds the epoch took are no tag. The test of the best model after training (``| End of training |``) is at
  the last training line's step: ``test loss``, ``test ppl``.
* The lines have no time stamps: no wall time.
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
from tanalyze.readers.values import LARGEST_STEP, NUMBER

__all__ = ["PyTorchLMParser", "PyTorchLMReader", "detect_pytorch_lm"]

#: (blanks that pad a number: ``[ \t]*``, as the shapes below take them)
TRAIN = re.compile(r"^\| epoch [ \t]*(\d+) \| [ \t]*(\d+)/[ \t]*(\d+) batches \|([^\n]*)$", re.M)
SUMMARY = re.compile(r"^\| end of epoch [ \t]*(\d+) \|([^\n]*)$", re.M)
TEST = re.compile(r"^\| End of training \|([^\n]*)$", re.M)
#: ``name number`` (names of one to four words: ``valid loss``; a word that is a number, ``nan``, is none), or
#: ``name: number``; a unit may follow (``140.54s``)
_PAIR = re.compile(rf"([A-Za-z][\w/]{{0,63}}+(?: (?!(?:[nN]a[nN]|[iI]nf(?:inity)?)\b)[A-Za-z][\w/]{{0,63}}+){{0,3}}+)"
                   rf":?[ \t]+({NUMBER})")
#: the epoch summary's seconds: no measure of the model
_NOT_TAGS = frozenset({"time"})

#: the example's training line as its source prints it, read at once (see ._spans): the epoch, batch, batches per
#: epoch, lr, ms/batch, loss and ppl
_TRAIN_SHAPE = LineShape(("| epoch ", " | ", "/", " batches | lr ", " | ms/batch ", " | loss ", " | ppl ", ""),
                         (True, True, True, False, False, False, False), ("*",) * 7)
_TRAIN_TAGS = ("lr", "ms/batch", "loss", "ppl")
#: its epoch summary: the epoch, the seconds (only checked), the validation loss and perplexity
_SUMMARY_SHAPE = LineShape(("| end of epoch ", " | time: ", "s | valid loss ", " | valid ppl ", ""),
                           (True, False, False, False), ("*",) * 4, (False, True, False, False))


def _pairs(rest: str) -> list[tuple[str, float]]:
    return [(name, float(value)) for name, value in _PAIR.findall(rest) if name not in _NOT_TAGS]


class PyTorchLMParser(SpanParser, TextParser):
    family = "PyTorch word language model"
    span_prefix = "| epoch "
    span_shapes = (_TRAIN_SHAPE,)
    summary_shapes = (_SUMMARY_SHAPE,)
    lookalike = re.compile(r"^\| epoch [ \t]*\d", re.M)
    inert_lines = re.compile(r"\n(?:-++|=++)(?=\n)")  # (the rules around an epoch's summary and the test)
    patterns = ((TRAIN, "train"), (SUMMARY, "summary"), (TEST, "test"))
    state_fields = {"_batches": "last", "_summaries": "sum", "_tests": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._batches: int | None = None  # the batches of an epoch, as the last training line said
        self._summaries = 0
        self._tests = 0

    def span_rows(self, grid: np.ndarray, shape: int) -> SpanRows | None:
        epochs, batches, totals = (grid[:, k].astype(np.int64) for k in range(3))
        steps = (epochs - 1) * totals + batches
        if (steps < 0).any() or (steps > LARGEST_STEP).any():
            return None  # (named line by line)
        return _TRAIN_TAGS, steps, grid[:, 3:7].ravel()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        self._batches = int(grid[-1, 2])

    def summary_rows(self, grid: np.ndarray, shape: int, main: np.ndarray, before: np.ndarray
                     ) -> tuple[SpanRows, np.ndarray] | None:
        """An epoch's summary at its last batch: its epoch × the batches per epoch of the training line above it."""
        ends = grid[:, 0].astype(np.int64) * main[before - 1, 2].astype(np.int64)
        if (ends > LARGEST_STEP).any():
            return None
        return (("valid loss", "valid ppl"), ends, grid[:, 1:3].ravel()), np.arange(len(grid))  # (the seconds: not read)

    def summary_done(self, grid: np.ndarray, shape: int) -> None:
        self._summaries += len(grid)

    def _on_train(self, m: re.Match[str], chunk: Chunk) -> None:
        epoch, batch, batches = int(m.group(1)), int(m.group(2)), int(m.group(3))
        step = (epoch - 1) * batches + batch
        pairs = _pairs(m.group(4))
        if not pairs or not 0 <= step <= LARGEST_STEP:
            return  # (named: a look-alike line)
        self._batches = batches
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step)

    def _on_summary(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group(2))
        if not pairs:
            return
        epoch = int(m.group(1))
        end = epoch * self._batches if self._batches else None
        self.mark(chunk, m.start())
        self.rows.add_pairs(pairs, end if end is not None and end <= LARGEST_STEP else self.current_step())
        self._summaries += 1

    def _on_test(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = _pairs(m.group(1))
        if not pairs:
            return
        self.mark(chunk, m.start())
        self.rows.add_pairs(pairs, self.current_step())
        self._tests += 1

    def finish(self) -> None:
        notes = ["PyTorch word-language-model lines: step = (epoch − 1) × batches per epoch + batch; loss and ppl "
                 "the means since the line before"]
        self.count_note(self._summaries, "epoch summary(ies) (valid loss, valid ppl) at the epoch's last batch")
        self.count_note(self._tests, "test(s) after training at the last training line's step")
        self.notes[:0] = notes


def detect_pytorch_lm(window: str) -> bool:
    """Two training lines of the template."""
    return at_least_two(TRAIN.finditer(window))


class PyTorchLMReader(TextReader):
    name = "pytorch_lm"
    description = ("PyTorch word-language-model example / nn.Transformer tutorial console "
                   "('| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.68 | loss  7.63 | ppl  2050.44')")
    parser = PyTorchLMParser
    cache_version = 6  # 5: a logging prefix after a few blanks (the text readers' base is at 4); 6: a logger named by
    #                   a path in the prefix
    behind_logging = True

    def detect(self, window: str) -> bool:
        return detect_pytorch_lm(window)
