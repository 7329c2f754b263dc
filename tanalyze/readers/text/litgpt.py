"""LitGPT's training console (``litgpt pretrain``, ``litgpt finetune_lora`` / ``finetune_adapter`` / ``finetune``)::

    Epoch 1 | iter 4 step 1 | loss train: 10.772, val: n/a | iter time: 212.41 ms (step) remaining time: 2:37:17
    Validating ...
    iter 100: val loss 7.9110, val time: 6203.31 ms
    Epoch 1 | iter 21 step 5 | loss train: 1.480, val: 1.414 | iter time: 156.98 ms
    Final evaluation | val loss: 1.291 | val ppl: 3.636

and lit-gpt's older lines (before LitGPT, March 2024)::

    iter 2 step 1: loss 3.3320, iter time: 765.52ms (optimizer.step)
    step 100: val loss 1.2345, val time: 9876.54ms

Finetuning prints no remaining time; pretraining prints a line every ``log_interval`` optimizer steps. ``iter``
counts micro-batches, ``step`` optimizer steps (an optimizer step is ``gradient_accumulation_iters`` micro-batches),
and only the line of the micro-batch that ends an optimizer step carries ``(step)`` (``(optimizer.step)``).
Decisions:

* **step = the optimizer step**, for every row: optimizer steps are what runs compare (the same recipe on more
  devices, or with a smaller micro-batch, takes more iters per step), and a line's ``step`` is the one number that
  means the same in any run. The validation line gives only its ``iter``: LitGPT validates right after the
  micro-batch that ends an optimizer step, so its rows are at the step of the ``(step)`` line of that iter (the
  training values of that line and the validation share one step; lit-gpt's ``step N: val loss`` names its iter
  too). When that line was not printed (``log_interval`` not dividing ``eval.interval``), the step is that of the
  last ``(step)`` line plus the iters between over the iters per step, as the last two ``(step)`` lines show them
  (else that line's iter over its step); with no ``(step)`` line before a validation, the step of the last training
  line, counted in a note. (LitGPT's own loggers use the iter as their step: this axis is theirs over the iters per
  step.)
* **Only the lines that end an optimizer step give training rows.** The lines between (finetuning with
  ``log_interval`` 1 prints every micro-batch) carry the step before, so they would land on it, and their loss is a
  running mean that mixes the micro-batches of two optimizer steps; they are read (their ``val:`` below) and counted
  in a note, not kept. ``train_loss`` is the ``loss train`` of a ``(step)`` line: LitGPT's running mean of the loss
  over the last ``gradient_accumulation_iters`` micro-batches (of rank 0), which on that line are exactly the
  optimizer step's (a note says so); lit-gpt's older lines print the loss of that last micro-batch alone.
  ``iter_time_ms`` is the wall time of that last micro-batch (with its backward, gradient sync and optimizer step),
  in milliseconds, not of the whole optimizer step.
* ``val_loss`` and ``val_time_ms`` come from the validation line (4 decimals; in finetuning the time includes the
  sample text generated after it). The ``val:`` field of the training lines repeats the last validation's loss (3
  decimals), so it is read only for a value no validation line gave: a change of it with no validation line since
  the line before (``eval.initial_validation``, a log that begins after a validation, or one that kept only the
  training lines) is a ``val_loss`` at the step before the line that first shows it (the optimizer steps done
  before its micro-batch began), counted in a note. ``n/a`` (no validation yet) is no value.
* The epoch column is ``Epoch N`` as printed (from 1), for the validation the epoch of the training line before;
  the lines carry no time of day, so there is no wall time.
* Not tags: the remaining time (an estimate), ``Measured TFLOPs``, ``Training time``, ``Memory used``; the final
  evaluation (over the whole validation set, after training: another measure than the periodic validations) is a
  note with its numbers, not a point of the ``val_loss`` curve.

Reading: a chunk's training lines are found as runs by one pattern and their fields cut out of its characters with
numpy, the numbers parsed in bulk bit for bit as ``float()`` (see :func:`_spans`, :func:`_decimals`); a chunk with
anything else that looks like this format (a look-alike line, a NaN, a restart, a 'val:' no validation line gave)
is read by one ``findall`` of ``line`` with its lines taken at once, or, where that cannot either, line by line. The
three give the same rows, notes and restarts (tests).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from itertools import chain, compress
from pathlib import Path
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.text._shaped import stretches
from tanalyze.readers.values import LARGEST_STEP, NUMBER_CHARS, NUMBER_PATTERN

__all__ = ["LitGPTParser", "LitGPTReader", "detect_litgpt"]

#: a training line: epoch, iter, step, loss, val (a number or n/a), iter time, the "(step)" marker
_TRAIN = (rf"Epoch ([0-9]++) \| iter ([0-9]++) step ([0-9]++) \| loss train: ({NUMBER_CHARS}), val: (n/a|{NUMBER_CHARS}) \| iter time: "
          rf"({NUMBER_CHARS}) ms( \(step\))?(?: remaining time: [^\n]*+)?")
#: a validation line (lit-gpt's says "step" for its iter): iter, loss, time
_VALID = rf"(?:iter|step) ([0-9]++): val loss ({NUMBER_CHARS}), val time: ({NUMBER_CHARS}) ?ms"
#: lit-gpt's training line (``iter N | step M: …`` for a while): iter, step, loss, iter time, the
#: "(optimizer.step)" marker (its pretraining scripts add the remaining time)
_LEGACY = (rf"iter ([0-9]++) (?:\| )?step ([0-9]++): loss ({NUMBER_CHARS}), iter time: ({NUMBER_CHARS}) ?ms( \(optimizer\.step\))?,?"
           r"(?: remaining time: [^\n]*+)?")
#: the final evaluation: its numbers as printed (a note)
_FINAL = r"Final evaluation \| (val loss: [^\n]*+)"
#: how a line that looks like a training or validation line begins (any digits: one of others is named)
_LOOKALIKE_START = r"(?:Epoch \d+ \| iter \d|iter \d+ (?:\| )?step \d+:|(?:iter|step) \d+: val loss)"
#: every line read, from its line break (see ._findall), one alternative a kind: a training line, a validation line,
#: an older training line, the final evaluation, or a line that looks like one of the first three but is not (its
#: text); each fails at its first characters on other lines (the look-ahead refuses most at once)
_LINE = re.compile(rf"\n(?=[EisF])(?:{_TRAIN}|{_VALID}|{_LEGACY}|{_FINAL}|({_LOOKALIKE_START}[^\n]*))[ \t]*(?=\n)")
#: runs of training lines, each with its line break (a chunk's training lines read at once): the lines of
#: ``_TRAIN`` with a decimal number in each number field and nothing after (others leave the chunk to ``line``)
_D = r"[-+.0-9eE]++"
_TRAIN_RUNS = re.compile(rf"\n(?:Epoch [0-9]++ \| iter [0-9]++ step [0-9]++ \| loss train: {_D}, val: (?:n/a|{_D}) \| "
                         rf"iter time: {_D} ms(?: \(step\))?(?: remaining time: [^\n]*+)?\n)+")
#: the same of lit-gpt's training lines
_LEGACY_RUNS = re.compile(rf"\n(?:iter [0-9]++ (?:\| )?step [0-9]++: loss {_D}, iter time: {_D} ?ms"
                          r"(?: \(optimizer\.step\))?,?(?: remaining time: [^\n]*+)?\n)+")
#: the lines a chunk read at once may have besides runs of training lines: a validation line (iter, loss, time), the
#: final evaluation (its numbers), a line that looks like a training or validation line but is in no run (its text)
_OTHER = re.compile(rf"\n(?=[EisF])(?:{_VALID}[ \t]*(?=\n)|{_FINAL}|({_LOOKALIKE_START}[^\n]*))")
_TRAIN_TAGS = ("train_loss", "iter_time_ms")
_VALID_TAGS = ("val_loss", "val_time_ms")


def _number(token: str) -> float | None:
    return float(token) if NUMBER_PATTERN.fullmatch(token) else None


def _validation_step(iteration: int, step_line: tuple[int, int] | None, per_step: int | None,
                     last_step: int | None) -> tuple[int, bool]:
    """The optimizer step of a validation at ``iteration``, and whether it was only guessed: that of the last line
    that ended an optimizer step (its iter and step) when it is of that iter, else that line's step plus the iters
    between over ``per_step`` (the iters per step two such lines showed, else that line's iter over its step); with
    no such line (or no whole number of steps between), the step of the last training line."""
    if step_line is not None:
        line_iter, line_step = step_line
        if iteration == line_iter:
            return line_step, False
        if per_step is None and line_step > 0 and line_iter % line_step == 0:
            per_step = line_iter // line_step
        if per_step and (iteration - line_iter) % per_step == 0 and line_step + (iteration - line_iter) // per_step >= 0:
            return line_step + (iteration - line_iter) // per_step, False
    return (last_step if last_step is not None else 0), True


#: 10**k as exact doubles
_POWERS = 10.0 ** np.arange(16)
#: the widest field read by :func:`_integers` and :func:`_decimals`
_WIDEST = 16


def _aligned(windows: np.ndarray, first: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The texts from ``first[i]`` to ``end[i]`` (at most ``_WIDEST`` characters) as the rows of a matrix of their
    characters less 48 (the digits' values), right-aligned, as wide as the longest, the cells left of a text 0;
    ``windows``: the ``_WIDEST`` characters from each position, the first row ``_WIDEST`` characters before the
    text's start."""
    lengths = end - first
    width = int(lengths.max())
    inside = np.arange(width) >= (width - lengths)[:, None]
    return (windows[end - width + _WIDEST][:, :width] - np.uint8(48)) * inside


def _integers(windows: np.ndarray, first: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Texts of digits (1 to 15) as numbers (exact doubles)."""
    digits = _aligned(windows, first, end)
    return digits.astype(np.float64) @ _POWERS[digits.shape[1] - 1::-1]


def _decimals(windows: np.ndarray, first: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """Texts of digits with one dot, each with as many digits after it (as a format string prints them; at most 15
    characters), as numbers, each as ``float()`` reads it: its digits as an integer over 10**k (k: the digits after
    the dot), both exact doubles, so the quotient is the correctly rounded value (see ._numbers); None for any other
    texts (those are parsed as numbers one by one)."""
    lengths = end - first
    if int(lengths.max()) > 15 or int(lengths.min()) < 2:
        return None
    digits = _aligned(windows, first, end)
    width = digits.shape[1]
    dot = int(np.argmax(digits[0] == np.uint8(254)))  # ("." is 46)
    if not (digits[:, dot] == np.uint8(254)).all() or int(np.count_nonzero(digits > 9)) != len(digits):
        return None  # (another number of decimals, no dot, a sign, an exponent)
    powers = _POWERS[width - 1::-1].copy()
    powers[:dot] /= 10
    powers[dot] = 0
    return (digits.astype(np.float64) @ powers) / _POWERS[width - 1 - dot]


def _cut(chars: np.ndarray, first: np.ndarray, end: np.ndarray) -> str:
    """The texts ``chars[first[i]:end[i]]`` one after the other, a space between."""
    stop = end + 1  # (each with the character after it, then made a space)
    picked = chars[stretches(first, stop)]
    picked[np.cumsum(stop - first) - 1] = 32
    return picked[:-1].tobytes().decode("ascii")


_Span = tuple[np.ndarray, np.ndarray]


def _spans(chars: np.ndarray, starts: np.ndarray, legacy: bool
           ) -> tuple[tuple[_Span, _Span, _Span, _Span], np.ndarray, _Span | None, _Span | None]:
    """Where the fields of the training lines beginning at ``starts`` are (lines a run pattern took, so each field
    ends where a character no field has comes): the iter's, the step's, the loss's and the time's (first and end
    positions), which lines end an optimizer step, and where the epoch and the 'val:' are (None in lit-gpt's
    lines).

    LitGPT's ``Epoch E | iter I step S | loss train: L, val: V | iter time: T ms (step)`` by its first three bars and
    the first ``s``, comma and ``m`` after them; lit-gpt's ``iter I step S: loss L, iter time: T ms (optimizer.step)``
    (or ``iter I | step S``, ``Tms``) by the first ``s`` after the iter and the first colon, comma and ``m`` after."""
    def first_after(char: str, positions: np.ndarray) -> np.ndarray:
        found = np.flatnonzero(chars == ord(char))
        return found[np.searchsorted(found, positions)]

    if legacy:
        step_s = first_after("s", starts + 5)
        colon = first_after(":", step_s)
        comma = first_after(",", colon)
        em = first_after("m", comma + 13)  # (", iter time: T ms": the m of "ms")
        iters = (starts + 5, np.where(chars[step_s - 2] == 124, step_s - 3, step_s - 1))
        spans = (iters, (step_s + 5, colon), (colon + 7, comma), (comma + 13, np.where(chars[em - 1] == 32, em - 1, em)))
        epoch = val = None
    else:
        bars = np.flatnonzero(chars == 124)
        first_bar = np.searchsorted(bars, starts)  # (the line's first three: no field before has one)
        bar0, bar1, bar2 = bars[first_bar], bars[first_bar + 1], bars[first_bar + 2]
        step_s = first_after("s", bar0 + 7)  # ("| iter I step S |": the s of "step")
        comma = first_after(",", bar1)  # ("| loss train: L, val: V |")
        em = first_after("m", bar2 + 13)  # ("| iter time: T ms (step)": the m of "ms")
        spans = ((bar0 + 7, step_s - 1), (step_s + 5, bar1 - 1), (bar1 + 14, comma), (bar2 + 13, em - 1))
        epoch, val = (starts + 6, bar0 - 1), (comma + 7, bar2 - 1)
    marks = (chars[em + 2] == 32) & (chars[em + 3] == 40)  # ("ms (step)", "ms (optimizer.step)")
    return spans, marks, epoch, val


class _Lines:
    """A chunk's lines read at once, before their rows are added: the training lines (where each is, in line order:
    ``at``; their numbers; which end an optimizer step; their 'val:' texts, by index, and where a text differs from
    the one before), the validation lines (where, their iters, their loss and time in turn) and the final
    evaluations' texts."""

    def __init__(self, at: np.ndarray, numbers: np.ndarray, marks: np.ndarray, legacy: bool,
                 val_at: Callable[[int], str] | None, val_changes: np.ndarray, valid_at: list[int],
                 valid_iters: list[int], valid_values: list[float], finals: list[str]) -> None:
        self.at, self.marks, self.legacy = at, marks, legacy
        self.iters, self.steps, self.losses, self.times = numbers[0], numbers[1], numbers[2], numbers[3]
        self.epochs = None if legacy else numbers[4]
        self.val_at, self.val_changes = val_at, val_changes
        self.valid_at, self.valid_iters, self.valid_values = valid_at, valid_iters, valid_values
        self.finals = finals


class LitGPTParser(FindallParser):
    family = "LitGPT"
    lookalike = re.compile(rf"^{_LOOKALIKE_START}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n{_LOOKALIKE_START}")
    #: read every chunk line by line (not its lines at once); for tests
    line_by_line: ClassVar[bool] = False
    state_fields = {"_step_iter": "last", "_step_step": "last", "_per_step": "last", "_last_train_step": "last",
                    "_epoch": "last", "_val_text": "last", "_validated": "last", "_steps": "sum",
                    "_legacy_steps": "sum", "_between": "sum", "_validations": "sum", "_guessed": "sum",
                    "_val_field": "sum", "_final": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._step_iter: int | None = None  # the iter and step of the last line that ended an optimizer step
        self._step_step: int | None = None
        self._per_step: int | None = None  # the iters per optimizer step, as the last two such lines showed
        self._last_train_step: int | None = None  # the step of the last training line, whatever its kind
        self._epoch: float | None = None  # the epoch of the last training line (None: none, or lit-gpt's)
        self._val_text: str | None = None  # the 'val:' of the last training line
        self._validated = False  # a validation line since that line
        self._steps = 0  # lines that ended an optimizer step, kept
        self._legacy_steps = 0  # of them, lit-gpt's
        self._between = 0  # lines inside an optimizer step, not kept
        self._validations = 0
        self._guessed = 0  # validations at the step of the last training line (no '(step)' line before)
        self._val_field = 0  # val_loss points from a 'val:' that no validation line gave
        self._final: str | None = None
        self._lookalikes = 0

    def feed(self, chunk: Chunk) -> None:
        """The training lines cut out of the chunk's characters with numpy when the chunk allows (see
        :meth:`_read_at_once`), else its lines found by ``line`` (:meth:`take`)."""
        if not self.line_by_line and (chunk.contains("\nEpoch ") or chunk.contains(" step ")) and \
                self._read_at_once(chunk):
            self.scan_ranges = []  # (every look-alike line was read)
            return
        super().feed(chunk)

    def count_lookalikes(self, text: str) -> int:
        """The look-alike lines ``line`` found in the last :meth:`take` (read or not): no second scan."""
        return self._lookalikes

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        if not found:
            self._lookalikes = 0
            return 0, 0
        lines = None if self.line_by_line else self._found_at_once(found)
        if lines is not None and self._take_lines(lines):
            read, main = len(found), len(lines.at) + len(lines.valid_at)
        else:
            read, main = self._line_by_line(chunk, text, found)
        self._lookalikes = main + len(self.unread_matches)
        return read, main

    # -- every line on its own (any chunk; the reference the lines read at once equal) ----------------------------
    def _line_by_line(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        codes: list[int] = []
        steps: list[int] = []
        values: list[float] = []
        epochs: list[float] = []
        train_codes, valid_codes = self.rows.codes(_TRAIN_TAGS), self.rows.codes(_VALID_TAGS)
        val_loss_code = valid_codes[0]
        unread = self.unread_matches
        main = 0
        for index, (epoch, iteration, step, loss, val, time, mark, v_iter, v_loss, v_time, l_iter, l_step, l_loss,
                    l_time, l_mark, final, lookalike) in enumerate(found):
            if final:
                self._final = final.strip()
                continue
            if lookalike:
                unread.add(index)
                continue
            if v_iter:
                numbers = (_number(v_loss), _number(v_time))
                if int(v_iter) > LARGEST_STEP or None in numbers:
                    unread.add(index)
                    continue
                step_line = (self._step_iter, self._step_step) if self._step_iter is not None else None
                at, guessed = _validation_step(int(v_iter), step_line, self._per_step, self._last_train_step)
                self._guessed += guessed
                self._validations += 1
                self._validated = True
                codes += valid_codes
                steps += (at, at)
                values += numbers
                epochs += (self._line_epoch(), self._line_epoch())
                main += 1
                continue
            legacy = not iteration
            if legacy:
                iteration, step, loss, time, mark = l_iter, l_step, l_loss, l_time, l_mark
            numbers = (_number(loss), _number(time))
            if (int(iteration) > LARGEST_STEP or int(step) > LARGEST_STEP or None in numbers
                    or not (legacy or val == "n/a" or NUMBER_PATTERN.fullmatch(val))):
                unread.add(index)
                continue
            main += 1
            step_number = int(step)
            line_epoch = math.nan if legacy else float(epoch)
            if not legacy:
                if val != self._val_text and val != "n/a" and not self._validated:
                    codes.append(val_loss_code)
                    steps.append(max(step_number - 1, 0) if mark else step_number)
                    values.append(float(val))
                    epochs.append(line_epoch)
                    self._val_field += 1
                self._val_text = val
            self._validated = False
            self._epoch = None if legacy else line_epoch
            self._last_train_step = step_number
            if not mark:
                self._between += 1
                continue
            previous = self._last_anchor.get(-1)
            if previous is not None and step_number < previous:  # a restart: recorded at its line
                self.anchor(step_number, chunk, self.match_start(text, index))
            else:
                self.anchor(step_number, None, 0)
            if self._step_iter is not None and self._step_step is not None and step_number > self._step_step:
                iters, steps_between = int(iteration) - self._step_iter, step_number - self._step_step
                if iters % steps_between == 0:
                    self._per_step = iters // steps_between
            self._step_iter, self._step_step = int(iteration), step_number
            self._steps += 1
            self._legacy_steps += legacy
            codes += train_codes
            steps += (step_number, step_number)
            values += numbers
            epochs += (line_epoch, line_epoch)
        if codes:
            self.rows.extend(codes, steps, values, epoch=epochs)
        return len(found) - len(unread), main

    def _line_epoch(self) -> float:
        return math.nan if self._epoch is None else self._epoch

    # -- a chunk's training lines cut out of its characters --------------------------------------------------------
    def _read_at_once(self, chunk: Chunk) -> bool:
        """The chunk's lines read at once, the fields of its training lines cut out of its characters with numpy
        (:func:`_spans`): the runs of training lines (LitGPT's, else lit-gpt's) found by one pattern, the lines
        between them by another; False (nothing changed) for a chunk that is not ASCII, has a line that looks like
        this format's but is neither in a run nor a validation line, a 'val:' or an epoch longer than 8 characters,
        an iter or a step longer than 15, or that :meth:`_take_lines` leaves to line-by-line reading."""
        text = chunk.text
        if chunk.incomplete or not text.endswith("\n") or not text.isascii():
            return False
        body = "\n" + text  # (every line after a line break: positions are one on)
        legacy = False
        runs = np.array([m.span() for m in _TRAIN_RUNS.finditer(body)], dtype=np.int64).reshape(-1, 2)
        if not len(runs):
            legacy = True
            runs = np.array([m.span() for m in _LEGACY_RUNS.finditer(body)], dtype=np.int64).reshape(-1, 2)
            if not len(runs):
                return False
        valid_at: list[int] = []
        valid_iters: list[int] = []
        valid_values: list[float] = []
        finals: list[str] = []
        gaps = zip(chain([0], (runs[:, 1] - 1).tolist()), chain((runs[:, 0] + 1).tolist(), [len(body)]),
                   strict=True)
        for low, high in gaps:  # (the lines between runs)
            for m in _OTHER.finditer(body, low, high):
                iteration, loss, time, final, other = m.groups()
                if other:
                    return False  # (a line like a training or validation line that is not one)
                if final:
                    finals.append(final.strip())
                    continue
                numbers = (_number(loss), _number(time))
                if int(iteration) > LARGEST_STEP or None in numbers:
                    return False
                valid_at.append(m.start())
                valid_iters.append(int(iteration))
                valid_values += numbers
        # (blanks before and after: a window of _WIDEST characters from every position of the text, and before)
        padded = np.frombuffer((" " * _WIDEST + body + " " * _WIDEST).encode("ascii"), dtype=np.uint8)
        windows = as_strided(padded, (len(padded) - _WIDEST + 1, _WIDEST), (1, 1))
        keys = windows[_WIDEST:, :8]  # (the 8 characters from each position)
        chars = padded[_WIDEST:]
        breaks = np.flatnonzero(chars == 10)
        starts = breaks[stretches(np.searchsorted(breaks, runs[:, 0]), np.searchsorted(breaks, runs[:, 1] - 1))] + 1
        count = len(starts)
        (iters, steps, losses, times), marks, epoch, val = _spans(chars, starts, legacy)
        firsts, ends = [iters[0], steps[0]], [iters[1], steps[1]]
        if not legacy:  # (the epochs read where they change: "E | iter" the same where the epoch is)
            assert epoch is not None and val is not None
            if int((epoch[1] - epoch[0]).max()) > 8:
                return False
            epoch_keys = keys[epoch[0]].view(np.uint64).ravel()
            new_epochs = np.flatnonzero(np.concatenate(([True], epoch_keys[1:] != epoch_keys[:-1])))
            firsts.append(epoch[0][new_epochs])
            ends.append(epoch[1][new_epochs])
        firsts, ends = np.concatenate(firsts), np.concatenate(ends)
        if int((ends - firsts).max()) > 15:
            return False  # (more digits: told exactly line by line)
        integers = _integers(windows, firsts, ends)  # (digits only: the pattern took them so)
        loss_values, time_values = _decimals(windows, *losses), _decimals(windows, *times)
        if loss_values is None or time_values is None:  # (a sign, an exponent, decimals that vary, more digits)
            decimals, valid = parse_some_numbers(_cut(chars, np.concatenate((losses[0], times[0])),
                                                      np.concatenate((losses[1], times[1]))))
            if not valid.all():
                return False
        else:
            decimals = np.concatenate((loss_values, time_values))
        numbers = [integers[:2 * count], decimals]
        val_at, changes = None, np.empty(0, dtype=np.int64)
        if not legacy:
            changed = np.zeros(count, dtype=np.int64)
            changed[new_epochs] = 1
            numbers.append(integers[2 * count:][np.cumsum(changed) - 1])
            # each 'val:' as the 8 characters from its start (a shorter one followed by " | iter…", which no 'val:'
            # has): equal where the texts are
            val_first, val_end = val
            if int((val_end - val_first).max()) > 8:
                return False
            val_keys = keys[val_first].view(np.uint64).ravel()
            changes = np.flatnonzero(val_keys[1:] != val_keys[:-1]) + 1

            def val_at(index: int) -> str:
                return body[int(val_first[index]):int(val_end[index])]

        lines = _Lines(starts, np.concatenate(numbers).reshape(-1, count), marks, legacy, val_at, changes, valid_at,
                       valid_iters, valid_values, finals)
        if not self._take_lines(lines):
            return False
        self.parsed_lines += count + len(valid_at) + len(finals)
        return True

    # -- a chunk's lines found by ``line``, at once ----------------------------------------------------------------
    def _found_at_once(self, found: list[tuple[str, ...]]) -> _Lines | None:
        """The lines ``line`` found in a chunk, as :class:`_Lines`; None for a chunk with a line not read, lines of
        both formats, or a step too large."""
        n = len(found)
        (epoch, iteration, step, loss, val, time, mark, v_iter, v_loss, v_time, l_iter, l_step, l_loss, l_time,
         l_mark, final, lookalike) = zip(*found, strict=True)
        if any(lookalike):
            return None
        legacy = any(l_iter)
        if legacy:
            if any(iteration):
                return None
            iteration, step, loss, time, mark = l_iter, l_step, l_loss, l_time, l_mark
        trains = np.flatnonzero(np.fromiter(map(bool, iteration), bool, n))
        count = len(trains)
        whole = count == n

        def picked(column: tuple[str, ...]) -> tuple[str, ...] | list[str]:
            return column if whole else list(compress(column, iteration))

        columns = [picked(iteration), picked(step), picked(loss), picked(time)]
        if not legacy:
            columns.append(picked(epoch))
        joined = " ".join(chain.from_iterable(columns))
        values, valid = parse_some_numbers(joined) if count else (np.empty(0), np.empty(0, bool))
        if not valid.all():
            return None
        if ("n" in joined or "N" in joined) and not all(map(NUMBER_PATTERN.fullmatch, chain(columns[2], columns[3]))):
            return None  # (float() takes "INF" and "nAn" too)
        values = values.reshape(len(columns), count)
        if count and (values[0].max() >= LARGEST_STEP or values[1].max() >= LARGEST_STEP):
            return None  # (told exactly line by line)
        valid_at, valid_iters, valid_values = [], [], []
        for index in np.flatnonzero(np.fromiter(map(bool, v_iter), bool, n)).tolist():
            numbers = (_number(v_loss[index]), _number(v_time[index]))
            if int(v_iter[index]) > LARGEST_STEP or None in numbers:
                return None
            valid_at.append(index)
            valid_iters.append(int(v_iter[index]))
            valid_values += numbers
        finals = [text.strip() for text in final if text]
        marks = np.fromiter(map(bool, picked(mark)), bool, count)
        if legacy:
            return _Lines(trains, values, marks, True, None, np.empty(0, np.int64), valid_at, valid_iters,
                          valid_values, finals)
        vals = picked(val)
        texts = np.array(vals)
        changes = np.flatnonzero(texts[1:] != texts[:-1]) + 1
        return _Lines(trains, values, marks, False, vals.__getitem__, changes, valid_at, valid_iters, valid_values,
                      finals)

    # -- the rows of lines read at once ---------------------------------------------------------------------------
    def _take_lines(self, lines: _Lines) -> bool:
        """The rows and state of a chunk's lines read at once, as :meth:`_line_by_line` gives them; False (nothing
        changed) for a chunk it leaves to that: a restart, a 'val:' that is no number or that no validation line
        gave, a validation before lit-gpt's lines whose epoch LitGPT's lines above gave."""
        count = len(lines.at)
        marks = lines.marks
        step_iters, step_steps = lines.iters[marks].astype(np.int64), lines.steps[marks].astype(np.int64)
        if not self.anchors_go_on(step_steps):
            return False  # (a restart: recorded at its line)
        valid_at = np.array(lines.valid_at, dtype=np.int64)
        if lines.val_at is not None and count and self._val_field_taken(lines, valid_at):
            return False
        train_steps = lines.steps.astype(np.int64)
        epochs = lines.epochs
        ratios, known = self._per_steps(step_iters, step_steps)
        step_lines = lines.at[marks]
        valid_steps, valid_epochs, guessed = [], [], 0
        step_before = (np.searchsorted(step_lines, valid_at) - 1).tolist()  # (the lines above each validation)
        train_before = (np.searchsorted(lines.at, valid_at) - 1).tolist()
        for k, j, iteration in zip(step_before, train_before, lines.valid_iters, strict=True):
            if k >= 0:
                step_line = int(step_iters[k]), int(step_steps[k])
                per_step = int(ratios[known[k]]) if known[k] >= 0 else self._per_step
            else:
                step_line = (self._step_iter, self._step_step) if self._step_iter is not None else None
                per_step = self._per_step
            last_step = int(train_steps[j]) if j >= 0 else self._last_train_step
            at, was_guessed = _validation_step(iteration, step_line, per_step, last_step)
            guessed += was_guessed
            valid_steps.append(at)
            if j >= 0:
                valid_epochs.append(math.nan if epochs is None else float(epochs[j]))
            elif lines.legacy and self._epoch is not None:
                return False  # (lit-gpt's lines after LitGPT's: their validation's epoch told line by line)
            else:
                valid_epochs.append(self._line_epoch())
        self._add_rows(lines.at[marks], train_steps[marks], lines.losses[marks], lines.times[marks],
                       None if epochs is None else epochs[marks], valid_at, valid_steps, lines.valid_values,
                       valid_epochs)
        if lines.finals:
            self._final = lines.finals[-1]
        if len(step_steps):
            self.anchor(int(step_steps[-1]), None, 0)
            self._step_iter, self._step_step = int(step_iters[-1]), int(step_steps[-1])
            if known[-1] >= 0:
                self._per_step = int(ratios[known[-1]])
        kept = len(step_steps)
        self._steps += kept
        self._legacy_steps += kept if lines.legacy else 0
        self._between += count - kept
        self._validations += len(valid_at)
        self._guessed += guessed
        if count:
            self._last_train_step = int(train_steps[-1])
            self._epoch = None if epochs is None else float(epochs[-1])
            if lines.val_at is not None:
                self._val_text = lines.val_at(count - 1)
        if len(valid_at):
            self._validated = not count or int(valid_at[-1]) > int(lines.at[-1])
        elif count:
            self._validated = False
        return True

    def _per_steps(self, iters: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The iters per optimizer step each of a chunk's lines that ended one (``iters``, ``steps``) showed with the
        one before (0 where it showed none), and for each line the index of the last that showed one up to it (-1:
        none in the chunk, the parser's ``_per_step`` holds): as the lines read one by one update ``_per_step``."""
        count = len(iters)
        if not count:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        known_before = self._step_step is not None
        previous_iters = np.concatenate(([self._step_iter if known_before else 0], iters[:-1]))
        previous_steps = np.concatenate(([self._step_step if known_before else 0], steps[:-1]))
        steps_between, iters_between = steps - previous_steps, iters - previous_iters
        shown = steps_between > 0
        shown[shown] = iters_between[shown] % steps_between[shown] == 0
        shown[0] &= known_before
        ratios = np.zeros(count, np.int64)
        ratios[shown] = iters_between[shown] // steps_between[shown]
        return ratios, np.maximum.accumulate(np.where(shown, np.arange(count), -1))

    def _val_field_taken(self, lines: _Lines, valid_at: np.ndarray) -> bool:
        """Whether a training line of the chunk shows a 'val:' that is no number, or one that changed with no
        validation line since the training line before (a point the lines read one by one add)."""
        val_at, at = lines.val_at, lines.at
        assert val_at is not None
        changes = lines.val_changes.tolist()
        if val_at(0) != self._val_text:
            changes.insert(0, 0)
        for j in changes if changes and changes[0] == 0 else [0, *changes]:
            text = val_at(j)
            if text != "n/a" and not NUMBER_PATTERN.fullmatch(text):
                return True
        for j in changes:
            if val_at(j) == "n/a":
                continue
            if j == 0:
                validated = self._validated or int(np.searchsorted(valid_at, at[0])) > 0
            else:
                validated = int(np.searchsorted(valid_at, at[j])) > int(np.searchsorted(valid_at, at[j - 1]))
            if not validated:
                return True
        return False

    def _add_rows(self, trains: np.ndarray, steps: np.ndarray, losses: np.ndarray, times: np.ndarray,
                  epochs: np.ndarray | None, validations: np.ndarray, valid_steps: list[int],
                  valid_values: list[float], valid_epochs: list[float]) -> None:
        """Two rows for each line that ended an optimizer step (where: ``trains``) and each validation (where:
        ``validations``), in line order."""
        if not len(trains) and not len(validations):
            return
        train_codes, valid_codes = self.rows.codes(_TRAIN_TAGS), self.rows.codes(_VALID_TAGS)
        if not len(validations):  # (the usual chunk: no validation in it)
            self.rows.extend(np.tile(np.array(train_codes, dtype=np.int32), len(trains)), np.repeat(steps, 2),
                             np.column_stack((losses, times)).ravel(),
                             epoch=np.repeat(epochs, 2) if epochs is not None else math.nan)
            return
        order = np.argsort(np.concatenate((trains, validations)), kind="stable")
        line_codes = np.concatenate((np.tile(np.array(train_codes, dtype=np.int32), (len(trains), 1)),
                                     np.tile(np.array(valid_codes, dtype=np.int32), (len(validations), 1))))[order]
        line_steps = np.concatenate((steps, np.array(valid_steps, dtype=np.int64)))[order]
        line_values = np.concatenate((np.column_stack((losses, times)),
                                      np.array(valid_values, dtype=np.float64).reshape(-1, 2)))[order]
        if epochs is None:
            epoch_column: float | np.ndarray = math.nan
        else:
            epoch_column = np.repeat(np.concatenate((epochs, np.array(valid_epochs, dtype=np.float64)))[order], 2)
        self.rows.extend(line_codes.ravel(), np.repeat(line_steps, 2), line_values.ravel(), epoch=epoch_column)

    def finish(self) -> None:
        notes = []
        if self._steps > self._legacy_steps:
            notes.append("LitGPT console: step = the optimizer step ('step N'; 'iter N' counts micro-batches); "
                         "train_loss and iter_time_ms from the lines that end an optimizer step ('(step)'): "
                         "train_loss is LitGPT's running mean of the loss over the gradient-accumulation window (on "
                         "those lines, the step's own micro-batches, on rank 0), iter_time_ms the time of the step's "
                         "last micro-batch in ms")
        if self._legacy_steps:
            notes.append("lit-gpt console ('iter N step M: loss …'): step = the optimizer step M; train_loss and "
                         "iter_time_ms from the lines that end an optimizer step ('(optimizer.step)'): the loss and "
                         "the time in ms of the step's last micro-batch alone")
        for count, text in (
                (self._between, "line(s) inside an optimizer step's gradient accumulation (no '(step)') not kept: "
                                "they carry the step before (and LitGPT's running mean on them mixes the micro-batches "
                                "of two steps)"),
                (self._validations, "validation(s) as val_loss and val_time_ms at the optimizer step that ends at "
                                    "their iter"),
                (self._guessed, "validation(s) whose optimizer step no line before them tells (no '(step)' line "
                                "before, or no whole number of steps since): at the step of the last training line"),
                (self._val_field, "validation loss(es) shown only in the training lines' 'val:' (3 decimals; "
                                  "eval.initial_validation, or a validation line not in the log): val_loss at the "
                                  "step before the line that first shows it")):
            if count:
                notes.append(f"{count:,} {text}")
        if self._final is not None:
            notes.append(f"final evaluation (the whole validation set, after training; not a curve point): "
                         f"{self._final}")
        self.notes[:0] = notes


def detect_litgpt(window: str) -> bool:
    """Two training lines of LitGPT (or of lit-gpt before it)."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(2) or m.group(11))


class LitGPTReader(TextReader):
    name = "litgpt"
    description = ("LitGPT console ('Epoch 1 | iter 4 step 1 | loss train: 10.772, val: n/a | iter time: 212.41 ms "
                   "(step) …')")
    parser = LitGPTParser

    def detect(self, window: str) -> bool:
        return detect_litgpt(window)
