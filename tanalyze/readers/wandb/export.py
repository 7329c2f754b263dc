"""CSV files exported from the W&B web UI: chart exports and runs-table exports.

A **chart export** ("Export panel → CSV") has an x-axis column (``Step`` by
default, which is W&B's ``_step`` counter, not necessarily the training
iteration) and for every run and metric the columns ``<run> - <metric>``,
``<run> - <metric>__MIN`` and ``<run> - <metric>__MAX``. Runs of different
length leave empty cells, which are not values. Each run becomes its own
:class:`RunData` named after the W&B run.

A **runs-table export** ("Runs → Export as CSV") has one row per run: W&B's
columns (Name, State, Notes, User, Tags, Created, Runtime, Sweep, …), then the
config columns, then the summary (final) columns. It has no curves: each run
becomes config hparams plus its final values, as single points when the
summary tells at which step they were logged.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze._gc import collector_paused
from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.widecsv import read_columns
from tanalyze.readers.wandb.history import STEP_KEYS, as_step
from tanalyze.schema import ScalarColumns, empty_histograms, empty_scalars, scalar_frame

__all__ = ["WandbChartExportReader", "WandbRunsTableReader", "split_run_metric"]

_SEP = " - "
_BANDS = ("__MIN", "__MAX")
#: Columns W&B puts before the config in a runs-table export.
_RUN_COLUMNS = frozenset({
    "Name", "State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", "ID", "Group", "Job Type",
    "Hostname", "GPU Type", "GPU Count", "Updated", "Heartbeat", "Commit", "GitHub", "Command", "Description",
    "Start Time", "End Time", "Run Path", "Agent",
})
_TIME_AXES = ("Wall Time", "Relative Time (Wall)", "Relative Time (Process)")


def _header(head: bytes) -> list[str] | None:
    """The complete fields of the first line of a CSV file's head (a cut-off last field is left out)."""
    text = head.decode("utf-8-sig", errors="replace")
    line, newline, _ = text.partition("\n")
    if not newline and len(head) < 4096:
        newline = "\n"
    try:
        fields = next(csv.reader([line.rstrip("\r")]))
    except (csv.Error, StopIteration):
        return None
    if not newline and fields:
        fields = fields[:-1]
    return fields


def split_run_metric(columns: list[str]) -> list[tuple[str, str, str]] | None:
    """Split chart-export columns into ``(run, metric, band)``; ``None`` if one is not ``<run> - <metric>``.

    Run names are free text and may contain `` - ``; metric keys rarely do. A
    chart plots the same metrics for every run, so each column is split where
    its run part and its metric part are shared by the most columns; on a tie,
    at the last `` - `` (the shortest metric).
    """
    bases = []
    for column in columns:
        band = next((b for b in _BANDS if column.endswith(b)), "")
        bases.append((column[: len(column) - len(band)], band))
    candidates: list[list[tuple[str, str]]] = []
    for base, _ in bases:
        splits = [(base[: m.start()], base[m.end():]) for m in re.finditer(re.escape(_SEP), base)]
        splits = [(run, metric) for run, metric in splits if run and metric]
        if not splits:
            return None
        candidates.append(splits)
    metric_support = Counter(metric for splits in candidates for metric in {m for _, m in splits})
    run_support = Counter(run for splits in candidates for run in {r for r, _ in splits})
    out = []
    for (_, band), splits in zip(bases, candidates, strict=True):
        run, metric = max(
            reversed(splits), key=lambda s: (metric_support[s[1]] + run_support[s[0]], -len(s[1]))
        )
        out.append((run, metric, band))
    return out


class WandbChartExportReader(Reader):
    name = "wandb-chart-csv"
    description = "W&B web UI chart export (Step, '<run> - <metric>', __MIN/__MAX columns)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        fields = _header(head)
        if not fields or len(fields) < 2 or _SEP in fields[0] or not fields[0]:
            return False
        rest = fields[1:]
        if split_run_metric(rest) is None:
            return False
        return fields[0] in ("Step", "_step", *_TIME_AXES) or any(f.endswith(_BANDS) for f in rest)

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        out: list[RunData] = []
        for path in files:
            out.extend(_read_chart(path))
        return out


