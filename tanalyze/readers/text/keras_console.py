"""Keras ``model.fit`` console output (Keras 1 to 3, tf.keras 2), as ``python train.py > train.log`` keeps it.

An ``Epoch 3/20`` line opens each epoch; the progress bar then prints updates
whose last one, at ``batches/batches``, holds the epoch's metrics::

    Epoch 3/20
    50/50 [==============================] - 0s 2ms/step - loss: 0.7981 - accuracy: 0.7563 - val_loss: 0.7209
    50/50 ━━━━━━━━━━━━━━━━━━━━ 0s 3ms/step - accuracy: 0.7625 - loss: 0.7965 - val_loss: 0.7186
    50/50 - 0s - loss: 0.7981 - accuracy: 0.7563 - 60ms/epoch - 1ms/step                 (verbose=2)
    224s - loss: 3.5508 - acc: 0.2966 - val_loss: 1.4529 - val_acc: 0.5808        (Keras 1.x, 2.0: verbose=2)
     - 224s - loss: 3.5508 - acc: 0.2966 - val_loss: 1.4529 - val_acc: 0.5808     (Keras 2.1 to 2.3: verbose=2)

Written to a file, the bar's earlier updates run on in the same line (Keras 3
also colours it); on a terminal each is redrawn after ``\\b`` and ``\\r``. Only
the update that ends the epoch is read: the earlier ones are running means over
the batches so far, counted in a note. Step = the epoch index Keras's own
``CSVLogger`` and ``TensorBoard`` callbacks log (``Epoch 1/20`` is step 0), so a
console beside them is their twin. Tags: the metric names as printed (``loss``,
``val_loss``, ``accuracy``, ``learning_rate``/``lr`` …) and ``step_time_ms``
(the bar's time per batch). A ``model.evaluate`` after training (a bar with
other batches, no ``Epoch`` line) gives ``evaluate/<metric>`` at the last
epoch's step; an epoch cut before its end (a killed job) gives no point and a note.

Old Keras at ``verbose=2`` prints no batch counter: one line per epoch, after its
``Epoch`` line (a callback's message may come between), that begins with the
epoch's time in whole seconds, read as ``epoch_time_s`` (the only time it prints).
Such a line anywhere else (no epoch open, or its epoch already read) is named as a
line that could not be read. A script that calls ``fit`` again starts over at
``Epoch 1/n``: the steps go back to 0, a new session of the log (one step axis,
shifted), as for every format; a fit resumed with ``initial_epoch`` goes back less
far, a restart whose later values are kept.
"""

from __future__ import annotations

import re
from itertools import chain
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER, NUMBER_CHARS, to_float

__all__ = ["KerasConsoleParser", "KerasConsoleReader", "detect_keras_console"]

EPOCH = re.compile(r"^[ \t]*Epoch (\d+)/(\d+)[ \t]*$", re.M)
#: a line with a progress counter followed by a bar (tf.keras ``[===>..]``, Keras 3 ``━━━``) or, at verbose=2,
#: by `` - `` and the epoch's time
PROGRESS = re.compile(r"^[^\n]*?\d/\d+ (?:\[[=>.]*\]|━|- )[^\n]*$", re.M)
#: what follows the "/" of a progress counter: the batches per epoch, then the bar or the epoch's time
_AFTER_SLASH = re.compile(r"/(\d+) (?=\[[=>.]*\]|━|- )")
#: a time per batch (``32ms/step``)
_PER_STEP = r"\d+(?:\.\d+)?(?:us|µs|ms|s)/step"
#: old Keras's verbose=2 line, with no batch counter: the epoch's time in whole seconds (Keras 1.x and 2.0
#: ``'%ds'``, 2.1 to 2.3 ``' - %.0fs'``), maybe a time per batch, then the pairs (group 2: what follows the time)
EPOCH_TIME = re.compile(rf"^[ \t]*(?:- )?(\d+)s((?: {_PER_STEP})? - [^\n]*)$", re.M)
#: the lines read as metrics (a progress counter, or an old verbose=2 line), which are named in a warning when
#: no rule read them
_LOOKALIKE = re.compile(rf"^(?:[^\n]*?\d/\d+ (?:\[[=>.]*\]|━|- )|[ \t]*(?:- )?\d+s(?: {_PER_STEP})? - )[^\n]*$",
                        re.M)
