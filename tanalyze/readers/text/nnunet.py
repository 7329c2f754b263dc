"""nnU-Net's training log (``nnUNet_results/<dataset>/<trainer>__<plans>__<config>/fold_<k>/training_log_*.txt``).

nnU-Net (v2, ``nnunetv2``) writes one line per event, each after the time it was written::

    2025-11-19 00:07:35.259727: Epoch 72
    2025-11-19 00:07:35.269744: Current learning rate: 0.00935
    2025-11-19 00:09:11.854378: train_loss -0.5525
    2025-11-19 00:09:11.864611: val_loss -0.5249
    2025-11-19 00:09:11.870212: Pseudo dice [np.float32(0.8963), np.float32(0.6723), np.float32(0.4863)]
    2025-11-19 00:09:11.881562: Epoch time: 96.61 s
    2025-11-19 00:09:11.888659: Yayy! New best EMA pseudo Dice: 0.5845999717712402

nnU-Net v1 (``nnunet``) wrote the epoch on a line of its own and other names::

    2021-06-21 08:13:03.056420:
    epoch:  226
    2021-06-21 08:17:05.605214: train loss : -0.7531
    2021-06-21 08:17:47.605599: validation loss: -0.5259
    2021-06-21 08:17:47.610551: Average global foreground Dice: [0.9093312319493183, 0.7775973440464092]
    2021-06-21 08:13:03.053071: lr: 0.007941
    2021-06-21 08:13:03.054774: This epoch took 288.041806 s

Decisions:

* **step = the epoch** of the last ``Epoch N`` (``epoch: N``) line above; lines before the first are the
  set-up (the fold, the split's case counts, the configuration's name and batch size go to hparams).
* Tags: ``train_loss``, ``val_loss`` (nnU-Net's loss is Dice + cross-entropy with the Dice term negative:
  it falls below zero, towards -1), ``lr``, ``epoch_time_s``; the per-class Dice of the validation batches as
  ``pseudo_dice/1``, ``pseudo_dice/2`` … in the order printed (the foreground labels or regions) and their
  mean (NaN classes left out, as nnU-Net's own mean) as ``pseudo_dice/mean``; v1's "global foreground Dice"
  as ``global_dice/1`` … and ``global_dice/mean``. ``Yayy! New best EMA pseudo Dice`` (printed only when
  the EMA improves and ``checkpoint_best`` is saved) as ``best_ema_pseudo_dice``, at those epochs; the
  final validation's ``Mean Validation Dice`` as ``final_validation_dice`` at the last epoch.
* wall time: the line's own time (local time, read as UTC as every text log's).
* nnU-Net starts a new ``training_log_<date>.txt`` each time a fold is trained or continued (``--c``): the
  logs of one fold folder are one run, read in the order of the dates in their names; epochs a continued
  training logs again replace the earlier ones (the later write wins).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from tanalyze.readers.base import FilePart, RunData
from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk, TextStats
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER, NUMBER_PATTERN, parse_timestamps, to_float

__all__ = ["NnUNetParser", "NnUNetReader", "detect_nnunet"]

_STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?): "
_NAMES = (r"train_loss|val_loss|Current learning rate:|Epoch time:|Yayy! New best EMA pseudo Dice:|Mean Validation Dice:|"
          r"train loss :|validation loss:|validation loss \(train=True\):|lr:|This epoch took")
EPOCH = re.compile(rf"^(?:{_STAMP}Epoch|epoch:) +(\d+)[ \t]*$", re.M)
#: a metric line: its name as printed and the number (v1 and v2 names; EMA Dice sometimes printed in brackets)
METRIC = re.compile(rf"^{_STAMP}({_NAMES}) +\[?({NUMBER})\]?(?: s)?[ \t]*$", re.M)
DICE_LIST = re.compile(rf"^{_STAMP}(Pseudo dice|Average global foreground Dice:) \[([^\]\n]*)\][ \t]*$", re.M)
#: every line read, found from its line break (searched for at C speed, where ``^`` is tried at every character):
#: an epoch line (v1's ``epoch:``, the epoch), a metric line (time, name, number) or a Dice line (time, name, list)
_LINE = re.compile(
    rf"\n(?:(?:{_STAMP.replace('(', '(?:', 1)}Epoch|(epoch:)) +(\d+)|{_STAMP}({_NAMES}) +\[?({NUMBER})\]?(?: s)?"
    rf"|{_STAMP}(Pseudo dice|Average global foreground Dice:) \[([^\]\n]*)\])[ \t]*(?=\n)")
SETUP = re.compile(rf"^(?:{_STAMP})?(Desired fold for training: (\d+)|This split has (\d+) training and (\d+) "
                   r"validation cases\.|Configuration name: (\S+)|\s*\{'data_identifier': .*'batch_size': (\d+),.*)[ \t]*$",
                   re.M)
_SETUP_WORDS = ("Desired fold", "This split has", "Configuration name", "'batch_size'")
_LOOKALIKE = rf"{_STAMP}(?:train_loss|val_loss|Pseudo dice|train loss|validation loss)"
_LOOKALIKE_NAMES = frozenset({"train_loss", "val_loss", "train loss :", "validation loss:",
                              "validation loss (train=True):"})
_TAGS = {"train_loss": "train_loss", "val_loss": "val_loss", "Current learning rate:": "lr",
         "Epoch time:": "epoch_time_s", "Yayy! New best EMA pseudo Dice:": "best_ema_pseudo_dice",
         "Mean Validation Dice:": "final_validation_dice", "train loss :": "train_loss",
         "validation loss:": "val_loss", "validation loss (train=True):": "val_loss_train_mode", "lr:": "lr",
         "This epoch took": "epoch_time_s"}
_DICE_TAGS = {"Pseudo dice": "pseudo_dice", "Average global foreground Dice:": "global_dice"}
#: printed when an epoch starts (v2) or after its results (v1's lr): not results of the epoch
_BEFORE_TRAINING = frozenset({"Current learning rate:", "lr:"})
_NUMPY_SCALAR = re.compile(r"np\.\w+\(")


class NnUNetParser(FindallParser):
    """Reads a chunk's epoch, metric and Dice lines with one pattern (see ._findall) and adds their values at once."""

    family = "nnU-Net"
    lookalike = re.compile(rf"^{_LOOKALIKE}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n{_LOOKALIKE}")
    state_fields = {"_epoch": "last", "_before_first_epoch": "sum", "_v1": "last", "_first_epoch": "last",
                    "_epoch_values": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None
        self._before_first_epoch = 0
        self._v1 = False
        self._first_epoch: int | None = None
        self._epoch_values = 0  # values read since the last epoch line

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        if any(word in chunk.text for word in _SETUP_WORDS):
            for m in SETUP.finditer(chunk.text):
                self._on_setup(m)
        codes: list[int] = []
        steps: list[int] = []
        values: list[float] = []
        stamps: list[str] = []
        code: dict[str, int] = {}
        read = lookalikes = 0
        epoch = self._epoch
        for index, (v1, number, stamp, name, value, dice_stamp, dice_name, listed) in enumerate(found):
            if number:
                epoch = int(number)
                self._first_epoch = epoch if self._first_epoch is None else self._first_epoch
                self._epoch_values = 0
                self._v1 = self._v1 or bool(v1)
                if self._last_step is not None and epoch < self._last_step:  # a restart: where it is, for its line
                    self.anchor(epoch, chunk, self.match_start(text, index))
                else:
                    self.anchor(epoch, None, 0)
                read += 1
            elif epoch is None:
                self._before_first_epoch += 1
                self.unread_matches.add(index)
            elif name:
                codes.append(code[name] if name in code else code.setdefault(name, self.rows.code(_TAGS[name])))
                steps.append(epoch)
                values.append(float(value))
                stamps.append(stamp)
                self._epoch_values += name not in _BEFORE_TRAINING
                lookalikes += name in _LOOKALIKE_NAMES
                read += 1
            else:
                pairs = _dice(dice_name, listed)
                codes += self.rows.codes([tag for tag, _ in pairs])
                steps += [epoch] * len(pairs)
                values += [number for _, number in pairs]
                stamps += [dice_stamp] * len(pairs)
                self._epoch_values += 1
                lookalikes += dice_name == "Pseudo dice"
                read += 1
        self._epoch = epoch
        self.rows.extend(codes, steps, values, epoch=[float(step) for step in steps], wall=parse_timestamps(stamps))
        return read, lookalikes

    def _on_setup(self, m: re.Match[str]) -> None:
        if m.group(3) is not None:
            self.hparams["fold"] = int(m.group(3))
        elif m.group(4) is not None:
            self.hparams["training_cases"], self.hparams["validation_cases"] = int(m.group(4)), int(m.group(5))
        elif m.group(6) is not None:
            self.hparams["configuration"] = m.group(6)
        elif m.group(7) is not None:  # the configuration's settings, printed as a dict
            self.hparams["batch_size"] = int(m.group(7))

    def close_file(self, stats: TextStats) -> None:
        """Each log's epochs (a fold's logs are its trainings, started or continued), and an epoch it began but
        logged nothing of (the job stopped there)."""
        super().close_file(stats)
        if self._epoch is not None:
            cut = f"; epoch {self._epoch} has no values: the job stopped during it" if not self._epoch_values else ""
            self.notes.append(f"{self.file}: epochs {self._first_epoch}–{self._epoch}{cut}")

    def finish(self) -> None:
        version = "v1 ('epoch: N', 'train loss :')" if self._v1 else "v2"
        notes = [f"nnU-Net {version} training log: step = the epoch of the 'Epoch N' line above each value; the "
                 "loss is Dice + cross-entropy, below zero as the Dice term grows"]
        self.count_note(self._before_first_epoch, "metric line(s) before the first epoch line skipped")
        self.notes[:0] = notes


def _dice(name: str, listed: str) -> list[tuple[str, float]]:
    """The Dice of each class (``np.float32(0.97)`` or ``0.97``; NaN for a class without any) and their mean
    (NaN classes left out, as nnU-Net's own mean)."""
    numbers = [to_float(text) for text in NUMBER_PATTERN.findall(_NUMPY_SCALAR.sub("", listed))]
    values = [math.nan if number is None else number for number in numbers]
    if not values:
        return []
    tag = _DICE_TAGS[name]
    finite = [value for value in values if not math.isnan(value)]
    return [*((f"{tag}/{index}", value) for index, value in enumerate(values, 1)),
            (f"{tag}/mean", sum(finite) / len(finite) if finite else math.nan)]


def _started(path: Path) -> tuple[int, ...]:
    """When a ``training_log_<year>_<month>_<day>_<hour>_<minute>_<second>.txt`` was started: its numbers (not
    zero-padded: ``2026_12_7_01_36_13``, so the names do not sort by date)."""
    return tuple(int(number) for number in re.findall(r"\d+", path.name))


def detect_nnunet(window: str) -> bool:
    """An epoch line and a metric line of nnU-Net's log."""
    return EPOCH.search(window) is not None and (METRIC.search(window) is not None
                                                 or DICE_LIST.search(window) is not None)


class NnUNetReader(TextReader):
    name = "nnunet"
    description = "nnU-Net training_log_*.txt (v2: 'Epoch N', 'train_loss …', 'Pseudo dice [...]'; v1: 'epoch:  N')"
    parser = NnUNetParser

    def detect(self, window: str) -> bool:
        return detect_nnunet(window)

    def combine(self, files: list[Path], parts: list[FilePart]) -> list[RunData]:
        """A fold's logs in the order they were started (the later training's values win where they overlap)."""
        ordered = sorted(zip(files, parts, strict=True), key=lambda pair: _started(Path(pair[0])))
        return super().combine([file for file, _ in ordered], [part for _, part in ordered])

    def group(self, files: list[Path]) -> list[list[Path]]:
        """A fold folder's ``training_log_*.txt`` files are one run (one per training started or continued)."""
        logs = sorted((f for f in files if f.name.startswith("training_log_")), key=_started)
        groups = [[f] for f in sorted(set(files) - set(logs))]
        by_folder: dict[Path, list[Path]] = {}
        for log in logs:
            by_folder.setdefault(log.parent, []).append(log)
        return sorted([*groups, *by_folder.values()], key=lambda group: str(group[0]))
