"""MLflow local tracking stores, read without mlflow: the file store (``mlruns/``) and the SQLite backend.

File store layout::

    mlruns/<experiment_id>/meta.yaml                       experiment: name
    mlruns/<experiment_id>/<run_id>/meta.yaml              run: run_name (older: name), status, start/end time
    mlruns/<experiment_id>/<run_id>/metrics/<key>          lines 'timestamp value step' (old: 'timestamp value')
    mlruns/<experiment_id>/<run_id>/params/<key>           one value (hparams)
    mlruns/<experiment_id>/<run_id>/tags/<key>             mlflow.runName and user tags
    mlruns/<experiment_id>/<run_id>/outputs/<model_id>/meta.yaml   MLflow 3: a model the run logged, at a step
    mlruns/<experiment_id>/models/<model_id>/meta.yaml     MLflow 3 logged model: model_id, name, source_run_id,
                                                           status (0 UNSPECIFIED, 1 PENDING, 2 READY, 3 FAILED)
    mlruns/<experiment_id>/models/<model_id>/metrics/<key> lines 'timestamp value step run_id'
    mlruns/<experiment_id>/models/<model_id>/params|tags/<key>
    mlruns/models/<registered name>/version-<n>/meta.yaml  the model registry (not read; no experiment)

A key with ``/`` (``train/loss``) is a sub-folder. The SQLite backend
(``mlflow.db``) holds the same in tables ``experiments``, ``runs``, ``metrics``
(``key, value, timestamp, step, run_uuid, is_nan``), ``params`` and ``tags``;
MLflow 3's logged models in ``logged_models``, ``logged_model_metrics`` (where a
NaN is kept as 0.0), ``logged_model_params`` and ``logged_model_tags``, a run's
models in ``inputs`` (``RUN_OUTPUT`` → ``MODEL_OUTPUT``).

Decisions:

* **one tanalyze run per MLflow run**, named by its run name (``mlflow.runName``,
  else the ``run_name``/``name`` of its meta, else its id), prefixed with the
  experiment name when the store holds several experiments; a repeated name gets
  the first 8 characters of the run id. Discovery hands over the whole store (its
  ``mlruns`` folder, or the database file), which ``read`` splits into runs.
* step = MLflow's step, wall time = its timestamp (ms → s). A metric logged with no
  step (every value at step 0) is spread over steps 0, 1, 2 … in timestamp order, as
  MLflow's own charts do; other values logged twice at one step keep the last
  write. A record repeated whole (the same time, value and step: MLflow 3 logs a
  run's metrics again when it logs a model at their step, and the file store appends
  them a second time) is one point, said in a note. SQLite stores NaN as 0 with
  ``is_nan`` and ±inf as ±1.797…e308: both are turned back.
* an MLflow 3 logged model is not a run: what it says goes to the run that logged
  it (its ``source_run_id``): its name, id, status and registered versions in a note
  and in ``hparams["_mlflow"]["models"]``, its params that the run lacks, its files
  among the run's. Its metric values are copies of its runs' (each record names its
  run), counted in the note; one that its run's own metrics lack (a store copied in
  part) is read into that run, said in a note; one whose run is not in the store is
  warned about, naming the file.
* a metric file is read whole, whatever its size (a long run writes tens of MB), in
  blocks of whole lines: a block of plain ``timestamp value step`` lines is parsed at
  once by pandas, any other line by line, both giving what ``int()``/``float()`` give;
  a line that is not one (junk, a cut last line, bytes that are not UTF-8) is skipped
  and counted in a warning naming the file.
* params go to hparams as written (numbers as numbers); user tags as ``tag.<key>``;
  the run's status and times, and its deleted state, go to the notes. Runs in the
  ``.trash`` folder are not read (discovery skips hidden folders).
* artifacts (``<run_id>/artifacts/``) are not this reader's: a TensorBoard log saved
  there is read by the TensorBoard reader as a run of its own.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import re
import sqlite3
from collections import Counter, defaultdict
from contextlib import closing
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import load_config, name_list
from tanalyze.readers.values import config_value
from tanalyze.schema import scalar_frame
from tanalyze.text import distinct, writable

__all__ = ["MLflowReader"]

_RUN_PARTS = ("metrics", "params", "tags", "outputs")  # a logged model's folder has the first three
_SQLITE_MAGIC = b"SQLite format 3\x00"
_METRIC_LINE = re.compile(rb"^-?\d+ \S+( -?\d+)?\s*$")
_MODEL_METRIC_LINE = re.compile(rb"^-?\d+ \S+ -?\d+ \S+( \S+ \S+)?\s*$")  # … run_id [dataset_name dataset_digest]
_MAX_DEPTH = 12
_DOUBLE_MAX = 1.7976931348623157e308
_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
_MODEL_STATUS = {0: "UNSPECIFIED", 1: "PENDING", 2: "READY", 3: "FAILED"}  # a logged model's (LoggedModelStatus)
#: keys of a meta.yaml, at a line's start: a logged model's has ``source_run_id:``, which is no run's ``run_id:``
_RUN_KEY = re.compile(rb"(?:^|\s)(?:run_id|run_uuid):", re.MULTILINE)
_EXPERIMENT_KEY = re.compile(rb"(?:^|\s)experiment_id:", re.MULTILINE)
_MODEL_KEY = re.compile(rb"(?:^|\s)model_id:", re.MULTILINE)
_MAX_VALUE_BYTES = 1 << 20  # a param or tag value
_Series = tuple[np.ndarray, np.ndarray, np.ndarray]  # timestamps (ms, int64), values (float64), steps (int64)


@lru_cache(maxsize=4096)
def _meta_head(folder: str) -> bytes:
    try:
        with open(Path(folder) / "meta.yaml", "rb") as handle:
            return handle.read(4096)
    except OSError:
        return b""


def _is_run_meta(head: bytes) -> bool:
    return bool(_RUN_KEY.search(head) and _EXPERIMENT_KEY.search(head))


def _is_model_meta(head: bytes) -> bool:
    """An MLflow 3 logged model's meta.yaml (a registry version's has no experiment_id)."""
    return bool(_MODEL_KEY.search(head) and _EXPERIMENT_KEY.search(head)) and not _RUN_KEY.search(head)


def _is_experiment_meta(head: bytes) -> bool:
    return (b"experiment_id:" in head and b"artifact_location:" in head and not _is_run_meta(head)
            and not _is_model_meta(head))


def _record_folder(path: Path) -> tuple[Path, str, bool] | None:
    """The run or logged-model folder of a file under ``<folder>/metrics|params|tags/…`` (a run's also
    ``outputs/…``), which of those parts, and whether the folder is a logged model's; None otherwise."""
    parents = path.parents
    for depth in range(min(_MAX_DEPTH, len(parents) - 1)):
        part = parents[depth]
        if part.name in _RUN_PARTS:
            head = _meta_head(str(part.parent))
            if _is_run_meta(head):
                return part.parent, part.name, False
            if part.name != "outputs" and _is_model_meta(head):
                return part.parent, part.name, True
    return None


