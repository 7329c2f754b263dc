"""MMEngine work dirs (MMDetection, MMYOLO, MMPretrain …): ``vis_data/scalars.json`` and friends.

Layout of one experiment::

    work_dirs/<exp>/last_checkpoint                  path of the newest checkpoint
    work_dirs/<exp>/<YYYYMMDD_HHMMSS>/<ts>.log        text logger (one per launch)
    work_dirs/<exp>/<ts>/vis_data/scalars.json       JSON lines: the source of truth
    work_dirs/<exp>/<ts>/vis_data/<ts>.json          an identical copy (read once)
    work_dirs/<exp>/<ts>/<ts>.json                   a test-only launch: one object, no step

Committed to a repository the scalars often lie flat, out of their ``vis_data/`` (``scalars.json``,
``<ts>.json`` beside the code): such a file is known by its records (JSON lines with a ``step``), not by
its folder, and each distinct one is a launch of the folder's experiment. Renamed (``scalars_r50.json``,
``scalars_aspp.json`` side by side: one per config), it is known by its records alone: JSON lines whose
first record has a whole-number ``step`` and MMEngine's timer keys (``data_time`` and ``time``, which every
train and validation record carries), or a train record's ``iter`` with its learning rate or a loss, and
nothing of the other JSON-lines formats (mmcv's ``mode``, detectron2's ``iteration``, W&B's ``_step``);
each renamed file is a run of its own (named after the file).

Decisions:

* **one experiment folder is one run**, however often it was launched: a
  ``resume=True`` launch re-logs the iterations after its checkpoint, and last
  write wins with a restart recorded (:meth:`MMEngineReader.run_directory`
  returns the experiment folder).
* **one axis: iterations.** Train rows are keyed by global iteration; in an
  epoch-based loop validation rows are keyed by *epoch*. They are moved to the
  iteration that ends that epoch (``epoch × iterations per epoch``, taken from
  the ``[i/N]`` counters of the text log or derived from the train rows), and
  the epoch goes to the ``epoch`` column. The epoch column of train rows is the
  fraction of epochs done (``iteration / N``), as Hugging Face writes it.
* a record is a training one when it carries the loop's counter (``iter``, ``epoch``) or what only training
  logs (a learning rate, a loss): MMEngine's iteration-based loops write neither counter;
* validation keys that train rows also use (``time``, ``data_time``) get a
  ``val/`` prefix; test-launch keys get a ``test/`` prefix (at the last training
  iteration of the experiment, or step 0 when it has none).
* the text log is parsed only for a launch without JSON (values rounded to the
  4 digits the logger prints).
* a COCO metric of -1 (``coco/bbox_mAP_l`` when no object of that size was evaluated: pycocotools' "not
  computed") is read as missing (NaN), counted in a note.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    COCO_UNDEFINED,
    JsonLines,
    PointBuffer,
    as_step,
    coco_undefined_note,
    first_json_object,
    is_coco_metric,
    is_number,
    is_timestamp_name,
    leading_json_object,
    name_list,
    read_head,
    settle_rewrites,
)

__all__ = ["MMEngineReader", "parse_text_log", "is_scalars_record"]

CHECKPOINT_NAME = "last_checkpoint"
SCALARS_NAME = "scalars.json"
_MMENGINE_LINE = b" - mmengine - "
_NOT_TAGS = frozenset({"step", "iter", "epoch"})
#: keys of the other JSON-lines formats' records (mmcv 1.x, detectron2, W&B, LLaMA-Factory, Ray Tune)
_OTHER_FORMATS = frozenset({"mode", "iteration", "_step", "current_steps", "training_iteration"})
_LOG_LINE = re.compile(r"\b(Epoch|Iter)\((train|val|test)\)\s*((?:\[\s*\d+(?:/\d+)?\]\s*)+)(.*)")
_BRACKET = re.compile(r"\[\s*(\d+)(?:/(\d+))?\]")
_PAIR = re.compile(r"([\w/\-.()]+):\s+(-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))(?=\s|$)")


def _launch_of(path: Path) -> Path:
    """The launch folder a file belongs to (``<ts>/``), or its own folder."""
    folder = path.parent
    if folder.name == "vis_data":
        return folder.parent
    return folder


class MMEngineReader(Reader):
    """MMEngine experiment folder: scalars.json of every launch, test results, text logs, last_checkpoint."""

    name = "mmengine"
    description = "MMEngine work_dirs/<exp>: <ts>/vis_data/scalars.json (+ <ts>.log, <ts>.json, last_checkpoint)"
    cache_version = 3  # 2: scalars out of their vis_data/ folder; training records known by their learning rate,
    #                    losses; 3: renamed scalars files (known by their records) a run each; COCO's -1 read as NaN

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.name == CHECKPOINT_NAME:
            return self._is_experiment(path.parent)
        suffix = path.suffix.lower()
        if suffix == ".log":
            return is_timestamp_name(path.stem) and _MMENGINE_LINE in head
        if suffix != ".json":
            return False
        record = first_json_object(head)
        if record is not None:
            if path.parent.name == "vis_data" or path.name == SCALARS_NAME or is_timestamp_name(path.stem):
                if "step" in record:
                    return True
            # a test launch: <ts>/<ts>.json holding one metrics object
            if is_timestamp_name(path.stem) and path.parent.name == path.stem and all(
                is_number(v) for v in record.values()
            ):
                return True
        # whatever its name (scalars_r50.json): a scalars file is known by its records
        record = record if record is not None else leading_json_object(path, head)
        return record is not None and is_scalars_record(record)

    def _is_experiment(self, folder: Path) -> bool:
        try:
            launches = [p for p in folder.iterdir() if p.is_dir() and is_timestamp_name(p.name)]
        except OSError:
            return False
        return any((p / "vis_data").is_dir() or (p / f"{p.name}.log").is_file() for p in launches)

    def group(self, files: list[Path]) -> list[list[Path]]:
        """One run per experiment folder; a renamed scalars file (``scalars_r50.json``: one per config, side by
        side) is a run of its own."""
        renamed = sorted(f for f in files if _is_renamed(f))
        rest = sorted(f for f in files if f not in renamed)
        return ([rest] if rest else []) + [[f] for f in renamed]

    def run_directory(self, path: Path) -> Path:
        """The experiment folder: every launch (``<ts>/``) of one config is one run."""
        if path.name == CHECKPOINT_NAME:
            return path.parent
        launch = _launch_of(path)
        return launch.parent if is_timestamp_name(launch.name) else launch

    def read(self, files: list[Path]) -> list[RunData]:
        run = RunData()
        launches: dict[Path, list[Path]] = {}
        if all(f.name == CHECKPOINT_NAME for f in files):
            run.warnings.append(ReadWarning(str(files[0]), "last_checkpoint without any launch folder: no metrics"))
        for file in files:
            if file.name == CHECKPOINT_NAME:
                try:
                    run.hparams = {"last_checkpoint": file.read_text(errors="replace").strip()[:500]}
                except OSError as exc:
                    run.warnings.append(ReadWarning(str(file), f"cannot be read: {exc.strerror or exc}"))
                continue
            launches.setdefault(_launch_of(file), []).append(file)
        ordered = sorted(launches, key=lambda p: p.name)
        experiment = _Experiment()
        for launch in ordered:
            experiment.add_launch(launch, launches[launch], run)
        experiment.finish(run)
        if len(ordered) > 1:
            run.notes.insert(0, f"one experiment launched {len(ordered)} times "
                                f"({name_list([p.name for p in ordered], 6)}): read as one run in launch order")
        return [run]


@dataclass
class _Row:
    """One logged record: its kind (train/val/test), position in the run, keys and values."""

    kind: str
    order: int
    source: str
    step: int | None
    epoch: float | None
    values: dict[str, float]


@dataclass
class _Experiment:
    """The rows of every launch of one experiment, in launch order, and what is known about its loop."""

    rows: list[_Row] = field(default_factory=list)
    iters_per_epoch: list[int] = field(default_factory=list)
    epoch_based: bool = False
    skipped: set[str] = field(default_factory=set)
    first_file: str = ""

    def add_launch(self, launch: Path, files: list[Path], run: RunData) -> None:
        by_name = {f.name: f for f in files}
        vis = [f for f in files if f.parent.name == "vis_data"]
        logs = [f for f in files if f.suffix.lower() == ".log"]
        outside = [f for f in files if f.parent.name != "vis_data" and f.suffix.lower() == ".json"]
        flat = [f for f in outside if _holds_scalars(f)]
        tests = [f for f in outside if f not in flat]
        for log in logs:
            per_epoch = _iters_per_epoch(log)
            if per_epoch:
                self.iters_per_epoch.append(per_epoch)
        scalars = by_name.get(SCALARS_NAME) if by_name.get(SCALARS_NAME) in vis else None
        source = scalars or (sorted(vis)[0] if vis else None)
        for copy in vis:
            if copy == source:
                continue
            if _same_bytes(copy, source):
                run.notes.append(f"{_short(copy)} is an identical copy of {_short(source)}: read once")
            else:
                run.notes.append(f"{_short(copy)} differs from {_short(source)}: only the latter was read")
        if source is not None:
            self._add_json(source, run)
        elif flat:
            self._add_flat(flat, run)
        elif logs and not tests:
            self._add_text(logs[0], run)
        for test in tests:
            self._add_json(test, run, kind="test")

    def _add_flat(self, files: list[Path], run: RunData) -> None:
        """Scalars files out of their ``vis_data/``: each distinct one a launch, in the order of their stamps
        (``scalars.json``, the copy of the latest launch, last); identical copies read once."""
        ordered = sorted(files, key=lambda f: (f.name == SCALARS_NAME, f.name))
        read: list[Path] = []
        for file in ordered:
            same = next((done for done in read if _same_bytes(file, done)), None)
            if same is not None:
                run.notes.append(f"{_short(file)} is an identical copy of {_short(same)}: read once")
                continue
            read.append(file)
            self._add_json(file, run)
        if len(read) > 1:
            run.notes.append(f"{len(read)} different scalars files out of their vis_data/ folder "
                             f"({name_list([f.name for f in read], 6)}): read as launches of one experiment, "
                             "in that order")

    def _add_json(self, path: Path, run: RunData, kind: str | None = None) -> None:
        self.first_file = self.first_file or str(path)
        source = _short(path)
        before = len(self.rows)
        lines = JsonLines(path)
        for _, record in lines:
            values = {}
            for key, value in record.items():
                if key in _NOT_TAGS:
                    continue
                if is_number(value):
                    values[key] = float(value)
                else:
                    self.skipped.add(key)
            step = record.get("step")
            step = as_step(step)
            epoch = record.get("epoch")
            row_kind = kind or ("train" if _is_training(record) else "val")
            if row_kind == "train":
                self.epoch_based |= "epoch" in record
                step = as_step(record.get("iter")) if "iter" in record else step
            self.rows.append(_Row(row_kind, len(self.rows), source, step,
                                  float(epoch) if is_number(epoch) else None, values))
        run.warnings.extend(lines.warnings(str(path)))
        if len(self.rows) == before:
            run.warnings.append(ReadWarning(str(path), "no metric records in the file"))

    def _add_text(self, path: Path, run: RunData) -> None:
        self.first_file = self.first_file or str(path)
        source = _short(path)
        rows, epoch_based = parse_text_log(_read_lines(path, run))
        if not rows:
            run.warnings.append(ReadWarning(str(path), "no JSON scalars for this launch and no metric lines in "
                                            "its text log"))
            return
        self.epoch_based |= epoch_based
        for kind, step, epoch, values in rows:
            self.rows.append(_Row(kind, len(self.rows), source, step, epoch, values))
        run.notes.append(f"{path.name}: no JSON scalars for this launch; read from the text log "
                         "(values rounded to the printed digits)")

    def finish(self, run: RunData) -> None:
        per_epoch = self._per_epoch(run)
        train_keys = {k for r in self.rows if r.kind == "train" for k in r.values}
        renamed: set[str] = set()
        points = PointBuffer()
        last_train = max((r.step for r in self.rows if r.kind == "train" and r.step is not None), default=None)
        approximate = unkeyed = 0
        missing_steps = 0
        undefined: Counter[str] = Counter()
        several_files = len({r.source for r in self.rows}) > 1
        previous_source = None
        for row in self.rows:
            if several_files and row.source != previous_source:  # a `source` column says which file
                points.mark_source(row.order, row.source)
                previous_source = row.source
            step, epoch = row.step, row.epoch if row.epoch is not None else math.nan
            prefix = ""
            if row.kind == "train":
                if per_epoch and step is not None:
                    epoch = step / per_epoch
            elif row.kind == "val":
                prefix = "val/"
                if self.epoch_based and step is not None:
                    epoch = float(step)
                    if per_epoch:
                        step = step * per_epoch
                    else:
                        ends = [r.step for r in self.rows
                                if r.kind == "train" and r.epoch == epoch and r.step is not None]
                        if ends:
                            step, approximate = max(ends), approximate + 1
                        else:
                            unkeyed += 1
            else:
                prefix = "test/"
                step = last_train if last_train is not None else 0
            if step is None:
                missing_steps += 1
                continue
            for key, value in row.values.items():
                tag = key
                if row.kind == "test" or (row.kind == "val" and key in train_keys):
                    tag = prefix + key
                    if row.kind == "val":
                        renamed.add(f"{key} → {tag}")
                if row.kind != "train" and value == COCO_UNDEFINED and is_coco_metric(key):
                    value = math.nan
                    undefined[tag] += 1
                points.add(row.order, tag, step, value, epoch)
        frame = points.frame()
        settled = settle_rewrites(frame, self.first_file, unit="iteration")
        settled.into(run)
        self._notes(run, per_epoch, renamed, approximate, unkeyed, last_train, missing_steps)
        if undefined:
            run.notes.append(coco_undefined_note(undefined))

    def _per_epoch(self, run: RunData) -> int | None:
        if not self.epoch_based:
            return None
        counts = Counter(self.iters_per_epoch)
        if len(counts) > 1:
            run.notes.append(f"text logs disagree on iterations per epoch ({sorted(counts)}); the most common used")
        if counts:
            return counts.most_common(1)[0][0]
        return _derive_per_epoch([(r.epoch, r.step) for r in self.rows if r.kind == "train"])

    def _notes(self, run: RunData, per_epoch: int | None, renamed: set[str], approximate: int, unkeyed: int,
               last_train: int | None, missing_steps: int) -> None:
        kinds = Counter(r.kind for r in self.rows)
        if kinds["val"] and self.epoch_based:
            if per_epoch:
                run.notes.append(
                    f"validation rows are keyed by epoch: moved to the iteration ending that epoch "
                    f"(epoch × {per_epoch} iterations per epoch), epoch kept in the epoch column; "
                    f"train epoch column = iteration / {per_epoch}"
                )
            if approximate:
                run.notes.append(f"{approximate} validation row(s): iterations per epoch unknown; placed at the "
                                 "last logged train iteration of their epoch")
            if unkeyed:
                run.notes.append(f"{unkeyed} validation row(s) keep their epoch as step (no train rows to place "
                                 "them on the iteration axis)")
        if renamed:
            run.notes.append(f"validation keys also used by train rows renamed: {name_list(sorted(renamed))}")
        if kinds["test"]:
            where = f"the last training iteration ({last_train})" if last_train is not None else \
                "step 0 (no training in this experiment)"
            run.notes.append(f"test results (no step) kept with a 'test/' prefix at {where}")
        if missing_steps:
            run.warnings.append(ReadWarning(self.first_file, f"{missing_steps} record(s) without a step; skipped",
                                            count=missing_steps))
        if self.skipped:
            run.notes.append(f"non-numeric values skipped under: {name_list(sorted(self.skipped))}")


def _is_training(record: dict) -> bool:
    """Whether a scalars record is a training one: the loop's counter, or a learning rate or loss in it."""
    if "iter" in record or "epoch" in record:
        return True
    return any(key == "lr" or key.endswith((".lr", "_lr")) or "loss" in key and not key.startswith(("val", "test"))
               for key in record)