def _rows(path: Path) -> Iterator[list[str]]:
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        yield from csv.reader(io.StringIO(text, newline=""))
    except csv.Error as exc:
        raise FormatError(path, f"not valid CSV: {exc}") from exc


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _read_chart(path: Path) -> list[RunData]:
    table = read_columns(path)
    header = table.raw_header
    if len(header) < 2:
        raise FormatError(path, "empty file or no columns", "line 1")
    columns = split_run_metric(header[1:])
    if columns is None:
        raise FormatError(path, "columns are not '<run> - <metric>'", "line 1")
    x_name = header[0]
    x_values, x_numeric = table.values[0], table.numeric[0]
    with np.errstate(invalid="ignore"):
        whole = x_numeric & np.isfinite(x_values) & (np.floor(x_values) == x_values) & (x_values >= 0) & (
            x_values < 2.0**62)
    is_step = x_name in ("Step", "_step") or bool(whole.all())
    if x_name in _TIME_AXES or not is_step:
        steps = np.arange(table.rows, dtype=np.int64)
        valid_step = np.ones(table.rows, dtype=bool)
        x_note = f"the chart's x-axis was '{x_name}', not a step: points are numbered in row order"
        bad_x = 0
    else:
        exact = table.exact.get(0)
        steps = exact if exact is not None else np.where(whole, x_values, -1).astype(np.int64)
        valid_step = whole
        x_note = ("step = the chart's 'Step' axis, W&B's _step counter (one per wandb.log call), "
                  "which is not necessarily the training iteration") if x_name in ("Step", "_step") else (
                  f"step = the chart's x-axis '{x_name}'")
        bad_x = int((~whole).sum())

    # (run, metric, band) -> column index; duplicate headers get distinct run names.
    by_run: dict[str, dict[tuple[str, str], int]] = {}
    renamed: list[str] = []
    for index, (run, metric, band) in enumerate(columns, start=1):
        name = run
        suffix = 2
        while (metric, band) in by_run.get(name, {}):
            name = f"{run}#{suffix}"
            suffix += 1
        if name != run and name not in renamed:
            renamed.append(name)
        by_run.setdefault(name, {})[(metric, band)] = index

    out = []
    for run, cells in by_run.items():
        data = RunData(name=run)
        data.notes.append(f"W&B chart export: {x_note}")
        if run in renamed:
            data.warnings.append(ReadWarning(str(path), f"two runs are called {run.rsplit('#', 1)[0]!r}; this one is {run!r}"))
        data.warnings.extend(table.warnings)
        if bad_x:
            data.warnings.append(ReadWarning(str(path), f"{bad_x} row(s) without a usable step value skipped", count=bad_x))
        data.scalars = _chart_points(path, table, steps, valid_step, cells, data)
        out.append(data)
    return out


def _chart_points(path: Path, table, steps: np.ndarray, valid_step: np.ndarray,
                  cells: dict[tuple[str, str], int], data: RunData) -> pd.DataFrame:
    tags: list[str] = []
    step_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    metrics = [m for (m, band) in cells if band == ""] + [m for (m, band) in cells if band and (m, "") not in cells]
    dropped_bands = []
    for metric in dict.fromkeys(metrics):
        main = cells.get((metric, ""))
        for band in ("", *_BANDS):
            index = cells.get((metric, band))
            if index is None:
                continue
            values, numeric = table.values[index], table.numeric[index]
            bad = table.non_numeric[index]
            if bad:
                data.warnings.append(ReadWarning(str(path), f"{bad} non-numeric cell(s) in column "
                                                 f"{metric + band!r} skipped", count=bad))
            present = numeric & valid_step
            if band and main is not None:
                main_present = table.numeric[main] & valid_step
                same = np.array_equal(present, main_present) and np.array_equal(
                    values[present], table.values[main][present], equal_nan=True)
                if same:
                    dropped_bands.append(metric + band)
                    continue
            tags.append(metric + band)
            step_parts.append(steps[present])
            value_parts.append(values[present])
    if dropped_bands:
        data.notes.append(
            f"{', '.join(dropped_bands)} equal the value at every step (the chart was not downsampled); not kept")
    elif any(t.endswith(_BANDS) for t in tags):
        data.notes.append("__MIN/__MAX tags are the band W&B drew around a downsampled line (min/max per bucket)")
    if not any(len(part) for part in step_parts):
        return empty_scalars()
    codes = np.concatenate([np.full(len(part), i, dtype=np.int64) for i, part in enumerate(step_parts)])
    order = sorted(range(len(tags)), key=tags.__getitem__)
    rank = np.empty(len(tags), dtype=np.int64)
    rank[order] = np.arange(len(tags))
    tag_column = pd.Categorical.from_codes(rank[codes], categories=[tags[i] for i in order])
    return scalar_frame(run="", tag=pd.Series(tag_column), step=np.concatenate(step_parts),
                        value=np.concatenate(value_parts))


