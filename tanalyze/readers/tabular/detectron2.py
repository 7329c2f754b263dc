"""detectron2 ``metrics.json``: JSON lines written by ``JSONWriter``, one object per logging period.

Each line holds ``iteration`` and the smoothed metrics of that period
(``total_loss``, ``lr``, ``fast_rcnn/cls_accuracy`` …); evaluation results
(``bbox/AP`` …) arrive as extra lines at their iteration. ``JSONWriter``
appends, so a job launched again into the same output folder re-logs its first
iterations: last write wins and a restart is recorded. ``last_checkpoint``
beside it (the name of the newest checkpoint) is read into hparams.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    JsonLines,
    PointBuffer,
    as_step,
    first_json_object,
    is_number,
    name_list,
    settle_rewrites,
)

__all__ = ["Detectron2Reader"]

LOG_NAME = "metrics.json"
_ITERATION = frozenset({"iteration"})
CHECKPOINT_NAME = "last_checkpoint"


def _is_log_head(head: bytes) -> bool:
    record = first_json_object(head)
    return record is not None and is_number(record.get("iteration"))


class Detectron2Reader(Reader):
    """detectron2 ``metrics.json`` (JSON lines keyed by ``iteration``) + ``last_checkpoint``."""

    name = "detectron2"
    description = "detectron2 metrics.json (JSON lines with 'iteration') + last_checkpoint"

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
        settled = settle_rewrites(points.frame(), str(log), unit="iteration")
        settled.into(run)
        return [run]
