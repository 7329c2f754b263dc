"""Keras ``model.fit`` console output (Keras 3 and tf.keras 2), as ``python train.py > train.log`` keeps it.

An ``Epoch 3/20`` line opens each epoch; the progress bar then prints updates
whose last one, at ``batches/batches``, holds the epoch's metrics::

    Epoch 3/20
    50/50 [==============================] - 0s 2ms/step - loss: 0.7981 - accuracy: 0.7563 - val_loss: 0.7209
    50/50 ━━━━━━━━━━━━━━━━━━━━ 0s 3ms/step - accuracy: 0.7625 - loss: 0.7965 - val_loss: 0.7186
    50/50 - 0s - loss: 0.7981 - accuracy: 0.7563 - 60ms/epoch - 1ms/step                 (verbose=2)

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
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["KerasConsoleParser", "KerasConsoleReader", "detect_keras_console"]

EPOCH = re.compile(r"^[ \t]*Epoch (\d+)/(\d+)[ \t]*$", re.M)
#: a line with a progress counter followed by a bar (tf.keras ``[===>..]``, Keras 3 ``━━━``) or, at verbose=2,
#: by `` - `` and the epoch's time
PROGRESS = re.compile(r"^[^\n]*?\d/\d+ (?:\[[=>.]*\]|━|- )[^\n]*$", re.M)
#: what follows the "/" of a progress counter: the batches per epoch, then the bar or the epoch's time
_AFTER_SLASH = re.compile(r"/(\d+) (?=\[[=>.]*\]|━|- )")
_PAIR = re.compile(rf"^([A-Za-z_][\w./]*): ({NUMBER}|nan|-?inf)$", re.IGNORECASE)
_STEP_TIME = re.compile(r"^(\d+(?:\.\d+)?)(us|µs|ms|s)/step$")
_SECONDS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
#: a window that shows one finished epoch: its ``Epoch i/n`` line, then (on a later line) an update with a pair
_DETECT = re.compile(r"^[ \t]*Epoch \d+/\d+[ \t]*\n(?:[^\n]*\n){0,3}?[^\n]*\d/\d+ (?:\[[=>.]*\]|━|- )[^\n]* - "
                     r"[A-Za-z_]\w*: [-\d.na]", re.M)


class KerasConsoleParser(TextParser):
    family = "keras-console"
    lookalike = PROGRESS
    patterns = ((EPOCH, "epoch"), (PROGRESS, "progress"))
    state_fields = {"_epoch": "last", "_epochs": "last", "_batches": "last", "_done": "last", "_cut_at": "last",
                    "_running_means": "sum", "_evaluations": "sum", "_cut_epochs": "sum", "_last_epoch_step": "last"}


    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None  # the epoch being printed (as Keras counts them: from 1)
        self._epochs: int | None = None
        self._batches: int | None = None  # the batches per epoch of its bar
        self._done = False  # its final update was read
        self._cut_at: str | None = None  # the last update of an unfinished epoch ("12/50")
        self._running_means = 0
        self._evaluations = 0
        self._cut_epochs: list[str] = []  # "epoch 3 at batch 13/63": epochs that ended before their last update
        self._last_epoch_step: int | None = None

    def _on_epoch(self, m: re.Match[str], chunk: Chunk) -> None:
        self._close_epoch()
        self.mark(chunk, m.start())
        self._epoch, self._epochs = int(m.group(1)), int(m.group(2))
        self._batches, self._done, self._cut_at = None, False, None
        self.hparams["epochs"] = self._epochs

    def _on_progress(self, m: re.Match[str], chunk: Chunk) -> None:
        line = m.group(0)
        counter = _last_counter(line)
        if counter is None:
            return
        done, total, end = counter
        self.mark(chunk, m.start())
        if done != total:
            self._running_means += 1
            if self._epoch is not None and not self._done:
                self._cut_at = f"{done}/{total}"
            return
        pairs = _pairs(line[end:].replace("\b", ""))
        if not pairs:
            return  # a predict() bar: no metric
        if self._epoch is not None and not self._done and self._batches in (None, int(total)):
            step = self._epoch - 1
            self.anchor(step, chunk, m.start())
            self.rows.add_pairs(pairs, step)
            self._batches, self._done, self._cut_at = int(total), True, None
            self._last_epoch_step = step
            return
        # after the epoch's end, another bar: model.evaluate
        self._evaluations += 1
        step = self._last_epoch_step if self._last_epoch_step is not None else 0
        self.rows.add_pairs([(f"evaluate/{tag}", value) for tag, value in pairs if tag != "step_time_ms"], step)

    def _close_epoch(self) -> None:
        if self._epoch is not None and not self._done and self._cut_at is not None:
            self._cut_epochs.append(f"epoch {self._epoch} at batch {self._cut_at}")

    def finish(self) -> None:
        cut = self._cut_epochs + ([f"epoch {self._epoch} at batch {self._cut_at}"]
                                  if self._epoch is not None and not self._done and self._cut_at is not None else [])
        notes = ["Keras progress bars: each epoch's last update read, at step = epoch index (Epoch 1 is step 0, "
                 "as Keras's CSVLogger and TensorBoard callbacks log it)"]
        if self._running_means:
            notes.append(f"{self._running_means:,} progress line(s) that end before their epoch's last update "
                         "(running means over the batches so far) skipped")
        if cut:
            notes.append(f"{len(cut)} epoch(s) ended before their last update, no point: {', '.join(cut[:3])}"
                         + (" …" if len(cut) > 3 else ""))
        if self._evaluations:
            notes.append(f"{self._evaluations} evaluation bar(s) after training read as evaluate/<metric> at the "
                         "last epoch's step")
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


def detect_keras_console(window: str) -> bool:
    return _DETECT.search(window) is not None


class KerasConsoleReader(TextReader):
    name = "keras_console"
    description = "Keras model.fit console output ('Epoch 3/20' then the progress bar's '- loss: … - val_loss: …')"
    parser = KerasConsoleParser

    def detect(self, window: str) -> bool:
        return detect_keras_console(window)