def _store_of(folder: Path, is_model: bool) -> Path:
    """The store of a run folder (``<store>/<experiment>/<run>``) or a logged model's
    (``<store>/<experiment>/models/<model_id>``)."""
    if is_model and folder.parent.name == "models" and len(folder.parents) > 2:
        return folder.parents[2]
    return folder.parent.parent


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (the path is quoted for the URI: '?' or '#' in a folder name stay literal)."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _is_mlflow_db(path: Path) -> bool:
    try:
        with closing(_connect(path)) as db:  # a connection's own 'with' commits, it does not close
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"runs", "metrics", "experiments"} <= tables:
                return False
            columns = {row[1] for row in db.execute("PRAGMA table_info(metrics)")}
    except sqlite3.Error:
        return False
    return {"key", "value", "timestamp", "step", "run_uuid"} <= columns


class MLflowReader(Reader):
    """MLflow file store (``mlruns/``) and SQLite store (``mlflow.db``): one run per MLflow run."""

    name = "mlflow"
    # 2: the run's status in hparams["_mlflow"], for its run status
    # 3: MLflow 3 logged models go to their run, not read as runs of their own; records repeated whole are one point
    cache_version = 3
    description = "MLflow local tracking: mlruns/<exp>/<run>/{metrics,params,tags,meta.yaml} and mlflow.db (SQLite)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if head.startswith(_SQLITE_MAGIC):
            return _is_mlflow_db(path)
        found = _record_folder(path)
        if found is not None:
            _, part, is_model = found
            if part == "outputs":
                return path.name == "meta.yaml" and b"destination_id:" in head
            if part == "metrics":
                first = head.split(b"\n", 1)[0]
                return not head.strip() or bool((_MODEL_METRIC_LINE if is_model else _METRIC_LINE).match(first))
            return True
        if path.name == "meta.yaml":
            return _is_run_meta(head) or _is_model_meta(head) or _is_experiment_meta(head)
        return False

    def run_directory(self, path: Path) -> Path:
        """The store: the ``mlruns`` folder (every experiment, run and logged model), or the database's folder."""
        found = _record_folder(path)
        if found is not None:
            return _store_of(found[0], found[2])
        if path.name == "meta.yaml":
            head = _meta_head(str(path.parent))
            return path.parent.parent if _is_experiment_meta(head) else _store_of(path.parent, _is_model_meta(head))
        return path.parent

    def group(self, files: list[Path]) -> list[list[Path]]:
        databases = sorted(f for f in files if _is_sqlite(f))
        store = sorted(set(files) - set(databases))
        return ([store] if store else []) + [[db] for db in databases]

    def read(self, files: list[Path]) -> list[RunData]:
        files = sorted(files)
        databases = [f for f in files if _is_sqlite(f)]
        runs: list[_Run] = []
        problems: list[ReadWarning] = []
        for database in databases:
            found, models = _read_database(database)
            _attach_models(found, models, problems)
            runs.extend(found)
        store = [f for f in files if f not in databases]
        if store:
            found, models = _read_file_store(store, problems)
            _attach_models(found, models, problems)
            runs.extend(found)
        if not runs:
            return [RunData(warnings=problems or [ReadWarning(str(files[0]) if files else "", "no MLflow run in it")])]
        return _finish(runs, problems)


