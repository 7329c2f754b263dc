"""DVCLive output folders: ``dvclive.Live(dir="dvclive")``, read without dvclive.

Layout (DVCLive 1.x–3.x; the folder is ``dvclive/`` unless ``Live(dir=…)`` names another)::

    dvclive/plots/metrics/<name>.tsv     one per log_metric name ('train/loss' → train/loss.tsv):
                                         'step<TAB>loss', or 'timestamp<TAB>step<TAB>loss' (ms since 1970)
    dvclive/metrics.json                 the latest value of each metric, nested by '/', and "step"
    dvclive/params.yaml                  log_param(s)
    dvclive/report.html | report.md      make_report; dvclive/dvc.yaml (DVCLive 2.x/early 3.x)
    dvclive/plots/images|sklearn|custom  log_image, log_sklearn_plot, log_plot

DVCLive 0.x wrote ``dvclive/scalars/<name>.tsv`` (always ``timestamp<TAB>step<TAB><name>``) and
its summary beside the folder, ``dvclive.json``: read the same way.

Decisions:

* **one run per DVCLive folder**: every metric TSV of it is a tag, named by its path below
  ``plots/metrics`` (``scalars``) without ``.tsv`` (``train/loss``), whatever its column is
  called (DVCLive 3 names it by the last part, ``loss``; older versions by the whole name).
  The run is the folder that holds ``dvclive/`` (the project DVCLive ran in, named after it),
  or the DVCLive folder itself when ``Live(dir=…)`` gave it another name.
* step = the ``step`` column as written. A metric logged without ``next_step()`` has every
  row at step 0: spread over 0, 1, 2 … in write order (as MLflow's charts do), said in a note.
  Several rows at one step (several ``log_metric`` calls before ``next_step``, or a job that
  stopped between ``log_metric`` and ``next_step`` and was resumed with ``Live(resume=True)``,
  which goes on from the step after the last finished one) keep the last, counted in a note.
  Steps that go back (a resume from an earlier step) are a restart: the later write wins and
  the abandoned attempt's points at or after that step are dropped, counted.
* wall_time = ``timestamp`` / 1000 where the TSV has the column; DVCLive 3 writes it only with
  ``log_metric(…, timestamp=True)``, so most tags have none (NaN, said in a note).
* NaN and ±inf are written by DVCLive as ``nan``, ``inf``, ``-inf``: kept as values. A metric
  whose every value is text (``log_metric("phase", "warmup")``) is not a curve: skipped, named
  in a note. A text cell in a numeric metric, a row with the wrong number of fields, a step that
  is no integer, a last line without its line end (a file cut while written) are skipped and
  counted in a warning naming the file. A TSV without its header line is read by its field count
  (2: step, value; 3: timestamp, step, value), with a warning.
* hparams = ``params.yaml`` as written; ``metrics.json`` (flattened to ``train/loss`` keys) goes to
  ``hparams["_summary"]``; its values that no TSV holds (``log_metric(…, plot=False)``) are named
  in a note. ``dvc.yaml`` and the report only restate the TSVs: claimed, not read.
* images, sklearn and custom plots (``plots/images|sklearn|custom``, the report's ``static/``)
  are claimed with the run and named in a note (tanalyze reads no images), not listed as logs
  nobody read. ``artifacts/`` (copied models, datasets) is left to discovery (weights are listed
  as such; a TensorBoard log there is a run of its own), and so is the project's own
  ``dvc.yaml``/``dvc.lock`` (DVC's pipeline files, to which DVCLive 3 only adds sections).
* Experiments a ``dvc exp run`` or ``save_dvc_exp`` saved live in git refs, not in the folder:
  only the workspace's DVCLive folder (the last run) is on disk to read.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.base import Reader, ReadWarning, Restart, RunData
from tanalyze.readers.tabular.common import is_number, load_config, name_list
from tanalyze.schema import scalar_frame
from tanalyze.text import distinct, writable

__all__ = ["DVCLiveReader", "live_folder"]

#: the folder DVCLive writes to unless ``Live(dir=…)`` says otherwise: a run is named after the folder holding it
DEFAULT_DIR = "dvclive"
_SIDE_FILES = frozenset({"metrics.json", "params.yaml", "dvc.yaml", "report.html", "report.md"})
_UNREAD_PLOTS = frozenset({"images", "sklearn", "custom"})
_MAX_DEPTH = 16
_INT64 = (-(1 << 63), 1 << 63)


@lru_cache(maxsize=4096)
def _layout(folder: str) -> str | None:
    """``new`` when ``folder`` holds ``plots/metrics/``, ``old`` when it holds ``scalars/`` and has
    ``<folder>.json`` beside it (DVCLive 0.x), else None."""
    path = Path(folder)
    if (path / "plots" / "metrics").is_dir():
        return "new"
    if (path / "scalars").is_dir() and path.with_name(path.name + ".json").is_file():
        return "old"
    return None


def _metric_place(path: Path) -> tuple[Path, Path, str] | None:
    """(DVCLive folder, metrics folder, layout) of a file below ``plots/metrics`` or ``scalars``."""
    parents = path.parents
    for depth in range(min(_MAX_DEPTH, len(parents) - 2)):
        part = parents[depth]
        if part.name == "metrics" and part.parent.name == "plots":
            return part.parent.parent, part, "new"
        if part.name == "scalars" and _layout(str(part.parent)) == "old":
            return part.parent, part, "old"
    return None


def live_folder(path: Path) -> Path | None:
    """The DVCLive folder a file belongs to (a metric TSV, a file of its own, a plot), or None."""
    if path.suffix.lower() == ".tsv":
        found = _metric_place(path)
        if found is not None:
            return found[0]
    if path.name in _SIDE_FILES and _layout(str(path.parent)):
        return path.parent
    if path.suffix.lower() == ".json" and _layout(str(path.with_suffix(""))) == "old":
        return path.with_suffix("")  # dvclive.json beside dvclive/ (0.x)
    parents = path.parents
    for depth in range(min(_MAX_DEPTH, len(parents) - 2)):
        part = parents[depth]
        if part.name in _UNREAD_PLOTS and part.parent.name == "plots" and _layout(str(part.parent.parent)):
            return part.parent.parent
        if part.name == "static" and _layout(str(part.parent)) == "new":
            return part.parent
    return None


def _header(head: bytes) -> list[str] | None:
    """The column names of a DVCLive metric TSV's first line: [timestamp,] step, name; else None."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", errors="replace").lstrip("\ufeff")
    fields = first.split("\t")
    if len(fields) == 2 and fields[0] == "step" and fields[1]:
        return fields
    if len(fields) == 3 and fields[:2] == ["timestamp", "step"] and fields[2]:
        return fields
    return None


