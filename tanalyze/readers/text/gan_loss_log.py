"""The pix2pix / CycleGAN family's ``loss_log.txt`` (junyanz/pytorch-CycleGAN-and-pix2pix's ``util/visualizer.py``),
and the same lines in the console of its ``train.py`` (with those of its forks: pix2pixHD, CUT/FastCUT, DCLGAN,
SPADE …)::

    ================ Training Loss (Sun Mar  1 12:00:00 2020) ================
    (epoch: 1, iters: 100, time: 0.352, data: 0.184) D_A: 0.357 G_A: 0.364 cycle_A: 3.155 idt_A: 1.086 D_B: 0.381 …
    (epoch: 1, iters: 100, time: 0.573) G_GAN: 1.121 G_GAN_Feat: 5.887 G_VGG: 6.070 D_real: 0.696 D_fake: 0.642

    (the console only)
    saving the latest model (epoch 2, total_iters 5000)
    saving the model at the end of epoch 5, iters 2000
    End of epoch 1 / 200 	 Time Taken: 7 sec
    learning rate 0.0002000 -> 0.0002000

Decisions:

* **step = the samples seen since the start**, as the framework counts them (a ``batch_size`` per iteration, a last
  smaller batch counted whole): the samples of the epochs before plus the line's ``iters``, which counts the samples
  of its epoch so far. The log never says how many samples an epoch has; each epoch's start is found online, from
  the lines up to its first one (a log that grew is read on from where it stopped, and no later line moves a row):

  - within one training the lines come every ``interval`` samples of its whole count (``total_iters % print_freq``),
    the interval being the step between two lines of an epoch. So the epoch after one whose last line was at
    ``iters`` L begins between L and L + interval samples later, at the one place where its first line falls on
    the interval: exact, once the interval is known;
  - the console's ``saving the model at the end of epoch e, iters T`` says where epoch e ended (T counts the samples
    since this training began), and ``saving the latest model (epoch e, total_iters T)`` right after a line of
    epoch e (of the same iteration where T falls on the interval) where that epoch began: taken where the start
    was estimated;
  - otherwise the start is estimated: before an interval is known, right after the last line of the epoch before;
    at the start of a training continued at the next epoch (no count since the start to go by), the epoch before
    as long as the last one whose length was found, else its last ``iters`` plus the interval. A note counts
    these starts.

  A counter that does not start over with a new epoch (one that counts past the interval) is taken as it is.
* **A continued training** (``--continue_train --epoch_count N``: a new ``Training Loss`` header, or in the console a
  new ``Options`` banner, before an epoch that is not the next one; or an epoch going back, or begun again: its
  iters going back) is a session of the run that goes on after the samples seen before it: the step counts every
  sample trained on, those of the epochs it runs again too (its own count starts over, so its lines fall at other
  samples than the first attempt's: placed back over them, the two attempts' points would interleave); the epoch
  column keeps the epochs as printed, and a note counts such trainings. A training continued at the next epoch goes
  on as well, at the next epoch's start.
* **Tags**: each ``name: value`` of a line, every one a loss (the log's name says so, the framework logs its
  ``loss_<name>`` attributes), as ``loss/<name>`` (``loss/D_A``, ``loss/G_GAN``, ``loss/cycle_A``, ``loss/NCE`` …),
  which tells the roles a GAN's generator and discriminator sides (names with no loss word were no loss at all for
  them); ``time``, the
  seconds of computation per sample (the iteration's divided by ``batch_size``), as ``sample_time_s``, and
  ``data``, the seconds the iteration waited for its data, as ``data_time_s``: how fast the training went, and
  whether it waited on its data loader. (Not ``time_per_sample_s``: the roles read "… per sample s" as samples per
  second, a throughput, which a time per sample runs against.) The epoch column is the line's epoch.
* The console's ``End of epoch e / n  Time Taken: s sec`` is ``epoch_time_s`` at the step of epoch e's last line;
  ``learning rate a -> b`` (older: ``learning rate = b``) is ``lr`` (the new value) at the step of the last line
  before it (at the end of the epoch before the one it is for). One printed at a training's start, before any line
  of it, is at the step that training starts from.
* No evaluations: the family prints none. No wall time: the lines carry none (the header's local time, of an unknown
  zone, only dates a training's start). The ``total_steps`` saving lines of older trees and of pix2pixHD are not
  taken (pix2pixHD's count from the first epoch, the older ones from the training's start: no one meaning).

Speed: one ``findall`` a chunk (see ._findall), its other lines found apart from the loss lines by one group; each
stretch of one epoch's loss lines (its iters rising) is taken at once, its pairs by the template of its first line
(:func:`._pairs.template`, matched from each line break, its numbers runs of the characters numbers have, checked
when parsed) and parsed together.
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
from tanalyze.readers.text._pairs import PAIR, template
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER_CHARS, NUMBER_ONCE, NUMBER_PATTERN

__all__ = ["GanLossLogParser", "GanLossLogReader", "detect_gan_loss_log"]

_N = NUMBER_ONCE
#: every line read, from its line break (see ._findall): a loss line (epoch, iters, time, data, its pairs), or one of the
#: family's other lines (its text, read by ``_OTHER``): a training's header, the console's options banner, the saving
#: lines, an epoch's end, a learning rate, and a line that looks like a loss line but is not one
_LINE = re.compile(
    rf"\n(?:\(epoch: (\d+), iters: (\d+)(?:/\d+)?(?:, time: ({_N})(?:, data: ({_N}))?)?\) ?([^\n]*)"
    r"|((?:=+ Training Loss \(|-+ Options -+|saving the (?:latest model \(|model at the end of epoch )|End of epoch \d"
    r"|learning rate (?:[-+.\w]+ ->|=)|\(epoch: \d)[^\n]*))[ \t]*(?=\n)")
#: those other lines: a header (its time), the banner, ``saving the latest model`` (epoch, total), ``saving the model
#: at the end of epoch`` (epoch, total), ``End of epoch`` (epoch; seconds, or days, hours, minutes, seconds), ``learning
#: rate`` (old, new); none of them: a look-alike line when it begins as a loss line or an epoch's end does
_OTHER = re.compile(
    r"=+ Training Loss \(([^\n]*)\) =+|(-+ Options -+)"
    r"|saving the latest model \(epoch (\d+), total_iters (\d+)\)|saving the model at the end of epoch (\d+), iters (\d+)"
    rf"|End of epoch (\d+) / \d+[ \t]+Time Taken: (?:({_N}) sec|(?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?))"
    rf"|learning rate (?:{_N} -> |= )({_N})")
_LOOKALIKE = re.compile(r"^(?:\(epoch: \d|End of epoch \d)", re.M)
#: what every pair of a loss line is: its tag is ``loss/<name>`` (the roles tell a GAN's sides by it)
_LOSS = "loss/"
_TIME_TAGS = frozenset({"sample_time_s", "data_time_s"})
#: a loss line's text as its tags are read from it: its time and data time, then its pairs
_TIMED = "sample_time_s: {} data_time_s: {} {}".format
_TIME_ONLY = "sample_time_s: {} {}".format


class GanLossLogParser(FindallParser):
    family = "pix2pix/CycleGAN"
    lookalike = _LOOKALIKE
    line = _LINE
    lookalike_line = re.compile(r"\n(?:\(epoch: \d|End of epoch \d)")
    #: read every loss line on its own (not a stretch's at once by their template); for tests
    line_by_line: ClassVar[bool] = False
    state_fields = {
        "_epoch": "last", "_base": "last", "_last": "last", "_gap": "last", "_session": "last",
        "_size": "last", "_end": "last", "_estimated_start": "last", "_new_training": "last", "_pending_lr": "last",
        "_after_line": "last",
        "_sessions": "sum", "_estimated": "sum", "_exact": "sum", "_times": "sum", "_lrs": "sum", "_unplaced": "sum",
        "_late": "sum",
    }

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None  # the epoch of the last loss line
        self._base = 0  # the samples before that epoch
        self._last = 0  # that line's iters
        self._gap = 0  # the printing interval (samples between two lines of an epoch; 0: not known yet)
        self._session = 0  # the samples before the training the line is of (its total_iters count from there)
        self._size = 0  # the length of the last epoch whose length was found (0: none)
        self._end: int | None = None  # where the last line's epoch ended, when a saving line said
        self._estimated_start = False  # whether that epoch's start was estimated
        self._new_training = False  # a training's header or options banner since the last loss line
        self._pending_lr: list[str] = []  # learning rates printed after it, before the training's first line
        self._after_line = False  # whether the last line found was a loss line
        self._sessions = 0  # continued trainings
        self._estimated = 0  # epoch starts estimated
        self._exact = 0  # epoch starts a saving line gave
        self._times = 0
        self._lrs = 0
        self._unplaced = 0  # epoch times of an epoch without a loss line
        self._late = 0  # a log that begins after the first epoch
        self._lookalikes = 0

    def count_lookalikes(self, text: str) -> int:
        """The look-alike lines the last :meth:`take` found, read or not (no second scan)."""
        return self._lookalikes

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        self._chunk, self._text = chunk, text
        self._previous = self._last_step  # (the step of the last loss line, before the chunk's first)
        self._read = 0  # loss lines read
        unread: list[int] = []
        ends = 0
        if found:
            columns = tuple(zip(*found, strict=True))
            others = columns[5]
            at = 0
            between = [] if others.count("") == len(others) else [k for k, other in enumerate(others) if other]
            for index in [*between, len(found)]:
                if at < index:
                    self._losses(at, index, columns, unread)
                if index < len(found):
                    ends += self._other_line(index, others[index].rstrip(), unread)
                at = index + 1
        self.unread_matches.update(unread)
        if self._read:
            self.anchor(self._previous, None, 0)  # type: ignore[arg-type]
        self._lookalikes = self._read + ends + len(unread)  # (the look-alike lines: loss lines and epoch ends)
        return len(found) - len(unread), self._read + ends

    def _losses(self, start: int, stop: int, columns: tuple[tuple[str, ...], ...], unread: list[int]) -> None:
        """The loss lines ``start`` to ``stop`` (no other line between): each stretch of one epoch's lines, their
        iters rising, taken at once, its first line by the rules of a line that may begin an epoch or a training or
        go back, the others each at the epoch's start plus its iters."""
        epochs, counts, seconds, datas, rests = (column[start:stop] for column in columns[:5])
        iters = list(map(int, counts))
        numbers = list(map(int, epochs))
        self._after_line = True

        def each(lines: range) -> None:  # (each line by the rules of one line)
            for k in lines:
                if self._loss(start + k, numbers[k], iters[k], unread) is not None:
                    self._add_lines([self._base + iters[k]], numbers[k], seconds[k:k + 1], datas[k:k + 1], rests[k:k + 1])

        if self.line_by_line or max(max(iters), max(numbers)) > LARGEST_STEP:  # (a garbled number: each on its own)
            each(range(stop - start))
            return
        epoch_array, iters_array = np.array(numbers), np.array(iters)
        breaks = np.flatnonzero((epoch_array[1:] != epoch_array[:-1]) | (iters_array[1:] <= iters_array[:-1])) + 1
        for first, end in zip([0, *breaks.tolist()], [*breaks.tolist(), stop - start], strict=True):
            if self._loss(start + first, numbers[first], iters[first], unread) is None:
                each(range(first + 1, end))  # (the state as it was: the others by the rules again)
                continue
            steps = iters_array[first:end] + self._base
            if steps[-1] > LARGEST_STEP:  # (past the exact steps: the others on their own)
                self._add_lines([int(steps[0])], numbers[first], seconds[first:first + 1], datas[first:first + 1],
                                rests[first:first + 1])
                each(range(first + 1, end))
                continue
            if end - first > 1:
                gap = int(np.diff(iters_array[first:end]).min())
                if not self._gap or gap < self._gap:
                    self._gap = gap
                self._last = iters[end - 1]
                self._read += end - first - 1
                self._previous = int(steps[-1])
            self._add_lines(steps.tolist(), numbers[first], seconds[first:end], datas[first:end], rests[first:end])

    def _loss(self, index: int, epoch: int, iters: int, unread: list[int]) -> int | None:
        """The step of one loss line (a restart recorded at it when it goes back), the state moved to it; None,
        the line left unread, when its step would be no exact one."""
        if self._new_training or iters <= self._last or epoch != self._epoch:
            step = self._enter(epoch, iters)
        else:  # (the same epoch of the same training: its base as it is; the interval learned)
            step = self._base + iters
            if step <= LARGEST_STEP:
                gap = iters - self._last
                if not self._gap or gap < self._gap:
                    self._gap = gap
                self._last = iters
        if step is None or step > LARGEST_STEP:  # (no exact step: not read, named)
            unread.append(index)
            return None
        previous = self._previous
        if previous is not None and step < previous:  # a restart: recorded at its line
            self.anchor(previous, None, 0)
            self.anchor(step, self._chunk, self.match_start(self._text, index))
        if self._pending_lr:  # (printed before the training's first line: at the step it starts from)
            self.rows.extend(self.rows.codes(["lr"] * len(self._pending_lr)), [self._base] * len(self._pending_lr),
                             [float(value) for value in self._pending_lr])
            self._lrs += len(self._pending_lr)
            self._pending_lr = []
        self._previous = step
        self._read += 1
        return step

    def _add_lines(self, steps: list[int], epoch: int, seconds: tuple[str, ...], datas: tuple[str, ...],
                   rests: tuple[str, ...]) -> None:
        """The points of loss lines at their steps: their times, data times and pairs (``rests``) all at once when
        every line has the time and data time the first has and its pairs' template, else each line's pairs found on
        its own (both give the same rows, see ._pairs.template)."""
        if len(rests) > 1 and not self.line_by_line:
            timed = [(tag, column) for tag, column in (("sample_time_s", seconds), ("data_time_s", datas)) if column[0]]
            same = all(all(column) if column[0] else not any(column) for column in (seconds, datas))
            pattern, names = _template(rests[0])
            width = len(names)
            found = pattern.findall("\n" + "\n".join(rests)) if same and width else []
            columns = [parse_numbers(" ".join(column)) for _, column in timed] + [
                _parsed(list(chain.from_iterable(found)) if width > 1 else found)] if len(found) == len(rests) else [None]
            if all(column is not None for column in columns):
                columns[-1] = columns[-1].reshape(len(rests), width)  # type: ignore[union-attr]
                every = [tag for tag, _ in timed] + [_LOSS + name for name in names]
                codes = np.tile(np.array(self.rows.codes(every), dtype=np.int32), len(rests))
                self.rows.extend(codes, np.repeat(np.array(steps, dtype=np.int64), len(every)),
                                 np.column_stack(columns).ravel(), epoch=float(epoch))
                return
        tags: list[str] = []
        numbers: list[str] = []
        counts: list[int] = []
        for text in map(_pairs_of, seconds, datas, rests):
            found_pairs = PAIR.findall(text)
            tags += [name if name in _TIME_TAGS else _LOSS + name for name, _ in found_pairs]
            numbers += [number for _, number in found_pairs]
            counts.append(len(found_pairs))
        if tags:
            values, _ = parse_some_numbers(" ".join(numbers))  # (each a NUMBER: float() takes it)
            self.rows.extend(self.rows.codes(tags), np.repeat(np.array(steps, dtype=np.int64), counts), values,
                             epoch=float(epoch))

    def _other_line(self, index: int, line: str, unread: list[int]) -> int:
        """One of the family's other lines, taken; 1 for an epoch's end read (a look-alike line read), else 0."""
        after_line, self._after_line = self._after_line, False
        m = _OTHER.fullmatch(line)
        if m is None:
            if _LOOKALIKE.match(line):
                unread.append(index)
            return 0
        header, options, latest, latest_total, saved, saved_total, ended, taken, days, hours, minutes, second, lr = (
            m.groups())
        if header is not None or options:
            self._new_training = True
        elif latest:
            self._on_latest(int(latest), int(latest_total), after_line)
        elif saved:
            self._on_saved(int(saved), int(saved_total))
        elif ended:
            if int(ended) != self._epoch:
                self._unplaced += 1
                return 1
            spent = float(taken) if taken else (int(days or 0) * 24 + int(hours)) * 3600 + int(minutes) * 60 + float(
                second)
            self.rows.add("epoch_time_s", self._base + self._last, spent, epoch=float(ended))
            self._times += 1
            return 1
        elif self._new_training or self._epoch is None:
            self._pending_lr.append(lr)  # (placed where the training's first line puts it)
        else:
            self.rows.add("lr", self._base + self._last, float(lr))
            self._lrs += 1
        return 0

    # -- where an epoch starts -----------------------------------------------------------------------------------
    def _enter(self, epoch: int, iters: int) -> int | None:
        """The step of a loss line that begins an epoch, a training, or the log (the state moved to it); None when
        its step would be no exact one (the state left as it was)."""
        if max(epoch, iters) > LARGEST_STEP:
            return None
        current, marked = self._epoch, self._new_training
        session = None  # the samples before the training the line begins (None: it goes on)
        estimated = False
        if current is None:  # the log's first line
            base = session = 0
            self._late += epoch != 1
        elif epoch > current and not marked:  # the next epoch(s) of this training
            base, estimated = self._next_start(epoch, iters)
        elif epoch > current:  # a training continued at a later epoch
            end, estimated = self._end_of_epoch()
            base = session = end + (epoch - current - 1) * (self._size or end - self._base)
        else:  # a training continued at this epoch or an earlier one (or the epoch begun again): after the samples seen
            base = session = self._base + self._last
        if base + iters > LARGEST_STEP:
            return None
        if session is not None:
            self._session = session
            if current is not None:
                self._sessions += 1
        if current is not None and epoch == current + 1 and base > self._base and not estimated and session is None:
            self._size = base - self._base
        self._estimated += estimated
        self._estimated_start = estimated
        self._epoch, self._base, self._last, self._end, self._new_training = epoch, base, iters, None, False
        return base + iters

    def _next_start(self, epoch: int, iters: int) -> tuple[int, bool]:
        """Where the next epoch of this training begins, and whether that is estimated."""
        low = self._base + self._last  # (it ends at its last line or after)
        gap = self._gap
        if self._end is not None and epoch == self._epoch + 1:  # type: ignore[operator]
            self._exact += 1
            return self._end, False
        if gap and iters > gap and iters > self._last:  # a counter that does not start over with the epoch
            return self._base, False
        if gap:  # the lines fall on the interval of the training's count
            return low + (self._session - iters - low) % gap, False
        return low, True

    def _end_of_epoch(self) -> tuple[int, bool]:
        """Where the last line's epoch ended, and whether that is estimated: as a saving line said, else as long as
        the last epoch whose length was found (where its lines allow it), else its last line plus the interval."""
        if self._end is not None:
            self._exact += 1
            return self._end, False
        low, size, gap = self._base + self._last, self._size, self._gap
        if size and low <= self._base + size and (not gap or self._base + size < low + gap):
            return self._base + size, True
        return low + gap, True

    def _on_latest(self, epoch: int, total: int, after_line: bool) -> None:
        """``saving the latest model (epoch e, total_iters T)``: right after a line of epoch e of the same iteration
        (T on the interval), T less that line's iters is where the epoch began, since the training's start; taken
        when the start was estimated (and not before the last line)."""
        if not (after_line and epoch == self._epoch and self._estimated_start):
            return
        if self._gap and total % self._gap:
            return
        start = self._session + total - self._last
        if self._base <= start <= LARGEST_STEP - self._last:
            self._base = start
            self._estimated_start = False
            self._exact += 1

    def _on_saved(self, epoch: int, total: int) -> None:
        """``saving the model at the end of epoch e, iters T``: where epoch e ended, when it ends after its last line
        and before the next would have come."""
        end = self._session + total
        low = self._base + self._last
        if epoch == self._epoch and low <= end <= LARGEST_STEP and (not self._gap or end < low + self._gap):
            self._end = end

    def finish(self) -> None:
        notes = ["pix2pix/CycleGAN loss log: step = the samples seen since the start (the samples of the epochs "
                 "before, a batch_size per iteration, plus the line's iters); each epoch's start found from the "
                 "printing interval (the lines come every interval samples of a training's count) or a 'saving' "
                 "line's count; the seconds of computation per sample and of data loading as sample_time_s and data_time_s"]
        if self._gap:
            notes.append(f"printing interval: {self._gap:,} samples")
        self.count_note(self._estimated, "epoch start(s) estimated (no printing interval known yet, or a training "
                        "continued at the next epoch): after the last line of the epoch before, or the epoch before "
                        "as long as the last one found")
        self.count_note(self._exact, "epoch start(s) taken from a 'saving the …' line's count")
        self.count_note(self._late, "log(s) that begin after epoch 1: the samples before their first epoch are not "
                        "known, counted from 0")
        self.count_note(self._sessions, "continued training(s) (a new header or options banner, or an epoch going "
                        "back): each goes on after the samples seen before it (the step counts every sample trained "
                        "on, those of epochs run again too; the epoch column as printed)")
        self.count_note(self._times, "epoch time(s) as epoch_time_s at the step of the epoch's last line")
        self.count_note(self._unplaced, "epoch time(s) of an epoch with no loss line not placed")
        self.count_note(self._lrs, "learning rate(s) as lr (the new value) at the step of the last line before")
        self.notes[:0] = notes