@dataclass
class _Run:
    """One MLflow run as read, before naming and building the table."""

    run_id: str
    experiment: str
    name: str | None
    source: str
    metrics: dict[str, _Series] = field(default_factory=dict)  # key → timestamps (ms), values, steps
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    status: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    deleted: bool = False
    warnings: list[ReadWarning] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    outputs: dict[str, int | None] = field(default_factory=dict)  # MLflow 3: the models it logged → at which step
    models: list[dict[str, Any]] = field(default_factory=list)  # what its logged models say, for hparams["_mlflow"]
    notes: list[str] = field(default_factory=list)


_ModelRecord = tuple[int, float, int, str]  # timestamp (ms), value, step, the run that logged it


@dataclass
class _Model:
    """An MLflow 3 logged model as read: not a run, what it holds goes to its runs (:func:`_attach_models`)."""

    model_id: str
    name: str | None
    source_run: str | None
    source: str  # its meta.yaml, or the database
    status: str | None = None
    deleted: bool = False
    nan_as_zero: bool = False  # SQLite keeps a NaN of logged_model_metrics as 0.0
    metrics: dict[str, list[_ModelRecord]] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    warnings: list[ReadWarning] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def _read_value(path: Path, run: _Run | _Model) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_VALUE_BYTES + 1)
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return None
    if len(data) > _MAX_VALUE_BYTES:
        run.warnings.append(ReadWarning(str(path), f"longer than {_MAX_VALUE_BYTES:,} bytes; cut"))
    return data[:_MAX_VALUE_BYTES].decode("utf-8", errors="replace")


def _parse_metric(path: Path, run: _Run) -> _Series | None:
    """Every line of a metric file, read in blocks of whole lines (no size cap): a clean block at once
    (:func:`_parse_clean`), any other, and a small one, line by line (:func:`_parse_lines`), the same rows
    either way."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, read block by block)
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return None
    state = _LineState()
    parts: list[_Series] = []
    try:
        with handle:
            for block in _line_blocks(handle, state):
                parsed = _parse_clean(block, state) if len(block) >= _AT_ONCE_BYTES else None
                parts.append(parsed if parsed is not None else _parse_lines(block, state))
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
    if state.bad:
        cut = " (the last line is cut off: file truncated?)" if state.last_bad == state.lines and \
            not state.ends_with_newline else ""
        where = ", ".join(map(str, state.bad_lines)) + (" …" if state.bad > len(state.bad_lines) else "")
        run.warnings.append(ReadWarning(str(path), f"{state.bad} line(s) are not 'timestamp value step'; "
                                        f"skipped{cut}", f"line {where}", state.bad))
    return _concat_series(parts)


_BLOCK_BYTES = 64 << 20  # a metric file is read in blocks of whole lines of about this size
_AT_ONCE_BYTES = 8 << 10  # a smaller block (a short run's metric, ~200 lines) is quicker line by line than by pandas
_INT64 = (-(1 << 63), 1 << 63)
_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)
#: the bytes of a clean block: numbers in decimal (``1.5e-05``), nan, inf, infinity; anything else goes line by line
_CLEAN_BYTES = b"0123456789 \n+-.eEnaifityNAIFITY"
#: pandas' float parser is correctly rounded (as float()) from pandas 3.1 on; before, its round-trip one is
_FLOAT_OPTIONS: dict[str, Any] = (
    {} if tuple(int(p) for p in re.findall(r"\d+", pd.__version__)[:2]) >= (3, 1) else {"float_precision": "round_trip"})


@dataclass
class _LineState:
    """What the blocks of one metric file share: the field count, line numbers, bad lines."""

    width: int | None = None  # 3 fields ('timestamp value step'), or 2 in files of MLflow before steps
    lines: int = 0  # lines before the block being parsed
    bad: int = 0
    bad_lines: list[int] = field(default_factory=list)  # the first five, for the warning
    last_bad: int = 0
    ends_with_newline: bool = True

    def bad_line(self, number: int) -> None:
        self.bad += 1
        self.last_bad = number
        if len(self.bad_lines) < 5:
            self.bad_lines.append(number)


def _line_blocks(handle: Any, state: _LineState) -> Any:
    """The file in blocks that end at a line end (the last block: at the file's end)."""
    tail = b""
    while True:
        chunk = handle.read(_BLOCK_BYTES)
        if not chunk:
            if tail:
                state.ends_with_newline = tail.endswith(b"\n")
                yield tail
            return
        data = tail + chunk if tail else chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) > _BLOCK_BYTES:  # one line of more than a block: no metric line, skip to its end
            state.lines += 1
            state.bad_line(state.lines)
            tail = _skip_line(handle, state)
            continue
        if cut:
            yield data[:cut]
        tail = data[cut:]


