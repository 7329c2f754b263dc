"""A training history saved as one JSON document: what ``json.dump(history.history, f)`` leaves.

Keras' ``model.fit`` returns a ``History`` whose ``history`` is a dict of per-epoch lists, and the
usual way to keep it is one line of JSON::

    {"loss": [0.52, 0.31, …], "accuracy": [0.81, 0.90, …], "val_loss": [0.40, 0.35, …], "val_accuracy": […]}

Custom loops save the same shape (``{"train_loss": [...], "val_loss": [...]}``, sometimes nested as
``{"train": {"loss": [...]}, "val": {...}}``), pandas writes it as ``{"loss": {"0": 0.52, "1": 0.31}}``
(``DataFrame(history.history).to_json()``), and some keep a list of per-epoch records
(``[{"epoch": 1, "train_loss": …, "val_loss": …}, …]``). All are read here.

Decisions:

* **step = the position in the list** (the epoch, from 0, as Keras' ``CSVLogger`` and TensorBoard
  callback number them). A list named ``epoch``/``epochs``/``step``/``steps``/``iteration`` of whole
  numbers, as long as the longest list, gives the steps instead (as written; it is no curve). pandas'
  index keys are steps as written, and so is a record's ``step`` (``global_step``, ``iteration``, else
  ``epoch``: the first that is a whole number in the first record; HF's saved ``log_history`` has a
  fractional epoch beside its step, which stays a curve).
* **Lists of different lengths** (a loss per batch beside a validation loss per epoch, or Keras'
  ``validation_freq=k``) share the longest list's axis: the ``i``-th of ``n`` values of a shorter list is
  put at step ``(i + 1) * (N // n) - 1``, the end of its share of the ``N`` longest-list steps. The notes
  say so, and say when ``N`` is not a whole multiple of ``n`` (then ``N // n`` is an assumption).
* Nested dicts are flattened with ``/`` (``train/loss``); a lone wrapper, or a key that only holds the
  rest (``{"config": {...}, "history": {...}}``), is left out of the names. Numbers and text outside the lists are the run's hparams (``{"epochs": 50}``).
  ``null`` in a list is a value not logged: skipped and counted. Lists of anything but numbers are
  skipped and named in a note.
* The file is one JSON document: a file that does not parse (cut while it was written) cannot be read in
  part and raises :class:`~tanalyze.errors.FormatError` naming the file and the position.

Claimed by content: a ``.json`` file whose head holds a list (or pandas' index dict) of numbers under a
metric's name (``loss``, ``acc``, ``mae``, ``f1`` …), or, for records, a list of objects with an
``epoch``/``step`` key and such a metric. A dataset's ``{"mean": [...], "std": [...]}`` names no metric.
A ``.txt`` or ``.log`` file that holds such a dict as Python prints it (``print(history.history)``,
``f.write(str(history.history))``: ``{'loss': [0.71, …], 'val_loss': [nan, …]}``) is read too: its quotes,
``nan``, ``inf``, ``True``, ``False`` and ``None`` are turned into JSON's, never evaluated.
"""

from __future__ import annotations

import json
import math
import re
import tokenize
from collections.abc import Mapping
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import PointBuffer, as_step, is_number, name_list, settle_rewrites

__all__ = ["HistoryJsonReader"]

#: Names of a training metric (a whole word part of the key: ``val_loss``, ``train/acc``, ``mean_iou``).
_METRIC = re.compile(
    r"(?:^|[\W_])(?:loss(?:es)?|acc(?:uracy)?|err(?:or)?|mae|mse|rmse|mape|auc|f1|iou|dice|ppl|perplexity|"
    r"precision|recall|bleu|rouge\w*|map|reward|top[-_]?[15])(?:$|[\W_\d])", re.IGNORECASE)
#: A key followed by a list starting with a number, or by pandas' ``{"0": number``.
_HEAD_SERIES = re.compile(
    r'"((?:[^"\\]|\\.){1,200})"\s*:\s*(?:\[\s*|\{\s*"\d+"\s*:\s*)(?:-?\d|-?Infinity|NaN|null)')
#: the same as Python prints a dict (``str(history.history)``): single quotes, ``nan`` and ``inf`` as words
_HEAD_SERIES_PY = re.compile(
    r"'((?:[^'\\]|\\.){1,200})'\s*:\s*\[\s*(?:(?:np|numpy)\.\w+\(\s*)?(?:-?\d|-?inf\b|nan\b)")
