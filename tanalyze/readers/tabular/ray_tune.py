"""Ray Tune trial folders (``<storage>/<experiment>/<trial>/``): ``result.json``, its twins and the trial's error.

Tune's loggers write each trial three times: ``result.json`` (JSON lines, one object per ``tune.report`` /
``train.report`` / ``Trainable.step``: the user's metrics as reported, nested dicts kept nested, then Tune's own
keys and the trial's ``config``), ``progress.csv`` (the same rows flattened with ``/``, without ``config``, its
columns fixed by the first row) and, with ``tensorboardX`` installed, an event file (tags ``ray/tune/<key>``,
read by the TensorBoard reader: a twin of this run, see :mod:`tanalyze.identity`). ``params.json`` and
``params.pkl`` hold the config; a trial that raised has ``error.txt`` (``Failure # N (occurred at …)`` and the
exception, once per failure) and ``error.pkl``.

Decisions:

* **One run per trial folder**, named by the folder (Tune names it ``<trainable>_<id>_<n>_<config>_<date>``),
  read from ``result.json``, the fullest sink (nested metrics, the config, every key of every row). The other
  files of the folder are claimed with it so that none is listed as unread, and not read again: ``progress.csv``
  is read instead only when there is no ``result.json`` or it holds more rows (a truncated ``result.json``).
* **step = ``training_iteration``** (Tune's count of reports, from 1); ``wall_time`` = ``timestamp``, which Tune
  fills with the report's Unix time in *whole* seconds (a user-reported ``timestamp`` replaces it).
* Every number is a tag named as reported; nested dicts are flattened with ``/`` as Tune's CSV and TensorBoard
  loggers do (``val/acc``); NaN and inf are values. A user's ``epoch`` fills the epoch column instead. Text,
  booleans and lists (Tune's TensorBoard logger makes lists histograms) are skipped and named in a note.
* Tune's bookkeeping is not a metric: ``time_this_iter_s`` **is kept** as a tag (seconds per iteration: the
  throughput curve); its running sums ``time_total_s`` and ``time_since_restore`` are not (they add nothing to
  it), nor the counters ``iterations_since_restore`` / ``timesteps_since_restore`` (a start over of
  ``iterations_since_restore`` is said in a note: the trial was restored), nor ``pid``, ``done``,
  ``warmup_time`` and the text keys. ``timesteps_total`` and ``episodes_total`` are the user's RL counters
  (Tune only sums what was reported) and are kept.
* hparams = the trial's ``config`` (the last row's; a config that changed during the trial, as Population
  Based Training does, is noted), else ``params.json``, else the ``config/<key>`` columns older Tune versions
  wrote to ``progress.csv``. ``trial_id`` is named in a note.
* ``error.txt``: its first and last lines (when and what) and the number of failures become a note; the run's
  status comes from the file itself (:mod:`tanalyze.runstatus`). Pickles (``params.pkl``, ``error.pkl``) are
  never unpickled: they are untrusted, and everything in them is in the JSON and text files too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    JsonLines,
    PointBuffer,
    as_step,
    is_number,
    load_config,
    name_list,
    read_head,
    settle_rewrites,
)
from tanalyze.readers.tabular.widecsv import read_wide_csv, sniff_header

__all__ = ["RayTuneReader", "is_tune_record", "is_tune_header"]

RESULT = "result.json"
PROGRESS = "progress.csv"
#: the other files Tune writes into a trial folder, claimed with its result.json / progress.csv
SIDE_FILES = frozenset({"params.json", "params.pkl", "error.txt", "error.pkl"})
#: Tune's keys in every result, one of which (besides training_iteration and trial_id) a record must have
_TUNE_KEYS = ("time_this_iter_s", "time_total_s", "timestamp", "iterations_since_restore", "date")
#: Tune's bookkeeping: neither tags nor named as skipped (time_this_iter_s, timesteps_total are kept)
BOOKKEEPING = frozenset({
    "training_iteration", "timestamp", "time_total_s", "time_since_restore", "iterations_since_restore",
    "timesteps_since_restore", "pid", "done", "warmup_time", "trial_id", "date", "hostname", "node_ip",
    "config", "checkpoint_dir_name", "should_checkpoint", "experiment_id", "experiment_tag", "epoch",
})
#: The first line of a result can be longer than the sniffed head (RLlib's nested info): this much is read.
_FIRST_LINE_LIMIT = 1 << 20
#: How much of each end of error.txt is read for its note.
_ERROR_BYTES = 64 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FAILURE = re.compile(r"^Failure # \d+", re.MULTILINE)


def is_tune_record(record: Mapping[str, Any]) -> bool:
    """A Tune result: a whole-number ``training_iteration``, a ``trial_id`` and another of Tune's keys."""
    return (as_step(record.get("training_iteration")) is not None and "trial_id" in record
            and any(key in record for key in _TUNE_KEYS))