class WandbRunsTableReader(Reader):
    name = "wandb-runs-csv"
    description = "W&B web UI runs-table export (one row per run: Name, State, config, summary)"
    cache_version = 2  # 2: config and summary told apart by names sorted with capitals first too

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        fields = _header(head)
        # (the State column may be hidden in the web UI before the export; W&B's Runtime is there then)
        return bool(fields) and fields[0] == "Name" and bool({"State", "Runtime"} & set(fields)) and len(
            set(fields) & _RUN_COLUMNS) >= 3

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        out: list[RunData] = []
        with collector_paused():  # (thousands of runs, each with its small tables)
            for path in files:
                out.extend(_read_runs_table(path))
        return out


def _value(cell: str) -> Any:
    """A runs-table cell as a Python value: numbers, booleans, and text as it is."""
    text = cell.strip()
    if (text[1:] if text[:1] in ("+", "-") else text).isdecimal():
        return int(text)
    # ``float`` reads nothing that ends otherwise: a digit, a point, or inf/infinity/nan
    number = _number(text) if text and (text[-1].isdecimal() or text[-1] in _FLOAT_ENDS) else None
    if number is None:
        lowered = text.lower()
        return None if text == "" else lowered == "true" if lowered in ("true", "false") else text
    if math.isfinite(number) or text.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        return number
    return text


_FLOAT_ENDS = frozenset(".nNfFyY")


def split_config_summary(columns: list[str]) -> int | None:
    """Where the summary columns start among the config+summary columns of a runs-table export.

    W&B lists config keys, then summary keys, each sorted by name; the summary
    starts where that order starts again. Names are compared regardless of case,
    else (when that finds more than one such place: capitals sorted first) as they
    are written. ``None`` when there is not exactly one such place (the split
    cannot be told).
    """
    for key in (str.lower, str):
        restarts = [i for i in range(1, len(columns)) if key(columns[i]) < key(columns[i - 1])]
        if len(restarts) == 1:
            return restarts[0]
    return None