def _skip_line(handle: Any, state: _LineState) -> bytes:
    """Read on to the end of an over-long line; the rest of the block after it."""
    while True:
        chunk = handle.read(_BLOCK_BYTES)
        if not chunk:
            state.ends_with_newline = False
            return b""
        end = chunk.find(b"\n")
        if end >= 0:
            return chunk[end + 1:]


def _digits(numbers: np.ndarray) -> np.ndarray:
    """The length of each number written in decimal (``str(n)``)."""
    magnitude = np.abs(numbers).view(np.uint64)  # abs(int64 min) wraps to itself: 2**63 as uint64
    return np.maximum(np.searchsorted(_POW10, magnitude, side="right"), 1) + (numbers < 0)


def _parse_clean(block: bytes, state: _LineState) -> _Series | None:
    """A block whose every line is ``timestamp value step`` (or ``timestamp value``) written plainly: one
    space between fields, integers in canonical decimal, values that pandas and float() read alike. The
    rows that :func:`_parse_lines` gives, parsed at once by pandas; None when a line is anything else."""
    if not block or block.translate(None, _CLEAN_BYTES):
        return None
    data = block if block.endswith(b"\n") else block + b"\n"
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    spaces = np.flatnonzero(raw == 32)
    lines = len(ends)
    width = len(spaces) // lines + 1
    if width not in (2, 3) or len(spaces) != (width - 1) * lines or (state.width or width) != width:
        return None
    starts = np.empty(lines, dtype=np.int64)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    spaces = spaces.reshape(lines, width - 1)
    first, last = spaces[:, 0], spaces[:, -1]
    # every line's spaces inside it and no field empty: exactly width fields on each line
    if not ((first > starts).all() and (ends > last + 1).all() and (width == 2 or (last > first + 1).all())):
        return None
    letters = np.flatnonzero(raw >= 65)  # nan, inf, exponents: only in values
    if len(letters):
        line = np.searchsorted(ends, letters)
        if not ((letters > first[line]).all() and (width == 2 or (letters < last[line]).all())):
            return None
    columns = {0: np.int64, 1: np.float64, 2: np.int64} if width == 3 else {0: np.int64, 1: np.float64}
    try:
        with np.errstate(all="ignore"):  # 'inf' in an integer field: pandas' cast warns before it fails
                frame = pd.read_csv(io.BytesIO(data), sep=" ", header=None, names=list(columns), dtype=columns,
                                keep_default_na=False, na_values={1: ["nan"]}, quoting=csv.QUOTE_NONE, engine="c",
                                **_FLOAT_OPTIONS)
    except (ValueError, OverflowError, TypeError):
        return None
    if len(frame) != lines:
        return None
    timestamps = frame[0].to_numpy(dtype=np.int64)
    steps = frame[2].to_numpy(dtype=np.int64) if width == 3 else np.zeros(lines, dtype=np.int64)
    # '5.0', '+5', '05' would be read as 5: an integer field must be the number written plainly
    if (_digits(timestamps) != first - starts).any() or (width == 3 and (_digits(steps) != ends - last - 1).any()):
        return None
    state.width = width
    state.lines += lines
    return timestamps, frame[1].to_numpy(dtype=np.float64), steps


def _parse_lines(block: bytes, state: _LineState) -> _Series:
    """Line by line: every line that is ``timestamp value step`` (the field count of the file's first
    line), the others counted as bad."""
    timestamps: list[int] = []
    values: list[float] = []
    steps: list[int] = []
    lines = block.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=state.lines + 1):
        parts = line.split()
        if not parts:
            continue
        state.width = state.width or (len(parts) if len(parts) in (2, 3) else None)
        try:
            if len(parts) != state.width:
                raise ValueError(line)
            timestamp, value, step = int(parts[0]), float(parts[1]), int(parts[2]) if len(parts) == 3 else 0
            if not (_INT64[0] <= timestamp < _INT64[1] and _INT64[0] <= step < _INT64[1]):
                raise ValueError(line)
        except ValueError:
            state.bad_line(number)
            continue
        timestamps.append(timestamp)
        values.append(value)
        steps.append(step)
    state.lines += len(lines)
    return (np.array(timestamps, dtype=np.int64), np.array(values, dtype=np.float64),
            np.array(steps, dtype=np.int64))


def _concat_series(parts: list[_Series]) -> _Series:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]


