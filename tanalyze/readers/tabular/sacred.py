"""Sacred's ``FileStorageObserver``: one folder per run, the metrics in one JSON document.

``FileStorageObserver(basedir)`` (or ``python train.py -F basedir``) writes::

    basedir/<run id>/run.json       experiment name, command, host, status (QUEUED, RUNNING, COMPLETED, FAILED,
                                    INTERRUPTED, TIMEOUT), start_time, stop_time, heartbeat, result, fail_trace
    basedir/<run id>/config.json    the run's configuration (with Sacred's ``seed``)
    basedir/<run id>/metrics.json   {"<name>": {"steps": [...], "timestamps": [...], "values": [...]}, ...}
    basedir/<run id>/cout.txt       the captured console output
    basedir/<run id>/info.json      ``_run.info``, when the run set any
    basedir/_sources/, _resources/  copies of the run's source files and opened resources

The run id is a number Sacred counts up (``1``, ``2`` …) unless the user gave one. ``run.json``,
``config.json`` and ``metrics.json`` are written with ``json.dump(..., sort_keys=True, indent=2)``, and
``metrics.json`` is rewritten whole at every heartbeat (every 10 s by default) and at the run's end, from
what ``_run.log_scalar(name, value, step)`` collected; the timestamps are ``datetime.utcnow().isoformat()``:
UTC, without a zone (``2026-12-07T01:20:19.699261``; no fraction when it is 0). ``json.dump`` writes NaN
and ±inf as ``NaN``, ``Infinity``, ``-Infinity``. A run that logged nothing has ``{}``; one stopped before
its first heartbeat (killed) has no ``metrics.json`` at all.

Decisions:

* **One run per run folder** (a folder whose ``run.json`` is Sacred's), named as every run is by its folder,
  with its last part ``<experiment name>/<run id>`` (``runs/tiny_regression/1``): Sacred's own way of
  naming a run, which also keeps the runs of several experiments sharing one basedir apart.
* **step = the step given to** ``log_scalar``; a metric logged without one is counted 0, 1, 2 … per metric
  by Sacred itself, which the file cannot tell apart. **wall_time** = the point's timestamp (UTC). A metric
  whose steps go back or repeat (two training loops in one run) is settled as every structured log is
  (:func:`~tanalyze.readers.tabular.common.settle_rewrites`: sessions, last write wins), the points taken
  in the order their timestamps say they were logged.
* Values that are not numbers (text, ``null``, an object Sacred pickled, such as a tensor logged without
  ``.item()``), steps that are not whole numbers and lists of unequal length are skipped and counted in a
  warning naming the file and the metric. A ``metrics.json`` that does not parse was cut while Sacred
  rewrote it: the metrics complete before the damage are read, the rest is named lost in a warning.
* hparams = ``config.json`` as written (nested dicts kept, as other readers keep a config). ``run.json``
  gives the notes (experiment, status, times, host, command, result) and ``hparams["_sacred"]``, the run's
  recorded status for :mod:`tanalyze.runstatus` (FAILED with its trace's last line → crashed). ``info.json``
  is kept as the run's text ``info.json``: it is whatever the run chose to keep, not a series.
* A run folder without ``metrics.json``, or with ``{}``, is still a run: no points, its status, config
  and times known, and a warning that says it logged no metric. ``cout.txt`` is the run's console: the
  status scan reads its tail; it is not parsed for metrics (``--format text`` reads it as a console log).
* ``_sources/`` and ``_resources/`` are no runs: their files are claimed (so not listed as unrecognised)
  and each run lists the copies its ``run.json`` names among its files.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import as_step, is_number, load_config, name_list, settle_rewrites
from tanalyze.schema import scalar_frame
from tanalyze.text import distinct, writable

__all__ = ["SacredReader", "SACRED_FILES"]

#: The files Sacred's FileStorageObserver writes into a run folder.
SACRED_FILES = frozenset({"run.json", "config.json", "metrics.json", "cout.txt", "info.json"})
#: Folders of the basedir that hold copies shared by its runs (no run of their own).
_STORE_FOLDERS = frozenset({"_sources", "_resources"})
_RUN_ENTRY = re.compile(rb'"command"\s*:.*?"experiment"\s*:\s*\{', re.DOTALL)
_METRICS_HEAD = re.compile(rb'^\s*\{\s*(?:\}\s*$|"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"(?:steps|timestamps|values)"\s*:\s*\[)')
#: Where one metric ends and the next begins in Sacred's ``indent=2`` layout (to read a cut file in part).
_METRIC_BOUNDARY = b'\n  },\n  "'
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$')
_MAX_TEXT = 64 * 1024  # of info.json kept as text
_FINAL = frozenset({"COMPLETED", "FAILED", "INTERRUPTED", "TIMEOUT"})


def _strip(head: bytes) -> bytes:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")


def is_run_entry(head: bytes) -> bool:
    """Whether a ``run.json``'s first bytes are Sacred's run entry (``command`` and ``experiment``, sorted)."""
    head = _strip(head)
    return head.startswith(b"{") and _RUN_ENTRY.search(head) is not None


@lru_cache(maxsize=4096)
def _is_run_folder(folder: str) -> bool:
    try:
        with open(Path(folder) / "run.json", "rb") as handle:
            return is_run_entry(handle.read(4096))
    except OSError:
        return False


@lru_cache(maxsize=1024)
def _is_basedir(folder: str) -> bool:
    """Whether a folder holds Sacred run folders (so its ``_sources``/``_resources`` are Sacred's)."""
    try:
        with os.scandir(folder) as entries:
            folders = [entry.path for entry in entries if entry.is_dir() and entry.name not in _STORE_FOLDERS]
    except OSError:
        return False
    return any(_is_run_folder(path) for path in folders)


class SacredReader(Reader):
    """Sacred ``FileStorageObserver`` run folders: run.json, config.json, metrics.json, cout.txt, info.json."""

    name = "sacred"
    description = "Sacred FileStorageObserver runs: <basedir>/<id>/{run,config,metrics,info}.json and cout.txt"

    def sniff(self, path: Path, head: bytes) -> bool:
        name = path.name
        if name == "run.json":
            return is_run_entry(head)
        if name == "metrics.json":
            stripped = _strip(head)
            if _METRICS_HEAD.match(stripped) is None:
                return False
            return not stripped.startswith(b"{}") or _is_run_folder(str(path.parent))
        if name in SACRED_FILES:
            return _is_run_folder(str(path.parent))
        if path.parent.name in _STORE_FOLDERS:
            return _is_basedir(str(path.parent.parent))
        return False

    def group(self, files: list[Path]) -> list[list[Path]]:
        """One run per run folder; the copies in ``_sources``/``_resources`` are no run (each run lists its own)."""
        runs = sorted(f for f in files if f.parent.name not in _STORE_FOLDERS)
        return [runs] if runs else []

    def read(self, files: list[Path]) -> list[RunData]:
        files = sorted(Path(f) for f in files)
        by_name = {f.name: f for f in files if f.name in SACRED_FILES}
        run = RunData()
        if not by_name:
            where = str(files[0]) if files else ""
            return [RunData(warnings=[ReadWarning(where, "no Sacred run file (run.json, metrics.json …) here")])]
        folder = next(iter(by_name.values())).parent
        entry = _load_json(by_name.get("run.json"), run, "run.json")
        if "run.json" not in by_name:
            run.warnings.append(ReadWarning(str(folder), "no run.json: the run's experiment, status and times "
                                            "are not known"))
        if "config.json" in by_name:
            config, warning = load_config(by_name["config.json"])
            if warning:
                run.warnings.append(warning)
            run.hparams = dict(config or {})
        metrics = by_name.get("metrics.json")
        logged = _read_metrics(metrics, run) if metrics is not None else None
        if "info.json" in by_name:
            info = _load_json(by_name["info.json"], run, "info.json")
            if info:
                run.text = {"info.json": json.dumps(info, sort_keys=True, indent=1)[:_MAX_TEXT]}
        status = _describe(entry, folder, run) if isinstance(entry, dict) else None
        if not logged:
            _say_empty(run, folder, metrics, logged, status, by_name.get("cout.txt"))
        if isinstance(entry, dict):
            run.extra_files.extend(_copies(entry, folder))
        return [run]


def _load_json(path: Path | None, run: RunData, what: str) -> Any:
    """A small JSON file (run.json, info.json), or None with a warning naming it."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff"))
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return None
    except (ValueError, RecursionError) as exc:
        run.warnings.append(ReadWarning(str(path), f"{what} is not valid JSON ({_reason(exc)}); not read"))
        return None
    if not isinstance(data, dict):
        run.warnings.append(ReadWarning(str(path), f"{what} is not a JSON object; not read"))
        return None
    return data


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at byte {exc.pos}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# --- metrics.json ----------------------------------------------------------------------------------------


@dataclass
class _Metric:
    """One metric's points as read (write order), with what was skipped."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    wall: np.ndarray
    not_numbers: dict[str, int] = field(default_factory=dict)  # kind of value → count
    bad_steps: int = 0
    unequal: str = ""
    no_time: int = 0


def _read_metrics(path: Path, run: RunData) -> int | None:
    """Read ``metrics.json`` into ``run``; the number of points (None: the file could not be read)."""
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        run.warnings.append(ReadWarning(file, f"cannot be read: {exc.strerror or exc}"))
        return None
    data = _parse(raw, file, run)
    if data is None:
        return None
    metrics: list[_Metric] = []
    not_series: list[str] = []
    for name, series in data.items():
        metric = _metric(str(name), series) if isinstance(series, dict) else None
        if metric is None:
            not_series.append(str(name))
        else:
            metrics.append(metric)
    if not_series:
        run.warnings.append(ReadWarning(file, f"not a Sacred metric ({{steps, values, timestamps}} lists), "
                                        f"skipped: {name_list(not_series)}", count=len(not_series)))
    _skipped(metrics, file, run)
    points = sum(len(m.steps) for m in metrics)
    if points:
        _table(metrics, file, run)
    return points


def _parse(raw: bytes, file: str, run: RunData) -> dict[str, Any] | None:
    """The document; a cut one read up to its last complete metric, with a warning."""
    text = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        data, lost = _salvage(text)
        if data:
            run.warnings.append(ReadWarning(file, f"not valid JSON ({_reason(exc)}): cut while Sacred rewrote it? "
                                            f"the {len(data)} metric(s) complete before the damage were read; "
                                            f"{lost} and any metric after it are lost"))
        else:
            run.warnings.append(ReadWarning(file, f"not valid JSON ({_reason(exc)}): cut while Sacred rewrote "
                                            "it? no metric could be read"))
            return None
    if not isinstance(data, dict):
        run.warnings.append(ReadWarning(file, "not a JSON object of metrics; not read"))
        return None
    return data


def _salvage(text: bytes) -> tuple[dict[str, Any] | None, str]:
    """The metrics before the last metric boundary of a damaged file (Sacred's ``indent=2`` layout) that
    parse, and the name of the first metric after them (lost)."""
    cut = text.rfind(_METRIC_BOUNDARY)
    while cut > 0:
        try:
            data = json.loads(text[:cut + 4] + b"\n}")
        except (ValueError, RecursionError):
            cut = text.rfind(_METRIC_BOUNDARY, 0, cut)
            continue
        found = re.match(rb'"((?:[^"\\]|\\.)*)"', text[cut + len(_METRIC_BOUNDARY) - 1:])
        lost = repr(found.group(1).decode("utf-8", errors="replace")) if found else "the metric cut"
        return (data, lost) if isinstance(data, dict) else (None, "")
    return None, ""


def _metric(name: str, series: dict[str, Any]) -> _Metric | None:
    steps, values, stamps = series.get("steps"), series.get("values"), series.get("timestamps")
    if not isinstance(steps, list) or not isinstance(values, list):
        return None
    unequal = ""
    n = min(len(steps), len(values))
    if len(steps) != len(values):
        unequal = f"{len(steps)} steps for {len(values)} values"
        steps, values = steps[:n], values[:n]
    step_array, bad_steps = _steps(steps)
    value_array, not_numbers = _values(values)
    stamps = stamps if isinstance(stamps, list) else []
    wall = _wall_times(stamps[:n]) if len(stamps) >= n else np.concatenate(
        [_wall_times(stamps), np.full(n - len(stamps), np.nan)])
    keep = ~np.isnan(value_array) | _nan_logged(values) if not_numbers else None
    if bad_steps:
        keep = (step_array != _NO_STEP) if keep is None else keep & (step_array != _NO_STEP)
    if keep is not None:
        step_array, value_array, wall = step_array[keep], value_array[keep], wall[keep]
    return _Metric(name, step_array, value_array, wall, not_numbers, bad_steps, unequal,
                   no_time=int(np.isnan(wall).sum()))


#: A step that is not a whole number (marked, then dropped).
_NO_STEP = np.iinfo(np.int64).min


def _steps(steps: list[Any]) -> tuple[np.ndarray, int]:
    """The steps as int64 and how many are not whole numbers (marked :data:`_NO_STEP`)."""
    if set(map(type, steps)) <= {int}:
        try:
            return np.array(steps, dtype=np.int64), 0
        except OverflowError:
            pass
    converted = [as_step(s) for s in steps]
    bad = sum(s is None for s in converted)
    return np.array([_NO_STEP if s is None else s for s in converted], dtype=np.int64), bad


def _values(values: list[Any]) -> tuple[np.ndarray, dict[str, int]]:
    """The values as float64 (NaN where a value is no number) and the kinds of the values that are not."""
    kinds = set(map(type, values))
    if kinds <= {float, int}:
        try:
            return np.array(values, dtype=np.float64), {}
        except OverflowError:  # an integer beyond float64
            pass
    out = np.empty(len(values), dtype=np.float64)
    not_numbers: dict[str, int] = {}
    for index, value in enumerate(values):
        if is_number(value):
            try:
                out[index] = float(value)
            except OverflowError:
                out[index] = np.inf if value > 0 else -np.inf
        else:
            out[index] = np.nan
            kind = _kind(value)
            not_numbers[kind] = not_numbers.get(kind, 0) + 1
    return out, not_numbers


def _nan_logged(values: list[Any]) -> np.ndarray:
    """Which values are a logged NaN (a number), as opposed to a value that is no number."""
    return np.fromiter((type(v) is float and v != v for v in values), dtype=bool, count=len(values))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "objects Sacred pickled: a tensor logged without .item()?"
    return "a list" if isinstance(value, list) else type(value).__name__


def _wall_times(stamps: list[Any]) -> np.ndarray:
    """Seconds since 1970 of Sacred's ISO timestamps (UTC without a zone; a zone, when written, is honoured);
    NaN where a stamp is missing or not a time."""
    if not stamps:
        return np.zeros(0, dtype=np.float64)
    if set(map(type, stamps)) == {str}:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # numpy only warns for a zone it would convert: done below
                micro = np.array(stamps, dtype="datetime64[us]").astype(np.int64)
        except (ValueError, DeprecationWarning, UserWarning):
            pass
        else:
            out = micro / 1e6
            out[micro == np.iinfo(np.int64).min] = np.nan  # NaT ("NaT", "")
            return out
    return np.array([_one_time(s) for s in stamps], dtype=np.float64)


def _one_time(stamp: Any) -> float:
    if not isinstance(stamp, str):
        return np.nan
    try:
        moment = datetime.datetime.fromisoformat(stamp.strip())
    except ValueError:
        return np.nan
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        return np.nan


def _skipped(metrics: list[_Metric], file: str, run: RunData) -> None:
    """One warning per kind of thing skipped, naming the metrics."""
    by_kind: dict[str, list[tuple[str, int]]] = {}
    for metric in metrics:
        for kind, count in metric.not_numbers.items():
            by_kind.setdefault(kind, []).append((metric.name, count))
    for kind, found in by_kind.items():
        total = sum(count for _, count in found)
        run.warnings.append(ReadWarning(file, f"{total} value(s) that are not numbers ({kind}) skipped, under "
                                        f"{name_list([name for name, _ in found])}", count=total))
    bad = [(m.name, m.bad_steps) for m in metrics if m.bad_steps]
    if bad:
        total = sum(count for _, count in bad)
        run.warnings.append(ReadWarning(file, f"{total} point(s) whose step is not a whole number skipped, under "
                                        f"{name_list([name for name, _ in bad])}", count=total))
    for metric in metrics:
        if metric.unequal:
            run.warnings.append(ReadWarning(file, f"metric {metric.name!r} has {metric.unequal}: the pairs "
                                            "beyond the shorter list are skipped"))
    no_time = [m.name for m in metrics if m.no_time]
    if no_time:
        total = sum(m.no_time for m in metrics)
        run.notes.append(f"{total} point(s) without a readable timestamp have no wall_time: {name_list(no_time)}")


def _table(metrics: list[_Metric], file: str, run: RunData) -> None:
    """The tidy table: metrics in name order, each in step order; settled when a metric's steps go back."""
    metrics = sorted(metrics, key=lambda m: m.name)
    names = distinct([writable(m.name) for m in metrics])
    counts = [len(m.steps) for m in metrics]
    codes = np.repeat(np.arange(len(metrics), dtype=np.int32), counts)
    steps = np.concatenate([m.steps for m in metrics])
    values = np.concatenate([m.values for m in metrics])
    wall = np.concatenate([m.wall for m in metrics])
    increasing = all(len(m.steps) < 2 or bool((np.diff(m.steps) > 0).all()) for m in metrics)
    if not increasing:  # in the order the points were logged: by time, each metric's own order kept
        clock = np.concatenate([np.fmax.accumulate(np.nan_to_num(m.wall, nan=-np.inf)) if len(m.wall) else m.wall
                                for m in metrics])
        order = np.lexsort((np.arange(len(steps)), codes, clock))
        codes, steps, values, wall = codes[order], steps[order], values[order], wall[order]
    tag = pd.Series(pd.Categorical.from_codes(codes, categories=names))
    frame = scalar_frame(run="", tag=tag, step=steps, value=values, wall_time=wall)
    frame["_row"] = np.arange(len(frame), dtype=np.int64)
    settle_rewrites(frame, file, increasing=increasing).into(run)


# --- run.json ----------------------------------------------------------------------------------------------


def _describe(entry: dict[str, Any], folder: Path, run: RunData) -> str | None:
    """The run's notes, title and recorded status (``hparams["_sacred"]``) from its run entry; its status."""
    experiment = entry.get("experiment") if isinstance(entry.get("experiment"), dict) else {}
    name = experiment.get("name")
    if isinstance(name, str) and name.strip():
        run.title = f"{' '.join(name.split())}/{folder.name}"
    status = entry.get("status") if isinstance(entry.get("status"), str) else None
    host = entry.get("host") if isinstance(entry.get("host"), dict) else {}
    trace = _trace(entry.get("fail_trace"))
    parts = [f"Sacred run {folder.name} of experiment {name!r}" if name else f"Sacred run {folder.name}"]
    if status:
        parts.append(f"status {status}" + (f" ({trace[0]})" if trace[0] else ""))
    parts.append(f"{_stamp(entry.get('start_time'))} → {_stamp(entry.get('stop_time'))}")
    if host.get("hostname"):
        parts.append(f"host {host['hostname']}")
    if entry.get("command"):
        parts.append(f"command {entry['command']!r}")
    run.notes.append(", ".join(parts))
    if "result" in entry and entry["result"] is not None:
        run.notes.append(f"result (what the main function returned): {json.dumps(entry['result'])[:200]}")
    if status:  # how the run ended, for its status (see tanalyze.runstatus)
        ended = entry.get("stop_time") if status in _FINAL else None
        run.hparams = {**run.hparams, "_sacred": {
            "run_id": folder.name, "status": status, "record": str(folder / "run.json"),
            "ended": _stamp(ended) if ended else None, "trace": trace[0], "frame": trace[1]}}
    return status


def _trace(trace: Any) -> tuple[str, str]:
    """The last line of a fail trace (the exception) and its last frame (``file:line in function``)."""
    if not isinstance(trace, list) or not trace:
        return "", ""
    lines = [line for chunk in trace if isinstance(chunk, str) for line in chunk.splitlines() if line.strip()]
    frames = [m for m in map(_FRAME.match, lines) if m]
    frame = f"{frames[-1].group(1)}:{frames[-1].group(2)} in {frames[-1].group(3).strip()}" if frames else ""
    return (lines[-1].strip()[:300] if lines else ""), frame


def _stamp(value: Any) -> str:
    """A run.json time (UTC, ISO without a zone) as ``YYYY-MM-DD HH:MM:SS UTC``; ``?`` when there is none."""
    seconds = _one_time(value)
    if seconds != seconds:
        return "?"
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _say_empty(run: RunData, folder: Path, metrics: Path | None, logged: int | None, status: str | None,
               console: Path | None) -> None:
    """A run with no point: a warning that says why (unless reading metrics.json already said), and where its
    output is."""
    state = f" (status {status})" if status else ""
    if metrics is None:
        run.warnings.append(ReadWarning(str(folder), f"no metrics.json: the run{state} logged no metric, or "
                                        "stopped before its first heartbeat (Sacred writes the file then, every "
                                        "10 s by default, and at the run's end)"))
    elif logged == 0 and not any(w.file == str(metrics) for w in run.warnings):
        run.warnings.append(ReadWarning(str(metrics), f"no metric values: the run{state} logged no metric with "
                                        "log_scalar"))
    try:
        size = console.stat().st_size if console is not None else 0
    except OSError:
        size = 0
    if size:
        run.notes.append(f"cout.txt holds {size:,} bytes of the run's console, read for its status only; if it "
                         "prints metrics, --format text reads them")


def _copies(entry: dict[str, Any], folder: Path) -> list[Path]:
    """The copies in the basedir's ``_sources``/``_resources`` that the run entry names (those that exist)."""
    basedir = folder.parent
    found: list[Path] = []
    experiment = entry.get("experiment") if isinstance(entry.get("experiment"), dict) else {}
    for pairs, store in ((experiment.get("sources"), None), (entry.get("resources"), "_resources")):
        for pair in pairs if isinstance(pairs, list) else []:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
                continue
            copy = basedir / pair[1] if store is None else basedir / store / Path(pair[1]).name
            if copy.parent.name in _STORE_FOLDERS and copy.parent.parent == basedir and copy.is_file():
                found.append(copy)
    return found
