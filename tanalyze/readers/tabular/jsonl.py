"""Plain JSON-lines metric logs written by hand-written training loops (``metrics.jsonl``, ``train_log.jsonl`` …).

LLM pretraining scripts, RL loops and nanoGPT forks append one JSON object per logging event::

    {"step": 1, "loss": 11.04, "lr": 3e-05, "grad_norm": 4.2, "tokens_per_second": 91234.5, "mfu": 0.31}
    {"step": 100, "val_loss": 7.12}
    {"status": "COMPLETED", "final_step": 300}

The files of the known JSON-lines writers (LLaMA-Factory's ``trainer_log.jsonl``, detectron2's ``metrics.json``,
MMEngine's ``scalars.json``, Ray Tune's ``result.json``, W&B's and DVCLive's files) are their readers' own: this
reader comes after them in the registry, and its sniff also declines a first record carrying their keys.

Sniff: a ``.jsonl`` / ``.ndjson`` file, or a ``.json`` / ``.log`` one whose name says ``metrics``, ``log`` or
``history``, whose first non-blank line is a JSON object and whose first record with a step-like key
(:data:`STEP_KEYS`; records before it without one, a config or status record, do not stop it) has a whole-number
step and a number besides it.

Decisions:

* **one run per file**: two logs side by side (``train.jsonl``, ``eval.jsonl``) are two runs.
* **step**: the first of :data:`STEP_KEYS` in the first record that has one, for the whole file (one axis: a
  record keyed otherwise is not placed on it but counted as a record without a step). A step that is not a
  whole number of at most 2**53 (what a float-writing logger keeps exact) is named in a warning, its record
  skipped.
* **tags**: every number of a record is a tag at its step, named by its key; nested objects are flattened with
  ``/`` (``{"val": {"loss": 1}}`` is ``val/loss``). NaN and ±Infinity (Python's ``json.dumps`` writes them) are
  values. Text, booleans and lists are skipped and named in a note.
* **epoch column**: ``epoch`` when another key is the step (then it is not a tag).
* **wall time**: ``time``, ``timestamp`` or ``_timestamp`` (the first present) when the first step record holds a
  UNIX time there (seconds, or milliseconds: read as seconds); it is then no tag. Otherwise it is a metric
  (``time`` is often seconds per iteration).
* **records without a step**: a final ``{"status": …}`` record (the last record of the file) is the run's recorded
  end: kept in ``hparams["_jsonl"]`` (``status``, the ``record`` it came from and the record's other scalar
  fields) and said in a note. hparams because it is data about the run that the status scan and reports read by
  key; under a ``_`` key because it is no setting (the hyperparameter analysis skips those), as the Sacred and
  MLflow readers keep theirs. Every other record without a step (a config at the top, a status mid-file) is
  counted in a note naming its keys.
* **restarts**: a step going back is a resumed job; last write wins and the restart is recorded
  (:func:`~tanalyze.readers.tabular.common.settle_rewrites`, as every structured reader does).
* lines that are not JSON (a traceback printed into the log, a line cut by a crash) are skipped and named in a
  warning with their count and line numbers (:class:`~tanalyze.readers.tabular.common.JsonLines`).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.errors import FormatError
from tanalyze.readers.base import HEAD_BYTES, Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    SNIFF_LINES,
    JsonLines,
    PointBuffer,
    _json_object,
    as_step,
    is_number,
    name_list,
    settle_rewrites,
)
from tanalyze.readers.tabular.ray_tune import _flatten

__all__ = ["JsonlReader", "STEP_KEYS", "step_key_of"]

#: The keys a record's step may be under, in the order one is chosen when a record has several.
STEP_KEYS = ("step", "global_step", "iteration", "iter", "it", "update", "num_updates", "timesteps",
             "total_timesteps", "epoch")
#: Keys that may hold the record's UNIX time, in the order one is chosen.
TIME_KEYS = ("time", "timestamp", "_timestamp")
#: Keys of the other JSON-lines writers' records (LLaMA-Factory, Ray Tune, W&B, mmcv 1.x): never claimed here.
OTHER_FORMATS = frozenset({"current_steps", "training_iteration", "_step", "_runtime", "mode"})
#: A step above this is not exact in a float64 (JSON numbers often pass through one): not a step.
STEP_MAX = 2**53
#: UNIX times from 2001-09 to 2096-10, in seconds; the same ×1000 are milliseconds.
_UNIX_LOW, _UNIX_HIGH = 1e9, 4e9
_JSON_SUFFIXES = (".jsonl", ".ndjson")
_NAMED_SUFFIXES = (".json", ".log")
_LOG_NAME = re.compile(r"metric|log|history", re.IGNORECASE)
#: At most this much of a file is read to sniff its first lines when the head cuts them.
_SNIFF_READ_LIMIT = 1 << 20


def step_key_of(record: Mapping[str, Any]) -> str | None:
    """The step-like key of a record (the first of :data:`STEP_KEYS` it holds), or None."""
    for key in STEP_KEYS:
        if key in record:
            return key
    return None


def _whole_step(value: Any) -> int | None:
    """A JSON value as a step: a whole number of magnitude at most 2**53, else None."""
    if type(value) is int:
        return value if -STEP_MAX <= value <= STEP_MAX else None
    step = as_step(value)
    return step if step is not None and abs(step) <= STEP_MAX else None


def _unix_seconds(value: Any) -> float | None:
    """A JSON value as a UNIX time in seconds (seconds, or milliseconds), else None."""
    if not is_number(value):
        return None
    number = float(value)
    if _UNIX_LOW <= number <= _UNIX_HIGH:
        return number
    if _UNIX_LOW * 1000 <= number <= _UNIX_HIGH * 1000:
        return number / 1000
    return None


def _sniff_lines(path: Path, head: bytes) -> Iterable[bytes]:
    """The complete lines of the head; read on from the file (bounded) when the head ends inside its first line."""
    data = head.removeprefix(b"\xef\xbb\xbf")
    if len(head) < HEAD_BYTES or data.endswith(b"\n"):
        return data.split(b"\n")
    cut = data.split(b"\n")[:-1]
    if cut:
        return cut
    try:
        with open(path, "rb") as handle:
            return [handle.readline(_SNIFF_READ_LIMIT).removeprefix(b"\xef\xbb\xbf")]
    except OSError:
        return []


def is_metrics_log(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a JSON-lines metrics log: its first non-blank line a JSON object, and the first
    record with a step-like key (among the first few) a whole-number step with a number besides it."""
    seen = 0
    for line in _sniff_lines(path, head):
        stripped = line.strip()
        if not stripped:
            continue
        record = _json_object(stripped)
        if record is None or not OTHER_FORMATS.isdisjoint(record):
            return False
        key = step_key_of(record)
        if key is not None:
            return _whole_step(record[key]) is not None and any(
                is_number(value) for name, value in record.items() if name != key)
        seen += 1
        if seen >= SNIFF_LINES:
            return False
    return False


