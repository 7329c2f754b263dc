"""Ultralytics YOLO's training console (``yolo train`` / ``model.train()``: YOLOv8, YOLO11, and YOLOv5's
``train.py``), kept in a file (``training_output.txt``, ``train.log``, ``nohup.out``)::

          Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
            6/6      2.61G      2.048       1.17      2.301          8         64: 100% ━━━━━━━━━━━━ 20/20 10.2it/s 2.0s
                     Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100% ━━━━━━━━━━━━ 1/1 …
                       all         16         16      0.992        0.5       0.61      0.376

    6 epochs completed in 0.006 hours.
    Validating runs/detect/train/weights/best.pt...
                       all         16         16      0.992        0.5       0.61      0.376
                       cat          8          8      0.983          1      0.995       0.73

Each epoch's bar is redrawn after ``\\r`` at every batch (the chunks hold each redraw as a line; a log pasted from
a terminal keeps only the last one), its description the epoch, the GPU memory, the running mean of each loss over
the epoch's batches so far, the last batch's instances and the image size (tqdm's bar, ``|██████████| 58/58
[00:21<00:00,  2.70it/s]``, before Ultralytics drew its own). The line read is the last of each run of redraws of an
epoch's bar (the next line is no redraw of it); a redraw of the same epoch after other lines (a warning printed
mid-epoch) replaces it, until the epoch's validation. The column headers name the losses (they differ by task:
segment adds ``seg_loss``, pose ``pose_loss`` and ``kobj_loss``, classify has one ``loss``) and the validation's
metrics (``Mask(P R mAP50 mAP50-95)`` besides ``Box(…)`` for segment, ``Pose(…)`` for pose, ``top1_acc top5_acc``
for classify).

Decisions, so that the console agrees with the ``results.csv`` beside it (its reader, ``yolo_csv``) value for value
at the console's precision (4 significant digits for losses, 3 for metrics):

* **step = the epoch as printed** (``1/100`` is step 1, as results.csv counts since Ultralytics 8.1; YOLOv5 prints and
  counts from 0). Wall time: none (the console prints no time of day).
* An epoch's training values are the **last redraw of its bar** (after its last batch, the epoch's mean), tags named
  as results.csv names them: ``train/box_loss``, ``train/cls_loss``, ``train/dfl_loss`` … (``train/loss`` for
  classify; YOLOv5 v6's ``box obj cls`` as ``train/box_loss`` …), and the GPU memory as ``gpu_mem_gb``. The
  instances and image size are no curves of the run. A bar that stopped before its last batch (a job stopped
  mid-epoch) gives the running mean of the batches drawn, and a note says so.
* The validation's ``all`` row is ``metrics/precision(B)``, ``metrics/recall(B)``, ``metrics/mAP50(B)``,
  ``metrics/mAP50-95(B)`` (``(M)`` for masks, ``(P)`` for pose), ``metrics/accuracy_top1`` and
  ``metrics/accuracy_top5`` (YOLOv5: ``metrics/precision``, ``metrics/recall``, ``metrics/mAP_0.5``,
  ``metrics/mAP_0.5:0.95``) at the epoch of the bar before it. Its images and instances are counts, not read.
* The **final validation** of ``best.pt`` (after "Validating …best.pt...") is no epoch: its ``all`` row is kept as
  ``final/<metric>`` (``final/metrics/mAP50-95(B)``) at the last epoch; its per-class rows are not read (a note counts
  them). The trainer's arguments (``engine/trainer: task=detect, mode=train, …``) are the hparams.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER_PATTERN, config_value

__all__ = ["UltralyticsConsoleParser", "UltralyticsConsoleReader", "detect_ultralytics_console"]

#: a run of the characters a number may have (possessive), checked when it is read
_N = r"[-+.0-9eEnNaAiIfFtTyY]++"
#: every line read, from its line break (see ._findall), after its blanks; each alternative but the first begins with
#: its own letter (the engine passes over it at once on the others, the bars' redraws that fill the log):
#: 1. a number: the last redraw of a training bar's run of redraws (no bar of its epoch on the next line): its epoch,
#:    the rest of the line (its description from the GPU memory on, its percentage, bar and count); or the end of
#:    training: the epochs completed, the hours
#: 2. the training header: its loss names
#: 3. the validation header (``Class``, a classifier's ``classes``), alone or as its bar's description (the last
#:    redraw of a run): its columns
#: 4. an ``all`` row: its numbers
#: 5. early stopping, the final validation, the trainer's arguments
_LINE = re.compile(
    r"\n *+(?:"
    r"(?>(\d++)(?:/\d++ +(\S+G [^\n]*+)(?=\n(?! *+\1/))| epochs? completed in ([\d.]+) hours\.[ \t]*(?=\n)))"
    r"|Epoch +(?:GPU_mem|gpu_mem) +([^\n]*?) +(?:Instances|labels) +(?:Size|img_size) *(?=\n)"
    r"|Class(?> +((?:[^\n:]|:\.)*+)(?::[^\n]*+)?)(?=\n(?! *+(?:Class|classes) ))"
    r"|classes(?> +((?:[^\n:]|:\.)*+)(?::[^\n]*+)?)(?=\n(?! *+(?:Class|classes) ))"
    r"|all( +[-+.\dn][^\n]*+)"
    r"|Stopping training early([^\n]*+)"
    r"|EarlyStopping: Training stopped early([^\n]*+)"
    r"|Validating ([^\n]*?)\.\.\.[ \t]*(?=\n)"
    r"|engine[/\\]trainer: ([^\n]*+)"
    r"|yolo[/\\]engine[/\\]trainer: ([^\n]*+)"
    r")")
#: the lines ``_LINE`` finds that may be left unread: a bar's last redraw and an ``all`` row (``^``-anchored, for
#: the scan that names them)
_LOOKALIKE = re.compile(r"^ *(\d+)/\d+ +\S+G [^\n]*$(?!\n *\1/)|^ +all +[-+.\dn]", re.M)
#: a bar's description and progress: the GPU memory, the values, its percentage, then its count and total
_BAR = re.compile(r"(\S+)G +([^\n:]*?) *: +\d+%[^\d\n]*+(\d+)/(\d+)(?:[^\d\n][^\n]*)?")
#: a per-class row of the final validation (counted in a note)
_CLASS_ROW = re.compile(rf"^ +(?!all )\S[^\n]*? +\d+ +\d+(?: +{_N})+ *$", re.M)
#: the loss names of the first headers, for a bar seen before any header (a log that begins mid-training)
_DEFAULT_LOSSES = {3: ("box_loss", "cls_loss", "dfl_loss"), 1: ("loss",)}
#: columns of the validation header that are counts, not metrics
_COUNTS = frozenset({"Images", "Instances", "Labels", "Pixels"})
#: a metric column's name in results.csv: in a group (``Box(P … mAP50-95)``), alone (YOLOv5), or any
_IN_GROUP = {"P": "precision", "R": "recall"}
_ALONE = {"P": "precision", "R": "recall", "mAP50": "mAP_0.5", "mAP50-95": "mAP_0.5:0.95", "mAP@.5": "mAP_0.5",
          "mAP@.5:.95": "mAP_0.5:0.95", "top1_acc": "accuracy_top1", "top5_acc": "accuracy_top5",
          "PixAcc": "pixel_acc"}
_FINAL = "final/"


@functools.lru_cache(maxsize=64)
def validation_columns(header: str) -> tuple[int, tuple[str, ...]]:
    """The validation header's columns after ``Class``: how many are counts (images, instances), and the tags of the
    metrics after them, as results.csv names them (``Box(P R mAP50 mAP50-95)`` is ``metrics/precision(B)`` …)."""
    counts, tags, group = 0, [], ""
    for token in header.split():
        if token in _COUNTS and not tags:
            counts += 1
            continue
        opened = re.match(r"(\w+)\((.*)$", token)
        if opened:
            group, token = opened.group(1)[0], opened.group(2)
        closing = token.endswith(")")
        name = token.rstrip(")")
        if group:
            tags.append(f"metrics/{_IN_GROUP.get(name, name)}({group})")
        else:
            tags.append(f"metrics/{_ALONE.get(name, name)}")
        if closing:
            group = ""
    return counts, tuple(tags)


def _loss_tag(name: str) -> str:
    """A loss column as results.csv names it (YOLOv5 v6's ``box`` is ``train/box_loss``)."""
    return f"train/{name}" if name.endswith("loss") else f"train/{name}_loss"


def _numbers(tokens: list[str]) -> list[float] | None:
    """The tokens as numbers, or None when one is not a number as trainers print them."""
    if not all(map(NUMBER_PATTERN.fullmatch, tokens)):
        return None
    return [float(token) for token in tokens]


class UltralyticsConsoleParser(FindallParser):
    family = "Ultralytics"
    lookalike = _LOOKALIKE
    line = _LINE
    lookalike_line = re.compile(r"\n *\d+/\d+ +\S+G |\n +all +[-+.\dn]")  # (the look-alikes are counted in take)
    state_fields = {"_losses": "last", "_columns": "last", "_epoch": "last", "_pending": "last", "_final": "last",
                    "_partial": "sum", "_evaluations": "sum", "_finals": "sum", "_class_rows": "sum",
                    "_completed": "last", "_early": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._lookalikes = 0
        self._losses: list[str] | None = None  # the loss names of the last training header
        self._columns: str | None = None  # the last validation header's columns
        self._epoch: int | None = None  # the epoch of the last bar
        #: the last redraw of the current epoch's bar seen, not yet taken (a later redraw of the same epoch may come):
        #: [epoch, tags, values as printed, count, total]
        self._pending: list | None = None
        self._final = False  # after "Validating …": the final validation's rows
        self._partial = 0  # epochs whose bar stopped before its last batch
        self._evaluations = 0
        self._finals = 0
        self._class_rows = 0
        self._completed: str | None = None  # "N epochs completed in X hours"
        self._early: str | None = None  # the early stopping message

    def count_lookalikes(self, text: str) -> int:
        """The look-alike lines ``line`` found in the last :meth:`take` (read or not): no second scan."""
        return self._lookalikes

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        unread = self.unread_matches
        lookalikes = 0
        final_at = -1
        for index, (number, bar, hours, losses, columns, classes, row, early, stopped, validating, arguments,
                    old_arguments) in enumerate(found):
            if bar:
                lookalikes += 1
                if not self._on_bar(int(number), bar, chunk, text, index):
                    unread.add(index)
            elif row:
                lookalikes += 1
                if not self._on_row(row):
                    unread.add(index)
            elif losses:
                self._losses = losses.split()
            elif columns or classes:
                self._flush()
                self._columns = columns or classes
            elif hours:
                self._flush()
                self._completed = f"{number} epoch(s) completed in {hours} hours"
            elif validating:
                self._flush()
                self._final = True
                final_at = index
            elif early or stopped:
                self._early = "training stopped early" + (early or stopped).rstrip()
            elif (arguments or old_arguments) and not self.hparams:
                for pair in re.split(r", (?=\w+=)", (arguments or old_arguments).strip()):
                    key, _, raw = pair.partition("=")
                    self.hparams[key] = config_value(raw)
        if self._final:  # the final validation's per-class rows: counted
            start = self.match_start(text, final_at) if final_at >= 0 else 0
            self._class_rows += len(_CLASS_ROW.findall(text, start))
        self._lookalikes = lookalikes
        return len(found) - len(unread), lookalikes - len(unread)

    def _on_bar(self, epoch: int, bar: str, chunk: Chunk, text: str, index: int) -> bool:
        """A bar's last redraw (of a run of them): held as the epoch's values until the epoch's validation or another
        epoch's bar; False when it cannot be read (its description cut short, a token no number, a column more)."""
        m = _BAR.fullmatch(bar)
        if m is None or epoch > LARGEST_STEP:
            return False
        memory, values, count, total = m.groups()
        tokens = values.split()
        names = self._losses if self._losses is not None else _DEFAULT_LOSSES.get(len(tokens) - 2)
        if names is None or len(tokens) != len(names) + 2 or _numbers([memory, *tokens]) is None:
            return False
        if self._pending is not None and self._pending[0] != epoch:
            self._flush()
        previous = self._last_anchor.get(-1)
        if previous is not None and epoch < previous:  # a restart, recorded at its line
            self.anchor(epoch, chunk, self.match_start(text, index))
        else:
            self.anchor(epoch, None, 0)
        self._epoch = epoch
        self._final = False
        self._pending = [epoch, ["gpu_mem_gb", *map(_loss_tag, names)], [memory, *tokens[:-2]], int(count), int(total)]
        return True

    def _flush(self) -> None:
        """The held epoch's training values, as rows."""
        if self._pending is None:
            return
        epoch, tags, values, count, total = self._pending
        self._pending = None
        self._partial += count < total
        self.rows.extend(self.rows.codes(tags), [epoch] * len(tags), [float(value) for value in values])

    def _on_row(self, row: str) -> bool:
        """An ``all`` row: the validation's metrics at the epoch of the bar before it (the final validation's as
        ``final/``); False when it has not the columns of the last header."""
        self._flush()
        tokens = row.split()
        if self._columns is not None:
            counts, tags = validation_columns(self._columns)
        else:  # (no header seen: a log that begins mid-training) a detector's six columns or a classifier's two
            counts, tags = validation_columns("Images Instances Box(P R mAP50 mAP50-95)" if len(tokens) != 2 else
                                              "top1_acc top5_acc")
        numbers = _numbers(tokens)
        if not tags or len(tokens) != counts + len(tags) or numbers is None:
            return False
        values = numbers[counts:]
        step = self._epoch if self._epoch is not None else 0
        if self._final:
            tags = tuple(_FINAL + tag for tag in tags)
            self._finals += 1
        else:
            self._evaluations += 1
        self.rows.extend(self.rows.codes(tags), [step] * len(tags), values)
        return True

    def finish(self) -> None:
        self._flush()
        notes = ["Ultralytics YOLO console: step = the epoch as printed; each epoch's training values are the last "
                 "redraw of its bar (the epoch's mean of each loss), tags named as results.csv names them "
                 "(train/<loss>, gpu_mem_gb; the instances and image size are not read)"]
        counts = ((self._evaluations, "validation(s): the 'all' row as metrics/… at its epoch"),
                  (self._finals, "final validation(s) of the best weights: the 'all' row as final/metrics/… at the "
                   "last epoch"),
                  (self._class_rows, "per-class row(s) of the final validation not read (only the 'all' row)"),
                  (self._partial, "epoch(s) whose bar stopped before its last batch (the job stopped mid-epoch?): "
                   "their values are the mean of the batches drawn"))
        notes += [f"{count:,} {text}" for count, text in counts if count]
        notes += [text for text in (self._completed, self._early) if text]
        self.notes[:0] = notes

    def finish_changes_rows(self) -> bool:
        return self._pending is not None  # (the epoch being drawn: taken by finish)


def detect_ultralytics_console(window: str) -> bool:
    """Two lines of Ultralytics' training: its column header, the last redraws of its bars."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(2) or m.group(4))


class UltralyticsConsoleReader(TextReader):
    name = "ultralytics_console"
    description = ("Ultralytics YOLO training console ('  6/6  2.61G  2.048  1.17  2.301  8  64: 100% …', "
                   "'all  16  16  0.992  0.5  0.61  0.376')")
    parser = UltralyticsConsoleParser

    def detect(self, window: str) -> bool:
        return detect_ultralytics_console(window)
