"""LLaMA-Factory's ``trainer_log.jsonl``: one JSON object per logging step, written beside the Trainer's output::

    {"current_steps": 10, "total_steps": 8660, "loss": 2.4977, "learning_rate": 5.77e-07, "epoch": 0.0046,
     "percentage": 0.12, "elapsed_time": "0:00:24", "remaining_time": "5:58:33", "throughput": "0.00", "total_tokens": 0}

Decisions:

* **step = ``current_steps``** (the optimizer step, as the Trainer's own ``trainer_state.json`` counts it, so that
  the two are twins); ``epoch`` (fractional) is the epoch column; ``total_steps`` goes to hparams.
* Every other number is a tag as named (``loss``, ``lr`` or ``learning_rate`` by version, ``eval_loss``,
  ``throughput``, ``total_tokens``, DPO's ``accuracy`` …); a number written as text (``"throughput": "0.00"``)
  is read as the number; the progress bookkeeping (``percentage``, ``elapsed_time``, ``remaining_time``) is not
  a metric.
* A record right after one of the same step and keys is a second process writing the same log (each process
  of a multi-GPU job may): the first is kept and the repeats counted. A step logged again later (a job
  restarted into the same folder) is settled as every structured log is: the later write replaces the earlier.
"""

from __future__ import annotations

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
from tanalyze.readers.values import to_float

__all__ = ["LlamaFactoryReader"]

_BOOKKEEPING = frozenset({"current_steps", "total_steps", "percentage", "elapsed_time", "remaining_time", "epoch"})


def _number(value: object) -> float | None:
    """A record's value as a number: a JSON number, or a number written as text."""
    if is_number(value):
        return float(value)  # type: ignore[arg-type]
    return to_float(value) if isinstance(value, str) else None


class LlamaFactoryReader(Reader):
    """LLaMA-Factory's ``trainer_log.jsonl`` (its ``LogCallback``: one JSON object per logging step)."""

    name = "llamafactory"
    description = "LLaMA-Factory trainer_log.jsonl (JSON per logging step: current_steps, loss, lr, eval_loss, epoch)"
    cache_version = 2  # 2: the last current_steps in hparams (how far the run got)

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in (".jsonl", ".json", ".log", ".txt"):
            return False
        record = first_json_object(head)
        return record is not None and "current_steps" in record and "total_steps" in record

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        return [self._read_one(path) for path in files]

    def _read_one(self, path: Path) -> RunData:
        run = RunData()
        lines = JsonLines(path)
        points = PointBuffer()
        no_step = as_text = doubled = 0
        skipped: set[str] = set()
        previous: tuple[int, frozenset] | None = None
        for row, record in lines:
            step = as_step(record.get("current_steps"))
            if step is None:
                no_step += 1
                continue
            kind = (step, frozenset(record) - _BOOKKEEPING)
            if kind == previous:  # the same step's record again, right after it: a second process writing
                doubled += 1
                continue
            previous = kind
            epoch = _number(record.get("epoch"))
            total = as_step(record.get("total_steps"))
            if total is not None:
                run.hparams["total_steps"] = total
            run.hparams["current_steps"] = step  # (the last one: how far the run got, for its status)
            for key, value in record.items():
                if key in _BOOKKEEPING:
                    continue
                number = _number(value)
                if number is None:
                    skipped.add(key)
                    continue
                as_text += isinstance(value, str)
                points.add(row, key, step, number, float("nan") if epoch is None else epoch)
        run.warnings.extend(lines.warnings(str(path)))
        if no_step:
            run.warnings.append(ReadWarning(str(path), f"{no_step} record(s) without a whole-number 'current_steps'; "
                                            "skipped", count=no_step))
        if not len(points) and not run.warnings:
            run.warnings.append(ReadWarning(str(path), "no metric in its step records (progress only)" if previous
                                            else "no step records in the file"))
        settled = settle_rewrites(points.frame(), str(path))
        run.scalars = settled.frame
        run.restarts.extend(settled.restarts)
        run.phases.extend(settled.phases)
        run.warnings.extend(settled.warnings)
        run.notes.append("LLaMA-Factory trainer_log.jsonl: step = current_steps (the optimizer step); the progress "
                         "fields (percentage, elapsed and remaining time) are not metrics")
        run.notes.extend(settled.notes)
        if doubled:
            run.notes.append(f"{doubled:,} record(s) repeating the step of the record just before them (each process "
                             "of a multi-process job writing the log; their values differ in the last digits): the "
                             "first of each kept")
        if as_text:
            run.notes.append(f"{as_text:,} number(s) written as text read as numbers")
        if skipped:
            run.notes.append(f"non-numeric values skipped under: {name_list(sorted(skipped))}")
        return run