def is_scalars_record(record: dict) -> bool:
    """Whether a JSON record is MMEngine's, by its keys alone: a whole-number ``step``, and the timer's
    ``data_time`` and ``time`` (in every train and validation record) or a train record's ``iter`` with a
    learning rate or a loss; no key of the other JSON-lines formats."""
    if as_step(record.get("step")) is None or _OTHER_FORMATS & set(record):
        return False
    if is_number(record.get("data_time")) and is_number(record.get("time")):
        return True
    return as_step(record.get("iter")) is not None and _is_training(record)


def _is_renamed(path: Path) -> bool:
    """A scalars file out of its ``vis_data/`` under a name of its own (``scalars_r50.json``), neither
    ``scalars.json`` nor a launch's stamp."""
    return (path.suffix.lower() == ".json" and path.parent.name != "vis_data" and path.name != SCALARS_NAME
            and not is_timestamp_name(path.stem))


def _holds_scalars(path: Path) -> bool:
    """Whether a JSON file out of ``vis_data/`` holds scalars records (JSON lines with a ``step``), not a test
    launch's one metrics object."""
    record = leading_json_object(path, read_head(path))
    return record is not None and "step" in record


def _short(path: Path | None) -> str:
    if path is None:
        return ""
    parts = path.parts[-3:] if path.parent.name == "vis_data" else path.parts[-2:]
    return "/".join(parts)