def is_tune_header(header: list[str]) -> bool:
    """A Tune ``progress.csv`` header: ``training_iteration``, ``trial_id`` and another of Tune's columns."""
    names = set(header)
    return "training_iteration" in names and "trial_id" in names and any(key in names for key in _TUNE_KEYS)


def _first_line(path: Path, head: bytes) -> bytes | None:
    """The first line of a file: from ``head``, or read on (up to 1 MB) when it is longer than the head."""
    line, newline, _ = head.partition(b"\n")
    if newline or len(head) < 4096:
        return line
    try:
        with open(path, "rb") as handle:
            line = handle.readline(_FIRST_LINE_LIMIT)
    except OSError:
        return None
    return line if line.endswith(b"\n") else None


def _sniff_result(path: Path, head: bytes) -> bool:
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:  # created when the trial starts: empty until its first report (a trial that failed before it)
        return path.name == RESULT and len(head) == 0 and (path.parent / "params.json").is_file()
    if not body.startswith(b"{") or (path.name != RESULT and b'"training_iteration"' not in head):
        return False
    line = _first_line(path, head)
    if line is None:
        return False
    try:
        record = json.loads(line.decode("utf-8", errors="replace").lstrip("\ufeff"))
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and is_tune_record(record)


def _sniff_progress(path: Path, head: bytes) -> bool:
    if not head:  # created when the trial starts, its header written with the first report
        return path.name == PROGRESS and (path.parent / "params.json").is_file()
    header = sniff_header(head)
    if header is None and path.name == PROGRESS:
        line = _first_line(path, head)
        header = sniff_header(line + b"\n") if line else None
    return header is not None and is_tune_header(header)


def _is_trial_folder(folder: Path) -> bool:
    """Whether a folder holds a Tune ``result.json`` or ``progress.csv`` (the side files' owner)."""
    for name, sniff in ((RESULT, _sniff_result), (PROGRESS, _sniff_progress)):
        path = folder / name
        if path.is_file() and sniff(path, read_head(path)):  # (an empty result.json: a trial that failed first)
            return True
    return False