#: the text files a printed history is kept in
_PRINTED = frozenset({".txt", ".log"})
#: A key followed by a number (the records form).
_HEAD_FIELD = re.compile(r'"((?:[^"\\]|\\.){1,200})"\s*:\s*(?:-?\d|-?Infinity|NaN)')
#: Keys that only hold the rest (``{"config": {...}, "history": {...}}``): left out of the names below them.
_CONTAINERS = frozenset({"history", "train_history", "training_history", "metrics", "logs", "log", "results",
                         "config", "args", "params", "hparams", "hyperparameters", "settings"})
_STEP_NAMES = ("epoch", "epochs", "step", "steps", "global_step", "iteration", "iterations", "iter")
#: a record's step keys, finest first: a whole-number step wins over an epoch (HF's ``log_history`` records hold
#: both, the epoch fractional)
_RECORD_STEPS = ("step", "global_step", "iteration", "iter", "epoch")
_BOM = b"\xef\xbb\xbf"


def _is_metric(name: str) -> bool:
    return _METRIC.search(name) is not None


#: keys that name only a split: their series are the metric the file's name names (``loss_history.json``:
#: ``{"train": [...], "val": [...]}`` holds ``train_loss`` and ``val_loss``)
_SPLITS = frozenset({"train", "training", "val", "valid", "validation", "test", "eval", "dev"})
_METRIC_WORD = re.compile(r"loss(?:es)?|acc(?:uracy)?|err(?:or)?|mae|mse|rmse|auc|f1|iou|dice|ppl|perplexity", re.I)


def _named_metric(path: Path) -> str | None:
    """The metric a history file's name names (``loss_history.json`` → ``loss``), None when it names none."""
    if not _is_metric(path.stem):
        return None
    word = _METRIC_WORD.search(path.stem)
    if word is None:
        return None
    text = word.group(0).lower()
    return "loss" if text.startswith("loss") else text