def _read_file_store(files: list[Path], problems: list[ReadWarning]) -> tuple[list[_Run], list[_Model]]:
    by_run: dict[Path, list[tuple[Path, str]]] = defaultdict(list)
    by_model: dict[Path, list[tuple[Path, str]]] = defaultdict(list)
    experiments: dict[Path, str] = {}
    for file in files:
        found = _record_folder(file)
        if found is not None:
            (by_model if found[2] else by_run)[found[0]].append((file, found[1]))
        elif file.name == "meta.yaml" and _is_run_meta(_meta_head(str(file.parent))):
            by_run.setdefault(file.parent, [])
        elif file.name == "meta.yaml" and _is_model_meta(_meta_head(str(file.parent))):
            by_model.setdefault(file.parent, [])
        elif file.name == "meta.yaml":
            meta, warning = load_config(file)
            if warning:
                problems.append(warning)
            experiments[file.parent] = str((meta or {}).get("name") or file.parent.name)
    runs = []
    for folder in sorted(by_run):
        meta, warning = load_config(folder / "meta.yaml")
        run = _Run(run_id=str((meta or {}).get("run_id") or (meta or {}).get("run_uuid") or folder.name),
                   experiment=experiments.get(folder.parent, folder.parent.name),
                   name=str((meta or {}).get("run_name") or (meta or {}).get("name") or "") or None,
                   source=str(folder))
        if warning:
            run.warnings.append(warning)
        meta = meta or {}
        run.status = _STATUS.get(meta.get("status"), str(meta["status"])) if meta.get("status") is not None else None
        run.start_ms, run.end_ms = _as_int(meta.get("start_time")), _as_int(meta.get("end_time"))
        run.deleted = meta.get("lifecycle_stage") == "deleted"
        run.files = [folder.parent / "meta.yaml", folder / "meta.yaml", *(file for file, _ in sorted(by_run[folder]))]
        for file, kind in sorted(by_run[folder]):
            key = file.relative_to(folder / kind).as_posix()
            if kind == "metrics":
                rows = _parse_metric(file, run)
                if rows is not None:
                    run.metrics[key] = rows
            elif kind == "outputs":  # <run>/outputs/<model_id>/meta.yaml: a model the run logged
                output, warning = load_config(file)
                if warning:
                    run.warnings.append(warning)
                output = output or {}
                run.outputs[str(output.get("destination_id") or file.parent.name)] = _as_int(output.get("step"))
            else:
                value = _read_value(file, run)
                if value is not None:
                    (run.params if kind == "params" else run.tags)[key] = value
        runs.append(run)
    return runs, [_read_model_folder(folder, by_model[folder]) for folder in sorted(by_model)]


def _read_model_folder(folder: Path, parts: list[tuple[Path, str]]) -> _Model:
    """An MLflow 3 logged model's folder (``<experiment>/models/<model_id>``)."""
    meta, warning = load_config(folder / "meta.yaml")
    meta = meta or {}
    model = _Model(model_id=str(meta.get("model_id") or folder.name), name=str(meta.get("name") or "") or None,
                   source_run=str(meta.get("source_run_id") or "") or None, source=str(folder / "meta.yaml"),
                   status=_model_status(meta.get("status")), deleted=meta.get("lifecycle_stage") == "deleted")
    if warning:
        model.warnings.append(warning)
    model.files = [folder / "meta.yaml", *(file for file, _ in sorted(parts))]
    for file, kind in sorted(parts):
        key = file.relative_to(folder / kind).as_posix()
        if kind == "metrics":
            model.metrics[key] = _parse_model_metric(file, model)
        else:
            value = _read_value(file, model)
            if value is not None:
                (model.params if kind == "params" else model.tags)[key] = value
    return model


def _model_status(status: Any) -> str | None:
    return None if status is None else _MODEL_STATUS.get(_as_int(status), str(status))