class RayTuneReader(Reader):
    """A Ray Tune trial folder: ``result.json`` (or ``progress.csv``), ``params.json``, ``error.txt`` …"""

    name = "ray_tune"
    cache_version = 3  # 2: n_updates / nupdates columns of progress.csv are counters; 3: counters named with blanks
    description = ("Ray Tune trial folder: result.json (JSON per report: training_iteration, metrics, config), "
                   "progress.csv, params.json, error.txt")

    def sniff(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if path.name in SIDE_FILES:
            return _is_trial_folder(path.parent)
        if suffix in (".json", ".jsonl"):
            return _sniff_result(path, head)
        if suffix == ".csv":
            return _sniff_progress(path, head)
        return False

    def group(self, files: list[Path]) -> list[list[Path]]:
        """One run per trial folder; a second results file in one folder (renamed by hand) is a run of its own."""
        results = _results(sorted(files))
        if len(results) <= 1:
            return [sorted(files)]
        first = sorted(f for f in files if f not in results[1:])
        return [first, *([f] for f in results[1:])]

    def read(self, files: list[Path]) -> list[RunData]:
        files = [Path(f) for f in files]
        by_name = {f.name: f for f in files}
        results = _results(files)
        progress = [f for f in files if f.suffix.lower() == ".csv"]
        run = RunData()
        about: list[str] = []
        if results:
            rows, about = _read_result(results[0], run)
            if progress:
                run = _check_progress(results[0], rows, progress[0], run)
        elif progress:
            _read_progress(progress[0], run)
        else:
            run.warnings.append(ReadWarning(str(files[0]), "a Tune trial's file without its result.json or "
                                            "progress.csv: no metrics"))
        run.notes.extend(about)
        _hparams_from_params(by_name.get("params.json"), run)
        if "error.txt" in by_name:
            note = _error_note(by_name["error.txt"], run)
            if note:
                run.notes.append(note)
        pickles = sorted(f.name for f in files if f.suffix.lower() == ".pkl")
        if pickles:
            run.notes.append(f"{', '.join(pickles)}: pickles, never unpickled (untrusted); the config and error "
                             "are read from params.json and error.txt")
        return [run]


def _results(files: list[Path]) -> list[Path]:
    """The results files (JSON lines) among a trial's files, ``result.json`` first."""
    found = [f for f in files if f.suffix.lower() in (".json", ".jsonl") and f.name not in SIDE_FILES]
    return sorted(found, key=lambda f: (f.name != RESULT, f.name))


# --- result.json ---------------------------------------------------------------------------------------------


def _flatten(points: PointBuffer, row: int, step: int, prefix: str, value: Mapping[str, Any], epoch: float,
             skipped: set[str]) -> None:
    """The numbers of a nested dict as points named ``prefix/key`` (recursively); other leaves named in ``skipped``."""
    for key, item in value.items():
        name = f"{prefix}/{key}"
        if is_number(item):
            points.add(row, name, step, float(item), epoch)
        elif isinstance(item, Mapping):
            _flatten(points, row, step, name, item, epoch, skipped)
        elif item is not None:
            skipped.add(name)


def _read_result(path: Path, run: RunData) -> tuple[int, list[str]]:
    """``result.json`` into ``run`` (points, wall times, config, notes on the data, warnings); returns the rows
    read and the notes about the trial itself (its id, config changes, restores)."""
    lines = JsonLines(path)
    points = PointBuffer()
    walls: list[float] = []
    skipped: set[str] = set()
    no_step = 0
    restores: list[int] = []
    first_config: Any = None
    last_config: Any = None
    trial_ids: dict[str, None] = {}
    nan = math.nan
    try:
        for _, record in lines:
            step = record.get("training_iteration")
            if type(step) is not int:
                step = as_step(step)
                if step is None:
                    no_step += 1
                    continue
            row = len(walls)
            stamp = record.get("timestamp")
            walls.append(float(stamp) if is_number(stamp) else nan)
            epoch = record.get("epoch")
            epoch = float(epoch) if is_number(epoch) else nan
            other = points.add_record(row, step, record, BOOKKEEPING, epoch)
            for key in other:
                value = record[key]
                if isinstance(value, Mapping):
                    _flatten(points, row, step, key, value, epoch, skipped)
                else:
                    skipped.add(key)
            config = record.get("config")
            if config is not None:
                if first_config is None:
                    first_config = config
                last_config = config
            if row and record.get("iterations_since_restore") == 1:
                restores.append(step)
            trial = record.get("trial_id")
            if isinstance(trial, str) and trial not in trial_ids:
                trial_ids[trial] = None
    except FormatError as exc:
        run.warnings.append(ReadWarning(str(path), exc.reason))
    run.warnings.extend(lines.warnings(str(path)))
    if no_step:
        run.warnings.append(ReadWarning(str(path), f"{no_step} record(s) without a whole-number "
                                        "'training_iteration'; skipped", count=no_step))
    if not walls and not run.warnings:
        run.warnings.append(ReadWarning(str(path), "no results in the file (the trial stopped before its first "
                                        "report?)"))
    frame = points.frame()
    if len(frame):
        frame["wall_time"] = np.asarray(walls, dtype=np.float64)[frame["_row"].to_numpy()]
    settled = settle_rewrites(frame, str(path), unit="iteration")
    run.notes.append(_DECISIONS)
    settled.into(run)
    if skipped:
        run.notes.append(f"non-numeric values skipped under: {name_list(sorted(skipped))}")
    about: list[str] = []
    if isinstance(last_config, Mapping):
        run.hparams = dict(last_config)
        if isinstance(first_config, Mapping) and first_config != last_config:
            changed = sorted(str(k) for k in set(first_config) | set(last_config)
                             if first_config.get(k) != last_config.get(k))
            about.append(f"the trial's config changed while it ran (Population Based Training?): hparams are the "
                         f"last config; changed: {name_list(changed)}")
    if trial_ids:
        about.append(f"Tune trial {', '.join(trial_ids)}")
    if restores:
        shown = ", ".join(str(s) for s in restores[:5]) + (" …" if len(restores) > 5 else "")
        about.append(f"the trial was restored {len(restores)} time(s) (iterations_since_restore started over at "
                     f"training_iteration {shown})")
    return len(walls), about


_DECISIONS = ("Ray Tune trial: step = training_iteration; wall_time = Tune's timestamp (whole seconds); "
              "time_this_iter_s kept (seconds per iteration), Tune's running sums and counters "
              "(time_total_s, time_since_restore, iterations_since_restore …) are not metrics")


def _data_rows(path: Path) -> int | None:
    """The lines below a CSV's header (a count of its rows, quoted newlines aside)."""
    try:
        count = 0
        last = b"\n"
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                count += chunk.count(b"\n")
                last = chunk[-1:]
        return max(count - 1 + (last != b"\n"), 0)
    except OSError:
        return None


def _check_progress(result: Path, rows: int, progress: Path, run: RunData) -> RunData:
    """``progress.csv`` is the twin of ``result.json``: read instead only when it holds more rows (``result.json``
    cut short); otherwise named in a note."""
    csv_rows = _data_rows(progress)
    if csv_rows is None or csv_rows <= rows:
        run.notes.append(f"{progress.name}: the same results as a wide CSV ({csv_rows} row(s)); not read again")
        return run
    fresh = RunData(hparams=run.hparams)
    fresh.warnings = [*run.warnings, ReadWarning(str(result), f"holds {rows} result row(s) and {progress.name} "
                                                 f"beside it {csv_rows}: {progress.name} was read instead")]
    _read_progress(progress, fresh)
    return fresh


# --- progress.csv ----------------------------------------------------------------------------------------------


def _tune_step(header: list[str]) -> int | None:
    return header.index("training_iteration") if "training_iteration" in header else None


def _read_progress(path: Path, run: RunData) -> None:
    """``progress.csv`` (no ``result.json`` beside it) into ``run``: the same decisions, from the wide table."""
    header = sniff_header(read_head(path)) or []
    config_columns = frozenset(h for h in header if h.startswith("config/"))
    ignore = (BOOKKEEPING - {"timestamp"}) | config_columns
    try:
        wide = read_wide_csv(path, choose_step=_tune_step, epoch_names=(), ignore=ignore)
    except FormatError as exc:
        run.warnings.append(ReadWarning(str(path), exc.reason))
        return
    frame = wide.points.frame()
    stamps = frame["tag"] == "timestamp"
    if stamps.any():
        clock = frame.loc[stamps].drop_duplicates("step", keep="last").sort_values("step")
        frame = frame.loc[~stamps].reset_index(drop=True)
        frame["tag"] = frame["tag"].cat.remove_unused_categories()
        at = np.clip(np.searchsorted(clock["step"].to_numpy(), frame["step"].to_numpy()), 0, len(clock) - 1)
        found = clock["step"].to_numpy()[at] == frame["step"].to_numpy()
        frame["wall_time"] = np.where(found, clock["value"].to_numpy()[at], np.nan)
    settled = settle_rewrites(frame, str(path), unit="iteration", increasing=wide.increasing)
    run.warnings.extend(wide.warnings)
    settled.into(run)
    run.notes.insert(0, _DECISIONS + f"; read from {path.name} (no result.json beside it holds more rows)")
    run.notes.extend(wide.notes)
    if config_columns and not run.hparams:
        run.hparams = _config_columns(path, sorted(config_columns))
    if wide.rows == 0:
        run.warnings.append(ReadWarning(str(path), "no data rows below the header"))


def _config_columns(path: Path, columns: list[str]) -> dict[str, Any]:
    """The ``config/<key>`` columns of an old ``progress.csv``: the last row's values, as hparams."""
    try:
        table = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False, on_bad_lines="skip")
    except (OSError, ValueError, pd.errors.ParserError):
        return {}
    if table.empty:
        return {}
    last = table.iloc[-1]
    return {column.removeprefix("config/"): _cell(last[column]) for column in columns}


