"""detectron2 ``metrics.json``: JSON lines written by ``JSONWriter``, one object per logging period.

Each line holds ``iteration`` and the smoothed metrics of that period
(``total_loss``, ``lr``, ``fast_rcnn/cls_accuracy`` …); evaluation results
(``bbox/AP`` …) arrive as extra lines at their iteration. ``JSONWriter``
appends, so a job launched again into the same output folder re-logs its first
iterations: last write wins and a restart is recorded. ``last_checkpoint``
beside it (the name of the newest checkpoint) is read into hparams.

COCO stats (``bbox/APl`` …) are percentages; a stat COCOeval did not compute
(its -1: no ground-truth objects of that size) is written as ``NaN`` by
detectron2's ``COCOEvaluator`` (as -1 × 100 = -100 by its first releases): both
are missing values (NaN), counted in a note.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    JsonLines,
    PointBuffer,
    as_step,
    coco_undefined_note,
    first_json_object,
    is_number,
    name_list,
    settle_rewrites,
)

__all__ = ["Detectron2Reader"]

LOG_NAME = "metrics.json"
_ITERATION = frozenset({"iteration"})
CHECKPOINT_NAME = "last_checkpoint"
#: COCOEvaluator's results: ``bbox/AP``, ``segm/APl``, ``keypoints/AP50``, ``bbox/AP-person`` …
_COCO_TAG = re.compile(r"^(?:bbox|segm|keypoints)/A[PR]")
#: what detectron2's first releases wrote for COCOeval's -1 (its stats are percentages)
_NOT_COMPUTED = -100.0


def _is_log_head(head: bytes) -> bool:
    record = first_json_object(head)
    return record is not None and is_number(record.get("iteration"))


class Detectron2Reader(Reader):
    """detectron2 ``metrics.json`` (JSON lines keyed by ``iteration``) + ``last_checkpoint``."""

    name = "detectron2"
    description = "detectron2 metrics.json (JSON lines with 'iteration') + last_checkpoint"
    cache_version = 2  # 2: COCO's 'not computed' (-100 of old releases) read as NaN, counted in a note

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.name == CHECKPOINT_NAME:
            log = path.parent / LOG_NAME
            try:
                with open(log, "rb") as handle:
                    return _is_log_head(handle.read(4096))
            except OSError:
                return False
        return path.suffix.lower() in (".json", ".jsonl") and _is_log_head(head)

    def group(self, files: list[Path]) -> list[list[Path]]:
        logs = sorted(f for f in files if f.name != CHECKPOINT_NAME)
        extra = [f for f in files if f.name == CHECKPOINT_NAME]
        if len(logs) <= 1:
            return [logs + extra]
        return [[log] + (extra if log.name == LOG_NAME else []) for log in logs]

    def read(self, files: list[Path]) -> list[RunData]:
        run = RunData()
        for checkpoint in (f for f in files if f.name == CHECKPOINT_NAME):
            try:
                run.hparams = {**run.hparams, "last_checkpoint": checkpoint.read_text(errors="replace").strip()[:500]}
            except OSError as exc:
                run.warnings.append(ReadWarning(str(checkpoint), f"cannot be read: {exc.strerror or exc}"))
        logs = [f for f in files if f.name != CHECKPOINT_NAME]
        if not logs:
            run.warnings.append(ReadWarning(str(files[0]), "last_checkpoint without a metrics.json beside it: no metrics"))
            return [run]
        log = logs[0]
        lines = JsonLines(log)
        points = PointBuffer()
        no_iteration = 0
        skipped: Counter[str] = Counter()
        for row, record in lines:
            iteration = as_step(record.get("iteration"))
            if iteration is None:
                no_iteration += 1
                continue
            # null is "nothing logged here", like an empty CSV cell; text, booleans … are counted
            skipped.update(points.add_record(row, iteration, record, _ITERATION))
        run.warnings.extend(lines.warnings(str(log)))
        if no_iteration:
            run.warnings.append(ReadWarning(str(log), f"{no_iteration} line(s) have no whole-number 'iteration'; "
                                            "skipped", count=no_iteration))
        if skipped:
            counted = [f"{key} ({count})" for key, count in sorted(skipped.items())]
            run.notes.append(f"{sum(skipped.values())} non-numeric value(s) skipped under: {name_list(counted)}")
        if not len(points) and not run.warnings:
            run.warnings.append(ReadWarning(str(log), "no metric lines in the file"))
        frame, undefined = _coco_not_computed(points.frame())
        if undefined:
            run.notes.append(coco_undefined_note(undefined, "NaN (or -100 by old releases)"))
        settled = settle_rewrites(frame, str(log), unit="iteration")
        settled.into(run)
        return [run]


def _coco_not_computed(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """The table with COCO stats that were not computed (NaN, or -100) as NaN, and how many per tag."""
    if frame.empty or not isinstance(frame["tag"].dtype, pd.CategoricalDtype):
        return frame, {}
    categories = [str(c) for c in frame["tag"].cat.categories]
    coco = [i for i, name in enumerate(categories) if _COCO_TAG.match(name)]
    if not coco:
        return frame, {}
    codes = frame["tag"].cat.codes.to_numpy()
    values = frame["value"].to_numpy()
    missing = np.isin(codes, coco) & (np.isnan(values) | (values == _NOT_COMPUTED))
    if not missing.any():
        return frame, {}
    counts = np.bincount(codes[missing], minlength=len(categories))
    undefined = {categories[i]: int(counts[i]) for i in np.flatnonzero(counts)}
    if (values[missing] == _NOT_COMPUTED).any():
        frame = frame.assign(value=np.where(missing, np.nan, values))
    return frame, undefined
