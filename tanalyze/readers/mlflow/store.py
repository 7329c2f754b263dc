"""MLflow local tracking stores, read without mlflow: the file store (``mlruns/``) and the SQLite backend.

File store layout::

    mlruns/<experiment_id>/meta.yaml                       experiment: name
    mlruns/<experiment_id>/<run_id>/meta.yaml              run: run_name (older: name), status, start/end time
    mlruns/<experiment_id>/<run_id>/metrics/<key>          lines 'timestamp value step' (old: 'timestamp value')
    mlruns/<experiment_id>/<run_id>/params/<key>           one value (hparams)
    mlruns/<experiment_id>/<run_id>/tags/<key>             mlflow.runName and user tags

A key with ``/`` (``train/loss``) is a sub-folder. The SQLite backend
(``mlflow.db``) holds the same in tables ``experiments``, ``runs``, ``metrics``
(``key, value, timestamp, step, run_uuid, is_nan``), ``params`` and ``tags``.

Decisions:

* **one tanalyze run per MLflow run**, named by its run name (``mlflow.runName``,
  else the ``run_name``/``name`` of its meta, else its id), prefixed with the
  experiment name when the store holds several experiments; a repeated name gets
  the first 8 characters of the run id. Discovery hands over the whole store (its
  ``mlruns`` folder, or the database file), which ``read`` splits into runs.
* step = MLflow's step, wall time = its timestamp (ms → s). A metric logged with no
  step (every value at step 0) is spread over steps 0, 1, 2 … in timestamp order, as
  MLflow's own charts do; other values logged twice at one step keep the last
  write. SQLite stores NaN as 0 with ``is_nan`` and ±inf as ±1.797…e308: both are
  turned back.
* params go to hparams as written (numbers as numbers); user tags as ``tag.<key>``;
  the run's status and times, and its deleted state, go to the notes. Runs in the
  ``.trash`` folder are not read (discovery skips hidden folders).
* artifacts (``<run_id>/artifacts/``) are not this reader's: a TensorBoard log saved
  there is read by the TensorBoard reader as a run of its own.
"""

from __future__ import annotations

import datetime
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
from tanalyze.schema import keep_last_write, scalar_frame

__all__ = ["MLflowReader"]

_RUN_PARTS = ("metrics", "params", "tags")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_METRIC_LINE = re.compile(rb"^-?\d+ \S+( -?\d+)?\s*$")
_MAX_DEPTH = 12
_DOUBLE_MAX = 1.7976931348623157e308
_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
_MAX_VALUE_BYTES = 1 << 20


@lru_cache(maxsize=4096)
def _meta_head(folder: str) -> bytes:
    try:
        with open(Path(folder) / "meta.yaml", "rb") as handle:
            return handle.read(4096)
    except OSError:
        return b""


def _is_run_meta(head: bytes) -> bool:
    return (b"run_id:" in head or b"run_uuid:" in head) and b"experiment_id:" in head


def _is_experiment_meta(head: bytes) -> bool:
    return b"experiment_id:" in head and b"artifact_location:" in head and not _is_run_meta(head)


def _run_folder(path: Path) -> tuple[Path, str] | None:
    """The run folder of a file under ``<run>/metrics|params|tags/…``, and which of the three; None otherwise."""
    parents = path.parents
    for depth in range(min(_MAX_DEPTH, len(parents) - 1)):
        part = parents[depth]
        if part.name in _RUN_PARTS and _is_run_meta(_meta_head(str(part.parent))):
            return part.parent, part.name
    return None


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
    description = "MLflow local tracking: mlruns/<exp>/<run>/{metrics,params,tags,meta.yaml} and mlflow.db (SQLite)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if head.startswith(_SQLITE_MAGIC):
            return _is_mlflow_db(path)
        if path.name == "meta.yaml":
            return _is_run_meta(head) or _is_experiment_meta(head)
        found = _run_folder(path)
        if found is None:
            return False
        if found[1] == "metrics":
            first = head.split(b"\n", 1)[0]
            return not head.strip() or bool(_METRIC_LINE.match(first))
        return True

    def run_directory(self, path: Path) -> Path:
        """The store: the ``mlruns`` folder (every experiment, every run), or the database's folder."""
        if path.name == "meta.yaml" and _is_experiment_meta(_meta_head(str(path.parent))):
            return path.parent.parent
        if path.name == "meta.yaml":
            return path.parent.parent.parent
        found = _run_folder(path)
        return found[0].parent.parent if found else path.parent

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
            runs.extend(_read_database(database))
        store = [f for f in files if f not in databases]
        if store:
            runs.extend(_read_file_store(store, problems))
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
    metrics: dict[str, list[tuple[int, float, int]]] = field(default_factory=dict)  # key → (timestamp ms, value, step)
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    status: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    deleted: bool = False
    warnings: list[ReadWarning] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def _read_value(path: Path, run: _Run) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_VALUE_BYTES + 1)
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return None
    if len(data) > _MAX_VALUE_BYTES:
        run.warnings.append(ReadWarning(str(path), f"longer than {_MAX_VALUE_BYTES:,} bytes; cut"))
    return data[:_MAX_VALUE_BYTES].decode("utf-8", errors="replace")