class HistoryJsonReader(Reader):
    """One JSON document of per-epoch lists (Keras ``history.history`` and the like): one run per file."""

    name = "history_json"
    cache_version = 3  # 2: keys that name only splits take the metric the file's name names ('loss_history.json');
    #                    3: a history as Python prints it, in a .txt or .log file
    description = ("a training history saved as JSON: Keras history.history ({\"loss\": [...], \"val_loss\": [...]}), "
                   "nested or pandas to_json forms, a list of per-epoch records")

    def sniff(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix in _PRINTED:
            text = head.removeprefix(_BOM).lstrip().decode("utf-8", errors="replace")
            keys = [m.group(1) for m in _HEAD_SERIES_PY.finditer(text)] if text.startswith("{'") else []
            return any(map(_is_metric, keys)) or (text.startswith("{") and not _json_lines(text)
                                                  and any(map(_is_metric, _HEAD_SERIES.findall(text))))
        if suffix != ".json":
            return False
        text = head.removeprefix(_BOM).lstrip().decode("utf-8", errors="replace")
        if text.startswith("{"):
            keys = [m.group(1) for m in _HEAD_SERIES.finditer(text)]
            return not _json_lines(text) and (any(map(_is_metric, keys)) or (
                _named_metric(path) is not None and any(key.lower() in _SPLITS for key in keys)))
        if re.match(r"\[\s*\{", text):
            first = text[: text.find("}") + 1 or None]
            keys = [m.group(1) for m in _HEAD_FIELD.finditer(first)]
            return any(key in _RECORD_STEPS for key in keys) and any(_is_metric(key) for key in keys)
        return False

    def group(self, files: list[Path]) -> list[list[Path]]:
        return [[f] for f in sorted(files)]

    def read(self, files: list[Path]) -> list[RunData]:
        return [self._read_one(path) for path in files]

    def _read_one(self, path: Path) -> RunData:
        try:
            with open(path, "rb") as handle:
                raw = handle.read().removeprefix(_BOM)
            document = json.loads(_as_json(raw.decode("utf-8")) if raw.lstrip().startswith(b"{'") else raw)
        except OSError as error:
            raise FormatError(path, f"cannot be read: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise FormatError(path, "not UTF-8 text", location=f"byte {error.start}") from None
        except json.JSONDecodeError as error:  # where it stops: a file cut while it was written
            raise FormatError(path, f"not a whole JSON document ({error.msg}); a history is written at once, so a "
                              f"cut file cannot be read in part", location=f"line {error.lineno}, column {error.colno}"
                              ) from None
        except RecursionError:
            raise FormatError(path, "JSON nested too deeply") from None
        history = _History(str(path))
        if isinstance(document, list):
            history.take_records(document)
        elif isinstance(document, dict):
            metric = _named_metric(path)
            if metric is not None and not any(map(_is_metric, document)):  # ({"train": [...], "val": [...]})
                document = {f"{key}_{metric}" if key.lower() in _SPLITS else key: value
                            for key, value in document.items()}
                history.notes.append(f"its keys name only splits: their series are the '{metric}' its name names")
            history.take_columns(document)
        else:
            raise FormatError(path, f"a JSON {type(document).__name__}, not a dict of lists or a list of records")
        return history.run()


class _History:
    """The series of one history document on their way to a run."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.points = PointBuffer()
        self.hparams: dict[str, Any] = {}
        self.notes: list[str] = []
        self.warnings: list[ReadWarning] = []
        self.skipped: list[str] = []
        self.nulls = 0
        #: what a step counts: epochs, unless a list named otherwise gives the steps
        self.unit = "epoch"

    def take_columns(self, document: Mapping[str, Any]) -> None:
        """A dict of lists (or of pandas index dicts), maybe nested one level or more."""
        series: dict[str, list[Any]] = {}
        indexed: dict[str, dict[int, Any]] = {}
        self._collect(_unwrapped(document), "", series, indexed)
        steps, step_name = _explicit_steps(series)
        if step_name is not None:
            del series[step_name]
        longest = max(map(len, series.values()), default=0)
        if steps is None:
            steps = np.arange(longest, dtype=np.int64)
        elif series:
            self.unit = "epoch" if step_name in ("epoch", "epochs") else str(step_name)
            self.notes.append(f"a dict of lists: step = the list '{step_name}' as written")
        if step_name is None and series:
            self.notes.append("a dict of per-epoch lists (Keras history.history): step = the position in the list "
                              "(the epoch, from 0)")
        shorter: dict[int, list[str]] = {}
        for tag, values in series.items():
            position = np.arange(len(values))
            if len(values) != longest:
                position = (position + 1) * (longest // len(values)) - 1
                shorter.setdefault(len(values), []).append(tag)
            self._add(position, tag, steps[position], values)
        if shorter:
            spread = "; ".join(
                f"{name_list(tags)} ({n} values: every {longest // n} steps"
                + (")" if longest % n == 0 else f", assumed: {longest} is no multiple of {n})")
                for n, tags in sorted(shorter.items()))
            self.notes.append(f"lists shorter than the longest ({longest} values) put their i-th of n values at "
                              f"step (i + 1) × ({longest} // n) − 1, the end of its share of the axis: {spread}")
        for tag, by_index in indexed.items():
            keys = np.asarray(sorted(by_index), dtype=np.int64)
            self._add(keys, tag, keys, [by_index[key] for key in keys.tolist()])
        if indexed:
            self.notes.append("pandas to_json columns: step = each value's index as written")

    def take_records(self, records: list[Any]) -> None:
        """A list of per-epoch dicts: step = their ``epoch`` (or ``step``…) as written, else the position."""
        first = records[0] if records and isinstance(records[0], dict) else {}
        step_key = next((key for key in _RECORD_STEPS if as_step(first.get(key)) is not None), None)
        bad = 0
        for row, record in enumerate(records):
            if not isinstance(record, dict):
                bad += 1
                continue
            step = as_step(record.get(step_key)) if step_key else row
            if step is None:
                bad += 1
                continue
            flat = _flattened(record)
            self.nulls += sum(value is None for value in flat.values())
            self.skipped += self.points.add_record(row, step, flat, skip={step_key} if step_key else set(),
                                                   epoch=float(step) if step_key in (None, "epoch") else math.nan)
        if bad:
            self.warnings.append(ReadWarning(self.file, f"{bad} record(s) not an object with a whole-number "
                                             f"'{step_key}'; skipped", count=bad))
        self.notes.append(f"a list of per-epoch records: step = each record's '{step_key}' as written"
                          if step_key else "a list of records: step = the position in the list (from 0)")
        self.unit = "epoch" if step_key in (None, "epoch") else step_key

    def _collect(self, node: Mapping[str, Any], prefix: str, series: dict[str, list[Any]],
                 indexed: dict[str, dict[int, Any]]) -> None:
        for key, value in node.items():
            name = f"{prefix}{key}"
            if isinstance(value, list):
                if value and all(is_number(v) or v is None for v in value):
                    series[name] = value
                elif value:
                    self.skipped.append(name)
            elif isinstance(value, dict):
                by_index = _pandas_index(value)
                if by_index is not None:
                    indexed[name] = by_index
                else:
                    self._collect(value, prefix if key.lower() in _CONTAINERS else f"{name}/", series, indexed)
            elif is_number(value) or isinstance(value, str | bool):
                self.hparams[name] = value

    def _add(self, rows: np.ndarray, tag: str, steps: np.ndarray, values: list[Any]) -> None:
        """One series: ``rows`` order the points of all series as written epoch by epoch."""
        numbers = np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
        logged = np.array([v is not None for v in values], dtype=bool)
        self.nulls += int((~logged).sum())
        epochs = steps.astype(np.float64) if self.unit == "epoch" else np.full(len(steps), math.nan)
        self.points.add_arrays(rows[logged], tag, steps[logged], numbers[logged], epochs[logged])

    def run(self) -> RunData:
        run = RunData()
        if self.nulls:
            self.warnings.append(ReadWarning(self.file, f"{self.nulls} null value(s) (nothing logged); skipped",
                                             count=self.nulls))
        if self.skipped:
            names = sorted(set(self.skipped))
            run.notes.append(f"not numbers, skipped: {name_list(names)}")
        if not len(self.points):
            self.warnings.append(ReadWarning(self.file, "no numeric series in the document"))
        run.hparams = self.hparams
        run.notes[:0] = self.notes
        run.warnings.extend(self.warnings)
        settle_rewrites(self.points.frame(), self.file, unit=self.unit).into(run)
        return run


#: a numpy scalar as numpy 2 prints it: ``np.float32(0.5)``, ``np.int64(3)``
_NUMPY_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint)\d*\(\s*([-+]?[\w.]+)\s*\)")
#: Python's words for the values JSON spells otherwise
_PYTHON_WORDS = {"nan": "NaN", "inf": "Infinity", "True": "true", "False": "false", "None": "null"}


def _as_json(text: str) -> str:
    """A dict as Python prints it (``{'loss': [0.5, nan], 'lr': None}``) as JSON: its strings in double quotes, its
    words (``nan``, ``inf``, ``True``, ``False``, ``None``) as JSON's; read token by token by Python's own tokenizer,
    never evaluated; numpy's scalars as numpy 2 prints them (``np.float64(0.5)``) as their numbers. A token of
    another kind (another call) is left as it is: JSON then says where."""
    text = _NUMPY_SCALAR.sub(r"\1", text)
    out = []
    try:
        for token in tokenize.generate_tokens(StringIO(text).readline):
            if token.type == tokenize.STRING and token.string[:1] in "'\"":
                out.append(json.dumps(_unquoted(token.string)))
            elif token.type == tokenize.NAME:
                out.append(_PYTHON_WORDS.get(token.string, token.string))
            elif token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                continue
            else:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text  # (JSON then says where it stops)
    return "".join(out)  # (no blank between tokens: a sign stays with its number, "-Infinity")


def _unquoted(literal: str) -> str:
    """The text of a plain Python string literal (quotes removed, its escapes read): no prefix, so no f-string."""
    body = literal[1:-1]
    if "\\" not in body:
        return body
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _json_lines(text: str) -> bool:
    """Whether ``text`` is JSON lines (a whole object on its first line, more after it): not one document."""
    first, _, rest = text.partition("\n")
    if not rest.strip():
        return False
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


def _unwrapped(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """The document without a lone wrapper key (``{"history": {...}}``)."""
    while len(document) == 1:
        (inner,) = document.values()
        if not isinstance(inner, dict) or _pandas_index(inner) is not None:
            break
        document = inner
    return document


def _pandas_index(node: Mapping[str, Any]) -> dict[int, Any] | None:
    """pandas' ``{"0": v, "1": v}`` (a column of ``DataFrame.to_json()``) as {index: value}, else None."""
    if not node or not all(isinstance(key, str) and key.isdigit() for key in node):
        return None
    if not all(is_number(v) or v is None for v in node.values()):
        return None
    return {int(key): value for key, value in node.items()}


def _explicit_steps(series: Mapping[str, list[Any]]) -> tuple[np.ndarray | None, str | None]:
    """A list of whole, increasing numbers named like a step, as long as the longest list: (steps, its name)."""
    longest = max(map(len, series.values()), default=0)
    for name in _STEP_NAMES:
        values = series.get(name)
        if values is None or len(values) != longest:
            continue
        steps = [as_step(v) for v in values]
        if all(s is not None for s in steps) and all(b > a for a, b in zip(steps, steps[1:], strict=False)):
            return np.asarray(steps, dtype=np.int64), name
    return None, None


def _flattened(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flattened(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out