def _pairs_of(seconds: str, data: str, rest: str) -> str:
    """A loss line's pairs, its time and data time before them."""
    return _TIMED(seconds, data, rest) if data else _TIME_ONLY(seconds, rest) if seconds else rest


def _template(text: str) -> tuple[re.Pattern[str], list[str]]:
    """The pattern of the lines of ``text``'s template, each number a group (:func:`._pairs.template`), each line
    from its line break (found at C speed, where ``^`` is tried at every character), each number a run of the
    characters numbers have (checked by :func:`_parsed`), and its pairs' names."""
    pattern, names = template(text)
    body = pattern.pattern[1:-1].replace(NUMBER_ONCE, NUMBER_CHARS)
    return re.compile(rf"\n{body}(?=\n|\Z)"), names  # (re's own cache keeps it compiled)


def _parsed(tokens: list[str]) -> np.ndarray | None:
    """The numbers of ``tokens`` when each is a ``NUMBER`` (``float()`` takes more spellings of nan and inf: the
    tokens with an n are checked), else None."""
    joined = " ".join(tokens)
    values = parse_numbers(joined)
    if values is not None and ("n" in joined or "N" in joined):
        if not all(map(NUMBER_PATTERN.fullmatch, (token for token in tokens if "n" in token or "N" in token))):
            return None
    return values


def detect_gan_loss_log(window: str) -> bool:
    """Two loss lines of the pix2pix / CycleGAN family."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(1))


class GanLossLogReader(TextReader):
    name = "gan_loss_log"
    description = ("pix2pix / CycleGAN loss_log.txt and console ('(epoch: 1, iters: 100, time: 0.352, data: 0.184) "
                   "D_A: 0.357 G_A: 0.364 …')")
    parser = GanLossLogParser

    def detect(self, window: str) -> bool:
        return detect_gan_loss_log(window)