def _parse_metric(path: Path, run: _Run) -> list[tuple[int, float, int]] | None:
    text = _read_value(path, run)
    if text is None:
        return None
    rows: list[tuple[int, float, int]] = []
    bad: list[int] = []
    width: int | None = None  # 3 fields ('timestamp value step'), or 2 in files of MLflow before steps
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        width = width or (len(parts) if len(parts) in (2, 3) else None)
        try:
            if len(parts) != width:
                raise ValueError(line)
            rows.append((int(parts[0]), float(parts[1]), int(parts[2]) if len(parts) == 3 else 0))
        except ValueError:
            bad.append(number)
    if bad:
        cut = " (the last line is cut off: file truncated?)" if bad[-1] == len(text.splitlines()) and \
            not text.endswith("\n") else ""
        where = ", ".join(map(str, bad[:5])) + (" …" if len(bad) > 5 else "")
        run.warnings.append(ReadWarning(str(path), f"{len(bad)} line(s) are not 'timestamp value step'; "
                                        f"skipped{cut}", f"line {where}", len(bad)))
    return rows


def _read_file_store(files: list[Path], problems: list[ReadWarning]) -> list[_Run]:
    by_run: dict[Path, list[tuple[Path, str]]] = defaultdict(list)
    experiments: dict[Path, str] = {}
    for file in files:
        found = _run_folder(file)
        if found is not None:
            by_run[found[0]].append((file, found[1]))
        elif file.name == "meta.yaml" and _is_run_meta(_meta_head(str(file.parent))):
            by_run.setdefault(file.parent, [])
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
        for file, kind in sorted(by_run[folder]):
            key = file.relative_to(folder / kind).as_posix()
            if kind == "metrics":
                rows = _parse_metric(file, run)
                if rows is not None:
                    run.metrics[key] = rows
            else:
                value = _read_value(file, run)
                if value is not None:
                    (run.params if kind == "params" else run.tags)[key] = value
        runs.append(run)
    return runs


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _read_database(path: Path) -> list[_Run]:
    try:
        db = _connect(path)
    except sqlite3.Error as exc:
        raise FormatError(path, f"cannot be opened as SQLite: {exc}") from exc
    try:
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
            run.metrics.setdefault(str(key), []).append((int(timestamp or 0), float(value), int(step or 0)))
        for table, target in (("params", "params"), ("tags", "tags")):
            for key, value, run_id in db.execute(f"SELECT key, value, run_uuid FROM {table}"):  # noqa: S608
                if str(run_id) in runs:
                    getattr(runs[str(run_id)], target)[str(key)] = "" if value is None else str(value)
    except sqlite3.Error as exc:
        raise FormatError(path, f"not a readable MLflow database: {exc}") from exc
    finally:
        db.close()
    return list(runs.values())


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


def _finish(runs: list[_Run], problems: list[ReadWarning]) -> list[RunData]:
    runs = sorted(runs, key=lambda r: (r.start_ms is None, r.start_ms or 0, r.run_id))  # in the order they ran
    out = []
    for run, name in zip(runs, _names(runs), strict=True):
        data = RunData(name=name.replace("\n", " "))
        data.warnings.extend(problems + run.warnings)
        frames, spread, relogged = [], [], 0
        for key, rows in sorted(run.metrics.items()):
            if not rows:
                continue
            rows = sorted(rows, key=lambda r: r[0])  # timestamp order: the order they were logged in
            steps = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
            if len(rows) > 1 and (steps == 0).all():
                steps = np.arange(len(rows), dtype=np.int64)
                spread.append(key)
            frame = scalar_frame(run="", tag=[key] * len(rows), step=steps, value=[r[1] for r in rows],
                                 wall_time=np.asarray([r[0] / 1000 for r in rows], dtype=np.float64))
            frame = frame.sort_values("step", kind="stable")
            kept, dropped = keep_last_write(frame, keys=("tag", "step"))
            relogged += dropped
            frames.append(kept)
        data.scalars = pd.concat(frames, ignore_index=True) if frames else data.scalars
        data.hparams = {**{k: config_value(v) for k, v in sorted(run.params.items())},
                        **{f"tag.{k}": v for k, v in sorted(run.tags.items()) if not k.startswith("mlflow.")}}
        where = "database" if Path(run.source).is_file() else "folder"
        state = f", status {run.status}" if run.status else ""
        data.notes.append(f"MLflow run {run.run_id} of experiment {run.experiment!r}{state}, "
                          f"{_stamp(run.start_ms)} → {_stamp(run.end_ms)} ({where} {run.source})")
        if run.deleted:
            data.notes.append("this run is marked deleted in MLflow (lifecycle_stage: deleted)")
        if spread:
            data.notes.append(f"logged without a step (all at step 0), spread over steps 0, 1, 2 … in time order: "
                              f"{name_list(spread)}")
        if relogged:
            data.notes.append(f"{relogged} value(s) logged again at the same step replaced by the later write")
        if data.scalars.empty and not data.warnings:
            data.warnings.append(ReadWarning(run.source, "this MLflow run has no metric values"))
        out.append(data)
    return out
