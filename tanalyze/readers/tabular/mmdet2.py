"""MMDetection 2.x and other mmcv 1.x toolboxes (MMSegmentation, MMClassification …): ``work_dirs/<cfg>/``.

Layout of one work dir (mmcv's ``TextLoggerHook``, one pair of logs per launch)::

    work_dirs/<cfg>/<YYYYMMDD_HHMMSS>.log.json   JSON lines: the source of truth
    work_dirs/<cfg>/<YYYYMMDD_HHMMSS>.log        the same records as text (4 printed digits), with times
    work_dirs/<cfg>/<cfg>.py                     the config, dumped by tools/train.py

The JSON starts with the runner's meta, ``{"env_info": …, "config": …, "seed": …, "exp_name": …}`` (what a
script put there: a tutorial's may be ``{"hook_msgs": {}}``),
then one object per logging period: ``{"mode": "train", "epoch": 1, "iter": 50,
"lr": …, "memory": …, "data_time": …, <losses> …, "time": …}`` and, after each
epoch, ``{"mode": "val", "epoch": 1, "iter": 1581, "lr": …, "bbox_mAP": …}``.

Decisions:

* **one work dir is one run**, however often it was launched (a ``resume_from``
  launch continues the epochs); launches are read in time-stamp order and a
  launch that goes back replaces what it re-logs (a restart). A launch that
  ended before its first logged iteration is named in the notes.
* **twins**: the ``.log`` of a launch that has a ``.log.json`` is not read for
  values (the JSON is exact); it gives the wall time of each record and the
  iterations per epoch. A ``.log`` alone is parsed (values as printed).
* **one axis: global iterations.** ``iter`` counts within an epoch, so a train
  record is at ``(epoch - 1) × N + iter``, N = iterations per epoch: the ``/N``
  of the text log's ``Epoch [e][i/N]``; without a text log the ``iter`` of the
  validation records when it is the same every epoch and no train record goes
  past it (mmcv up to 1.3 writes N there; later versions write the number of
  validation batches, which fails that check more often than not); else the
  largest train ``iter`` logged (up to one logging interval short: said in the
  notes). Validation records go at the end of their epoch, ``epoch × N``. An
  iteration-based loop (``Iter [i/N]``; in JSON, ``iter`` not restarting with the
  epoch) already counts globally: validation goes at the last train iteration.
* the ``epoch`` column: ``epoch - 1 + iter / N`` for train records, the epoch for validation.
* validation keys that train records also have (``lr``) get a ``val/`` prefix;
  ``bbox_mAP_copypaste`` (text) is skipped and named in the notes. A COCO metric of -1 (``bbox_mAP_l``
  when no object of that size was evaluated: pycocotools' "not computed") is read as missing (NaN), counted
  in a note.
* hparams: ``seed`` and ``exp_name`` of the JSON header, and the scalar settings of
  the config (``optimizer.lr``, ``runner.max_epochs`` …), read from the dumped
  ``<cfg>.py`` or the header's copy without executing anything.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    COCO_UNDEFINED,
    JsonLines,
    PointBuffer,
    as_step,
    coco_undefined_note,
    is_coco_metric,
    name_list,
    settle_rewrites,
)
from tanalyze.readers.values import NUMBER, parse_timestamp

__all__ = ["MMDet2Reader", "config_hparams", "parse_text_lines"]

_LAUNCH = re.compile(r"^(\d{8}_\d{6})\.log(\.json)?$")
_LOGGER_LINE = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - (mm[a-z0-9_]*) - [A-Z]+ - ", re.M)
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - [\w.]+ - [A-Z]+ - (.*)$")
_TRAIN = re.compile(r"^Epoch \[(\d+)\]\[(\d+)/(\d+)\]\s+(.*)$")
_ITER_TRAIN = re.compile(r"^Iter \[(\d+)/(\d+)\]\s+(.*)$")
_OTHER = re.compile(r"^(Epoch|Iter)\((\w+)\) \[(\d+)\](?:\[(\d+)\])?\s+(.*)$")
_PAIR = re.compile(rf"(?:^|, )([A-Za-z_][\w./\-@()]*): ({NUMBER})(?=,|\s*$)")
_TEXT_SKIPPED = re.compile(r"(?:^|, )([A-Za-z_][\w./\-@()]*): ")
_NOT_VALUES = frozenset({"mode", "epoch", "iter"})
_HEADER_KEYS = frozenset({"env_info", "config", "seed", "exp_name"})
_MAX_CONFIG_CHARS = 2_000_000
_FIRST_LINE_LIMIT = 1 << 20


@dataclass
class _Row:
    """One record: train or another mode, its epoch and in-epoch (or global) iteration, values, wall time."""

    kind: str
    epoch: int | None
    iter: int
    values: dict[str, float]
    wall: float = math.nan


@dataclass
class _Launch:
    """What one launch (time stamp) logged."""

    stamp: str
    rows: list[_Row] = field(default_factory=list)
    per_epoch: int | None = None  # N from the text log
    iter_based: bool | None = None  # known from the text log
    source: str = ""
    skipped: set[str] = field(default_factory=set)
    header: dict[str, Any] = field(default_factory=dict)


def _first_json_line(path: Path, head: bytes) -> bytes:
    line = head.split(b"\n", 1)[0]
    if b"\n" in head or len(head) < 4096:
        return line
    try:
        with open(path, "rb") as handle:
            return handle.readline(_FIRST_LINE_LIMIT)
    except OSError:
        return b""


def _is_json_log(path: Path, head: bytes) -> bool:
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped.startswith(b"{"):
        return False
    if stripped.startswith(b'{"env_info": '):
        return True
    try:
        record = json.loads(_first_json_line(path, head).decode("utf-8", errors="replace"))
        if isinstance(record, dict) and "mode" not in record and head.count(b"\n") >= 2:
            # mmcv dumps the runner's meta first, whatever it holds (a tutorial's {"hook_msgs": {}}): the next line
            record = json.loads(head.split(b"\n", 2)[1].decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("mode") in ("train", "val", "test") and \
        as_step(record.get("iter")) is not None


def _is_text_log(head: bytes) -> bool:
    found = _LOGGER_LINE.search(head)
    return found is not None and found.group(1) != b"mmengine"


class MMDet2Reader(Reader):
    """mmcv 1.x work dir: ``<ts>.log.json`` (+ its ``<ts>.log`` twin) of every launch, and the dumped config."""

    name = "mmdet2"
    cache_version = 3  # 2: a first line that is the runner's meta, whatever it holds, is the header; 3: COCO's -1
    #                    ('not computed': bbox_mAP_l without large objects) read as NaN
    description = "MMDetection 2.x / mmcv 1.x work_dirs/<cfg>: <ts>.log.json (+ <ts>.log twin, <cfg>.py config)"

    def sniff(self, path: Path, head: bytes) -> bool:
        name = path.name
        if name.endswith(".log.json"):
            return _is_json_log(path, head)
        match = _LAUNCH.match(name)
        if match:
            return _is_text_log(head)
        if path.suffix == ".py":
            return b"dict(" in head and self._has_launch_logs(path.parent)
        return False

    @staticmethod
    def _has_launch_logs(folder: Path) -> bool:
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            return False
        return any(_LAUNCH.match(n) for n in names)

    def read(self, files: list[Path]) -> list[RunData]:
        run = RunData()
        by_stamp: dict[str, dict[str, Path]] = defaultdict(dict)
        configs: list[Path] = []
        for file in sorted(files):
            if file.suffix == ".py":
                configs.append(file)
                continue
            match = _LAUNCH.match(file.name)
            stamp = match.group(1) if match else file.name.removesuffix(".log.json")
            by_stamp[stamp]["json" if file.name.endswith(".json") else "text"] = file
        launches = [self._read_launch(stamp, by_stamp[stamp], run) for stamp in sorted(by_stamp)]
        header = next((la.header for la in reversed(launches) if la.header), {})
        run.hparams = _hparams(header, configs, run)
        _combine(launches, run, files)
        return [run]

    def _read_launch(self, stamp: str, files: dict[str, Path], run: RunData) -> _Launch:
        launch = _Launch(stamp)
        text_rows: list[_Row] = []
        text = files.get("text")
        if text is not None:
            text_rows, launch.per_epoch, launch.iter_based = _read_text(text, run, launch.skipped)
        json_file = files.get("json")
        if json_file is not None:
            launch.source = json_file.name
            launch.rows = _read_json(json_file, run, launch)
            if text is not None:
                if launch.rows or not text_rows:
                    run.notes.append(f"{text.name}: twin of {json_file.name} (the same records, rounded): "
                                     "read for wall times and iterations per epoch only")
                    _add_walls(launch.rows, text_rows)
                else:
                    run.notes.append(f"{json_file.name} holds no record; its twin {text.name} was read instead "
                                     "(values rounded to the printed digits)")
                    launch.rows, launch.source = text_rows, text.name
        elif text is not None:
            launch.rows, launch.source = text_rows, text.name
            if text_rows:
                run.notes.append(f"{text.name}: no .log.json beside it; read from the text (values rounded to the "
                                 "printed digits)")
        return launch


def _read_json(path: Path, run: RunData, launch: _Launch) -> list[_Row]:
    rows: list[_Row] = []
    lines = JsonLines(path)
    other = 0
    for index, (_, record) in enumerate(lines):
        if "mode" not in record and (index == 0 or _HEADER_KEYS & set(record)):  # (the runner's meta comes first)
            launch.header = record
            continue
        step = as_step(record.get("iter"))
        kind = record.get("mode")
        if step is None or not isinstance(kind, str):
            other += 1
            continue
        values = {}
        for key, value in record.items():
            if key in _NOT_VALUES:
                continue
            value_type = type(value)  # what json gives: float, int, bool, str, None, list or dict
            if value_type is float:
                values[key] = value
            elif value_type is int:
                values[key] = float(value)
            else:
                launch.skipped.add(key)
        rows.append(_Row(kind, as_step(record.get("epoch")), step, values))
    run.warnings.extend(lines.warnings(str(path)))
    if other:
        run.warnings.append(ReadWarning(str(path), f"{other} record(s) without a 'mode' and a whole-number 'iter'; "
                                        "skipped", count=other))
    return rows


def parse_text_lines(lines, skipped: set[str]) -> tuple[list[_Row], int | None, bool | None, int]:
    """Records of an mmcv text log → (rows, iterations per epoch, iteration-based?, unreadable record lines)."""
    rows: list[_Row] = []
    per_epoch: Counter[int] = Counter()
    iter_based: bool | None = None
    unreadable = 0
    for line in lines:
        match = _LINE.match(line.rstrip("\r\n"))
        if not match:
            continue
        stamp, message = match.groups()
        if not message.startswith(("Epoch", "Iter")):
            continue
        wall = parse_timestamp(stamp)
        if m := _TRAIN.match(message):
            epoch, position, total, rest = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
            per_epoch[total] += 1
            iter_based, kind = False, "train"
        elif m := _ITER_TRAIN.match(message):
            epoch, position, rest = None, int(m.group(1)), m.group(3)
            iter_based, kind = True, "train"
        elif m := _OTHER.match(message):
            iter_based = iter_based if iter_based is not None else m.group(1) == "Iter"
            kind = m.group(2)
            if m.group(4) is not None:
                epoch, position = int(m.group(3)), int(m.group(4))
            else:
                epoch, position = None, int(m.group(3))
            rest = m.group(5)
        else:
            if message.startswith(("Epoch [", "Iter [", "Epoch(", "Iter(")):
                unreadable += 1
            continue
        values = {name: float(value) for name, value in _PAIR.findall(rest)}
        for name in _TEXT_SKIPPED.findall(rest):
            if name not in values and name != "eta":
                skipped.add(name)
        if not values:
            unreadable += 1
            continue
        rows.append(_Row(kind, epoch, position, values, wall))
    total = per_epoch.most_common(1)[0][0] if per_epoch else None
    return rows, total, iter_based, unreadable


def _read_text(path: Path, run: RunData, skipped: set[str]) -> tuple[list[_Row], int | None, bool | None]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            rows, per_epoch, iter_based, unreadable = parse_text_lines(handle, skipped)
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return [], None, None
    if unreadable:
        run.warnings.append(ReadWarning(str(path), f"{unreadable} 'Epoch […]'/'Iter […]' line(s) could not be read",
                                        count=unreadable))
    return rows, per_epoch, iter_based


def _add_walls(rows: list[_Row], text_rows: list[_Row]) -> None:
    walls = {(r.kind, r.epoch, r.iter): r.wall for r in text_rows}
    for row in rows:
        row.wall = walls.get((row.kind, row.epoch, row.iter), math.nan)


def _iter_based(launch: _Launch) -> bool:
    """Whether ``iter`` counts globally: the text says ``Iter [``, or it does not restart when the epoch changes."""
    if launch.iter_based is not None:
        return launch.iter_based
    previous: tuple[int, int] | None = None
    for row in launch.rows:
        if row.kind != "train" or row.epoch is None:
            continue
        if previous is not None and row.epoch > previous[0]:
            return row.iter > previous[1]
        previous = (row.epoch, row.iter)
    return False


def _per_epoch(launch: _Launch) -> tuple[int | None, str]:
    """Iterations per epoch of an epoch-based launch, and how it was found ('text', 'val', 'max' or '')."""
    if launch.per_epoch:
        return launch.per_epoch, "text"
    train = [r.iter for r in launch.rows if r.kind == "train"]
    val = {r.iter for r in launch.rows if r.kind != "train" and r.epoch is not None}
    if len(val) == 1 and (not train or next(iter(val)) >= max(train)):
        return next(iter(val)), "val"
    if train:
        return max(train), "max"
    return None, ""


def _combine(launches: list[_Launch], run: RunData, files: list[Path]) -> None:
    train_keys = {k for la in launches for r in la.rows if r.kind == "train" for k in r.values}
    points = PointBuffer()
    walls: list[float] = []
    renamed: set[str] = set()
    found: dict[str, list[str]] = defaultdict(list)
    fallback = next((n for n, how in map(_per_epoch, launches) if how in ("text", "val")), None)
    several = len({la.source for la in launches if la.rows}) > 1
    undefined: Counter[str] = Counter()
    order = 0
    for launch in launches:
        if not launch.rows:
            run.notes.append(f"launch {launch.stamp} logged no iteration (the job ended before its first logged "
                             "iteration)")
            continue
        if several:
            points.mark_source(order, launch.source)
        iter_based = _iter_based(launch)
        per_epoch, how = (None, "") if iter_based else _per_epoch(launch)
        if how == "max" and fallback:
            per_epoch, how = fallback, "other launch"
        found["iteration-based" if iter_based else how].append(launch.stamp)
        last_train = 0
        for row in launch.rows:
            if row.kind == "train":
                if iter_based or row.epoch is None or per_epoch is None:
                    step, epoch = row.iter, math.nan
                else:
                    step, epoch = (row.epoch - 1) * per_epoch + row.iter, row.epoch - 1 + row.iter / per_epoch
                last_train = step
            else:
                if not iter_based and row.epoch is not None and per_epoch is not None:
                    step, epoch = row.epoch * per_epoch, float(row.epoch)
                else:
                    step, epoch = last_train, float(row.epoch) if row.epoch is not None else math.nan
            if row.kind == "train":  # most records: every value under its own key
                points.add_record(order, step, row.values, epoch=epoch)
            else:
                for key, value in row.values.items():
                    tag = key
                    if key in train_keys:
                        tag = f"{row.kind}/{key}"
                        renamed.add(f"{key} → {tag}")
                    if value == COCO_UNDEFINED and is_coco_metric(key):
                        value = math.nan
                        undefined[tag] += 1
                    points.add(order, tag, step, value, epoch)
            walls.append(row.wall)
            order += 1
    frame = points.frame()
    if len(frame):
        frame["wall_time"] = np.asarray(walls, dtype=np.float64)[frame["_row"].to_numpy()]
    first = str(files[0]) if files else ""
    settled = settle_rewrites(frame, first, unit="iteration")
    settled.into(run)
    _notes(run, found, renamed, launches)
    if undefined:
        run.notes.append(coco_undefined_note(undefined))
    if run.scalars.empty and not run.warnings:
        run.warnings.append(ReadWarning(first, "no iteration was logged: every launch ended before its first "
                                        "logged iteration"))


def _notes(run: RunData, found: dict[str, list[str]], renamed: set[str], launches: list[_Launch]) -> None:
    how_text = {
        "text": "from the text log's 'Epoch [e][i/N]'",
        "val": "from the 'iter' of the validation records",
        "other launch": "taken from another launch of this work dir",
    }
    for how, stamps in found.items():
        label = f"launch {', '.join(stamps)}" if len(launches) > 1 else "steps"
        if how == "iteration-based":
            run.notes.append(f"{label}: iteration-based loop, step = the logged iteration; validation at the last "
                             "train iteration before it")
        elif how == "max":
            run.notes.append(f"{label}: iterations per epoch unknown (no text log, no usable validation 'iter'); "
                             "the largest train 'iter' logged is used, so steps after epoch 1 may be up to one "
                             "logging interval short")
        elif how:
            run.notes.append(f"{label}: step = (epoch - 1) × iterations per epoch + iter, iterations per epoch "
                             f"{how_text[how]}; validation at the end of its epoch (epoch × iterations per epoch)")
    if renamed:
        run.notes.append(f"validation keys also used by train records renamed: {name_list(sorted(renamed))}")
    skipped = sorted({key for launch in launches for key in launch.skipped})
    if skipped:
        run.notes.append(f"non-numeric values skipped under: {name_list(skipped)}")


def _hparams(header: dict[str, Any], configs: list[Path], run: RunData) -> dict[str, Any]:
    hparams: dict[str, Any] = {}
    source, text = None, None
    if configs:
        try:
            text = configs[0].read_text(encoding="utf-8", errors="replace")[:_MAX_CONFIG_CHARS]
            source = configs[0].name
        except OSError as exc:
            run.warnings.append(ReadWarning(str(configs[0]), f"cannot be read: {exc.strerror or exc}"))
    if text is None and isinstance(header.get("config"), str):
        text, source = header["config"][:_MAX_CONFIG_CHARS], "the JSON header's config"
    if text is not None:
        settings, problem = config_hparams(text)
        hparams.update(settings)
        if problem:
            run.notes.append(f"config ({source}) not read: {problem}")
    for key in ("seed", "exp_name"):
        if header.get(key) is not None:
            hparams[key] = header[key]
    return hparams


def _literal(node: ast.AST) -> Any:
    """The value of a literal or a ``dict(key=…)`` call (entries that are not literals left out); ValueError else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        out = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                continue
            try:
                out[keyword.arg] = _literal(keyword.value)
            except (ValueError, TypeError, SyntaxError):
                continue  # a reference to another variable (pipeline=train_pipeline) or a call
        return out
    return ast.literal_eval(node)


def config_hparams(text: str) -> tuple[dict[str, Any], str | None]:
    """Scalar settings of an mmcv config (Python source), parsed, never executed.

    Top-level ``name = scalar`` → ``name``; top-level ``name = dict(…)`` → its scalar
    entries as ``name.key`` (``optimizer.lr``, ``runner.max_epochs``). Returns the
    settings and, when the text could not be parsed, why.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {}, type(exc).__name__
    out: dict[str, Any] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            continue
        name = statement.targets[0].id
        try:
            value = _literal(statement.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str | int | float | bool) or item is None:
                    out[f"{name}.{key}"] = item
        elif isinstance(value, str | int | float | bool) or value is None:
            out[name] = value
    return out, None