def _read_runs_table(path: Path) -> list[RunData]:
    rows = _rows(path)
    header = next(rows, None)
    if not header or header[0] != "Name":
        raise FormatError(path, "no 'Name' column first", "line 1")
    lead = 0
    while lead < len(header) and header[lead] in _RUN_COLUMNS:
        lead += 1
    split = split_config_summary(header[lead:])
    summary_start = len(header) if split is None else lead + split
    width = len(header)
    body, ragged = [], []
    for number, row in enumerate(rows, start=2):
        if len(row) == width and (row[0].strip() or any(map(str.strip, row))):
            body.append((number, row))
        elif any(map(str.strip, row)):
            ragged.append(number)
    if not body:
        return []
    # Column by column: each distinct cell is read once, and the final points of all runs are found at once.
    columns = [_Column.of(cells) for cells in zip(*(row for _, row in body), strict=True)]
    notes_column = header.index("Notes") if "Notes" in header[:lead] else None
    if notes_column is not None:
        columns[notes_column] = columns[notes_column].without("-")
    created = columns[header.index("Created")].written() if "Created" in header else None
    names = _run_names([n for n, _ in body], columns[0].written(), created)
    summary_keys = header[summary_start:]
    finals = _FinalPoints(summary_keys, columns[summary_start:], len(body))
    values = [column.values() for column in columns]

    info_keys = [(i, key) for i, key in enumerate(header[:lead]) if key != "Name"]
    config_keys = header[lead:summary_start]
    no_histograms = empty_histograms()  # one for all runs: a reader's tables are never changed in place
    skipped = [ReadWarning(str(path), f"{len(ragged)} row(s) with the wrong number of cells skipped",
                           f"line {ragged[0]}", count=len(ragged))] if ragged else []
    out = []
    runs = zip(names, _by_row([values[i] for i, _ in info_keys], len(names)),
               _by_row(values[lead:summary_start], len(names)), _by_row(values[summary_start:], len(names)), strict=True)
    for index, (name, info, config, summary) in enumerate(runs):
        hparams = dict(zip(config_keys, config, strict=True))
        hparams["_wandb"] = {key: v for (_, key), v in zip(info_keys, info, strict=True) if v is not None}
        final_values = {key: v for key, v in zip(summary_keys, summary, strict=True) if v is not None}
        if final_values:
            hparams["_summary"] = final_values
        notes = ["W&B runs-table export: config and final (summary) values only; it has no curves"]
        if split is None:
            notes.append("config and summary columns cannot be told apart here; all are kept as hparams")
        scalars, note = finals.run(index)
        if note:
            notes.append(note)
        out.append(RunData(name=name, hparams=hparams, notes=notes, warnings=list(skipped),
                           histograms=no_histograms, scalars=scalars))
    return out


def _by_row(columns: list[list[Any]], rows: int) -> list[tuple[Any, ...]]:
    """Columns turned into rows (``rows`` empty tuples when there are no columns)."""
    return list(zip(*columns, strict=True)) if columns else [()] * rows


@dataclass(frozen=True)
class _Column:
    """One column of a runs table: its distinct cells as written (``texts``) and as Python values
    (``cells``, see ``_value``), and for each row which of them it holds (``codes``)."""

    texts: np.ndarray
    cells: np.ndarray
    codes: np.ndarray

    @classmethod
    def of(cls, column: tuple[str, ...]) -> _Column:
        codes, texts = pd.factorize(np.asarray(column, dtype=object))
        return cls(texts, _cell_values(texts), codes)

    def values(self) -> list[Any]:
        """Each row's value."""
        return self.cells[self.codes].tolist()

    def written(self) -> list[str]:
        """Each row's cell as written."""
        return self.texts[self.codes].tolist()

    def without(self, marker: str) -> _Column:
        """The column with ``marker`` cells read as no value (a runs table's ``-`` for no notes)."""
        cells = self.cells.copy()
        cells[[v == marker for v in cells.tolist()]] = None
        return _Column(self.texts, cells, self.codes)

    def numbers(self) -> tuple[np.ndarray, np.ndarray]:
        """Which rows hold a number (not a boolean), and the numbers (0 where none)."""
        flags = np.array([type(v) is int or type(v) is float for v in self.cells.tolist()], bool)
        numbers = np.array([float(v) if flag else 0.0 for v, flag in zip(self.cells.tolist(), flags.tolist(),
                                                                           strict=True)], np.float64)
        return flags[self.codes], numbers[self.codes]

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """Which rows hold a step (see ``as_step``), and the steps (0 where none)."""
        found = [as_step(v) for v in self.cells.tolist()]
        has = np.array([step is not None for step in found], bool)
        steps = np.array([0 if step is None else step for step in found], np.int64)
        return has[self.codes], steps[self.codes]


def _cell_values(cells: np.ndarray) -> np.ndarray:
    """``_value`` of each of ``cells`` (distinct strings) as an object array; a column of numbers is
    converted at once.

    numpy converts text with ``float`` itself, so a finite number with a fraction is what ``_value``
    gives; the rest (whole numbers, non-finite values, empty cells) are given by ``_value``.
    """
    values = np.full(len(cells), None, dtype=object)
    filled = cells != ""
    try:
        numbers = cells[filled].astype(np.float64)
    except ValueError:  # some cell is not a number: each is read on its own
        values[:] = [_value(cell) for cell in cells]
        return values
    values[filled] = numbers
    positions = np.flatnonzero(filled)[~np.isfinite(numbers) | (numbers == np.trunc(numbers))]
    values[positions] = [_value(cell) for cell in cells[positions]]
    return values