def _numeric_row(head: bytes) -> int | None:
    """The field count (2 or 3) of a first line that is a headerless metric row, else None."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    fields = first.split(b"\t")
    if len(fields) not in (2, 3) or b"\n" not in head:
        return None
    try:
        [int(f) for f in fields[:-1]]
        float(fields[-1])
    except ValueError:
        return None
    return len(fields)


class DVCLiveReader(Reader):
    """DVCLive folders (``dvclive/plots/metrics/*.tsv``, ``metrics.json``, ``params.yaml``): one run each."""

    name = "dvclive"
    description = "DVCLive folders: dvclive/plots/metrics/<name>.tsv (+ metrics.json, params.yaml); 0.x scalars/"

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() == ".tsv":
            found = _metric_place(path)
            if found is None:
                return False
            if _header(head) is not None:
                return found[2] == "new" or _header(head)[0] == "timestamp"  # type: ignore[index]
            return found[2] == "new" and (not head.strip() or _numeric_row(head) is not None)
        folder = live_folder(path)
        if folder is None:
            return False
        if path.suffix.lower() == ".json" and path.parent == folder.parent:  # dvclive.json (0.x)
            return head.lstrip().startswith(b"{")
        if path.name == "metrics.json":
            return not head.strip() or head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
        return True

    def run_directory(self, path: Path) -> Path:
        """The folder holding ``dvclive/`` (the project), or the DVCLive folder when it has another name."""
        folder = live_folder(path) or path.parent
        return folder.parent if folder.name == DEFAULT_DIR else folder

    def group(self, files: list[Path]) -> list[list[Path]]:
        by_folder: dict[Path, list[Path]] = defaultdict(list)
        for file in files:
            by_folder[live_folder(file) or file.parent].append(file)
        return [sorted(by_folder[folder]) for folder in sorted(by_folder)]

    def read(self, files: list[Path]) -> list[RunData]:
        files = sorted(Path(f) for f in files)
        folder = next((f for f in map(live_folder, files) if f is not None), files[0].parent if files else Path())
        run = RunData()
        if folder.name == DEFAULT_DIR:
            run.title = folder.resolve().parent.name or None  # the project: also when the path given is dvclive/
        metrics: list[_Metric] = []
        unread: list[Path] = []
        summary: dict[str, Any] | None = None
        for path in files:
            role = _role(path, folder)
            if role == "metric":
                metrics.append(_read_metric(path, _tag(path, folder)))
            elif role == "summary":
                summary = _read_summary(path, run)
            elif role == "params":
                params, warning = load_config(path)
                if warning:
                    run.warnings.append(warning)
                run.hparams = dict(params or {})
            elif role == "unread":
                unread.append(path)
        _build(run, metrics, str(folder))
        if summary is not None:
            _add_summary(run, summary, {m.tag for m in metrics})
        if unread:
            kinds = Counter(_unread_kind(p, folder) for p in unread)
            run.notes.append("not read (tanalyze reads no images or plot data): "
                             + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
        if not metrics and not run.warnings:
            run.warnings.append(ReadWarning(str(files[0]) if files else str(folder),
                                            "no metric history (plots/metrics/*.tsv) in this DVCLive folder"))
        return [run]


def _role(path: Path, folder: Path) -> str:
    """What a claimed file is to the run: metric, summary, params, unread (plots), or restated (dvc.yaml, report)."""
    if path.suffix.lower() == ".tsv" and _metric_place(path) is not None:
        return "metric"
    if path.parent == folder:
        if path.name == "metrics.json":
            return "summary"
        if path.name == "params.yaml":
            return "params"
        if path.name in _SIDE_FILES:
            return "restated"
    if path.suffix.lower() == ".json" and path.parent == folder.parent and path.stem == folder.name:
        return "summary"
    if path.suffix.lower() == ".tsv":
        return "metric"  # a TSV handed over directly, not in its folder
    if path.name == "metrics.json":
        return "summary"
    if path.name == "params.yaml":
        return "params"
    return "unread" if path.name not in _SIDE_FILES else "restated"


def _tag(path: Path, folder: Path) -> str:
    found = _metric_place(path)
    base = found[1] if found is not None else path.parent
    return path.relative_to(base).with_suffix("").as_posix()


def _unread_kind(path: Path, folder: Path) -> str:
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return "other file(s)"
    if parts[:2] == ("plots", "images"):
        return "image(s) (plots/images)"
    if parts[:1] == ("static",):
        return "report image(s) (static)"
    if len(parts) > 1 and parts[0] == "plots":
        return f"{parts[1]} plot file(s) (plots/{parts[1]})"
    return "other file(s)"


# --- one metric file -------------------------------------------------------------------------


@dataclass
class _Metric:
    """One TSV as read: its points in file (write) order and what was wrong with it."""

    tag: str
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    wall: np.ndarray | None = None  # seconds, when the file has a timestamp column
    text: bool = False  # every value is text: not a curve
    warnings: list[ReadWarning] = field(default_factory=list)


def _read_metric(path: Path, tag: str) -> _Metric:
    metric = _Metric(tag)
    try:
        data = path.read_bytes()
    except OSError as exc:
        metric.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return metric
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        metric.warnings.append(ReadWarning(str(path), "empty file: no header, no rows"))
        return metric
    header = _header(data[:4096])
    body = data
    if header is None:
        width = _numeric_row(data[:4096])
        if width is None:
            first = data.split(b"\n", 1)[0][:80].decode("utf-8", errors="replace")
            metric.warnings.append(ReadWarning(str(path), f"not a DVCLive metric file: its first line is {first!r}, "
                                               "not 'step<TAB>name' or 'timestamp<TAB>step<TAB>name'"))
            return metric
        header = ["timestamp", "step", "value"][3 - width:]
        metric.warnings.append(ReadWarning(str(path), "no header line ('step<TAB>name'): its "
                                           f"{width} fields read as {', '.join(header)}"))
        first_line = 1
    else:
        body = data[data.index(b"\n") + 1:] if b"\n" in data else b""
        first_line = 2
    cut = bool(body) and not body.endswith(b"\n")
    if cut:
        body = body[:body.rfind(b"\n") + 1]
    parsed = _parse_at_once(body, len(header))
    if parsed is None:
        parsed = _parse_lines(body, len(header), first_line, path, metric)
    timestamps, metric.steps, metric.values = parsed
    if len(header) == 3:
        metric.wall = timestamps / 1000
    if cut:
        line = first_line + body.count(b"\n")
        metric.warnings.append(ReadWarning(str(path), "the last line is cut off (no line end: the file was cut "
                                           "while written?); skipped", f"line {line}"))
    return metric


def _parse_at_once(body: bytes, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Rows that are all ``[timestamp] step value`` with numbers, parsed by pandas at once; None otherwise."""
    empty = np.zeros(0, dtype=np.int64)
    if not body.strip():
        return empty, empty, np.zeros(0, dtype=np.float64)
    names = ["timestamp", "step", "value"][3 - width:]
    types: dict[str, Any] = {"timestamp": np.int64, "step": np.int64, "value": np.float64}
    try:
        with np.errstate(all="ignore"):
            frame = pd.read_csv(io.BytesIO(body), sep="\t", header=None, names=names,
                                dtype={n: types[n] for n in names}, keep_default_na=False,
                                na_values={"value": ["nan", "-nan", "NaN"]}, quoting=csv.QUOTE_NONE, engine="c",
                                skip_blank_lines=False)
    except (ValueError, OverflowError, TypeError, pd.errors.ParserError):
        return None
    if len(frame) != body.count(b"\n"):
        return None
    steps = frame["step"].to_numpy(dtype=np.int64)
    timestamps = frame["timestamp"].to_numpy(dtype=np.int64) if width == 3 else empty
    return timestamps, steps, frame["value"].to_numpy(dtype=np.float64)


def _parse_lines(body: bytes, width: int, first_line: int, path: Path, metric: _Metric
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line by line: every well-formed row; the rest counted in a warning. All-text values: a text metric."""
    timestamps: list[int] = []
    steps: list[int] = []
    values: list[float] = []
    bad: list[int] = []
    texts: list[int] = []
    for number, line in enumerate(body.decode("utf-8", errors="replace").split("\n"), start=first_line):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        try:
            if len(fields) != width:
                raise ValueError(line)
            stamp = int(fields[0]) if width == 3 else 0
            step = int(fields[-2])
            if not (_INT64[0] <= step < _INT64[1] and _INT64[0] <= stamp < _INT64[1]):
                raise ValueError(line)
        except ValueError:
            bad.append(number)
            continue
        try:
            value = float(fields[-1])
        except ValueError:
            texts.append(number)
            continue
        timestamps.append(stamp)
        steps.append(step)
        values.append(value)
    if texts and not values:
        metric.text = True
    elif texts:
        bad.extend(texts)
        bad.sort()
    if bad:
        where = ", ".join(map(str, bad[:5])) + (" …" if len(bad) > 5 else "")
        metric.warnings.append(ReadWarning(str(path), f"{len(bad)} line(s) are not '[timestamp<TAB>]step<TAB>number'; "
                                           "skipped", f"line {where}", len(bad)))
    return (np.array(timestamps, dtype=np.int64), np.array(steps, dtype=np.int64),
            np.array(values, dtype=np.float64))


# --- the run ---------------------------------------------------------------------------------


def _settled(metric: _Metric) -> tuple[np.ndarray, bool, int, list[tuple[int, int]]]:
    """Which points to keep (the last write at each step; an abandoned attempt's points dropped), whether the
    steps were spread (all 0), how many repeated rows were replaced, and the restarts (step, highest before)."""
    steps = metric.steps
    n = len(steps)
    spread = n > 1 and not steps.any()
    if spread:
        metric.steps = steps = np.arange(n, dtype=np.int64)
    if n < 2 or (np.diff(steps) > 0).all():
        return np.ones(n, dtype=bool), spread, 0, []
    later_min = np.minimum.accumulate(steps[::-1])[::-1]  # the smallest step from each row on
    keep = np.ones(n, dtype=bool)
    keep[:-1] = steps[:-1] < later_min[1:]
    back = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    highest = np.maximum.accumulate(steps)
    restarts = [(int(steps[i]), int(highest[i - 1])) for i in back]
    repeated = int((steps[1:] == steps[:-1]).sum())
    return keep, spread, repeated, restarts


def _build(run: RunData, metrics: list[_Metric], folder: str) -> None:
    tags, parts = [], []
    spread, texts, no_time, replaced = [], [], [], 0
    restarts: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for metric in sorted(metrics, key=lambda m: m.tag):
        run.warnings.extend(metric.warnings)
        if metric.text:
            texts.append(metric.tag)
            continue
        if not len(metric.steps):
            continue
        keep, respread, repeated, backs = _settled(metric)
        dropped = len(keep) - int(keep.sum())
        replaced += repeated
        if respread:
            spread.append(metric.tag)
        for step, until in backs:
            restarts[step].append((metric.tag, until, dropped))
        wall = metric.wall if metric.wall is not None else np.full(len(keep), np.nan)
        if metric.wall is None:
            no_time.append(metric.tag)
        if dropped:
            parts.append((metric.steps[keep], metric.values[keep], wall[keep]))
        else:
            parts.append((metric.steps, metric.values, wall))
        tags.append(metric.tag)
    if parts:
        codes = np.repeat(np.arange(len(tags), dtype=np.int32), [len(p[0]) for p in parts])
        names = distinct([writable(t) for t in tags])
        tag = pd.Series(pd.Categorical.from_codes(codes, categories=names))
        steps, values, wall = (np.concatenate([p[i] for p in parts]) if len(parts) > 1 else parts[0][i]
                               for i in range(3))
        run.scalars = scalar_frame(run="", tag=tag, step=steps, value=values, wall_time=wall)
    run.notes.append(f"DVCLive folder {folder}: one tag per metric TSV (its path below plots/metrics), "
                     "step = its step column")
    if no_time and len(no_time) < len(tags):
        run.notes.append("no timestamp column (DVCLive writes one only with log_metric(…, timestamp=True)): "
                         f"wall_time empty for {name_list(no_time)}")
    elif no_time:
        run.notes.append("no timestamp column in any metric TSV (DVCLive writes one only with "
                         "log_metric(…, timestamp=True)): wall_time empty")
    if spread:
        run.notes.append("logged without next_step() (every row at step 0): spread over steps 0, 1, 2 … in the "
                         f"order written: {name_list(spread)}")
    if replaced:
        run.notes.append(f"{replaced} value(s) logged again at the step just logged (several log_metric calls "
                         "before next_step, or a job resumed with Live(resume=True) after a step it had not "
                         "finished): the last write kept")
    for step, found in sorted(restarts.items()):
        until = max(u for _, u, _ in found)
        dropped = sum(d for _, _, d in found)
        run.restarts.append(Restart(step=step, file=folder, until=until,
                                    detail=f"steps went back from {until} to {step} in "
                                           f"{name_list([t for t, _, _ in found])}; the later writes replace "
                                           f"{dropped} earlier point(s)"))
    if texts:
        run.notes.append(f"text metrics (log_metric with a string) are not curves; skipped: {name_list(texts)}")


def _read_summary(path: Path, run: RunData) -> dict[str, Any] | None:
    try:
        text = path.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError as exc:
        run.warnings.append(ReadWarning(str(path), f"cannot be read: {exc.strerror or exc}"))
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        run.warnings.append(ReadWarning(str(path), f"not JSON ({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                                        "the summary is not read"))
        return None
    if not isinstance(data, Mapping):
        run.warnings.append(ReadWarning(str(path), "not a JSON object; the summary is not read"))
        return None
    return data


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}/"))
        else:
            out[name] = value
    return out


def _add_summary(run: RunData, summary: Mapping[str, Any], tags: set[str]) -> None:
    """metrics.json into ``hparams["_summary"]``; the values without a history named in a note."""
    flat = _flatten(summary)
    run.hparams = {**run.hparams, "_summary": flat}
    only = sorted(k for k, v in flat.items() if k != "step" and k not in tags and (is_number(v) or isinstance(v, str)))
    if only:
        run.notes.append(f"final values in metrics.json with no history (log_metric(…, plot=False)), kept in "
                         f"hparams['_summary']: {name_list(only)}")