def _parse_model_metric(path: Path, model: _Model) -> list[_ModelRecord]:
    """A logged model's metric file, line by line: ``timestamp value step run_id`` (and ``dataset_name
    dataset_digest`` after, for a metric logged with a dataset); any other line is skipped and counted in a
    warning naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        model.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return []
    records: list[_ModelRecord] = []
    bad: list[int] = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) not in (4, 6):
                raise ValueError(line)
            timestamp, value, step = int(parts[0]), float(parts[1]), int(parts[2])
            if not (_INT64[0] <= timestamp < _INT64[1] and _INT64[0] <= step < _INT64[1]):
                raise ValueError(line)
        except ValueError:
            bad.append(number)
            continue
        records.append((timestamp, value, step, parts[3]))
    if bad:
        where = ", ".join(map(str, bad[:5])) + (" …" if len(bad) > 5 else "")
        model.warnings.append(ReadWarning(str(path), f"{len(bad)} line(s) are not 'timestamp value step run_id'; "
                                          "skipped", f"line {where}", len(bad)))
    return records


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _read_database(path: Path) -> tuple[list[_Run], list[_Model]]:
    try:
        db = _connect(path)
    except sqlite3.Error as exc:
        raise FormatError(path, f"cannot be opened as SQLite: {exc}") from exc
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        experiments = dict(db.execute("SELECT experiment_id, name FROM experiments"))
        runs: dict[str, _Run] = {}
        for run_id, name, status, start, end, experiment, stage in db.execute(
            "SELECT run_uuid, name, status, start_time, end_time, experiment_id, lifecycle_stage FROM runs"
        ):
            run = _Run(run_id=str(run_id), experiment=str(experiments.get(experiment, experiment)),
                       name=name or None, source=str(path))
            run.status, run.start_ms, run.end_ms = status, _as_int(start), _as_int(end)
            run.deleted = stage == "deleted"
            runs[run.run_id] = run
        rows: dict[tuple[str, str], list[tuple[int, float, int]]] = {}
        nan_column = "is_nan" if "is_nan" in {row[1] for row in db.execute("PRAGMA table_info(metrics)")} else "0"
        for key, value, timestamp, step, run_id, is_nan in db.execute(
            f"SELECT key, value, timestamp, step, run_uuid, {nan_column} FROM metrics ORDER BY rowid"
        ):
            run = runs.get(str(run_id))
            if run is None:
                continue
            if is_nan:
                value = math.nan
            elif abs(value) == _DOUBLE_MAX:
                value = math.copysign(math.inf, value)
            rows.setdefault((run.run_id, str(key)), []).append((int(timestamp or 0), float(value), int(step or 0)))
        for (run_id, key), points in rows.items():
            runs[run_id].metrics[key] = (np.array([p[0] for p in points], dtype=np.int64),
                                         np.array([p[1] for p in points], dtype=np.float64),
                                         np.array([p[2] for p in points], dtype=np.int64))
        for table, target in (("params", "params"), ("tags", "tags")):
            for key, value, run_id in db.execute(f"SELECT key, value, run_uuid FROM {table}"):  # noqa: S608
                if str(run_id) in runs:
                    getattr(runs[str(run_id)], target)[str(key)] = "" if value is None else str(value)
        if "inputs" in tables and "step" in {row[1] for row in db.execute("PRAGMA table_info(inputs)")}:
            for run_id, model_id, step in db.execute(
                "SELECT source_id, destination_id, step FROM inputs "
                "WHERE source_type = 'RUN_OUTPUT' AND destination_type = 'MODEL_OUTPUT'"
            ):
                if str(run_id) in runs:
                    runs[str(run_id)].outputs[str(model_id)] = _as_int(step)
        models = _database_models(db, path, tables)
    except sqlite3.Error as exc:
        raise FormatError(path, f"not a readable MLflow database: {exc}") from exc
    finally:
        db.close()
    return list(runs.values()), models


def _database_models(db: sqlite3.Connection, path: Path, tables: set[str]) -> list[_Model]:
    """MLflow 3's logged models in a database: ``logged_models`` and its metrics, params and tags."""
    if "logged_models" not in tables:
        return []
    models: dict[str, _Model] = {}
    for model_id, name, status, source_run, stage in db.execute(
        "SELECT model_id, name, status, source_run_id, lifecycle_stage FROM logged_models"
    ):
        models[str(model_id)] = _Model(model_id=str(model_id), name=name or None, source_run=source_run or None,
                                       source=str(path), status=_model_status(status), deleted=stage == "deleted",
                                       nan_as_zero=True)
    if "logged_model_metrics" in tables:
        for model_id, key, timestamp, step, value, run_id in db.execute(
            "SELECT model_id, metric_name, metric_timestamp_ms, metric_step, metric_value, run_id "
            "FROM logged_model_metrics ORDER BY rowid"
        ):
            model = models.get(str(model_id))
            if model is None:
                continue
            if value is None:
                value = math.nan
            elif abs(value) == _DOUBLE_MAX:
                value = math.copysign(math.inf, value)
            model.metrics.setdefault(str(key), []).append((int(timestamp or 0), float(value), int(step or 0),
                                                           str(run_id)))
    for table, target in (("logged_model_params", "params"), ("logged_model_tags", "tags")):
        if table not in tables:
            continue
        column = "param" if target == "params" else "tag"
        for model_id, key, value in db.execute(
            f"SELECT model_id, {column}_key, {column}_value FROM {table}"  # noqa: S608
        ):
            if str(model_id) in models:
                getattr(models[str(model_id)], target)[str(key)] = "" if value is None else str(value)
    return list(models.values())