def _same_bytes(a: Path, b: Path | None) -> bool:
    if b is None:
        return False
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                block_a, block_b = fa.read(1 << 20), fb.read(1 << 20)
                if block_a != block_b:
                    return False
                if not block_a:
                    return True
    except OSError:
        return False


def _read_lines(path: Path, run: RunData) -> Iterable[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            yield from handle
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))


def _iters_per_epoch(path: Path) -> int | None:
    """``N`` of the first ``Epoch(train) [e][i/N]`` line of a text log (bounded read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle):
                if number > 200_000:
                    return None
                match = _LOG_LINE.search(line)
                if match and match.group(1) == "Epoch" and match.group(2) == "train":
                    brackets = _BRACKET.findall(match.group(3))
                    if len(brackets) == 2 and brackets[1][1]:
                        return int(brackets[1][1])
    except OSError:
        return None
    return None


def _derive_per_epoch(rows: list[tuple[float | None, int | None]]) -> int | None:
    """Iterations per epoch from train rows: the usual gap between first logged iterations of consecutive epochs."""
    first: dict[int, int] = {}
    for epoch, step in rows:
        if epoch is not None and step is not None:
            first[int(epoch)] = min(first.get(int(epoch), step), step)
    gaps = Counter(first[e + 1] - first[e] for e in first if e + 1 in first)
    if not gaps:
        return None
    candidate = gaps.most_common(1)[0][0]
    ok = candidate > 0 and all((e - 1) * candidate < s <= e * candidate for e, s in
                               ((int(e), s) for e, s in rows if e is not None and s is not None))
    return candidate if ok else None


def parse_text_log(lines: Iterable[str]) -> tuple[list[tuple[str, int | None, float | None, dict[str, float]]], bool]:
    """Metric lines of an MMEngine text log → (kind, step, epoch, values) rows, and whether the loop is epoch-based.

    Train lines become rows at their global iteration; of validation and test
    lines only the last of each pass (``[N/N]``, which carries the metrics) is kept.
    """
    rows: list[tuple[str, int | None, float | None, dict[str, float]]] = []
    epoch_based = False
    last_train: int | None = None
    for line in lines:
        match = _LOG_LINE.search(line)
        if not match:
            continue
        loop, kind, brackets_text, rest = match.groups()
        brackets = _BRACKET.findall(brackets_text)
        values = {k: float(v) for k, v in _PAIR.findall(rest) if k != "eta"}
        if not values or not brackets:
            continue
        position, total = brackets[-1]
        if kind != "train" and total and position != total:
            continue
        epoch = float(brackets[0][0]) if loop == "Epoch" and len(brackets) == 2 else None
        if kind == "train":
            if loop == "Epoch":
                epoch_based = True
                if epoch is None or not total:
                    continue
                step = (int(epoch) - 1) * int(total) + int(position)
            else:
                step = int(position)
            last_train = step
            rows.append(("train", step, epoch, values))
        elif kind == "val":
            # epoch loops key validation by epoch; iteration loops validate at the last train iteration
            step = int(epoch) if epoch is not None else last_train
            rows.append(("val", step, epoch, values))
        else:
            rows.append(("test", None, None, values))
    return rows, epoch_based