#: an epoch number beyond this is garbled digits (and no exact step of a float column)
_LARGEST_EPOCH = 2**53
#: the rest of an update cut off by a terminal's hard wrap: pieces of pairs and their separators (see _unwrapped)
_TAIL = re.compile(r"[ \t]?[\w./+-]*(?::[ \t]?[\w.+-]*)?(?:[ \t]?-(?:[ \t][\w./]*(?::[ \t]?[\w.+-]*)?)?)*[ \t]*")
_MOST_WRAPPED_LINES = 8
_PAIR = re.compile(rf"^([A-Za-z_][\w./]*): ({NUMBER}|nan|-?inf)$", re.IGNORECASE)
_STEP_TIME = re.compile(r"^(\d+(?:\.\d+)?)(us|µs|ms|s)/step$")
_SECONDS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
#: what a chunk of old Keras's verbose=2 epochs is read at once with (see ``_old_epochs_at_once``): an ``Epoch`` line
#: and old Keras's line after it (the epoch, the epochs, the time, what follows it), up to three other lines between
#: (Keras 1 printed the callbacks' messages, ModelCheckpoint's, ReduceLROnPlateau's, before the epoch's line); every
#: line that is an ``Epoch`` line or looks like old Keras's (both from their line break); what follows the "/" of a
#: progress counter (more: any "/" and digits before a bar or `` - ``, found at C speed by its "/")
_OLD_BLOCK = re.compile(rf"\n[ \t]*Epoch (\d+)/(\d+)[ \t]*\n(?:(?![ \t]*Epoch \d+/\d+[ \t]*\n)[^\n]*\n){{0,3}}?"
                        rf"[ \t]*(?:- )?(\d+)s((?: {_PER_STEP})? - [^\n]*)(?=\n)")
_EPOCH_OR_OLD_LINE = re.compile(rf"\n[ \t]*(?:Epoch \d+/\d+[ \t]*(?=\n)|(?:- )?\d+s(?: {_PER_STEP})? - )")
_COUNTER = re.compile(r"/\d+ (?:\[|━|- )")
#: the value of a pair: a run of the characters of a number, a number exactly when ``float()`` takes it (as ``_PAIR``
#: takes a value, case ignored)
_VALUE = rf"({NUMBER_CHARS})"
#: fewer old epochs than this in a chunk are read line by line
_AT_ONCE = 64
#: a window that shows one finished epoch: its ``Epoch i/n`` line, then (on a later line) an update with a pair
_DETECT = re.compile(r"^[ \t]*Epoch \d+/\d+[ \t]*\n(?:[^\n]*\n){0,3}?[^\n]*\d/\d+ (?:\[[=>.]*\]|━|- )[^\n]* - "
                     r"[A-Za-z_]\w*: [-\d.na]", re.M)
#: the same window in old Keras's verbose=2 (``Epoch 1/50`` then ``224s - loss: 3.5508 …``)
_DETECT_OLD = re.compile(rf"^[ \t]*Epoch \d+/\d+[ \t]*\n(?:[^\n]*\n){{0,3}}?[ \t]*(?:- )?\d+s(?: {_PER_STEP})? - "
                         r"[A-Za-z_]\w*: [-\d.na]", re.M)