class JsonlReader(Reader):
    """Plain JSON-lines metric logs of hand-written loops: one object per logging event, keyed by a step."""

    name = "jsonl"
    description = ("JSON-lines metric log of a hand-written loop (metrics.jsonl, train_log.jsonl …: one object "
                   "per event with step/iter/epoch …, every number a tag)")

    def sniff(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix not in _JSON_SUFFIXES and not (suffix in _NAMED_SUFFIXES and _LOG_NAME.search(path.stem)):
            return False
        return is_metrics_log(path, head)

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        return [read_log(Path(path)) for path in files]


def read_log(path: Path) -> RunData:
    """One JSON-lines metrics log as a run (the decisions are in the module's docstring)."""
    run = RunData()
    file = str(path)
    lines = JsonLines(path)
    points = PointBuffer()
    walls: list[float] = []  # per kept record, in row order
    skipped: Counter[str] = Counter()
    stepless: Counter[str] = Counter()  # keys of the records without a step
    stepless_count = 0
    bad_steps: list[int] = []
    key = wall_key = None
    skip: frozenset[str] = frozenset()
    epoch_column = False
    last_stepless: tuple[int, dict[str, Any]] | None = None
    last_row_was_stepless = False
    nan = math.nan
    try:
        for number, record in lines:
            if key is None:
                key = step_key_of(record)
                if key is not None:
                    epoch_column = key != "epoch" and "epoch" in record
                    wall_key = next((k for k in TIME_KEYS if _unix_seconds(record.get(k)) is not None), None)
                    skip = frozenset(k for k in (key, "epoch" if epoch_column else None, wall_key) if k)
            value = record.get(key) if key is not None else None
            if value is None:
                stepless_count += 1
                stepless.update(record.keys())
                last_stepless, last_row_was_stepless = (number, record), True
                continue
            last_row_was_stepless = False
            step = value if type(value) is int and -STEP_MAX <= value <= STEP_MAX else _whole_step(value)
            if step is None:
                bad_steps.append(number)
                continue
            row = len(walls)
            if wall_key is not None:
                stamp = record.get(wall_key)
                walls.append(nan if stamp is None else (_unix_seconds(stamp) or nan))
            else:
                walls.append(nan)
            epoch = nan
            if epoch_column:
                epoch = record.get("epoch")
                epoch = float(epoch) if type(epoch) is float or type(epoch) is int else nan
            other = points.add_record(row, step, record, skip, epoch)
            for name in other:
                item = record[name]
                if isinstance(item, Mapping):
                    nested: set[str] = set()
                    _flatten(points, row, step, name, item, epoch, nested)
                    skipped.update(nested)
                else:
                    skipped[name] += 1
    except FormatError as exc:
        run.warnings.append(ReadWarning(file, exc.reason))
    run.warnings.extend(lines.warnings(file))
    if bad_steps:
        where = ", ".join(str(n) for n in bad_steps[:5]) + (" …" if len(bad_steps) > 5 else "")
        run.warnings.append(ReadWarning(file, f"{len(bad_steps)} record(s) whose {key!r} is not a whole number of "
                                        f"at most 2**53; skipped", f"line {where}", len(bad_steps)))
    frame = points.frame()
    if len(frame) and wall_key is not None:
        frame["wall_time"] = np.asarray(walls, dtype=np.float64)[frame["_row"].to_numpy()]
    settled = settle_rewrites(frame, file, unit="epoch" if key == "epoch" else "step")
    run.notes.append(_decisions(key, epoch_column, wall_key))
    settled.into(run)
    if last_row_was_stepless and last_stepless is not None and isinstance(last_stepless[1].get("status"), str):
        number, record = last_stepless
        stepless_count -= 1
        stepless.subtract(record.keys())
        _keep_status(run, file, number, record)
    if stepless_count:
        keys = [name for name, count in stepless.most_common() if count > 0]
        run.notes.append(f"{stepless_count} record(s) without {'a step key' if key is None else repr(key)} not read "
                         f"as points (a config, a status …); their keys: {name_list(keys)}")
    if skipped:
        counted = [f"{name} ({count})" if count > 1 else name for name, count in sorted(skipped.items())]
        run.notes.append(f"{sum(skipped.values())} non-numeric value(s) (text, booleans, lists) skipped under: "
                         f"{name_list(counted)}")
    if not len(run.scalars) and not run.warnings:
        run.warnings.append(ReadWarning(file, "no metric records in the file" if key is None
                                        else "no numbers in its step records"))
    return run


def _keep_status(run: RunData, file: str, number: int, record: Mapping[str, Any]) -> None:
    """The final ``{"status": …}`` record: into ``hparams["_jsonl"]`` and a note."""
    fields = {name: value for name, value in record.items()
              if name != "status" and (value is None or isinstance(value, str | int | float | bool))}
    status = str(record["status"])[:200]
    run.hparams = {**run.hparams, "_jsonl": {"status": status, "record": f"{file}:{number}", **fields}}
    shown = ", ".join(f"{name}={json.dumps(value)[:40]}" for name, value in list(fields.items())[:6])
    run.notes.append(f"the log ends with a status record (line {number}): status {status!r}"
                     + (f" ({shown})" if shown else ""))


def _decisions(key: str | None, epoch_column: bool, wall_key: str | None) -> str:
    parts = [f"JSON-lines metrics log: step = {key!r}" if key else "JSON-lines metrics log: no step key found",
             "every number a tag (nested objects joined with '/')"]
    if epoch_column:
        parts.append("epoch column = 'epoch'")
    if wall_key:
        parts.append(f"wall_time = {wall_key!r} (UNIX time)")
    return "; ".join(parts)