def _run_names(numbers: list[int], names: list[str], created: list[str] | None) -> list[str]:
    """Each row's run name; a name several rows share gets the row's creation time (or ``#k``) added."""
    named = [name or f"row {number}" for number, name in zip(numbers, names, strict=True)]
    counts = Counter(named)
    seen: Counter[str] = Counter()
    out = []
    for index, name in enumerate(named):
        seen[name] += 1
        if counts[name] > 1:
            when = created[index].strip() if created is not None else ""
            name = f"{name} ({when})" if when else f"{name}#{seen[name]}"
        out.append(name)
    return out


class _FinalPoints:
    """Every run's final values as points, found for all runs at once: the numeric summary cells other
    than the step and ``_``-keys, at the step the run's first step key holds."""

    def __init__(self, keys: list[str], columns: list[_Column], runs: int) -> None:
        numeric = np.zeros((runs, len(keys)), bool)
        values = np.zeros((runs, len(keys)))
        for j, column in enumerate(columns):
            numeric[:, j], values[:, j] = column.numbers()
        step_key = np.full(runs, -1, np.int64)
        steps = np.zeros(runs, np.int64)
        for key in reversed(("_step", *STEP_KEYS)):  # the first key that holds a step wins: applied last
            if key in keys:
                j = keys.index(key)
                has, found = columns[j].steps()
                step_key[has] = j
                steps[has] = found[has]
        underscore = np.array([key.startswith("_") for key in keys], bool)
        chosen = numeric & ~underscore & (np.arange(len(keys))[None, :] != step_key[:, None])
        points = chosen & (step_key >= 0)[:, None]
        counts = points.sum(axis=1)
        # Each run's arrays are views of these (one array per column for all runs, not four per run).
        self._step = np.repeat(steps, counts)
        self._value = values[points]
        self._wall_time = np.full(len(self._value), np.nan)
        patterns, pattern = _distinct_rows(points)
        self._pattern = pattern.tolist()
        self._tags = [tuple(key for key, flag in zip(keys, row, strict=True) if flag) for row in patterns.tolist()]
        self._codes = np.arange(len(keys), dtype=np.int32)
        self._starts = np.concatenate(([0], np.cumsum(counts))).tolist()
        self._keys = keys
        self._step_key = step_key.tolist()
        self._steps = steps.tolist()
        self._unplaced = (chosen.any(axis=1) & (step_key < 0)).tolist()

    def run(self, index: int) -> tuple[ScalarColumns, str | None]:
        """Run ``index``'s points and the note that says where they are (None: no note)."""
        begin, end = self._starts[index], self._starts[index + 1]
        if begin == end:
            if self._unplaced[index]:
                return _NO_POINTS, "no step column among the final values: they are kept as hparams only"
            return _NO_POINTS, None
        width = end - begin
        columns = ScalarColumns(self._tags[self._pattern[index]], self._codes[:width], self._step[begin:end],
                                self._value[begin:end], self._wall_time[begin:end])
        step_key = self._keys[self._step_key[index]]
        return columns, f"the {width} final value(s) are single points at {step_key} = {self._steps[index]}"


def _distinct_rows(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a boolean matrix and, for each row, which of them it is (as ``np.unique``
    with ``axis=0``, sorted alike, but each row compared as one string of bits)."""
    packed = np.packbits(np.pad(flags, ((0, 0), (0, 1))), axis=1)  # at least one byte per row
    distinct, inverse = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1),
                                  return_inverse=True)
    bits = np.unpackbits(distinct.view(np.uint8).reshape(len(distinct), -1), axis=1, count=flags.shape[1])
    return bits.astype(bool), inverse.reshape(-1)


_NO_POINTS = ScalarColumns((), np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0), np.empty(0))