def _cell(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


# --- params.json, error.txt ------------------------------------------------------------------------------------


def _hparams_from_params(path: Path | None, run: RunData) -> None:
    """``params.json`` (the config) when the results held none."""
    if path is None or run.hparams:
        return
    data, warning = load_config(path)
    if warning:
        run.warnings.append(warning)
    if data is not None:
        run.hparams = data


def _error_note(path: Path, run: RunData) -> str | None:
    """The trial's failure from ``error.txt``: how many, when the first was, and the last line (the exception)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(_ERROR_BYTES)
            if size > 2 * _ERROR_BYTES:
                handle.seek(size - _ERROR_BYTES)
            tail = handle.read() if size > _ERROR_BYTES else b""
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"could not read: {exc.strerror or exc}"))
        return None
    text = _ANSI.sub("", head.decode("utf-8", errors="replace"))
    end = _ANSI.sub("", tail.decode("utf-8", errors="replace")) if tail else text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = [line.strip() for line in end.splitlines() if line.strip()]
    if not lines:
        return f"{path.name} is empty: the trial failed, with no message"
    failures = len(_FAILURE.findall(text)) + (len(_FAILURE.findall(tail.decode("utf-8", errors="replace")))
                                              if size > 2 * _ERROR_BYTES else 0)
    count = f"{failures} failure(s)" if failures else "a failure"
    return f"the trial failed ({count} in {path.name}): {lines[0]} … {last[-1] if last else lines[-1]}"
