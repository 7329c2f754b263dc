"""DETR-family ``log.txt``: one JSON object per epoch, written by facebookresearch ``main.py`` training scripts.

DETR, Deformable/Conditional/DAB-DETR, DINO, DeiT, MAE, ConvNeXt … all append
``json.dumps(log_stats)`` to ``<output_dir>/log.txt`` after each epoch::

    {"train_lr": 0.0001, "train_loss": 4.23, …, "test_loss": 3.9, "test_coco_eval_bbox": [0.71, 0.98, …],
     "epoch": 0, "n_parameters": 41279495}

Decisions:

* **step = epoch**, as written (0-based); ``train_*`` values are averages over the
  epoch, ``test_*`` values the evaluation after it.
* ``test_coco_eval_bbox`` (and ``_masks``) is COCOeval's ``stats``: 12 numbers,
  expanded to ``test_coco_eval_bbox/AP``, ``/AP50``, ``/AP75``, ``/APs``, ``/APm``,
  ``/APl``, ``/AR1``, ``/AR10``, ``/AR100``, ``/ARs``, ``/ARm``, ``/ARl``. COCOeval
  writes -1 for an area range without ground truth: that is "not computed", not a
  score, so it is read as missing (NaN) and counted in a note, as the other readers
  of COCO metrics do. Other lists of numbers become ``key/0``, ``key/1`` ….
* ``n_parameters`` (the same every epoch) goes to hparams.
* recognised by its first epoch record among the first few lines (:func:`~tanalyze.readers.tabular.common.
  leading_json_object`): lines before it that are not JSON (a record cut at the file's start, a text line such
  as ``Not using distributed mode``) are skipped like any bad line, with a warning naming their line numbers.
* ``main.py`` opens the log in append mode, so a job started again into the same
  output folder appends a second session, named in the notes. One that starts
  over from the first epoch is a session of its own, placed after the first on
  the step axis (the one rule of :mod:`tanalyze.readers.phases`: its steps no
  longer equal its epochs); one resumed from a later epoch replaces what it logs
  again (a restart, the later write wins).
"""

from __future__ import annotations

import math
from pathlib import Path

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    COCO_UNDEFINED,
    JsonLines,
    PointBuffer,
    as_step,
    coco_undefined_note,
    is_number,
    leading_json_object,
    name_list,
    settle_rewrites,
)

__all__ = ["DetrReader", "COCO_STATS"]

#: The names of COCOeval's 12 ``stats`` (bbox and segm), in order.
COCO_STATS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
_COCO_KEYS = ("_coco_eval_bbox", "_coco_eval_masks")
_CONSTANT_KEYS = frozenset({"n_parameters"})


def is_detr_record(record: dict) -> bool:
    """An epoch record: a whole-number ``epoch`` and ``train_*`` keys (and nothing of the step-keyed formats)."""
    return (
        as_step(record.get("epoch")) is not None
        and any(isinstance(k, str) and k.startswith("train_") for k in record)
        and not {"iteration", "step", "iter", "mode"} & set(record)
    )


class DetrReader(Reader):
    """``log.txt`` of DETR-family / facebookresearch ``main.py`` trainers (one JSON object per epoch)."""

    name = "detr"
    description = "DETR-family log.txt (JSON per epoch: train_*, test_*, test_coco_eval_bbox, epoch; also DeiT, MAE)"
    cache_version = 2  # 2: COCO's -1 read as NaN (was left out)

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in (".txt", ".log", ".json", ".jsonl"):
            return False
        # the first record, wherever it is among the first lines: a line before it that is not JSON (a record cut
        # at the file's start, a "Not using distributed mode" printed into the log) is skipped with a warning
        record = leading_json_object(path, head)
        return record is not None and is_detr_record(record)

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        return [self._read_one(path) for path in files]

    def _read_one(self, path: Path) -> RunData:
        run = RunData()
        lines = JsonLines(path)
        points = PointBuffer()
        no_epoch = 0
        undefined: dict[str, int] = {}
        skipped: set[str] = set()
        sessions: list[tuple[int, int, int]] = []  # (first line, first epoch, last epoch)
        hparams: dict[str, float] = {}
        for row, record in lines:
            epoch = as_step(record.get("epoch"))
            if epoch is None:
                no_epoch += 1
                continue
            if not sessions or epoch <= sessions[-1][2]:
                sessions.append((row, epoch, epoch))
            else:
                sessions[-1] = (sessions[-1][0], sessions[-1][1], epoch)
            for key, value in record.items():
                if key == "epoch":
                    continue
                if key in _CONSTANT_KEYS and is_number(value):
                    hparams[key] = value
                elif is_number(value):
                    points.add(row, key, epoch, float(value), float(epoch))
                elif isinstance(value, list) and value and all(is_number(v) for v in value):
                    names = COCO_STATS if key.endswith(_COCO_KEYS) and len(value) == len(COCO_STATS) else None
                    for index, item in enumerate(value):
                        tag = f"{key}/{names[index] if names else index}"
                        number = float(item)
                        if names and item == COCO_UNDEFINED:
                            number = math.nan
                            undefined[tag] = undefined.get(tag, 0) + 1
                        points.add(row, tag, epoch, number, float(epoch))
                else:
                    skipped.add(key)
        run.hparams = hparams
        run.warnings.extend(lines.warnings(str(path)))
        if no_epoch:
            run.warnings.append(ReadWarning(str(path), f"{no_epoch} record(s) without a whole-number 'epoch'; skipped",
                                            count=no_epoch))
        if not len(points) and not run.warnings:
            run.warnings.append(ReadWarning(str(path), "no epoch records in the file"))
        settled = settle_rewrites(points.frame(), str(path), unit="epoch")
        run.scalars = settled.frame
        run.restarts.extend(settled.restarts)
        run.phases.extend(settled.phases)
        run.warnings.extend(settled.warnings)
        run.notes.append("one record per epoch: step = epoch as written (0-based); train_* are epoch averages, "
                         "test_* the evaluation after the epoch")
        if len(sessions) > 1:
            listed = "; ".join(f"epochs {first}–{last} from line {line}" for line, first, last in sessions)
            kept = ("each kept as a session, one after the other on the step axis" if settled.phases else
                    "the later session's values replace the earlier ones where they overlap")
            run.notes.append(f"{len(sessions)} training sessions appended to this file ({listed}): the epochs start "
                             f"over; {kept}")
        run.notes.extend(settled.notes)
        if undefined:
            run.notes.append(coco_undefined_note(undefined))
        if skipped:
            run.notes.append(f"non-numeric values skipped under: {name_list(sorted(skipped))}")
        return run
