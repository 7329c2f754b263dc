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
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze._gc import collector_paused
from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.widecsv import read_columns
from tanalyze.readers.wandb.history import STEP_KEYS, as_step
from tanalyze.schema import empty_scalars, scalar_frame

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

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        fields = _header(head)
        return bool(fields) and fields[0] == "Name" and "State" in fields and len(set(fields) & _RUN_COLUMNS) >= 3

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        out: list[RunData] = []
        with collector_paused():  # (thousands of runs, each with its small tables)
            for path in files:
                out.extend(_read_runs_table(path))
        return out


@lru_cache(maxsize=1 << 16)
def _value(cell: str) -> Any:
    """A runs-table cell as a Python value: numbers, booleans, and text as it is (remembered: a column
    repeats its cells from run to run, and every value is immutable)."""
    text = cell.strip()
    if text == "":
        return None
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    number = _number(text)
    if number is not None and (math.isfinite(number) or lowered in ("nan", "inf", "-inf", "infinity", "-infinity")):
        return number
    return text


def split_config_summary(columns: list[str]) -> int | None:
    """Where the summary columns start among the config+summary columns of a runs-table export.

    W&B lists config keys, then summary keys, each sorted by name; the summary
    starts where that order starts again. ``None`` when there is not exactly one
    such place (the split cannot be told).
    """
    restarts = [i for i in range(1, len(columns)) if columns[i].lower() < columns[i - 1].lower()]
    return restarts[0] if len(restarts) == 1 else None


def _read_runs_table(path: Path) -> list[RunData]:
    rows = _rows(path)
    header = next(rows, None)
    if not header or header[0] != "Name":
        raise FormatError(path, "no 'Name' column first", "line 1")
    lead = 0
    while lead < len(header) and header[lead] in _RUN_COLUMNS:
        lead += 1
    rest = header[lead:]
    split = split_config_summary(rest)
    config_columns = rest if split is None else rest[:split]
    summary_columns = [] if split is None else rest[split:]
    body = [(number, row) for number, row in enumerate(rows, start=2) if any(c.strip() for c in row)]
    ragged = [number for number, row in body if len(row) != len(header)]
    body = [(number, row) for number, row in body if len(row) == len(header)]
    names = Counter(row[0] for _, row in body)
    seen: Counter[str] = Counter()

    runs: list[tuple[str, dict[str, Any], list[str], tuple[list[str], int, list[float]] | None]] = []
    for number, row in body:
        record = dict(zip(header, row, strict=True))
        name = record["Name"] or f"row {number}"
        seen[name] += 1
        if names[name] > 1:
            created = record.get("Created", "").strip()
            name = f"{name} ({created})" if created else f"{name}#{seen[name]}"
        info = {key: _value(record[key]) for key in header[:lead] if key != "Name"}
        if info.get("Notes") == "-":
            info["Notes"] = None
        config = {key: _value(record[key]) for key in config_columns}
        summary = {key: _value(record[key]) for key in summary_columns}
        summary = {k: v for k, v in summary.items() if v is not None}
        hparams = {**config, "_wandb": {k: v for k, v in info.items() if v is not None}}
        if summary:
            hparams["_summary"] = summary
        notes = ["W&B runs-table export: config and final (summary) values only; it has no curves"]
        if split is None:
            notes.append("config and summary columns cannot be told apart here; all are kept as hparams")
        runs.append((name, hparams, notes, _final_points(summary, notes)))

    # The final points of runs with the same tags: one table for all of them, cut into one per run
    # (building thousands of four-row tables one by one costs a hundred times more).
    by_tags: dict[tuple[str, ...], list[int]] = {}
    for index, (_, _, _, final) in enumerate(runs):
        if final is not None:
            by_tags.setdefault(tuple(final[0]), []).append(index)
    scalars: dict[int, pd.DataFrame] = {}
    for tags, indices in by_tags.items():
        width = len(tags)
        finals = [runs[index][3] for index in indices]
        table = scalar_frame(run="", tag=list(tags) * len(indices),
                             step=np.repeat([final[1] for final in finals], width),
                             value=[value for final in finals for value in final[2]])
        for position, index in enumerate(indices):
            part = table.iloc[position * width:(position + 1) * width]
            part.index = pd.RangeIndex(width)  # (what reset_index gives, at a fifth of its cost)
            scalars[index] = part

    out = []
    for index, (name, hparams, notes, _) in enumerate(runs):
        data = RunData(name=name, hparams=hparams, notes=notes,
                       scalars=scalars[index] if index in scalars else empty_scalars())
        if ragged:
            data.warnings.append(ReadWarning(str(path), f"{len(ragged)} row(s) with the wrong number of cells skipped",
                                             f"line {ragged[0]}", count=len(ragged)))
        out.append(data)
    return out


def _final_points(summary: dict[str, Any], notes: list[str]) -> tuple[list[str], int, list[float]] | None:
    """The run's final values as points: their tags, the step and the values (None when there are none)."""
    numeric = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    step_key = next((k for k in ("_step", *STEP_KEYS) if as_step(summary.get(k)) is not None), None)
    tags = {k: v for k, v in numeric.items() if k != step_key and not k.startswith("_")}
    if not tags:
        return None
    if step_key is None:
        notes.append("no step column among the final values: they are kept as hparams only")
        return None
    step = as_step(summary[step_key])
    notes.append(f"the {len(tags)} final value(s) are single points at {step_key} = {step}")
    return list(tags), step, list(tags.values())