def _attach_models(runs: list[_Run], models: list[_Model], problems: list[ReadWarning]) -> None:
    """What each MLflow 3 logged model holds, given to the runs of the same store (a logged model is not a run).

    Its metric values are copies of its runs' (MLflow writes each to the run that logged it too, named in the
    record): counted in its source run's note. A value its run's own metrics lack (a store copied in part) is
    read into that run, said in a note there; one of a run not in the store is warned about, as is a model whose
    source run is not in it."""
    by_id = {run.run_id: run for run in runs}
    for model in sorted(models, key=lambda m: m.model_id):
        label = f"MLflow 3 logged model {model.name or '?'!r} ({model.model_id})"
        home = by_id.get(model.source_run or "")
        copies, lost = 0, Counter[str]()
        added: dict[str, list[str]] = defaultdict(list)  # run id → the keys read into it from the model
        added_count = Counter[str]()
        for key, records in sorted(model.metrics.items()):
            by_run: dict[str, list[_ModelRecord]] = defaultdict(list)
            for record in records:
                by_run[record[3]].append(record)
            for run_id, group in by_run.items():
                run = by_id.get(run_id)
                if run is None:
                    lost[run_id] += len(group)
                    continue
                missing = _not_in(run.metrics.get(key), group, model.nan_as_zero)
                copies += len(group) - len(missing)
                if missing:
                    new = (np.array([r[0] for r in missing], dtype=np.int64),
                           np.array([r[1] for r in missing], dtype=np.float64),
                           np.array([r[2] for r in missing], dtype=np.int64))
                    old = run.metrics.get(key)
                    run.metrics[key] = _concat_series([old, new] if old is not None else [new])
                    added[run_id].append(key)
                    added_count[run_id] += len(missing)
        for run_id, keys in added.items():
            by_id[run_id].notes.append(f"{added_count[run_id]} metric value(s) read from {label}, not in this "
                                       f"run's own metric records: {name_list(keys)}")
        values = sum(len(records) for records in model.metrics.values())
        if home is None:
            unread = [f"{sum(lost.values())} metric value(s)"] if lost else []
            unread += [f"{len(model.params)} param(s)"] if model.params else []
            problems.extend(model.warnings)
            if unread:
                whose = f"run {model.source_run}" if model.source_run else "no run"
                problems.append(ReadWarning(model.source, f"{label} is of {whose}, not in this store: "
                                            f"{' and '.join(unread)} not read", count=sum(lost.values()) or 1))
            continue
        own = {k: v for k, v in sorted(model.params.items()) if home.params.get(k) != v}
        registered = _registered(model.tags.get("mlflow.modelVersions"))
        home.models.append({"model_id": model.model_id, "name": model.name, "status": model.status,
                            "step": home.outputs.get(model.model_id), "registered": registered, "params": own,
                            "record": model.source})
        home.files.extend(model.files)
        home.warnings.extend(model.warnings)
        if lost:
            home.warnings.append(ReadWarning(model.source, f"{label}: {sum(lost.values())} metric value(s) of "
                                             f"run(s) not in this store ({', '.join(sorted(lost))}); not read",
                                             count=sum(lost.values())))
        about = [f"status {model.status}"] if model.status else []
        about += ["deleted in MLflow"] if model.deleted else []
        versions = [f"{version['name']!r} version {version['version']}" for version in registered]
        about += [f"registered as {', '.join(versions)}"] if versions else []
        said = [f"its {copies} metric value(s) are copies of its run's" if copies == values else
                f"{copies} of its {values} metric value(s) are copies of run records"] if values else []
        said += [f"param(s) of its own: {name_list([f'{k}={v}' for k, v in own.items()])}"] if own else []
        home.notes.append(f"{label} of this run{', ' if about else ''}{', '.join(about)}: not a run of its own"
                          f"{'; ' if said else ''}{'; '.join(said)}")
    for run in runs:
        recorded = {model["model_id"] for model in run.models}
        for model_id, step in sorted(run.outputs.items()):
            if model_id not in recorded:
                run.models.append({"model_id": model_id, "step": step})
                run.notes.append(f"MLflow 3 logged model {model_id} of this run (step {step}): its record is not "
                                 "in this store")


def _not_in(series: _Series | None, records: list[_ModelRecord], nan_as_zero: bool) -> list[_ModelRecord]:
    """The records that a run's metric lacks: none at the same time and step with the same value (NaN as NaN;
    a 0.0 of SQLite's logged_model_metrics also as the NaN it may stand for)."""
    if series is None or not len(series[0]):
        return records
    timestamps, values, steps = (column.tolist() for column in series)
    present = {(t, s, _value_key(v)) for t, v, s in zip(timestamps, values, steps, strict=True)}
    return [r for r in records if (r[0], r[2], _value_key(r[1])) not in present
            and not (nan_as_zero and r[1] == 0 and (r[0], r[2], "nan") in present)]


def _value_key(value: float) -> float | str:
    return "nan" if math.isnan(value) else value


def _registered(versions: str | None) -> list[dict[str, Any]]:
    """The registered versions of a logged model (``name``, ``version``), from its ``mlflow.modelVersions`` tag."""
    try:
        found = json.loads(versions) if versions else []
    except ValueError:
        found = []
    return [{"name": v.get("name"), "version": v.get("version")} for v in found if isinstance(v, dict)] \
        if isinstance(found, list) else []


def _stamp(ms: int | None) -> str:
    if ms is None:
        return "?"
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _names(runs: list[_Run]) -> list[str]:
    several_experiments = len({run.experiment for run in runs}) > 1
    names = []
    for run in runs:
        base = run.tags.get("mlflow.runName") or run.name or run.run_id
        names.append(f"{run.experiment}/{base}" if several_experiments else base)
    counts = Counter(names)
    return [f"{name} ({run.run_id[:8]})" if counts[name] > 1 else name for name, run in zip(names, runs, strict=True)]