class KerasConsoleParser(TextParser):
    family = "keras-console"
    lookalike = _LOOKALIKE
    patterns = ((EPOCH, "epoch"), (PROGRESS, "progress"), (EPOCH_TIME, "epoch_time"))
    state_fields = {"_epoch": "last", "_epochs": "last", "_batches": "last", "_done": "last", "_cut_at": "last",
                    "_running_means": "sum", "_evaluations": "sum", "_cut_epochs": "sum", "_last_epoch_step": "last",
                    "_old_epochs": "sum", "_skipping": "last", "_end_names": "last", "_headless": "last",
                    "_headless_read": "sum", "_orphans": "sum"}
    #: read old Keras's epochs line by line (not a chunk's at once); for tests
    line_by_line: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None  # the epoch being printed (as Keras counts them: from 1)
        self._epochs: int | None = None
        self._batches: int | None = None  # the batches per epoch of its bar
        self._done = False  # its final update was read
        self._end_names: list[str] | None = None  # the names of that update (until the next Epoch line)
        # the rows held before its rows were added (in this part only: a part read on from a cut holds its own rows,
        # and an update whose rows an earlier part holds is replaced by the later write instead)
        self._end_at = -1
        self._cut_at: str | None = None  # the last update of an unfinished epoch ("12/50")
        self._running_means = 0
        self._evaluations = 0
        self._cut_epochs: list[str] = []  # "epoch 3 at batch 13/63": epochs that ended before their last update
        self._last_epoch_step: int | None = None
        self._old_epochs = 0  # epochs read from old Keras's verbose=2 lines (no batch counter)
        self._skipping = False  # in an epoch whose number could not be read
        # an epoch's last update with validation before any Epoch line (a log whose head was cut off): its pairs,
        # until the first Epoch line says which epoch it ended
        self._headless: list[list[Any]] | None = None
        self._headless_read = 0
        self._orphans = 0  # epochs' last updates with validation after an epoch's end, no Epoch line before them

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line or not self._old_epochs_at_once(chunk):
            super().feed(chunk)

    def _old_epochs_at_once(self, chunk: Chunk) -> bool:
        """A chunk of old Keras's verbose=2 epochs only (each ``Epoch`` line followed by its line of pairs, up to
        three other lines between, and no other line that looks like metrics; the first line may be the line of the
        epoch open before, the last an ``Epoch`` line), read at once: the rows, anchors (each go-back recorded at
        its line) and state of reading each line (:meth:`_on_epoch`, :meth:`_on_epoch_time`). False (nothing read)
        otherwise: a chunk of few epochs, a line of another kind, a value that is no number, an epoch too large."""
        text = chunk.text
        if chunk.incomplete or len(text) < _AT_ONCE * 40 or "s - " not in text or _COUNTER.search(text) is not None:
            return False  # (a progress counter: a bar's line, the progress rule's)
        body = "\n" + text
        found = _OLD_BLOCK.findall(body)
        if len(found) < _AT_ONCE:
            return False
        lead = EPOCH_TIME.match(text)  # the line of the epoch whose Epoch line ended the chunk before
        if lead is not None:
            if self._epoch is None or self._done or self._skipping:
                return False
            found.insert(0, (str(self._epoch), str(self._epochs), lead.group(1), lead.group(2)))
        last = EPOCH.match(text, text.rfind("\n", 0, len(text) - 1) + 1)  # an Epoch line whose line comes next chunk
        # the lines read (each epoch's two, the first line's, the last's) are every Epoch line and every line that looks
        # like old Keras's when they are as many
        if len(_EPOCH_OR_OLD_LINE.findall(body)) != 2 * len(found) - (lead is not None) + (last is not None):
            return False
        epochs, totals, times, rests = zip(*found, strict=True)
        if max(map(len, epochs)) > 15 or max(map(len, totals)) > 18 or (last is not None and len(last.group(1)) > 15):
            return False  # (an epoch beyond 2**53 is named, line by line)
        pairs = _pairs_at_once("\n".join(rests), len(rests))
        seconds = parse_numbers(" ".join(times))
        if pairs is None or seconds is None:
            return False
        names, which, values = pairs
        if lead is None:
            self._close_epoch()
        steps = np.array(epochs, dtype=np.int64) - 1
        if not self.anchors_go_on(steps):  # a new fit or a resumed one: each go-back recorded at its line
            self._go_backs(chunk, body, steps, lead is not None)
        # each line's time, then its pairs: the rows of each template, put back in line order
        line_of, codes, numbers = [], [], []
        for names_t, (lines_t, values_t) in zip(names, zip(which, values, strict=True), strict=True):
            width = len(names_t) + 1
            line_of.append(np.repeat(lines_t, width))
            codes.append(np.tile(np.array(self.rows.codes(["epoch_time_s", *names_t]), dtype=np.int32), len(lines_t)))
            numbers.append(np.column_stack((seconds[lines_t], values_t.reshape(len(lines_t), width - 1))).ravel())
        order = np.argsort(np.concatenate(line_of), kind="stable")
        read = 2 * len(steps) - (lead is not None) + (last is not None)
        self.take_whole_chunk(np.concatenate(codes)[order], steps[np.concatenate(line_of)[order]],
                              np.concatenate(numbers)[order], read, steps)
        self.hparams.setdefault("epochs", int(totals[0]))
        self._epoch, self._epochs, self._skipping = int(epochs[-1]), int(totals[-1]), False
        self._batches, self._done, self._cut_at = None, True, None
        self._last_epoch_step = int(steps[-1])
        self._old_epochs += len(steps)
        if last is not None:  # its epoch open, as _on_epoch leaves it
            self.hparams.setdefault("epochs", int(last.group(2)))
            self._epoch, self._epochs, self._done = int(last.group(1)), int(last.group(2)), False
        return True

    def _go_backs(self, chunk: Chunk, body: str, steps: np.ndarray, lead: bool) -> None:
        """Anchor the epochs of a chunk read at once where they go back, at their lines, as reading each does."""
        previous = self._last_anchor.get(-1)
        back = np.flatnonzero(np.concatenate(([previous is not None and steps[0] < previous], steps[1:] < steps[:-1])))
        starts = [0] if lead else []
        blocks = _OLD_BLOCK.finditer(body)
        while len(starts) <= back[-1]:  # (each old line's start, up to the last that goes back)
            starts.append(body.rfind("\n", 0, next(blocks).start(3)))
        for index in back.tolist():
            if index:
                self.anchor(int(steps[index - 1]), None, 0)
            self.anchor(int(steps[index]), chunk, starts[index])

    def _on_epoch(self, m: re.Match[str], chunk: Chunk) -> None:
        self._close_epoch()
        epoch = int(m.group(1))
        if self._headless is not None:  # the epoch before this one ended on the log's first lines
            if 1 < epoch <= _LARGEST_EPOCH:
                self.anchor(epoch - 2, chunk, m.start())
                self.rows.add_pairs([(name, value) for name, value in self._headless], epoch - 2)
                self._last_epoch_step = epoch - 2
                self._headless_read += 1
            self._headless = None
        if epoch > _LARGEST_EPOCH:  # garbled digits: the line and its epoch's updates are named, not read
            self.unparsed(chunk, m.start())
            self._epoch, self._skipping = None, True
            return
        self.mark(chunk, m.start())
        self._epoch, self._epochs, self._skipping = epoch, int(m.group(2)), False
        self._batches, self._done, self._cut_at = None, False, None
        self._end_names = None
        self.hparams.setdefault("epochs", self._epochs)  # the first fit's (a log read on from a cut keeps the first)

    def _on_progress(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._skipping:
            return
        line = m.group(0)
        counter = _last_counter(line)
        if counter is None:
            return
        done, total, end = counter
        self.mark(chunk, m.start())
        # (an update at the last batch that still shows an ETA is drawn before the epoch's end: TF's ModelCheckpoint
        # printing 'INFO:tensorflow:Assets written …' right after it; the end, with the epoch's time, comes next)
        if done != total or line.find("ETA:", end, end + 80) >= 0:
            self._running_means += 1
            if self._epoch is not None and not self._done:
                self._cut_at = f"{done}/{total}"
            return
        pairs = _pairs(line[end:].replace("\b", ""))
        if not pairs:
            return  # a predict() bar: no metric
        pairs = self._unwrapped(chunk, m.end(), line[end:], pairs)
        names = [tag for tag, _ in pairs]
        if self._epoch is not None and self._done and self._end_names is not None \
                and set(self._end_names) < set(names):
            # the epoch's end after an update at its last batch that a callback's message followed (Keras 3's
            # ModelCheckpoint: 'Epoch 1: val_loss improved …'): it has the validation the update had not
            if len(self.rows) == self._end_at + len(self._end_names):
                self.rows.truncate(self._end_at)
            self._end_names, self._end_at = names, len(self.rows)
            self.rows.add_pairs(pairs, self._epoch - 1)
            return
        if self._epoch is not None and not self._done and self._batches in (None, int(total)):
            step = self._epoch - 1
            self.anchor(step, chunk, m.start())
            self._end_names, self._end_at = names, len(self.rows)
            self.rows.add_pairs(pairs, step)
            self._batches, self._done, self._cut_at = int(total), True, None
            self._last_epoch_step = step
            return
        if self._epoch is None and self._last_epoch_step is None and any(tag.startswith("val_") for tag in names):
            # before any Epoch line, a complete update with validation: an epoch's end whose Epoch line was cut off
            # (model.evaluate validates nothing); which epoch, the next Epoch line tells
            self._headless = [[tag, value] for tag, value in pairs]
            return
        if any(tag.startswith("val_") for tag in names):
            # (model.evaluate validates nothing: an epoch's end whose Epoch line is not in the log, output pasted
            # twice or cut; which epoch it was, nothing tells)
            self._orphans += 1
            return
        # after the epoch's end, another bar: model.evaluate (old Keras's shows no metric: nothing to count)
        evaluated = [(f"evaluate/{tag}", value) for tag, value in pairs if tag != "step_time_ms"]
        if evaluated:
            self._evaluations += 1
            step = self._last_epoch_step if self._last_epoch_step is not None else 0
            self.rows.add_pairs(evaluated, step)

    def _unwrapped(self, chunk: Chunk, after: int, rest: str, pairs: list[tuple[str, float]]
                   ) -> list[tuple[str, float]]:
        """An epoch's last update with the lines a terminal's hard wrap cut off from it joined back on
        ('… - val_recall: 0' then '.9938 - learning_rate: 2.5000e-04': the recall is 0.9938, not 0). Lines are
        joined while they look like such a tail and the join keeps every name the update had."""
        text, joined, at = chunk.text, rest, after
        for _ in range(_MOST_WRAPPED_LINES):
            if at >= len(text) - 1:
                break
            stop = text.find("\n", at + 1)
            stop = len(text) if stop < 0 else stop
            fragment = text[at + 1:stop].rstrip("\r")
            if not _is_wrapped_tail(fragment):
                break
            joined, at = joined + fragment, stop
        if at == after:
            return pairs
        longer = _pairs(joined.replace("\b", ""))
        if not {name for name, _ in pairs} <= {name for name, _ in longer}:
            return pairs
        position = after + 1
        while position < at:  # (each tail line read, not left for the look-alike scan)
            self.mark(chunk, position)
            position = text.find("\n", position) + 1 or at
        return longer

    def _on_epoch_time(self, m: re.Match[str], chunk: Chunk) -> None:
        """Old Keras's verbose=2 line: the open epoch's metrics, after its time in whole seconds. Not after an
        ``Epoch`` line, or a second one for the same epoch, it is left unread (the look-alike scan names it)."""
        if self._epoch is None or self._done or self._skipping:
            return
        pairs = _pairs(m.group(2))
        if not pairs:
            return
        self.mark(chunk, m.start())
        step = self._epoch - 1
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs([("epoch_time_s", float(m.group(1))), *pairs], step)
        self._done, self._cut_at, self._last_epoch_step = True, None, step
        self._old_epochs += 1

    def _close_epoch(self) -> None:
        if self._epoch is not None and not self._done and self._cut_at is not None:
            self._cut_epochs.append(f"epoch {self._epoch} at batch {self._cut_at}")

    def finish(self) -> None:
        cut = self._cut_epochs + ([f"epoch {self._epoch} at batch {self._cut_at}"]
                                  if self._epoch is not None and not self._done and self._cut_at is not None else [])
        notes = ["Keras progress bars: each epoch's last update read, at step = epoch index (Epoch 1 is step 0, "
                 "as Keras's CSVLogger and TensorBoard callbacks log it)"]
        if self._old_epochs:
            notes.append(f"{self._old_epochs:,} epoch(s) printed by old Keras at verbose=2 (no batch counter: "
                         "'224s - loss: …'): their time in whole seconds read as epoch_time_s")
        if self._running_means:
            notes.append(f"{self._running_means:,} progress line(s) that end before their epoch's last update "
                         "(running means over the batches so far) skipped")
        if cut:
            notes.append(f"{len(cut)} epoch(s) ended before their last update, no point: {', '.join(cut[:3])}"
                         + (" …" if len(cut) > 3 else ""))
        if self._evaluations:
            notes.append(f"{self._evaluations} evaluation bar(s) after training read as evaluate/<metric> at the "
                         "last epoch's step")
        if self._orphans:
            notes.append(f"{self._orphans} epoch end(s) with validation after another epoch's end and no 'Epoch' line "
                         "of their own (output pasted twice, or its lines cut) not read: which epoch each was, nothing "
                         "tells (model.evaluate's bar validates nothing)")
        if self._headless_read:
            notes.append("the log begins with an epoch's last update whose 'Epoch' line is not in it (its head cut "
                         "off): read as the epoch before the first 'Epoch' line")
        self.notes[:0] = notes


def _last_counter(line: str) -> tuple[str, str, int] | None:
    """The counter of a line's last update (batches done, batches per epoch, where the update's text starts),
    looked for from the end: a line can hold a thousand updates, and only the last one counts. An earlier
    update's value may run into it ("0.41231875/1875": the batches done are the last digits, as many as the
    total has when they end in it)."""
    end = len(line)
    while (slash := line.rfind("/", 0, end)) > 0:
        after = _AFTER_SLASH.match(line, slash)
        start = slash
        while start > 0 and line[start - 1].isdigit():
            start -= 1
        if after is not None and start < slash:
            done, total = line[start:slash], after.group(1)
            if len(done) > len(total):  # the previous update's digits run on into it
                done = done[-len(total):]
                done = done[1:] if int(done) > int(total) else done
            return done.lstrip("0") or "0", total, after.end()
        end = slash
    return None


def _is_wrapped_tail(fragment: str) -> bool:
    """Whether a line may be the rest of an update that a terminal's hard wrap cut: pieces of ``name: value``
    pairs joined by ``" - "`` and nothing else (whether it is, the pairs of the join tell)."""
    if not fragment.strip() or _TAIL.fullmatch(fragment) is None:
        return False
    return not any(kind.match(fragment) for kind in (EPOCH, PROGRESS, EPOCH_TIME))  # (a line of its own)


def _pairs(segment: str) -> list[tuple[str, float]]:
    """The ``name: value`` pairs and the time per batch of one update (the text after its counter)."""
    pairs = []
    for item in segment.split(" - "):
        item = item.strip()
        found = _PAIR.match(item)
        if found is not None:
            value = to_float(found.group(2))
            if value is not None:
                pairs.append((found.group(1), value))
            continue
        for word in item.split():
            timed = _STEP_TIME.match(word)
            if timed is not None:
                pairs.append(("step_time_ms", float(timed.group(1)) * _SECONDS[timed.group(2)]))
    return pairs


def _names(rest: str) -> list[str] | None:
    """The names of the pairs of an old verbose=2 line's ``rest`` (what follows its time) when it is only pairs
    (`` - name: value`` each, as ``_PAIR`` reads them); None otherwise."""
    items = rest.split(" - ")
    if items[0] or len(items) < 2:
        return None
    names = []
    for item in items[1:]:
        found = _PAIR.match(item)
        if found is None:
            return None
        names.append(found.group(1))
    return names


#: at most this many kinds of old verbose=2 lines (their pairs' names) in a chunk read at once
_TEMPLATES = 8


def _pairs_at_once(joined: str, count: int) -> tuple[list[list[str]], list[np.ndarray], list[np.ndarray]] | None:
    """The pairs of ``count`` old verbose=2 lines (what follows each one's time, one a line of ``joined``) as
    ``_pairs`` reads each: the names of each kind of line (their template), the lines of each kind and their values
    (line after line); None when a line is not pairs only, a value is no number, or there are more than
    ``_TEMPLATES`` kinds. A line that matches a template (`` - name: value`` each, those names, values that
    ``float()`` takes) has exactly its pairs."""
    kinds: list[list[str]] = []
    first = joined[:joined.find("\n")] if "\n" in joined else joined
    while True:
        names = _names(first)
        if names is None or len(kinds) == _TEMPLATES:
            return None
        kinds.append(names)
        every = "|".join("".join(f" - {re.escape(name)}: {_VALUE}" for name in kind) for kind in kinds)
        found = re.compile(rf"\n(?:{every})(?=\n)").findall(f"\n{joined}\n")  # (from a line break: found quicker)
        if len(found) == count:
            break
        first = re.compile(rf"^(?!(?:{every})$)[^\n]*$", re.M).search(joined).group(0)  # (the first of another kind)
    if len(kinds) == 1:  # (the usual chunk: one kind of line)
        numbers = parse_numbers(" ".join(found if len(kinds[0]) == 1 else chain.from_iterable(found)))
        return None if numbers is None else (kinds, [np.arange(count)], [numbers])
    table = np.array(found, dtype=object).reshape(count, -1)
    which, values, column = [], [], 0
    for names in kinds:
        lines = np.flatnonzero(table[:, column] != "")
        numbers = parse_numbers(" ".join(table[lines, column:column + len(names)].ravel().tolist()))
        if numbers is None:
            return None
        which.append(lines)
        values.append(numbers)
        column += len(names)
    return kinds, which, values


def detect_keras_console(window: str) -> bool:
    return _DETECT.search(window) is not None or _DETECT_OLD.search(window) is not None


class KerasConsoleReader(TextReader):
    name = "keras_console"
    description = "Keras model.fit console output ('Epoch 3/20' then the progress bar's '- loss: … - val_loss: …')"
    parser = KerasConsoleParser
    cache_version = 10  # 5: old Keras's verbose=2 lines, with no batch counter ('224s - loss: …', ' - 224s - loss: …'); 6: an
    #                   update at the last batch with an ETA is no epoch's end; 7: nor one a fuller update follows;
    #                   8: an update a terminal's hard wrap cut is joined back; 9: a log whose head was cut begins
    #                   with an epoch's end; 10: an epoch's end with validation and no Epoch line after another's is
    #                   no model.evaluate bar

    def detect(self, window: str) -> bool:
        return detect_keras_console(window)