def _in_step_order(timestamps: np.ndarray, values: np.ndarray, steps: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, int, int]:
    """One metric's points in step order, the last write kept at a repeated step: in timestamp order (the
    order they were logged in; ties as in the file), a record repeated whole (the same time, value and step)
    kept once, spread over 0, 1, 2 … when every step is 0, then by step. Also whether they were spread, how
    many writes were replaced, and how many repeated records were dropped."""
    if len(timestamps) > 1 and (np.diff(timestamps) < 0).any():
        order = np.argsort(timestamps, kind="stable")
        timestamps, values, steps = timestamps[order], values[order], steps[order]
    repeated = 0
    if len(timestamps) > 1 and (np.diff(timestamps) == 0).any():  # a repeat shares its time: cheap to rule out
        first = _first_records(timestamps, values, steps)
        repeated = len(first) - int(first.sum())
        if repeated:
            timestamps, values, steps = timestamps[first], values[first], steps[first]
    spread = len(steps) > 1 and not steps.any()
    if spread:
        steps = np.arange(len(steps), dtype=np.int64)
    if len(steps) > 1 and (np.diff(steps) < 0).any():
        order = np.argsort(steps, kind="stable")
        timestamps, values, steps = timestamps[order], values[order], steps[order]
    dropped = 0
    if len(steps) > 1:
        last = np.append(steps[1:] != steps[:-1], True)  # the last write at each step
        dropped = len(steps) - int(last.sum())
        if dropped:
            timestamps, values, steps = timestamps[last], values[last], steps[last]
    return timestamps, values, steps, spread, dropped, repeated


def _first_records(timestamps: np.ndarray, values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Which records are not an earlier one again: the same time, step and value (bit for bit, NaN as NaN)."""
    bits = np.where(np.isnan(values), np.nan, values).view(np.int64)
    return ~pd.DataFrame({"t": timestamps, "v": bits, "s": steps}).duplicated().to_numpy()


def _seconds(timestamps: np.ndarray) -> np.ndarray:
    """ms → s as Python's ``ms / 1000`` (exact for every int64: numpy's division is, up to 2**53)."""
    seconds = timestamps / 1000
    big = np.abs(timestamps).view(np.uint64) >= np.uint64(1 << 53)
    if big.any():
        seconds[big] = [int(ms) / 1000 for ms in timestamps[big].tolist()]
    return seconds


def _finish(runs: list[_Run], problems: list[ReadWarning]) -> list[RunData]:
    runs = sorted(runs, key=lambda r: (r.start_ms is None, r.start_ms or 0, r.run_id))  # in the order they ran
    out = []
    for run, name in zip(runs, _names(runs), strict=True):
        data = RunData(name=name.replace("\n", " "), own_files=run.files or [Path(run.source)])
        data.warnings.extend(problems + run.warnings)
        keys, parts, spread, relogged, repeated, repeated_keys = [], [], [], 0, 0, []
        for key, series in sorted(run.metrics.items()):
            if not len(series[0]):
                continue
            timestamps, values, steps, respread, dropped, repeats = _in_step_order(*series)
            if respread:
                spread.append(key)
            relogged += dropped
            if repeats:
                repeated += repeats
                repeated_keys.append(key)
            keys.append(key)
            parts.append((timestamps, values, steps))
        if parts:  # one table, the metrics in name order, each in step order
            codes = np.repeat(np.arange(len(keys), dtype=np.int32), [len(part[2]) for part in parts])
            tag = pd.Series(pd.Categorical.from_codes(codes, categories=distinct(list(map(writable, keys)))))
            timestamps, values, steps = _concat_series(parts)
            data.scalars = scalar_frame(run="", tag=tag, step=steps, value=values, wall_time=_seconds(timestamps))
        data.hparams = {**{k: config_value(v) for k, v in sorted(run.params.items())},
                        **{f"tag.{k}": v for k, v in sorted(run.tags.items()) if not k.startswith("mlflow.")}}
        if run.status:  # how the run ended, for its status (see tanalyze.runstatus)
            record = run.source if Path(run.source).is_file() else str(Path(run.source) / "meta.yaml")
            data.hparams["_mlflow"] = {"run_id": run.run_id, "status": str(run.status), "record": record,
                                       "ended": _stamp(run.end_ms) if run.end_ms else None}
        if run.models:  # MLflow 3's logged models of the run
            data.hparams.setdefault("_mlflow", {"run_id": run.run_id})["models"] = run.models
        where = "database" if Path(run.source).is_file() else "folder"
        state = f", status {run.status}" if run.status else ""
        data.notes.append(f"MLflow run {run.run_id} of experiment {run.experiment!r}{state}, "
                          f"{_stamp(run.start_ms)} → {_stamp(run.end_ms)} ({where} {run.source})")
        if run.deleted:
            data.notes.append("this run is marked deleted in MLflow (lifecycle_stage: deleted)")
        data.notes.extend(run.notes)
        if repeated:
            why = " (MLflow 3 logs a run's metrics again when it logs a model)" if run.models else ""
            data.notes.append(f"{repeated} metric record(s) repeated whole (the same time, value and step as an "
                              f"earlier one) read once{why}: {name_list(repeated_keys)}")
        if spread:
            data.notes.append(f"logged without a step (all at step 0), spread over steps 0, 1, 2 … in time order: "
                              f"{name_list(spread)}")
        if relogged:
            data.notes.append(f"{relogged} value(s) logged again at the same step replaced by the later write")
        if data.scalars.empty and not data.warnings:
            data.warnings.append(ReadWarning(run.source, "this MLflow run has no metric values"))
        out.append(data)
    return out
